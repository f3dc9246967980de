//! The reservation worker: keeps a durable high-water mark of the
//! timestamps backends may issue, in the WAL.
//!
//! It runs on the primary (it starts when recovery ends, so a standby
//! starts it at its promotion), connected to `flakeid.database`, where it
//! keeps one sequence, `flakeid.reservation`, whose value is a Unix
//! millisecond: no ID with a later timestamp has been issued.
//!
//! 1. **Start.** It reads the sequence (replayed from the WAL after a
//!    crash, or received by streaming replication on a promoted standby)
//!    and anchors the server's clock at or after the value plus one, even
//!    if the wall clock reads earlier (it was set back, or the crashed
//!    server had reserved ahead).
//! 2. **Reserve.** When a backend asks (the clock has reached half of the
//!    window before the ceiling), it sets the sequence to the clock plus
//!    `flakeid.reserve_ms` with `setval`, which writes a WAL record, and
//!    commits with `synchronous_commit = on`, so the record is flushed (and,
//!    with synchronous replication, on the standbys) before the commit
//!    returns. Only then does it publish the new ceiling to shared memory.
//!
//! So every ID a backend returns is at or below a ceiling whose WAL record
//! precedes the returning transaction's own commit record: a crash restart
//! replays it, and a standby that received the transaction's commit
//! received it too. A server that issues no IDs writes nothing.

use std::ffi::CStr;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgrx::bgworkers::{
    BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags,
};
use pgrx::prelude::*;

use crate::lease::Holder;
use crate::settings;
use crate::shared::{
    ANCHOR, CEILING, WANTED, WORKER_LATCH, monotonic_ns, server_ms, server_ns_at, wall_anchor_ns,
};

pub(crate) fn register() {
    BackgroundWorkerBuilder::new("flakeid reservation worker")
        .set_type("flakeid")
        .set_library("pg_flakeid")
        .set_function("flakeid_worker_main")
        .enable_spi_access()
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

const SETUP: &str = "\
    SET LOCAL synchronous_commit = on; \
    CREATE SCHEMA IF NOT EXISTS flakeid; \
    CREATE SEQUENCE IF NOT EXISTS flakeid.reservation AS bigint \
        MINVALUE 0 MAXVALUE 9223372036854775807 START WITH 0 NO CYCLE";

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The worker's entry point (named in its registration).
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn flakeid_worker_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let database = match settings::text(&settings::DATABASE) {
        name if name.is_empty() => "postgres".to_string(),
        name => name,
    };
    BackgroundWorker::connect_worker_to_spi(Some(&database), None);
    WORKER_LATCH
        .get()
        .store(unsafe { pg_sys::MyLatch } as usize, Ordering::Release);

    let floor: i64 = BackgroundWorker::transaction(|| {
        Spi::run(SETUP).expect("flakeid: the reservation sequence cannot be made");
        Spi::get_one::<i64>("SELECT last_value FROM flakeid.reservation")
            .expect("flakeid: the reservation sequence cannot be read")
            .unwrap_or(0)
    });
    let floor = floor.max(0) as u64;
    if ANCHOR.get().load(Ordering::Acquire) == 0 {
        // The clock starts after the floor even if the wall clock reads
        // earlier; IDs then run ahead of the wall clock by that much. The
        // monotonic clock counts from the machine's boot, the wall clock
        // from 1970: the anchor is positive unless the wall clock is set
        // decades back, which no ID may follow.
        let Some(wall) = wall_anchor_ns() else {
            warning!(
                "flakeid: the wall clock (Unix ms {}) reads before the machine's boot; no ID \
                 is issued until it is right",
                unix_ms()
            );
            return;
        };
        let now = monotonic_ns();
        let after_floor = (floor + 1)
            .saturating_mul(1_000_000)
            .saturating_sub(server_ns_at(0, now));
        let anchor = wall.max(after_floor);
        let start = server_ns_at(anchor, now) / 1_000_000;
        ANCHOR.get().store(anchor, Ordering::Release);
        if start > unix_ms() + 1 {
            log!(
                "flakeid: the reservation (Unix ms {floor}) is ahead of the wall clock; the \
                 server's clock starts after it, {} ms ahead",
                start - unix_ms()
            );
        }
    }
    // Reserve at once, so the first ID needs no wait.
    request_now();
    let mut holder = None;
    if settings::leased() {
        loop {
            match Holder::claim() {
                Ok(claimed) => {
                    holder = Some(claimed);
                    break;
                }
                Err(e) => {
                    warning!("flakeid: {e}; trying again in 1 s");
                    if !BackgroundWorker::wait_latch(Some(Duration::from_secs(1))) {
                        return;
                    }
                }
            }
        }
    }
    // With a lease, the grant is passed on every 20 ms (the deadline needs
    // no poll: backends check it themselves).
    let poll = if holder.is_some() {
        Duration::from_millis(20)
    } else {
        Duration::from_secs(10)
    };
    loop {
        if let Some(holder) = holder.as_mut() {
            holder.publish();
        }
        reserve_if_wanted();
        if !BackgroundWorker::wait_latch(Some(poll)) {
            break;
        }
        if BackgroundWorker::sighup_received() {
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
    }
    if let Some(holder) = holder {
        holder.abandon();
    }
}

fn request_now() {
    WANTED.get().fetch_max(server_ms(), Ordering::AcqRel);
    reserve_if_wanted();
}

/// Reserves past what backends asked for, if the ceiling does not cover it
/// by half a window.
fn reserve_if_wanted() {
    let window = settings::RESERVE_MS.get().max(10) as u64;
    let ceiling = CEILING.get().load(Ordering::Acquire);
    let wanted = WANTED.get().load(Ordering::Acquire);
    if ceiling != 0 && wanted.saturating_add(window / 2) < ceiling {
        return;
    }
    let target = wanted
        .max(server_ms())
        .saturating_add(window)
        .min(i64::MAX as u64);
    if save(target) {
        CEILING.get().fetch_max(target, Ordering::AcqRel);
    }
}

/// Logs `target` in the WAL (`setval`) and commits, flushed.
fn save(target: u64) -> bool {
    if cfg!(feature = "plant-unlogged-reservation") {
        // Planted bug: the ceiling is published without its WAL record.
        return true;
    }
    let query: &CStr = c"SELECT setval('flakeid.reservation', $1)";
    let saved = BackgroundWorker::transaction(|| {
        Spi::run("SET LOCAL synchronous_commit = on")?;
        Spi::get_one_with_args::<i64>(
            query.to_str().unwrap_or_default(),
            &[(target as i64).into()],
        )
    });
    match saved {
        Ok(_) => true,
        Err(e) => {
            warning!("flakeid: the reservation could not be saved: {e}");
            false
        }
    }
}
