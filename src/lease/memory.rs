//! An in-process lease store, for the crate's tests and the fleet
//! simulation: the claim, renew and release rules of the etcd and Redis
//! backends over one table that every keeper made from a [`MemoryBackend`]
//! shares, with node keys expiring by the store's own (injected) clock and
//! faults on demand: an outage, a holder cut off, answers lost or late.
//!
//! [`SimNode`] is one generator with its keeper on that store, on clocks the
//! test moves, stepped by the test: no thread, nothing real-time.
//!
//! Compiled for the crate's tests only (`cfg(test)`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::Lease;
use super::StoreConfig;
use super::keeper::{Ask, Claim, Claimed, Run, Settings, Skipped, Store, WallClock};
use crate::clock::{Clock, ManualClock};
use crate::fence::{Fence, Keeper};
use crate::generator::{Builder, Generator};
use crate::{BuildError, LeaseError};

/// What goes wrong between one holder and the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Requests never reach the store (a partition): each fails as
    /// unreachable, and nothing changes in the store.
    Cut,
    /// Requests are applied but their answers are lost: each fails as
    /// unreachable although the store did what it asked.
    RepliesLost,
}

/// A node key: who holds the node id, until when (store milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeKey {
    /// The holder ([`MemoryStore::holder`]).
    pub(crate) holder: u64,
    /// This claim's own handle (an etcd lease's id): a later claim of the
    /// same node id by the same holder is a different claim.
    handle: i64,
    /// The store's clock at which the key expires.
    pub(crate) expires_ms: u64,
}

/// Run with the store's lock released, as a request is answered.
type Hook = Arc<dyn Fn() + Send + Sync>;

struct Table {
    clock: Arc<dyn Clock>,
    nodes: BTreeMap<u64, NodeKey>,
    marks: BTreeMap<u64, u64>,
    down: bool,
    faults: HashMap<u64, Fault>,
    hooks: HashMap<u64, Hook>,
    next_holder: u64,
    next_handle: i64,
    requests: u64,
}

impl Table {
    /// The node key of `node` if it has not expired.
    fn live(&self, node: u64, now_ms: u64) -> Option<NodeKey> {
        self.nodes
            .get(&node)
            .copied()
            .filter(|key| key.expires_ms > now_ms)
    }
}

/// The shared store: clones are the same store.
#[derive(Clone)]
pub(crate) struct MemoryBackend {
    table: Arc<Mutex<Table>>,
}

