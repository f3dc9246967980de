//! The lock-free generator: one padded `AtomicU64`, advanced by compare-and-swap.

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
use crate::primitive::{AtomicU64, Backoff, Ordering};

/// The lock-free ID generator. Share it by reference (or `Arc`) across threads.
///
/// Every call is one compare-and-swap on one word in the common case; no path
/// takes a lock. See the [crate docs](crate#guarantees) for what it guarantees.
///
/// ```
/// use flakeid::{Generator, Layout};
/// use std::collections::HashSet;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter()).node_id(42).build()?;
/// let ids: Vec<_> = std::thread::scope(|s| {
///     let handles: Vec<_> = (0..4)
///         .map(|_| s.spawn(|| (0..1000).map(|_| generator.next_id()).collect::<Vec<_>>()))
///         .collect();
///     handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
/// });
/// assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 4000);
/// let decoded = generator.layout().decode(ids[0])?;
/// assert_eq!(decoded.node_id(), 42);
/// # Ok(())
/// # }
/// ```
pub struct Generator<C = MonotonicClock> {
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
    /// A call stores its successor with one compare-and-swap: the next
    /// sequence value in the same tick, or the first of a new tick. Every
    /// successful CAS moves the word to a strictly larger value (except
    /// `OnClockBehind::NextClock`, which moves the timestamp back with a fresh
    /// clock id), so the IDs it hands out are unique and ordered by the CAS's
    /// place in the word's modification order. The node id lives in the word
    /// too, so a lease can switch it with one CAS, which issues nothing and
    /// leaves the new node id's tick used up (a rotation moves it back in
    /// time). Padded to its own cache line so neighbours do not share its
    /// contention.
    state: CachePadded<AtomicU64>,
    plan: Plan,
    clock: C,
    counters: Option<Box<Counters>>,
    persister: Option<Persister>,
    keeper: Option<Box<dyn Keeper>>,
}

