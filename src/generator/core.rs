//! What the two generators share: everything but how the state word is held.
//!
//! [`Generator`](crate::Generator) keeps its state word in an `AtomicU64` and
//! installs a successor by compare-and-swap;
//! [`MutexGenerator`](crate::MutexGenerator) keeps it under a mutex and
//! installs by assignment. Both are a [`Core`] over a [`StateCell`], so they
//! run the same attempt through the same loop, read the clock at the same
//! points, and differ only in [`Held::install`], which for the mutex never
//! loses a race.

use std::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use super::Components;
use super::health::Health;
use super::plan::{Event as StepEvent, Gate, Plan, Stall, Step};
use super::stats::{Counters, Stats};
use super::wait::Reserve;
use crate::clock::Clock;
use crate::events::Event;
use crate::fence::Keeper;
use crate::id::Id;
use crate::layout::Layout;
use crate::persist::Persister;
use crate::primitive::{AtomicU64, Backoff, Mutex, MutexGuard, Ordering, lock};

/// Where a generator keeps its state word, and how an attempt replaces it.
pub(crate) trait StateCell: Send + Sync {
    /// The word as one attempt sees it: a loaded value, or the value under a
    /// held lock.
    type Held<'a>: Held
    where
        Self: 'a;

    fn new(state: u64) -> Self;

    /// Starts an attempt: loads the word (acquiring the clock reading its
    /// tick came from), or locks it.
    fn hold(&self) -> Self::Held<'_>;

    /// The word now, for reports (`last_id`, the final save on drop).
    fn get(&self) -> u64;
}

/// One attempt's view of the state word.
pub(crate) trait Held {
    /// The word the attempt works from.
    fn cur(&self) -> u64;

    /// Replaces [`cur`](Held::cur) with `next`. `Err(actual)` when the word
    /// had moved on to `actual` (a lost race, or a spurious failure with
    /// `actual == cur`); `cur` is then `actual`. Only the atomic cell fails.
    fn install(&mut self, next: u64) -> Result<(), u64>;
}

/// The lock-free generator's cell: one `AtomicU64` on a cache line of its
/// own, so neighbours do not share its contention.
pub(crate) struct AtomicCell(CachePadded<AtomicU64>);

/// A value loaded from an [`AtomicCell`], to compare-and-swap from.
pub(crate) struct Loaded<'a> {
    word: &'a AtomicU64,
    cur: u64,
}

impl StateCell for AtomicCell {
    type Held<'a> = Loaded<'a>;

    fn new(state: u64) -> Self {
        AtomicCell(CachePadded::new(AtomicU64::new(state)))
    }

    #[inline(always)]
    fn hold(&self) -> Loaded<'_> {
        Loaded {
            word: &self.0,
            cur: self.0.load(Ordering::Acquire),
        }
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Held for Loaded<'_> {
    #[inline(always)]
    fn cur(&self) -> u64 {
        self.cur
    }

    /// Uniqueness and order need no more than Relaxed: IDs derive from this
    /// word alone, and the single modification order of one atomic makes
    /// every successful CAS start from the value the previous one stored.
    /// The clock needs more. A successful CAS releases the clock reading its
    /// tick came from, and every load of the state acquires, so a thread that
    /// sees another's new tick then reads the clock at least as far along.
    /// With Relaxed, a weakly ordered CPU may read the clock before the
    /// state, find the clock behind a tick it never moved back from, and
    /// report `ClockBehind` or bump the clock id for nothing (the loom model
    /// `a_clock_that_only_moves_forward_is_never_reported_behind` finds this).
    /// On x86 these orderings compile to the same instructions as Relaxed.
    #[inline(always)]
    fn install(&mut self, next: u64) -> Result<(), u64> {
        match self
            .word
            .compare_exchange_weak(self.cur, next, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => {
                self.cur = next;
                Ok(())
            }
            Err(actual) => {
                self.cur = actual;
                Err(actual)
            }
        }
    }
}

/// The mutex twin's cell: the same word behind a mutex.
pub(crate) struct LockedCell(CachePadded<Mutex<u64>>);

impl StateCell for LockedCell {
    type Held<'a> = MutexGuard<'a, u64>;

    fn new(state: u64) -> Self {
        LockedCell(CachePadded::new(Mutex::new(state)))
    }

    #[inline(always)]
    fn hold(&self) -> MutexGuard<'_, u64> {
        lock(&self.0)
    }

    fn get(&self) -> u64 {
        *lock(&self.0)
    }
}

impl Held for MutexGuard<'_, u64> {
    #[inline(always)]
    fn cur(&self) -> u64 {
        **self
    }

    #[inline(always)]
    fn install(&mut self, next: u64) -> Result<(), u64> {
        **self = next;
        Ok(())
    }
}

