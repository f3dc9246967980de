//! The scenarios both lease backends must pass, run by `lease.rs` (a
//! module per store) against real servers from the `flakeid-test-servers`
//! crate (`tests/servers/`), and what they share.
//!
//! - `store.rs`: reading and writing flakeid's keys in the store directly.
//! - `heard.rs`: a lease's events as a generator's hook hears them.
//! - `claims.rs`: claims, renewals, releases, rotation, bad marks and
//!   replies, runtimes: one generator or a few, the store healthy.
//! - `race.rs`: two processes of 32 generators claiming at once.
//! - `outage.rs`: the store killed and restarted, or frozen.
//! - `churn.rs`: 1,000 simulated nodes joining and leaving.
//! - `late.rs`: renewals answered late (Redis for the deadline's), and
//!   (etcd) a renewal's copy applied after a newer renewal.
//! - `plant.rs`: bugs planted in the lease (the plant build).
//! - `servers.rs`: the servers, one type for the four stores.
//! - `sql.rs`: what only the PostgreSQL and MySQL stores face: claimers
//!   racing in one process, hostile names, tables missing or of another
//!   shape, users without rights, read-only servers, locked rows, the
//!   claimant's clock ahead.

mod churn;
mod claims;
mod heard;
mod late;
mod outage;
#[cfg(flakeid_plant)]
mod plant;
mod race;
mod servers;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub mod sql;
mod store;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakeid::{
    BuildError, Clock, Event, GenerateError, Generator, Health, Id, Layout, Lease, LeaseError,
    ManualClock, Persist,
};
pub use flakeid_test_servers::{Impostor, Proxy, free_port, unique_prefix};
pub use servers::{Kind, Server, url_at};

pub use churn::churn;
pub use claims::{
    claim_renew_release, errors, inside_a_runtime, nonsense_replies, poisoned_marks,
    rotation_after_rollback, successor_starts_after_the_mark,
};
pub use heard::{Heard, OpenOnDrop, is_extension, is_fenced, is_renewal_failure};
#[cfg(feature = "redis")]
pub use late::deadline_counts_from_sending;
#[cfg(feature = "etcd")]
pub use late::late_copy_leaves_the_mark;
pub use late::late_renewal;
pub use outage::{frozen_store, killed_then_restarted};
#[cfg(flakeid_plant)]
pub use plant::{fails_naming, planted};
pub use race::{race_child, two_processes_race};
use store::LeaseStore;
/// The TTL the tests run with: short, so fencing and expiry take a second.
pub const TTL: Duration = Duration::from_secs(1);

/// Held by each scenario: with second-long TTLs, several scenarios at once
/// on two cores (a server each, up to a hundred keepers) could starve
/// renewals and fence generators the test expects to keep their node ids.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
pub const MARGIN: Duration = Duration::from_millis(200);

pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

pub fn lease_at(kind: Kind, addr: SocketAddr, prefix: &str) -> Lease {
    let lease = match kind {
        #[cfg(feature = "etcd")]
        Kind::Etcd => Lease::etcd([url_at(kind, addr)]),
        #[cfg(feature = "redis")]
        Kind::Redis => Lease::redis(url_at(kind, addr)),
        #[cfg(feature = "postgres")]
        Kind::Postgres => Lease::postgres(url_at(kind, addr)),
        #[cfg(feature = "mysql")]
        Kind::Mysql => Lease::mysql(url_at(kind, addr)),
        #[allow(unreachable_patterns)]
        other => panic!("{other:?} is not built in"),
    };
    lease
        .prefix(prefix)
        .ttl(TTL)
        .safety_margin(MARGIN)
        .connect_timeout(Duration::from_secs(5))
}

fn build(lease: Lease) -> Result<Generator, BuildError> {
    Generator::builder(Layout::twitter()).lease(lease).build()
}

fn node_of(id: Id) -> u64 {
    Layout::twitter().decode(id).unwrap().node_id()
}

fn assert_unique(ids: &mut [u64]) {
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        panic!("id {} was issued twice", w[0]);
    }
}

/// Waits (polling) until `done`, for at most `within`; panics naming `what`
/// after that. The bound is far above the expected wait: reaching it means
/// something never happened, not that it was slow.
pub fn wait_until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let begun = Instant::now();
    while !done() {
        assert!(begun.elapsed() < within, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(2));
    }
}

/// What a test does to each lease it builds: nothing, or (in the plant
/// build) plant a bug the test must catch.
pub type Tweak<'a> = &'a dyn Fn(Lease) -> Lease;

/// No tweak.
pub fn honest(lease: Lease) -> Lease {
    lease
}