impl Generator {
    /// Starts configuring a generator for `layout`, with the default
    /// [`MonotonicClock`], node id 0 and the default policies.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::discord())
    ///     .node_field("worker", 3)
    ///     .node_field("process", 1)
    ///     .build()?;
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!((decoded.field("worker"), decoded.field("process")), (Some(3), Some(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(layout: Layout) -> Builder {
        Builder::new(layout)
    }
}

impl<C: Clock> Generator<C> {
    pub(crate) fn from_parts(parts: Parts<C>) -> Self {
        Generator {
            state: CachePadded::new(AtomicU64::new(parts.state)),
            plan: parts.plan,
            clock: parts.clock,
            counters: parts.counters.then(Box::default),
            persister: parts.persister,
            keeper: parts.keeper,
        }
    }

    /// The next ID, waiting as the policies say.
    ///
    /// With the default policies (`OnExhausted::Wait`, `OnClockBehind::Continue`)
    /// this never fails before the layout's last instant: when a tick's
    /// sequence is used up it waits for the next tick (spinning briefly, then
    /// yielding, then sleeping). With a leased
    /// node id it also waits while the lease cannot be proven valid, until the
    /// keeper has claimed a node id again.
    ///
    /// # Panics
    ///
    /// Only where [`try_next_id`](Generator::try_next_id) would return an error:
    /// when a policy set to report (`OnExhausted::Error`, `OnClockBehind::Error`,
    /// or `OnClockBehind::Wait` whose wait ran out) reports, or when the clock
    /// is past the layout's last instant ([`Layout::last_ms`]). Use
    /// `try_next_id` with those policies.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let (a, b) = (generator.next_id(), generator.next_id());
    /// assert!(a < b);
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn next_id(&self) -> Id {
        IdGenerator::next_id(self)
    }

    /// The next ID, waiting as the policies say, or the error a policy reports.
    ///
    /// # Errors
    ///
    /// [`GenerateError::SequenceExhausted`] under `OnExhausted::Error`;
    /// [`GenerateError::ClockBehind`] under `OnClockBehind::Error` or when
    /// `OnClockBehind::Wait` runs out; [`GenerateError::Expired`] past the
    /// layout's last instant; [`GenerateError::Storage`] while restart
    /// safety's store fails to save the reservation the next ID needs
    /// ([`Builder::persist`](crate::Builder::persist));
    /// [`GenerateError::Fenced`] while a leased node id's lease cannot be
    /// proven valid (`Builder::lease`, features `etcd` and `redis`).
    ///
    /// ```
    /// use flakeid::{GenerateError, Generator, Layout, ManualClock, OnClockBehind};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(Layout::twitter())
    ///     .clock(clock.clone())
    ///     .on_clock_behind(OnClockBehind::Error)
    ///     .build()?;
    /// generator.try_next_id()?;
    /// clock.rewind(Duration::from_secs(2));
    /// assert_eq!(
    ///     generator.try_next_id(),
    ///     Err(GenerateError::ClockBehind { behind: Duration::from_secs(2) })
    /// );
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, GenerateError> {
        IdGenerator::try_next_id(self)
    }

    /// The next ID if one can be issued without waiting.
    ///
    /// # Errors
    ///
    /// As [`try_next_id`](Generator::try_next_id), and also
    /// [`GenerateError::SequenceExhausted`] or [`GenerateError::ClockBehind`]
    /// where the policy would wait, and [`GenerateError::Reserving`] where it
    /// would wait for a reservation to be saved or a lease's ceiling to be
    /// raised. For event loops and async runtimes that do their own waiting.
    ///
    /// ```
    /// use flakeid::{GenerateError, Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// match generator.poll_id() {
    ///     Ok(id) => println!("{id}"),
    ///     Err(GenerateError::SequenceExhausted { retry_after }) => println!("retry in {retry_after:?}"),
    ///     Err(e) => return Err(e.into()),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn poll_id(&self) -> Result<Id, GenerateError> {
        IdGenerator::poll_id(self)
    }

    /// Reserves up to `n` consecutive IDs with one compare-and-swap, waiting
    /// as the policies say. The batch holds at least one ID and at most the
    /// rest of the current tick (fewer than `n` when the tick runs out; call
    /// again for more). `n = 0` reserves nothing and returns an empty batch.
    ///
    /// # Panics
    ///
    /// As [`next_id`](Generator::next_id).
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let mut ids = Vec::with_capacity(10_000);
    /// while ids.len() < 10_000 {
    ///     ids.extend(generator.next_ids(10_000 - ids.len()));
    /// }
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn next_ids(&self, n: usize) -> IdBatch {
        IdGenerator::next_ids(self, n)
    }

    /// [`next_ids`](Generator::next_ids) that reports instead of panicking.
    ///
    /// # Errors
    ///
    /// As [`try_next_id`](Generator::try_next_id).
    #[inline]
    pub fn try_next_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        IdGenerator::try_next_ids(self, n)
    }

    /// [`next_ids`](Generator::next_ids) that never waits.
    ///
    /// # Errors
    ///
    /// As [`poll_id`](Generator::poll_id).
    #[inline]
    pub fn poll_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        IdGenerator::poll_ids(self, n)
    }

    /// The layout this generator makes IDs for.
    pub fn layout(&self) -> &Layout {
        &self.plan.layout
    }

    /// How many free node ids this generator's lease claims have passed over
    /// because their marks were too far ahead of its clock (see
    /// [`Lease::max_mark_ahead`](crate::Lease::max_mark_ahead)); each claim
    /// counts each node id it skipped. 0 without a lease. A count that grows
    /// points at node ids poisoned by a holder whose clock ran ahead: the
    /// [`LeaseError::MarksAhead`](crate::LeaseError::MarksAhead) a claim
    /// fails with when it skips them all names them and their marks.
    ///
    /// ```no_run
    /// use flakeid::{Generator, Layout, Lease};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// let generator = Generator::builder(Layout::twitter()).lease(lease).build()?;
    /// if generator.lease_skipped_node_ids() > 0 {
    ///     eprintln!("some node ids carry marks far ahead of this clock");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(any(feature = "etcd", feature = "redis"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "etcd", feature = "redis"))))]
    pub fn lease_skipped_node_ids(&self) -> u64 {
        self.plan.fence().map_or(0, crate::fence::Fence::skipped)
    }

    /// The node id in the IDs (all node fields as one number): the
    /// configured one, or the one a lease holds now.
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

    /// The generator's state: the largest ID issued so far, or a point it
    /// moved past without issuing (before the first ID, timestamp 0 or where
    /// a restored state left off; with a leased node id, the lease's floor,
    /// or IDs dropped because the lease lapsed as they were made). Every
    /// later ID is larger, except after an `OnClockBehind::NextClock` step
    /// or a lease's rotation.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let id = generator.next_id();
    /// assert_eq!(generator.last_id(), id);
    /// # Ok(())
    /// # }
    /// ```
    pub fn last_id(&self) -> Id {
        IdGenerator::last_id(self)
    }

