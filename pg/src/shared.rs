//! The generator in shared memory, and each backend's view of it.
//!
//! Shared memory holds five words, made once per server start (and again
//! after a crash restart, when PostgreSQL makes shared memory anew):
//!
//! - `WORD`: the library's state word (timestamp, node id, sequence in
//!   their ID positions). Every backend builds its own
//!   `flakeid::SharedGenerator` over it, so all backends advance one word
//!   by compare-and-swap and issue each ID once.
//! - `CEILING`: the last Unix millisecond the worker has durably reserved
//!   (0 until its first reservation commits). No ID is issued past it.
//! - `ANCHOR`: in nanoseconds, what the server's clock adds to the
//!   system's `CLOCK_MONOTONIC` (run 0.1% slow), so that every process
//!   reads the same clock. The worker sets it first, never
//!   below its reservation from before the restart, so the clock starts
//!   after every ID issued before, even if the wall clock was set back.
//!   After that it only moves forward: when the wall clock is ahead of the
//!   server's clock, a reading raises it to match (`server_ms`).
//! - `WANTED`: the latest millisecond a backend asked the worker to reserve.
//! - `WORKER_LATCH`: the worker's latch, which backends set to ask.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use flakeid::{
    BuildError, Clock, GenerateError, Generator, OnClockBehind, OnExhausted, SharedGenerator,
};
use pgrx::atomics::PgAtomic;
use pgrx::pg_shmem_init;
use pgrx::prelude::*;

use crate::lease;
use crate::settings::{self, raise};

pub(crate) static WORD: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"flakeid.word") };
pub(crate) static CEILING: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"flakeid.ceiling") };
pub(crate) static ANCHOR: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"flakeid.anchor") };
pub(crate) static WANTED: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"flakeid.wanted") };
pub(crate) static WORKER_LATCH: PgAtomic<AtomicUsize> =
    unsafe { PgAtomic::new(c"flakeid.worker_latch") };

/// Set in the postmaster when it preloads the library; every backend
/// inherits it by fork. Unset in a backend that loaded the library itself.
static PRELOADED: AtomicUsize = AtomicUsize::new(0);

/// How long a backend waits for the worker to reserve before it gives up.
const RESERVATION_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) fn init() {
    pg_shmem_init!(WORD);
    pg_shmem_init!(CEILING);
    pg_shmem_init!(ANCHOR);
    pg_shmem_init!(WANTED);
    pg_shmem_init!(WORKER_LATCH);
    lease::init();
    PRELOADED.store(1, Ordering::Relaxed);
}

/// `clock`'s reading in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC and
    // CLOCK_REALTIME exist on every platform PostgreSQL runs this
    // extension on.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec.max(0) as u64)
}

/// The system's monotonic clock in nanoseconds: one clock for every
/// process on the machine.
pub(crate) fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// [`monotonic_ns`] in milliseconds.
pub(crate) fn monotonic_ms() -> u64 {
    monotonic_ns() / 1_000_000
}

/// The monotonic time `ns` run 1/1024 (about 0.1%) slow: the server's
/// clock counts this plus the anchor. Running slow, it falls behind the
/// wall clock between comparisons (by about 1 µs per millisecond) and is
/// pulled forward at each; ahead of the wall clock (after a step back, or
/// a restart that started it after a reservation ahead of the wall clock)
/// it closes the gap by about 3.5 s per hour.
fn paced(ns: u64) -> u64 {
    ns - ns / 1024
}

/// The anchor that puts the server's clock at the wall clock now (Unix
/// time less [`paced`] monotonic time, in nanoseconds), at most the true
/// one: the wall clock is read first, so the time that passes before the
/// monotonic read counts against it. `None` if the wall clock reads
/// before the machine's boot.
pub(crate) fn wall_anchor_ns() -> Option<u64> {
    let wall = clock_ns(libc::CLOCK_REALTIME);
    wall.checked_sub(paced(monotonic_ns()))
        .filter(|&anchor| anchor > 0)
}