/// A generator over the state cell `S` and the clock `C`.
pub(crate) struct Core<S: StateCell, C> {
    /// The last ID handed out: the layout's fields in their ID positions.
    /// For Twitter's layout:
    ///
    /// ```text
    ///  63  62                        22 21      17 16      12 11          0
    /// +---+----------------------------+----------+----------+-------------+
    /// | 0 | timestamp (ms since epoch) | datactr  | worker   | sequence    |
    /// +---+----------------------------+----------+----------+-------------+
    /// ```
    ///
    /// An attempt installs its successor: the next sequence value in the
    /// same tick, or the first of a new tick (the transitions: `plan.rs`).
    /// Every installed successor is strictly larger (except after
    /// `OnClockBehind::NextClock`, which moves the timestamp back with a
    /// fresh clock id, and a lease's rotation), so the IDs come out unique
    /// and in the order of the installs. The node id lives in the word too,
    /// so a lease can switch it with one install, which issues nothing and
    /// leaves the new node id's tick used up.
    state: S,
    plan: Plan,
    clock: C,
    counters: Option<Box<Counters>>,
    persister: Option<Persister>,
    keeper: Option<Box<dyn Keeper>>,
}

/// What an attempt carries through the loop: the word it holds and the clock
/// reading it computes from.
struct Attempt<'a, S: StateCell + 'a> {
    held: S::Held<'a>,
    /// The clock reading the next step is computed from.
    now: u64,
    /// Whether `now` was read after the word in `held` was. A step computed
    /// from an older reading is still valid (it can only continue a tick the
    /// reading named, or wait), but a stall is reported only on a fresh one.
    fresh: bool,
    backoff: Backoff,
}

impl<'a, S: StateCell + 'a> Attempt<'a, S> {
    fn new(held: S::Held<'a>, now: u64, fresh: bool) -> Self {
        Attempt {
            held,
            now,
            fresh,
            backoff: Backoff::new(),
        }
    }

    /// Reads the clock again, after the word now held.
    fn read(&mut self, clock: &impl Clock) {
        self.now = clock.now_ms();
        self.fresh = true;
    }
}

impl<S: StateCell, C> Core<S, C> {
    pub(crate) fn new(parts: Components<C>) -> Self {
        Core {
            state: S::new(parts.state),
            plan: parts.plan,
            clock: parts.clock,
            counters: Counters::new(parts.counters, parts.events),
            persister: parts.persister,
            keeper: parts.keeper,
        }
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.plan.layout
    }

    pub(crate) fn clock(&self) -> &C {
        &self.clock
    }

    pub(crate) fn last_id(&self) -> Id {
        Id::from_u64(self.state.get())
    }

    pub(crate) fn stats(&self) -> Option<Stats> {
        self.counters.as_deref().and_then(Counters::stats)
    }

    /// The node id in the IDs: the configured one, or the one a lease holds now.
    pub(crate) fn node_id(&self) -> u64 {
        // The state carries the node id, which a lease may change; before
        // the first ID under a new lease, the lease's grant has it.
        let id = match self.plan.leased_node_bits() {
            Some(bits) => Id::from_u64(bits),
            None => self.last_id(),
        };
        self.plan
            .layout
            .decode(id)
            .map_or(self.plan.node_id, |d| d.node_id())
    }

    /// What the generator can do now; see [`Health`].
    pub(crate) fn health(&self) -> Health
    where
        C: Clock,
    {
        let last_ms = self.plan.layout.last_ms();
        if self.clock.now_ms() > last_ms {
            return Health::Expired { last_ms };
        }
        #[cfg(any(feature = "etcd", feature = "redis"))]
        if let Some(closed_for) = self.plan.fence().and_then(crate::fence::Fence::closed_for) {
            return Health::Fenced { closed_for };
        }
        match self.plan.reservation().and_then(|r| r.failure()) {
            Some(error) => Health::StorageFailing(error),
            None => Health::Issuing,
        }
    }

    #[cfg(any(feature = "etcd", feature = "redis"))]
    pub(crate) fn lease_skipped_node_ids(&self) -> u64 {
        self.plan.fence().map_or(0, crate::fence::Fence::skipped)
    }

