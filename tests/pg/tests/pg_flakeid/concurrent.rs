//! 16 clients at once (pgbench, 2 threads) insert rows whose id column
//! defaults to `flakeid_next_id()`, under a UNIQUE constraint: every
//! transaction commits and every row has an ID of its own, so all
//! backends draw from one generator in shared memory.

use std::path::Path;
use std::process::Command;

use flakeid_test_servers::{Postgres, ScratchDir, scratch_base};

use crate::support;

const CLIENTS: usize = 16;
const PER_CLIENT: usize = 2_000;

/// pgbench's line `<label>: <number>...`, as a number.
fn pgbench_count(output: &str, label: &str) -> Option<u64> {
    let line = output.lines().find(|l| l.starts_with(label))?;
    let rest = line[label.len()..].trim_start_matches(':').trim();
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The scenario: `Err` names the violation (a duplicate ID: a unique
/// violation that failed pgbench, or fewer distinct IDs than rows).
/// Anything else that goes wrong panics.
pub fn sixteen_clients_share_one_generator(plant: Option<&Path>) -> Result<(), String> {
    let server = support::start(false, plant, &[]);
    support::sql(
        &server,
        "CREATE TABLE t (id bigint DEFAULT flakeid_next_id() UNIQUE, client int NOT NULL)",
    );
    let dir = ScratchDir::under(&scratch_base(), "pgbench");
    let script = dir.path().join("insert.sql");
    std::fs::write(&script, "INSERT INTO t (client) VALUES (:client_id);\n")
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", script.display()));
    let output = Command::new(Postgres::program("pgbench"))
        .args(["-n", "-c", &CLIENTS.to_string(), "-j", "2"])
        .args(["-t", &PER_CLIENT.to_string()])
        .arg("-f")
        .arg(&script)
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-U", "postgres", "postgres"])
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .unwrap_or_else(|e| panic!("cannot run pgbench: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = (CLIENTS * PER_CLIENT) as i64;
    let (rows, distinct) = {
        let counts = support::sql(&server, "SELECT count(*), count(DISTINCT id) FROM t");
        let (rows, distinct) = counts.split_once('|').expect("two counts");
        (
            rows.parse::<i64>().expect("a count"),
            distinct.parse::<i64>().expect("a count"),
        )
    };
    support::assert_no_crash(&server);
    let failed = pgbench_count(&text, "number of failed transactions");
    if !output.status.success() || failed != Some(0) {
        let duplicate = text
            .lines()
            .find(|l| l.contains("duplicate key"))
            .unwrap_or("(no duplicate key error in its output)");
        if text.contains("duplicate key") || distinct < rows {
            return Err(format!(
                "pgbench failed ({}; failed transactions {failed:?}): {duplicate}; \
                 {rows} rows, {distinct} distinct IDs",
                output.status
            ));
        }
        panic!(
            "pgbench failed ({}) but not on a duplicate:\n{text}",
            output.status
        );
    }
    if distinct < rows {
        return Err(format!("{rows} rows but only {distinct} distinct IDs"));
    }
    assert_eq!(
        pgbench_count(&text, "number of transactions actually processed"),
        Some(expected as u64),
        "pgbench's output:\n{text}"
    );
    assert_eq!(rows, expected, "rows inserted");
    Ok(())
}

#[test]
fn sixteen_clients_inserting_get_distinct_ids() {
    assert_eq!(sixteen_clients_share_one_generator(None), Ok(()));
}