    /// The counters, if the builder turned them on.
    pub fn stats(&self) -> Option<Stats> {
        IdGenerator::stats(self)
    }
}

impl<C: Clock> IdGenerator for Generator<C> {
    fn layout(&self) -> &Layout {
        &self.plan.layout
    }

    fn stats(&self) -> Option<Stats> {
        self.counters.as_deref().map(Counters::snapshot)
    }

    fn last_id(&self) -> Id {
        Id::from_u64(self.state.load(Ordering::Relaxed))
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

/// Deliberately broken variants, compiled only for the loom models, which must
/// catch them (a model that passes on these has no teeth).
#[cfg(flakeid_loom)]
impl<C: Clock> Generator<C> {
    /// `next_id` with the compare-and-swap replaced by a load and a store:
    /// two racing threads can both install the same successor.
    #[doc(hidden)]
    pub fn broken_next_id_load_store(&self) -> Id {
        let cur = self.state.load(Ordering::Relaxed);
        match self.plan.advance(cur, self.clock.now_ms(), 1) {
            Ok(step) => {
                self.state.store(step.next, Ordering::Relaxed);
                Id::from_u64(step.first)
            }
            Err(stall) => panic!("flakeid: {}", self.plan.error(stall)),
        }
    }

    /// `next_id` that, after losing a race, retries the successor it computed
    /// before instead of computing a new one: a lost sequence increment. If
    /// the winner installed that same successor, the retry succeeds without
    /// changing the state and hands out the winner's ID again.
    #[doc(hidden)]
    pub fn broken_next_id_stale_retry(&self) -> Id {
        let mut cur = self.state.load(Ordering::Acquire);
        let step = match self.plan.advance(cur, self.clock.now_ms(), 1) {
            Ok(step) => step,
            Err(stall) => panic!("flakeid: {}", self.plan.error(stall)),
        };
        loop {
            match self
                .state
                .compare_exchange(cur, step.next, Ordering::Release, Ordering::Acquire)
            {
                Ok(_) => return Id::from_u64(step.first),
                Err(actual) => cur = actual,
            }
        }
    }
}

impl<C: Clock> Reserve for Generator<C> {
    fn plan(&self) -> &Plan {
        &self.plan
    }

    fn counters(&self) -> Option<&Counters> {
        self.counters.as_deref()
    }

    /// One compare-and-swap in the common case under load: the clock reads
    /// the state's tick, which has room, and no lease is involved
    /// ([`Plan::advance_in_tick`]). Everything else, including a lost race,
    /// goes to the full loop, kept out of line so this stays short.
    ///
    /// The clock is read before the state is loaded, so that the CAS follows
    /// the load at once: under contention, the shorter that window, the
    /// fewer CASes lose. The short path only uses a reading equal to the
    /// state's tick, to continue that tick, which is valid whenever it was
    /// taken. The full loop reads the clock again, after the load: a reading
    /// older than the state can pass for the clock stepping back, or, once
    /// `OnClockBehind::NextClock` or a lease's rotation has moved the state
    /// back in time, for the clock being past it (entering that tick would
    /// put the timestamp ahead of the clock and undo the step; the loom
    /// models of `NextClock` find this).
    ///
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
    ///
    /// Always inlined: a call and a returned `Step` in memory cost as much as
    /// the rest of the fast path (measured with callgrind, `benches/README.md`).
    #[inline(always)]
    fn poll(&self, n: u64) -> Result<Step, Stall> {
        // Checked once per call, so a generator without a lease runs a loop
        // with the fence compiled out, and a leased one goes straight to it.
        if self.plan.is_leased() {
            let cur = self.state.load(Ordering::Acquire);
            return self.poll_leased(n, cur, self.clock.now_ms());
        }
        let now = self.clock.now_ms();
        let cur = self.state.load(Ordering::Acquire);
        let Some(step) = self.plan.advance_in_tick(cur, now, n) else {
            let now = self.clock.now_ms();
            return self.poll_loop::<false>(n, cur, now, None);
        };
        match self
            .state
            .compare_exchange_weak(cur, step.next, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => {
                self.issued(&step);
                Ok(step)
            }
            Err(actual) => self.poll_loop::<false>(n, cur, now, Some(actual)),
        }
    }
}

impl<C: Clock> Generator<C> {
    #[inline(never)]
    fn poll_leased(&self, n: u64, cur: u64, now: u64) -> Result<Step, Stall> {
        self.poll_loop::<true>(n, cur, now, None)
    }

    /// The compare-and-swap loop, from state `cur` and clock reading `now`;
    /// `lost` is the state a first CAS from `cur` found instead.
    ///
    /// After a lost race the clock is read again only if the winner moved to
    /// another tick; otherwise the earlier reading is still as good as any,
    /// and skipping the read keeps the retry short. Before reporting a stall
    /// on a reading that has aged through retries, one fresh reading is tried.
    ///
    /// `LEASED`: the node id is leased, so each attempt passes the fence
    /// first and confirms its ticket after the CAS.
    #[inline(never)]
    fn poll_loop<const LEASED: bool>(
        &self,
        n: u64,
        mut cur: u64,
        mut now: u64,
        lost: Option<u64>,
    ) -> Result<Step, Stall> {
        let mut fresh = true;
        let backoff = Backoff::new();
        if let Some(actual) = lost {
            self.lost_race(&mut cur, actual, &mut now, &mut fresh, &backoff);
        }
        loop {
            let ticket = if LEASED {
                match self.plan.gate(cur)? {
                    Gate::Pass(ticket) => ticket,
                    Gate::Switch(switched) => {
                        // A lease switched node ids: install that first, then
                        // issue on a reading taken after it (a rotation moves
                        // the state back in time, maybe before this reading).
                        match self.state.compare_exchange(
                            cur,
                            switched,
                            Ordering::Release,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => {
                                cur = switched;
                                now = self.clock.now_ms();
                                fresh = true;
                            }
                            Err(actual) => {
                                self.lost_race(&mut cur, actual, &mut now, &mut fresh, &backoff);
                            }
                        }
                        continue;
                    }
                }
            } else {
                0
            };
            let step = match self.plan.advance(cur, now, n) {
                Ok(step) => step,
                Err(_) if !fresh => {
                    now = self.clock.now_ms();
                    fresh = true;
                    continue;
                }
                Err(stall) => return Err(stall),
            };
            match self.state.compare_exchange_weak(
                cur,
                step.next,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if LEASED && !self.plan.confirm(ticket) {
                        // Made under a lease that lapsed or was replaced
                        // meanwhile: drop these IDs, check the fence again.
                        self.plan.installed(&step);
                        cur = step.next;
                        continue;
                    }
                    self.issued(&step);
                    return Ok(step);
                }
                Err(actual) => self.lost_race(&mut cur, actual, &mut now, &mut fresh, &backoff),
            }
        }
    }

    #[inline]
    fn lost_race(
        &self,
        cur: &mut u64,
        actual: u64,
        now: &mut u64,
        fresh: &mut bool,
        backoff: &Backoff,
    ) {
        if self.plan.ts_of(actual) != self.plan.ts_of(*cur) {
            *now = self.clock.now_ms();
        } else {
            *fresh = false;
        }
        *cur = actual;
        backoff.spin();
    }
}

/// With restart safety on, dropping the generator stops its writer after it
/// saves the exact last timestamp issued; with a leased node id, the keeper
/// records it in the store and gives the node id back.
impl<C> Drop for Generator<C> {
    fn drop(&mut self) {
        let state = self.state.load(Ordering::Relaxed);
        super::finish(&self.plan, state, self.persister.take(), self.keeper.take());
    }
}

impl<C: Clock + fmt::Debug> fmt::Debug for Generator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("layout", &self.plan.layout)
            .field("node_id", &self.plan.node_id)
            .field("on_exhausted", &self.plan.on_exhausted)
            .field("on_clock_behind", &self.plan.on_behind)
            .field("last_id", &self.last_id())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

/// Under Miri, `compare_exchange_weak` fails spuriously (by default 80% of
/// the time), which loom never makes it do: these tests drive the CAS loop
/// through such failures, sequentially against the mutex twin and under
/// racing threads. Sizes shrink under Miri, which interprets every step.
#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::generator::tests::Readings;
    use crate::generator::{MutexGenerator, OnClockBehind, OnExhausted};

