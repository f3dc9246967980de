//! The fault test's short runs (CI) and its planted bugs.
//!
//! Each test starts its own cluster on loopback addresses of its own, and
//! needs root (iptables, and group ids for the members), etcd, redis-server
//! and libfaketime (.ci/test installs them). Safety is asserted on the IDs
//! the checker reads back, never on how long anything took: the nemesis's
//! timing decides what happens, not whether a test passes.
//!
//! Run: `cargo test -p flakeid-fault-tests --release` (about 3 minutes).
//! A run's records stay in a directory the failure message names; set
//! `FLAKEID_KEEP_FAULT_RUNS` to keep them after a pass too.

use std::path::{Path, PathBuf};

use flakeid_fault_tests::check::{Report, fault_lines};
use flakeid_fault_tests::run::{Config, StoreKind, failover_claim, planted_open_fence, run};
use flakeid_fault_tests::worker::Plant;

fn worker() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fault-worker"))
}

/// A run's directory: removed after the test passes, kept (and named) if
/// it fails.
struct RunDir(PathBuf);

impl RunDir {
    fn new(name: &str) -> RunDir {
        let dir = std::env::temp_dir().join(flakeid_test_servers::unique_prefix(name));
        std::fs::create_dir_all(&dir).unwrap();
        RunDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("FLAKEID_KEEP_FAULT_RUNS").is_some() {
            eprintln!("the run's records are in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn short_run(store: StoreKind) {
    let dir = RunDir::new(&format!("short-{}", store.name()));
    let mut config = Config::short(store, worker(), dir.path().to_owned());
    config.verbose = true;
    let report = run(config);
    println!("{}\n{report}", fault_lines(&report));
    // Enough to say something: the quiet baseline alone issues more.
    assert!(report.ids > 1_000, "too few IDs to say anything: {report}");
    assert_eq!(report.violations(), 0, "{report}");
}

/// A 3-member etcd cluster (workers given all three endpoints): each
/// member fault on the leader and on a follower, a generator stopped past
/// its deadline, a generator with a skewed clock. No ID twice, no node id
/// in one millisecond from two processes.
#[test]
fn etcd_short_run_issues_no_id_twice() {
    short_run(StoreKind::Etcd);
}

/// Redis behind Sentinel, every worker's `Lease::redis_sentinel` following
/// the primary through failovers: the same faults, the same safety.
#[test]
fn redis_short_run_issues_no_id_twice() {
    short_run(StoreKind::Redis);
}

fn assert_caught(report: &Report) {
    println!("{report}");
    assert!(
        report.overlaps > 0,
        "the planted bug went unnoticed: {report}"
    );
}

/// The planted "fence that stays open": a worker cut off from the etcd
/// member it talks to keeps issuing under its node id after it is fenced,
/// while another claims that node id on the other two members.
#[test]
fn a_fence_left_open_is_caught_on_etcd() {
    let dir = RunDir::new("open-fence-etcd");
    assert_caught(&planted_open_fence(StoreKind::Etcd, &worker(), dir.path()));
}

/// The same on Redis: the primary is cut off, Sentinel promotes a
/// replica, and a worker claims the node id there.
#[test]
fn a_fence_left_open_is_caught_on_redis() {
    let dir = RunDir::new("open-fence-redis");
    assert_caught(&planted_open_fence(StoreKind::Redis, &worker(), dir.path()));
}

/// The planted "claim that ignores the predecessor's deadline": after a
/// failover that lost the holder's renewals, a worker issues under the
/// node id it claimed on the promoted replica at once, while the holder
/// still issues on the old primary.
#[test]
fn an_eager_claim_is_caught_on_a_sentinel_failover() {
    let dir = RunDir::new("eager-claim");
    assert_caught(&failover_claim(Plant::EagerClaim, &worker(), dir.path()));
}

/// The control of the test above, with an honest claimer: the Sentinel
/// lease (the worker's `Store::Sentinel`) waits out the previous holder's
/// deadline, and the run stays clean.
#[test]
fn an_honest_claim_is_safe_through_a_sentinel_failover() {
    let dir = RunDir::new("honest-claim");
    let report = failover_claim(Plant::None, &worker(), dir.path());
    println!("{report}");
    assert_eq!(report.violations(), 0, "{report}");
}
