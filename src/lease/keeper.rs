//! The lease keeper: claims a node id, renews it on a background thread,
//! opens and extends the generator's fence, rotates, and releases.
//!
//! It is written once against [`Store`], which the etcd and Redis backends
//! implement with blocking calls (etcd's on a small runtime of its own).

use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::LeaseError;
use crate::fence::{Fence, Grant, Keeper};
use crate::layout::Layout;

/// A node id held in the store.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) node: u64,
    /// The mark found when claiming: no earlier holder issued an ID with a
    /// later Unix millisecond (0: never used).
    pub(crate) mark_ms: u64,
    /// The mark recorded for this holder now: it may issue up to it.
    pub(crate) ceiling_ms: u64,
    /// The etcd lease the node key is bound to (unused by Redis).
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) handle: i64,
}

/// What a lease store does, as blocking calls bounded by the store's timeout.
pub(crate) trait Store: Send + 'static {
    /// Bounds each later call.
    fn set_timeout(&mut self, timeout: Duration);

    /// Claims the lowest free node id in `first..=last` (with
    /// `fresh_before_ms`, only one whose mark is earlier), recording
    /// `ceiling_ms` as its mark if that is higher. `None` if there is none.
    fn claim(
        &mut self,
        first: u64,
        last: u64,
        fresh_before_ms: Option<u64>,
        ceiling_ms: u64,
    ) -> Result<Option<Claim>, LeaseError>;

    /// Keeps the claim alive and raises its mark to `ceiling_ms`; `false` if
    /// the claim is no longer this holder's.
    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError>;

    /// Gives the node id back if it is still this holder's, first setting its
    /// mark to `mark_ms` (the exact last time issued) if given.
    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError>;
}

/// A lease's configuration, checked against the generator.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) layout: Layout,
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) ttl: Duration,
    pub(crate) margin: Duration,
    pub(crate) connect_timeout: Duration,
    /// How far past the wall clock each ceiling reaches: the TTL plus the
    /// generator's lead allowance.
    pub(crate) ahead: Duration,
    pub(crate) rotate_after_ticks: u64,
    pub(crate) server: String,
}

impl Settings {
    pub(crate) fn renew_every(&self) -> Duration {
        self.ttl / 3
    }

    /// Between attempts after a failure.
    pub(crate) fn retry_every(&self) -> Duration {
        (self.ttl / 10).max(Duration::from_millis(10))
    }

    /// A request still unanswered after this is given up: by then the next
    /// renewal is due.
    pub(crate) fn request_timeout(&self) -> Duration {
        (self.ttl / 3).min(self.connect_timeout)
    }

    fn valid_for_ns(&self) -> u64 {
        nanos(self.ttl - self.margin)
    }

    fn tick_of(&self, unix_ms: u64) -> u64 {
        self.layout.timestamp_at_clamped(unix_ms)
    }

    /// The last Unix millisecond of a tick.
    fn end_ms(&self, tick: u64) -> u64 {
        self.layout
            .unix_ms(tick)
            .saturating_add(self.layout.unit_ms() - 1)
    }

