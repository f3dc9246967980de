//! Node-id leases on etcd: keys bound to an etcd lease, claimed with a
//! transaction, kept alive over the lease's keep-alive stream.
//!
//! etcd-client is async (tonic); each keeper drives it on a current-thread
//! tokio runtime of its own, from its own thread, so the generator and its
//! callers never need a runtime.
//!
//! # Members and failures
//!
//! The store keeps one client per member, each connected to that member's
//! endpoint alone, and asks the member that answered last first
//! ([`members`]). Each attempt on a member is bounded by the *attempt
//! timeout*, a twelfth of the TTL (250 ms at a 3 s TTL; between 100 ms and
//! 1 s), well below the renewal interval, and a member that does not
//! answer in time (paused, killed, cut off, or without a leader) loses its
//! client and the next member is asked, all within the request's budget:
//!
//! - a **renewal** (the keep-alive, and the mark's put guarded by the node
//!   key still being bound to this holder's etcd lease and by the mark's
//!   revision being the one this holder last wrote, so that a copy applied
//!   late never lowers it) is *hedged*: if the member asked has not
//!   answered within the *hedge delay* (a third of the attempt timeout),
//!   the same renewal goes to the next member too, and the first answer
//!   wins;
//! - a **claim** (the listing, the lease grant, the transaction) and a
//!   **release** go to one member at a time: a claim's transaction is not
//!   idempotent, so it is never sent twice at once, and a copy of it that
//!   timed out but was applied is recognized by the node key holding this
//!   holder's token.
//!
//! A single member's failure then costs no renewal while the others keep
//! quorum, but the leader's failure stops every write for etcd's election
//! (1 to 2 election timeouts; 1 to 2 s with etcd's defaults): at short TTLs
//! the store renews often enough that the last renewal before the failure
//! outlasts the election (see [`renew_every`]). A keep-alive that reaches
//! a member during the election is answered once a leader is elected (the
//! new leader restarts every lease's TTL), so the first renewal after the
//! election succeeds. With quorum lost, generators fence by their deadline;
//! once it returns, the next attempt (a fresh client for each member that
//! failed) succeeds.
//!
//! A leader resumed from a pause may revoke leases that its stale clock
//! deems expired although they were kept alive meanwhile
//! (etcd-io/etcd#15247), deleting node keys whose holders' fences are
//! open. A renewal that finds its node key gone takes the node id back
//! under a fresh lease if nobody claimed it since (the mark still at this
//! holder's last write: every claim writes the mark), so that this costs
//! no fenced time; if someone did, the renewal is lost and the fence
//! closes. Marks are never lowered while a node id is held, so a claimer
//! after such a revocation starts above every ID the holder issued.

mod members;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare, CompareOp, Error, GetOptions, KeyValue, PutOptions, Txn, TxnOp, TxnOpResponse,
    TxnResponse,
};
use tokio::runtime::Runtime;

use self::members::{Attempt, Failure, KeepAlive, Members, Spread, Start, classify, connect};
use super::keeper::{Ask, CallLimit, Claim, Claimed, Settings, Skipped, Store};
use crate::error::LeaseError;
#[cfg(any(test, flakeid_plant))]
use crate::plant::Plant;

pub(crate) struct EtcdStore {
    runtime: Runtime,
    members: Members,
    server: String,
    prefix: String,
    ttl_secs: i64,
    /// Bounds each call.
    limit: CallLimit,
    token: String,
    /// The mark's revision after this holder's last write, per claim (by
    /// its handle): a renewal's put applies only while it is still the
    /// mark's.
    mark_revisions: HashMap<i64, i64>,
    /// The etcd lease each claim is bound to, where it is not the one the
    /// claim was made with (its handle): the node id was taken back under
    /// a fresh lease after etcd revoked the first.
    leases: HashMap<i64, i64>,
    renew_every: Duration,
    /// A bug planted on purpose (`crate::plant`).
    #[cfg(any(test, flakeid_plant))]
    plant: Option<Plant>,
    /// Tests: each renewal's lease is revoked between its mark's write and
    /// its keep-alive (the race of a leader resumed from a pause, scripted).
    #[cfg(test)]
    revoke_before_keep_alive: bool,
}

/// A twelfth of the TTL, between 100 ms and 1 s: a quarter of the request
/// timeout at the default connect timeout, so a renewal can ask every
/// member of a 3-member cluster in turn and still have time left.
fn attempt_timeout(ttl: Duration) -> Duration {
    (ttl / 12).clamp(Duration::from_millis(100), Duration::from_secs(1))
}

