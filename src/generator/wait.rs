//! Waiting through stalls as the policies say, shared by both generators.

use std::time::{Duration, Instant};

use super::IdBatch;
use super::core::Miss;
use super::plan::{Plan, Stall, Step};
use super::policy::{OnClockBehind, OnExhausted};
use super::stats::Counters;
use crate::GenerateError;
use crate::id::Id;
use crate::primitive::{self, Backoff, Deadline};

/// How a blocking call treats conditions that outside help may clear (a
/// failing state store today): `Report` returns them (`try_next_id`),
/// `Wait` waits them out (`next_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Report,
    Wait,
}

/// One generator's way of applying [`Plan::advance`] to its state.
pub(crate) trait Reserve {
    fn plan(&self) -> &Plan;
    fn counters(&self) -> Option<&Counters>;

    /// The fast path of an attempt: a step, or a miss for
    /// [`poll_rest`](Reserve::poll_rest).
    fn poll_fast(&self, n: u64) -> Result<Step, Miss>;

    /// The rest of an attempt the fast path missed: a step, or why none is
    /// possible now.
    fn poll_rest(&self, miss: Miss, n: u64) -> Result<Step, Stall>;

    /// One attempt that never waits: a step, or why none is possible now.
    #[inline]
    fn poll(&self, n: u64) -> Result<Step, Stall> {
        match self.poll_fast(n) {
            Ok(step) => Ok(step),
            Err(miss) => self.poll_rest(miss, n),
        }
    }

    /// Bookkeeping after `step` was installed and its IDs handed out.
    #[inline]
    fn issued(&self, step: &Step) {
        self.plan().installed(step);
        if let Some(counters) = self.counters() {
            counters.record(step);
        }
    }
}

/// One ID, waiting as the policies say. The common call, kept small enough
/// to inline into the caller; waiting and panicking are out of line.
#[inline]
pub(crate) fn next_id<R: Reserve + ?Sized>(r: &R) -> Id {
    match r.poll_fast(1) {
        Ok(step) => Id::from_u64(step.first),
        Err(miss) => next_id_missed(r, miss),
    }
}

/// Not cold: under contention every lost race comes here.
#[inline(never)]
fn next_id_missed<R: Reserve + ?Sized>(r: &R, miss: Miss) -> Id {
    let stall = match r.poll_rest(miss, 1) {
        Ok(step) => return Id::from_u64(step.first),
        Err(stall) => stall,
    };
    match wait(r, 1, stall, Mode::Wait) {
        Ok(step) => Id::from_u64(step.first),
        Err(e) => panic!("flakeid: {e}"),
    }
}

/// One ID, waiting as the policies say, or the error a policy reports.
#[inline]
pub(crate) fn try_next_id<R: Reserve + ?Sized>(r: &R) -> Result<Id, GenerateError> {
    match r.poll(1) {
        Ok(step) => Ok(Id::from_u64(step.first)),
        Err(stall) => wait(r, 1, stall, Mode::Report).map(|step| Id::from_u64(step.first)),
    }
}

/// Reserves a batch of up to `n` IDs without waiting.
#[inline]
pub(crate) fn poll_batch<R: Reserve + ?Sized>(r: &R, n: usize) -> Result<IdBatch, GenerateError> {
    if n == 0 {
        return Ok(IdBatch::empty());
    }
    poll(r, n as u64).map(|step| batch(r.plan(), step))
}

/// Reserves a batch of up to `n` IDs, waiting as the policies say.
#[inline]
pub(crate) fn reserve_batch<R: Reserve + ?Sized>(
    r: &R,
    n: usize,
    mode: Mode,
) -> Result<IdBatch, GenerateError> {
    if n == 0 {
        return Ok(IdBatch::empty());
    }
    reserve(r, n as u64, mode).map(|step| batch(r.plan(), step))
}

#[inline]
pub(crate) fn batch(plan: &Plan, step: Step) -> IdBatch {
    IdBatch::new(step.first, plan.seq_one(), step.count)
}

/// Reserves up to `n` IDs without waiting.
#[inline]
fn poll<R: Reserve + ?Sized>(r: &R, n: u64) -> Result<Step, GenerateError> {
    r.poll(n).map_err(|stall| {
        note_stall(r, stall);
        r.plan().error(stall)
    })
}