#[allow(
    dead_code,
    reason = "the fleet simulation's API; not every test uses all of it"
)]
impl MemoryBackend {
    /// An empty store whose node keys expire by `clock` (the simulation's
    /// true time, say a [`ManualClock`]).
    pub(crate) fn new(clock: impl Clock + 'static) -> MemoryBackend {
        MemoryBackend {
            table: Arc::new(Mutex::new(Table {
                clock: Arc::new(clock),
                nodes: BTreeMap::new(),
                marks: BTreeMap::new(),
                down: false,
                faults: HashMap::new(),
                hooks: HashMap::new(),
                next_holder: 1,
                next_handle: 1,
                requests: 0,
            })),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection for one keeper: a holder of its own, the TTL of
    /// `settings` (exact, to the millisecond rounded up).
    pub(crate) fn store(&self, settings: &Settings) -> MemoryStore {
        let mut table = self.table();
        let holder = table.next_holder;
        table.next_holder += 1;
        MemoryStore {
            backend: self.clone(),
            holder,
            ttl_ms: u64::try_from(settings.ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX),
            timeout: settings.connect_timeout,
        }
    }

    /// The store's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        self.table().clock.now_ms()
    }

    /// An outage: while `down`, every request of every holder fails as
    /// unreachable and changes nothing.
    pub(crate) fn set_down(&self, down: bool) {
        self.table().down = down;
    }

    /// A fault between `holder` and the store (`None`: healthy again).
    pub(crate) fn set_fault(&self, holder: u64, fault: Option<Fault>) {
        let mut table = self.table();
        match fault {
            Some(fault) => table.faults.insert(holder, fault),
            None => table.faults.remove(&holder),
        };
    }

    /// Runs `hook` each time a request of `holder` has been applied, before
    /// its answer is returned (`None`: no more): moving that holder's clocks
    /// in it makes an answer arrive late.
    pub(crate) fn on_answer(&self, holder: u64, hook: Option<Hook>) {
        let mut table = self.table();
        match hook {
            Some(hook) => table.hooks.insert(holder, hook),
            None => table.hooks.remove(&holder),
        };
    }

    /// Writes a node id's mark, as an operator (or a bad clock) could.
    pub(crate) fn set_mark(&self, node: u64, mark_ms: u64) {
        self.table().marks.insert(node, mark_ms);
    }

    /// A node id's mark (`None`: never written).
    pub(crate) fn mark(&self, node: u64) -> Option<u64> {
        self.table().marks.get(&node).copied()
    }

    /// The holder of a node id now, by the store's clock.
    pub(crate) fn holder_of(&self, node: u64) -> Option<u64> {
        let table = self.table();
        let now = table.clock.now_ms();
        table.live(node, now).map(|key| key.holder)
    }

    /// The node ids held now, with their keys, by the store's clock.
    pub(crate) fn held(&self) -> Vec<(u64, NodeKey)> {
        let table = self.table();
        let now = table.clock.now_ms();
        table
            .nodes
            .iter()
            .filter(|(_, key)| key.expires_ms > now)
            .map(|(node, key)| (*node, *key))
            .collect()
    }

    /// Requests that reached the store so far.
    pub(crate) fn requests(&self) -> u64 {
        self.table().requests
    }
}

/// One keeper's connection to a [`MemoryBackend`].
pub(crate) struct MemoryStore {
    backend: MemoryBackend,
    holder: u64,
    ttl_ms: u64,
    timeout: Duration,
}

impl MemoryStore {
    /// This connection's holder id.
    pub(crate) fn holder(&self) -> u64 {
        self.holder
    }

    /// Runs one request against the table at the store's time, unless a
    /// fault stops it or loses its answer.
    fn request<T>(
        &mut self,
        what: &str,
        apply: impl FnOnce(&mut Table, u64) -> T,
    ) -> Result<T, LeaseError> {
        let (answer, hook) = {
            let mut table = self.backend.table();
            let fault = table.faults.get(&self.holder).copied();
            if table.down || fault == Some(Fault::Cut) {
                return Err(self.unreachable(what));
            }
            table.requests += 1;
            let now = table.clock.now_ms();
            let answer = apply(&mut table, now);
            let hook = table.hooks.get(&self.holder).cloned();
            if fault == Some(Fault::RepliesLost) {
                (None, hook)
            } else {
                (Some(answer), hook)
            }
        };
        if let Some(hook) = hook {
            hook();
        }
        answer.ok_or_else(|| self.unreachable(what))
    }

