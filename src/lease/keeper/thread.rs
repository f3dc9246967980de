//! The keeper thread: makes the store, claims the first node id within the
//! connect timeout, then steps [`Run`] and parks until its next step is due
//! or a generator wakes it, and on the generator's drop records the last
//! timestamp and releases.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{Run, Settings, Store};
use crate::error::LeaseError;
use crate::fence::{Fence, Keeper};

/// How the keeper thread is told to stop.
#[derive(Default)]
struct Stop {
    /// `Some(last)` once asked; `last` is the generator's final node bits and
    /// timestamp, when known.
    asked: Option<Option<(u64, u64)>>,
}

/// The keeper thread of one generator.
pub(crate) struct KeeperThread {
    stop: Arc<Mutex<Stop>>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the keeper thread, which makes the store with `make_store`,
/// claims a node id (retrying while the server is unreachable, up to the
/// connect timeout) and opens the fence; returns once it has, or with the
/// reason it could not. The store is made, used and dropped on the keeper
/// thread only, so a caller inside an async runtime never runs (or drops)
/// the store's own runtime.
pub(crate) fn start<S, F>(
    make_store: F,
    settings: Settings,
    fence: Arc<Fence>,
) -> Result<KeeperThread, LeaseError>
where
    S: Store,
    F: FnOnce(&Settings) -> Result<S, LeaseError> + Send + 'static,
{
    let stop = Arc::new(Mutex::new(Stop::default()));
    let (started, outcome) = mpsc::sync_channel(1);
    let keeper_stop = stop.clone();
    let keeper_fence = fence.clone();
    let spawned = thread::Builder::new()
        .name("flakeid-lease".into())
        .spawn(move || {
            let claimed = make_store(&settings).and_then(|store| {
                let mut run = Run::new(store, settings, keeper_fence);
                run.claim_within_connect_timeout().map(|()| run)
            });
            match claimed {
                Ok(mut run) => {
                    let _ = started.send(Ok(()));
                    run.keep(&keeper_stop);
                }
                // The store (and its runtime) is dropped before the builder
                // hears of the error and joins this thread.
                Err(e) => {
                    let _ = started.send(Err(e));
                }
            }
        });
    let thread = spawned.map_err(|e| LeaseError::Config {
        reason: format!("cannot start the lease keeper thread: {e}"),
    })?;
    fence.set_keeper(thread.thread().clone());
    match outcome.recv() {
        Ok(Ok(())) => Ok(KeeperThread {
            stop,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(mpsc::RecvError) => {
            let _ = thread.join();
            Err(LeaseError::Config {
                reason: "the lease keeper thread stopped before claiming a node id".into(),
            })
        }
    }
}

impl<S: Store> Run<S> {
    /// The first claim, retried while the server is unreachable, all within
    /// the connect timeout (on the real clock: a build waits for a real
    /// server).
    fn claim_within_connect_timeout(&mut self) -> Result<(), LeaseError> {
        let limit = self.settings.connect_timeout;
        let deadline = Instant::now() + limit;
        self.store.set_timeout(limit);
        self.store.set_deadline(Some(deadline));
        // The last attempt may fail only for want of time: the one before
        // it says why the others failed.
        let mut before: Option<String> = None;
        let claimed = loop {
            match self.claim_first() {
                Ok(()) => break Ok(()),
                Err(LeaseError::Unreachable { reason, .. }) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        let reason = match before {
                            Some(before) if before != reason => format!("{before}; then {reason}"),
                            _ => reason,
                        };
                        break Err(LeaseError::Unreachable {
                            server: self.settings.server.clone(),
                            waited: limit,
                            reason,
                        });
                    }
                    before = Some(reason);
                    thread::sleep(Duration::from_millis(50).min(left));
                }
                Err(e) => break Err(e),
            }
        };
        self.store.set_deadline(None);
        self.store.set_timeout(self.settings.request_timeout());
        claimed
    }

    /// The keeper thread's loop: steps, and parks until the next step is due
    /// or a generator wakes it.
    fn keep(&mut self, stop: &Mutex<Stop>) {
        loop {
            let asked = match stop.lock() {
                Ok(stop) => stop.asked,
                Err(poisoned) => poisoned.into_inner().asked,
            };
            if let Some(last) = asked {
                self.finish(last);
                return;
            }
            let wake_at = self.step();
            let now = self.fence.now_ns();
            if wake_at > now {
                thread::park_timeout(Duration::from_nanos(wake_at - now));
            }
        }
    }
}

impl KeeperThread {
    fn stop(&mut self, last: Option<(u64, u64)>) {
        {
            let mut stop = match self.stop.lock() {
                Ok(stop) => stop,
                Err(poisoned) => poisoned.into_inner(),
            };
            if stop.asked.is_none() {
                stop.asked = Some(last);
            }
        }
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Keeper for KeeperThread {
    fn release(mut self: Box<Self>, last: Option<(u64, u64)>) {
        self.stop(last);
    }
}

impl Drop for KeeperThread {
    fn drop(&mut self) {
        self.stop(None);
    }
}
