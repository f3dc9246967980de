//! Fork detection: a process-global count of the forks this process is
//! descended through, bumped by a `pthread_atfork` child handler, which the
//! hot path compares with the count its generator was built under (one
//! relaxed load, no system call). A generator built in a child uses the
//! library's default clock like any other: the library starts a refresh
//! thread of the child's own for it.

#[cfg(unix)]
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How many forks separate this process from the one that loaded the
/// bindings: its parent's count plus one, set in the child before `fork`
/// returns there. Only grows along a line of descent.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Whether the child handler counts (tests turn it off to show that the
/// fork tests catch a child that is not detected).
static DETECT: AtomicBool = AtomicBool::new(true);

#[cfg(unix)]
static INSTALL: Once = Once::new();

/// Runs in the child of every `fork` (glibc and musl call it before `fork`
/// returns in the child): a relaxed add on a static, async-signal-safe.
#[cfg(unix)]
extern "C" fn child() {
    if DETECT.load(Ordering::Relaxed) {
        FORKS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Registers the child handler, once per process (a forked child inherits
/// the registration). Windows has no `fork`: nothing to register there, and
/// the count stays 0.
pub(crate) fn install() {
    #[cfg(unix)]
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
