//! Fork detection: a process-global count of the forks this process is
//! descended through, bumped by a `pthread_atfork` child handler, which the
//! hot path compares with the count its generator was built under (one
//! relaxed load, no system call).
//!
//! Also the clock a generator may use after a fork: the library's default
//! clock keeps its cached reading fresh with one thread per process, which
//! a forked child does not have (only the forking thread survives a fork).
//! A child whose ancestor started that thread reads the precise clock on
//! every call instead ([`MonotonicClock::thread_free`]), whose IDs never lag.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use flakeid::MonotonicClock;

/// How many forks separate this process from the one that loaded the
/// bindings: its parent's count plus one, set in the child before `fork`
/// returns there. Only grows along a line of descent.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Whether the child handler counts (tests turn it off to show that the
/// fork tests catch a child that is not detected).
static DETECT: AtomicBool = AtomicBool::new(true);

/// The fork count under which the default clock's refresh thread was
/// started in this line of descent (`NO_THREAD`: never).
static CLOCK_THREAD: AtomicU64 = AtomicU64::new(NO_THREAD);
const NO_THREAD: u64 = u64::MAX;

static INSTALL: Once = Once::new();

/// Runs in the child of every `fork` (glibc and musl call it before `fork`
/// returns in the child): a relaxed add on a static, async-signal-safe.
extern "C" fn child() {
    if DETECT.load(Ordering::Relaxed) {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Registers the child handler, once per process (a forked child inherits
/// the registration).
pub(crate) fn install() {
    INSTALL.call_once(|| {
        // SAFETY: `child` is an `extern "C" fn()` that only touches two
        // static atomics, which is what a child handler may do.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(child)) };
        // pthread_atfork fails only for want of memory to record the
        // handler; without it, generators could not tell a fork, so this
        // is not a state to carry on in.
        assert_eq!(rc, 0, "pthread_atfork failed: {rc}");
    });
}

/// The fork count of this process now.
#[inline(always)]
pub(crate) fn count() -> u64 {
    FORKS.load(Ordering::Relaxed)
}

/// Turns fork detection off or on again, for tests that show that the
/// fork tests fail without it. Never call it otherwise: with detection off,
/// a forked child issues the IDs its parent and siblings issue.
///
/// ```
/// flakeid_bindings::set_fork_detection_for_tests(true); // the default
/// ```
#[doc(hidden)]
pub fn set_fork_detection_for_tests(on: bool) {
    DETECT.store(on, Ordering::Relaxed);
}

/// The default clock if its refresh thread can run in this process (it was
/// started here, or nowhere in this line of descent yet), else the same
/// clock without the cached reading.
pub(crate) fn clock() -> MonotonicClock {
    let now = count();
    match CLOCK_THREAD.compare_exchange(NO_THREAD, now, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => MonotonicClock::new(),
        Err(started) if started == now => MonotonicClock::new(),
        Err(_) => MonotonicClock::thread_free(),
    }
}
