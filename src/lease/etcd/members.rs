//! The members of an etcd cluster as a store sees them: one client per
//! member, each connected to that member's endpoint alone, and a preferred
//! member (the last that answered), tried first.
//!
//! A request runs as attempts, one member each, each bounded by the
//! attempt timeout, all within the request's budget:
//!
//! - **In turn** (claims, releases): an attempt that fails for want of an
//!   answer (a timeout, a transport error, a member without a leader) moves
//!   on to the next member at once; a member whose attempt failed is tried
//!   again after a short pause, while the budget lasts.
//! - **Hedged** (renewals, which are idempotent): if the preferred member
//!   has not answered within the hedge delay, the same request goes to the
//!   next member too, and so on; the first answer wins and the others are
//!   dropped.
//!
//! A member whose attempt failed loses its client (and its keep-alive
//! stream): the next attempt there connects afresh, after checking that
//! something listens at its address, instead of waiting out a reconnect
//! backoff or a request queued on a dead connection.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, Error, LeaseKeepAliveStream, LeaseKeeper};
use tokio::runtime::Runtime;
use tokio::time::Instant;

use crate::error::LeaseError;

/// How long a member whose attempt failed is left alone before it is tried
/// again within the same request (so that members refusing at once are not
/// asked in a busy loop).
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// A keep-alive stream open on one member, for one etcd lease.
pub(super) struct KeepAlive {
    pub(super) lease: i64,
    pub(super) keeper: LeaseKeeper,
    pub(super) stream: LeaseKeepAliveStream,
}

/// One member: its endpoint, and its client and keep-alive stream while
/// they work.
struct Member {
    endpoint: String,
    client: Option<Client>,
    keep_alive: Option<KeepAlive>,
}

/// What an attempt is given: the member's client (if it has one; `None`:
/// connect with [`connect`]) and keep-alive stream, taken out while it
/// runs.
pub(super) struct Start {
    pub(super) endpoint: String,
    pub(super) client: Option<Client>,
    pub(super) keep_alive: Option<KeepAlive>,
}

/// Why an attempt failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// No answer from this member (a timeout, a transport error, a member
    /// cut off from its leader): another member may answer.
    NoAnswer(String),
    /// An answer that ends the request (a refusal, a bad reply).
    Final(LeaseError),
}

/// What an attempt hands back: the client it used and the keep-alive stream
/// (kept for the member's next attempt if it succeeded), and its answer.
pub(super) struct Attempt<T> {
    pub(super) client: Option<Client>,
    pub(super) keep_alive: Option<KeepAlive>,
    pub(super) answer: Result<T, Failure>,
}

impl<T> Attempt<T> {
    /// An attempt that failed before it had a client.
    pub(super) fn failed(failure: Failure) -> Attempt<T> {
        Attempt {
            client: None,
            keep_alive: None,
            answer: Err(failure),
        }
    }
}

/// An attempt under way.
pub(super) type Running<T> = Pin<Box<dyn Future<Output = Attempt<T>>>>;

/// How a request's attempts are spread over the members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spread {
    /// One member at a time.
    InTurn,
    /// The next member too whenever the hedge delay passes unanswered.
    Hedged,
}

pub(super) struct Members {
    members: Vec<Member>,
    /// The member that answered last.
    preferred: usize,
    /// Bounds each attempt.
    pub(super) attempt_timeout: Duration,
    /// How long a hedged request waits for one member before asking the
    /// next one too.
    pub(super) hedge_delay: Duration,
}

impl Members {
    /// The members at `endpoints`, `first` the one asked first.
    pub(super) fn new(
        endpoints: Vec<String>,
        first: usize,
        attempt_timeout: Duration,
        hedge_delay: Duration,
    ) -> Members {
        Members {
            members: endpoints
                .into_iter()
                .map(|endpoint| Member {
                    endpoint,
                    client: None,
                    keep_alive: None,
                })
                .collect(),
            preferred: first,
            attempt_timeout,
            hedge_delay,
        }
    }

    /// Drops the keep-alive streams of `lease`, which is going away.
    pub(super) fn forget(&mut self, lease: i64) {
        for m in &mut self.members {
            if m.keep_alive.as_ref().is_some_and(|k| k.lease == lease) {
                m.keep_alive = None;
            }
        }
    }

