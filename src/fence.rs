//! Fencing: while a node-id lease cannot be proven valid, the generator
//! issues nothing.
//!
//! A lease keeper (the `etcd` and `redis` features) opens the fence when it
//! claims a node id and keeps pushing its deadline forward while renewals
//! succeed; a renewal answered after the deadline does not, and a fence once
//! closed (by the keeper, or by its deadline passing) reopens only for a
//! fresh claim, under a new generation. The deadline is on a monotonic clock
//! of its own (the TSC through `quanta`), whatever clock the generator reads,
//! so a wall clock stepped back cannot extend a lease. Nothing has to happen for the fence to close: a
//! generator thread compares the deadline with the time itself, so a keeper
//! thread that is starved or paused cannot keep a lapsed lease open.
//!
//! # Reading a grant consistently
//!
//! A grant is several words (node bits, floor, ceiling, rewind), replaced
//! together when the keeper claims a node id, and read by every generator
//! call. They are published like a seqlock: the keeper makes `generation` odd,
//! writes the words, and makes it even again; a reader takes a grant only if
//! it saw the same even generation before and after reading the words. The
//! generation a reader saw is its *ticket*: after its compare-and-swap, the
//! generator [confirms](Fence::confirm) that the generation is unchanged and
//! the deadline not passed, so an ID is handed out only if it was installed
//! while the grant it was made under was still valid. An ID that fails the
//! confirmation is dropped (never returned), which is harmless: IDs need to be
//! unique, not dense.

use std::sync::OnceLock;
use std::thread::Thread;

use crate::clock::Source;
use crate::primitive::{AtomicBool, AtomicU64, Ordering, fence as atomic_fence};

#[derive(Debug)]
pub(crate) struct Fence {
    clock: Source,
    origin: u64,
    /// Seqlock generation of the grant: odd while the keeper replaces it.
    generation: AtomicU64,
    /// Monotonic nanoseconds since `origin` until which the lease is proven
    /// valid; 0 while closed.
    valid_until: AtomicU64,
    /// The leased node id's bits in ID position.
    node_bits: AtomicU64,
    /// The node bits of the latest claim, valid once `claimed` is set: the
    /// node id held, whether its fence is open, waits to open, or closed.
    claimed_bits: AtomicU64,
    /// Whether the keeper has claimed a node id yet.
    claimed: AtomicBool,
    /// The highest timestamp field a previous holder of that node id may
    /// have used: the generator issues only after it.
    floor: AtomicU64,
    /// The highest timestamp field the store has recorded for this holder:
    /// the generator enters no tick above it. Only grows within a generation.
    ceiling: AtomicU64,
    /// The grant moves the timestamp back to the floor (rotation).
    rewind: AtomicBool,
    /// The highest tick at which a generator moved its state under another
    /// node id (0: none). A clock-id step in that tick could issue below IDs
    /// of the same tick under the old node id, so none is taken at or below it.
    switched: AtomicU64,
    /// The highest tick a generator was refused for want of ceiling under the
    /// current grant (0: none); the keeper raises the ceiling past it. Reset
    /// by each fresh grant, so a tick wanted under an old node id never
    /// raises a fresh node id's mark.
    wanted: AtomicU64,
    /// A clock rollback of this many ticks makes the generator ask for a
    /// fresh node id (0: never).
    rotate_after: AtomicU64,
    /// A rotation request: the clock's tick plus one (0: none) ...
    rotate_below: AtomicU64,
    /// ... and the node bits of the state that was behind.
    rotate_node: AtomicU64,
    /// When the fence last closed (monotonic ns since `origin`; 0: never
    /// opened): the keeper's close, or the deadline that passed. Read only by
    /// [`Fence::closed_for`], for health reports.
    closed_at: AtomicU64,
    /// Free node ids the keeper's claims passed over because their marks
    /// were too far ahead of its clock (each claim counts each it skipped).
    skipped: AtomicU64,
    /// The keeper thread, woken by requests.
    keeper: OnceLock<Thread>,
}