    pub(crate) fn fmt_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result
    where
        C: fmt::Debug,
    {
        f.debug_struct(name)
            .field("layout", &self.plan.layout)
            .field("node_id", &self.plan.node_id)
            .field("on_exhausted", &self.plan.on_exhausted)
            .field("on_clock_behind", &self.plan.on_behind)
            .field("last_id", &self.last_id())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl<C> Core<AtomicCell, C> {
    /// The state word itself, for the deliberately broken loom variants.
    #[cfg(flakeid_loom)]
    pub(crate) fn word(&self) -> &AtomicU64 {
        &self.state.0
    }

    #[cfg(flakeid_loom)]
    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// `poll` that, where the short path does not apply, decides on the
    /// cached reading instead of reading the precise clock: a cached reading
    /// older than the state then passes for the clock stepping back.
    #[cfg(flakeid_loom)]
    pub(crate) fn broken_poll_on_cached(&self, n: u64) -> Result<Step, Stall>
    where
        C: Clock,
    {
        let recent = self.clock.recent_ms().expect("a cached reading");
        let held = self.state.hold();
        self.settle(Attempt::new(held, recent, true), n)
    }
}

/// Why the fast path issued nothing. Small enough to pass in registers, so
/// the fast path hands over to [`poll_rest`](Reserve::poll_rest) with a
/// jump; the rest of the attempt holds the word again.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Miss {
    /// The cached reading does not name the state's tick, the tick has no
    /// room left, the clock has no cached reading, or the node id is leased
    /// (every attempt passes the fence).
    NotInTick,
    /// The install lost a race, on the cached reading `recent`.
    Lost { recent: u64 },
}

impl<S: StateCell, C: Clock> Reserve for Core<S, C> {
    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn counters(&self) -> Option<&Counters> {
        self.counters.as_deref()
    }

    /// The common case under load, one clock load and one install: the
    /// clock's cached reading names the state's tick, which has room, and no
    /// lease is involved ([`Plan::advance_in_tick`]). Anything else is a
    /// [`Miss`] for [`poll_rest`](Reserve::poll_rest), out of line, so this
    /// stays a few instructions long.
    ///
    /// It reads [`Clock::recent_ms`], the cheap reading (the default
    /// clock's is one load of a value a thread refreshes), before holding
    /// the word, so that the install follows the load at once: the shorter
    /// that window, the fewer compare-and-swaps lose. It only uses a reading
    /// equal to the state's tick, to continue that tick, which is valid
    /// whenever the reading was taken. Every other decision (a new tick, a
    /// used-up sequence, a clock behind, the policies, a lease) is made on
    /// [`Clock::now_ms`], the precise reading, taken after the word is held:
    /// a reading older than the state can pass for the clock stepping back,
    /// or, once `OnClockBehind::NextClock` or a lease's rotation has moved
    /// the state back in time, for the clock being past it (entering that
    /// tick would put the timestamp ahead of the clock and undo the step;
    /// the loom models of `NextClock` and of the cached reading find this).
    ///
    /// Always inlined: a call and a returned `Step` in memory cost as much as
    /// the rest of the fast path (measured with callgrind, `benches/README.md`).
    #[inline(always)]
    fn poll_fast(&self, n: u64) -> Result<Step, Miss> {
        let Some(recent) = self.clock.recent_ms() else {
            return Err(Miss::NotInTick);
        };
        let mut held = self.state.hold();
        let step = self.in_tick(&mut held, recent, n)?;
        drop(held);
        self.issued(&step);
        Ok(step)
    }

