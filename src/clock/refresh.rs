//! The refresh thread: one per process, named `flakeid-clock`, that keeps a
//! clock's cached reading fresh while the cached reading is in use, rests
//! (parked, using no CPU) while no clock reads the precise clock, and parks
//! while no clock wants it at all. What it does on each wake-up, and how long
//! it then sleeps, is the clock's business ([`MonotonicClock`](super::MonotonicClock)
//! hands it a function); when it rests and who wakes it is [`Served`]'s;
//! this file holds the thread's life: started once per process (a forked
//! child starts its own), counted claims on it, parked and woken.
//!
//! Under loom there is no such thread: statics would outlive a model. The
//! loom models drive [`Served`] itself.

#[cfg(not(flakeid_loom))]
use std::sync::OnceLock;
#[cfg(not(flakeid_loom))]
use std::time::Duration;

#[cfg(not(flakeid_loom))]
use super::served::Served;
#[cfg(not(flakeid_loom))]
use crate::primitive::process;

/// Milliseconds with no precise reading asked for, after which the thread
/// rests. Longer than a tick of any common layout (Sonyflake's is 10 ms),
/// so a generator under load, which reads the precise clock once per tick,
/// keeps it awake; short enough that a pause between bursts costs the
/// thread about 100 wake-ups, not one per millisecond.
#[cfg(not(flakeid_loom))]
const REST_AFTER_MS: u64 = 100;

/// The thread, the number of clocks that want it running, and the reading
/// it serves them.
///
/// One per process. A forked child has a copy of its parent's memory, this
/// included, but not the thread: `fork` copies only the calling thread. A
/// clock registering with that copy would be served a reading nothing
/// refreshes. So the clock of each process registers with a refresh thread
/// made in that process, found by [`in_this_process`](Self::in_this_process).
#[cfg(not(flakeid_loom))]
pub(super) struct RefreshThread {
    /// The process that made this, and the only one the thread runs in.
    pid: u32,
    /// Clocks that want the cached reading fresh; the thread parks at 0.
    users: process::AtomicUsize,
    /// The refresh thread, once started (`None` if it could not be).
    thread: OnceLock<Option<std::thread::Thread>>,
    /// The cached reading, and when the thread rests.
    served: Served,
    /// The refresh thread of the first process forked from this one that
    /// asked for one (in that process's memory): the next link of the
    /// chain [`in_this_process`](Self::in_this_process) walks.
    forked: OnceLock<Box<RefreshThread>>,
}

#[cfg(not(flakeid_loom))]
impl RefreshThread {
    /// No thread yet, and no clock that wants one.
    pub(super) fn new() -> RefreshThread {
        RefreshThread::resting_after(REST_AFTER_MS)
    }

    /// [`new`](RefreshThread::new), the thread resting after `ms` without a
    /// precise reading asked for instead of [`REST_AFTER_MS`].
    pub(super) fn resting_after(ms: u64) -> RefreshThread {
        RefreshThread::made_in(std::process::id(), ms)
    }

    /// No thread yet, for the process `pid`, resting after `ms`.
    fn made_in(pid: u32, ms: u64) -> RefreshThread {
        RefreshThread {
            pid,
            users: process::AtomicUsize::new(0),
            thread: OnceLock::new(),
            served: Served::new(ms),
            forked: OnceLock::new(),
        }
    }

