//! [`MonotonicClock`], the default clock: the TSC anchored to the wall
//! clock, never going backwards, and the process's one shared instance of it.

use std::fmt;
use std::sync::Arc;
#[cfg(not(flakeid_loom))]
use std::sync::OnceLock;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::refresh::Refresh;
#[cfg(not(flakeid_loom))]
use super::refresh::RefreshThread;
use super::source::Source;
use super::{Clock, SystemClock};
use crate::primitive::{AtomicU64, Ordering};

/// Milliseconds per nanosecond, 1/1024 slower than real time, as a 64.64
/// fixed-point multiplier: `ms = ns * SLOW_MS_PER_NS >> 64`.
const SLOW_MS_PER_NS: u128 = (1u128 << 64) * 1023 / 1_024_000_000;

/// The default clock: a TSC-based monotonic clock (via `quanta`) anchored to
/// the wall clock, with a cached reading that one thread per process keeps
/// fresh. It never goes backwards.
///
/// # Two readings
///
/// - [`now_ms`](Clock::now_ms), the precise reading: the TSC, scaled and
///   anchored (about 10 ns here, more in some virtual machines).
/// - [`recent_ms`](Clock::recent_ms), the cached reading: one load of the
///   highest precise reading served so far (under 1 ns). A thread, named
///   `flakeid-clock`, takes a precise reading just after each millisecond
///   begins, so the cached one is at most that thread's wake-up delay old
///   (typically under 0.1 ms; more while a busy machine keeps the thread
///   waiting). Any precise reading, such as a generator's when it enters a
///   new tick, refreshes it too. While the thread rests (below) the cached
///   reading is `u64::MAX`, which names no tick.
///
/// A [`Generator`](crate::Generator) reads the cached value on its fast path
/// and only to continue the tick it names; it reads the precise clock to
/// enter a new tick, when a tick's sequence is used up, when the clock reads
/// behind its state, and at a lease's or a reservation's ceiling. So:
///
/// - an ID's timestamp lags the time of its call by at most the cached
///   reading's age: one refresh period (the wake-up delay above). While the
///   thread rests nothing lags: the first call after a pause finds no tick
///   in the cached reading, and reads the precise clock;
/// - it never leads the clock by more than the lead allowance
///   ([`OnExhausted::Borrow`](crate::OnExhausted::Borrow)), and never goes
///   back (the generator's state, not the clock, orders IDs);
/// - if the refresh thread stalls (descheduled, or stopped in a debugger),
///   IDs carry the last refreshed millisecond until that tick's sequence
///   runs out; the generator then reads the precise clock, enters the
///   current tick, and refreshes the cached value itself. Every tick still
///   holds its full sequence and the stream still moves to new ticks.
///
/// # The refresh thread
///
/// [`MonotonicClock::new`] shares one clock per process, and its clones
/// share it too: one anchor, one thread. The thread starts with the first
/// such clock and parks (using no CPU) while none exists. While one does, it
/// wakes about 1,000 times a second as long as the cached reading is in use,
/// and rests otherwise:
///
/// - A generator reads the precise clock at least once per tick it issues
///   IDs in (to enter it), so a precise reading through a clock with the
///   cached reading is what keeps the thread awake.
/// - After 100 ms without one, the thread rests: parked, no wake-ups, no
///   CPU, and the cached reading set to `u64::MAX`.
/// - Every call while it rests therefore takes the generator's slow path,
///   as the first call in any new tick does: it reads the precise clock,
///   and its ID carries the current time. The first call after a pause
///   costs what it would with the thread awake (it enters a new tick).
/// - A lone call, or calls within one millisecond, leave the thread
///   resting. The first call in the millisecond after one with a call (the
///   calls go on) serves its reading as the cached one and wakes the thread:
///   one `unpark`, a system call of a few microseconds (several in a virtual
///   machine), once per burst. The calls after it take the fast path again.
/// - A new clock ([`MonotonicClock::new`], not a clone) wakes the thread too.
///
/// A forked child has no refresh thread: `fork` copies only the thread that
/// calls it. A clock made in the child ([`MonotonicClock::new`], which is
/// also a generator's default clock) starts the child's own. A clock
/// inherited from the parent (made before the fork, or a clone of one made
/// there) keeps the parent's, which nothing runs in the child: its cached
/// reading stays where the fork left it, and its IDs lag as behind a stalled
/// thread (above). Make clocks and generators after the fork (see the crate
/// docs' caveats).
///
/// [`MonotonicClock::thread_free`] is the same clock without the cached
/// reading, for processes that must not start a thread: every call then
/// reads the TSC. If the thread cannot be spawned, `new` returns such a
/// clock.
///
/// # Where it reads the time
///
/// From the TSC (through `quanta`), if the TSC passes a check when the first
/// clock of the process is created: over 4 ms, its rate as `quanta`
/// calibrated it must agree with [`Instant`]'s within 0.03% (300 ppm), the
/// measurement's own uncertainty counted against it. Otherwise (a skewed
/// calibration, a thread moved to a core whose TSC disagrees mid-check, a
/// machine too busy to measure) it reads [`Instant`] instead: slower, never
/// wrong. The check runs once per process, its verdict shared by every clock.
/// Under Miri and the loom models the clock always reads [`Instant`].
///
/// A TSC rate error within the bound, plus the 0.05% NTP may slew the wall
/// clock, stays under the 0.1% the clock deliberately runs slow (below), so
/// the clock never outruns the wall clock.
///
/// TSCs that are not synchronized across cores can read backwards when a
/// thread moves to another core. The clock never does: a reading below the
/// last one it returned (on any thread) returns that one again, so a
/// generator sees the same millisecond, never a step back.
///
/// # How it keeps to wall time
///
/// A reading is `anchor + elapsed`, where `elapsed` is the monotonic time since
/// creation, deliberately run 1/1024 (about 0.1%) slow. Every second (of its own
/// time) a reading also consults the wall clock, and if the wall clock is ahead
/// it moves the anchor forward to match: to the wall clock's millisecond less
/// the time elapsed once it was read, rounded up to a whole millisecond, so
/// that no reading is ahead of the wall clock whatever fraction of a
/// millisecond either had gone. It never moves the anchor back. So:
///
/// - **Wall clock stepped forward** by `d`: within about a second the clock
///   jumps forward by `d` too (IDs skip those milliseconds, which is harmless).
/// - **Wall clock stepped back** by `d`: the clock keeps counting from where it
///   was, `d` ahead of the wall clock, and closes the gap at the 0.1% slow rate
///   (about 3.5 s per hour), after which it follows the wall clock again.
/// - **Drift**: the slow rate exceeds the rate error of a calibrated TSC plus the
///   500 ppm that NTP may slew the wall clock, so the clock runs behind the wall
///   clock between checks and is pulled forward at each. Apart from the step-back
///   case it stays within 3 ms behind wall time and never ahead of it.
///
/// Calibrating the TSC (up to 200 ms) and checking it (about 4 ms) happen
/// once per process, when the first clock is created.
///
/// ```
/// use flakeid::{Clock, MonotonicClock, SystemClock};
///
/// let clock = MonotonicClock::new();
/// let a = clock.now_ms();
/// let b = clock.now_ms();
/// assert!(b >= a);
/// // The cached reading: never ahead of the precise one.
/// assert!(clock.recent_ms().is_some_and(|recent| recent <= clock.now_ms()));
/// assert!(SystemClock.now_ms().abs_diff(a) < 1_000);
/// ```
///
/// [`Instant`]: std::time::Instant
pub struct MonotonicClock<W: Clock = SystemClock> {
    shared: Arc<Anchored<W>>,
    /// The cached reading [`Clock::recent_ms`] serves (the refresh thread's,
    /// or in tests the clock's highest reading), or `None` for a precise one.
    cached: Option<LastMs>,
    /// The claim on the process's refresh thread that keeps it running while
    /// this clock lives, and through which precise readings wake it.
    refresh: Option<Refresh>,
}

