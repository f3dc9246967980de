//! Where generators get the time: the [`Clock`] trait, the wall clock and a
//! settable clock here; the default [`MonotonicClock`], its refresh thread,
//! the cached reading that thread serves and its time source in files of
//! their own.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::primitive::{AtomicU64, Ordering};

mod monotonic;
mod refresh;
mod served;
mod source;

pub use monotonic::MonotonicClock;
// The loom models drive the refresh thread's handshake directly.
#[cfg(flakeid_loom)]
pub use served::{RESTING, Served};
pub(crate) use source::Source;

/// The generator's only source of time, so tests and simulations can inject one.
///
/// A clock returns Unix time in milliseconds. It may go backwards (a wall clock
/// does when it is stepped); the generator's
/// [`OnClockBehind`](crate::OnClockBehind) policy decides what happens then.
///
/// # The clocks
///
/// - [`MonotonicClock`], the default: the TSC, anchored to the wall clock,
///   with a cached reading for the generator's fast path.
/// - [`SystemClock`]: the wall clock itself.
/// - [`ManualClock`]: set by hand, for tests and simulations.
/// - Your own, as below, given to [`Builder::clock`](crate::Builder::clock).
///
/// ```
/// use flakeid::Clock;
///
/// /// A clock that always reads the same instant.
/// struct Frozen(u64);
///
/// impl Clock for Frozen {
///     fn now_ms(&self) -> u64 {
///         self.0
///     }
/// }
///
/// assert_eq!(Frozen(42).now_ms(), 42);
/// ```
pub trait Clock: Send + Sync {
    /// The current time in milliseconds since 1970-01-01T00:00:00Z.
    fn now_ms(&self) -> u64;

