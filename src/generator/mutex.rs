//! The mutex twin: the same state and transition behind `std::sync::Mutex`.

use std::fmt;

use crossbeam_utils::CachePadded;

use super::plan::{Gate, Plan, Stall, Step};
use super::stats::{Counters, Stats};
use super::wait::{self, Mode, Reserve};
use super::{Builder, IdBatch, IdGenerator, Parts};
use crate::clock::{Clock, MonotonicClock};
use crate::error::GenerateError;
use crate::fence::Keeper;
use crate::id::Id;
use crate::layout::Layout;
use crate::persist::Persister;
use crate::primitive::{Mutex, MutexGuard, lock};

/// A generator with the same semantics as [`Generator`](crate::Generator),
/// behind a mutex: the baseline the lock-free generator is measured against,
/// and the oracle it is tested against.
///
/// It reads the clock while holding the lock, so every reading is taken after
/// the state it is compared with. Build it with
/// [`Builder::build_mutex`](crate::Builder::build_mutex); generate through the
/// [`IdGenerator`] trait, which `Generator` implements too.
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
    /// The same state word as `Generator`'s.
    state: CachePadded<Mutex<u64>>,
    plan: Plan,
    clock: C,
    counters: Option<Box<Counters>>,
    persister: Option<Persister>,
    keeper: Option<Box<dyn Keeper>>,
}

impl MutexGenerator {
    /// Starts configuring a generator for `layout`; finish with
    /// [`Builder::build_mutex`].
    pub fn builder(layout: Layout) -> Builder {
        Builder::new(layout)
    }
}

impl<C: Clock> MutexGenerator<C> {
    pub(crate) fn from_parts(parts: Parts<C>) -> Self {
        MutexGenerator {
            state: CachePadded::new(Mutex::new(parts.state)),
            plan: parts.plan,
            clock: parts.clock,
            counters: parts.counters.then(Box::default),
            persister: parts.persister,
            keeper: parts.keeper,
        }
    }

    /// The layout this generator makes IDs for.
    pub fn layout(&self) -> &Layout {
        &self.plan.layout
    }

    /// The node id in the IDs: the configured one, or the one a lease holds now.
    pub fn node_id(&self) -> u64 {
        // The state carries the node id, which a lease may change; before
        // the first ID under a new lease, the lease's grant has it.
        let id = match self.plan.leased_node_bits() {
            Some(bits) => Id::from_u64(bits),
            None => IdGenerator::last_id(self),
        };
        self.plan
            .layout
            .decode(id)
            .map_or(self.plan.node_id, |d| d.node_id())
    }

    /// The clock the generator reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// As [`Generator::last_id`](crate::Generator::last_id).
    pub fn last_id(&self) -> Id {
        IdGenerator::last_id(self)
    }

    /// The counters, if the builder turned them on.
    pub fn stats(&self) -> Option<Stats> {
        IdGenerator::stats(self)
    }
}

impl<C: Clock> IdGenerator for MutexGenerator<C> {
    fn layout(&self) -> &Layout {
        &self.plan.layout
    }

    fn stats(&self) -> Option<Stats> {
        self.counters.as_deref().map(Counters::snapshot)
    }

    fn last_id(&self) -> Id {
        Id::from_u64(*lock(&self.state))
    }

    #[inline]
    fn next_id(&self) -> Id {
        wait::next_id(self)
    }

    #[inline]
    fn try_next_id(&self) -> Result<Id, GenerateError> {
        wait::try_next_id(self)
    }

    #[inline]
    fn try_next_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        wait::reserve_batch(self, n, Mode::Report)
    }

    #[inline]
    fn next_ids(&self, n: usize) -> IdBatch {
        match wait::reserve_batch(self, n, Mode::Wait) {
            Ok(batch) => batch,
            Err(e) => panic!("flakeid: {e}"),
        }
    }

    #[inline]
    fn poll_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        wait::poll_batch(self, n)
    }
}

impl<C: Clock> Reserve for MutexGenerator<C> {
    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn counters(&self) -> Option<&Counters> {
        self.counters.as_deref()
    }

    /// The same short path as the lock-free generator's
    /// ([`Plan::advance_in_tick`]), under the lock, so the two differ only
    /// in how they apply a step.
    #[inline(always)]
    fn poll(&self, n: u64) -> Result<Step, Stall> {
        let mut state = lock(&self.state);
        let now = self.clock.now_ms();
        if !self.plan.is_leased()
            && let Some(step) = self.plan.advance_in_tick(*state, now, n)
        {
            *state = step.next;
            drop(state);
            self.issued(&step);
            return Ok(step);
        }
        self.advance_locked(state, now, n)
    }
}

impl<C: Clock> MutexGenerator<C> {
    /// Everything but the short path: the lease gate, new ticks, policies.
    #[inline(never)]
    fn advance_locked(
        &self,
        mut state: MutexGuard<'_, u64>,
        mut now: u64,
        n: u64,
    ) -> Result<Step, Stall> {
        loop {
            let ticket = match self.plan.gate(*state)? {
                Gate::Pass(ticket) => ticket,
                Gate::Switch(switched) => {
                    // As in the lock-free generator: issue on a reading
                    // taken after the switch.
                    *state = switched;
                    now = self.clock.now_ms();
                    continue;
                }
            };
            let step = self.plan.advance(*state, now, n)?;
            *state = step.next;
            // As in the lock-free generator: IDs made under a grant that
            // lapsed or was replaced meanwhile are dropped.
            if self.plan.confirm(ticket) {
                drop(state);
                self.issued(&step);
                return Ok(step);
            }
            self.plan.installed(&step);
            now = self.clock.now_ms();
        }
    }
}

/// As for [`Generator`](crate::Generator): saves the exact last timestamp.
impl<C> Drop for MutexGenerator<C> {
    fn drop(&mut self) {
        let state = *lock(&self.state);
        super::finish(&self.plan, state, self.persister.take(), self.keeper.take());
    }
}

impl<C: Clock + fmt::Debug> fmt::Debug for MutexGenerator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexGenerator")
            .field("layout", &self.plan.layout)
            .field("node_id", &self.plan.node_id)
            .field("on_exhausted", &self.plan.on_exhausted)
            .field("on_clock_behind", &self.plan.on_behind)
            .field("last_id", &self.last_id())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}