/// The anchored TSC clock itself, shared by the clones of a
/// [`MonotonicClock`] (and by every `MonotonicClock::new` of a process).
struct Anchored<W> {
    source: Source,
    /// Raw counter value at creation.
    start: u64,
    /// Slow milliseconds per raw counter tick, as a 0.64 fixed-point
    /// multiplier: quanta's tick-to-nanosecond scale folded into ours, so a
    /// reading takes one multiply.
    slow_ms_per_tick: u64,
    /// Unix ms at `start`; only ever increases.
    anchor_ms: AtomicU64,
    /// Slow-elapsed ms at which a reading next consults the wall clock.
    next_check_ms: AtomicU64,
    /// The highest reading returned: a lower one returns this instead. On a
    /// line of its own: written once per millisecond, when a reading first
    /// passes it.
    last_ms: LastMs,
    check_every_ms: u64,
    wall: W,
}

/// A reading in a word of its own, shared: a clock's highest reading, or the
/// cached reading the refresh thread serves.
type LastMs = Arc<CachePadded<AtomicU64>>;

impl MonotonicClock {
    /// The process's clock, anchored to the system wall clock, with the
    /// cached reading its refresh thread keeps fresh (started now if no
    /// other clock runs it, or if the one that does runs in the process
    /// this one was forked from). The first clock of a process calibrates
    /// and checks the TSC (up to about 200 ms; a forked child keeps its
    /// parent's); later ones cost a system call (the process id) and a few
    /// loads.
    ///
    /// ```
    /// use flakeid::{Clock, MonotonicClock};
    ///
    /// let (a, b) = (MonotonicClock::new(), MonotonicClock::new());
    /// // One clock per process: both read the same anchored time.
    /// assert!(b.now_ms() >= a.now_ms());
    /// ```
    pub fn new() -> MonotonicClock {
        #[cfg(not(flakeid_loom))]
        if let Some(clock) = process().cached_clock() {
            return clock;
        }
        MonotonicClock::thread_free()
    }

