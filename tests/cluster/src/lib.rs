//! flakeid's fault test: leased generators on real clusters, a nemesis, a
//! checker.
//!
//! - **The clusters** ([`cluster`], on `flakeid-test-servers`): a 3-member
//!   etcd cluster, and Redis with a primary, two replicas and three
//!   sentinels, each member on a loopback address of its own; or a
//!   database (`Lease::postgres`, `Lease::mysql`): a PostgreSQL primary
//!   with an asynchronous standby streaming through a proxy (workers get
//!   both hosts with `target_session_attrs=read-write`), or one MariaDB
//!   server, each on 127.0.0.1 and a port of its own.
//! - **Generator processes** (`fault-worker`, [`worker`], run as a
//!   [`fleet`]): each builds a leased generator over few node ids, asks it
//!   for IDs every millisecond, records each ID with the time of its call,
//!   and reports (as [`record::Line`]s) when it was built, fenced, issuing
//!   again, and each extension of its lease with the instants the request
//!   went and the answer came. Several processes compete for the node ids
//!   and are replaced as they exit, so node ids change hands. Some run
//!   with their wall clock skewed by libfaketime.
//! - **The nemesis** ([`nemesis`]): pauses (SIGSTOP), kills and restarts,
//!   and isolates (iptables) one member at a time, the etcd leader and the
//!   Redis primary included (on Redis until the sentinels fail over);
//!   pauses generator processes past their deadline; starts generators
//!   with skewed clocks. On a database: pauses it (every process) and cuts
//!   it off (iptables on its port) past the TTL, kills and restarts it,
//!   and on PostgreSQL, once a run, promotes the standby with writes lost
//!   (replication frozen, a node id handed over and renewals acknowledged
//!   by the primary alone, the primary killed for good).
//! - **The checker** ([`check`]): duplicates, overlaps, deadlines, hand-off
//!   order, the workers' exits and output, the faults injected and the
//!   failovers completed; the time generators were fenced per fault kind.
//! - **Planted bugs** ([`scenario`]): the library's own (`flakeid::plant`,
//!   built with `--cfg flakeid_plant`), each in a scenario that makes it
//!   matter within milliseconds, beside the honest control of the same
//!   scenario.
//!
//! The short runs and the scenarios are this crate's integration tests
//! (`cargo test -p flakeid-fault-tests --release`; the plants with
//! `FLAKEID_PLANT=1`, which sets `cfg(flakeid_plant)`); the long run is
//! `fault-run` (see its `--help`). Both need etcd, redis-server, iptables
//! and libfaketime (Debian: etcd-server, redis-server, iptables, faketime,
//! libfaketime), PostgreSQL and MariaDB for those stores (Debian:
//! postgresql, mariadb-server),
//! and root: iptables (`sudo -n iptables` is tried otherwise), and the
//! members' own group ids, without which isolating an etcd member cuts
//! only the connections made to it, not the ones it dials.

pub mod check;
pub mod cluster;
pub mod fleet;
pub mod history;
pub mod nemesis;
pub mod record;
pub mod scenario;
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
