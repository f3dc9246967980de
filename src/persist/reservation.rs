//! The reservation: the timestamps a generator may enter, per clock id, as
//! the writer has saved them, and the generator's requests for more.

use std::sync::OnceLock;

use crate::error::StateError;
use crate::primitive::thread::Thread;
use crate::primitive::{AtomicBool, AtomicU64, Mutex, Ordering, lock};

/// The timestamps a generator may issue, per clock id, shared between the
/// generator (which reads it when entering a tick) and the writer thread
/// (which raises it after each durable save).
pub(crate) struct Reservation {
    /// Highest timestamp durably reserved, per clock id. Only ever raised,
    /// and only after the save that covers it returned.
    pub(super) ceilings: Box<[AtomicU64]>,
    /// Highest timestamp a predecessor may have issued, per clock id.
    pub(super) floors: Box<[u64]>,
    /// Highest timestamp a waiting thread asked for, per clock id.
    pub(super) wanted: Box<[AtomicU64]>,
    /// The tick and clock id most recently entered: a hint for renewing
    /// ahead of use.
    pub(super) latest: AtomicU64,
    pub(super) active: AtomicU64,
    pub(super) window: u64,
    /// The layout's last timestamp: the highest mark ever needed.
    pub(super) last: u64,
    pub(super) failing: AtomicBool,
    /// The last save error; read only while `failing`.
    pub(super) error: Mutex<Option<StateError>>,
    pub(super) writer: OnceLock<Thread>,
    pub(super) stop: AtomicBool,
}

impl Reservation {
    /// Whether `tick` on `clock` is durably reserved.
    #[inline]
    pub(crate) fn covers(&self, clock: u64, tick: u64) -> bool {
        self.ceilings
            .get(clock as usize)
            .is_some_and(|c| tick <= c.load(Ordering::Acquire))
    }

    /// Whether no predecessor can have issued `tick` on `clock`.
    #[inline]
    pub(crate) fn is_fresh(&self, clock: u64, tick: u64) -> bool {
        self.floors.get(clock as usize).is_some_and(|&f| tick > f)
    }

    /// Notes that a generator entered `tick` on `clock` (once per tick).
    #[inline]
    pub(crate) fn entered(&self, clock: u64, tick: u64) {
        self.latest.store(tick, Ordering::Relaxed);
        if self.active.load(Ordering::Relaxed) != clock {
            self.active.store(clock, Ordering::Relaxed);
        }
    }

    /// Asks the writer to reserve `tick` on `clock`. Only a request for
    /// more than was asked before wakes it: callers waiting for a save repeat
    /// theirs, and a writer backing off after a failed save must not be
    /// hurried into retrying at their pace.
    pub(crate) fn request(&self, clock: u64, tick: u64) {
        let Some(wanted) = self.wanted.get(clock as usize) else {
            return;
        };
        if wanted.fetch_max(tick, Ordering::Relaxed) < tick
            && let Some(writer) = self.writer.get()
        {
            writer.unpark();
        }
    }

    /// Whether the last save failed.
    pub(crate) fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }

    /// The save error, while saving fails.
    pub(crate) fn failure(&self) -> Option<StateError> {
        if self.is_failing() {
            lock(&self.error).clone()
        } else {
            None
        }
    }

    /// The new marks a save should make, or `None` if none is due. Marks
    /// stop at the layout's last timestamp: no ID needs more.
    /// `slack`: ticks a new mark reaches ahead at least, for the time a save
    /// takes (the writer measures it); the window if that is more.
    pub(super) fn due(&self, slack: u64) -> Option<Vec<(usize, u64)>> {
        let ahead = self.window.max(slack);
        let mut changes = Vec::new();
        for (c, (wanted, ceiling)) in self.wanted.iter().zip(self.ceilings.iter()).enumerate() {
            let (w, ceil) = (
                wanted.load(Ordering::Relaxed),
                ceiling.load(Ordering::Relaxed),
            );
            if w > ceil {
                changes.push((c, w.saturating_add(ahead).min(self.last)));
            }
        }
        let active = self.active.load(Ordering::Relaxed) as usize;
        let latest = self.latest.load(Ordering::Relaxed);
        if let Some(ceiling) = self.ceilings.get(active) {
            // Ahead of use: renew once half the window is consumed (unless
            // the mark already stands at the layout's end).
            let ceiling = ceiling.load(Ordering::Relaxed);
            let mark = latest.saturating_add(ahead).min(self.last);
            if latest.saturating_add(self.window / 2) >= ceiling && mark > ceiling {
                match changes.iter_mut().find(|(c, _)| *c == active) {
                    Some((_, m)) => *m = (*m).max(mark),
                    None => changes.push((active, mark)),
                }
            }
        }
        (!changes.is_empty()).then_some(changes)
    }

    pub(super) fn set_failure(&self, error: Option<StateError>) {
        let failing = error.is_some();
        *lock(&self.error) = error;
        self.failing.store(failing, Ordering::Release);
    }
}