    const EPOCH: u64 = 1_600_000_000_000;

    /// 41 bits of ms, a 2-bit clock id, a 2-bit worker, a 2-bit sequence.
    fn layout() -> Layout {
        Layout::builder()
            .epoch_ms(EPOCH)
            .timestamp_bits(41)
            .clock_id(2)
            .node("worker", 2)
            .sequence(2)
            .build()
            .unwrap()
    }

    #[test]
    fn the_cas_loop_agrees_with_the_mutex_twin_through_every_transition() {
        let exhausted = [
            OnExhausted::Wait,
            OnExhausted::Borrow {
                max_ahead: Duration::from_millis(2),
            },
            OnExhausted::Error,
            OnExhausted::NextClock,
        ];
        let behind = [
            OnClockBehind::Continue,
            OnClockBehind::Wait {
                max: Duration::ZERO,
            },
            OnClockBehind::Error,
            OnClockBehind::NextClock,
        ];
        // Clock moves (ms) between polls of a few IDs each: within a tick,
        // to the next, back a little, back a lot, far ahead.
        let moves: [i64; 8] = [0, 1, 0, -1, -5, 7, 0, 1_000];
        for on_exhausted in exhausted {
            for on_behind in behind {
                let clock = ManualClock::new(EPOCH + 100);
                let builder = Generator::builder(layout())
                    .node_id(2)
                    .clock(clock.clone())
                    .on_exhausted(on_exhausted)
                    .on_clock_behind(on_behind)
                    .random_start(2)
                    .seed(7)
                    .counters(true);
                let lock_free = builder.clone().build().unwrap();
                let locked: MutexGenerator<ManualClock> = builder.build_mutex().unwrap();
                let mut seen = HashSet::new();
                for step in moves {
                    match step {
                        0.. => clock.advance(Duration::from_millis(step.unsigned_abs())),
                        _ => clock.rewind(Duration::from_millis(step.unsigned_abs())),
                    }
                    for n in [1, 1, 3, 1, 2] {
                        let got = lock_free.poll_ids(n);
                        assert_eq!(got, locked.poll_ids(n), "{on_exhausted:?} {on_behind:?}");
                        for id in got.into_iter().flatten() {
                            assert!(seen.insert(id), "{id} twice");
                        }
                        assert_eq!(lock_free.last_id(), locked.last_id());
                    }
                }
                assert_eq!(lock_free.stats(), locked.stats());
            }
        }
    }

