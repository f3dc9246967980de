//! How a call that waits treats a stall: how long to pause before the next
//! attempt, or the error it gives up with. The blocking calls pause the
//! thread for that long (`Core::wait`), the async ones sleep on tokio's
//! timer (`wait_async.rs`); both follow these decisions.

use std::time::{Duration, Instant};

use super::plan::{Plan, Stall};
use super::policy::{OnClockBehind, OnExhausted};
use super::telemetry::Telemetry;
use crate::error::GenerateError;
use crate::primitive::Deadline;

/// How a call treats conditions that outside help may clear (a state store
/// failing to save, a lapsed lease): `Report` returns them (`try_next_id`),
/// `Wait` waits them out (`next_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Report,
    Wait,
}

/// The one place that decides, for a call that waits, how long to pause
/// after a stall before trying again, or that the call gives up with an
/// error.
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
    /// (and was noted by `Core::note_stall`).
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
    pub(crate) fn finish(self, telemetry: Option<&Telemetry>) {
        if let (Some(since), Some(c)) = (self.since, telemetry) {
            c.events.emit(crate::events::Event::Waited {
                waited: since.elapsed(),
            });
        }
    }

    /// How long to pause after `stall` before the next attempt, or the
    /// error the call returns.
    pub(crate) fn pause(
        &mut self,
        plan: &Plan,
        telemetry: Option<&Telemetry>,
        stall: Stall,
    ) -> Result<Duration, GenerateError> {
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
            if let Some(c) = telemetry {
                if c.events.is_on() {
                    self.since = Some(Instant::now());
                }
                c.record_wait();
            }
        }
        Ok(pause)
    }
}

/// The longest sleep between two looks at the clock: a wait worked out from
/// a clock far behind (set back by mistake) ends soon after it is corrected.
pub(crate) const LONGEST_SLEEP: Duration = Duration::from_millis(100);

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
        let (plan, telemetry) = (g.core.plan(), g.core.telemetry());
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
            let got = Waiting::new(Mode::Wait)
                .pause(plan, telemetry, stall)
                .map(short);
            assert_eq!(got, waits, "{stall:?}, waiting");
            let got = Waiting::new(Mode::Report)
                .pause(plan, telemetry, stall)
                .map(short);
            assert_eq!(got, reports, "{stall:?}, reporting");
        }
        // One wait counted per call, however many pauses it takes.
        let waits = g.stats().unwrap().waits;
        let mut waiting = Waiting::new(Mode::Wait);
        for _ in 0..3 {
            waiting.pause(plan, telemetry, Stall::Fenced).unwrap();
        }
        assert_eq!(g.stats().unwrap().waits, waits + 1);
    }
}
