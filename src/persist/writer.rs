//! The writer thread: saves a new mark when one is due (a caller asked for
//! a tick past the ceiling, or half the window is used), then raises the
//! ceiling it covers; on the generator's drop, saves the exact last mark.

use std::sync::Arc;
use std::time::Duration;

use super::reservation::Reservation;
use super::{SavedState, StateStore, guarded, nonzero};
use crate::error::StateError;
use crate::events::{Event, Events};
use crate::primitive::Ordering;
use crate::primitive::thread::{self, JoinHandle};

/// The running writer: owned by the generator, which stops it on drop.
pub(crate) struct Persister {
    reservation: Arc<Reservation>,
    thread: Option<JoinHandle<()>>,
}

impl Persister {
    /// Stops the writer after it saves the exact final state: `tick` is the
    /// last timestamp issued on `clock` (nothing is issued any more).
    pub(crate) fn finish(mut self, clock: u64, tick: u64) {
        self.reservation.latest.store(tick, Ordering::Relaxed);
        self.reservation.active.store(clock, Ordering::Relaxed);
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.reservation.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for Persister {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The background writer: saves a new mark when one is due, then raises the
/// ceiling it covers.
pub(super) struct Writer {
    pub(super) reservation: Arc<Reservation>,
    pub(super) store: Box<dyn StateStore>,
    pub(super) template: SavedState,
    /// The saved marks, per clock id.
    pub(super) marks: Vec<u64>,
    pub(super) poll: Duration,
    /// The layout's time unit (ms).
    pub(super) unit: u64,
    /// Ticks each new mark reaches ahead at least, for the time the save
    /// itself takes ([`SaveTimer::slack`]).
    pub(super) slack: u64,
    /// The generator's event hook, told of failed and recovered saves.
    pub(super) events: Events,
}

/// Times a save, so that the next mark reaches at least as far ahead as a
/// save takes (twice over).
///
/// Without it a store slower than the window livelocks generation: the
/// writer reserves the tick a caller asked for plus the window, the save
/// outlasts the window, the clock has passed the new mark by the time it is
/// published, the caller asks again, and nothing is ever issued.
pub(super) struct SaveTimer {
    #[cfg(not(flakeid_loom))]
    began: std::time::Instant,
}

impl SaveTimer {
    pub(super) fn start() -> SaveTimer {
        SaveTimer {
            #[cfg(not(flakeid_loom))]
            began: std::time::Instant::now(),
        }
    }

    /// Twice the save's duration in ticks (rounded up), at most the larger
    /// of the window and one second: a stalled save must not push later
    /// marks far ahead (a crash forfeits the reserved ticks). 0 under loom,
    /// whose models need the same marks in every run.
    pub(super) fn slack(&self, unit_ms: u64, window: u64) -> u64 {
        #[cfg(flakeid_loom)]
        let _ = self;
        #[cfg(flakeid_loom)]
        return {
            let _ = (unit_ms, window);
            0
        };
        #[cfg(not(flakeid_loom))]
        {
            let micros = u64::try_from(self.began.elapsed().as_micros()).unwrap_or(u64::MAX);
            let ticks = micros
                .saturating_mul(2)
                .div_ceil(unit_ms.saturating_mul(1000));
            ticks.min(window.max(1000_u64.div_ceil(unit_ms)))
        }
    }
}

impl Writer {
    /// Starts the writer on a thread of its own, which requests wake.
    pub(super) fn spawn(self) -> Result<Persister, StateError> {
        let reservation = self.reservation.clone();
        let thread = thread::Builder::new()
            .name("flakeid-persist".into())
            .spawn(move || self.run())
            .map_err(|e| StateError::from_io("spawn the flakeid-persist thread", e))?;
        let _ = reservation.writer.set(thread.thread().clone());
        Ok(Persister {
            reservation,
            thread: Some(thread),
        })
    }

    fn run(mut self) {
        let r = self.reservation.clone();
        let mut retry = Duration::from_millis(10);
        loop {
            if r.stop.load(Ordering::Acquire) {
                self.save_final();
                return;
            }
            let Some(changes) = r.due(self.slack) else {
                thread::park_timeout(self.poll);
                continue;
            };
            let mut marks = self.marks.clone();
            for &(c, m) in &changes {
                marks[c] = marks[c].max(m);
            }
            let timer = SaveTimer::start();
            match self.save(&marks, r.active.load(Ordering::Relaxed)) {
                Ok(()) => {
                    self.slack = timer.slack(self.unit, r.window);
                    for &(c, _) in &changes {
                        r.ceilings[c].store(marks[c], Ordering::Release);
                    }
                    self.marks = marks;
                    if r.is_failing() {
                        r.set_failure(None);
                        self.events.emit(Event::SaveRecovered);
                    }
                    retry = Duration::from_millis(10);
                }
                Err(e) => {
                    self.events.emit(Event::SaveFailed { error: e.clone() });
                    r.set_failure(Some(e));
                    thread::park_timeout(retry);
                    retry = (retry * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    fn save(&mut self, marks: &[u64], clock_id: u64) -> Result<(), StateError> {
        self.template.marks = nonzero(marks);
        self.template.clock_id = clock_id;
        let state = self.template.encode();
        let store = &mut self.store;
        guarded(|| store.save(&state))
    }

    /// On a clean stop, lowers the active clock id's mark to the last
    /// timestamp actually issued, so a prompt restart need not wait out the
    /// reserved window. If this save fails, the reserved mark stands.
    fn save_final(&mut self) {
        let r = &self.reservation;
        let active = r.active.load(Ordering::Relaxed) as usize;
        let last = r.latest.load(Ordering::Relaxed);
        let mut marks = self.marks.clone();
        if let Some(m) = marks.get_mut(active) {
            *m = last.max(r.floors[active]).min(*m);
        }
        let _ = self.save(&marks, active as u64);
    }
}