    /// `OnClockBehind::NextClock` moves the state back in time. A reading
    /// taken before the load, from before the clock stepped back, then looks
    /// past the state's tick; entering that tick would put the timestamp
    /// ahead of the clock and undo the step (the loom model
    /// `next_clock_issues_at_the_real_time_under_a_fresh_clock_id` finds the
    /// interleaving).
    #[test]
    fn a_reading_older_than_the_state_never_enters_a_tick() {
        let layout = layout();
        let generator = Generator::builder(layout.clone())
            .clock(Readings::new(EPOCH, &[10]))
            .on_clock_behind(OnClockBehind::NextClock)
            .build()
            .unwrap();
        let at = |id: Id| {
            let d = layout.decode(id).unwrap();
            (d.timestamp(), d.clock_id())
        };
        assert_eq!(at(generator.try_next_id().unwrap()), (10, 0));
        // The clock steps back to 8: a bump to clock id 1.
        generator.clock().set(EPOCH, &[8]);
        assert_eq!(at(generator.try_next_id().unwrap()), (8, 1));
        // A call whose first reading is from before the step back.
        generator.clock().set(EPOCH, &[10, 8]);
        assert_eq!(at(generator.try_next_id().unwrap()), (8, 1));
    }

    #[test]
    fn racing_threads_get_unique_increasing_ids() {
        let (threads, per_thread) = if cfg!(miri) { (3, 40) } else { (4, 20_000) };
        let layout = layout();
        let clock = ManualClock::new(EPOCH + 100);
        let generator = Generator::builder(layout.clone())
            .node_id(1)
            .clock(clock.clone())
            .on_exhausted(OnExhausted::Borrow {
                max_ahead: Duration::from_millis(1),
            })
            .build()
            .unwrap();
        let per_thread: Vec<Vec<Id>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut ids: Vec<Id> = Vec::with_capacity(per_thread);
                        while ids.len() < per_thread {
                            match generator.poll_id() {
                                Ok(id) => {
                                    let tick = layout.decode(id).unwrap().timestamp();
                                    // Never more than the 1 ms allowance ahead.
                                    assert!(tick <= clock.now_ms() - EPOCH + 1);
                                    assert!(ids.last().is_none_or(|&last| id > last));
                                    ids.push(id);
                                }
                                // Play the passing of time: nobody waits.
                                Err(GenerateError::SequenceExhausted { .. }) => {
                                    clock.advance(Duration::from_millis(1));
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                        ids
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<Id> = per_thread.into_iter().flatten().collect();
        all.sort_unstable();
        let n = all.len();
        all.dedup();
        assert_eq!(all.len(), n, "duplicate ids");
        assert_eq!(all.last().copied(), Some(generator.last_id()));
    }
}
