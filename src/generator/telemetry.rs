//! What a generator tells the outside besides IDs: the counters a service
//! can export ([`Stats`]) and the event hook, held together as [`Telemetry`].
//! Both are off unless the builder turns them on, so by default they add no
//! shared write to the hot path.

use crossbeam_utils::CachePadded;

use super::plan::{Step, StepKind};
use crate::events::Events;
use crate::primitive::{AtomicU64, Ordering};

/// A snapshot of a generator's counters, from
/// [`Generator::stats`](crate::Generator::stats).
///
/// ```
/// use flakeid::{Generator, Layout};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter()).node_id(1).counters(true).build()?;
/// generator.next_id();
/// let _batch: Vec<_> = generator.next_ids(10).collect();
/// let stats = generator.stats().expect("counters are on");
/// assert_eq!(stats.issued, 11);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// IDs handed out (a batch counts each ID).
    pub issued: u64,
    /// Calls that had to wait (for the next tick, or for the clock to catch up).
    pub waits: u64,
    /// Ticks entered ahead of the clock under `OnExhausted::Borrow`.
    pub borrowed_ticks: u64,
    /// Calls that found the clock behind the last timestamp.
    pub clock_behind: u64,
    /// Moves to a new clock id (`NextClock` policies).
    pub clock_id_bumps: u64,
    /// Compare-and-swaps of the lock-free generator that lost a race with
    /// another thread's (and were retried): a measure of contention. Where
    /// the hardware's compare-and-swap can fail spuriously (LL/SC machines,
    /// or Miri), those failures count too. Always 0 for the mutex twin, whose
    /// threads wait for the lock instead.
    pub lost_races: u64,
}

/// The live counters and the event hook: what a step or a stall is told
/// to. A generator has them only if counting is on or a hook is set, so
/// without either its hot path tests one `None`. `issued` is on the hot path,
/// so it has a cache line of its own; the rest change only on slow paths.
#[derive(Debug, Default)]
pub(crate) struct Telemetry {
    /// Whether the counts are kept ([`Builder::counters`](crate::Builder::counters)).
    counting: bool,
    pub(crate) events: Events,
    issued: CachePadded<AtomicU64>,
    waits: AtomicU64,
    borrowed_ticks: AtomicU64,
    clock_behind: AtomicU64,
    clock_id_bumps: AtomicU64,
    lost_races: AtomicU64,
}

impl Telemetry {
    /// `None` when there is nothing to count or tell.
    pub(crate) fn new(counting: bool, events: Events) -> Option<Box<Telemetry>> {
        (counting || events.is_on()).then(|| {
            Box::new(Telemetry {
                counting,
                events,
                ..Telemetry::default()
            })
        })
    }

    /// The counts, if counting is on.
    pub(crate) fn stats(&self) -> Option<Stats> {
        self.counting.then(|| self.snapshot())
    }

    #[inline]
    pub(crate) fn record(&self, step: &Step) {
        if !self.counting {
            return;
        }
        self.issued.fetch_add(step.count, Ordering::Relaxed);
        match step.kind {
            StepKind::Plain => {}
            StepKind::Borrowed => {
                self.borrowed_ticks.fetch_add(1, Ordering::Relaxed);
            }
            StepKind::Behind => {
                self.clock_behind.fetch_add(1, Ordering::Relaxed);
            }
            StepKind::Bumped { behind } => {
                if behind {
                    self.clock_behind.fetch_add(1, Ordering::Relaxed);
                }
                self.clock_id_bumps.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn record_wait(&self) {
        if self.counting {
            self.waits.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn record_lost_race(&self) {
        if self.counting {
            self.lost_races.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A call found the clock `behind_ms` behind and stalled.
    pub(crate) fn record_behind(&self, behind_ms: u64) {
        if self.counting {
            self.clock_behind.fetch_add(1, Ordering::Relaxed);
        }
        self.events.emit(crate::events::Event::ClockBehind {
            behind: std::time::Duration::from_millis(behind_ms),
        });
    }

    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            issued: self.issued.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            borrowed_ticks: self.borrowed_ticks.load(Ordering::Relaxed),
            clock_behind: self.clock_behind.load(Ordering::Relaxed),
            clock_id_bumps: self.clock_id_bumps.load(Ordering::Relaxed),
            lost_races: self.lost_races.load(Ordering::Relaxed),
        }
    }
}
