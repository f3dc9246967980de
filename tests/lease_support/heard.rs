//! A lease's events as a generator's hook hears them, with a gate that
//! holds the keeper at a fence.

use super::*;

/// The lease events a generator's hook heard, in order, and a gate: while
/// it is shut, the hook holds the keeper thread when it hears `Fenced`
/// (after the keeper closed the fence, before it claims afresh), so the
/// test sees the generator as the lapse left it.
#[derive(Default)]
pub struct Heard {
    state: Mutex<HeardState>,
    changed: Condvar,
}

#[derive(Default)]
struct HeardState {
    events: Vec<Event>,
    /// When each was heard.
    times: Vec<Instant>,
    gate_open: bool,
}

impl Heard {
    /// A log whose gate is open (the hook never holds the keeper).
    #[cfg_attr(
        not(feature = "redis"),
        allow(
            dead_code,
            reason = "lease.rs's Redis half and lease_etcd_cluster.rs's"
        )
    )]
    pub fn open() -> Arc<Heard> {
        let heard = Arc::new(Heard::default());
        heard.open_gate();
        heard
    }

    /// A log whose gate holds the keeper at `Fenced` until
    /// [`Heard::open_gate`].
    pub fn gated() -> Arc<Heard> {
        Arc::new(Heard::default())
    }

    /// The hook: keeps lease events, and holds the keeper at `Fenced`
    /// while the gate is shut.
    pub fn hear(&self, event: &Event) {
        if !matches!(
            event,
            Event::LeaseClaimed { .. }
                | Event::LeaseExtended { .. }
                | Event::LeaseRenewalFailed { .. }
                | Event::Fenced { .. }
                | Event::LeaseReopened { .. }
                | Event::LeaseRotated { .. }
        ) {
            return;
        }
        let mut state = self.lock();
        state.events.push(event.clone());
        state.times.push(Instant::now());
        self.changed.notify_all();
        if matches!(event, Event::Fenced { .. }) {
            while !state.gate_open {
                state = self
                    .changed
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
    }

    /// (A test that failed while holding it leaves it poisoned; the gate
    /// must still open.)
    fn lock(&self) -> std::sync::MutexGuard<'_, HeardState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn open_gate(&self) {
        self.lock().gate_open = true;
        self.changed.notify_all();
    }

    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// The events heard, each with when.
    #[allow(dead_code, reason = "lease_etcd_cluster.rs's, not lease.rs's")]
    pub fn timed_events(&self) -> Vec<(Instant, Event)> {
        let state = self.lock();
        state
            .times
            .iter()
            .copied()
            .zip(state.events.clone())
            .collect()
    }

    /// Waits until the events heard satisfy `done` (at most `within`, then
    /// panics naming `what`); returns them.
    pub fn wait_for(
        &self,
        within: Duration,
        what: &str,
        mut done: impl FnMut(&[Event]) -> bool,
    ) -> Vec<Event> {
        let begun = Instant::now();
        let mut state = self.lock();
        while !done(&state.events) {
            let left = within.checked_sub(begun.elapsed()).unwrap_or_else(|| {
                panic!("{what}: not within {within:?}; heard {:?}", state.events)
            });
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        state.events.clone()
    }
}

/// Opens a gate when dropped: declared after the generator, it is dropped
/// first, so a failing test does not leave the keeper held while the
/// generator's drop waits for it.
pub struct OpenOnDrop(pub Arc<Heard>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open_gate();
    }
}

pub fn is_fenced(e: &Event) -> bool {
    matches!(e, Event::Fenced { .. })
}

pub fn is_renewal_failure(e: &Event) -> bool {
    matches!(e, Event::LeaseRenewalFailed { .. })
}

pub fn is_extension(e: &Event) -> bool {
    matches!(e, Event::LeaseExtended { .. })
}
