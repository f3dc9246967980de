CREATE EXTENSION pg_flakeid;
CREATE TABLE t_flakeid (id bigint PRIMARY KEY DEFAULT flakeid_next_id(), v int);
CREATE TABLE t_bigserial (id bigserial PRIMARY KEY, v int);
CREATE TABLE t_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), v int);
-- Instagram style: 41 bits ms since a custom epoch, 13 bits shard, 10 bits seq.
CREATE SEQUENCE insta_seq;
CREATE FUNCTION insta_next_id(OUT result bigint) LANGUAGE plpgsql AS $$
DECLARE
  our_epoch bigint := 1314220021721;
  seq_id bigint;
  now_millis bigint;
  shard_id int := 5;
BEGIN
  SELECT nextval('insta_seq') % 1024 INTO seq_id;
  SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
  result := (now_millis - our_epoch) << 23;
  result := result | (shard_id << 10);
  result := result | (seq_id);
END;
$$;
CREATE TABLE t_insta (id bigint PRIMARY KEY DEFAULT insta_next_id(), v int);
CREATE SEQUENCE s;
SELECT flakeid_next_id() IS NOT NULL AS flakeid_works;