    fn unreachable(&self, what: &str) -> LeaseError {
        LeaseError::Unreachable {
            server: "memory".into(),
            waited: self.timeout,
            reason: format!("{what}: no answer"),
        }
    }
}

impl Store for MemoryStore {
    fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError> {
        let (holder, ttl_ms) = (self.holder, self.ttl_ms);
        self.request("claim a node id", |table, now| {
            let mut skipped = Skipped::default();
            for node in ask.first..=ask.last {
                if table.live(node, now).is_some() {
                    continue;
                }
                let mark_ms = table.marks.get(&node).copied().unwrap_or(0);
                match ask.takes(mark_ms) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(()) => {
                        skipped.add(node, mark_ms);
                        continue;
                    }
                }
                let handle = table.next_handle;
                table.next_handle += 1;
                table.nodes.insert(
                    node,
                    NodeKey {
                        holder,
                        handle,
                        expires_ms: now.saturating_add(ttl_ms),
                    },
                );
                let ceiling_ms = mark_ms.max(ask.ceiling_ms);
                table.marks.insert(node, ceiling_ms);
                let claim = Claim {
                    node,
                    mark_ms,
                    ceiling_ms,
                    handle,
                };
                return Claimed::Node(claim, skipped);
            }
            Claimed::None(skipped)
        })
    }

    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError> {
        let ttl_ms = self.ttl_ms;
        self.request("renew the lease", |table, now| {
            match table.live(claim.node, now) {
                Some(key) if key.handle == claim.handle => {
                    table.nodes.insert(
                        claim.node,
                        NodeKey {
                            expires_ms: now.saturating_add(ttl_ms),
                            ..key
                        },
                    );
                    let mark = table.marks.entry(claim.node).or_insert(0);
                    *mark = (*mark).max(ceiling_ms);
                    true
                }
                _ => false,
            }
        })
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        self.request("release the node id", |table, now| {
            if table
                .live(claim.node, now)
                .is_some_and(|key| key.handle == claim.handle)
            {
                if let Some(mark_ms) = mark_ms {
                    table.marks.insert(claim.node, mark_ms);
                }
                table.nodes.remove(&claim.node);
            }
        })
    }
}

/// What a simulated generator's drop told its keeper: `Some(last)` once
/// dropped (see [`Keeper::release`]).
type Last = Arc<Mutex<Option<Option<(u64, u64)>>>>;

/// The generator's side of a [`SimNode`]'s keeper: it only records what the
/// dropped generator ended on.
struct Recorder(Last);

impl Keeper for Recorder {
    fn release(self: Box<Self>, last: Option<(u64, u64)>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(last);
    }
}

/// One leased generator on a [`MemoryBackend`], with no thread: the test
/// moves its clocks and steps its keeper.
///
/// Two clocks belong to the node: its wall clock (a [`ManualClock`], read by
/// the generator and by the keeper for ceilings and usable marks; skew it,
/// step it back) and the fence's monotonic clock (a quanta mock, the lease's
/// deadline; only ever moves forward). The store has a third, its own.
pub(crate) struct SimNode {
    generator: Generator<ManualClock>,
    keeper: Run<MemoryStore>,
    fence: Arc<Fence>,
    mock: Arc<quanta::Mock>,
    clock: ManualClock,
    holder: u64,
    last: Last,
}

