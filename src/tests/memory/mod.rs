//! An in-process lease store, for the crate's tests and the fleet
//! simulation: the claim, renew and release rules of the etcd and Redis
//! backends over data that every keeper made from a [`MemoryBackend`]
//! shares, with node keys expiring by the store's own (injected) clock and
//! faults on demand: an outage, a holder cut off, answers lost or late
//! (by a controlled amount, on the holder's own clock).
//!
//! The store is one server, or (`MemoryBackend::replicated`) Redis behind
//! Sentinel: a primary and replicas with asynchronous replication
//! (`servers.rs`), `WAIT` after claims and renewals, the epoch rule, and
//! failovers that the test drives (a failover loses what the promoted
//! replica had not received, and the deposed primary answers until it is
//! demoted), each keeper talking to the primary it resolved until a request
//! fails.
//!
//! [`SimNode`] is one generator with its keeper on that store, on clocks the
//! test moves, stepped by the test: no thread, nothing real-time.

mod node;
mod servers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::clock::Clock;
use crate::error::LeaseError;
use crate::lease::keeper::{Ask, Claim, Claimed, Settings, Skipped, Store};
use crate::plant::Plant;

pub(crate) use node::{Last, Recorder, SimNode, build_leased};
pub(crate) use servers::Servers;
use servers::{Epoch, Write};

/// What goes wrong between one holder and the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Requests never reach the store (a partition): each fails as
    /// unreachable, and nothing changes in the store.
    Cut,
    /// Requests are applied but their answers are lost: each fails as
    /// unreachable although the store did what it asked.
    RepliesLost,
    /// A link going bad: the next request is applied at once and its
    /// answer arrives this much later (the holder's clock,
    /// [`MemoryBackend::set_clock`], moves on by it before the answer is
    /// returned); from then on the link is cut ([`Fault::Cut`]).
    LateThenCut(Duration),
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

/// Moves a holder's clock on by the time given: how long its answer took.
type HolderClock = Arc<dyn Fn(Duration) + Send + Sync>;

struct Table {
    clock: Arc<dyn Clock>,
    servers: Servers,
    /// Replicas that must acknowledge each claim and renewal (`WAIT`).
    acks: u32,
    /// Claims follow the epoch rule (Sentinel).
    epoch_rule: bool,
    down: bool,
    faults: HashMap<u64, Fault>,
    clocks: HashMap<u64, HolderClock>,
    next_holder: u64,
    next_handle: i64,
    requests: u64,
    /// Per holder: the store's time when its last request reached a server
    /// and was applied.
    applied: HashMap<u64, u64>,
}

impl Table {
    /// The data of the primary the sentinels name.
    fn named(&self) -> &servers::Data {
        &self.servers.all[self.servers.named].data
    }
}

/// The shared store: clones are the same store.
#[derive(Clone)]
pub(crate) struct MemoryBackend {
    table: Arc<Mutex<Table>>,
}

impl MemoryBackend {
    /// An empty store on one server whose node keys expire by `clock` (the
    /// simulation's true time, say a [`ManualClock`]).
    pub(crate) fn new(clock: impl Clock + 'static) -> MemoryBackend {
        MemoryBackend::with(clock, Servers::new(&[]), 0, false)
    }

    /// An empty store behind Sentinel: a primary, a replica per entry of
    /// `lags` (how far behind it applies writes, ms), `acks` replicas to
    /// acknowledge each claim and renewal, and the epoch rule.
    pub(crate) fn replicated(
        clock: impl Clock + 'static,
        lags: &[u64],
        acks: u32,
    ) -> MemoryBackend {
        MemoryBackend::with(clock, Servers::new(lags), acks, true)
    }

