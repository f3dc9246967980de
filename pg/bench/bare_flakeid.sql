SELECT count(*) FROM (SELECT flakeid_next_id() FROM generate_series(1, 1000000)) x;
