//! The lease keeper: claims a node id, renews it, opens and extends the
//! generator's fence, rotates, and releases.
//!
//! It is written once against [`Store`], which the etcd and Redis backends
//! implement with blocking calls (etcd's on a small runtime of its own), and
//! as a state machine: [`Run::step`] makes one round of decisions at the
//! current time (the fence's monotonic clock, the [`WallClock`]) and says
//! when it next wants to run. The keeper thread (`thread.rs`) steps and
//! parks; the crate's tests and its fleet simulation step it themselves, on
//! mocked clocks.

mod rules;
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
mod thread;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::{Clock, SystemClock};
use crate::error::LeaseError;
use crate::events::{Event, Events};
use crate::fence::{Fence, Grant};
use crate::layout::Layout;
#[cfg(any(test, flakeid_plant))]
use crate::plant::Plant;

pub(crate) use rules::Rules;
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) use thread::start;

/// A node id held in the store.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) node: u64,
    /// The mark found when claiming: no earlier holder issued an ID with a
    /// later Unix millisecond (0: never used).
    pub(crate) mark_ms: u64,
    /// The mark recorded for this holder now: it may issue up to it.
    pub(crate) ceiling_ms: u64,
    /// The etcd lease the node key is bound to (the memory store's claim
    /// handle; unused by Redis).
    #[cfg_attr(not(any(feature = "etcd", test)), allow(dead_code))]
    pub(crate) handle: i64,
}

/// What a claim asks of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ask {
    pub(crate) first: u64,
    pub(crate) last: u64,
    /// Only a node id whose mark is earlier than this (a rotation's fresh
    /// node id).
    pub(crate) fresh_before_ms: Option<u64>,
    /// Only a node id whose mark is at most this: the claimer's wall clock
    /// plus the lease's bound. A later mark (a holder whose clock ran ahead,
    /// a mark planted by hand) would keep the claimer waiting for too long.
    pub(crate) usable_until_ms: u64,
    /// Recorded as the claimed node id's mark if that is higher.
    pub(crate) ceiling_ms: u64,
}

impl Ask {
    /// Whether a free node id with `mark_ms` may be claimed; `Err(())` if
    /// only because its mark is too far ahead.
    // Redis makes the same choice in its claim script.
    #[cfg_attr(not(any(test, feature = "etcd")), allow(dead_code))]
    pub(crate) fn takes(&self, mark_ms: u64) -> Result<bool, ()> {
        if self.fresh_before_ms.is_some_and(|fresh| mark_ms >= fresh) {
            return Ok(false);
        }
        if mark_ms > self.usable_until_ms {
            return Err(());
        }
        Ok(true)
    }
}

/// Free node ids a claim passed over because their marks were too far ahead
/// of the claimer's clock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// How many.
    pub(crate) count: u64,
    /// The lowest of them (up to [`Skipped::SHOWN`]), with their marks.
    pub(crate) lowest: Vec<(u64, u64)>,
}

impl Skipped {
    /// How many skipped node ids a claim reports by name.
    pub(crate) const SHOWN: usize = 8;

    #[cfg_attr(not(any(test, feature = "etcd")), allow(dead_code))]
    pub(crate) fn add(&mut self, node: u64, mark_ms: u64) {
        self.count += 1;
        if self.lowest.len() < Skipped::SHOWN {
            self.lowest.push((node, mark_ms));
        }
    }
}

/// What a claim found.
#[derive(Debug, Clone)]
pub(crate) enum Claimed {
    /// A node id, and the free ones below it that were skipped.
    Node(Claim, Skipped),
    /// A node id that may be used only after the duration has passed since
    /// the answer arrived: the store cannot prove that the lease of an
    /// earlier holder has ended (Redis, in the first TTL after a failover:
    /// the claim of the node id's holder may have been lost), so the
    /// generator waits out the longest such lease (the Chubby rule). The
    /// keeper keeps the claim alive meanwhile, its fence closed. Only the
    /// Redis store (and the tests' memory store) makes one.
    #[cfg_attr(not(any(test, feature = "redis")), allow(dead_code))]
    NodeAfter(Claim, Skipped, Duration),
    /// No node id could be claimed; `Skipped` says which free ones were
    /// passed over for their marks.
    None(Skipped),
}