    /// The process's clock without the cached reading: every reading is a
    /// precise one (a TSC read), and no thread is started. For processes
    /// that must not start one; a generator on it costs about a TSC read
    /// more per ID.
    ///
    /// ```
    /// use flakeid::{Clock, Generator, Layout, MonotonicClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(MonotonicClock::thread_free())
    ///     .build()?;
    /// let id = generator.next_id();
    /// assert_eq!(generator.layout().decode(id)?.node_id(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn thread_free() -> MonotonicClock {
        // Under loom every clock is its own: statics would outlive a model.
        #[cfg(not(flakeid_loom))]
        let shared = process().clock.clone();
        #[cfg(flakeid_loom)]
        let shared = Arc::new(Anchored::new(
            Source::checked(),
            SystemClock,
            Duration::from_secs(1),
        ));
        MonotonicClock {
            shared,
            cached: None,
            refresh: None,
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl<W: Clock> MonotonicClock<W> {
    /// A new clock of its own, anchored to `wall` instead of the system wall
    /// clock, for tests and simulations of wall-clock steps. It has no
    /// cached reading and starts no thread.
    ///
    /// ```
    /// use flakeid::{Clock, ManualClock, MonotonicClock};
    /// use std::time::Duration;
    ///
    /// let wall = ManualClock::new(1_700_000_000_000);
    /// let clock = MonotonicClock::with_wall(wall.clone());
    /// let before = clock.now_ms();
    /// wall.rewind(Duration::from_secs(3600));
    /// assert!(clock.now_ms() >= before); // a step back is ignored
    /// ```
    pub fn with_wall(wall: W) -> MonotonicClock<W> {
        MonotonicClock {
            shared: Arc::new(Anchored::new(
                Source::checked(),
                wall,
                Duration::from_secs(1),
            )),
            cached: None,
            refresh: None,
        }
    }
}

#[cfg(all(test, not(flakeid_loom)))]
impl<W: Clock> MonotonicClock<W> {
    /// A clock of its own on `source`. `cached`: whether `recent_ms` serves
    /// the cached reading, here refreshed by nothing but precise readings (a
    /// refresh thread that stalled for good).
    fn from_parts(source: Source, wall: W, check_every: Duration, cached: bool) -> Self {
        let shared = Arc::new(Anchored::new(source, wall, check_every));
        MonotonicClock {
            cached: cached.then(|| shared.last_ms.clone()),
            shared,
            refresh: None,
        }
    }
}

impl<W: Clock> Anchored<W> {
    fn new(source: Source, wall: W, check_every: Duration) -> Anchored<W> {
        // The wall clock first: read before the counter starts, the anchor
        // puts no reading ahead of the wall clock.
        let anchor_ms = wall.now_ms();
        let start = source.raw();
        let check_every_ms = u64::try_from(check_every.as_millis()).unwrap_or(u64::MAX);
        // quanta scales a tick delta to nanoseconds linearly; measuring the
        // scale over 2^40 ticks keeps about 12 significant digits.
        const SPAN_BITS: u32 = 40;
        let span_ns = source.delta_as_nanos(0, 1 << SPAN_BITS);
        let slow_ms_per_tick =
            u64::try_from((u128::from(span_ns) * SLOW_MS_PER_NS) >> SPAN_BITS).unwrap_or(u64::MAX);
        Anchored {
            slow_ms_per_tick,
            anchor_ms: AtomicU64::new(anchor_ms),
            next_check_ms: AtomicU64::new(check_every_ms),
            last_ms: Arc::new(CachePadded::new(AtomicU64::new(anchor_ms))),
            check_every_ms,
            source,
            start,
            wall,
        }
    }

    /// Slow milliseconds since `start` at raw counter value `counter`, in
    /// 64.64 fixed point.
    #[inline]
    fn elapsed(&self, counter: u64) -> u128 {
        // A counter that reads below the start (TSCs out of sync across
        // cores) reads as no time elapsed, as quanta's own deltas do.
        let ticks = counter.saturating_sub(self.start);
        u128::from(ticks) * u128::from(self.slow_ms_per_tick)
    }

    #[inline]
    fn now_ms(&self) -> u64 {
        self.at(self.source.raw())
    }

    /// The reading for raw counter value `counter`.
    #[inline]
    fn at(&self, counter: u64) -> u64 {
        let elapsed = (self.elapsed(counter) >> 64) as u64;
        let reading = if elapsed >= self.next_check_ms.load(Ordering::Relaxed) {
            self.check_wall(elapsed)
        } else {
            self.anchor_ms
                .load(Ordering::Relaxed)
                .saturating_add(elapsed)
        };
        self.not_below_last(reading)
    }

    /// `reading`, or the highest reading returned if that is higher: a
    /// thread on a core whose TSC lags another's sees the same millisecond
    /// again rather than one before it.
    #[inline]
    fn not_below_last(&self, reading: u64) -> u64 {
        let last = self.last_ms.load(Ordering::Relaxed);
        if reading <= last {
            return last;
        }
        // The first reading of a new millisecond (on any thread): it is
        // the cached reading from now on.
        self.last_ms
            .fetch_max(reading, Ordering::Relaxed)
            .max(reading)
    }

    #[cold]
    #[inline(never)]
    fn check_wall(&self, elapsed: u64) -> u64 {
        // Several threads may check at once; each check is correct on its own.
        self.next_check_ms.store(
            elapsed.saturating_add(self.check_every_ms),
            Ordering::Relaxed,
        );
        let wall = self.wall.now_ms();
        // The anchor that matches the wall clock, from the time elapsed
        // once it was read, rounded up to a whole millisecond: a reading
        // from it stays at or behind the wall clock as the fraction of a
        // millisecond that was left completes, and whatever delay came
        // between the two reads. Never less than `elapsed` (a counter on
        // another core may read behind the first read).
        let since = self.elapsed(self.source.raw());
        let since_ms = ((since >> 64) as u64)
            .saturating_add(u64::from(since as u64 != 0))
            .max(elapsed);
        let wanted = wall.saturating_sub(since_ms);
        let anchor = self.anchor_ms.load(Ordering::Relaxed);
        if wanted > anchor {
            return self
                .anchor_ms
                .fetch_max(wanted, Ordering::Relaxed)
                .max(wanted)
                .saturating_add(elapsed);
        }
        anchor.saturating_add(elapsed)
    }

    /// Takes a precise reading and returns it with how long until the
    /// clock's next millisecond begins, plus a margin so the next refresh
    /// lands inside it.
    #[cfg_attr(flakeid_loom, allow(dead_code))]
    fn refresh(&self) -> (u64, Duration) {
        let counter = self.source.raw();
        let ms = self.at(counter);
        // The fraction of the current (slow) millisecond already gone.
        let gone = self.elapsed(counter) as u64;
        let left_ns = ((u128::from(u64::MAX - gone) * 1_000_000) >> 64) as u64;
        // A slow millisecond lasts 1024/1023 of a real one.
        (
            ms,
            Duration::from_nanos(left_ns + left_ns / 1023 + REFRESH_MARGIN_NS),
        )
    }
}

/// How far into a millisecond the refresh thread aims to wake: past its
/// start despite rate error and timer rounding.
const REFRESH_MARGIN_NS: u64 = 10_000;

impl<W: Clock> Clock for MonotonicClock<W> {
    /// The precise reading. On a clock with a cached reading it also tells
    /// the refresh thread that the cached reading is in use, raises the
    /// cached reading to it, and wakes the thread if it rests; and it never
    /// returns less than the cached reading.
    ///
    /// Always inlined: out of line, the call and the registers it saves
    /// cost a generator's slow path more than the note itself.
    #[inline(always)]
    fn now_ms(&self) -> u64 {
        let ms = self.shared.now_ms();
        match &self.refresh {
            Some(refresh) => refresh.read(ms),
            None => ms,
        }
    }

    /// The cached reading: one load. `None` for a clock without one
    /// ([`MonotonicClock::thread_free`], [`MonotonicClock::with_wall`]);
    /// `u64::MAX`, which names no tick, while the refresh thread rests.
    #[inline]
    fn recent_ms(&self) -> Option<u64> {
        self.cached
            .as_ref()
            .map(|last_ms| last_ms.load(Ordering::Relaxed))
    }
}

/// Clones share the clock: the same anchor, the same cached reading, and
/// (for [`MonotonicClock::new`]'s) the same refresh thread.
impl<W: Clock> Clone for MonotonicClock<W> {
    fn clone(&self) -> Self {
        MonotonicClock {
            shared: self.shared.clone(),
            cached: self.cached.clone(),
            refresh: self.refresh.clone(),
        }
    }
}

impl<W: Clock + fmt::Debug> fmt::Debug for MonotonicClock<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonotonicClock")
            .field("source", &self.shared.source)
            .field("anchor_ms", &self.shared.anchor_ms.load(Ordering::Relaxed))
            .field("cached", &self.cached.is_some())
            .field("wall", &self.shared.wall)
            .finish_non_exhaustive()
    }
}