/// What an open fence grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant {
    /// The leased node id's bits in ID position.
    pub(crate) node_bits: u64,
    /// The highest timestamp field any earlier holder of that node id may
    /// have used; the generator issues only after it.
    pub(crate) floor: u64,
    /// The highest timestamp field this holder may use until the keeper
    /// records a higher one in the store.
    pub(crate) ceiling: u64,
    /// Restart the timestamp right after `floor` even if the generator's own
    /// timestamp is later (rotating to a fresh node id after the clock stepped
    /// back: IDs then go back in time under the new node id, still unique).
    /// Otherwise the timestamp never moves back.
    pub(crate) rewind: bool,
}

/// What a generator keeps while its node id is leased: the lease keeper,
/// told the generator's final state when the generator is dropped.
pub(crate) trait Keeper: Send + Sync {
    /// Stops keeping the lease and gives the node id back. `last` is the
    /// node bits the generator ended on and the highest timestamp field it
    /// issued under them, or `None` if that is not known (the ceiling
    /// recorded in the store then stands).
    fn release(self: Box<Self>, last: Option<(u64, u64)>);
}

// Opened, extended and closed by the lease keepers behind the `etcd` and
// `redis` features; the default build only checks it.
#[cfg_attr(
    not(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    )),
    allow(dead_code)
)]
impl Fence {
    /// A closed fence on the TSC clock, if its rate passed the check against
    /// `Instant` (as [`MonotonicClock`](crate::MonotonicClock)'s does),
    /// else on `Instant`: a skewed calibration would shift the deadline.
    pub(crate) fn new() -> Fence {
        Fence::on(Source::checked())
    }

    /// A closed fence on `clock` (a mocked one in tests).
    #[cfg(test)]
    pub(crate) fn with_clock(clock: quanta::Clock) -> Fence {
        Fence::on(Source::Counter(clock))
    }

    /// A closed fence on a loom model's clock (nanoseconds in `ns`).
    #[cfg(flakeid_loom)]
    pub(crate) fn with_model_clock(ns: std::sync::Arc<AtomicU64>) -> Fence {
        Fence::on(Source::Model(ns))
    }

    fn on(clock: Source) -> Fence {
        let origin = clock.raw();
        Fence {
            clock,
            origin,
            generation: AtomicU64::new(0),
            valid_until: AtomicU64::new(0),
            node_bits: AtomicU64::new(0),
            claimed_bits: AtomicU64::new(0),
            claimed: AtomicBool::new(false),
            floor: AtomicU64::new(0),
            ceiling: AtomicU64::new(0),
            rewind: AtomicBool::new(false),
            switched: AtomicU64::new(0),
            wanted: AtomicU64::new(0),
            rotate_after: AtomicU64::new(0),
            rotate_below: AtomicU64::new(0),
            rotate_node: AtomicU64::new(0),
            closed_at: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            keeper: OnceLock::new(),
        }
    }