/// The server's clock in Unix ns with `anchor`, at monotonic time `ns`.
pub(crate) fn server_ns_at(anchor: u64, ns: u64) -> u64 {
    paced(ns).saturating_add(anchor)
}

/// The monotonic millisecond in which this process last compared the
/// server's clock with the wall clock (a backend, like the worker, is one
/// thread).
static CHECKED_MS: AtomicU64 = AtomicU64::new(u64::MAX);

/// The server's clock in Unix ms (0 before the worker anchored it).
///
/// In each monotonic millisecond in which it reads the clock, a process
/// first compares it with the wall clock, and raises the anchor if the
/// wall clock is ahead (it was stepped forward, the server's clock ran
/// slow, or this comparison is more precise than the anchor's). So the
/// server's clock:
///
/// - is never ahead of the wall clock, unless it started after a
///   reservation that was, or the wall clock was stepped back;
/// - follows the wall clock forward, and otherwise lags it by no more
///   than the time between the two reads of the most precise comparison
///   plus one millisecond run slow (microseconds);
/// - ignores a wall clock stepped back: it counts on from where it was,
///   ahead of the wall clock by the step, and closes the gap by running
///   slow ([`paced`]).
pub(crate) fn server_ms() -> u64 {
    let anchor = ANCHOR.get().load(Ordering::Acquire);
    if anchor == 0 {
        return 0;
    }
    let monotonic = monotonic_ns();
    let ms = monotonic / 1_000_000;
    // A load and a store, not a swap: the variable is this process's own,
    // and a locked swap on every reading costs the fast path.
    let anchor = if CHECKED_MS.load(Ordering::Relaxed) == ms {
        anchor
    } else {
        CHECKED_MS.store(ms, Ordering::Relaxed);
        follow_wall(anchor)
    };
    server_ns_at(anchor, monotonic) / 1_000_000
}

/// The anchor, raised to match the wall clock if that is ahead. Taken
/// after `monotonic` was read, the new anchor never puts a reading from
/// `monotonic` ahead of the wall clock.
#[cold]
fn follow_wall(anchor: u64) -> u64 {
    match wall_anchor_ns() {
        Some(wall) if wall > anchor => ANCHOR.get().fetch_max(wall, Ordering::AcqRel).max(wall),
        _ => anchor,
    }
}

/// The clock every backend's generator reads: the server's clock, held at
/// the reservation's ceiling, so no ID is issued past what the worker made
/// durable.
#[derive(Debug, Clone, Copy)]
pub struct ServerClock;

impl Clock for ServerClock {
    fn now_ms(&self) -> u64 {
        server_ms().min(ceiling())
    }
}

/// The last Unix ms a backend may issue at: the reservation's ceiling, and
/// with a leased node id also the lease's.
fn ceiling() -> u64 {
    let reserved = CEILING.get().load(Ordering::Acquire);
    if settings::leased() {
        reserved.min(lease::CEILING_MS.get().load(Ordering::Acquire))
    } else {
        reserved
    }
}

/// Sets the worker's latch, if it has one.
fn wake_worker() {
    let latch = WORKER_LATCH.get().load(Ordering::Acquire);
    if latch != 0 {
        // SAFETY: the worker's latch is its PGPROC's, in shared memory,
        // at the same address in every process; setting a latch of a
        // process that exited is harmless (PGPROC slots are not freed).
        unsafe { pg_sys::SetLatch(latch as *mut pg_sys::Latch) };
    }
}

/// Asks the worker to reserve past `ms`.
pub(crate) fn request(ms: u64) {
    ask(WANTED.get(), ms);
}

/// Raises `wanted` to `ms`, waking the worker only if that raised it.
pub(crate) fn ask(wanted: &AtomicU64, ms: u64) {
    if wanted.fetch_max(ms, Ordering::AcqRel) < ms {
        wake_worker();
    }
}

