//! The only place that names std or loom concurrency primitives.
//!
//! Every atomic, `Ordering`, mutex, spin hint and pause used by the crate comes from
//! here. Under `--cfg flakeid_loom` they are loom's, so the loom models in
//! `loom-tests/` drive the real generator code. Under loom a spin or a sleep is a
//! scheduler yield (loom needs one in every wait loop), and a deadline counts
//! pauses instead of reading the wall clock (loom runs must be deterministic).

#[cfg(not(flakeid_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
#[cfg(not(flakeid_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(flakeid_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
#[cfg(flakeid_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

use std::time::Duration;

/// Atomics in statics that live as long as the process and are never part of
/// a loom model (a static would outlive the model): std's, even under loom.
#[cfg(not(flakeid_loom))]
pub(crate) mod process {
    pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
}

/// Threads: std's, or loom's under loom. A background thread (the
/// persistence writer) waits with `park_timeout`; under loom that is a plain
/// park, so a lost wake-up shows up as a deadlock loom reports, not as a
/// delay that a timeout hides.
#[cfg(not(flakeid_loom))]
pub(crate) use std::thread;

#[cfg(flakeid_loom)]
pub(crate) mod thread {
    pub(crate) use loom::thread::{Builder, JoinHandle, Thread, park};

    pub(crate) fn park_timeout(_timeout: std::time::Duration) {
        park();
    }
}

/// Locks `mutex`, ignoring poisoning: no code path panics while holding one of
/// our locks, and the guarded values are plain integers that are always valid.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Exponential backoff after a lost compare-and-swap (crossbeam's, or a loom yield).
pub(crate) struct Backoff {
    #[cfg(not(flakeid_loom))]
    inner: crossbeam_utils::Backoff,
}

impl Backoff {
    #[inline]
    pub(crate) fn new() -> Self {
        Backoff {
            #[cfg(not(flakeid_loom))]
            inner: crossbeam_utils::Backoff::new(),
        }
    }

    /// Spins a little longer each call; for contention on the state word.
    #[inline]
    pub(crate) fn spin(&self) {
        #[cfg(not(flakeid_loom))]
        self.inner.spin();
        #[cfg(flakeid_loom)]
        loom::thread::yield_now();
    }

    /// Spins, then yields the thread; for waiting on another thread or the clock.
    #[inline]
    pub(crate) fn snooze(&self) {
        #[cfg(not(flakeid_loom))]
        self.inner.snooze();
        #[cfg(flakeid_loom)]
        loom::thread::yield_now();
    }

    /// True once spinning and yielding have run their course and the caller
    /// should sleep instead.
    #[inline]
    pub(crate) fn is_completed(&self) -> bool {
        #[cfg(not(flakeid_loom))]
        return self.inner.is_completed();
        #[cfg(flakeid_loom)]
        return true;
    }
}

/// Puts the thread to sleep for about `duration` (a yield under loom).
pub(crate) fn sleep(duration: Duration) {
    #[cfg(not(flakeid_loom))]
    std::thread::sleep(duration);
    #[cfg(flakeid_loom)]
    {
        let _ = duration;
        loom::thread::yield_now();
    }
}

/// A point in real time after which a bounded wait gives up.
///
/// Under loom it expires after a fixed number of checks instead, so a model
/// explores both "the clock caught up in time" and "the wait ran out".
pub(crate) struct Deadline {
    /// `None`: the duration was too large to add, so the deadline never comes.
    #[cfg(not(flakeid_loom))]
    at: Option<std::time::Instant>,
    #[cfg(flakeid_loom)]
    checks_left: std::cell::Cell<u32>,
}

impl Deadline {
    pub(crate) fn after(duration: Duration) -> Self {
        #[cfg(not(flakeid_loom))]
        return Deadline {
            at: std::time::Instant::now().checked_add(duration),
        };
        #[cfg(flakeid_loom)]
        return Deadline {
            checks_left: std::cell::Cell::new(if duration.is_zero() { 0 } else { 2 }),
        };
    }

    /// The time left (under loom, a token millisecond until it expires).
    pub(crate) fn remaining(&self) -> Duration {
        #[cfg(not(flakeid_loom))]
        return self.at.map_or(Duration::MAX, |at| {
            at.saturating_duration_since(std::time::Instant::now())
        });
        #[cfg(flakeid_loom)]
        return Duration::from_millis(u64::from(self.checks_left.get() > 0));
    }

    pub(crate) fn has_passed(&self) -> bool {
        #[cfg(not(flakeid_loom))]
        return self.at.is_some_and(|at| std::time::Instant::now() >= at);
        #[cfg(flakeid_loom)]
        {
            let left = self.checks_left.get();
            self.checks_left.set(left.saturating_sub(1));
            left == 0
        }
    }
}
