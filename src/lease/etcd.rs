//! Node-id leases on etcd: keys bound to an etcd lease, claimed with a
//! transaction, kept alive over the lease's keep-alive stream.
//!
//! etcd-client is async (tonic); each keeper drives it on a current-thread
//! tokio runtime of its own, from its own thread, so the generator and its
//! callers never need a runtime.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, Error, GetOptions, LeaseKeepAliveStream,
    LeaseKeeper, PutOptions, Txn, TxnOp,
};
use tokio::runtime::Runtime;

use super::keeper::{Ask, CallLimit, Claim, Claimed, Settings, Skipped, Store};
use crate::LeaseError;

pub(crate) struct EtcdStore {
    runtime: Runtime,
    endpoints: Vec<String>,
    server: String,
    /// Connected lazily, and again after a transport error.
    client: Option<Client>,
    prefix: String,
    ttl_secs: i64,
    /// Bounds each call.
    limit: CallLimit,
    token: String,
    /// The keep-alive stream of the lease being renewed.
    keep_alive: Option<(i64, LeaseKeeper, LeaseKeepAliveStream)>,
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
        Ok(EtcdStore {
            runtime,
            endpoints,
            server: settings.server.clone(),
            client: None,
            prefix: prefix.trim_end_matches('/').to_owned(),
            ttl_secs,
            limit: CallLimit {
                timeout: settings.connect_timeout,
                deadline: None,
            },
            token,
            keep_alive: None,
        })
    }

    fn node_key(&self, node: u64) -> String {
        format!("{}/nodes/{node}", self.prefix)
    }

    fn mark_key(&self, node: u64) -> String {
        format!("{}/marks/{node}", self.prefix)
    }

    /// Runs one request on the runtime (connecting first if needed), all
    /// within the budget.
    fn call<T, F, Fut>(&mut self, what: &str, request: F) -> Result<T, LeaseError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let budget = self.limit.budget();
        if budget.is_zero() {
            return Err(self.timed_out(what));
        }
        let cached = self.client.clone();
        let endpoints = self.endpoints.clone();
        let answer = self.runtime.block_on(async {
            tokio::time::timeout(budget, async {
                let client = match cached {
                    Some(client) => client,
                    None => {
                        let options = ConnectOptions::new()
                            .with_connect_timeout(budget)
                            .with_timeout(budget);
                        match Client::connect(endpoints, Some(options)).await {
                            Ok(client) => client,
                            Err(e) => return (None, Err(("connect", e))),
                        }
                    }
                };
                let reply = request(client.clone()).await;
                (Some(client), reply.map_err(|e| (what, e)))
            })
            .await
        });
        match answer {
            Ok((client, reply)) => {
                if client.is_some() {
                    self.client = client;
                }
                reply.map_err(|(what, e)| self.error(what, e))
            }
            Err(_) => Err(self.timed_out(what)),
        }
    }

    fn timed_out(&mut self, what: &str) -> LeaseError {
        self.unreachable(format!("{what}: no answer"))
    }

    /// Drops the connection (the next call reconnects) and says why.
    fn unreachable(&mut self, reason: String) -> LeaseError {
        self.client = None;
        self.keep_alive = None;
        LeaseError::Unreachable {
            server: self.server.clone(),
            waited: self.limit.timeout,
            reason,
        }
    }

    /// Sorts an etcd error into the kinds a keeper tells apart: worth
    /// retrying (unreachable) or not.
    fn error(&mut self, what: &str, e: Error) -> LeaseError {
        let reason = format!("{what}: {e}");
        match &e {
            // gRPC status codes (tonic's `Code`, by number).
            Error::GRpcStatus(status) => match i32::from(status.code()) {
                // Cancelled, Unknown, DeadlineExceeded, Aborted, Unavailable.
                1 | 2 | 4 | 10 | 14 => self.unreachable(reason),
                // InvalidArgument, Unimplemented, Internal, DataLoss.
                3 | 12 | 13 | 15 => LeaseError::BadReply { reason },
                _ => LeaseError::Refused { reason },
            },
            Error::InvalidArgs(_) | Error::InvalidUri(_) | Error::EndpointError(_) => {
                LeaseError::Config { reason }
            }
            Error::Utf8Error(_) => LeaseError::BadReply { reason },
            _ => self.unreachable(reason),
        }
    }

    fn revoke(&mut self, lease: i64) -> Result<(), LeaseError> {
        self.forget(lease);
        self.call("revoke the lease", move |mut c| async move {
            revoke(&mut c, lease).await
        })
    }

    /// Drops the keep-alive stream of `lease`, which is going away.
    fn forget(&mut self, lease: i64) {
        if self.keep_alive.as_ref().is_some_and(|k| k.0 == lease) {
            self.keep_alive = None;
        }
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
            let listing = self.call("list node ids", move |mut c| async move {
                c.get(key, Some(GetOptions::new().with_prefix())).await
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
            let (node_key, mark_key, token) =
                (self.node_key(node), self.mark_key(node), self.token.clone());
            // Absent node key, and the mark unchanged since read: the mark is
            // the floor of this claim.
            let txn = Txn::new()
                .when([
                    Compare::create_revision(node_key.clone(), CompareOp::Equal, 0),
                    Compare::mod_revision(mark_key.clone(), CompareOp::Equal, revision),
                ])
                .and_then([
                    TxnOp::put(node_key, token, Some(PutOptions::new().with_lease(lease))),
                    TxnOp::put(mark_key, ceiling_ms.to_string(), None),
                ]);
            let reply = self.call(
                "claim a node id",
                move |mut c| async move { c.txn(txn).await },
            )?;
            if reply.succeeded() {
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

/// Revokes an etcd lease; one that already expired is fine.
async fn revoke(client: &mut Client, lease: i64) -> Result<(), Error> {
    match client.lease_revoke(lease).await {
        Err(Error::GRpcStatus(status)) if status.message().contains("not found") => Ok(()),
        other => other.map(drop),
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

    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError> {
        let ttl = self.ttl_secs;
        let grant = self.call("grant a lease", move |mut c| async move {
            c.lease_grant(ttl, None).await
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
        let (lease, node_key, mark_key) = (
            claim.handle,
            self.node_key(claim.node),
            self.mark_key(claim.node),
        );
        let txn = Txn::new()
            .when([Compare::lease(node_key, CompareOp::Equal, lease)])
            .and_then([TxnOp::put(mark_key, ceiling_ms.to_string(), None)]);
        let reply = self.call(
            "record the mark",
            move |mut c| async move { c.txn(txn).await },
        )?;
        if !reply.succeeded() {
            return Ok(false);
        }
        if self.keep_alive.as_ref().is_none_or(|k| k.0 != lease) {
            let (keeper, stream) = self
                .call("open the keep-alive stream", move |mut c| async move {
                    c.lease_keep_alive(lease).await
                })?;
            self.keep_alive = Some((lease, keeper, stream));
        }
        let timeout = self.limit.budget();
        let Some((_, keeper, stream)) = &mut self.keep_alive else {
            return Ok(false);
        };
        let answer = self.runtime.block_on(async {
            // (The timer must be made inside the runtime.)
            tokio::time::timeout(timeout, async {
                keeper.keep_alive().await?;
                stream.message().await
            })
            .await
        });
        match answer {
            Ok(Ok(Some(reply))) if reply.id() == lease || reply.id() == 0 => Ok(reply.ttl() > 0),
            Ok(Ok(Some(reply))) => {
                self.keep_alive = None;
                Err(LeaseError::BadReply {
                    reason: format!(
                        "keep-alive for lease {lease} answered for lease {}",
                        reply.id()
                    ),
                })
            }
            Ok(Ok(None)) => {
                self.keep_alive = None;
                Err(LeaseError::Unreachable {
                    server: self.server.clone(),
                    waited: timeout,
                    reason: "the keep-alive stream closed".into(),
                })
            }
            Ok(Err(e)) => {
                self.keep_alive = None;
                Err(self.error("keep the lease alive", e))
            }
            Err(_) => Err(self.timed_out("keep the lease alive")),
        }
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        let (lease, node_key, mark_key) = (
            claim.handle,
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
        self.forget(lease);
        // One call, so that both requests share its budget.
        self.call("release the node id", move |mut c| async move {
            c.txn(txn).await?;
            revoke(&mut c, lease).await
        })
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

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
