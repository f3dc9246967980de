//! The SQL functions on a server of their own: IDs increase in a session
//! and in a batch; `flakeid_decode` gives the configured node id, the
//! twitter layout's node fields and an issue time between two reads of
//! the database's clock; `flakeid_timestamp` agrees with it; every text
//! format round-trips (and the fixed-width ones sort as the IDs do);
//! `flakeid_min_id_at(t)` selects exactly the rows issued after `t`; bad
//! input is an error with a SQLSTATE, and the session survives it.

use crate::support::{self, Db, NODE_ID, clock_after_ms, clock_before_ms, increasing};

#[test]
fn sql_functions_issue_decode_encode_and_refuse_bad_input() {
    let server = support::start(false, None, &[]);
    let db = Db::connect(&server);

    // One session: each call gives a larger ID.
    let single = db.query("SELECT flakeid_next_id()", &[]);
    let mut ids: Vec<i64> = vec![single[0].get(0)];
    for _ in 0..199 {
        ids.push(db.i64("SELECT flakeid_next_id()", &[]));
    }
    assert!(ids[0] > 0, "{ids:?}");
    assert!(increasing(&ids), "next_id did not increase: {ids:?}");

    // A batch: 1000 distinct IDs in increasing order, after the last one.
    let batch = db.i64s("SELECT flakeid_next_ids(1000)", &[]);
    assert_eq!(batch.len(), 1000);
    assert!(increasing(&batch), "next_ids(1000) is not increasing");
    assert!(
        batch[0] > ids[ids.len() - 1],
        "the batch starts below the last ID"
    );
    assert!(db.i64s("SELECT flakeid_next_ids(0)", &[]).is_empty());

    // Decode: the node id, twitter's node fields, issued between two reads
    // of the database's clock.
    let before = clock_before_ms(&db);
    let id = db.i64("SELECT flakeid_next_id()", &[]);
    let after = clock_after_ms(&db);
    let rows = db.query(
        "SELECT floor(extract(epoch FROM issued_at) * 1000)::bigint, node_id, \
                node_fields::text, node_fields = '{\"datacenter\": 1, \"worker\": 5}'::jsonb, \
                sequence, clock_id \
         FROM flakeid_decode($1)",
        &[&id],
    );
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    let issued: i64 = row.get(0);
    assert!(
        (before..=after).contains(&issued),
        "ID {id} was issued at Unix ms {issued}, not between the clock's {before} and {after}"
    );
    assert_eq!(row.get::<_, i64>(1), NODE_ID, "decode's node id");
    let fields: String = row.get(2);
    assert!(
        row.get::<_, bool>(3),
        "node_fields {fields}, not datacenter 1 and worker 5"
    );
    let sequence: i64 = row.get(4);
    assert!((0..4096).contains(&sequence), "sequence {sequence}");
    assert!(row.get::<_, i64>(5) >= 0, "clock_id");
    // 100,000 more: the server's clock neither leads the wall clock nor
    // lags it by more than LAG_US (it was a millisecond either way when its
    // anchor was counted in whole milliseconds).
    support::at_the_wall_clock_to_the_us(&db, 100_000, "100,000 IDs");

    // flakeid_timestamp agrees with decode, for every ID issued here.
    let mut all = ids.clone();
    all.extend(&batch);
    all.push(id);
    let disagree = db.i64(
        "SELECT count(*) FROM unnest($1::bigint[]) AS i \
         WHERE flakeid_timestamp(i) IS DISTINCT FROM (SELECT issued_at FROM flakeid_decode(i))",
        &[&all],
    );
    assert_eq!(
        disagree, 0,
        "flakeid_timestamp disagrees with flakeid_decode"
    );

    // Every format round-trips; the fixed-width ones sort as the IDs do.
    for format in ["base62", "base32", "hex", "decimal"] {
        let wrong = db.i64(
            "SELECT count(*) FROM unnest($1::bigint[]) AS i \
             WHERE flakeid_parse(flakeid_encode(i, $2)) IS DISTINCT FROM i",
            &[&all, &format],
        );
        assert_eq!(wrong, 0, "{format}: parse(encode(id)) is not id");
        if format != "decimal" {
            let sorted = db.query(
                "SELECT array_agg(flakeid_encode(i, $2) ORDER BY i) \
                      = array_agg(flakeid_encode(i, $2) ORDER BY flakeid_encode(i, $2) COLLATE \"C\") \
                 FROM unnest($1::bigint[]) AS i",
                &[&all, &format],
            );
            assert!(
                sorted[0].get::<_, bool>(0),
                "{format} does not sort as the IDs"
            );
        }
    }
    let defaults = db.i64(
        "SELECT count(*) FROM unnest($1::bigint[]) AS i \
         WHERE flakeid_encode(i) <> flakeid_encode(i, 'base62') \
            OR flakeid_encode(i, 'decimal') <> i::text",
        &[&all],
    );
    assert_eq!(
        defaults, 0,
        "the default format is not base62, or decimal not the number"
    );

    min_id_at_selects_the_rows_issued_after(&db);

    // Bad input: a typed error, and the session goes on.
    db.expect_error("SELECT * FROM flakeid_decode(-1)", "22023", "-1");
    db.expect_error("SELECT flakeid_timestamp(-1)", "22023", "-1");
    db.expect_error("SELECT flakeid_encode(1, 'nope')", "22023", "nope");
    db.expect_error("SELECT flakeid_parse('!!')", "22P02", "!!");
    db.expect_error("SELECT flakeid_parse('')", "22P02", "not an ID");
    db.expect_error("SELECT flakeid_next_ids(-1)", "22023", "negative");
    db.expect_error("SELECT flakeid_min_id_at('infinity')", "22008", "");
    let next = db.i64("SELECT flakeid_next_id()", &[]);
    assert!(next > id, "next_id after the errors: {next} <= {id}");
    support::assert_no_crash(&server);
}