/// How often an etcd lease is renewed: a third of the TTL, or more often
/// at short TTLs, so that the last renewal before the leader fails still
/// holds after etcd's election (up to two election timeouts, 2 s with
/// etcd's defaults): at most the TTL less the safety margin and 2 s, and
/// no less than a twelfth of the TTL (250 ms at 3 s; 3.3 s from a TTL of
/// 10 s up).
pub(crate) fn renew_every(settings: &Settings) -> Duration {
    let election = Duration::from_secs(2);
    let third = settings.ttl / 3;
    let outlasting = (settings.ttl - settings.margin).saturating_sub(election);
    third.min(outlasting.max(settings.ttl / 12))
}

impl EtcdStore {
    pub(crate) fn new(
        endpoints: Vec<String>,
        prefix: &str,
        settings: &Settings,
        token: String,
    ) -> Result<EtcdStore, LeaseError> {
        if endpoints.is_empty() {
            return Err(LeaseError::Config {
                reason: "no etcd endpoints".into(),
            });
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LeaseError::Config {
                reason: format!("cannot start a runtime for the etcd client: {e}"),
            })?;
        // etcd leases are whole seconds; the fence keeps to the exact TTL.
        let ttl_secs = i64::try_from(settings.ttl.as_millis().div_ceil(1000)).unwrap_or(i64::MAX);
        let attempt = attempt_timeout(settings.ttl);
        // Each store starts at a member of its own, so that a fleet's
        // requests spread over the members.
        let first = pick(&token, 0, endpoints.len());
        Ok(EtcdStore {
            runtime,
            members: Members::new(endpoints, first, attempt, attempt / 3),
            server: settings.server.clone(),
            prefix: prefix.trim_end_matches('/').to_owned(),
            ttl_secs,
            limit: CallLimit {
                timeout: settings.connect_timeout,
                deadline: None,
            },
            token,
            mark_revisions: HashMap::new(),
            leases: HashMap::new(),
            renew_every: renew_every(settings),
            #[cfg(any(test, flakeid_plant))]
            plant: settings.plant,
            #[cfg(test)]
            revoke_before_keep_alive: false,
        })
    }

    fn node_key(&self, node: u64) -> String {
        format!("{}/nodes/{node}", self.prefix)
    }

    fn mark_key(&self, node: u64) -> String {
        format!("{}/marks/{node}", self.prefix)
    }

    /// Runs one request on the members, `spread` as it says, within the
    /// budget; `request` makes each attempt's request, given the member's
    /// client.
    fn call<T, F, Fut>(&mut self, what: &str, spread: Spread, request: F) -> Result<T, LeaseError>
    where
        T: 'static,
        F: Fn(Client) -> Fut + Clone + 'static,
        Fut: Future<Output = Result<T, Failure>> + 'static,
    {
        let budget = self.limit.budget();
        if budget.is_zero() {
            return Err(self.unreachable(what, "no time left".into()));
        }
        let answer = self.members.run(&self.runtime, budget, spread, |start| {
            let request = request.clone();
            Box::pin(async move {
                let Start {
                    endpoint,
                    client,
                    keep_alive,
                } = start;
                let client = match client {
                    Some(client) => client,
                    None => match connect(&endpoint).await {
                        Ok(client) => client,
                        Err(failure) => return Attempt::failed(failure),
                    },
                };
                let answer = request(client.clone()).await;
                Attempt {
                    client: Some(client),
                    keep_alive,
                    answer,
                }
            })
        });
        answer.map_err(|f| self.failure(what, f))
    }

    /// A transaction, in turn on the members.
    fn txn(&mut self, what: &'static str, txn: Txn) -> Result<TxnResponse, LeaseError> {
        self.call(what, Spread::InTurn, move |mut c| {
            let txn = txn.clone();
            async move { c.txn(txn).await.map_err(|e| classify(what, e)) }
        })
    }

    fn unreachable(&self, what: &str, reason: String) -> LeaseError {
        LeaseError::Unreachable {
            server: self.server.clone(),
            waited: self.limit.timeout,
            reason: format!("{what}: {reason}"),
        }
    }

    fn failure(&self, what: &str, failure: Failure) -> LeaseError {
        match failure {
            Failure::NoAnswer(reason) => self.unreachable(what, reason),
            Failure::Final(e) => e,
        }
    }

    fn revoke(&mut self, lease: i64) -> Result<(), LeaseError> {
        self.forget(lease);
        self.call(
            "revoke the lease",
            Spread::InTurn,
            move |mut c| async move { revoke(&mut c, lease).await },
        )
    }

