INSERT INTO t_bigserial (v) VALUES (1);
