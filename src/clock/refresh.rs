//! The refresh thread: one per process, named `flakeid-clock`, that keeps a
//! clock's cached reading fresh while some clock wants it and parks (using
//! no CPU) while none does. What it does on each wake-up, and how long it
//! then sleeps, is the clock's business ([`MonotonicClock`](super::MonotonicClock)
//! hands it a function); this file holds only the thread's life: started
//! once, counted claims on it, parked and woken.
//!
//! Under loom there is no such thread: statics would outlive a model.

#[cfg(not(flakeid_loom))]
use std::sync::OnceLock;
#[cfg(not(flakeid_loom))]
use std::time::Duration;

#[cfg(not(flakeid_loom))]
use crate::primitive::process;

/// The thread and the number of clocks that want it running.
#[cfg(not(flakeid_loom))]
pub(super) struct RefreshThread {
    /// Clocks that want the cached reading fresh; the thread parks at 0.
    users: process::AtomicUsize,
    /// The refresh thread, once started (`None` if it could not be).
    thread: OnceLock<Option<std::thread::Thread>>,
}

#[cfg(not(flakeid_loom))]
impl RefreshThread {
    /// No thread yet, and no clock that wants one.
    pub(super) const fn new() -> RefreshThread {
        RefreshThread {
            users: process::AtomicUsize::new(0),
            thread: OnceLock::new(),
        }
    }

    /// Counts one more clock that wants the cached reading fresh, starting or
    /// waking the thread; `None` if there is no thread. The first call
    /// starts it, running `refresh` (which takes a precise reading and says
    /// how long to sleep before the next) each time it wakes.
    pub(super) fn register(
        &'static self,
        refresh: impl Fn() -> Duration + Send + 'static,
    ) -> Option<Refresh> {
        let thread = self.thread.get_or_init(|| {
            std::thread::Builder::new()
                .name("flakeid-clock".into())
                .spawn(move || self.run(refresh))
                .ok()
                .map(|handle| handle.thread().clone())
        });
        let thread = thread.as_ref()?;
        if self.users.fetch_add(1, process::Ordering::AcqRel) == 0 {
            thread.unpark();
        }
        Some(Refresh(self))
    }

    /// The refresh thread: a precise reading just after each millisecond
    /// begins while a clock wants one, parked otherwise.
    fn run(&self, refresh: impl Fn() -> Duration) {
        loop {
            if self.users.load(process::Ordering::Acquire) == 0 {
                // A registration after this load unparks, and an unpark
                // before the park makes it return at once: none is missed.
                std::thread::park();
                continue;
            }
            std::thread::park_timeout(refresh());
        }
    }

    /// How many clocks want the thread running.
    #[cfg(test)]
    pub(super) fn users(&self) -> usize {
        self.users.load(process::Ordering::Relaxed)
    }
}

/// One clock's claim on the process's refresh thread.
#[cfg(not(flakeid_loom))]
pub(super) struct Refresh(&'static RefreshThread);

/// Never constructed under loom (no process-wide thread there).
#[cfg(flakeid_loom)]
#[derive(Clone)]
pub(super) enum Refresh {}

#[cfg(not(flakeid_loom))]
impl Clone for Refresh {
    fn clone(&self) -> Self {
        self.0.users.fetch_add(1, process::Ordering::AcqRel);
        Refresh(self.0)
    }
}

#[cfg(not(flakeid_loom))]
impl Drop for Refresh {
    fn drop(&mut self) {
        self.0.users.fetch_sub(1, process::Ordering::AcqRel);
    }
}