fn check_can_issue() {
    if PRELOADED.load(Ordering::Relaxed) == 0 {
        raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "pg_flakeid is not in shared_preload_libraries: IDs come from one generator in \
             shared memory, which only a preloaded library can have"
                .into(),
            "add pg_flakeid to shared_preload_libraries in postgresql.conf and restart the \
             server",
        );
    }
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot issue flakeid IDs during recovery: this server is a standby".into(),
            "issue IDs on the primary; a promoted standby issues them once recovery ends",
        );
    }
}

/// This backend's generator over the shared word, built on first use.
static GENERATOR: OnceLock<SharedGenerator<ServerClock>> = OnceLock::new();

/// This backend's generator over the shared word, built on first use.
/// `None` while a leased node id is switching (the word already holds the
/// new node id, the grant read before did not): try again.
fn generator(leased: Option<lease::Ticket>) -> Option<&'static SharedGenerator<ServerClock>> {
    if let Some(generator) = GENERATOR.get() {
        return Some(generator);
    }
    let layout = settings::layout().clone();
    let node = match leased {
        Some(ticket) => ticket.node,
        None => settings::node_id(),
    };
    #[cfg(not(feature = "plant-per-backend-word"))]
    let word: &'static AtomicU64 = WORD.get();
    // Planted bug: a word per backend, as pgflake keeps its state in
    // per-backend statics. Two connections then issue the same IDs.
    #[cfg(feature = "plant-per-backend-word")]
    let word: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let built = Generator::builder(layout)
        .node_id(node)
        .clock(ServerClock)
        .on_exhausted(OnExhausted::Wait)
        .on_clock_behind(OnClockBehind::Continue)
        .build_shared(word);
    match built {
        Ok(generator) => Some(GENERATOR.get_or_init(|| generator)),
        Err(BuildError::SharedWordNodeId { .. }) if leased.is_some() => None,
        Err(e) => raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("flakeid cannot build its generator: {e}"),
            "the layout or node id changed without a restart; restart the server",
        ),
    }
}

/// Why a backend waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stall {
    /// For the worker to reserve past the clock, or for the next tick.
    Reservation,
    /// For the node-id lease to be proven valid.
    Fenced,
    /// For the lease store to record timestamps past the clock.
    LeaseCeiling,
}

/// Waits a moment; raises an error naming what it waited for if the stall
/// has lasted [`RESERVATION_TIMEOUT`].
fn wait_for(stall: Stall, started: &mut Option<u64>) {
    let now = monotonic_ms();
    let since = *started.get_or_insert(now);
    if now.saturating_sub(since) <= RESERVATION_TIMEOUT.as_millis() as u64 {
        sleep_ms(1);
        return;
    }
    let secs = RESERVATION_TIMEOUT.as_secs();
    let (message, hint) = match stall {
        Stall::Fenced => (
            format!(
                "flakeid's node-id lease has not been proven valid for {secs} s: no ID is \
                 issued while it cannot be"
            ),
            "see the server log for the flakeid worker's lease errors (is the store in \
             flakeid.node_lease reachable?)",
        ),
        Stall::LeaseCeiling => (
            format!(
                "flakeid's lease store has not recorded timestamps past Unix ms {} for \
                 {secs} s",
                lease::CEILING_MS.get().load(Ordering::Acquire)
            ),
            "see the server log for the flakeid worker's lease errors",
        ),
        Stall::Reservation => (
            match CEILING.get().load(Ordering::Acquire) {
                0 => "flakeid's worker has not reserved any timestamps yet".to_string(),
                ceiling => format!(
                    "flakeid's worker has not reserved timestamps past Unix ms {ceiling} for \
                     {secs} s"
                ),
            },
            "see the server log for the flakeid reservation worker's errors (is \
             flakeid.database a database it can connect to?)",
        ),
    };
    raise(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        message,
        hint,
    );
}

/// Sleeps on this backend's latch, answering cancels and shutdowns.
fn sleep_ms(ms: i64) {
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            ms as _,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
    }
    pg_sys::check_for_interrupts!();
}

