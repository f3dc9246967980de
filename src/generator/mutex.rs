//! The mutex twin: the same state and transition behind `std::sync::Mutex`.

use super::core::{Core, LockedCell};
use super::stats::Stats;
use super::{Builder, Components};
use crate::clock::{Clock, MonotonicClock};
use crate::id::Id;
use crate::layout::Layout;

/// A generator with the same semantics as [`Generator`](crate::Generator),
/// behind a mutex: the baseline the lock-free generator is measured against,
/// and the oracle it is tested against.
///
/// It runs the same attempt as the lock-free generator (the same clock
/// readings at the same points, the same loop), with the state word under a
/// lock instead of in an atomic: the one difference is that its install
/// never loses a race. Build it with
/// [`Builder::build_mutex`](crate::Builder::build_mutex); generate through the
/// [`IdGenerator`](crate::IdGenerator) trait, which `Generator` implements too.
///
/// ```
/// use flakeid::{Generator, IdGenerator, Layout, ManualClock};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let clock = ManualClock::new(1_700_000_000_000);
/// let lock_free = Generator::builder(Layout::twitter()).clock(clock.clone()).build()?;
/// let locked = Generator::builder(Layout::twitter()).clock(clock.clone()).build_mutex()?;
/// for _ in 0..100 {
///     assert_eq!(lock_free.try_next_id(), locked.try_next_id());
/// }
/// # Ok(())
/// # }
/// ```
pub struct MutexGenerator<C = MonotonicClock> {
    /// The same state word as `Generator`'s, under a mutex.
    core: Core<LockedCell, C>,
}

impl MutexGenerator {
    /// Starts configuring a generator for `layout`; finish with
    /// [`Builder::build_mutex`].
    pub fn builder(layout: Layout) -> Builder {
        Builder::new(layout)
    }
}

impl<C: Clock> MutexGenerator<C> {
    pub(crate) fn from_parts(parts: Components<C>) -> Self {
        MutexGenerator {
            core: Core::new(parts),
        }
    }

    /// The layout this generator makes IDs for.
    pub fn layout(&self) -> &Layout {
        self.core.layout()
    }

    /// The node id in the IDs: the configured one, or the one a lease holds now.
    pub fn node_id(&self) -> u64 {
        self.core.node_id()
    }

    /// The clock the generator reads.
    pub fn clock(&self) -> &C {
        self.core.clock()
    }

    /// As [`Generator::last_id`](crate::Generator::last_id).
    pub fn last_id(&self) -> Id {
        self.core.last_id()
    }

    /// The counters, if the builder turned them on.
    pub fn stats(&self) -> Option<Stats> {
        self.core.stats()
    }
}

super::shell!(MutexGenerator);