    /// Runs a request within `budget`: attempts made by `start`, one member
    /// each, spread as `spread` says. `Err(Failure::NoAnswer)` with the last
    /// member's reason if no member answered in time.
    pub(super) fn run<T>(
        &mut self,
        runtime: &Runtime,
        budget: Duration,
        spread: Spread,
        mut start: impl FnMut(Start) -> Running<T>,
    ) -> Result<T, Failure> {
        let n = self.members.len();
        let attempt_timeout = self.attempt_timeout;
        let hedge_delay = self.hedge_delay;
        runtime.block_on(async {
            let begun = Instant::now();
            let deadline = begun + budget;
            // (member, when it started, its future)
            let mut running: Vec<(usize, Instant, Running<T>)> = Vec::new();
            let mut idle_from = vec![begun; n];
            let mut next_launch = begun;
            // Where the search for the next member starts: the preferred
            // one, then each after the one last asked.
            let mut cursor = self.preferred;
            let mut last = String::from("no member was asked");
            let mut timer = Box::pin(tokio::time::sleep_until(deadline));
            std::future::poll_fn(|cx| {
                loop {
                    let now = Instant::now();
                    let mut k = 0;
                    while k < running.len() {
                        let Poll::Ready(attempt) = running[k].2.as_mut().poll(cx) else {
                            k += 1;
                            continue;
                        };
                        let (m, _, _) = running.swap_remove(k);
                        let member = &mut self.members[m];

                        match attempt.answer {
                            Ok(answer) => {
                                member.client = attempt.client;
                                member.keep_alive = attempt.keep_alive;
                                self.preferred = m;
                                return Poll::Ready(Ok(answer));
                            }
                            Err(Failure::NoAnswer(reason)) => {
                                member.client = None;
                                member.keep_alive = None;
                                last = format!("{}: {reason}", member.endpoint);
                                idle_from[m] = now + RETRY_PAUSE;
                                next_launch = now;
                            }
                            Err(Failure::Final(e)) => {
                                // The member answered: its client works.
                                member.client = attempt.client;
                                return Poll::Ready(Err(Failure::Final(e)));
                            }
                        }
                    }
                    running.retain(|&(m, started, _)| {
                        if now < started + attempt_timeout {
                            return true;
                        }
                        let member = &mut self.members[m];
                        member.client = None;
                        member.keep_alive = None;
                        last = format!("{}: no answer within {attempt_timeout:?}", member.endpoint);
                        idle_from[m] = now;
                        next_launch = now;
                        false
                    });
                    if now >= deadline {
                        return Poll::Ready(Err(Failure::NoAnswer(last.clone())));
                    }
                    let may_launch =
                        running.is_empty() || (spread == Spread::Hedged && now >= next_launch);
                    let candidate = (0..n)
                        .map(|k| (cursor + k) % n)
                        .find(|&m| running.iter().all(|r| r.0 != m) && idle_from[m] <= now);
                    if may_launch && let Some(m) = candidate {
                        let member = &mut self.members[m];
                        let future = start(Start {
                            endpoint: member.endpoint.clone(),
                            client: member.client.clone(),
                            keep_alive: member.keep_alive.take(),
                        });
                        running.push((m, now, future));
                        cursor = (m + 1) % n;
                        next_launch = now + hedge_delay;
                        continue;
                    }
                    // Sleep until something is due: the deadline, an
                    // attempt's timeout, the next launch, a member's pause.
                    let mut wake = deadline;
                    for &(_, started, _) in &running {
                        wake = wake.min(started + attempt_timeout);
                    }
                    if running.is_empty() || spread == Spread::Hedged {
                        let idle = (0..n)
                            .filter(|&m| running.iter().all(|r| r.0 != m))
                            .map(|m| idle_from[m].max(next_launch))
                            .min();
                        if let Some(at) = idle {
                            wake = wake.min(at);
                        }
                    }
                    timer.as_mut().reset(wake);
                    if timer.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                }
            })
            .await
        })
    }
}

/// A client for `endpoint` alone, once something listens at its address
/// (a refused connection fails at once, where the client would wait for
/// the member to come back). The client connects lazily; its requests are
/// bounded by the attempts, not by the client.
pub(super) async fn connect(endpoint: &str) -> Result<Client, Failure> {
    let address = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .trim_end_matches('/');
    if let Err(e) = tokio::net::TcpStream::connect(address).await {
        return Err(Failure::NoAnswer(format!("connect: {e}")));
    }
    let options = ConnectOptions::new()
        // A member cut off from the others answers at once that it has no
        // leader (and ends keep-alive streams when it loses its leader),
        // instead of holding requests it cannot serve.
        .with_require_leader(true);
    Client::connect([endpoint], Some(options))
        .await
        .map_err(|e| classify("connect", e))
}

/// Sorts an etcd error into the kinds a store tells apart: worth asking
/// another member (no answer), or not.
pub(super) fn classify(what: &str, e: Error) -> Failure {
    let reason = format!("{what}: {e}");
    match &e {
        // gRPC status codes (tonic's `Code`, by number).
        Error::GRpcStatus(status) => match i32::from(status.code()) {
            // Cancelled, Unknown, DeadlineExceeded, Aborted, Unavailable.
            1 | 2 | 4 | 10 | 14 => Failure::NoAnswer(reason),
            // InvalidArgument, Unimplemented, Internal, DataLoss.
            3 | 12 | 13 | 15 => Failure::Final(LeaseError::BadReply { reason }),
            _ => Failure::Final(LeaseError::Refused { reason }),
        },
        Error::InvalidArgs(_) | Error::InvalidUri(_) | Error::EndpointError(_) => {
            Failure::Final(LeaseError::Config { reason })
        }
        Error::Utf8Error(_) => Failure::Final(LeaseError::BadReply { reason }),
        _ => Failure::NoAnswer(reason),
    }
}
