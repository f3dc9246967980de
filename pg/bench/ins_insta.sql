INSERT INTO t_insta (v) VALUES (1);