#[allow(
    dead_code,
    reason = "the fleet simulation's API; not every test uses all of it"
)]
impl SimNode {
    /// Builds `builder`'s generator on `clock`, leased by `lease` (made with
    /// [`Lease::memory`], with its TTL, margin and bounds), claiming its node
    /// id now (one attempt: no retry, no waiting). The fence clock starts at
    /// 0 ns.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`]: `BuildError::Lease` with
    /// [`LeaseError::AllHeld`], [`LeaseError::MarksAhead`] or
    /// [`LeaseError::Unreachable`] (an outage or a fault) among others.
    pub(crate) fn start<C: Clock>(
        builder: Builder<C>,
        clock: ManualClock,
        lease: &Lease,
    ) -> Result<SimNode, BuildError> {
        let StoreConfig::Memory(backend) = &lease.store else {
            return Err(LeaseError::Config {
                reason: "a simulated node needs Lease::memory".into(),
            }
            .into());
        };
        let (source, mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        let last = Last::default();
        let mut keeper = None;
        let mut builder = builder.clock(clock.clone());
        let lead = builder.lead();
        builder.fence = Some(fence.clone());
        let mut parts = builder.into_parts()?;
        let mut make_keeper = |layout, lead| -> Result<Box<dyn Keeper>, BuildError> {
            let mut settings = lease.settings(layout, lead)?;
            settings.wall = WallClock::new(clock.clone());
            let store = backend.store(&settings);
            let mut run = Run::new(store, settings, fence.clone());
            run.claim_first()?;
            keeper = Some(run);
            Ok(Box::new(Recorder(last.clone())))
        };
        parts.keeper = Some(make_keeper(&parts.plan.layout, lead)?);
        let generator = Generator::from_parts(parts);
        let keeper = keeper.ok_or_else(|| LeaseError::Config {
            reason: "the keeper was not made".into(),
        })?;
        Ok(SimNode {
            holder: keeper_holder(&keeper),
            generator,
            keeper,
            fence,
            mock,
            clock,
            last,
        })
    }

    /// The generator: issue with `poll_id`/`poll_ids` only. The others
    /// (`try_next_id` included) wait as the policies say, on the real clock,
    /// for a manual clock that only the test moves: they would hang.
    pub(crate) fn generator(&self) -> &Generator<ManualClock> {
        &self.generator
    }

    /// The node's wall clock (shared with the generator and the keeper).
    pub(crate) fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The fence's monotonic clock: `increment` it to let time pass for the
    /// lease's deadline.
    pub(crate) fn mock(&self) -> &Arc<quanta::Mock> {
        &self.mock
    }

    /// Lets `by` pass on both of the node's clocks.
    pub(crate) fn advance(&self, by: Duration) {
        self.mock.increment(by);
        self.clock.advance(by);
    }

    /// The fence's clock now, in nanoseconds since the node started.
    pub(crate) fn now_ns(&self) -> u64 {
        self.fence.now_ns()
    }

    /// One round of the keeper (see `Run::step`): returns the fence
    /// nanoseconds at which it wants the next; stepping earlier is harmless
    /// (do, after the generator was refused: it may want a higher ceiling or
    /// a rotation).
    pub(crate) fn step(&mut self) -> u64 {
        self.keeper.step()
    }

    /// This node's holder id at the store (for [`MemoryBackend::set_fault`]).
    pub(crate) fn holder(&self) -> u64 {
        self.holder
    }

    /// The node id the keeper holds (its fence may have closed meanwhile).
    pub(crate) fn held_node(&self) -> Option<u64> {
        self.keeper.held_node()
    }

    /// The node id the fence is open for right now (the generator may issue
    /// under it), if any.
    pub(crate) fn open_node(&self) -> Option<u64> {
        let (grant, _) = self.fence.check()?;
        let id = crate::id::Id::from_u64(grant.node_bits);
        self.generator.layout().decode(id).ok().map(|d| d.node_id())
    }

    /// The free node ids the keeper's last claim skipped for their marks:
    /// how many, and the lowest with their marks.
    pub(crate) fn skipped(&self) -> (u64, Vec<(u64, u64)>) {
        let s = self.keeper.skipped();
        (s.count, s.lowest.clone())
    }

    /// A clean shutdown: drops the generator, then the keeper records the
    /// last timestamp issued and releases the node id (if the store answers).
    pub(crate) fn shutdown(self) {
        let SimNode {
            generator,
            mut keeper,
            last,
            ..
        } = self;
        drop(generator);
        let last = last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .flatten();
        keeper.finish(last);
    }

    /// A crash (SIGKILL): the node vanishes; its node key stays until it
    /// expires, its mark stays at the last ceiling recorded.
    pub(crate) fn crash(self) {
        drop(self);
    }
}

fn keeper_holder(run: &Run<MemoryStore>) -> u64 {
    run.store().holder()
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::GenerateError;
    use crate::layout::Layout;

    const T: u64 = 1_700_000_000_000;
    const TTL: Duration = Duration::from_secs(1);

    fn lease(backend: &MemoryBackend) -> Lease {
        Lease::memory(backend)
            .ttl(TTL)
            .node_ids(0..=3)
            .connect_timeout(Duration::from_millis(100))
    }

    fn node(lease: &Lease, at_ms: u64) -> Result<SimNode, BuildError> {
        SimNode::start(
            Generator::builder(Layout::twitter()).single_node(),
            ManualClock::new(at_ms),
            lease,
        )
    }

    #[test]
    fn claims_take_the_lowest_free_node_id_and_expire_by_the_stores_clock() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::new(store_clock.clone());
        let lease = lease(&backend);
        let a = node(&lease, T).unwrap();
        let b = node(&lease, T).unwrap();
        assert_eq!((a.held_node(), b.held_node()), (Some(0), Some(1)));
        assert_eq!(backend.holder_of(0), Some(a.holder()));
        assert!(
            backend.mark(0).unwrap() >= T + 1_000,
            "the ceiling recorded"
        );
        a.crash();
        assert!(matches!(node(&lease, T).unwrap().held_node(), Some(2)));
        store_clock.advance(TTL);
        assert_eq!(backend.holder_of(0), None, "expired by the store's clock");
        assert_eq!(node(&lease, T).unwrap().held_node(), Some(0));
        b.shutdown();
        assert_eq!(backend.holder_of(1), None, "released");
    }