/// Reserves up to `n` IDs, waiting through the stalls the policies wait for.
#[inline]
fn reserve<R: Reserve + ?Sized>(r: &R, n: u64, mode: Mode) -> Result<Step, GenerateError> {
    match r.poll(n) {
        Ok(step) => Ok(step),
        Err(stall) => wait(r, n, stall, mode),
    }
}

/// What an attempt's stall means for the call that made it: noted once per
/// call (a clock behind is counted, a missing reservation asked for).
pub(crate) fn note_stall<R: Reserve + ?Sized>(r: &R, stall: Stall) {
    match (r.counters(), stall) {
        (Some(c), Stall::Behind { behind_ms }) => c.record_behind(behind_ms),
        (_, Stall::Unreserved { clock, tick }) => {
            if let Some(reservation) = r.plan().reservation() {
                reservation.request(clock, tick);
            }
        }
        _ => {}
    }
}

/// The one place that decides, for a call that waits, how long to pause
/// after a stall before trying again, or that the call gives up with an
/// error. The blocking calls sleep the thread for that long ([`wait`]); the
/// async ones sleep on tokio's timer (`wait_async.rs`).
pub(crate) struct Waiting {
    mode: Mode,
    /// Set at the first stall under `OnClockBehind::Wait`.
    deadline: Option<Deadline>,
    /// Whether a pause was decided yet (the `waits` counter counts calls).
    waited: bool,
    /// When the first pause began, if an event hook wants to hear how long
    /// the call waited.
    since: Option<Instant>,
}

impl Waiting {
    /// A call that waits in `mode`, whose first attempt stalled already
    /// (and was noted by [`poll`]).
    pub(crate) fn new(mode: Mode) -> Waiting {
        Waiting {
            mode,
            deadline: None,
            waited: false,
            since: None,
        }
    }

    /// The call ends (with IDs or an error): tells the event hook how long
    /// it waited, if it did.
    pub(crate) fn finish<R: Reserve + ?Sized>(self, r: &R) {
        if let (Some(since), Some(c)) = (self.since, r.counters()) {
            c.events.emit(crate::Event::Waited {
                waited: since.elapsed(),
            });
        }
    }

    /// How long to pause after `stall` before the next attempt, or the
    /// error the call returns.
    pub(crate) fn pause<R: Reserve + ?Sized>(
        &mut self,
        r: &R,
        stall: Stall,
    ) -> Result<Duration, GenerateError> {
        let plan = r.plan();
        let pause = match stall {
            Stall::Expired => return Err(plan.error(stall)),
            Stall::Exhausted { retry_ms } => {
                if plan.on_exhausted == OnExhausted::Error {
                    return Err(plan.error(stall));
                }
                Duration::from_millis(retry_ms)
            }
            Stall::Behind { behind_ms } => {
                let OnClockBehind::Wait { max } = plan.on_behind else {
                    return Err(plan.error(stall));
                };
                // The clock catches up at the rate of real time, so a gap
                // wider than the allowed wait cannot close in time (unless
                // someone steps the clock forward again, which we do not
                // bet on).
                let behind = Duration::from_millis(behind_ms);
                if behind > max {
                    return Err(plan.error(stall));
                }
                let deadline = self.deadline.get_or_insert_with(|| Deadline::after(max));
                if deadline.has_passed() {
                    return Err(plan.error(stall));
                }
                behind.min(deadline.remaining())
            }
            Stall::Unreserved { clock, tick } => {
                // The writer was asked for it; wait for the save unless it is
                // failing and the caller wants to hear about that.
                if let (Mode::Report, GenerateError::Storage(e)) = (self.mode, plan.error(stall)) {
                    return Err(GenerateError::Storage(e));
                }
                match plan.reservation() {
                    Some(reservation) => {
                        reservation.request(clock, tick);
                        // The writer retries a failed save after 10 ms or
                        // more: trying every other millisecond is plenty.
                        Duration::from_millis(if reservation.is_failing() { 2 } else { 1 })
                    }
                    None => Duration::from_millis(1),
                }
            }
            // The lease keeper reopens the fence after a fresh claim, which
            // takes a round trip to the store.
            Stall::Fenced if self.mode == Mode::Report => return Err(plan.error(stall)),
            Stall::Fenced => Duration::from_millis(2),
        };
        if !self.waited {
            self.waited = true;
            if let Some(c) = r.counters() {
                if c.events.is_on() {
                    self.since = Some(Instant::now());
                }
                c.record_wait();
            }
        }
        Ok(pause)
    }
}