    /// Monotonic nanoseconds since the fence was made (at least 1).
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.clock
            .delta_as_nanos(self.origin, self.clock.raw())
            .max(1)
    }

    /// The grant and its ticket, if the lease is proven valid right now.
    #[inline]
    pub(crate) fn check(&self) -> Option<(Grant, u64)> {
        self.check_with_deadline()
            .map(|(grant, ticket, _)| (grant, ticket))
    }

    /// As [`check`](Fence::check), with how many nanoseconds from now the
    /// grant stays proven valid.
    #[inline]
    pub(crate) fn check_with_deadline(&self) -> Option<(Grant, u64, u64)> {
        loop {
            let ticket = self.generation.load(Ordering::Acquire);
            if ticket & 1 == 1 {
                // Being replaced: the keeper closed the fence first anyway.
                return None;
            }
            let until = self.valid_until.load(Ordering::Relaxed);
            let grant = Grant {
                node_bits: self.node_bits.load(Ordering::Relaxed),
                floor: self.floor.load(Ordering::Relaxed),
                ceiling: self.ceiling.load(Ordering::Relaxed),
                rewind: self.rewind.load(Ordering::Relaxed),
            };
            // Orders the loads above before the generation's second reading.
            atomic_fence(Ordering::Acquire);
            if self.generation.load(Ordering::Relaxed) != ticket {
                return None;
            }
            let now = self.now_ns();
            if now < until {
                return Some((grant, ticket, until - now));
            }
            if self.expire(until) {
                return None;
            }
            // A renewal moved the deadline meanwhile: look again.
        }
    }

    /// Notes the node bits of a claim the store granted, before its fence
    /// opens (at once, or after a wait): what
    /// [`claimed_node_bits`](Fence::claimed_node_bits) reports.
    pub(crate) fn note_claim(&self, node_bits: u64) {
        self.claimed_bits.store(node_bits, Ordering::Relaxed);
        // Orders the bits before the flag a reader checks first.
        self.claimed.store(true, Ordering::Release);
    }

    /// The node bits of the latest claim, whether or not the lease is proven
    /// valid right now: the node id the generator holds (its fence open, or
    /// waiting to open), or held last and takes back or leaves at its next
    /// claim. `None` before the first claim.
    pub(crate) fn claimed_node_bits(&self) -> Option<u64> {
        self.claimed
            .load(Ordering::Acquire)
            .then(|| self.claimed_bits.load(Ordering::Relaxed))
    }

    /// The deadline `until` has passed: closes the fence, so that a renewal
    /// answered later cannot reopen it. `false` if the deadline moved
    /// meanwhile (a renewal, or a fresh claim, landed first).
    #[cold]
    #[inline(never)]
    fn expire(&self, until: u64) -> bool {
        until == 0
            || match self.valid_until.compare_exchange(
                until,
                0,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.closed_at.store(until, Ordering::Relaxed);
                    true
                }
                Err(0) => true,
                Err(_) => false,
            }
    }

    /// How long the fence has been closed, `None` while the lease is proven
    /// valid. Since the generator was built if no node id was claimed yet.
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    pub(crate) fn closed_for(&self) -> Option<std::time::Duration> {
        if self.check().is_some() {
            return None;
        }
        // `check` may have just closed it, recording when.
        let closed_at = self.closed_at.load(Ordering::Relaxed);
        Some(std::time::Duration::from_nanos(
            self.now_ns().saturating_sub(closed_at),
        ))
    }

    /// The ceiling of the current grant; read between [`check`](Fence::check)
    /// and [`confirm`](Fence::confirm), which tells whether it belonged to
    /// the checked grant.
    #[inline]
    pub(crate) fn ceiling(&self) -> u64 {
        self.ceiling.load(Ordering::Relaxed)
    }

    /// The floor of the current grant; read, like the ceiling, between
    /// [`check`](Fence::check) and [`confirm`](Fence::confirm).
    #[inline]
    pub(crate) fn floor(&self) -> u64 {
        self.floor.load(Ordering::Relaxed)
    }

    /// Notes that a generator moves its state under another node id at
    /// `tick`, before it installs that state: a thread that sees the state
    /// then sees this too.
    #[cold]
    pub(crate) fn switched_at(&self, tick: u64) {
        self.switched.fetch_max(tick, Ordering::Relaxed);
    }

    /// The highest tick in which a generator moved its state under another
    /// node id (0: none).
    pub(crate) fn switched(&self) -> u64 {
        self.switched.load(Ordering::Relaxed)
    }

    /// After a compare-and-swap made under the grant of `ticket`: whether that
    /// grant is still the current one and still valid. A generator hands out
    /// the IDs of the swap only if so.
    #[inline]
    pub(crate) fn confirm(&self, ticket: u64) -> bool {
        // Keeps the loads below after the compare-and-swap (its load half);
        // what is left is the few nanoseconds a TSC read may run early,
        // which the safety margin covers many times over.
        atomic_fence(Ordering::Acquire);
        let until = self.valid_until.load(Ordering::Relaxed);
        atomic_fence(Ordering::Acquire);
        if self.generation.load(Ordering::Relaxed) != ticket {
            return false;
        }
        if self.now_ns() < until {
            return true;
        }
        // Past the deadline: closed for good (the IDs are dropped either way).
        self.expire(until);
        false
    }

    /// Opens the fence for a fresh claim, valid until `valid_until_ns`, and
    /// notes the claim (a claim that waits first is noted when it is made).
    /// Called by one thread at a time (the keeper).
    pub(crate) fn open(&self, grant: Grant, valid_until_ns: u64) {
        self.note_claim(grant.node_bits);
        let generation = self.begin_replace();
        self.write_grant(grant, valid_until_ns);
        self.end_replace(generation.wrapping_add(2));
    }

    /// The first step of [`open`](Fence::open): makes the generation odd, so
    /// that no checker takes the words about to change, and returns the
    /// even generation it replaced.
    pub(crate) fn begin_replace(&self) -> u64 {
        // Even between writes; the keeper is the only writer.
        let generation = self.generation.load(Ordering::Relaxed);
        self.generation
            .store(generation.wrapping_add(1), Ordering::Relaxed);
        // Orders the odd generation before the words written next.
        atomic_fence(Ordering::Release);
        generation
    }

    /// The second step of [`open`](Fence::open): writes the grant's words
    /// and its deadline. Only between the other two steps: a checker trusts
    /// words read under an unchanged even generation.
    pub(crate) fn write_grant(&self, grant: Grant, valid_until_ns: u64) {
        // The deadline is written with swaps, not stores, here and in
        // `close`: it races read-modify-writes (a renewal's `extend`, a
        // generator's `expire`), and loom 0.7 lets a plain store fall between
        // the read and the write of a concurrent read-modify-write
        // (tokio-rs/loom#254), a history no CPU produces. A swap costs
        // nothing on these cold paths and keeps the models exact.
        self.valid_until.swap(0, Ordering::Relaxed);
        self.wanted.store(0, Ordering::Relaxed);
        self.node_bits.store(grant.node_bits, Ordering::Relaxed);
        self.floor.store(grant.floor, Ordering::Relaxed);
        self.ceiling.store(grant.ceiling, Ordering::Relaxed);
        self.rewind.store(grant.rewind, Ordering::Relaxed);
        self.valid_until.swap(valid_until_ns, Ordering::Relaxed);
    }

    /// The last step of [`open`](Fence::open): publishes the words under
    /// `generation`, the even one after the replaced grant's, so that no
    /// ticket of that grant confirms any more.
    pub(crate) fn end_replace(&self, generation: u64) {
        self.generation.store(generation, Ordering::Release);
    }

    /// Pushes the deadline of an open fence forward after a renewal, and
    /// raises the ceiling to what the store now records; returns whether it
    /// did. A fence that is closed, or whose deadline has passed, stays
    /// closed: a renewal answered after the deadline changes nothing, and a
    /// ticket taken before the deadline never confirms again. Only a fresh
    /// claim ([`open`](Fence::open)) reopens it.
    pub(crate) fn extend(&self, valid_until_ns: u64, ceiling: u64) -> bool {
        self.extend_if(valid_until_ns, ceiling, |until| {
            until != 0 && self.now_ns() < until
        })
    }

    /// Pushes the deadline to `valid_until_ns` and raises the ceiling if the
    /// current deadline passes `open`.
    pub(crate) fn extend_if(
        &self,
        valid_until_ns: u64,
        ceiling: u64,
        open: impl Fn(u64) -> bool,
    ) -> bool {
        let extended =
            self.valid_until
                .fetch_update(Ordering::Release, Ordering::Relaxed, |until| {
                    open(until).then_some(until.max(valid_until_ns))
                });
        if extended.is_ok() {
            self.ceiling.fetch_max(ceiling, Ordering::Release);
        }
        extended.is_ok()
    }

    /// Closes the fence: nothing more is issued until a fresh claim. A
    /// generator that finds the deadline passed closes it the same way.
    pub(crate) fn close(&self) {
        let now = self.now_ns();
        // A swap, as in `open`.
        let until = self.valid_until.swap(0, Ordering::Release);
        // A fence closed already keeps the time it closed (the keeper closes
        // again after a generator found the deadline passed); one whose
        // deadline passed unnoticed closed at that deadline.
        if until != 0 {
            self.closed_at.store(now.min(until), Ordering::Relaxed);
        }
    }

    /// Tells the keeper (cold path) that a generator needs `tick` covered.
    #[cold]
    pub(crate) fn want(&self, tick: u64) {
        if self.wanted.fetch_max(tick, Ordering::Relaxed) < tick {
            self.wake();
        }
    }

    /// The highest tick a generator was refused for want of ceiling (0: none).
    pub(crate) fn wanted(&self) -> u64 {
        self.wanted.load(Ordering::Relaxed)
    }

    /// Makes a clock rollback of `ticks` or more ask for a fresh node id.
    pub(crate) fn rotate_after(&self, ticks: u64) {
        self.rotate_after.store(ticks, Ordering::Relaxed);
    }

    /// Notes (cold path) that a generator whose state carries `node_bits`
    /// found the clock at `now_tick`, `behind` ticks behind its timestamp.
    #[cold]
    pub(crate) fn behind(&self, node_bits: u64, now_tick: u64, behind: u64) {
        let after = self.rotate_after.load(Ordering::Relaxed);
        if after == 0 || behind < after || self.rotate_below.load(Ordering::Relaxed) != 0 {
            return;
        }
        self.rotate_node.store(node_bits, Ordering::Relaxed);
        self.rotate_below
            .store(now_tick.saturating_add(1), Ordering::Release);
        self.wake();
    }

    /// A pending rotation request: the node bits that were behind, and the
    /// clock's tick then (a fresh node id must have no timestamp at or after
    /// it).
    pub(crate) fn take_rotation(&self) -> Option<(u64, u64)> {
        let below = self.rotate_below.swap(0, Ordering::Acquire);
        (below != 0).then(|| (self.rotate_node.load(Ordering::Relaxed), below - 1))
    }

    /// Counts free node ids a claim skipped for their marks.
    pub(crate) fn note_skipped(&self, count: u64) {
        self.skipped.fetch_add(count, Ordering::Relaxed);
    }

    /// Free node ids the claims skipped for their marks so far.
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Registers the thread that requests wake.
    pub(crate) fn set_keeper(&self, thread: Thread) {
        let _ = self.keeper.set(thread);
    }

    fn wake(&self) {
        if let Some(keeper) = self.keeper.get() {
            keeper.unpark();
        }
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool as StdBool;
    use std::time::Duration;

    fn grant(node: u64, floor: u64) -> Grant {
        Grant {
            node_bits: node << 12,
            floor,
            ceiling: u64::MAX,
            rewind: false,
        }
    }

    #[test]
    fn a_fence_opens_expires_extends_and_closes() {
        let (clock, mock) = quanta::Clock::mock();
        let fence = Fence::with_clock(clock);
        assert_eq!(fence.check(), None, "closed at first");
        let g = Grant {
            ceiling: 500,
            ..grant(5, 99)
        };
        fence.open(g, 1_000_000);
        let (seen, ticket) = fence.check().unwrap();
        assert_eq!(seen, g);
        mock.increment(Duration::from_micros(999));
        assert_eq!(fence.check(), Some((g, ticket)));
        fence.extend(2_000_000, 700);
        mock.increment(Duration::from_micros(500));
        assert_eq!(
            fence.check(),
            Some((Grant { ceiling: 700, ..g }, ticket)),
            "extended, the ceiling raised, the same grant"
        );
        assert!(fence.confirm(ticket));
        mock.increment(Duration::from_micros(600));
        assert_eq!(fence.check(), None, "expired at the deadline");
        assert!(!fence.confirm(ticket));
        fence.close();
        fence.extend(u64::MAX, u64::MAX);
        assert_eq!(
            fence.check(),
            None,
            "a renewal does not reopen a closed fence"
        );
        assert_eq!(fence.ceiling(), 700, "nor raises its ceiling");
    }

    /// The time a fence closed is when it closed first: at the deadline a
    /// generator found passed, or the keeper's close; the keeper closing it
    /// again later (as it does after a lapse) moves nothing.
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    #[test]
    fn a_fence_is_closed_since_it_first_closed() {
        let (clock, mock) = quanta::Clock::mock();
        let fence = Fence::with_clock(clock);
        let ms = Duration::from_millis;
        mock.increment(ms(5));
        assert_eq!(fence.closed_for(), Some(ms(5)), "never opened: since made");
        fence.open(grant(1, 0), 10_000_000);
        assert_eq!(fence.closed_for(), None);
        // The deadline (10 ms) passes; a generator's check closes it.
        mock.increment(ms(7));
        assert_eq!(fence.check(), None);
        assert_eq!(fence.closed_for(), Some(ms(2)));
        // The keeper notices 40 ms later and closes it again.
        mock.increment(ms(40));
        fence.close();
        assert_eq!(fence.closed_for(), Some(ms(42)));
        // A deadline nobody checked: closed at the deadline, not at the
        // keeper's close.
        fence.open(grant(1, 0), 55_000_000);
        mock.increment(ms(8));
        fence.close();
        assert_eq!(fence.closed_for(), Some(ms(5)));
        // An open fence the keeper closes (the store says someone else holds
        // the node id) is closed from then on.
        fence.open(grant(2, 0), u64::MAX);
        mock.increment(ms(3));
        fence.close();
        mock.increment(ms(4));
        assert_eq!(fence.closed_for(), Some(ms(4)));
    }

    /// A fence on a mocked clock (Miri cannot calibrate the TSC).
    fn fence() -> Fence {
        Fence::with_clock(quanta::Clock::mock().0)
    }

    #[test]
    fn a_ticket_from_a_replaced_grant_is_not_confirmed() {
        let fence = fence();
        fence.open(grant(1, 10), u64::MAX);
        let (_, old) = fence.check().unwrap();
        assert!(fence.confirm(old));
        // Lost and claimed again: same node id, a later floor.
        fence.close();
        fence.open(grant(1, 20), u64::MAX);
        let (now, new) = fence.check().unwrap();
        assert_eq!(now.floor, 20);
        assert!(!fence.confirm(old), "an ID made under the old grant");
        assert!(fence.confirm(new));
    }

    /// A checker racing a close-and-open never pairs one grant's node bits
    /// with another's floor (which would issue under the new node id below
    /// its floor): it reads the words between two equal even generations.
    /// Each grant here is a distinct (node, floor, rewind) triple; every
    /// grant a checker sees must be one of them.
    ///
    /// Counted, not timed: the writer makes a fixed number of opens and,
    /// every few, waits until the checker has made another check, so the two
    /// interleave however the threads are scheduled; the checker stops only
    /// once the writer is done and it has seen an open fence (the last grant
    /// stays open), so `seen > 0` holds on any machine.
    #[test]
    fn a_checker_never_sees_one_grants_node_with_anothers_floor() {
        use std::sync::atomic::AtomicU64 as StdU64;
        use std::sync::atomic::Ordering::{Acquire, Release};
        let fence = fence();
        let make = |i: u64| Grant {
            node_bits: i << 12,
            floor: i * 1000,
            ceiling: i * 1000 + 7,
            rewind: i % 2 == 1,
        };
        let opens: u64 = if cfg!(miri) { 200 } else { 200_000 };
        fence.open(make(1), u64::MAX);
        let done = StdBool::new(false);
        let checks = StdU64::new(0);
        let (torn, seen) = std::thread::scope(|s| {
            let checker = s.spawn(|| {
                let (mut torn, mut seen) = (0u64, 0u64);
                loop {
                    // Read before checking: once done, the fence stays open.
                    let finished = done.load(Acquire);
                    if let Some((g, _)) = fence.check() {
                        seen += 1;
                        if g != make(g.node_bits >> 12) {
                            torn += 1;
                        }
                    }
                    checks.fetch_add(1, Release);
                    if finished && seen > 0 {
                        return (torn, seen);
                    }
                }
            });
            for k in 0..opens {
                fence.open(make(1 + k % 7), u64::MAX);
                if k % 16 == 0 {
                    let before = checks.load(Acquire);
                    while checks.load(Acquire) == before {
                        std::thread::yield_now();
                    }
                }
            }
            done.store(true, Release);
            checker.join().unwrap()
        });
        assert!(seen > 0, "the checker never saw an open fence");
        assert_eq!(torn, 0, "{torn} torn grants among {seen}");
    }

    /// A renewal answered after the deadline (sent at 0.77 TTL, back after
    /// 0.8 TTL) must not reopen the fence, nor let a ticket taken before the
    /// deadline confirm again: only a fresh claim reopens it.
    #[test]
    fn a_late_renewal_does_not_reopen_an_expired_fence() {
        let (clock, mock) = quanta::Clock::mock();
        let fence = Fence::with_clock(clock);
        fence.open(grant(3, 10), 800_000);
        mock.increment(Duration::from_micros(770));
        let (_, ticket) = fence.check().unwrap();
        assert!(fence.confirm(ticket));
        // The renewal was sent now; its answer comes back after the deadline.
        let sent = fence.now_ns();
        mock.increment(Duration::from_micros(100));
        assert_eq!(fence.check(), None, "expired at the deadline");
        assert!(
            !fence.extend(sent + 800_000, 99),
            "a late renewal is refused"
        );
        assert_eq!(fence.check(), None, "the late renewal did not reopen it");
        assert!(
            !fence.confirm(ticket),
            "nor did the old ticket confirm again"
        );
        assert_eq!(fence.ceiling(), u64::MAX, "nor was the ceiling raised");
        // A renewal answered in time still extends.
        fence.open(grant(3, 20), fence.now_ns() + 800_000);
        mock.increment(Duration::from_micros(300));
        let sent = fence.now_ns();
        mock.increment(Duration::from_micros(100));
        assert!(fence.extend(sent + 800_000, 99));
        mock.increment(Duration::from_micros(500));
        assert!(fence.check().is_some(), "extended past the first deadline");
    }

    /// A renewal answered after the deadline on a fence nobody has closed:
    /// no generator called since the deadline passed, so the deadline is
    /// still stored and no `check` has swapped it for 0. The renewal must
    /// be refused all the same, and the fence stay closed: no grant, no
    /// ticket taken before the deadline confirmed, the ceiling unraised,
    /// and closed since the deadline.
    #[test]
    fn a_late_renewal_does_not_reopen_a_fence_nobody_closed() {
        let (clock, mock) = quanta::Clock::mock();
        let fence = Fence::with_clock(clock);
        let g = Grant {
            ceiling: 500,
            ..grant(4, 10)
        };
        fence.open(g, 800_000);
        mock.increment(Duration::from_micros(500));
        let (_, ticket) = fence.check().unwrap();
        // The renewal is sent now; nobody calls until its answer, which
        // comes back after the deadline.
        let sent = fence.now_ns();
        mock.increment(Duration::from_micros(400));
        assert!(
            !fence.extend(sent + 800_000, 700),
            "a late renewal is refused"
        );
        assert_eq!(fence.check(), None, "the late renewal did not reopen it");
        assert!(!fence.confirm(ticket), "nor does a ticket from before it");
        assert_eq!(fence.ceiling(), 500, "nor was the ceiling raised");
        #[cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        ))]
        assert_eq!(
            fence.closed_for(),
            Some(Duration::from_micros(100)),
            "closed since the deadline"
        );
        // A second late answer (a retry's) changes nothing either.
        mock.increment(Duration::from_micros(50));
        assert!(!fence.extend(fence.now_ns() + 800_000, 900));
        assert_eq!(fence.check(), None);
        assert!(!fence.confirm(ticket));
    }

    #[test]
    fn requests_reach_the_keeper_once() {
        let fence = fence();
        assert_eq!(fence.wanted(), 0);
        fence.want(5);
        fence.want(3);
        assert_eq!(fence.wanted(), 5);
        fence.behind(1 << 12, 100, 1_000_000);
        assert_eq!(fence.take_rotation(), None, "rotation is off");
        fence.rotate_after(50);
        fence.behind(1 << 12, 100, 49);
        assert_eq!(fence.take_rotation(), None, "below the threshold");
        fence.behind(1 << 12, 100, 50);
        fence.behind(2 << 12, 90, 60);
        assert_eq!(fence.take_rotation(), Some((1 << 12, 100)), "the first");
        assert_eq!(fence.take_rotation(), None);
    }
}