    /// The ceiling to record now: the wall clock plus `ahead`, or past the
    /// tick a generator asked for if its clock is ahead of the wall's.
    fn ceiling_ms(&self, wanted_tick: u64) -> u64 {
        let ahead = u64::try_from(self.ahead.as_millis()).unwrap_or(u64::MAX);
        let by_wall = self.tick_of(wall_ms().saturating_add(ahead));
        let by_want = if wanted_tick == 0 {
            0
        } else {
            self.tick_of(self.end_ms(wanted_tick).saturating_add(ahead))
        };
        self.end_ms(by_wall.max(by_want))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A claim the fence is open for.
struct Held {
    claim: Claim,
    node_bits: u64,
    /// Fence nanoseconds until which the lease is proven valid.
    valid_until: u64,
}

/// How the keeper thread is told to stop.
#[derive(Default)]
struct Stop {
    /// `Some(last)` once asked; `last` is the generator's final node bits and
    /// timestamp, when known.
    asked: Option<Option<(u64, u64)>>,
}

struct Run<S> {
    store: S,
    settings: Settings,
    fence: Arc<Fence>,
    stop: Arc<Mutex<Stop>>,
    /// Claims lost or given up whose release has not reached the store yet
    /// (etcd would keep their keys until its lease expires).
    orphans: Vec<Claim>,
}

/// The keeper thread of one generator.
pub(crate) struct KeeperThread {
    stop: Arc<Mutex<Stop>>,
    thread: Option<JoinHandle<()>>,
}

/// Claims a node id (retrying while the server is unreachable, up to the
/// connect timeout), opens the fence, and starts the keeper thread.
pub(crate) fn start<S: Store>(
    store: S,
    settings: Settings,
    fence: Arc<Fence>,
) -> Result<KeeperThread, LeaseError> {
    fence.rotate_after(settings.rotate_after_ticks);
    let mut run = Run {
        store,
        settings,
        fence,
        stop: Arc::default(),
        orphans: Vec::new(),
    };
    let begun = Instant::now();
    let limit = run.settings.connect_timeout;
    let held = loop {
        let left = limit.saturating_sub(begun.elapsed());
        run.store.set_timeout(left.max(Duration::from_millis(1)));
        match run.claim(None) {
            Ok(Some(held)) => break held,
            Ok(None) => {
                return Err(LeaseError::AllHeld {
                    first: run.settings.first,
                    last: run.settings.last,
                });
            }
            Err(LeaseError::Unreachable { reason, .. }) => {
                if begun.elapsed() >= limit {
                    return Err(LeaseError::Unreachable {
                        server: run.settings.server.clone(),
                        waited: limit,
                        reason,
                    });
                }
                thread::sleep(Duration::from_millis(50).min(left));
            }
            Err(e) => return Err(e),
        }
    };
    run.store.set_timeout(run.settings.request_timeout());
    let stop = run.stop.clone();
    let fence = run.fence.clone();
    let spawned = thread::Builder::new()
        .name("flakeid-lease".into())
        .spawn(move || run.keep(held));
    match spawned {
        Ok(thread) => {
            fence.set_keeper(thread.thread().clone());
            Ok(KeeperThread {
                stop,
                thread: Some(thread),
            })
        }
        // The claim expires after one TTL; the fence closes with the builder.
        Err(e) => Err(LeaseError::Config {
            reason: format!("cannot start the lease keeper thread: {e}"),
        }),
    }
}

impl<S: Store> Run<S> {
    /// Claims a node id and opens the fence for it (rewinding, for a fresh
    /// one after a clock rollback).
    fn claim(&mut self, fresh_before_ms: Option<u64>) -> Result<Option<Held>, LeaseError> {
        let s = &self.settings;
        let sent = self.fence.now_ns();
        let ceiling_ms = s.ceiling_ms(self.fence.wanted());
        let Some(claim) = self
            .store
            .claim(s.first, s.last, fresh_before_ms, ceiling_ms)?
        else {
            return Ok(None);
        };
        let node_bits = match s.layout.node_mask_bits(claim.node) {
            Ok(bits) if (s.first..=s.last).contains(&claim.node) => bits,
            _ => {
                let _ = self.store.release(&claim, None);
                return Err(LeaseError::BadReply {
                    reason: format!("claimed node id {} is out of range", claim.node),
                });
            }
        };
        let held = Held {
            node_bits,
            valid_until: sent.saturating_add(s.valid_for_ns()),
            claim,
        };
        self.fence.open(
            Grant {
                node_bits,
                floor: s.tick_of(held.claim.mark_ms),
                ceiling: s.tick_of(held.claim.ceiling_ms),
                rewind: fresh_before_ms.is_some(),
            },
            held.valid_until,
        );
        Ok(Some(held))
    }

    /// The keeper thread's loop.
    fn keep(mut self, held: Held) {
        let renew_every = nanos(self.settings.renew_every());
        let retry_every = nanos(self.settings.retry_every());
        let mut held = Some(held);
        let mut next_renewal = self.fence.now_ns().saturating_add(renew_every);
        let mut retry_at = 0;
        let mut next_claim = 0;
        let mut next_rotation = 0;
        loop {
            if let Some(last) = self.stop_asked() {
                self.finish(held, last);
                return;
            }
            let now = self.fence.now_ns();
            // A request waiting out the pause after a failed rotation stays
            // posted, so the generator does not post (and wake us) again.
            let rotation = if now >= next_rotation {
                self.fence.take_rotation()
            } else {
                None
            };
            if let (Some((node_bits, now_tick)), Some(h)) = (rotation, &held)
                && node_bits == h.node_bits
            {
                let fresh_before = self.settings.layout.unix_ms(now_tick);
                match self.claim(Some(fresh_before)) {
                    Ok(Some(new)) => {
                        // The fence is open for the new node id; the old one
                        // keeps its mark (our ceiling) and goes back.
                        if let Some(old) = held.replace(new) {
                            self.give_back(old.claim);
                        }
                        next_renewal = now.saturating_add(renew_every);
                    }
                    // No fresh node id free now: keep this one.
                    _ => next_rotation = now.saturating_add(renew_every),
                }
            }
            if let Some(h) = &mut held {
                let wanted = self.fence.wanted() > self.settings.tick_of(h.claim.ceiling_ms);
                if now >= next_renewal || (wanted && now >= retry_at) {
                    let sent = self.fence.now_ns();
                    let ceiling_ms = self
                        .settings
                        .ceiling_ms(self.fence.wanted())
                        .max(h.claim.ceiling_ms);
                    match self.store.renew(&h.claim, ceiling_ms) {
                        Ok(true) => {
                            h.claim.ceiling_ms = ceiling_ms;
                            h.valid_until = sent.saturating_add(self.settings.valid_for_ns());
                            self.fence
                                .extend(h.valid_until, self.settings.tick_of(ceiling_ms));
                            next_renewal = sent.saturating_add(renew_every);
                            retry_at = 0;
                        }
                        Ok(false) => {
                            // Someone else's now (expired, or deleted by hand).
                            self.fence.close();
                            h.valid_until = 0;
                        }
                        Err(_) => {
                            retry_at = self.fence.now_ns().saturating_add(retry_every);
                            next_renewal = next_renewal.max(retry_at);
                        }
                    }
                }
                if self.fence.now_ns() >= h.valid_until {
                    // The fence closed itself at the deadline; make sure no
                    // late renewal reopens it, and claim afresh.
                    self.fence.close();
                    if let Some(lost) = held.take() {
                        self.orphans.push(lost.claim);
                    }
                    next_claim = 0;
                }
            }
            if held.is_none() && self.fence.now_ns() >= next_claim {
                self.release_orphans();
                match self.claim(None) {
                    Ok(Some(h)) => {
                        next_renewal = self.fence.now_ns().saturating_add(renew_every);
                        held = Some(h);
                    }
                    Ok(None) | Err(_) => {
                        next_claim = self.fence.now_ns().saturating_add(retry_every);
                    }
                }
            }
            let wake_at = match &held {
                Some(h) => next_renewal.min(h.valid_until),
                None => next_claim,
            };
            let now = self.fence.now_ns();
            if wake_at > now {
                thread::park_timeout(Duration::from_nanos(wake_at - now));
            }
        }
    }

    fn stop_asked(&self) -> Option<Option<(u64, u64)>> {
        match self.stop.lock() {
            Ok(stop) => stop.asked,
            Err(poisoned) => poisoned.into_inner().asked,
        }
    }

    /// Releases a node id the generator no longer uses, keeping its mark.
    fn give_back(&mut self, claim: Claim) {
        if self.store.release(&claim, None).is_err() {
            self.orphans.push(claim);
        }
    }

    fn release_orphans(&mut self) {
        let orphans = std::mem::take(&mut self.orphans);
        for claim in orphans {
            self.give_back(claim);
        }
    }

    /// The generator is gone: record the exact last time it issued under the
    /// held node id, and give the node id back.
    fn finish(&mut self, held: Option<Held>, last: Option<(u64, u64)>) {
        self.fence.close();
        if let Some(h) = held {
            let mark_ms = match last {
                Some((node_bits, ts)) if node_bits == h.node_bits => {
                    Some(h.claim.mark_ms.max(self.settings.end_ms(ts)))
                }
                // Nothing was issued under this claim.
                Some(_) => Some(h.claim.mark_ms),
                // Unknown: leave the ceiling recorded.
                None => None,
            };
            if self.store.release(&h.claim, mark_ms).is_err() {
                self.orphans.push(h.claim);
            }
        }
        // Best effort: what stays expires after one TTL.
        let orphans = std::mem::take(&mut self.orphans);
        for claim in orphans {
            let _ = self.store.release(&claim, None);
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