    /// A reading that may be older than [`now_ms`](Clock::now_ms) but costs
    /// less: a value `now_ms` returned at some moment before this call (a
    /// cached one), or `None` if the clock has no cheaper reading. By
    /// default, `now_ms` itself.
    ///
    /// A clock whose cached reading is not being kept fresh for a while may
    /// return `u64::MAX` instead (as [`MonotonicClock`] does while its
    /// refresh thread rests): a layout's timestamps end within `u64`
    /// milliseconds, so that value names no tick, and a generator reads
    /// `now_ms`.
    ///
    /// A generator reads it on its fast path and uses it only to continue
    /// the tick it names, which is valid whenever the reading was taken;
    /// every other decision (a new tick, a used-up sequence, a clock
    /// behind) is made on `now_ms`, as is every call when this is `None`.
    /// So an ID's timestamp lags its call by at most the age of this
    /// reading, and never leads the clock. [`MonotonicClock`] serves a
    /// reading that one thread per process keeps fresh.
    ///
    /// Serve a cached reading only from a clock that never goes back: a
    /// step back shows only once the generator reads `now_ms` (when the
    /// cached reading's tick is used up, or names another tick), so until
    /// then the [`OnClockBehind`](crate::OnClockBehind) policy does not see
    /// it.
    ///
    /// ```
    /// use flakeid::Clock;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    ///
    /// /// A clock whose cheap reading is the highest one it returned.
    /// struct Cached {
    ///     now: AtomicU64,
    ///     highest: AtomicU64,
    /// }
    ///
    /// impl Clock for Cached {
    ///     fn now_ms(&self) -> u64 {
    ///         let now = self.now.load(Ordering::Relaxed);
    ///         self.highest.fetch_max(now, Ordering::Relaxed).max(now)
    ///     }
    ///     fn recent_ms(&self) -> Option<u64> {
    ///         Some(self.highest.load(Ordering::Relaxed))
    ///     }
    /// }
    ///
    /// let clock = Cached { now: AtomicU64::new(5), highest: AtomicU64::new(0) };
    /// assert_eq!(clock.recent_ms(), Some(0));
    /// assert_eq!(clock.now_ms(), 5);
    /// assert_eq!(clock.recent_ms(), Some(5));
    /// ```
    #[inline]
    fn recent_ms(&self) -> Option<u64> {
        Some(self.now_ms())
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    #[inline]
    fn recent_ms(&self) -> Option<u64> {
        (**self).recent_ms()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    #[inline]
    fn recent_ms(&self) -> Option<u64> {
        (**self).recent_ms()
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    #[inline]
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    #[inline]
    fn recent_ms(&self) -> Option<u64> {
        (**self).recent_ms()
    }
}

fn system_now_ms() -> u64 {
    // Before 1970 reads as 1970.
    unix_ms(SystemTime::now()).unwrap_or(0)
}

/// Milliseconds since the Unix epoch at `time` (`u64::MAX` past that, which
/// no real clock reaches); `None` before 1970.
pub(crate) fn unix_ms(time: SystemTime) -> Option<u64> {
    let since = time.duration_since(UNIX_EPOCH).ok()?;
    Some(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// The plain wall clock (`SystemTime::now`).
///
/// IDs follow wall time exactly, including its steps backwards, so pair it
/// with an [`OnClockBehind`](crate::OnClockBehind) policy you have chosen.
/// [`MonotonicClock`] is the default and never goes backwards.
///
/// ```
/// use flakeid::{Clock, SystemClock};
///
/// assert!(SystemClock.now_ms() > 1_700_000_000_000);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        system_now_ms()
    }
}

/// A settable clock shared between threads, for tests and simulations.
///
/// Clones share one time. It goes wherever it is set, backwards included.
///
/// ```
/// use flakeid::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new(1_000);
/// let shared = clock.clone();
/// shared.advance(Duration::from_millis(5));
/// assert_eq!(clock.now_ms(), 1_005);
/// clock.rewind(Duration::from_millis(10));
/// assert_eq!(shared.now_ms(), 995);
/// ```
#[derive(Clone)]
pub struct ManualClock {
    ms: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock that reads `unix_ms` until it is moved.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).clock(clock).build()?;
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!(decoded.unix_ms(), 1_700_000_000_000);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(unix_ms: u64) -> ManualClock {
        ManualClock {
            ms: Arc::new(AtomicU64::new(unix_ms)),
        }
    }

    /// Sets the time.
    ///
    /// ```
    /// use flakeid::{Clock, ManualClock};
    ///
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// clock.set_ms(1_600_000_000_000); // backwards too
    /// assert_eq!(clock.now_ms(), 1_600_000_000_000);
    /// ```
    pub fn set_ms(&self, unix_ms: u64) {
        self.ms.store(unix_ms, Ordering::SeqCst);
    }

    /// Moves the time forward (saturating at `u64::MAX` ms).
    ///
    /// ```
    /// use flakeid::{Clock, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new(1_000);
    /// clock.advance(Duration::from_secs(2));
    /// assert_eq!(clock.now_ms(), 3_000);
    /// clock.advance(Duration::MAX);
    /// assert_eq!(clock.now_ms(), u64::MAX);
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let _ = self
            .ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |ms| {
                Some(ms.saturating_add(by))
            });
    }

    /// Moves the time backwards (saturating at 0).
    ///
    /// ```
    /// use flakeid::{Clock, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new(1_000);
    /// clock.rewind(Duration::from_millis(400));
    /// assert_eq!(clock.now_ms(), 600);
    /// clock.rewind(Duration::from_secs(1));
    /// assert_eq!(clock.now_ms(), 0);
    /// ```
    pub fn rewind(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let _ = self
            .ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |ms| {
                Some(ms.saturating_sub(by))
            });
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.ms.load(Ordering::SeqCst)
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("ms", &self.now_ms())
            .finish()
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_saturates() {
        let clock = ManualClock::new(5);
        clock.rewind(Duration::from_millis(10));
        assert_eq!(clock.now_ms(), 0);
        clock.set_ms(u64::MAX - 1);
        clock.advance(Duration::from_millis(10));
        assert_eq!(clock.now_ms(), u64::MAX);
    }
}
