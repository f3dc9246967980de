//! The fault test's short runs (CI).
//!
//! Each test starts its own cluster on loopback addresses of its own, and
//! needs root (iptables, and group ids for the members), etcd, redis-server
//! and libfaketime (.ci/test installs them). What is asserted comes from
//! the checker, on the IDs and the records, never from how long anything
//! took: the nemesis's timing decides what happens, not whether a test
//! passes.
//!
//! Run: `cargo test -p flakeid-fault-tests --release`. A failed run's
//! records stay in a directory the failure names; set
//! `FLAKEID_KEEP_TEST_DIRS` to keep them after a pass too.

use std::path::PathBuf;

use flakeid_fault_tests::check::fault_lines;
use flakeid_fault_tests::cluster::StoreKind;
use flakeid_fault_tests::nemesis::{Config, run};
use flakeid_test_servers::ScratchDir;

fn worker() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fault-worker"))
}

fn short_run(store: StoreKind) {
    let dir = ScratchDir::on_disk(&format!("short-{}", store.name()));
    let mut config = Config::short(store, worker(), dir.path().to_owned());
    config.verbose = true;
    let kinds = config.kinds.len();
    let report = run(config);
    println!("{}\n{report}", fault_lines(&report));
    assert_eq!(report.violations(), 0, "{report}");
    // The run did what it was for: every kind of fault, each counted once
    // it really was injected; and the checker saw the fencing it checks.
    assert!(report.missing_kinds.is_empty(), "{report}");
    assert!(report.faults.len() >= kinds, "{report}");
    assert!(report.ids > 1_000, "too few IDs to say anything: {report}");
    assert!(
        report.safety.holders > 4,
        "no node id changed hands: {report}"
    );
    assert!(
        report.safety.attributed * 100 >= report.ids * 99,
        "IDs not checked against a deadline: {report}"
    );
    if store == StoreKind::Redis {
        assert!(
            !report.failovers.is_empty(),
            "no Sentinel failover completed: {report}"
        );
    }
}

/// A 3-member etcd cluster (workers given all three endpoints): each
/// member fault on the leader and on a follower, a generator stopped past
/// its deadline, a generator with a skewed clock.
#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn etcd_short_run() {
    short_run(StoreKind::Etcd);
}

/// Redis behind Sentinel, every worker's `Lease::redis_sentinel` following
/// the primary through failovers: the same faults, each on the primary
/// held until Sentinel failed over.
#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn redis_short_run() {
    short_run(StoreKind::Redis);
}

/// A PostgreSQL primary and its standby (workers' `Lease::postgres` given
/// both, `target_session_attrs=read-write`): the primary paused and cut off
/// past the TTL, killed and restarted, and promoted away with writes lost
/// (replication frozen, claims and renewals acknowledged by the primary
/// alone, the primary killed, the standby promoted); a generator stopped
/// past its deadline, a generator with a skewed clock.
#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn postgres_short_run() {
    short_run(StoreKind::Postgres);
}

/// One MariaDB server (`Lease::mysql`): paused and cut off past the TTL,
/// killed and restarted; the two generator faults.
#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn mysql_short_run() {
    short_run(StoreKind::Mysql);
}
