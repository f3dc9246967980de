//! [`Source`], where a monotonic clock reads elapsed time, and the check
//! that decides between the TSC and `Instant` once per process.

use std::fmt;
#[cfg(flakeid_loom)]
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[cfg(flakeid_loom)]
use crate::primitive::{AtomicU64, Ordering};

/// Where a [`MonotonicClock`](super::MonotonicClock) reads elapsed time.
///
/// A TSC that fails the check is replaced, not refused: `Instant` is always
/// right, only slower, and refusing would make the default clock (and so
/// every generator built with it) fail on a machine whose only fault was a
/// busy moment during the check.
#[derive(Clone)]
pub(crate) enum Source {
    /// quanta's clock: the TSC where quanta supports it and the check passed
    /// (a mocked one in tests).
    Counter(quanta::Clock),
    /// Nanoseconds since `origin`, from `std::time::Instant`; `refused` is
    /// the check's verdict on the TSC, if one ran.
    Instant {
        origin: Instant,
        refused: Option<Verdict>,
    },
    /// Nanoseconds a loom model sets: a loom atomic, so loom orders the
    /// reads against the model's moves (a lease fence's deadline).
    #[cfg(flakeid_loom)]
    Model(Arc<AtomicU64>),
}

/// The TSC's checked rate error bound: 0.03%.
const MAX_RATE_ERROR_PPM: u64 = 300;
/// How long the check measures both clocks.
const CHECK_SPAN: Duration = Duration::from_millis(4);
/// Counter reads per end of the check; the one `Instant` brackets tightest
/// is used.
const BRACKET_TRIES: usize = 16;

/// The outcome of comparing the counter's rate with `Instant`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Within [`MAX_RATE_ERROR_PPM`], uncertainty included.
    Agrees,
    /// Over `reference_ns` of `Instant` (± `uncertainty_ns`), the counter
    /// measured `counter_ns`.
    Disagrees {
        counter_ns: u64,
        reference_ns: u64,
        uncertainty_ns: u64,
    },
}

/// One counter read between two reference reads (nanoseconds).
#[derive(Debug, Clone, Copy)]
struct Bracket {
    before: u64,
    raw: u64,
    after: u64,
}

impl Bracket {
    fn width(&self) -> u64 {
        self.after.saturating_sub(self.before)
    }

    /// Twice the reference time at the counter read, to within the width.
    fn doubled_mid(&self) -> u64 {
        self.before.saturating_add(self.after)
    }
}

/// The tightest of [`BRACKET_TRIES`] brackets.
fn bracket(raw: &mut impl FnMut() -> u64, reference_ns: &mut impl FnMut() -> u64) -> Bracket {
    let mut one = || {
        let before = reference_ns();
        let raw = raw();
        let after = reference_ns();
        Bracket { before, raw, after }
    };
    let mut best = one();
    for _ in 1..BRACKET_TRIES {
        let b = one();
        if b.width() < best.width() {
            best = b;
        }
    }
    best
}

/// Compares the counter's rate, scaled by `counter`, with the reference's
/// across `wait`. `raw` reads the counter, `reference_ns` the reference, so a
/// test can script both.
fn check_rate(
    counter: &quanta::Clock,
    mut raw: impl FnMut() -> u64,
    mut reference_ns: impl FnMut() -> u64,
    wait: impl FnOnce(),
) -> Verdict {
    let start = bracket(&mut raw, &mut reference_ns);
    wait();
    let end = bracket(&mut raw, &mut reference_ns);
    // Each midpoint is within half its bracket of the counter read.
    let reference_ns = end.doubled_mid().saturating_sub(start.doubled_mid()) / 2;
    let uncertainty_ns = (start.width() + end.width()).div_ceil(2);
    // A counter behind its start (another core's TSC) measures 0.
    let counter_ns = counter.delta_as_nanos(start.raw, end.raw);
    let worst = u128::from(counter_ns.abs_diff(reference_ns)) + u128::from(uncertainty_ns);
    if reference_ns > 0
        && worst * 1_000_000 <= u128::from(reference_ns) * u128::from(MAX_RATE_ERROR_PPM)
    {
        Verdict::Agrees
    } else {
        Verdict::Disagrees {
            counter_ns,
            reference_ns,
            uncertainty_ns,
        }
    }
}

/// quanta's clock and the verdict on it, once per process.
static CHECKED: OnceLock<(quanta::Clock, Verdict)> = OnceLock::new();

impl Source {
    fn instant(refused: Option<Verdict>) -> Source {
        Source::Instant {
            origin: Instant::now(),
            refused,
        }
    }