/// Whether the reservation (and a lease's ceiling) covers the server's
/// clock now, or what to wait for; asks the worker to reserve ahead once
/// half of the reservation is used, and the lease's keeper to record more
/// once the clock comes within a third of a TTL of its ceiling.
fn covered() -> Result<(), Stall> {
    let reserved = CEILING.get().load(Ordering::Acquire);
    let now = server_ms();
    if reserved == 0 || now == 0 {
        return Err(Stall::Reservation);
    }
    let half = (settings::RESERVE_MS.get().max(10) / 2) as u64;
    if now.saturating_add(half) >= reserved {
        request(now);
    }
    if settings::leased() {
        // The lease's ceiling runs about a TTL ahead of the wall clock; the
        // server's clock can run ahead of that after a restart.
        let leased = lease::CEILING_MS.get().load(Ordering::Acquire);
        let ahead = (settings::NODE_LEASE_TTL_MS.get().max(1) / 3) as u64;
        if now.saturating_add(ahead) >= leased {
            ask(lease::WANTED_MS.get(), now);
        }
        if now > leased {
            return Err(Stall::LeaseCeiling);
        }
    }
    if now <= reserved {
        Ok(())
    } else {
        Err(Stall::Reservation)
    }
}

/// The next ID from the shared generator, waiting (interruptibly) where
/// the generator would.
pub fn issue_one() -> i64 {
    let mut out = 0;
    issue_with(
        |generator| generator.poll_id(),
        |id| {
            out = u64::from(id) as i64;
            true
        },
    );
    out
}

/// `n` IDs from the shared generator, in order, waiting as
/// [`issue_one`] does.
pub fn issue(n: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(n);
    let left = std::cell::Cell::new(n);
    if n > 0 {
        issue_with(
            |generator| generator.poll_ids(left.get()),
            |batch| {
                out.extend(batch.map(|id| u64::from(id) as i64));
                left.set(n - out.len());
                out.len() == n
            },
        );
    }
    out
}

/// Runs `attempt` until `accept` says enough: each attempt finds the
/// reservation covering the clock (or waits for the worker), and with a
/// leased node id a valid grant; what an attempt installed is accepted only
/// if that grant is still valid after it (else dropped, never returned); a
/// tick used up is waited out.
fn issue_with<T>(
    mut attempt: impl FnMut(&SharedGenerator<ServerClock>) -> Result<T, GenerateError>,
    mut accept: impl FnMut(T) -> bool,
) {
    let leased = settings::leased();
    if GENERATOR.get().is_none() {
        // Once: a backend with a generator is preloaded, past recovery for
        // good (a primary never goes back) and has its node id.
        check_can_issue();
        settings::check_node_source();
    }
    let mut stalled = None;
    loop {
        let ticket = if leased {
            match lease::ticket() {
                Some(ticket) => Some(ticket),
                None => {
                    wait_for(Stall::Fenced, &mut stalled);
                    continue;
                }
            }
        } else {
            None
        };
        let Some(generator) = generator(ticket) else {
            wait_for(Stall::Fenced, &mut stalled);
            continue;
        };
        if let Err(stall) = covered() {
            wait_for(stall, &mut stalled);
            continue;
        }
        match attempt(generator) {
            Ok(issued) => {
                if ticket.is_some_and(|t| !lease::confirm(t)) {
                    // Installed after the grant lapsed or was replaced:
                    // dropped (IDs must be unique, not dense).
                    continue;
                }
                stalled = None;
                if accept(issued) {
                    return;
                }
            }
            Err(GenerateError::SequenceExhausted { .. } | GenerateError::ClockBehind { .. }) => {
                // The tick is used up (or the clock is held at a ceiling):
                // the next millisecond, or the worker, frees it.
                wait_for(Stall::Reservation, &mut stalled);
            }
            Err(e) => raise(
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                format!("flakeid cannot issue an ID: {e}"),
                "the layout's time range may have ended; see flakeid_decode of the last ID",
            ),
        }
    }
}