    /// Forgets what is kept for the claim made with `handle`, which is
    /// going away.
    fn forget(&mut self, handle: i64) {
        let lease = self.lease_of(handle);
        self.members.forget(lease);
        self.mark_revisions.remove(&handle);
        self.leases.remove(&handle);
    }

    /// The etcd lease the claim made with `handle` is bound to.
    fn lease_of(&self, handle: i64) -> i64 {
        self.leases.get(&handle).copied().unwrap_or(handle)
    }

    /// The transaction that claims `node` under `lease` with `ceiling_ms`
    /// as its mark: only if the node key is absent and the mark unchanged
    /// since it was read at `revision` (the mark is then the claim's
    /// floor). Else it reads the node key as it is: this holder's if an
    /// earlier attempt of this very transaction was applied but its answer
    /// lost.
    fn claim_txn(&self, node: u64, lease: i64, revision: i64, ceiling_ms: u64) -> Txn {
        let (node_key, mark_key) = (self.node_key(node), self.mark_key(node));
        Txn::new()
            .when([
                Compare::create_revision(node_key.clone(), CompareOp::Equal, 0),
                Compare::mod_revision(mark_key.clone(), CompareOp::Equal, revision),
            ])
            .and_then([
                TxnOp::put(
                    node_key.clone(),
                    self.token.clone(),
                    Some(PutOptions::new().with_lease(lease)),
                ),
                TxnOp::put(mark_key, ceiling_ms.to_string(), None),
            ])
            .or_else([TxnOp::get(node_key, None)])
    }

    /// Takes `node` back under a fresh etcd lease after its own was found
    /// gone while this holder's fence was open (etcd revokes leases it
    /// should not: a leader resumed from a pause revokes those its stale
    /// clock deems expired, etcd-io/etcd#15247), if nobody claimed it
    /// since: the node key is absent and the mark is still at `revision`,
    /// this holder's last write (every claim writes the mark). The mark is
    /// raised to `ceiling_ms` in the same transaction. The fresh lease and
    /// the mark's revision after; `None` if the node id cannot be taken
    /// back (the renewal then counts as lost).
    fn take_back(&mut self, node: u64, ceiling_ms: u64, revision: i64) -> Option<(i64, i64)> {
        if revision == 0 {
            return None;
        }
        let ttl = self.ttl_secs;
        let grant = self
            .call("grant a lease", Spread::InTurn, move |mut c| async move {
                c.lease_grant(ttl, None)
                    .await
                    .map_err(|e| classify("grant a lease", e))
            })
            .ok()?;
        if !grant.error().is_empty() || check_grant(ttl, grant.ttl(), grant.id()).is_err() {
            return None;
        }
        let lease = grant.id();
        let txn = self.claim_txn(node, lease, revision, ceiling_ms);
        let taken = match self.txn("take the node id back", txn) {
            Ok(reply) if reply.succeeded() => header_revision(&reply).ok(),
            // An earlier attempt of this very transaction applied.
            Ok(reply) => else_kvs(&reply)
                .into_iter()
                .next()
                .flatten()
                .filter(|kv| kv.lease() == lease && kv.value() == self.token.as_bytes())
                .map(|kv| kv.mod_revision()),
            Err(_) => None,
        };
        if taken.is_none() {
            let _ = self.revoke(lease);
        }
        taken.map(|revision| (lease, revision))
    }

