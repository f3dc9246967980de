//! The engine both generators run: the calls, the fast path, the loop
//! behind it, and waiting.
//!
//! [`CellGenerator`](crate::CellGenerator)'s methods hand each call to a
//! [`Core`] over its [`StateCell`]: an `AtomicU64` installed by
//! compare-and-swap ([`Generator`](crate::Generator)), or the same word
//! under a mutex installed by assignment
//! ([`MutexGenerator`](crate::MutexGenerator)). Both run the same attempt
//! through the same loop and read the clock at the same points; they differ
//! only in the cell's `install`, which for the mutex never loses a race.
//!
//! `next_id` is read here and in `plan.rs` alone, in parking_lot's shape:
//! [`Core::next_id`] inlines [`Core::poll_fast`] (one clock load, one
//! install); what it misses goes to [`Core::poll_rest`] and the loop,
//! [`Core::settle`], out of line; a stall goes to [`Core::wait`], which is
//! cold and asks `wait.rs` how long to pause. The transitions themselves
//! are [`Plan`]'s.

use std::fmt;
use std::time::Duration;

use super::batch::IdBatch;
use super::builder::Components;
use super::cell::StateCell;
use super::cell::sealed::Held;
use super::health::Health;
use super::plan::{Gate, Plan, Stall, Step, StepKind};
use super::telemetry::{Stats, Telemetry};
use super::wait::{LONGEST_SLEEP, Mode, Waiting};
use crate::clock::Clock;
use crate::error::GenerateError;
use crate::events::Event;
use crate::fence::Keeper;
use crate::id::Id;
use crate::layout::Layout;
use crate::persist::Persister;
use crate::primitive::{self, Backoff};