/// What a lease store does, as blocking calls bounded by the store's timeout
/// (and by its deadline, while one is set).
pub(crate) trait Store: Send + 'static {
    /// Bounds each later call, connecting included. (Called by the keeper
    /// thread; the crate's tests step a keeper without one.)
    #[cfg_attr(
        not(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )),
        allow(dead_code)
    )]
    fn set_timeout(&mut self, timeout: Duration);

    /// While `Some`, every call also ends by this instant (fails as
    /// unreachable if it cannot), so that a series of calls is bounded as a
    /// whole: the first claim by the connect timeout, the release on drop by
    /// the request timeout.
    /// (A store whose calls take no real time has nothing to bound.)
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        let _ = deadline;
    }

    /// How often to renew: [`Settings::renew_every`], unless the store needs
    /// it more often (etcd at short TTLs, to outlast an election).
    fn renew_every(&self, settings: &Settings) -> Duration {
        settings.renew_every()
    }

    /// How soon to renew again after a failed renewal:
    /// [`Settings::retry_every`], unless the store paces its own attempts
    /// within each call (etcd).
    fn renew_retry(&self, settings: &Settings) -> Duration {
        settings.retry_every()
    }

    /// Claims the lowest node id in `ask.first..=ask.last` that has no holder
    /// and that [`Ask::takes`], recording `ask.ceiling_ms` as its mark if
    /// that is higher.
    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError>;

    /// Keeps the claim alive and raises its mark to `ceiling_ms`; `false` if
    /// the claim is no longer this holder's.
    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError>;

    /// Gives the node id back if it is still this holder's, first setting its
    /// mark to `mark_ms` (the exact last time issued) if given.
    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError>;
}

/// The wall clock a keeper computes ceilings and usable marks with: the
/// system's, or a simulation's.
#[derive(Clone)]
pub(crate) struct WallClock(Arc<dyn Clock>);

impl WallClock {
    pub(crate) fn system() -> WallClock {
        WallClock::new(SystemClock)
    }

    /// The wall clock `clock` (a simulation's).
    pub(crate) fn new(clock: impl Clock + 'static) -> WallClock {
        WallClock(Arc::new(clock))
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.0.now_ms()
    }
}

impl fmt::Debug for WallClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WallClock({} ms)", self.now_ms())
    }
}

/// What bounds a store's next call: its timeout, and the deadline of the
/// operation it belongs to, while one is set. The etcd and Redis stores keep
/// one each and set it from [`Store::set_timeout`] and [`Store::set_deadline`].
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallLimit {
    pub(crate) timeout: Duration,
    pub(crate) deadline: Option<Instant>,
}

#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
impl CallLimit {
    /// How long the next call may take: the timeout, or less if the
    /// deadline is nearer.
    pub(crate) fn budget(&self) -> Duration {
        match self.deadline {
            Some(deadline) => self
                .timeout
                .min(deadline.saturating_duration_since(Instant::now())),
            None => self.timeout,
        }
    }
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
    /// How far past the wall clock a free node id's mark may be for a claim
    /// to take it.
    pub(crate) usable_ahead: Duration,
    pub(crate) rotate_after_ticks: u64,
    /// The store, for messages (the keeper thread's).
    #[cfg_attr(
        not(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )),
        allow(dead_code)
    )]
    pub(crate) server: String,
    pub(crate) wall: WallClock,
    /// The generator's event hook, told of claims, failures and fences.
    pub(crate) events: Events,
    /// A bug planted on purpose (`crate::plant`), for the tests that must
    /// catch it.
    #[cfg(any(test, flakeid_plant))]
    pub(crate) plant: Option<Plant>,
}

impl Settings {
    pub(crate) fn renew_every(&self) -> Duration {
        self.ttl / 3
    }

    /// Between attempts after a failure: a tenth of the TTL, at most 250 ms
    /// (a store back after an outage is claimed from again within that).
    pub(crate) fn retry_every(&self) -> Duration {
        (self.ttl / 10).clamp(Duration::from_millis(10), Duration::from_millis(250))
    }

    /// A request still unanswered after this is given up: by then the next
    /// renewal is due.
    pub(crate) fn request_timeout(&self) -> Duration {
        (self.ttl / 3).min(self.connect_timeout)
    }

