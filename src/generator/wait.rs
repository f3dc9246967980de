//! Waiting through stalls as the policies say, shared by both generators.

use std::time::Duration;

use super::IdBatch;
use super::plan::{Plan, Stall, Step};
use super::policy::{OnClockBehind, OnExhausted};
use super::stats::Counters;
use crate::error::GenerateError;
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
    /// One attempt that never waits: a step, or why none is possible now.
    fn poll(&self, n: u64) -> Result<Step, Stall>;

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
    match r.poll(1) {
        Ok(step) => Id::from_u64(step.first),
        Err(stall) => next_id_after(r, stall),
    }
}

#[cold]
#[inline(never)]
fn next_id_after<R: Reserve + ?Sized>(r: &R, stall: Stall) -> Id {
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

fn note_stall<R: Reserve + ?Sized>(r: &R, stall: Stall) {
    match (r.counters(), stall) {
        (Some(c), Stall::Behind { .. }) => c.record_behind(),
        (_, Stall::Unreserved { clock, tick }) => {
            if let Some(reservation) = r.plan().reservation() {
                reservation.request(clock, tick);
            }
        }
        _ => {}
    }
}

#[cold]
#[inline(never)]
fn wait<R: Reserve + ?Sized>(
    r: &R,
    n: u64,
    mut stall: Stall,
    mode: Mode,
) -> Result<Step, GenerateError> {
    note_stall(r, stall);
    let plan = r.plan();
    let backoff = Backoff::new();
    let mut deadline = None;
    let mut waited = false;
    loop {
        let hint_ms = match stall {
            Stall::Expired => return Err(plan.error(stall)),
            Stall::Exhausted { retry_ms } => {
                if plan.on_exhausted == OnExhausted::Error {
                    return Err(plan.error(stall));
                }
                retry_ms
            }
            Stall::Behind { behind_ms } => {
                let OnClockBehind::Wait { max } = plan.on_behind else {
                    return Err(plan.error(stall));
                };
                // The clock catches up at the rate of real time, so a gap wider
                // than the allowed wait cannot close in time (unless someone
                // steps the clock forward again, which we do not bet on).
                if Duration::from_millis(behind_ms) > max {
                    return Err(plan.error(stall));
                }
                let deadline = deadline.get_or_insert_with(|| Deadline::after(max));
                if deadline.has_passed() {
                    return Err(plan.error(stall));
                }
                behind_ms
            }
            Stall::Unreserved { clock, tick } => {
                // The writer was asked for it; wait for the save unless it is
                // failing and the caller wants to hear about that.
                if let (Mode::Report, GenerateError::Storage(e)) = (mode, plan.error(stall)) {
                    return Err(GenerateError::Storage(e));
                }
                match plan.reservation() {
                    Some(reservation) => {
                        reservation.request(clock, tick);
                        // The writer retries a failed save after 10 ms or
                        // more: trying every millisecond is plenty.
                        if reservation.is_failing() { 2 } else { 1 }
                    }
                    None => 1,
                }
            }
            // The lease keeper reopens the fence after a fresh claim.
            Stall::Fenced if mode == Mode::Report => return Err(plan.error(stall)),
            Stall::Fenced => 2,
        };
        if !waited {
            waited = true;
            if let Some(c) = r.counters() {
                c.record_wait();
            }
        }
        pause(&backoff, hint_ms);
        match r.poll(n) {
            Ok(step) => return Ok(step),
            Err(next) => stall = next,
        }
    }
}

/// The longest sleep between two looks at the clock: a wait worked out from
/// a clock far behind (set back by mistake) ends soon after it is corrected.
pub(crate) const LONGEST_SLEEP: Duration = Duration::from_millis(100);

/// Waits part of the way towards a condition expected in about `hint_ms`:
/// sleep through all but the last millisecond (in slices of at most
/// [`LONGEST_SLEEP`]), then spin and yield, then nap in short steps, so a
/// waiting thread neither burns a core nor oversleeps a tick by much.
fn pause(backoff: &Backoff, hint_ms: u64) {
    if hint_ms >= 2 {
        primitive::sleep(Duration::from_millis(hint_ms - 1).min(LONGEST_SLEEP));
    } else if !backoff.is_completed() {
        backoff.snooze();
    } else {
        primitive::sleep(Duration::from_micros(50));
    }
}