/// The process's clock and its refresh thread. A forked child inherits
/// both: the clock works on, the thread does not
/// ([`RefreshThread::in_this_process`]).
#[cfg(not(flakeid_loom))]
struct Process {
    clock: Arc<Anchored<SystemClock>>,
    refresh: RefreshThread,
}

#[cfg(not(flakeid_loom))]
static PROCESS: OnceLock<Process> = OnceLock::new();

#[cfg(not(flakeid_loom))]
fn process() -> &'static Process {
    PROCESS.get_or_init(|| Process {
        clock: Arc::new(Anchored::new(
            Source::checked(),
            SystemClock,
            Duration::from_secs(1),
        )),
        refresh: RefreshThread::new(),
    })
}

#[cfg(not(flakeid_loom))]
impl Process {
    /// A clock with the cached reading: counts one more clock that wants it
    /// fresh, starting or waking the thread, which refreshes it from this
    /// process's clock; `None` if there is no thread.
    fn cached_clock(&'static self) -> Option<MonotonicClock> {
        let thread = self.refresh.in_this_process();
        let refresh = thread.register(self.clock.now_ms(), move || self.clock.refresh())?;
        Some(MonotonicClock {
            shared: self.clock.clone(),
            cached: Some(thread.served().reading().clone()),
            refresh: Some(refresh),
        })
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::clock::served::RESTING;

    const T0: u64 = 1_700_000_000_000;

    fn mocked() -> (MonotonicClock<ManualClock>, Arc<quanta::Mock>, ManualClock) {
        let (source, mock) = quanta::Clock::mock();
        let wall = ManualClock::new(T0);
        let clock = MonotonicClock::from_parts(
            Source::Counter(source),
            wall.clone(),
            Duration::from_secs(1),
            false,
        );
        (clock, mock, wall)
    }

    /// Moves both the monotonic source and the wall clock forward in real time.
    fn pass(mock: &quanta::Mock, wall: &ManualClock, ms: u64) {
        mock.increment(Duration::from_millis(ms));
        wall.advance(Duration::from_millis(ms));
    }

    #[test]
    fn starts_at_the_wall_clock_and_runs_slightly_slow() {
        let (clock, mock, _wall) = mocked();
        assert_eq!(clock.now_ms(), T0);
        mock.increment(Duration::from_millis(999));
        // 999 ms of real time read as 998 ms: 1/1024 slow.
        assert_eq!(clock.now_ms(), T0 + 998);
    }

    #[test]
    fn follows_a_forward_wall_step_within_a_second() {
        let (clock, mock, wall) = mocked();
        pass(&mock, &wall, 10);
        wall.advance(Duration::from_secs(60));
        // Before the next check the step is not seen yet...
        assert!(clock.now_ms() < T0 + 60_000);
        // ...and after it, the clock has jumped forward to the wall clock
        // (to within the millisecond it rounds the time elapsed up by).
        pass(&mock, &wall, 1_000);
        let lag = wall.now_ms() - clock.now_ms();
        assert!(lag <= 1, "lag {lag}");
    }

    #[test]
    fn ignores_a_backward_wall_step_and_closes_the_gap_slowly() {
        let (clock, mock, wall) = mocked();
        pass(&mock, &wall, 5_000);
        let before = clock.now_ms();
        wall.rewind(Duration::from_secs(10));
        let mut last = before;
        // An hour of real time in one-second steps: never backwards.
        for _ in 0..3_600 {
            pass(&mock, &wall, 1_000);
            let now = clock.now_ms();
            assert!(now >= last);
            last = now;
        }
        // The 10 s lead shrank by about 3.5 s (1/1024 of an hour).
        let lead = last - wall.now_ms();
        assert!((6_400..=6_600).contains(&lead), "lead {lead} ms");
    }

    #[test]
    fn stays_within_two_ms_of_a_steady_wall_clock() {
        let (clock, mock, wall) = mocked();
        for step in [1, 7, 250, 999, 1_000, 1_001, 3_000] {
            for _ in 0..200 {
                pass(&mock, &wall, step);
                let lag = wall.now_ms() as i64 - clock.now_ms() as i64;
                assert!((0..=2).contains(&lag), "lag {lag} at step {step}");
            }
        }
    }

    /// Real time, moved by the test: the monotonic source counts it, and
    /// the wall clock shows its whole milliseconds from `T0`. A reading of
    /// the wall clock takes `read_us` of it (the reader is descheduled in
    /// the middle of the read), and shows the time at its end.
    struct RealTime {
        us: AtomicU64,
        mock: Arc<quanta::Mock>,
        read_us: u64,
    }

    impl RealTime {
        fn pass_us(&self, us: u64) {
            self.us.fetch_add(us, Ordering::Relaxed);
            self.mock.increment(Duration::from_micros(us));
        }

        fn wall_ms(&self) -> u64 {
            T0 + self.us.load(Ordering::Relaxed) / 1_000
        }
    }

    impl Clock for RealTime {
        fn now_ms(&self) -> u64 {
            self.pass_us(self.read_us);
            self.wall_ms()
        }
    }

    #[test]
    fn never_ahead_of_a_wall_clock_that_ticks_in_real_time() {
        let (source, mock) = quanta::Clock::mock();
        // Real time starts 0.8 ms into T0; a wall reading takes 0.3 ms, so
        // the one the clock is created with ends in the next millisecond.
        let real = Arc::new(RealTime {
            us: AtomicU64::new(800),
            mock,
            read_us: 300,
        });
        let clock = MonotonicClock::from_parts(
            Source::Counter(source),
            real.clone(),
            Duration::from_secs(1),
            false,
        );
        // Readings every 5 µs for 3 ms from the start, and after each of
        // a series of pauses without a reading (an idle process), each over
        // a second: the reading after one checks the wall clock at another
        // fraction of the clock's millisecond.
        let pauses = if cfg!(miri) { 5 } else { 200 };
        for pause in 0..pauses {
            if pause > 0 {
                real.pass_us(1_000_000 + pause * 37_813 % 1_000_000);
            }
            for _ in 0..600 {
                real.pass_us(5);
                let now = clock.now_ms();
                let lag = real.wall_ms() as i64 - now as i64;
                assert!((0..=3).contains(&lag), "lag {lag} after pause {pause}");
            }
        }
    }

    #[test]
    fn never_goes_backwards_across_threads_and_checks() {
        let (source, mock) = quanta::Clock::mock();
        let wall = ManualClock::new(T0);
        let clock = MonotonicClock::from_parts(
            Source::Counter(source),
            wall.clone(),
            Duration::from_millis(1),
            false,
        );
        // Miri interprets each step; fewer steps still cover every interleaving kind.
        let steps: u64 = if cfg!(miri) { 300 } else { 20_000 };
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..steps {
                    mock.increment(Duration::from_micros(100));
                    if i % 1_000 == 0 {
                        wall.set_ms(T0 + (i % 3_000) * 7);
                    }
                }
            });
            for _ in 0..2 {
                s.spawn(|| {
                    let mut last = 0;
                    for _ in 0..steps {
                        let now = clock.now_ms();
                        assert!(now >= last, "{now} < {last}");
                        last = now;
                    }
                });
            }
        });
    }

    #[test]
    fn real_clock_tracks_system_time() {
        // Under Miri (never the TSC there) this is the `Instant` source.
        let clock = MonotonicClock::new();
        let diff = clock.now_ms().abs_diff(SystemClock.now_ms());
        assert!(diff <= 50, "{diff} ms apart");
        // The cached reading is at most the clock, or, if the refresh thread
        // rested meanwhile (100 ms without a precise read: a slow machine,
        // or Miri), the resting mark that names no tick.
        let recent = clock.recent_ms().unwrap();
        assert!(recent == u64::MAX || recent <= clock.now_ms(), "{recent}");
        // One clock per process: the thread-free one continues from the
        // shared one's highest reading, never before it.
        let free = MonotonicClock::thread_free();
        let shared = clock.now_ms();
        assert!(free.now_ms() >= shared, "one clock per process");
        if cfg!(miri) {
            assert!(
                format!("{clock:?}").contains("source: Instant"),
                "{clock:?}"
            );
        }
    }

    #[test]
    fn a_reading_never_falls_below_the_last_one_returned() {
        let (clock, mock, _wall) = mocked();
        mock.increment(Duration::from_millis(500));
        let before = clock.now_ms();
        // The thread moves to a core whose TSC is 3 ms behind.
        mock.decrement(Duration::from_millis(3));
        assert_eq!(clock.now_ms(), before);
        // A clone keeps what its original returned.
        assert_eq!(clock.clone().now_ms(), before);
        // Time passes on the lagging core: the same millisecond until the
        // reading passes the last one, then onwards.
        mock.increment(Duration::from_millis(2));
        assert_eq!(clock.now_ms(), before);
        mock.increment(Duration::from_millis(3));
        assert!(clock.now_ms() > before);
    }

    #[test]
    fn a_lagging_core_is_no_step_back_for_a_generator() {
        let (clock, mock, _wall) = mocked();
        mock.increment(Duration::from_millis(500));
        let generator = crate::generator::Generator::builder(crate::layout::Layout::twitter())
            .single_node()
            .clock(clock)
            .on_clock_behind(crate::generator::OnClockBehind::Error)
            .build()
            .unwrap();
        let first = generator.try_next_id().unwrap();
        mock.decrement(Duration::from_millis(3));
        assert!(generator.try_next_id().unwrap() > first);
    }

    /// Waits (for up to a minute: the thread only has to be scheduled)
    /// until `clock`'s cached reading is `ms`.
    fn until_cached(clock: &impl Clock, ms: u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while clock.recent_ms() != Some(ms) {
            assert!(
                std::time::Instant::now() < deadline,
                "never refreshed to {ms}: {:?}",
                clock.recent_ms()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_refresh_thread_serves_while_a_clock_wants_it_and_wakes_for_a_new_one() {
        let (source, mock) = quanta::Clock::mock();
        // A process of the test's own, so no other test's readings refresh it.
        let process: &'static Process = Box::leak(Box::new(Process {
            clock: Arc::new(Anchored::new(
                Source::Counter(source),
                SystemClock,
                Duration::from_secs(3_600),
            )),
            refresh: RefreshThread::new(),
        }));
        let clock = || process.cached_clock().expect("a refresh thread");
        let first = clock();
        let start = first.recent_ms().unwrap();
        mock.increment(Duration::from_millis(50));
        // 50 ms read 1/1024 slow, once the thread has refreshed; nobody
        // here takes a precise reading.
        until_cached(&first, start + 49);
        let clone = first.clone();
        drop(first);
        assert_eq!(process.refresh.users(), 1);
        drop(clone);
        assert_eq!(process.refresh.users(), 0);
        // No clock wants it: the thread parks. A new clock wakes it.
        let again = clock();
        mock.increment(Duration::from_millis(50));
        until_cached(&again, start + 99);
        assert!(again.recent_ms().unwrap() <= again.now_ms());
    }

    #[test]
    fn the_refresh_thread_rests_while_nothing_reads_the_precise_clock_and_the_next_call_reads_it() {
        let (source, mock) = quanta::Clock::mock();
        // A process of the test's own, its thread resting after 20 ms.
        let process: &'static Process = Box::leak(Box::new(Process {
            clock: Arc::new(Anchored::new(
                Source::Counter(source),
                SystemClock,
                Duration::from_secs(3_600),
            )),
            refresh: RefreshThread::resting_after(20),
        }));
        let clock = process.cached_clock().expect("a refresh thread");
        // Sonyflake's 10 ms ticks: a cached reading that named the state's
        // tick would continue it on the fast path.
        let layout = crate::layout::Layout::sonyflake();
        let generator = crate::generator::Generator::builder(layout.clone())
            .node_id(1)
            .clock(clock.clone())
            .build()
            .unwrap();
        let tick = |id| layout.decode(id).unwrap().timestamp();
        let first = tick(generator.next_id());
        // 30 ms of the clock without a precise reading: the thread rests, and
        // the cached reading names no tick.
        mock.increment(Duration::from_millis(30));
        until_cached(&clock, RESTING);
        // While it rests, nothing refreshes the cached reading.
        mock.increment(Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(clock.recent_ms(), Some(RESTING));
        // The first call after the pause reads the precise clock: its ID
        // carries the current time, not the tick of the last refresh.
        let now = process.clock.now_ms();
        let after = tick(generator.next_id());
        assert_eq!(after, layout.timestamp_at(now).unwrap());
        assert!(after >= first + 500, "{first} then {after}");
        // A lone call leaves the thread resting (every call reads the
        // precise clock, nothing lags)...
        assert_eq!(clock.recent_ms(), Some(RESTING));
        // ...calls that go on into the next millisecond wake it: that
        // reading is served at once, and the thread refreshes again.
        while process.clock.now_ms() == now {
            mock.increment(Duration::from_micros(100));
        }
        generator.next_id();
        assert_eq!(clock.recent_ms(), Some(now + 1));
        mock.increment(Duration::from_millis(5));
        until_cached(&clock, process.clock.now_ms());
    }

    #[test]
    fn refresh_aims_just_past_the_next_millisecond() {
        let (clock, mock, _wall) = mocked();
        // 0.4 ms into a (slow) millisecond: about 0.6 ms to go, plus the margin.
        mock.increment(Duration::from_micros(400));
        let (_, left) = clock.shared.refresh();
        assert!(
            (Duration::from_micros(600)..Duration::from_micros(620)).contains(&left),
            "{left:?}"
        );
        mock.increment(left);
        assert_eq!(clock.now_ms(), T0 + 1);
    }

    #[test]
    fn a_stalled_refresh_still_fills_every_tick_and_moves_on() {
        let (source, mock) = quanta::Clock::mock();
        let clock = MonotonicClock::from_parts(
            Source::Counter(source),
            ManualClock::new(T0),
            Duration::from_secs(3_600),
            true,
        );
        // Twitter's layout; under Miri, which takes minutes to fill 4,096
        // IDs a tick, the same with a 6-bit sequence.
        let layout: crate::layout::Layout = if cfg!(miri) {
            "epoch=1288834974657 unit=1 fields=timestamp:41,node:10,sequence:6"
                .parse()
                .unwrap()
        } else {
            crate::layout::Layout::twitter()
        };
        let generator = crate::generator::Generator::builder(layout.clone())
            .single_node()
            .clock(clock.clone())
            .build()
            .unwrap();
        let tick = |id| layout.decode(id).unwrap().timestamp();
        let first = tick(generator.next_id());
        // Nothing refreshes the cached reading: IDs stay in its tick...
        mock.increment(Duration::from_millis(10));
        assert_eq!(tick(generator.next_id()), first);
        // ...until the tick's sequence runs out; the generator then reads
        // the precise clock, enters the current tick, and refreshes the
        // cached reading itself. Each tick holds its whole sequence.
        // The last tick collected is still filling and is not checked.
        let ticks = if cfg!(miri) { 3 } else { 6 };
        let mut per_tick: Vec<(u64, u64)> = vec![(first, 2)];
        while per_tick.len() < ticks {
            match generator.poll_id() {
                Ok(id) => match per_tick.last_mut() {
                    Some((t, n)) if *t == tick(id) => *n += 1,
                    _ => {
                        assert!(tick(id) > per_tick.last().unwrap().0);
                        assert_eq!(clock.recent_ms(), Some(clock.now_ms()));
                        per_tick.push((tick(id), 1));
                    }
                },
                Err(crate::error::GenerateError::SequenceExhausted { .. }) => {
                    mock.increment(Duration::from_micros(700));
                }
                Err(e) => panic!("{e}"),
            }
        }
        per_tick.pop(); // the last tick is still filling
        let per_full_tick = 1 << layout.sequence_bits();
        assert!(
            per_tick.iter().all(|&(_, n)| n == per_full_tick),
            "{per_tick:?}"
        );
        // The clock's tick after the stall: 10 ms read 1/1024 slow.
        assert_eq!(per_tick[1].0, first + 9);
    }
}