/// Rows 1-3 inserted, then `t` read from the database's clock once it is a
/// millisecond past their last one, then rows 4-6: `id >=
/// flakeid_min_id_at(t)` selects rows 4-6 exactly.
fn min_id_at_selects_the_rows_issued_after(db: &Db) {
    db.query(
        "CREATE TABLE m (id bigint PRIMARY KEY DEFAULT flakeid_next_id(), n int NOT NULL)",
        &[],
    );
    db.query("CREATE TABLE at (t timestamptz NOT NULL)", &[]);
    for n in 1..=3 {
        db.query("INSERT INTO m (n) VALUES ($1)", &[&n]);
    }
    // t: the database's clock on a millisecond boundary, once past the
    // millisecond of row 3 (polling the clock: an event, not a guess).
    let mut polls = 0;
    while db
        .query(
            "INSERT INTO at SELECT date_trunc('milliseconds', clock_timestamp()) \
             WHERE date_trunc('milliseconds', clock_timestamp()) \
                   > (SELECT max(flakeid_timestamp(id)) FROM m) \
             RETURNING 1",
            &[],
        )
        .is_empty()
    {
        polls += 1;
        assert!(
            polls < 100_000,
            "the database's clock did not pass row 3's millisecond"
        );
    }
    // The generator's clock (the server's monotonic clock, anchored to the
    // wall clock) reaches t too before row 4.
    let mut polls = 0;
    while !db.query(
        "SELECT flakeid_timestamp(flakeid_next_id()) >= (SELECT t FROM at)",
        &[],
    )[0]
    .get::<_, bool>(0)
    {
        polls += 1;
        assert!(polls < 100_000, "the generator's clock did not reach t");
    }
    for n in 4..=6 {
        db.query("INSERT INTO m (n) VALUES ($1)", &[&n]);
    }
    let selected: Vec<i32> = db
        .query(
            "SELECT n FROM m WHERE id >= flakeid_min_id_at((SELECT t FROM at)) ORDER BY n",
            &[],
        )
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(selected, [4, 5, 6], "id >= flakeid_min_id_at(t)");
    // Every ID at or after t's millisecond is at least flakeid_min_id_at(t).
    let below = db.i64(
        "SELECT count(*) FROM m, at \
         WHERE flakeid_timestamp(id) >= t AND id < flakeid_min_id_at(t)",
        &[],
    );
    assert_eq!(below, 0);
}