    /// The TSC if it passes the check, else `Instant`.
    pub(crate) fn checked() -> Source {
        // Miri cannot read the TSC and loom must not calibrate it.
        if cfg!(any(miri, flakeid_loom)) {
            return Source::instant(None);
        }
        let (counter, verdict) = CHECKED.get_or_init(|| {
            let counter = quanta::Clock::new();
            let origin = Instant::now();
            let verdict = check_rate(
                &counter,
                || counter.raw(),
                || nanos_since(origin),
                || std::thread::sleep(CHECK_SPAN),
            );
            (counter, verdict)
        });
        Source::chosen(counter, *verdict)
    }

    fn chosen(counter: &quanta::Clock, verdict: Verdict) -> Source {
        match verdict {
            Verdict::Agrees => Source::Counter(counter.clone()),
            Verdict::Disagrees { .. } => Source::instant(Some(verdict)),
        }
    }

    #[inline]
    pub(crate) fn raw(&self) -> u64 {
        match self {
            Source::Counter(counter) => counter.raw(),
            Source::Instant { origin, .. } => nanos_since(*origin),
            #[cfg(flakeid_loom)]
            Source::Model(ns) => ns.load(Ordering::SeqCst),
        }
    }

    pub(crate) fn delta_as_nanos(&self, start: u64, end: u64) -> u64 {
        match self {
            Source::Counter(counter) => counter.delta_as_nanos(start, end),
            Source::Instant { .. } => end.saturating_sub(start),
            #[cfg(flakeid_loom)]
            Source::Model(_) => end.saturating_sub(start),
        }
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Counter(_) => f.write_str("quanta"),
            Source::Instant {
                refused:
                    Some(Verdict::Disagrees {
                        counter_ns,
                        reference_ns,
                        uncertainty_ns,
                    }),
                ..
            } => write!(
                f,
                "Instant (the TSC measured {counter_ns} ns over {reference_ns} ± {uncertainty_ns} ns of Instant)"
            ),
            Source::Instant { .. } => f.write_str("Instant"),
            #[cfg(flakeid_loom)]
            Source::Model(_) => f.write_str("a loom model's clock"),
        }
    }
}

#[inline]
fn nanos_since(origin: Instant) -> u64 {
    u64::try_from(Instant::now().saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    /// The rate check against a scripted counter and reference: true time
    /// advances `step_ns` per reference read and 4 ms across the wait; the
    /// counter runs `ppm` fast and jumps by `jump_ns` across the wait.
    fn scripted_check(ppm: i64, step_ns: u64, jump_ns: i64) -> Verdict {
        let (counter, _mock) = quanta::Clock::mock(); // scales 1 tick to 1 ns
        let now = std::cell::Cell::new(1_000_000_000u64);
        let jump = std::cell::Cell::new(0i64);
        let raw = || {
            let t = now.get() as i64;
            (t + t * ppm / 1_000_000 + jump.get()) as u64
        };
        let reference = || {
            now.set(now.get() + step_ns);
            now.get()
        };
        let wait = || {
            now.set(now.get() + CHECK_SPAN.as_nanos() as u64);
            jump.set(jump_ns);
        };
        check_rate(&counter, raw, reference, wait)
    }

    #[test]
    fn a_tsc_whose_rate_is_off_by_more_than_the_bound_is_replaced_by_instant() {
        let counter = quanta::Clock::mock().0;
        let source = |verdict| format!("{:?}", Source::chosen(&counter, verdict));
        for ppm in [0, 150, -150, 280, -280] {
            assert_eq!(scripted_check(ppm, 20, 0), Verdict::Agrees, "{ppm} ppm");
        }
        assert_eq!(source(Verdict::Agrees), "quanta");
        for ppm in [320, -320, 1_000, -1_000, 1_000_000] {
            let verdict = scripted_check(ppm, 20, 0);
            assert!(
                matches!(verdict, Verdict::Disagrees { .. }),
                "{ppm} ppm: {verdict:?}"
            );
            assert!(source(verdict).starts_with("Instant (the TSC measured"));
        }
        let Verdict::Disagrees {
            counter_ns,
            reference_ns,
            uncertainty_ns,
        } = scripted_check(1_000, 20, 0)
        else {
            panic!("1000 ppm agreed");
        };
        // About 4 ms (the wait and the reads), 0.1% more by the counter.
        assert!((4_000_000..4_001_000).contains(&reference_ns));
        assert_eq!(counter_ns - reference_ns, reference_ns / 1_000);
        assert_eq!(uncertainty_ns, 20);
        // Moved mid-check to a core whose TSC is behind: it measures no time.
        assert!(matches!(
            scripted_check(0, 20, -5_000_000),
            Verdict::Disagrees { counter_ns: 0, .. }
        ));
        // A right rate that cannot be shown within the bound (every reference
        // read 2 µs apart: ±500 ppm over 4 ms) is not trusted either.
        assert!(matches!(
            scripted_check(0, 2_000, 0),
            Verdict::Disagrees {
                uncertainty_ns: 2_000,
                ..
            }
        ));
    }
}