    /// The keeper's rules for this lease, in fence nanoseconds.
    pub(crate) fn rules(&self) -> Rules {
        Rules {
            valid_for: nanos(self.ttl - self.margin),
            #[cfg(any(test, flakeid_plant))]
            plant: self.plant,
        }
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
        let by_wall = self.tick_of(self.wall.now_ms().saturating_add(ahead));
        let by_want = if wanted_tick == 0 {
            0
        } else {
            self.tick_of(self.end_ms(wanted_tick).saturating_add(ahead))
        };
        self.end_ms(by_wall.max(by_want))
    }

    /// The latest mark a claim takes now.
    fn usable_until_ms(&self) -> u64 {
        let ahead = u64::try_from(self.usable_ahead.as_millis()).unwrap_or(u64::MAX);
        self.wall.now_ms().saturating_add(ahead)
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The TTL a store records (Redis' `PX`, a SQL row's expiry): whole
/// milliseconds, rounded up, so a claim never expires in the store before
/// the fence (which keeps to the exact TTL) closes.
#[cfg_attr(
    not(any(feature = "redis", feature = "postgres", feature = "mysql")),
    allow(dead_code)
)]
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(flakeid_loom)))]
mod ttl_tests {
    use super::*;

    #[test]
    fn a_sub_millisecond_ttl_is_rounded_up_not_down() {
        assert_eq!(ttl_ms(Duration::from_millis(1_000)), 1_000);
        assert_eq!(ttl_ms(Duration::from_micros(1_000_500)), 1_001);
        assert_eq!(ttl_ms(Duration::from_nanos(100_000_001)), 101);
        assert_eq!(ttl_ms(Duration::MAX), u64::MAX);
    }
}

/// A claim the fence is open for, or will open for.
struct Held {
    claim: Claim,
    /// The ceiling the fence was last given (the store may record a higher
    /// one: a renewal it applied whose answer came too late or never): the
    /// generator issued nothing after it under this claim.
    granted_ms: u64,
    node_bits: u64,
    /// Fence nanoseconds until which the lease is proven valid.
    valid_until: u64,
    /// A claim whose fence is not open yet ([`Claimed::NodeAfter`]).
    waiting: Option<Waiting>,
}

/// A claim's fence waiting to open.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    /// Fence nanoseconds from which it may open.
    opens_at: u64,
    /// The grant's floor, and whether it rewinds (a rotation's).
    floor: u64,
    rewind: bool,
}

/// One generator's lease keeper: its store, the claim it holds, and when
/// the next renewal, retry, claim and rotation are due (fence nanoseconds).
pub(crate) struct Run<S> {
    store: S,
    settings: Settings,
    fence: Arc<Fence>,
    held: Option<Held>,
    /// Claims lost or given up whose release has not reached the store yet
    /// (etcd would keep their keys until its lease expires), with the mark
    /// to leave (`None`: the one recorded).
    orphans: Vec<(Claim, Option<u64>)>,
    next_renewal: u64,
    /// While a generator waits for a higher ceiling: no renewal before this
    /// (the last attempt failed).
    retry_at: u64,
    next_claim: u64,
    next_rotation: u64,
    /// The free node ids the last claim skipped for their marks.
    skipped: Skipped,
    /// The held claim is waiting to open the fence after a lapse: tell
    /// the generator's hook when it reopens.
    announce_opening: bool,
}

impl<S: Store> Run<S> {
    /// A keeper holding nothing yet, for `fence`.
    pub(crate) fn new(store: S, settings: Settings, fence: Arc<Fence>) -> Run<S> {
        fence.rotate_after(settings.rotate_after_ticks);
        Run {
            store,
            settings,
            fence,
            held: None,
            orphans: Vec::new(),
            next_renewal: 0,
            retry_at: 0,
            next_claim: 0,
            next_rotation: 0,
            skipped: Skipped::default(),
            announce_opening: false,
        }
    }