    /// The rest of an attempt the fast path missed, on the word held again:
    /// the short path once more on a precise reading (every call of a clock
    /// without a cached reading comes here), then the loop, on that reading,
    /// or, after a lost race to a winner that stayed in the reading's tick,
    /// on the reading the race was lost with.
    #[inline(never)]
    fn poll_rest(&self, miss: Miss, n: u64) -> Result<Step, Stall> {
        let mut held = self.state.hold();
        let (now, fresh) = match miss {
            Miss::NotInTick => {
                let now = self.clock.now_ms();
                match self.in_tick(&mut held, now, n) {
                    Ok(step) => {
                        drop(held);
                        self.issued(&step);
                        return Ok(step);
                    }
                    Err(Miss::NotInTick) => (now, true),
                    Err(Miss::Lost { .. }) => (now, false),
                }
            }
            Miss::Lost { recent } => (recent, false),
        };
        let mut attempt: Attempt<'_, S> = Attempt::new(held, now, true);
        if !fresh {
            if let Some(counters) = self.counters() {
                counters.record_lost_race();
            }
            // The short path only installs in the reading's tick: if the
            // winner stayed there, the reading is as good as any.
            if self.plan.ts_of(attempt.held.cur()) == self.plan.ticks(now) {
                attempt.fresh = false;
            } else {
                attempt.read(&self.clock);
            }
            attempt.backoff.spin();
        }
        self.settle(attempt, n)
    }
}

impl<S: StateCell, C: Clock> Core<S, C> {
    /// The short path on `reading` ([`Plan::advance_in_tick`]): the step, if
    /// it applies and its install wins.
    #[inline(always)]
    fn in_tick(&self, held: &mut S::Held<'_>, reading: u64, n: u64) -> Result<Step, Miss> {
        let Some(step) = self.plan.advance_in_tick(held.cur(), reading, n) else {
            return Err(Miss::NotInTick);
        };
        if held.install(step.next).is_err() {
            return Err(Miss::Lost { recent: reading });
        }
        Ok(step)
    }
}

impl<S: StateCell, C: Clock> Core<S, C> {
    /// The loop behind the fast path: pass the lease's fence (switching
    /// node ids first if it says so), compute the step, install it, and
    /// confirm the lease still held. The transitions are drawn in `plan.rs`.
    #[inline(never)]
    fn settle(&self, mut at: Attempt<'_, S>, n: u64) -> Result<Step, Stall> {
        loop {
            let ticket = match self.plan.gate(at.held.cur())? {
                Gate::Pass(ticket) => ticket,
                Gate::Switch(switched) => {
                    self.switch(&mut at, switched);
                    continue;
                }
            };
            let step = match self.plan.advance(at.held.cur(), at.now, n) {
                Ok(step) => step,
                Err(_) if !at.fresh => {
                    at.read(&self.clock);
                    continue;
                }
                Err(stall) => return Err(stall),
            };
            let before = at.held.cur();
            match at.held.install(step.next) {
                Ok(()) if self.plan.confirm(ticket) => {
                    let now = at.now;
                    drop(at);
                    self.issued(&step);
                    if step.event != StepEvent::Plain {
                        self.report(&step, before, now);
                    }
                    return Ok(step);
                }
                Ok(()) => {
                    // Made under a lease that lapsed or was replaced
                    // meanwhile: these IDs are dropped; check the fence again.
                    self.plan.installed(&step);
                    if let Some(c) = self.counters() {
                        c.events.emit(Event::IdsDropped { count: step.count });
                    }
                    at.read(&self.clock);
                }
                Err(actual) => self.lost(&mut at, before, actual),
            }
        }
    }

    /// Tells the event hook, if one is set, what `step` (made from state
    /// `before` on the reading `now`) did besides issuing. Only the loop's
    /// steps borrow, step the clock id or issue behind the clock; the short
    /// path's never do.
    #[cold]
    #[inline(never)]
    fn report(&self, step: &Step, before: u64, now: u64) {
        let Some(c) = self.counters().filter(|c| c.events.is_on()) else {
            return;
        };
        let ms = Duration::from_millis;
        let behind = || Event::ClockBehind {
            behind: ms(self.plan.behind_ms(before, now)),
        };
        match step.event {
            StepEvent::Plain => {}
            StepEvent::Borrowed => {
                let tick_ms = self.plan.layout.unix_ms(self.plan.ts_of(step.next));
                c.events.emit(Event::TickBorrowed {
                    ahead: ms(tick_ms.saturating_sub(now)),
                });
            }
            StepEvent::Behind => c.events.emit(behind()),
            StepEvent::Bumped { behind: was_behind } => {
                if was_behind {
                    c.events.emit(behind());
                }
                let decoded = self.plan.layout.decode(Id::from_u64(step.next));
                c.events.emit(Event::ClockIdStepped {
                    clock_id: decoded.map_or(0, |d| d.clock_id()),
                });
            }
        }
    }

    /// A lease switched node ids: install that first (it issues nothing),
    /// then issue on a reading taken after it, since a rotation moves the
    /// state back in time, maybe before the reading the attempt holds.
    #[cold]
    fn switch(&self, at: &mut Attempt<'_, S>, switched: u64) {
        let before = at.held.cur();
        match at.held.install(switched) {
            Ok(()) => at.read(&self.clock),
            Err(actual) => self.lost(at, before, actual),
        }
    }

    /// After a lost race from `before`: the clock is read again only if the
    /// winner moved to another tick; otherwise the attempt's reading is
    /// still as good as any, and skipping the read keeps the retry short.
    fn lost(&self, at: &mut Attempt<'_, S>, before: u64, actual: u64) {
        if let Some(counters) = self.counters() {
            counters.record_lost_race();
        }
        if self.plan.ts_of(actual) != self.plan.ts_of(before) {
            at.read(&self.clock);
        } else {
            at.fresh = false;
        }
        at.backoff.spin();
    }
}

/// With restart safety on, dropping the generator stops its writer after it
/// saves the exact last timestamp issued; with a leased node id, the keeper
/// records it in the store and gives the node id back.
impl<S: StateCell, C> Drop for Core<S, C> {
    fn drop(&mut self) {
        let state = self.state.get();
        if let Some(persister) = self.persister.take() {
            persister.finish(self.plan.clock_of(state), self.plan.ts_of(state));
        }
        if let Some(keeper) = self.keeper.take() {
            keeper.release(self.plan.last_issued(state));
        }
    }
}