    /// With a fresh lease: reads who holds what and claims the lowest free
    /// node id, retrying when another claimer wins the race.
    fn claim_with(&mut self, lease: i64, ask: &Ask) -> Result<Claimed, LeaseError> {
        let Ask { first, last, .. } = *ask;
        let list_prefix = format!("{}/", self.prefix);
        // Each lost race means another claimer took a node id (or released
        // one); more losses than node ids means something else is going on.
        let attempts = (last - first).saturating_add(16).min(4096);
        let mut spread = 1;
        for attempt in 0..attempts {
            let key = list_prefix.clone();
            let listing = self.call("list node ids", Spread::InTurn, move |mut c| {
                let key = key.clone();
                async move {
                    c.get(key, Some(GetOptions::new().with_prefix()))
                        .await
                        .map_err(|e| classify("list node ids", e))
                }
            })?;
            let mut held = HashSet::new();
            let mut marks = HashMap::new();
            for kv in listing.kvs() {
                let Some(rest) = kv.key().strip_prefix(list_prefix.as_bytes()) else {
                    continue;
                };
                let rest = String::from_utf8_lossy(rest);
                if let Some(node) = rest.strip_prefix("nodes/").and_then(parse_u64) {
                    held.insert(node);
                } else if let Some(node) = rest.strip_prefix("marks/").and_then(parse_u64) {
                    let value = String::from_utf8_lossy(kv.value());
                    let mark = parse_u64(&value).ok_or_else(|| LeaseError::BadReply {
                        reason: format!(
                            "{list_prefix}{rest} holds {value:?}, not a Unix millisecond"
                        ),
                    })?;
                    marks.insert(node, (mark, kv.mod_revision()));
                }
            }
            let mark_of = |node: u64| marks.get(&node).copied().unwrap_or((0, 0));
            // The lowest free node id with a usable mark; after lost races,
            // one at random among the lowest `spread` such, so that n
            // generators claiming at once take about log2(n) rounds instead
            // of n.
            let mut free = Vec::new();
            let mut skipped = Skipped::default();
            for node in (first..=last).filter(|node| !held.contains(node)) {
                match ask.takes(mark_of(node).0) {
                    Ok(true) => free.push(node),
                    Ok(false) => {}
                    Err(()) => skipped.add(node, mark_of(node).0),
                }
                if free.len() == spread {
                    break;
                }
            }
            if free.is_empty() {
                return Ok(Claimed::None(skipped));
            }
            let node = free[pick(&self.token, attempt, free.len())];
            let (mark_ms, revision) = mark_of(node);
            let ceiling_ms = ask.ceiling_ms.max(mark_ms);
            let txn = self.claim_txn(node, lease, revision, ceiling_ms);
            let reply = self.txn("claim a node id", txn)?;
            let ours = if reply.succeeded() {
                Some(header_revision(&reply)?)
            } else {
                else_kvs(&reply)
                    .into_iter()
                    .next()
                    .flatten()
                    .filter(|kv| kv.lease() == lease && kv.value() == self.token.as_bytes())
                    .map(|kv| kv.mod_revision())
            };
            if let Some(mark_revision) = ours {
                self.mark_revisions.insert(lease, mark_revision);
                let claim = Claim {
                    node,
                    mark_ms,
                    ceiling_ms,
                    handle: lease,
                };
                return Ok(Claimed::Node(claim, skipped));
            }
            spread = spread.saturating_mul(2);
        }
        Err(LeaseError::Refused {
            reason: format!("lost the race for a node id {attempts} times in a row"),
        })
    }
}

/// The store's revision a transaction's answer was given at (a successful
/// write's own).
fn header_revision(reply: &TxnResponse) -> Result<i64, LeaseError> {
    reply
        .header()
        .map(|h| h.revision())
        .ok_or_else(|| LeaseError::BadReply {
            reason: "a transaction answered without a header".into(),
        })
}

/// The first key-value pair each `get` of a transaction's answer found.
fn else_kvs(reply: &TxnResponse) -> Vec<Option<KeyValue>> {
    reply
        .op_responses()
        .into_iter()
        .map(|r| match r {
            TxnOpResponse::Get(get) => get.kvs().first().cloned(),
            _ => None,
        })
        .collect()
}

/// Revokes an etcd lease; one that already expired is fine.
async fn revoke(client: &mut Client, lease: i64) -> Result<(), Failure> {
    match client.lease_revoke(lease).await {
        Err(Error::GRpcStatus(status)) if status.message().contains("not found") => Ok(()),
        other => other.map(drop).map_err(|e| classify("revoke the lease", e)),
    }
}

/// What a renewal found.
enum Renewal {
    /// Renewed; the mark's revision after it.
    Renewed(i64),
    /// The node key is not this holder's any more, or its etcd lease
    /// expired; with the mark's revision after this attempt if it raised
    /// the mark first (the lease revoked between the mark's transaction and
    /// the keep-alive): the mark is still this holder's, and a take-back
    /// must expect that revision, not the one before.
    Lost(Option<i64>),
}

/// A renewal's write of the mark: raised to `ceiling_ms` while `node_key`
/// is bound to `lease`, if the mark at `mark_key` is still at `revision`
/// (this holder's last write; 0: absent).
#[derive(Debug, Clone)]
struct Raise {
    lease: i64,
    node_key: String,
    mark_key: String,
    ceiling_ms: u64,
    revision: i64,
    /// Planted (`Plant::EtcdMarkUnguarded`): the put does not check the
    /// mark's revision.
    #[cfg(any(test, flakeid_plant))]
    unguarded: bool,
    /// Tests: revoke the lease after the mark's write (`EtcdStore`'s
    /// `revoke_before_keep_alive`).
    #[cfg(test)]
    revoke_before_keep_alive: bool,
}

