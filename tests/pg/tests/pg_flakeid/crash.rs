//! A crash restart with the clock set back: a durable server issues and
//! commits IDs, is killed (SIGKILL to the postmaster and every backend),
//! and restarts with its wall clock 30 s in the past (a preload library,
//! `support::ClockBack`; its `now()` is then behind the last ID's
//! timestamp). Every ID it issues then is above every ID
//! from before the crash, and none repeats: the worker's WAL-logged
//! reservation carried the clock across the crash.

use std::path::Path;

use crate::support::{self, CLOCK_BACK_MS, ClockBack};

const ROUNDS: usize = 5;
const PER_ROUND: usize = 200;

/// Inserts `ROUNDS` transactions of `PER_ROUND` rows of `phase`, each on
/// a connection of its own; `Err` on a duplicate ID (the UNIQUE index).
fn insert(server: &flakeid_test_servers::Postgres, phase: i32) -> Result<(), String> {
    for _ in 0..ROUNDS {
        let statement =
            format!("INSERT INTO c (phase) SELECT {phase} FROM generate_series(1, {PER_ROUND})");
        match server.sql(&statement) {
            Ok(_) => {}
            Err(e) if e.contains("duplicate key") => {
                return Err(format!("phase {phase} repeated an ID: {e}"));
            }
            Err(e) => panic!("{statement}: {e}; log:\n{}", server.log_excerpt()),
        }
    }
    Ok(())
}

/// The scenario: `Err` names the violation (an ID after the crash at or
/// below one from before it). Anything else that goes wrong panics.
pub fn crash_restart_with_the_clock_back(plant: Option<&Path>) -> Result<(), String> {
    let mut server = support::start(true, plant, &[]);
    support::sql(
        &server,
        "CREATE TABLE c (id bigint DEFAULT flakeid_next_id() UNIQUE, phase int NOT NULL)",
    );
    insert(&server, 1)?;
    let old_max = support::sql_i64(&server, "SELECT max(id) FROM c");
    let old_max_ms = support::sql_i64(
        &server,
        &format!("SELECT floor(extract(epoch FROM flakeid_timestamp({old_max})) * 1000)::bigint"),
    );

    server.kill();
    let clock_back = ClockBack::build();
    for (key, value) in clock_back.env() {
        server.set_env(key, Some(&value));
    }
    server.restart();
    if let Some(dir) = plant {
        support::check_plant_loaded(&server, dir);
    }
    let now_ms = support::sql_i64(
        &server,
        "SELECT floor(extract(epoch FROM now()) * 1000)::bigint",
    );
    assert!(
        now_ms + CLOCK_BACK_MS * 2 / 3 < old_max_ms,
        "the server's clock was not set back: now() is Unix ms {now_ms}, the \
         last ID before the crash was issued at {old_max_ms}"
    );
    let kept = support::sql_i64(&server, "SELECT count(*) FROM c WHERE phase = 1");
    assert_eq!(
        kept,
        (ROUNDS * PER_ROUND) as i64,
        "committed rows lost in the crash"
    );

    insert(&server, 2)?;
    let (new_min, below) = {
        let answer = support::sql(
            &server,
            &format!(
                "SELECT min(id), count(*) FILTER (WHERE id <= {old_max}) FROM c WHERE phase = 2"
            ),
        );
        let (min, below) = answer.split_once('|').expect("two columns");
        (min.to_owned(), below.parse::<i64>().expect("a count"))
    };
    if below > 0 {
        return Err(format!(
            "{below} IDs issued after the crash are at or below the last one before it \
             ({old_max}, issued at Unix ms {old_max_ms}); the smallest is {new_min}"
        ));
    }
    let repeats = support::sql_i64(&server, "SELECT count(*) - count(DISTINCT id) FROM c");
    if repeats > 0 {
        return Err(format!("{repeats} IDs repeated"));
    }
    support::assert_no_crash(&server);
    Ok(())
}

#[test]
fn ids_after_a_crash_with_the_clock_set_back_stay_above() {
    assert_eq!(crash_restart_with_the_clock_back(None), Ok(()));
}
