INSERT INTO t_uuid (v) VALUES (1);