/// Waits through the stalls `mode` waits for, by pausing the thread.
#[cold]
#[inline(never)]
fn wait<R: Reserve + ?Sized>(
    r: &R,
    n: u64,
    mut stall: Stall,
    mode: Mode,
) -> Result<Step, GenerateError> {
    note_stall(r, stall);
    let mut waiting = Waiting::new(mode);
    let backoff = Backoff::new();
    let outcome = loop {
        match waiting.pause(r, stall) {
            Ok(duration) => pause(&backoff, duration),
            Err(e) => break Err(e),
        }
        match r.poll(n) {
            Ok(step) => break Ok(step),
            Err(next) => stall = next,
        }
    };
    waiting.finish(r);
    outcome
}

/// The longest sleep between two looks at the clock: a wait worked out from
/// a clock far behind (set back by mistake) ends soon after it is corrected.
pub(crate) const LONGEST_SLEEP: Duration = Duration::from_millis(100);

/// Pauses the thread part of the way towards a condition expected in about
/// `pause`: sleep through all but the last millisecond (in slices of at
/// most [`LONGEST_SLEEP`]), then spin and yield, then nap in short steps,
/// so a waiting thread neither burns a core nor oversleeps a tick by much.
fn pause(backoff: &Backoff, pause: Duration) {
    const MS: Duration = Duration::from_millis(1);
    if pause >= 2 * MS {
        primitive::sleep((pause - MS).min(LONGEST_SLEEP));
    } else if !backoff.is_completed() {
        backoff.snooze();
    } else {
        primitive::sleep(Duration::from_micros(50));
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::generator::Generator;
    use crate::layout::Layout;

    /// The decisions both the blocking and the async calls follow: what each
    /// stall costs in each mode.
    #[test]
    fn each_stall_pauses_or_reports_as_the_mode_and_policies_say() {
        let ms = Duration::from_millis;
        let layout = Layout::twitter();
        let g = Generator::builder(layout.clone())
            .single_node()
            .clock(ManualClock::new(1_700_000_000_000))
            .on_clock_behind(OnClockBehind::Wait { max: ms(50) })
            .counters(true)
            .build()
            .unwrap();
        let core = &g.core;
        let unreserved = Stall::Unreserved { clock: 0, tick: 1 };
        for (stall, waits, reports) in [
            (Stall::Fenced, Ok(ms(2)), Err(GenerateError::Fenced)),
            (unreserved, Ok(ms(1)), Ok(ms(1))),
            (Stall::Exhausted { retry_ms: 3 }, Ok(ms(3)), Ok(ms(3))),
            (Stall::Behind { behind_ms: 20 }, Ok(ms(20)), Ok(ms(20))),
            (
                Stall::Behind { behind_ms: 60 },
                Err(GenerateError::ClockBehind { behind: ms(60) }),
                Err(GenerateError::ClockBehind { behind: ms(60) }),
            ),
            (
                Stall::Expired,
                Err(GenerateError::Expired {
                    last_ms: layout.last_ms(),
                }),
                Err(GenerateError::Expired {
                    last_ms: layout.last_ms(),
                }),
            ),
        ] {
            // A behind pause never outlasts what is left of the wait.
            let short = |d: Duration| d.min(ms(50));
            let got = Waiting::new(Mode::Wait).pause(core, stall).map(short);
            assert_eq!(got, waits, "{stall:?}, waiting");
            let got = Waiting::new(Mode::Report).pause(core, stall).map(short);
            assert_eq!(got, reports, "{stall:?}, reporting");
        }
        // One wait counted per call, however many pauses it takes.
        let waits = g.stats().unwrap().waits;
        let mut waiting = Waiting::new(Mode::Wait);
        for _ in 0..3 {
            waiting.pause(core, Stall::Fenced).unwrap();
        }
        assert_eq!(g.stats().unwrap().waits, waits + 1);
    }
}