/// One renewal attempt on one member: the mark raised (if it is still at
/// this holder's last write, else as found), then the keep-alive.
async fn renew_on(start: Start, raise: Raise) -> Attempt<Renewal> {
    let lease = raise.lease;
    let Start {
        endpoint,
        client,
        keep_alive,
    } = start;
    let mut client = match client {
        Some(client) => client,
        None => match connect(&endpoint).await {
            Ok(client) => client,
            Err(failure) => return Attempt::failed(failure),
        },
    };
    #[cfg(test)]
    let revoke = raise.revoke_before_keep_alive;
    let answer = async {
        let Some(revision) = raise_mark(&mut client, raise).await? else {
            return Ok((None, Renewal::Lost(None)));
        };
        #[cfg(test)]
        if revoke {
            client.lease_revoke(lease).await.expect("revoke the lease");
        }
        let (keep_alive, alive) = keep_alive_on(&mut client, keep_alive, lease).await?;
        Ok(match alive {
            true => (keep_alive, Renewal::Renewed(revision)),
            false => (None, Renewal::Lost(Some(revision))),
        })
    }
    .await;
    match answer {
        Ok((keep_alive, renewal)) => Attempt {
            client: Some(client),
            keep_alive,
            answer: Ok(renewal),
        },
        Err(failure) => Attempt {
            client: Some(client),
            keep_alive: None,
            answer: Err(failure),
        },
    }
}

/// Raises the mark as `raise` says: the put applies only if the mark is
/// still at this holder's last write, so that a renewal applied late, a
/// copy of a hedged one included, never lowers it; a mark found at the
/// ceiling or above already is as good. The mark's revision after, `None`
/// if the node key is not this holder's.
async fn raise_mark(client: &mut Client, raise: Raise) -> Result<Option<i64>, Failure> {
    const WHAT: &str = "record the mark";
    let Raise {
        lease,
        node_key,
        mark_key,
        ceiling_ms,
        mut revision,
        ..
    } = raise;
    // A second round only if someone else wrote the mark meanwhile.
    for _ in 0..3 {
        let guard = Compare::mod_revision(mark_key.clone(), CompareOp::Equal, revision);
        #[cfg(any(test, flakeid_plant))]
        let guard = match raise.unguarded {
            true => Compare::lease(node_key.clone(), CompareOp::Equal, lease),
            false => guard,
        };
        let txn = Txn::new()
            .when([
                Compare::lease(node_key.clone(), CompareOp::Equal, lease),
                guard,
            ])
            .and_then([TxnOp::put(mark_key.clone(), ceiling_ms.to_string(), None)])
            .or_else([
                TxnOp::get(node_key.clone(), None),
                TxnOp::get(mark_key.clone(), None),
            ]);
        let reply = client.txn(txn).await.map_err(|e| classify(WHAT, e))?;
        if reply.succeeded() {
            return header_revision(&reply).map(Some).map_err(Failure::Final);
        }
        let found = else_kvs(&reply);
        let (node, mark) = match found.as_slice() {
            [node, mark] => (node, mark),
            _ => {
                return Err(Failure::Final(LeaseError::BadReply {
                    reason: format!("{WHAT}: {} answers to two reads", found.len()),
                }));
            }
        };
        if node.as_ref().is_none_or(|kv| kv.lease() != lease) {
            return Ok(None);
        }
        let Some(mark) = mark else {
            revision = 0;
            continue;
        };
        let value = String::from_utf8_lossy(mark.value());
        let Some(mark_ms) = parse_u64(&value) else {
            return Err(Failure::Final(LeaseError::BadReply {
                reason: format!("{mark_key} holds {value:?}, not a Unix millisecond"),
            }));
        };
        if mark_ms >= ceiling_ms {
            return Ok(Some(mark.mod_revision()));
        }
        revision = mark.mod_revision();
    }
    Err(Failure::NoAnswer(format!("{WHAT}: the mark kept changing")))
}

