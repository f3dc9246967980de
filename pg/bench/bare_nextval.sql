SELECT count(*) FROM (SELECT nextval('s') FROM generate_series(1, 1000000)) x;