    /// The refresh thread of the calling process: this one in the process
    /// that made it; in a process forked from that one (at any depth), one
    /// made there, the first time it is asked for. Its pid is a system
    /// call: for building a clock, never for a reading.
    ///
    /// Each process that asks finds the links its ancestors made (copied
    /// into its memory by the forks) and adds its own at the end.
    pub(super) fn in_this_process(&'static self) -> &'static RefreshThread {
        self.in_process(std::process::id())
    }

    /// [`in_this_process`](Self::in_this_process) as if the calling process
    /// had the pid `pid`.
    fn in_process(&'static self, pid: u32) -> &'static RefreshThread {
        let mut thread = self;
        while thread.pid != pid {
            thread = thread
                .forked
                .get_or_init(|| Box::new(RefreshThread::made_in(pid, self.served.rest_after_ms())));
        }
        thread
    }

    /// The cached reading the thread serves.
    pub(super) fn served(&self) -> &Served {
        &self.served
    }

    /// Counts one more clock that wants the cached reading fresh, serving it
    /// `ms` (a precise reading just taken) and starting or waking the
    /// thread; `None` if there is no thread. The first call starts it,
    /// running `refresh` (which takes a precise reading, and says how long
    /// to sleep before the next) each time it wakes.
    pub(super) fn register(
        &'static self,
        ms: u64,
        refresh: impl Fn() -> (u64, Duration) + Send + 'static,
    ) -> Option<Refresh> {
        let thread = self.thread.get_or_init(|| {
            std::thread::Builder::new()
                .name("flakeid-clock".into())
                .spawn(move || self.run(refresh))
                .ok()
                .map(|handle| handle.thread().clone())
        });
        let thread = thread.as_ref()?;
        let first = self.users.fetch_add(1, process::Ordering::AcqRel) == 0;
        // A new clock is about to be read: its cached reading is a real one
        // from the start, and the thread refreshes it.
        if self.served.wake_now(ms) || first {
            thread.unpark();
        }
        Some(Refresh(self))
    }

    /// The refresh thread: a precise reading just after each millisecond
    /// begins while the cached reading is in use; resting once no precise
    /// reading was asked for in [`REST_AFTER_MS`], until a reader wakes it;
    /// parked while no clock wants it.
    fn run(&self, refresh: impl Fn() -> (u64, Duration)) {
        let mut quiet_since = None;
        loop {
            if self.users.load(process::Ordering::Acquire) == 0 {
                // A registration after this load unparks, and an unpark
                // before the park makes it return at once: none is missed.
                std::thread::park();
                quiet_since = None;
                continue;
            }
            let (ms, sleep) = refresh();
            if self.served.refreshed(ms, &mut quiet_since) {
                // The reader that finds the reading resting unparks; an
                // unpark before the park makes it return at once.
                while self.served.is_resting() && self.users.load(process::Ordering::Acquire) > 0 {
                    std::thread::park();
                }
                continue;
            }
            std::thread::park_timeout(sleep);
        }
    }

    /// Wakes the thread (a reader found it resting).
    fn unpark(&self) {
        if let Some(Some(thread)) = self.thread.get() {
            thread.unpark();
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

impl Refresh {
    /// After a precise reading of `ms` by a clock holding this claim: notes
    /// it, raises the cached reading, and wakes the thread if it rests;
    /// returns the reading to use ([`Served::read`]).
    #[inline]
    pub(super) fn read(&self, ms: u64) -> u64 {
        #[cfg(not(flakeid_loom))]
        return self.0.served.read(ms, || self.0.unpark());
        #[cfg(flakeid_loom)]
        {
            let _ = ms;
            match *self {}
        }
    }
}

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

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_process_forked_from_the_maker_finds_a_thread_of_its_own() {
        // Made in the process with pid 100, resting after 20 ms.
        let parent: &'static RefreshThread = Box::leak(Box::new(RefreshThread::made_in(100, 20)));
        assert!(std::ptr::eq(parent.in_process(100), parent));
        // A child (pid 101) forked from it makes its own, once, alike.
        let child = parent.in_process(101);
        assert!(!std::ptr::eq(child, parent));
        assert_eq!((child.pid, child.served.rest_after_ms()), (101, 20));
        assert!(std::ptr::eq(parent.in_process(101), child));
        // The child's grandchild (pid 102) inherits both links and adds a
        // third; the parent's own is still its own.
        let grandchild = parent.in_process(102);
        assert_eq!(grandchild.pid, 102);
        assert!(std::ptr::eq(child.in_process(102), grandchild));
        assert!(std::ptr::eq(parent.in_process(100), parent));
        // None of them started a thread: that is the clock's registration.
        assert!(
            [parent, child, grandchild]
                .iter()
                .all(|t| t.thread.get().is_none())
        );
    }
}
