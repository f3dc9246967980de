//! Leased node ids (`flakeid.node_lease`): servers lease their node ids
//! from a lease table on another PostgreSQL server (the library's
//! PostgreSQL lease, kept by the extension's worker). Two servers get
//! different node ids and issue no common ID; a server cut off from the
//! store stops issuing (its backends are fenced at the lease's deadline,
//! whatever the worker does) and issues again, under a lease nobody else
//! holds, once the store is back.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use flakeid_test_servers::Postgres;

use crate::support::{self, Db, assert_no_crash, increasing};

/// The lease's TTL: the worker renews every second, and a server cut off
/// from the store stops issuing within 2.4 s (the TTL less a fifth).
const TTL_MS: u64 = 3_000;

/// How long a fenced call may take to say so: the 10 s a backend waits
/// for the lease before its error, after the deadline, with room for a
/// loaded machine. The test ends as soon as the error comes.
const FENCED_WITHIN: Duration = Duration::from_secs(60);

/// What a backend says while the lease cannot be proven valid.
const FENCED: &str = "lease has not been proven valid";

/// A server whose node id is leased from `store`'s table, with the
/// extension created (and, with a plant, the plant's library loaded).
fn leased(store: &Postgres, plant: Option<&Path>) -> Postgres {
    let lease = format!("flakeid.node_lease = '{}'", store.url());
    let ttl = format!("flakeid.node_lease_ttl_ms = {TTL_MS}");
    support::start_with_lines(
        false,
        plant,
        support::conf_with_node(&lease, plant, &[&ttl]),
    )
}

fn node_of(db: &Db, id: i64) -> i64 {
    db.i64("SELECT node_id FROM flakeid_decode($1)", &[&id])
}

#[test]
fn two_servers_lease_different_node_ids_and_share_no_id() {
    let store = Postgres::start();
    let (a, b) = (leased(&store, None), leased(&store, None));
    let (db_a, db_b) = (Db::connect(&a), Db::connect(&b));
    let ids_a = db_a.i64s("SELECT flakeid_next_ids(20000)", &[]);
    let ids_b = db_b.i64s("SELECT flakeid_next_ids(20000)", &[]);
    assert!(increasing(&ids_a) && increasing(&ids_b));
    let (node_a, node_b) = (node_of(&db_a, ids_a[0]), node_of(&db_b, ids_b[0]));
    assert_ne!(node_a, node_b, "both servers issue under node id {node_a}");
    for (db, ids, node) in [(&db_a, &ids_a, node_a), (&db_b, &ids_b, node_b)] {
        let nodes = db.i64s(
            "SELECT DISTINCT d.node_id FROM unnest($1::bigint[]) x, LATERAL flakeid_decode(x) d",
            &[ids],
        );
        assert_eq!(
            nodes,
            [node],
            "one server's IDs under more than its node id"
        );
    }
    let seen: HashSet<i64> = ids_a.iter().copied().collect();
    assert!(ids_b.iter().all(|id| !seen.contains(id)), "an ID from both");
    // The store's table names each server's claim.
    let holders = store
        .sql("SELECT count(*) FROM flakeid_leases WHERE node >= 0 AND token IS NOT NULL")
        .expect("the lease table");
    assert_eq!(holders, "2");
    assert_no_crash(&a);
    assert_no_crash(&b);
}

/// The scenario: `Err` names the violation (the server not fenced once
/// the store stopped answering: it issued on, or stopped for another
/// reason; or an ID issued twice). Anything else that goes wrong panics.
pub fn a_server_cut_off_from_the_store_stops_issuing(plant: Option<&Path>) -> Result<(), String> {
    let store = Postgres::start();
    let server = leased(&store, plant);
    let db = Db::connect(&server);
    let before = db.i64s("SELECT flakeid_next_ids(1000)", &[]);
    // Every process of the store stops answering; the worker's renewals
    // hang, and the lease's deadline passes.
    store.pause();
    let paused = Instant::now();
    let mut issued = before.clone();
    let fenced = loop {
        match db.try_query("SELECT flakeid_next_id()", &[]) {
            Ok(rows) => issued.push(rows[0].get(0)),
            Err(e) if e.message.contains(FENCED) => break e,
            Err(e) => {
                // Stopped, but not fenced: at the lease's ceiling, a TTL
                // or more after the deadline, when another server may
                // already hold the node id.
                store.resume();
                return Err(format!(
                    "the cut-off server was not fenced; {} IDs later it stopped with: {}",
                    issued.len() - before.len(),
                    e.message
                ));
            }
        }
        if paused.elapsed() > FENCED_WITHIN {
            store.resume();
            return Err(format!(
                "{} IDs issued in the {} s after the lease store stopped answering, with a \
                 {TTL_MS} ms TTL: the server was never fenced",
                issued.len() - before.len(),
                FENCED_WITHIN.as_secs()
            ));
        }
    };
    assert_eq!(fenced.code, "55000", "{fenced:?}");
    store.resume();
    // Back: the worker claims again (the same node id after its
    // predecessor's mark, or another) and the server issues again.
    let resumed = Instant::now();
    let after = loop {
        match db.try_query("SELECT flakeid_next_ids(1000)", &[]) {
            Ok(rows) => break rows.iter().map(|r| r.get(0)).collect::<Vec<i64>>(),
            Err(e) if e.message.contains(FENCED) && resumed.elapsed() < FENCED_WITHIN => {}
            Err(e) => panic!("the server did not issue again after the store came back: {e:?}"),
        }
    };
    let mut all: Vec<i64> = issued.iter().chain(&after).copied().collect();
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    if all.len() != count {
        return Err(format!("{} IDs issued twice", count - all.len()));
    }
    assert_no_crash(&server);
    Ok(())
}

#[test]
fn a_server_cut_off_from_the_store_stops_issuing_and_resumes() {
    a_server_cut_off_from_the_store_stops_issuing(None).unwrap();
}
