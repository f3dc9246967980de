//! flakeid's fault test: leased generators on real clusters, a nemesis, a
//! checker.
//!
//! - **The clusters** (`flakeid-test-servers`): a 3-member etcd cluster, and
//!   Redis with a primary, two replicas and three sentinels, each member on a
//!   loopback address of its own.
//! - **Generator processes** (`fault-worker`, [`worker`]): each builds a
//!   leased generator over few node ids, calls `try_next_id` in a loop,
//!   appends every ID it is handed to a file, and reports on its standard
//!   output (as [`record::Line`]s) when it was built, fenced, issuing again,
//!   and what its lease keeper said. Several processes compete for the node
//!   ids and are replaced as they exit, so node ids change hands. Some run
//!   with their wall clock skewed by libfaketime. Planted bugs live here, as
//!   modes of the worker ([`worker::Plant`]), never in the library.
//! - **The nemesis** ([`run`]): pauses (SIGSTOP), kills and restarts, and
//!   isolates (iptables) one member at a time, the etcd leader and the
//!   Redis primary included; pauses generator processes past their
//!   deadline; starts generators with skewed clocks.
//! - **The checker** ([`check`]): reads every ID every process issued and
//!   fails on a duplicate, or on a (node id, millisecond) two processes
//!   issued in (an overlap, even without a duplicate); reports the time
//!   generators were fenced per fault kind, and IDs per second.
//!
//! The short runs are this crate's integration tests (`cargo test -p
//! flakeid-fault-tests --release`); the long run is `fault-run` (see its
//! `--help`). Both need etcd, redis-server, iptables and libfaketime
//! (Debian: etcd-server, redis-server, iptables, faketime, libfaketime),
//! and root: iptables (`sudo -n iptables` is tried otherwise), and the
//! members' own group ids, without which isolating an etcd member cuts
//! only the connections made to it, not the ones it dials.

pub mod check;
pub mod history;
pub mod record;
pub mod run;
pub mod worker;

use std::ops::RangeInclusive;

use flakeid::Layout;

/// The layout every worker issues under: 41 bits of milliseconds since
/// 2020, 4 bits of node id (the lease uses [`NODE_IDS`]), 8 of sequence.
pub fn layout() -> Layout {
    Layout::builder()
        .epoch_ms(1_577_836_800_000)
        .timestamp_bits(41)
        .node("node", 4)
        .sequence(8)
        .build()
        .expect("a valid layout")
}

/// The node ids the workers lease: fewer than the workers alive at once,
/// so that one waits and ids change hands.
pub const NODE_IDS: RangeInclusive<u64> = 0..=3;

/// CLOCK_MONOTONIC in nanoseconds: one time line for every process on the
/// machine (libfaketime is told to leave it alone), so the checker can
/// line up the workers' fenced times with the faults.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC)");
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// The wall clock in Unix milliseconds, as this process sees it (skewed,
/// under libfaketime).
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