/// A generator over the clock `C` and the state cell `S`.
pub(crate) struct Core<C, S: StateCell> {
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
    telemetry: Option<Box<Telemetry>>,
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

/// Why the fast path issued nothing. Small enough to pass in registers, so
/// the fast path hands over to [`poll_rest`](Core::poll_rest) with a
/// jump; the rest of the attempt holds the word again.
#[derive(Debug, Clone, Copy)]
enum Miss {
    /// The cached reading does not name the state's tick, the tick has no
    /// room left, the clock has no cached reading, or the node id is leased
    /// (every attempt passes the fence).
    NotInTick,
    /// The install lost a race, on the cached reading `recent`.
    Lost { recent: u64 },
}

impl<C, S: StateCell> Core<C, S> {
    pub(crate) fn new(parts: Components<C>, state: S) -> Self {
        Core {
            state,
            plan: parts.plan,
            clock: parts.clock,
            telemetry: Telemetry::new(parts.counters, parts.events),
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
        self.telemetry.as_deref().and_then(Telemetry::stats)
    }

    /// The node id in the IDs: the configured one, or the one a lease holds now.
    pub(crate) fn node_id(&self) -> u64 {
        // The state carries the node id, which a lease may change; before
        // the first ID under a new lease (and while its fence waits to
        // open), the lease's latest claim has it.
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
        #[cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        ))]
        if let Some(closed_for) = self.plan.fence().and_then(crate::fence::Fence::closed_for) {
            return Health::Fenced { closed_for };
        }
        match self.plan.reservation().and_then(|r| r.failure()) {
            Some(error) => Health::StorageFailing(error),
            None => Health::Issuing,
        }
    }

    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    pub(crate) fn lease_skipped_node_ids(&self) -> u64 {
        self.plan.fence().map_or(0, crate::fence::Fence::skipped)
    }

    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    pub(crate) fn lease_grant(&self) -> Option<super::LeaseGrant> {
        let (grant, generation, valid_ns) = self.plan.fence()?.check_with_deadline()?;
        let node_id = self
            .plan
            .layout
            .decode(Id::from_u64(grant.node_bits))
            .map_or(0, |d| d.node_id());
        Some(super::LeaseGrant {
            node_id,
            generation,
            floor: grant.floor,
            ceiling: grant.ceiling,
            valid_for: Duration::from_nanos(valid_ns),
        })
    }

    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    pub(crate) fn want_lease_ceiling(&self, tick: u64) {
        if let Some(fence) = self.plan.fence() {
            fence.want(tick);
        }
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

    /// The compiled configuration and transitions.
    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The counters and the event hook, if either is on.
    #[inline]
    pub(crate) fn telemetry(&self) -> Option<&Telemetry> {
        self.telemetry.as_deref()
    }
}

/// `next_id`: the fast path inline, the rest of the attempt and the loop
/// out of line, side by side.
impl<C: Clock, S: StateCell> Core<C, S> {
    /// One ID, waiting as the policies say. The common call, kept small
    /// enough to inline into the caller: the fast path, with everything
    /// else out of line.
    #[inline]
    pub(crate) fn next_id(&self) -> Id {
        match self.poll_fast(1) {
            Ok(step) => Id::from_u64(step.first),
            Err(miss) => self.next_id_missed(miss),
        }
    }

    /// `next_id` after the fast path missed. Not cold: under contention
    /// every lost race comes here.
    #[inline(never)]
    fn next_id_missed(&self, miss: Miss) -> Id {
        let stall = match self.poll_rest(miss, 1) {
            Ok(step) => return Id::from_u64(step.first),
            Err(stall) => stall,
        };
        match self.wait(1, stall, Mode::Wait) {
            Ok(step) => Id::from_u64(step.first),
            Err(e) => panic!("flakeid: {e}"),
        }
    }

    /// One attempt that never waits: a step, or why none is possible now.
    #[inline]
    pub(crate) fn poll(&self, n: u64) -> Result<Step, Stall> {
        match self.poll_fast(n) {
            Ok(step) => Ok(step),
            Err(miss) => self.poll_rest(miss, n),
        }
    }

    /// The common case under load, one clock load and one install: the
    /// clock's cached reading names the state's tick, which has room, and no
    /// lease is involved ([`Plan::advance_in_tick`]). Anything else is a
    /// [`Miss`] for [`poll_rest`](Core::poll_rest), out of line, so this
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
            if let Some(telemetry) = self.telemetry() {
                telemetry.record_lost_race();
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
                    if step.kind != StepKind::Plain {
                        self.report(&step, before, now);
                    }
                    return Ok(step);
                }
                Ok(()) => {
                    // Made under a lease that lapsed or was replaced
                    // meanwhile: these IDs are dropped; check the fence again.
                    self.plan.installed(&step);
                    if let Some(c) = self.telemetry() {
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
        let Some(c) = self.telemetry().filter(|c| c.events.is_on()) else {
            return;
        };
        let ms = Duration::from_millis;
        let behind = || Event::ClockBehind {
            behind: ms(self.plan.behind_ms(before, now)),
        };
        match step.kind {
            StepKind::Plain => {}
            StepKind::Borrowed => {
                let tick_ms = self.plan.layout.unix_ms(self.plan.ts_of(step.next));
                c.events.emit(Event::TickBorrowed {
                    ahead: ms(tick_ms.saturating_sub(now)),
                });
            }
            StepKind::Behind => c.events.emit(behind()),
            StepKind::Bumped { behind: was_behind } => {
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
        if let Some(telemetry) = self.telemetry() {
            telemetry.record_lost_race();
        }
        if self.plan.ts_of(actual) != self.plan.ts_of(before) {
            at.read(&self.clock);
        } else {
            at.fresh = false;
        }
        at.backoff.spin();
    }

    /// Bookkeeping after `step` was installed and its IDs handed out.
    #[inline]
    fn issued(&self, step: &Step) {
        self.plan.installed(step);
        if let Some(telemetry) = self.telemetry() {
            telemetry.record(step);
        }
    }
}

/// The other calls: one per public method, on the same attempt.
impl<C: Clock, S: StateCell> Core<C, S> {
    /// One ID, waiting as the policies say, or the error a policy reports.
    #[inline]
    pub(crate) fn try_next_id(&self) -> Result<Id, GenerateError> {
        match self.poll(1) {
            Ok(step) => Ok(Id::from_u64(step.first)),
            Err(stall) => self
                .wait(1, stall, Mode::Report)
                .map(|step| Id::from_u64(step.first)),
        }
    }

    /// One ID if it can be issued without waiting.
    #[inline]
    pub(crate) fn poll_id(&self) -> Result<Id, GenerateError> {
        self.poll_ids(1).map(|batch| batch.first_id())
    }

    /// Up to `n` IDs, waiting as the policies say and for outside help.
    #[inline]
    pub(crate) fn next_ids(&self, n: usize) -> IdBatch {
        match self.reserve_batch(n, Mode::Wait) {
            Ok(batch) => batch,
            Err(e) => panic!("flakeid: {e}"),
        }
    }

    /// Up to `n` IDs, waiting as the policies say, or the error a policy
    /// reports.
    #[inline]
    pub(crate) fn try_next_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        self.reserve_batch(n, Mode::Report)
    }

    /// Up to `n` IDs without waiting.
    #[inline]
    pub(crate) fn poll_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        if n == 0 {
            return Ok(IdBatch::empty());
        }
        self.poll(n as u64)
            .map(|step| self.batch(step))
            .map_err(|stall| {
                self.note_stall(stall);
                self.plan.error(stall)
            })
    }

    /// Up to `n` IDs, waiting through the stalls `mode` waits for.
    #[inline]
    fn reserve_batch(&self, n: usize, mode: Mode) -> Result<IdBatch, GenerateError> {
        if n == 0 {
            return Ok(IdBatch::empty());
        }
        let n = n as u64;
        let step = match self.poll(n) {
            Ok(step) => step,
            Err(stall) => self.wait(n, stall, mode)?,
        };
        Ok(self.batch(step))
    }

    /// The IDs `step` hands out.
    #[inline]
    pub(crate) fn batch(&self, step: Step) -> IdBatch {
        IdBatch::new(step.first, self.plan.seq_one(), step.count)
    }

    /// What an attempt's stall means for the call that made it: noted once
    /// per call (a clock behind is counted, a missing reservation asked for).
    pub(crate) fn note_stall(&self, stall: Stall) {
        match (self.telemetry(), stall) {
            (Some(c), Stall::Behind { behind_ms }) => c.record_behind(behind_ms),
            (_, Stall::Unreserved { clock, tick }) => {
                if let Some(reservation) = self.plan.reservation() {
                    reservation.request(clock, tick);
                }
            }
            _ => {}
        }
    }

    /// Waits through the stalls `mode` waits for, by pausing the thread for
    /// as long as [`Waiting`] says after each.
    #[cold]
    #[inline(never)]
    fn wait(&self, n: u64, mut stall: Stall, mode: Mode) -> Result<Step, GenerateError> {
        self.note_stall(stall);
        let mut waiting = Waiting::new(mode);
        let backoff = Backoff::new();
        let outcome = loop {
            match waiting.pause(self.plan(), self.telemetry(), stall) {
                Ok(duration) => pause_thread(&backoff, duration),
                Err(e) => break Err(e),
            }
            match self.poll(n) {
                Ok(step) => break Ok(step),
                Err(next) => stall = next,
            }
        };
        waiting.finish(self.telemetry());
        outcome
    }
}

/// Pauses the thread part of the way towards a condition expected in about
/// `pause`: sleep through all but the last millisecond (in slices of at
/// most [`LONGEST_SLEEP`]), then spin and yield, then nap in short steps,
/// so a waiting thread neither burns a core nor oversleeps a tick by much.
fn pause_thread(backoff: &Backoff, pause: Duration) {
    const MS: Duration = Duration::from_millis(1);
    if pause >= 2 * MS {
        primitive::sleep((pause - MS).min(LONGEST_SLEEP));
    } else if !backoff.is_completed() {
        backoff.snooze();
    } else {
        primitive::sleep(Duration::from_micros(50));
    }
}

/// What the loom models' planted bugs (`loom_hooks`) build on: the word, and
/// the loop run from a reading of their choosing.
#[cfg(flakeid_loom)]
impl<C: Clock> Core<C, super::cell::AtomicCell> {
    /// The state word itself.
    pub(crate) fn word(&self) -> &crate::primitive::AtomicU64 {
        self.state.word()
    }

    /// The loop on `reading`, taken as if read after the word was held.
    pub(crate) fn settle_on(&self, reading: u64, n: u64) -> Result<Step, Stall> {
        use super::cell::sealed::Cell;
        let held = self.state.hold();
        self.settle(Attempt::new(held, reading, true), n)
    }
}

/// With restart safety on, dropping the generator stops its writer after it
/// saves the exact last timestamp issued; with a leased node id, the keeper
/// records it in the store and gives the node id back.
impl<C, S: StateCell> Drop for Core<C, S> {
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
    use crate::generator::{Generator, MutexGenerator, OnClockBehind, OnExhausted};
    use crate::tests::Readings;

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
                // Lost races are the lock-free generator's alone (under Miri,
                // spurious `compare_exchange_weak` failures count too).
                let counted = lock_free.stats().map(|s| Stats { lost_races: 0, ..s });
                assert_eq!(counted, locked.stats());
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
            .single_node()
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