/// A keep-alive for `lease` on the member's stream, opened if it has none
/// for `lease` (opening sends the first keep-alive). The stream, and
/// whether the lease is alive.
async fn keep_alive_on(
    client: &mut Client,
    current: Option<KeepAlive>,
    lease: i64,
) -> Result<(Option<KeepAlive>, bool), Failure> {
    const WHAT: &str = "keep the lease alive";
    match current {
        Some(mut k) if k.lease == lease => {
            k.keeper.keep_alive().await.map_err(|e| classify(WHAT, e))?;
            match k.stream.message().await {
                Ok(Some(reply)) if reply.id() == lease || reply.id() == 0 => {
                    let alive = reply.ttl() > 0;
                    Ok((alive.then_some(k), alive))
                }
                Ok(Some(reply)) => Err(Failure::Final(LeaseError::BadReply {
                    reason: format!(
                        "keep-alive for lease {lease} answered for lease {}",
                        reply.id()
                    ),
                })),
                Ok(None) => Err(Failure::NoAnswer("the keep-alive stream closed".into())),
                Err(e) => Err(classify(WHAT, e)),
            }
        }
        _ => match client.lease_keep_alive(lease).await {
            Ok((keeper, stream)) => Ok((
                Some(KeepAlive {
                    lease,
                    keeper,
                    stream,
                }),
                true,
            )),
            Err(Error::LeaseKeepAliveError(reason)) if reason.contains("not found") => {
                Ok((None, false))
            }
            Err(e) => Err(classify("open the keep-alive stream", e)),
        },
    }
}

/// etcd may grant a longer TTL than asked (it rounds up to its minimum),
/// never a shorter one: the fence counts on the TTL asked for.
fn check_grant(asked_secs: i64, granted_secs: i64, lease: i64) -> Result<(), LeaseError> {
    if granted_secs < asked_secs || lease == 0 {
        return Err(LeaseError::BadReply {
            reason: format!(
                "asked for a {asked_secs} s lease, got lease {lease} of {granted_secs} s \
                 (shorter than the fence counts on)"
            ),
        });
    }
    Ok(())
}

/// An index below `n`, different for each holder and attempt.
fn pick(token: &str, attempt: u64, n: usize) -> usize {
    use std::hash::BuildHasher;
    let hash = std::collections::hash_map::RandomState::new().hash_one((token, attempt));
    (hash % n as u64) as usize
}

fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl Store for EtcdStore {
    fn set_timeout(&mut self, timeout: Duration) {
        self.limit.timeout = timeout;
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.limit.deadline = deadline;
    }

    fn renew_every(&self, _settings: &Settings) -> Duration {
        self.renew_every
    }

    /// Each renewal asks every member in turn until its budget runs out:
    /// after one that failed, the next may start soon (the hedge delay).
    fn renew_retry(&self, _settings: &Settings) -> Duration {
        self.members.hedge_delay
    }

    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError> {
        let ttl = self.ttl_secs;
        let grant = self.call("grant a lease", Spread::InTurn, move |mut c| async move {
            c.lease_grant(ttl, None)
                .await
                .map_err(|e| classify("grant a lease", e))
        })?;
        if !grant.error().is_empty() {
            return Err(LeaseError::Refused {
                reason: format!("grant a lease: {}", grant.error()),
            });
        }
        check_grant(ttl, grant.ttl(), grant.id())?;
        let lease = grant.id();
        let claimed = self.claim_with(lease, ask);
        if !matches!(claimed, Ok(Claimed::Node(..))) {
            let _ = self.revoke(lease);
        }
        claimed
    }

    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError> {
        let handle = claim.handle;
        let lease = self.lease_of(handle);
        let revision = self.mark_revisions.get(&handle).copied().unwrap_or(0);
        let raise = Raise {
            lease,
            node_key: self.node_key(claim.node),
            mark_key: self.mark_key(claim.node),
            ceiling_ms,
            revision,
            #[cfg(any(test, flakeid_plant))]
            unguarded: self.plant == Some(Plant::EtcdMarkUnguarded),
            #[cfg(test)]
            revoke_before_keep_alive: self.revoke_before_keep_alive,
        };
        let budget = self.limit.budget();
        if budget.is_zero() {
            return Err(self.unreachable("renew the lease", "no time left".into()));
        }
        let answer = self
            .members
            .run(&self.runtime, budget, Spread::Hedged, |start| {
                Box::pin(renew_on(start, raise.clone()))
            });
        match answer {
            Ok(Renewal::Renewed(revision)) => {
                self.mark_revisions.insert(handle, revision);
                Ok(true)
            }
            Ok(Renewal::Lost(raised)) => {
                self.members.forget(lease);
                let revision = raised.unwrap_or(revision);
                match self.take_back(claim.node, ceiling_ms, revision) {
                    Some((lease, revision)) => {
                        self.leases.insert(handle, lease);
                        self.mark_revisions.insert(handle, revision);
                        Ok(true)
                    }
                    None => {
                        self.forget(handle);
                        Ok(false)
                    }
                }
            }
            Err(failure) => Err(self.failure("renew the lease", failure)),
        }
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        let (lease, node_key, mark_key) = (
            self.lease_of(claim.handle),
            self.node_key(claim.node),
            self.mark_key(claim.node),
        );
        let mut ops = Vec::with_capacity(2);
        if let Some(mark_ms) = mark_ms {
            ops.push(TxnOp::put(mark_key, mark_ms.to_string(), None));
        }
        ops.push(TxnOp::delete(node_key.clone(), None));
        let txn = Txn::new()
            .when([Compare::lease(node_key, CompareOp::Equal, lease)])
            .and_then(ops);
        self.forget(claim.handle);
        // One call, so that both requests share its budget.
        self.call("release the node id", Spread::InTurn, move |mut c| {
            let txn = txn.clone();
            async move {
                c.txn(txn)
                    .await
                    .map_err(|e| classify("release the node id", e))?;
                revoke(&mut c, lease).await
            }
        })
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    /// The mark's value, as a number.
    async fn mark_of(client: &mut Client, key: &str) -> u64 {
        let got = client.get(key, None).await.unwrap();
        let value = String::from_utf8_lossy(got.kvs()[0].value()).into_owned();
        value.parse().unwrap()
    }

    /// A renewal that etcd applies after a newer one (a copy of a hedged
    /// renewal, or one whose attempt timed out on the client but was
    /// applied later) leaves the mark where the newer one put it: checked
    /// on the real renewal path, and with the revision guard planted away
    /// (`Plant::EtcdMarkUnguarded`), which the check must catch.
    #[test]
    fn a_renewal_applied_late_never_lowers_the_mark() {
        use flakeid_test_servers::{Kind, Server};
        let server = Server::start(Kind::Etcd);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut c = Client::connect([server.url()], None).await.unwrap();
            late_renewal(&mut c, false).await.unwrap();
            let planted = late_renewal(&mut c, true).await;
            assert_eq!(
                planted,
                Err("the late renewal lowered the mark from 200 to 150".into()),
                "the revision guard planted away went unnoticed"
            );
        });
    }

    /// Two renewals of one claim applied out of order, then one to a higher
    /// ceiling, then one after the lease was revoked; `Err` says which
    /// property broke. `unguarded`: the plant.
    async fn late_renewal(c: &mut Client, unguarded: bool) -> Result<(), String> {
        let prefix = flakeid_test_servers::unique_prefix("late-renewal");
        let (node_key, mark_key) = (format!("{prefix}/nodes/1"), format!("{prefix}/marks/1"));
        let lease = c.lease_grant(10, None).await.unwrap().id();
        // The claim: the node key bound to the lease, the mark at 100.
        let claim = Txn::new().and_then([
            TxnOp::put(
                node_key.clone(),
                "token",
                Some(PutOptions::new().with_lease(lease)),
            ),
            TxnOp::put(mark_key.clone(), "100", None),
        ]);
        let claimed = header_revision(&c.txn(claim).await.unwrap()).unwrap();
        let raise = |ceiling_ms| Raise {
            lease,
            node_key: node_key.clone(),
            mark_key: mark_key.clone(),
            ceiling_ms,
            revision: claimed,
            unguarded,
            revoke_before_keep_alive: false,
        };
        // Two renewals sent after the claim: to 150, then to 200. The one
        // to 200 is applied first, the one to 150 after it.
        let renewed = raise_mark(c, raise(200)).await.unwrap();
        let newer = renewed.ok_or("the node key is not this holder's")?;
        assert_eq!(mark_of(c, &mark_key).await, 200);
        let late = raise_mark(c, raise(150)).await.unwrap();
        let mark = mark_of(c, &mark_key).await;
        if mark != 200 {
            return Err(format!(
                "the late renewal lowered the mark from 200 to {mark}"
            ));
        }
        if late != Some(newer) {
            return Err(format!(
                "the late renewal answered {late:?}, not renewed at {newer}"
            ));
        }
        // A renewal sent before the mark was last written, to a higher
        // ceiling, raises it.
        let higher = raise_mark(c, raise(250)).await.unwrap();
        if higher.is_none_or(|r| r <= newer) || mark_of(c, &mark_key).await != 250 {
            return Err(format!("a higher ceiling answered {higher:?}"));
        }
        // The lease revoked (etcd deletes the node key): the renewal is
        // lost, and the mark stays.
        c.lease_revoke(lease).await.unwrap();
        let lost = raise_mark(c, raise(300)).await.unwrap();
        let mark = mark_of(c, &mark_key).await;
        if lost.is_some() || mark != 250 {
            return Err(format!(
                "after the revocation: {lost:?}, the mark at {mark}"
            ));
        }
        Ok(())
    }

    /// A real etcd, a store on it (3 s TTL, node id 0 only, 5 s
    /// timeout) and its claim of node id 0, with mark 100.
    fn node_zero_claimed(
        name: &str,
    ) -> (
        flakeid_test_servers::Server,
        EtcdStore,
        crate::lease::keeper::Claim,
    ) {
        use crate::layout::Layout;
        use crate::lease::Terms;
        use crate::lease::keeper::Store;
        use flakeid_test_servers::{Kind, Server};
        let server = Server::start(Kind::Etcd);
        let prefix = flakeid_test_servers::unique_prefix(name);
        let settings = Terms {
            ttl: Duration::from_secs(3),
            node_ids: Some(0..=0),
            ..Terms::default()
        }
        .settings(&Layout::twitter(), Duration::ZERO, "etcd".into())
        .unwrap();
        let mut store =
            EtcdStore::new(vec![server.url()], &prefix, &settings, "token".into()).unwrap();
        store.set_timeout(Duration::from_secs(5));
        let ask = Ask {
            first: 0,
            last: 0,
            fresh_before_ms: None,
            usable_until_ms: u64::MAX,
            ceiling_ms: 100,
        };
        let Ok(Claimed::Node(claim, _)) = store.claim(&ask) else {
            panic!("no claim");
        };
        (server, store, claim)
    }

    /// A leader resumed from a pause revokes a live lease
    /// (etcd-io/etcd#15247) between a renewal's mark transaction and its
    /// keep-alive: the renewal raised the mark, then found its lease gone.
    /// Taking the node id back must expect the mark's revision that renewal
    /// left (which `renew` now passes on), not the one before it, which
    /// would refuse the holder its own mark and fence it.
    #[test]
    fn a_take_back_after_a_revocation_expects_the_last_mark_written() {
        let (server, mut store, claim) = node_zero_claimed("take-back");
        let claimed = store.mark_revisions[&claim.handle];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let raised = runtime.block_on(async {
            let mut c = Client::connect([server.url()], None).await.unwrap();
            let raise = Raise {
                lease: claim.handle,
                node_key: store.node_key(0),
                mark_key: store.mark_key(0),
                ceiling_ms: 200,
                revision: claimed,
                unguarded: false,
                revoke_before_keep_alive: false,
            };
            let raised = raise_mark(&mut c, raise).await.unwrap().unwrap();
            c.lease_revoke(claim.handle).await.unwrap();
            raised
        });
        assert!(raised > claimed);
        assert_eq!(
            store.take_back(0, 250, claimed),
            None,
            "the revision before the renewal's own write is refused"
        );
        assert!(
            store.take_back(0, 250, raised).is_some(),
            "the renewal's own last write is this holder's mark"
        );
    }

    /// The same race through the store's renewal: the renewal raises the
    /// mark, its lease is revoked before the keep-alive, and the renewal
    /// takes the node id back under a fresh lease, expecting the revision
    /// its own write left (a take-back expecting the one before would be
    /// refused and fence the holder).
    #[test]
    fn a_renewal_whose_lease_is_revoked_after_its_mark_takes_the_node_id_back() {
        use crate::lease::keeper::Store;
        let (_server, mut store, claim) = node_zero_claimed("revoked-renewal");
        store.revoke_before_keep_alive = true;
        assert_eq!(
            store.renew(&claim, 200),
            Ok(true),
            "the holder was refused its own mark"
        );
        let lease = store.lease_of(claim.handle);
        assert_ne!(lease, claim.handle, "taken back under a fresh lease");
        store.revoke_before_keep_alive = false;
        assert_eq!(store.renew(&claim, 300), Ok(true));
    }

    #[test]
    fn a_granted_ttl_shorter_than_asked_is_refused() {
        assert_eq!(check_grant(3, 3, 7), Ok(()));
        assert_eq!(check_grant(1, 2, 7), Ok(()), "rounded up to etcd's minimum");
        for (asked, granted, lease) in [(3, 2, 7), (10, 1, 7), (2, 0, 7), (2, 2, 0)] {
            let err = check_grant(asked, granted, lease).unwrap_err();
            assert!(
                err.to_string().contains(&format!("{granted} s")),
                "{asked} s asked, {granted} s granted: {err}"
            );
        }
    }
}
