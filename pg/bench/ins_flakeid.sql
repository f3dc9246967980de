INSERT INTO t_flakeid (v) VALUES (1);