    fn with(
        clock: impl Clock + 'static,
        servers: Servers,
        acks: u32,
        epoch_rule: bool,
    ) -> MemoryBackend {
        MemoryBackend {
            table: Arc::new(Mutex::new(Table {
                clock: Arc::new(clock),
                servers,
                acks,
                epoch_rule,
                down: false,
                faults: HashMap::new(),
                clocks: HashMap::new(),
                next_holder: 1,
                next_handle: 1,
                requests: 0,
                applied: HashMap::new(),
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
            connected: None,
            plant: settings.plant,
        }
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

    /// How `holder`'s clock moves while an answer to it is late
    /// ([`Fault::LateThenCut`]): `advance` is called with the delay, with the
    /// store's lock released, before the answer is returned.
    pub(crate) fn set_clock(
        &self,
        holder: u64,
        advance: impl Fn(Duration) + Send + Sync + 'static,
    ) {
        self.table().clocks.insert(holder, Arc::new(advance));
    }

    /// Writes a node id's mark on the named primary, as an operator (or a
    /// bad clock) could.
    pub(crate) fn set_mark(&self, node: u64, mark_ms: u64) {
        let mut table = self.table();
        let (now, named) = (table.clock.now_ms(), table.servers.named);
        table.servers.write(named, now, Write::Mark(node, mark_ms));
    }

    /// Starts the named primary's epoch at `since_ms` (store time), as if
    /// it had served the lease data since then.
    pub(crate) fn set_epoch(&self, since_ms: u64) {
        let mut table = self.table();
        let named = table.servers.named;
        let epoch = Epoch {
            replid: table.servers.all[named].replid,
            since: since_ms,
            longest: 0,
        };
        table.servers.write(named, since_ms, Write::Epoch(epoch));
    }

    /// A node id's mark on the named primary (`None`: never written).
    pub(crate) fn mark(&self, node: u64) -> Option<u64> {
        self.table().named().marks.get(&node).copied()
    }

    /// The holder of a node id now, on the named primary, by the store's
    /// clock.
    pub(crate) fn holder_of(&self, node: u64) -> Option<u64> {
        let table = self.table();
        let now = table.clock.now_ms();
        table.named().live(node, now).map(|key| key.holder)
    }

    /// Whether any server that takes itself for a primary (the named one,
    /// a deposed one, a paused one) gives `node` to `holder` now.
    pub(crate) fn holds(&self, node: u64, holder: u64) -> bool {
        let table = self.table();
        let now = table.clock.now_ms();
        table.servers.all.iter().any(|s| {
            s.follows.is_none() && s.data.live(node, now).is_some_and(|k| k.holder == holder)
        })
    }

    /// Requests that reached the store so far.
    pub(crate) fn requests(&self) -> u64 {
        self.table().requests
    }

    /// The store's time when the last request of `holder` reached a server
    /// and was applied: no renewal or claim of it was sent later, so its
    /// fence must close within a TTL less the margin of this.
    pub(crate) fn last_applied(&self, holder: u64) -> Option<u64> {
        self.table().applied.get(&holder).copied()
    }

    /// Drives the servers (a failover, a partition): `f` gets them with
    /// their replication brought up to now, and the store's time.
    pub(crate) fn servers<T>(&self, f: impl FnOnce(&mut Servers, u64) -> T) -> T {
        let mut table = self.table();
        let now = table.clock.now_ms();
        table.servers.replicate(now);
        f(&mut table.servers, now)
    }
}

/// One keeper's connection to a [`MemoryBackend`].
pub(crate) struct MemoryStore {
    backend: MemoryBackend,
    holder: u64,
    ttl_ms: u64,
    timeout: Duration,
    /// The server it talks to, resolved through the sentinels when it has
    /// none, and dropped after a failed request.
    connected: Option<usize>,
    /// A bug planted on purpose: the store's part of
    /// `Plant::WaitShortCounted` (as the Redis store's).
    plant: Option<Plant>,
}

impl MemoryStore {
    /// This connection's holder id.
    pub(crate) fn holder(&self) -> u64 {
        self.holder
    }

    /// Runs one request on the server this keeper talks to (resolved first
    /// if need be), at the store's time, unless a fault stops it or loses
    /// its answer. `apply`'s `Err` is a failure the keeper sees as the store
    /// unreachable (a paused or demoted server, too few replicas), after
    /// which it resolves the primary again.
    fn request<T>(
        &mut self,
        what: &str,
        apply: impl FnOnce(&mut Table, usize, u64) -> Result<T, String>,
    ) -> Result<T, LeaseError> {
        let (answer, late) = {
            let mut table = self.backend.table();
            let fault = table.faults.get(&self.holder).copied();
            if table.down || fault == Some(Fault::Cut) {
                return Err(self.unreachable(what, "no answer"));
            }
            table.requests += 1;
            let now = table.clock.now_ms();
            table.servers.replicate(now);
            let (server, new) = match self.connected {
                Some(server) => (server, false),
                None => (table.servers.resolve(), true),
            };
            if table.servers.all[server].paused {
                self.connected = None;
                return Err(self.unreachable(what, "no answer"));
            }
            table.applied.insert(self.holder, now);
            self.connected = Some(server);
            if new && table.epoch_rule {
                // As the Redis store's touch: a primary that cannot start
                // one yet is left to the claim.
                let _ = start_epoch(&mut table, server, now, self.ttl_ms, self.plant);
            }
            let answer = apply(&mut table, server, now);
            if answer.is_err() {
                self.connected = None;
            }
            match fault {
                Some(Fault::RepliesLost) => (None, None),
                Some(Fault::LateThenCut(by)) => {
                    table.faults.insert(self.holder, Fault::Cut);
                    let clock = table.clocks.get(&self.holder).cloned();
                    let clock = clock.expect("a late answer needs the holder's clock (set_clock)");
                    (Some(answer), Some((clock, by)))
                }
                _ => (Some(answer), None),
            }
        };
        if let Some((clock, by)) = late {
            clock(by);
        }
        match answer {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(reason)) => Err(self.unreachable(what, &reason)),
            None => Err(self.unreachable(what, "no answer")),
        }
    }

    fn unreachable(&self, what: &str, reason: &str) -> LeaseError {
        LeaseError::Unreachable {
            server: "memory".into(),
            waited: self.timeout,
            reason: format!("{what}: {reason}"),
        }
    }
}

/// As the Redis store's epoch rule does on a primary: starts its epoch if
/// it is new to the data and has its replicas (`Err` if it has not),
/// waiting out the longest of `ttl_ms` and every TTL the record shows in
/// use within twice that TTL (the record ignored with
/// `Plant::EpochOwnTtl`); returns how long a claim now waits.
fn start_epoch(
    table: &mut Table,
    s: usize,
    now: u64,
    ttl_ms: u64,
    plant: Option<Plant>,
) -> Result<u64, String> {
    let server = &table.servers.all[s];
    match server.data.epoch {
        Some(epoch) if epoch.replid == server.replid => {
            let longest = ttl_ms.max(epoch.longest);
            return Ok(epoch.since.saturating_add(longest).saturating_sub(now));
        }
        _ => {}
    }
    let (online, acks) = (table.servers.online(s), table.acks);
    if server.follows.is_some() || online < acks {
        return Err(format!(
            "FLAKEID_REPLICAS {online} of {acks} replicas online"
        ));
    }
    let mut longest = ttl_ms;
    if plant != Some(Plant::EpochOwnTtl) {
        for (&ttl, &till) in &server.data.ttls {
            if ttl > longest && till.saturating_add(ttl) > now {
                longest = ttl;
            }
        }
    }
    let epoch = Epoch {
        replid: server.replid,
        since: now,
        longest,
    };
    table.servers.write(s, now, Write::Epoch(epoch));
    Ok(longest)
}

/// Notes a claim's or renewal's TTL in the record, as the Redis scripts do
/// behind Sentinel.
fn note_ttl(table: &mut Table, s: usize, now: u64, ttl_ms: u64, plant: Option<Plant>) {
    if table.epoch_rule && plant != Some(Plant::EpochOwnTtl) {
        table
            .servers
            .write(s, now, Write::Ttl(ttl_ms, now.saturating_add(ttl_ms)));
    }
}

/// A write on a replica is refused.
fn writable(table: &Table, server: usize) -> Result<(), String> {
    match table.servers.all[server].follows {
        Some(_) => Err("READONLY You can't write against a read only replica".into()),
        None => Ok(()),
    }
}

impl Store for MemoryStore {
    fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError> {
        let (holder, ttl_ms, plant) = (self.holder, self.ttl_ms, self.plant);
        let short_counts = plant == Some(Plant::WaitShortCounted);
        self.request("claim a node id", |table, s, now| {
            writable(table, s)?;
            let acks = table.acks;
            let wait_ms = match table.epoch_rule {
                true => start_epoch(table, s, now, ttl_ms, plant)?,
                false => 0,
            };
            let mut skipped = Skipped::default();
            let mut claimed = None;
            for node in ask.first..=ask.last {
                let data = &table.servers.all[s].data;
                if data.live(node, now).is_some() {
                    continue;
                }
                let mark_ms = data.marks.get(&node).copied().unwrap_or(0);
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
                let key = NodeKey {
                    holder,
                    handle,
                    expires_ms: now.saturating_add(ttl_ms),
                };
                table.servers.write(s, now, Write::Node(node, Some(key)));
                let ceiling_ms = mark_ms.max(ask.ceiling_ms);
                table.servers.write(s, now, Write::Mark(node, ceiling_ms));
                note_ttl(table, s, now, ttl_ms, plant);
                claimed = Some(Claim {
                    node,
                    mark_ms,
                    ceiling_ms,
                    handle,
                });
                break;
            }
            if acks > 0 {
                let acked = table.servers.wait(s, acks);
                let acked = if short_counts { acks } else { acked };
                if acked < acks {
                    // Given back: it counts for nothing.
                    if let Some(claim) = &claimed {
                        table.servers.write(s, now, Write::Node(claim.node, None));
                    }
                    return Err(format!("{acked} of {acks} replicas acknowledged"));
                }
            }
            Ok(match claimed {
                None => Claimed::None(skipped),
                Some(claim) if wait_ms == 0 => Claimed::Node(claim, skipped),
                Some(claim) => Claimed::NodeAfter(claim, skipped, Duration::from_millis(wait_ms)),
            })
        })
    }

    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError> {
        let (ttl_ms, plant) = (self.ttl_ms, self.plant);
        let short_counts = plant == Some(Plant::WaitShortCounted);
        self.request("renew the lease", |table, s, now| {
            let data = &table.servers.all[s].data;
            let Some(key) = data
                .live(claim.node, now)
                .filter(|key| key.handle == claim.handle)
            else {
                return Ok(false);
            };
            writable(table, s)?;
            let mark = data.marks.get(&claim.node).copied().unwrap_or(0);
            let key = NodeKey {
                expires_ms: now.saturating_add(ttl_ms),
                ..key
            };
            table
                .servers
                .write(s, now, Write::Node(claim.node, Some(key)));
            note_ttl(table, s, now, ttl_ms, plant);
            if mark < ceiling_ms {
                table
                    .servers
                    .write(s, now, Write::Mark(claim.node, ceiling_ms));
            }
            let acks = table.acks;
            if acks > 0 {
                let acked = table.servers.wait(s, acks);
                if acked < acks && !short_counts {
                    return Err(format!("{acked} of {acks} replicas acknowledged"));
                }
            }
            Ok(true)
        })
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        self.request("release the node id", |table, s, now| {
            let ours = table.servers.all[s]
                .data
                .live(claim.node, now)
                .is_some_and(|key| key.handle == claim.handle);
            if ours {
                writable(table, s)?;
                if let Some(mark_ms) = mark_ms {
                    table
                        .servers
                        .write(s, now, Write::Mark(claim.node, mark_ms));
                }
                table.servers.write(s, now, Write::Node(claim.node, None));
            }
            Ok(())
        })
    }
}

mod tests {
    use std::collections::HashSet;
    use std::ops::RangeInclusive;

    use super::*;
    use crate::clock::ManualClock;
    use crate::error::BuildError;
    use crate::error::GenerateError;
    use crate::layout::Layout;
    use crate::lease::Terms;

    const T: u64 = 1_700_000_000_000;
    const TTL: Duration = Duration::from_secs(1);

    /// A lease on a backend: the store and the terms.
    struct Leasing {
        backend: MemoryBackend,
        terms: Terms,
    }

    fn lease(backend: &MemoryBackend) -> Leasing {
        Leasing {
            backend: backend.clone(),
            terms: Terms {
                ttl: TTL,
                node_ids: Some(0..=3),
                connect_timeout: Duration::from_millis(100),
                ..Terms::default()
            },
        }
    }

    fn node(lease: &Leasing, at_ms: u64) -> Result<SimNode, BuildError> {
        SimNode::start(
            &Layout::twitter(),
            ManualClock::new(at_ms),
            &lease.backend,
            &lease.terms,
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

    /// `lease_grant` (what the PostgreSQL extension's worker publishes to
    /// its backends) follows the fence: the node id, a shrinking validity,
    /// `None` once fenced, a new generation with a fresh claim whose floor
    /// is the ceiling granted before; and `want_lease_ceiling` makes the
    /// keeper record a later ceiling in the store.
    #[test]
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    fn the_lease_grant_follows_the_fence_and_wanted_ceilings_are_recorded() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::new(store_clock.clone());
        let mut a = node(&lease(&backend), T).unwrap();
        let first = a.generator().lease_grant().expect("granted");
        assert_eq!(first.node_id, 0);
        assert_eq!(first.node_id, a.generator().node_id());
        assert!(first.valid_for <= TTL && first.valid_for > Duration::ZERO);
        let step = Duration::from_millis(100);
        a.advance(step);
        let later = a.generator().lease_grant().unwrap();
        // On the fence's clock (whose first reading is 1 ns, not 0).
        let spent = first.valid_for - later.valid_for;
        assert!(spent.abs_diff(step) <= Duration::from_nanos(1), "{spent:?}");
        assert_eq!(later.generation, first.generation);

        let tick = first.ceiling + 5_000;
        a.generator().want_lease_ceiling(tick);
        a.step();
        let raised = a.generator().lease_grant().unwrap();
        assert!(raised.ceiling >= tick, "{raised:?}");
        assert!(backend.mark(0).unwrap() >= Layout::twitter().unix_ms(tick));

        backend.set_fault(a.holder(), Some(Fault::Cut));
        a.advance(TTL);
        assert_eq!(a.generator().lease_grant(), None, "fenced");
        backend.set_fault(a.holder(), None);
        a.step();
        let fresh = a.generator().lease_grant().expect("claimed afresh");
        assert_ne!(fresh.generation, first.generation);
        assert!(fresh.floor >= raised.ceiling, "{fresh:?} after {raised:?}");
    }

    #[test]
    fn a_fenced_generator_still_reports_the_node_id_it_was_granted() {
        // Node id 5, so that a report of nothing issued yet (0) differs.
        let backend = MemoryBackend::new(ManualClock::new(T));
        let mut lease = lease(&backend);
        lease.terms.node_ids = Some(5..=5);
        let a = node(&lease, T).unwrap();
        assert_eq!(a.generator().node_id(), 5);
        backend.set_fault(a.holder(), Some(Fault::Cut));
        a.advance(TTL);
        assert_eq!(a.generator().poll_id(), Err(GenerateError::Fenced));
        assert_eq!(a.generator().node_id(), 5, "fenced before its first ID");
    }

    /// A claim that waits before its fence opens (the epoch rule) holds its
    /// node id already: the generator reports that one, not what its empty
    /// state says (0).
    #[test]
    fn a_generator_waiting_to_open_its_fence_reports_the_node_id_it_holds() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::replicated(store_clock.clone(), &[0], 1);
        let mut lease = lease(&backend);
        lease.terms.node_ids = Some(5..=5);
        let mut a = node(&lease, T).unwrap();
        assert_eq!((a.held_node(), a.open_node()), (Some(5), None));
        assert_eq!(a.generator().poll_id(), Err(GenerateError::Fenced));
        assert_eq!(a.generator().node_id(), 5, "waiting to open");
        run_for(
            &store_clock,
            &mut [&mut a],
            TTL + Duration::from_millis(100),
        );
        assert_eq!(a.open_node(), Some(5));
        let id = a.generator().poll_id().unwrap();
        assert_eq!(Layout::twitter().decode(id).unwrap().node_id(), 5);
        assert_eq!(a.generator().node_id(), 5);
    }

    #[test]
    fn successive_holders_of_a_node_id_never_issue_the_same_id() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::new(store_clock.clone());
        let mut lease = lease(&backend);
        lease.terms.node_ids = Some(5..=5);
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

    /// Lets `by` pass for the store and the nodes, stepping each node's
    /// keeper every 50 ms, as its thread would when due.
    fn run_for(store_clock: &ManualClock, nodes: &mut [&mut SimNode], by: Duration) {
        let step = Duration::from_millis(50);
        let mut left = by;
        while !left.is_zero() {
            let d = step.min(left);
            store_clock.advance(d);
            for n in nodes.iter_mut() {
                n.advance(d);
                n.step();
            }
            left -= d;
        }
    }

    /// Behind Sentinel, the first claim under a primary new to the data
    /// waits one TTL with its fence closed, renewing meanwhile; later claims
    /// the rest of it.
    #[test]
    fn a_claim_in_a_new_epoch_opens_its_fence_after_the_ttl() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::replicated(store_clock.clone(), &[0], 1);
        let lease = lease(&backend);
        let mut a = node(&lease, T).unwrap();
        assert_eq!((a.held_node(), a.open_node()), (Some(0), None));
        assert_eq!(a.generator().poll_id(), Err(GenerateError::Fenced));
        run_for(&store_clock, &mut [&mut a], Duration::from_millis(600));
        let mut b = node(&lease, T + 600).unwrap();
        assert_eq!((b.held_node(), b.open_node()), (Some(1), None));
        run_for(
            &store_clock,
            &mut [&mut a, &mut b],
            Duration::from_millis(350),
        );
        assert_eq!(a.open_node(), None, "950 ms into the epoch");
        run_for(
            &store_clock,
            &mut [&mut a, &mut b],
            Duration::from_millis(100),
        );
        assert_eq!((a.open_node(), b.open_node()), (Some(0), Some(1)));
        run_for(&store_clock, &mut [&mut a, &mut b], 3 * TTL);
        assert_eq!(backend.holder_of(0), Some(a.holder()), "renewed meanwhile");
        assert_eq!(a.open_node(), Some(0));
        let c = node(&lease, store_clock.now_ms()).unwrap();
        assert_eq!(c.open_node(), Some(2), "after the epoch's TTL: no wait");
    }

    /// A failover to a replica that missed a claim: the next claim of that
    /// node id on the new primary waits until the old holder, cut off with
    /// the old primary, has been fenced.
    #[test]
    fn a_claim_a_failover_lost_is_waited_out() {
        let store_clock = ManualClock::new(T);
        // One replica acknowledges at once, the other lags 5 s.
        let backend = MemoryBackend::replicated(store_clock.clone(), &[0, 5_000], 1);
        backend.set_epoch(T - 3_600_000);
        let lease = lease(&backend);
        let mut a = node(&lease, T).unwrap();
        assert_eq!(a.open_node(), Some(0));
        run_for(&store_clock, &mut [&mut a], Duration::from_millis(500));
        // The primary stops; the lagging replica is promoted without a's
        // claim.
        backend.servers(|servers, _| {
            servers.all[0].paused = true;
            servers.promote(2);
        });
        assert_eq!(backend.holder_of(0), None, "the claim was lost");
        let mut b = node(&lease, store_clock.now_ms()).unwrap();
        assert_eq!((b.held_node(), b.open_node()), (Some(0), None));
        let mut a_open_until = None;
        for _ in 0..40 {
            run_for(
                &store_clock,
                &mut [&mut a, &mut b],
                Duration::from_millis(50),
            );
            assert!(
                a.open_node() != Some(0) || b.open_node() != Some(0),
                "two fences open for node 0"
            );
            if a.open_node() == Some(0) {
                a_open_until = Some(store_clock.now_ms());
            }
        }
        assert!(a_open_until.is_some(), "a was open after the failover");
        assert_eq!(b.open_node(), Some(0), "b opened after the TTL");
    }

    /// Mixed TTLs under one prefix: `c` (TTL 3 s, node id 1) has run long
    /// enough for the lagging replica to have the record of its TTL; `a`
    /// (TTL 3 s, node id 0) claims, and a failover to that replica loses
    /// the claim, `a` cut off. `b` (TTL 1 s) claims node id 0 on the new primary: its
    /// epoch must wait out 3 s, not 1 s, so that `a`'s fence has closed
    /// before `b`'s opens. `Err` says what broke.
    fn mixed_ttls_after_a_lost_claim(plant: Option<Plant>) -> Result<(), String> {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::replicated(store_clock.clone(), &[0, 5_000], 1);
        backend.set_epoch(T - 3_600_000);
        let terms = |ttl_s: u64, nodes: RangeInclusive<u64>| Leasing {
            backend: backend.clone(),
            terms: Terms {
                ttl: Duration::from_secs(ttl_s),
                node_ids: Some(nodes),
                connect_timeout: Duration::from_millis(100),
                plant,
                ..Terms::default()
            },
        };
        let mut c = node(&terms(3, 1..=1), T).unwrap();
        run_for(&store_clock, &mut [&mut c], Duration::from_secs(6));
        let mut a = node(&terms(3, 0..=0), store_clock.now_ms()).unwrap();
        run_for(
            &store_clock,
            &mut [&mut a, &mut c],
            Duration::from_millis(500),
        );
        // The primary stops, with `a` cut off from everything; `c` is gone.
        // `b` is the first to reach the new primary (had `a` or `c` reached
        // it first, the epoch would wait out their TTL anyway).
        c.crash();
        backend.set_fault(a.holder(), Some(Fault::Cut));
        backend.servers(|servers, _| {
            servers.all[0].paused = true;
            servers.promote(2);
        });
        if backend.holder_of(0).is_some() {
            return Err("the failover kept a's claim: the test shows nothing".into());
        }
        let mut b = node(&terms(1, 0..=0), store_clock.now_ms()).unwrap();
        let (mut a_open, mut b_open) = (false, false);
        for _ in 0..100 {
            run_for(
                &store_clock,
                &mut [&mut a, &mut b],
                Duration::from_millis(50),
            );
            a_open |= a.open_node() == Some(0);
            b_open |= b.open_node() == Some(0);
            if a.open_node() == Some(0) && b.open_node() == Some(0) {
                return Err(format!(
                    "two fences open for node 0, {} ms after the failover",
                    store_clock.now_ms() - T - 6_500
                ));
            }
        }
        match (a_open, b_open) {
            (true, true) => Ok(()),
            _ => Err(format!(
                "a open after the failover: {a_open}; b opened: {b_open}"
            )),
        }
    }

    #[test]
    fn a_new_epoch_waits_out_the_longest_ttl_in_use() {
        assert_eq!(mixed_ttls_after_a_lost_claim(None), Ok(()));
        let planted = mixed_ttls_after_a_lost_claim(Some(Plant::EpochOwnTtl));
        assert!(
            planted
                .as_ref()
                .is_err_and(|e| e.starts_with("two fences open")),
            "an epoch that waits the claimer's TTL only went unnoticed: {planted:?}"
        );
    }

    /// A primary deposed by a failover that answers again, without its
    /// replicas: a renewal on it counts for nothing, and its holder is
    /// fenced at the deadline.
    #[test]
    fn a_deposed_primary_extends_no_fence() {
        let store_clock = ManualClock::new(T);
        let backend = MemoryBackend::replicated(store_clock.clone(), &[0], 1);
        backend.set_epoch(T - 3_600_000);
        let mut a = node(&lease(&backend), T).unwrap();
        assert_eq!(a.open_node(), Some(0));
        // The replica is promoted while a's keeper still talks to the old
        // primary, which stays a primary by its own view.
        backend.servers(|servers, _| servers.promote(1));
        run_for(&store_clock, &mut [&mut a], Duration::from_millis(750));
        assert_eq!(a.open_node(), Some(0), "within its deadline");
        run_for(&store_clock, &mut [&mut a], Duration::from_millis(100));
        assert_eq!(a.open_node(), None, "fenced at 0.8 TTL");
    }
}