    #[test]
    fn a_node_renews_on_its_steps_and_is_fenced_when_cut_off() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::new(store_clock.clone());
        let mut a = node(&lease(&backend), T).unwrap();
        let id = a.generator().poll_id().unwrap();
        let step = Duration::from_millis(100);
        for _ in 0..30 {
            a.advance(step);
            store_clock.advance(step);
            a.step();
        }
        assert_eq!(a.open_node(), Some(0), "renewed for 3 s");
        assert!(a.generator().poll_id().unwrap() > id);
        // Renewed last at 2.8 s (steps of 100 ms, renewals every 333 ms):
        // valid until 2.8 s + 0.8 TTL.
        backend.set_fault(a.holder(), Some(Fault::Cut));
        for _ in 0..5 {
            a.advance(step);
            store_clock.advance(step);
            a.step();
        }
        assert_eq!(a.open_node(), Some(0), "within the TTL less the margin");
        a.advance(step);
        store_clock.advance(step);
        assert_eq!(a.open_node(), None, "fenced at 0.8 TTL");
        assert_eq!(a.generator().poll_id(), Err(GenerateError::Fenced));
        backend.set_fault(a.holder(), None);
        a.step();
        assert_eq!(
            a.open_node(),
            Some(0),
            "the lapsed claim given back, and node 0 claimed afresh"
        );
        // The fresh claim's floor is the ceiling the generator was last
        // granted (renewed at 2.8 s: 3.8 s).
        assert_eq!(
            a.generator().poll_id(),
            Err(GenerateError::SequenceExhausted {
                retry_after: Duration::from_millis(201)
            })
        );
        a.advance(Duration::from_millis(201));
        assert_eq!(a.generator().poll_id().map(drop), Ok(()));
    }

    #[test]
    fn successive_holders_of_a_node_id_never_issue_the_same_id() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::new(store_clock.clone());
        let lease = lease(&backend).node_ids(5..=5);
        let mut seen = HashSet::new();
        let mut at = T;
        for round in 0..20 {
            // Every other holder's clock is a minute behind the last one's.
            let skew = if round % 2 == 0 { 0 } else { 60_000 };
            let n = node(&lease, at - skew).unwrap();
            for _ in 0..5 {
                match n.generator().poll_id() {
                    Ok(id) => assert!(seen.insert(id), "{id:?} issued twice"),
                    Err(GenerateError::Fenced | GenerateError::SequenceExhausted { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            if round % 3 == 0 {
                n.crash();
                store_clock.advance(TTL);
                at += 1_000;
            } else {
                n.shutdown();
            }
            at += 1;
        }
        assert!(seen.len() >= 20, "{} ids", seen.len());
    }

    #[test]
    fn an_outage_fails_a_claim_as_unreachable() {
        let backend = MemoryBackend::new(ManualClock::new(T));
        backend.set_down(true);
        let err = node(&lease(&backend), T).err().unwrap();
        assert!(
            matches!(err, BuildError::Lease(LeaseError::Unreachable { .. })),
            "{err}"
        );
        assert_eq!(backend.requests(), 0);
    }
}