    /// One attempt at the first claim: on success the fence is open and the
    /// first renewal is due a third of the TTL later.
    pub(crate) fn claim_first(&mut self) -> Result<(), LeaseError> {
        let held = self.claim(None)?;
        self.next_renewal = self
            .fence
            .now_ns()
            .saturating_add(nanos(self.store.renew_every(&self.settings)));
        let node_id = held.claim.node;
        self.held = Some(held);
        self.settings.events.emit(Event::LeaseClaimed { node_id });
        Ok(())
    }

    /// The node id held (and its fence possibly open), if any.
    #[cfg(test)]
    pub(crate) fn held_node(&self) -> Option<u64> {
        self.held.as_ref().map(|h| h.claim.node)
    }

    /// The claim held, by its handle (the memory store's tell claims
    /// apart), and whether it waits to open the fence (the epoch rule).
    #[cfg(test)]
    pub(crate) fn held_claim(&self) -> Option<(i64, bool)> {
        self.held
            .as_ref()
            .map(|h| (h.claim.handle, h.waiting.is_some()))
    }

    /// The free node ids the last claim skipped for their marks.
    #[cfg(test)]
    pub(crate) fn skipped(&self) -> &Skipped {
        &self.skipped
    }

    /// Claims a node id and opens the fence for it (rewinding, for a fresh
    /// one after a clock rollback).
    fn claim(&mut self, fresh_before_ms: Option<u64>) -> Result<Held, LeaseError> {
        let s = &self.settings;
        let sent = self.fence.now_ns();
        let sent_at = Instant::now();
        // A rotation rewinds the generator's timestamp to the clock: what it
        // wanted under the old node id (ahead of the clock) is no reason to
        // raise the fresh node id's mark. Otherwise the generator's timestamp
        // carries on, and so may what it wanted.
        let wanted = match fresh_before_ms {
            Some(_) => 0,
            None => self.fence.wanted(),
        };
        let ask = Ask {
            first: s.first,
            last: s.last,
            fresh_before_ms,
            usable_until_ms: s.usable_until_ms(),
            ceiling_ms: s.ceiling_ms(wanted),
        };
        let claimed = self.store.claim(&ask)?;
        let answered_at = Instant::now();
        let (Claimed::Node(_, skipped)
        | Claimed::NodeAfter(_, skipped, _)
        | Claimed::None(skipped)) = &claimed;
        self.fence.note_skipped(skipped.count);
        self.skipped = skipped.clone();
        let rules = s.rules();
        let (claim, wait) = match claimed {
            Claimed::Node(claim, _) => (claim, Duration::ZERO),
            Claimed::NodeAfter(claim, _, wait) => {
                (claim, Duration::from_nanos(rules.opening_wait(nanos(wait))))
            }
            Claimed::None(skipped) if skipped.count == 0 => {
                return Err(LeaseError::AllHeld {
                    first: s.first,
                    last: s.last,
                });
            }
            Claimed::None(skipped) => {
                return Err(LeaseError::MarksAhead {
                    first: s.first,
                    last: s.last,
                    skipped: skipped.count,
                    lowest: skipped.lowest,
                    usable_until_ms: ask.usable_until_ms,
                });
            }
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
        let floor = rules.floor(s.tick_of(claim.mark_ms));
        let rewind = fresh_before_ms.is_some();
        let mut held = Held {
            node_bits,
            valid_until: rules.valid_until(sent),
            granted_ms: claim.ceiling_ms,
            claim,
            waiting: None,
        };
        s.events.emit(Event::LeaseExtended {
            node_id: held.claim.node,
            claim: true,
            sent: sent_at,
            answered: answered_at,
        });
        if wait.is_zero() {
            self.fence.open(
                Grant {
                    node_bits,
                    floor,
                    ceiling: s.tick_of(held.claim.ceiling_ms),
                    rewind,
                },
                held.valid_until,
            );
        } else {
            // Measured from the answer, which came after the store's clock
            // said how long to wait. A rotation's old grant closes now (its
            // node id goes back); otherwise the fence is closed already.
            // The node id is held from now on (`open` notes it otherwise).
            self.fence.close();
            self.fence.note_claim(node_bits);
            held.waiting = Some(Waiting {
                opens_at: self.fence.now_ns().saturating_add(nanos(wait)),
                floor,
                rewind,
            });
            self.settings.events.emit(Event::LeaseWaiting {
                node_id: held.claim.node,
                wait,
            });
        }
        Ok(held)
    }

    /// One round of the keeper's decisions at the fence's current time:
    /// rotate if a generator asked to, renew if due (or if a generator waits
    /// for a higher ceiling), give up a claim whose deadline passed, claim if
    /// nothing is held. Returns the fence nanoseconds at which it next wants
    /// to run; running it earlier does no harm.
    pub(crate) fn step(&mut self) -> u64 {
        let renew_every = nanos(self.store.renew_every(&self.settings));
        let retry_every = nanos(self.settings.retry_every());
        let now = self.fence.now_ns();
        // A request waiting out the pause after a failed rotation stays
        // posted, so the generator does not post (and wake us) again.
        let rotation = if now >= self.next_rotation {
            self.fence.take_rotation()
        } else {
            None
        };
        if let (Some((node_bits, now_tick)), Some(h)) = (rotation, &self.held)
            && node_bits == h.node_bits
        {
            let fresh_before = self.settings.layout.unix_ms(now_tick);
            match self.claim(Some(fresh_before)) {
                Ok(new) => {
                    let to = new.claim.node;
                    // The fence is open for the new node id; the old one
                    // keeps its mark (our ceiling) and goes back.
                    if let Some(old) = self.held.replace(new) {
                        let from = old.claim.node;
                        self.give_back(old.claim, None);
                        self.settings.events.emit(Event::LeaseRotated { from, to });
                    }
                    self.next_renewal = now.saturating_add(renew_every);
                }
                // No fresh node id free now: keep this one.
                Err(_) => self.next_rotation = now.saturating_add(renew_every),
            }
        }
        if let Some(h) = &mut self.held {
            // A generator asks only under an open grant: what it wanted under
            // the one before a waiting claim is no reason to raise its mark.
            let wanted_tick = match h.waiting {
                Some(_) => 0,
                None => self.fence.wanted(),
            };
            let wanted = wanted_tick > self.settings.tick_of(h.claim.ceiling_ms);
            // Past the deadline a renewal could extend nothing.
            let due = now >= self.next_renewal || (wanted && now >= self.retry_at);
            if due && now < h.valid_until {
                let sent = self.fence.now_ns();
                let sent_at = Instant::now();
                let ceiling_ms = self
                    .settings
                    .ceiling_ms(wanted_tick)
                    .max(h.claim.ceiling_ms);
                // The renewal's requests (etcd: the mark's transaction and
                // the keep-alive) share one request timeout.
                let timeout = self.settings.request_timeout();
                self.store.set_deadline(Some(sent_at + timeout));
                let renewed = self.store.renew(&h.claim, ceiling_ms);
                let answered_at = Instant::now();
                self.store.set_deadline(None);
                let rules = self.settings.rules();
                let sent = rules.renewal_counts_from(sent, self.fence.now_ns());
                match renewed {
                    Ok(true) => {
                        h.claim.ceiling_ms = ceiling_ms;
                        let until = rules.valid_until(sent);
                        // An answer that came after the deadline extends
                        // nothing: the claim is given up below. A waiting
                        // claim's fence is closed: only its deadline moves.
                        let ceiling = self.settings.tick_of(ceiling_ms);
                        let fence = &self.fence;
                        let extended = match h.waiting {
                            Some(_) => fence.now_ns() < h.valid_until,
                            None if rules.reopens() => fence.extend_if(until, ceiling, |_| true),
                            // The check of `Rules::extends`, made atomically.
                            None => fence.extend(until, ceiling),
                        };
                        if extended {
                            h.granted_ms = ceiling_ms;
                            h.valid_until = until;
                            self.next_renewal = sent.saturating_add(renew_every);
                            self.retry_at = 0;
                            self.settings.events.emit(Event::LeaseExtended {
                                node_id: h.claim.node,
                                claim: false,
                                sent: sent_at,
                                answered: answered_at,
                            });
                        }
                    }
                    Ok(false) => {
                        // Someone else's now (expired, or deleted by hand).
                        self.fence.close();
                        h.valid_until = 0;
                    }
                    Err(error) => {
                        let retry = nanos(self.store.renew_retry(&self.settings));
                        self.retry_at = self.fence.now_ns().saturating_add(retry);
                        self.next_renewal = self.next_renewal.max(self.retry_at);
                        self.settings.events.emit(Event::LeaseRenewalFailed {
                            node_id: h.claim.node,
                            error,
                        });
                    }
                }
            }
            if let Some(w) = h.waiting {
                let at = self.fence.now_ns();
                if at >= w.opens_at && at < h.valid_until {
                    self.fence.open(
                        Grant {
                            node_bits: h.node_bits,
                            floor: w.floor,
                            ceiling: self.settings.tick_of(h.claim.ceiling_ms),
                            rewind: w.rewind,
                        },
                        h.valid_until,
                    );
                    h.granted_ms = h.claim.ceiling_ms;
                    h.waiting = None;
                    if self.announce_opening {
                        self.announce_opening = false;
                        let node_id = h.claim.node;
                        self.settings.events.emit(Event::LeaseReopened { node_id });
                    }
                }
            }
            if self.fence.now_ns() >= h.valid_until {
                // The fence closed itself at the deadline; make sure it
                // stays closed, and claim afresh. The claim goes back with
                // the ceiling the generator had, not a higher one that a
                // late renewal recorded: a fresh claim of the same node id
                // then need not wait for the clock to pass that.
                self.fence.close();
                if let Some(lost) = self.held.take() {
                    let node_id = lost.claim.node;
                    let mark_ms = lost.granted_ms.max(lost.claim.mark_ms);
                    self.orphans.push((lost.claim, Some(mark_ms)));
                    self.settings.events.emit(Event::Fenced { node_id });
                }
                self.next_claim = 0;
            }
        }
        if self.held.is_none() && self.fence.now_ns() >= self.next_claim {
            self.release_orphans();
            match self.claim(None) {
                Ok(h) => {
                    self.next_renewal = self.fence.now_ns().saturating_add(renew_every);
                    let node_id = h.claim.node;
                    // A waiting claim reopens the generator when its wait
                    // is over.
                    self.announce_opening = h.waiting.is_some();
                    if h.waiting.is_none() {
                        self.settings.events.emit(Event::LeaseReopened { node_id });
                    }
                    self.held = Some(h);
                }
                Err(_) => {
                    self.next_claim = self.fence.now_ns().saturating_add(retry_every);
                }
            }
        }
        match &self.held {
            Some(h) => {
                let opens_at = h.waiting.map_or(u64::MAX, |w| w.opens_at);
                self.next_renewal.min(h.valid_until).min(opens_at)
            }
            None => self.next_claim,
        }
    }

    /// Releases a node id the generator no longer uses, setting its mark to
    /// `mark_ms` (`None`: keeping the one recorded).
    fn give_back(&mut self, claim: Claim, mark_ms: Option<u64>) {
        if self.store.release(&claim, mark_ms).is_err() {
            self.orphans.push((claim, mark_ms));
        }
    }

    fn release_orphans(&mut self) {
        let orphans = std::mem::take(&mut self.orphans);
        for (claim, mark_ms) in orphans {
            self.give_back(claim, mark_ms);
        }
    }

    /// The generator is gone: record the exact last time it issued under the
    /// held node id, and give the node id back. All of it within one request
    /// timeout: a store that does not answer keeps the rest, which expires
    /// after one TTL.
    pub(crate) fn finish(&mut self, last: Option<(u64, u64)>) {
        self.fence.close();
        self.store
            .set_deadline(Some(Instant::now() + self.settings.request_timeout()));
        if let Some(h) = self.held.take() {
            let mark_ms = match last {
                Some((node_bits, ts)) if node_bits == h.node_bits => {
                    Some(h.claim.mark_ms.max(self.settings.end_ms(ts)))
                }
                // Nothing was issued under this claim.
                Some(_) => Some(h.claim.mark_ms),
                // Unknown: leave the ceiling recorded.
                None => None,
            };
            if let Err(LeaseError::Unreachable { .. }) = self.store.release(&h.claim, mark_ms) {
                // The rest would wait out the same silence.
                return;
            }
        }
        // Best effort: what stays expires after one TTL.
        let orphans = std::mem::take(&mut self.orphans);
        for (claim, mark_ms) in orphans {
            if let Err(LeaseError::Unreachable { .. }) = self.store.release(&claim, mark_ms) {
                break;
            }
        }
    }
}
