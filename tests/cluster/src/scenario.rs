//! Scenarios for the library's planted lease bugs (`flakeid::plant`, in a
//! build with `--cfg flakeid_plant`) and their honest controls: each puts
//! a lease into the one situation where its bug matters, for
//! milliseconds, and returns the checker's report with what the scenario
//! saw happen, so that a control can assert it really happened (an
//! answer came late, the old holder still issued when the new one
//! claimed, the epoch wait was waited) and a plant that it was caught.
//!
//! - [`late_answer`] (`deadline-from-answer`, `late-answer-reopens`): a
//!   real Redis behind a [`Proxy`] that holds the answer to a renewal and
//!   delivers it late, then lets nothing through: the fence must close at
//!   the renewal's *request* plus TTL − margin, and an answer that comes
//!   after the deadline must not reopen it. Caught by the deadline check,
//!   which takes the requests' instants from the proxy too: a keeper that
//!   stamped its sends late would be caught as well.
//! - [`failover_claim`] (`epoch-wait-skipped`): Redis behind Sentinel; a
//!   holder's claim never reaches the replicas, the primary is paused, a
//!   replica is promoted without the claim, and another worker claims the
//!   node id there while the holder still issues. Caught by hand-off order.
//! - [`skewed_handoff`] (`claim-ignores-mark`): a node id handed to a
//!   worker whose clock is 2 s behind its last holder's IDs: only the mark
//!   keeps the new holder's IDs above. Caught by hand-off order.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use flakeid_test_servers::{Kind, Proxy, Server, url_at};

use crate::check::{Report, check};
use crate::cluster::{Cluster, Role, StoreKind};
use crate::fleet::{Fleet, View, WorkerSpec};
use crate::mono_ns;
use crate::record::{Issued, ids_path, write_requests};
use crate::worker::Store;

/// Waits for `done`, or panics naming `what` (a scenario that cannot reach
/// its next step proves nothing).
fn expect(fleet: &mut Fleet, within: Duration, what: &str, done: impl FnMut(&[View]) -> bool) {
    assert!(
        fleet.wait_for(within, done),
        "{what}: not within {within:?}"
    );
}

/// Polls `done` every 2 ms, up to `within`; panics naming `what` if it
/// never holds.
fn until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let begun = Instant::now();
    while !done() {
        assert!(begun.elapsed() < within, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(2));
    }
}

/// Sleeps until CLOCK_MONOTONIC reads `at_ns`.
fn sleep_until(at_ns: u64) {
    let now = mono_ns();
    if at_ns > now {
        thread::sleep(Duration::from_nanos(at_ns - now));
    }
}

fn spec(store: Store, prefix: &str, ttl: Duration, plant: &str) -> WorkerSpec {
    WorkerSpec {
        store,
        prefix: prefix.into(),
        ttl,
        margin: None,
        run_for: Duration::from_secs(300),
        plant: plant.into(),
        skew_ms: 0,
        nodes: 0..=0,
    }
}

/// The IDs worker `k` left in `dir`.
fn issued(dir: &Path, k: usize) -> Vec<Issued> {
    Issued::read_all(&ids_path(dir, k))
}

/// When the answer comes, in [`late_answer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Late {
    /// 600 ms after the request, before the deadline (TTL 3 s, margin
    /// 600 ms: the deadline in force is 1.4 s after the request).
    BeforeDeadline,
    /// 100 ms after the deadline in force, while the request is still
    /// waited for (TTL 3 s, margin 1.5 s: the deadline in force is 0.5 s
    /// after the request, which is waited for 1 s).
    AfterDeadline,
}

/// What [`late_answer`] saw happen.
#[derive(Debug)]
pub struct LateAnswer {
    pub report: Report,
    /// Runs until the scenario happened (at most three).
    pub runs: usize,
    /// Whether it happened in the last run: the held answer reached the
    /// keeper while it still waited for it (no renewal failed between the
    /// hold and the release, held bytes were delivered);
    /// [`Late::BeforeDeadline`]: the keeper took the late answer as a
    /// renewal, and the worker issued after it arrived;
    /// [`Late::AfterDeadline`]: the answer came after the deadline in
    /// force.
    pub happened: bool,
    /// How late the answer taken was (its arrival less its request), if
    /// the keeper took one after the hold.
    pub late_by_ms: Option<u64>,
    /// The release's time less the deadline in force then (negative:
    /// before it), in ms.
    pub released_past_deadline_ms: i64,
}

/// A worker on `Lease::redis` through a [`Proxy`] to a real Redis, node id
/// 0, TTL 3 s. Once it issues and its lease was renewed, the proxy holds
/// the answers; when the next renewal's answer is held, the proxy waits
/// (see [`Late`]), then freezes (no request goes through from then) and
/// delivers the held answer. The worker must stop at the deadline the
/// checker computes from the renewal's request. Repeated, up to three
/// times, until the held answer reached a keeper still waiting for it
/// (on a loaded machine the keeper may give up on the request first).
pub fn late_answer(late: Late, plant: &str, exe: &Path, dir: &Path) -> LateAnswer {
    let mut runs = 0;
    loop {
        runs += 1;
        let run_dir = dir.join(format!("run{runs}"));
        let mut outcome = late_answer_once(late, plant, exe, &run_dir);
        outcome.runs = runs;
        if outcome.happened || runs == 3 {
            return outcome;
        }
        eprintln!("late answer, run {runs}: the scenario did not happen; again");
    }
}

fn late_answer_once(late: Late, plant: &str, exe: &Path, dir: &Path) -> LateAnswer {
    const TTL: Duration = Duration::from_secs(3);
    let margin = match late {
        Late::BeforeDeadline => TTL / 5,
        Late::AfterDeadline => TTL / 2,
    };
    let valid_ns = (TTL - margin).as_nanos() as u64;
    let server = Server::start(Kind::Redis);
    let proxy = Proxy::new(server.addr());
    let mut fleet = Fleet::new(dir, exe);
    let prefix = flakeid_test_servers::unique_prefix("late");
    let w = fleet.spawn(&WorkerSpec {
        margin: Some(margin),
        ..spec(
            Store::Redis(url_at(Kind::Redis, proxy.addr())),
            &prefix,
            TTL,
            plant,
        )
    });
    expect(
        &mut fleet,
        Duration::from_secs(60),
        "the worker issuing, its lease renewed",
        |v| v[w].ids > 0 && v[w].extensions.iter().any(|e| !e.claim),
    );
    proxy.hold(true);
    let held_at = mono_ns();
    // The deadline in force: from the last extension whose answer came
    // before the hold (a renewal in flight now is held).
    let in_force = |v: &View| {
        v.extensions
            .iter()
            .filter(|e| e.arrived_ns < held_at)
            .map(|e| e.sent_ns + valid_ns)
            .max()
            .unwrap_or(0)
    };
    until(Duration::from_secs(30), "an answer held", || {
        proxy.held() > 0
    });
    let answer_held_at = mono_ns();
    let deadline = in_force(&fleet.views()[w]);
    let release_at = match late {
        Late::BeforeDeadline => answer_held_at + 600_000_000,
        Late::AfterDeadline => deadline + 100_000_000,
    };
    sleep_until(release_at);
    proxy.freeze(true);
    let released_at = mono_ns();
    let delivered_before = proxy.delivered_late();
    proxy.release();
    // The verdict: the keeper gives the claim up (its deadline passed
    // with no renewal it could take since), which it says after the
    // release; an honest keeper at the deadline in force, a planted one
    // later.
    expect(
        &mut fleet,
        Duration::from_secs(30),
        "the keeper giving the claim up",
        |v| {
            v[w].lease_events
                .iter()
                .any(|(at, e)| *at > released_at && e.starts_with("fenced:"))
        },
    );
    let view = fleet.views()[w].clone();
    fleet.stop_all();
    let proxy_late = proxy.delivered_late();
    // The worker is the proxy's only client: when its requests left it,
    // for the checker.
    write_requests(dir, w, &proxy.requests_read_at());
    drop(proxy);
    drop(server);
    let report = check(dir);

    let taken = view
        .extensions
        .iter()
        .filter(|e| !e.claim && e.arrived_ns >= held_at)
        .min_by_key(|e| e.arrived_ns);
    let late_by_ms = taken.map(|e| (e.arrived_ns - e.sent_ns) / 1_000_000);
    // From the hold until the held answer was taken, or the keeper gave
    // the claim up, no renewal failed: the held request was still waited
    // for when its answer came.
    let gave_up = view
        .lease_events
        .iter()
        .find(|(at, e)| *at > released_at && e.starts_with("fenced:"))
        .map_or(u64::MAX, |(at, _)| *at);
    let settled = taken.map_or(gave_up, |e| e.arrived_ns.min(gave_up));
    let failed_in_hold = view
        .lease_events
        .iter()
        .any(|(at, e)| *at >= held_at && *at <= settled && e.contains("renew"));
    let last_issued = issued(dir, w).last().map_or(0, |i| i.start_ns);
    let released_past_deadline_ms = (released_at as i64 - deadline as i64) / 1_000_000;
    let happened = !failed_in_hold
        && proxy_late > delivered_before
        && match late {
            Late::BeforeDeadline => {
                taken.is_some_and(|e| e.arrived_ns >= released_at && last_issued > e.arrived_ns)
            }
            Late::AfterDeadline => released_at > deadline,
        };
    LateAnswer {
        report,
        runs: 0,
        happened,
        late_by_ms,
        released_past_deadline_ms,
    }
}

/// What [`failover_claim`] saw happen.
#[derive(Debug)]
pub struct FailoverClaim {
    pub report: Report,
    /// The old holder (A) issued IDs from calls that started after the new
    /// holder's (B's) claim was answered.
    pub old_issued_after_claim: bool,
    /// B's claim waited out the epoch (its keeper said so: `LeaseWaiting`),
    /// and how long from B's claim to its first ID.
    pub waited: bool,
    pub first_id_after_claim_ms: Option<u64>,
    /// Runs until the old holder still issued after the new claim (at
    /// most three: on a loaded machine the failover may take longer than
    /// the old holder's lease).
    pub runs: usize,
}

/// A failover that loses a claim: worker A holds node id 0 with
/// `Lease::redis` on the primary (no `WAIT`) while the primary is cut off
/// from both replicas, so A's claim never reaches them. Right after one of
/// A's renewals the primary is paused: Sentinel promotes a replica without
/// A's claim, and A, its renewals unanswered, issues until its deadline
/// (0.8 TTL after that renewal: 16 s, several failovers long). Worker B,
/// a Sentinel lease started after the promotion, claims node id 0 on the
/// new primary. An honest B waits out the new epoch (one TTL from its
/// start) and issues after A's deadline; with `epoch-wait-skipped` B
/// issues at once, beside A. Repeated, up to three times, until A still
/// issued after B's claim.
pub fn failover_claim(plant: &str, exe: &Path, dir: &Path) -> FailoverClaim {
    let mut runs = 0;
    loop {
        runs += 1;
        let mut outcome = failover_claim_once(plant, exe, &dir.join(format!("run{runs}")));
        outcome.runs = runs;
        if outcome.old_issued_after_claim || runs == 3 {
            return outcome;
        }
        eprintln!("failover claim, run {runs}: A was fenced before B claimed; again");
    }
}

fn failover_claim_once(plant: &str, exe: &Path, dir: &Path) -> FailoverClaim {
    const TTL: Duration = Duration::from_secs(20);
    let mut cluster = Cluster::start(StoreKind::Redis);
    let mut fleet = Fleet::new(dir, exe);
    let prefix = flakeid_test_servers::unique_prefix("failover-claim");
    let primary = cluster.leader().expect("a primary");
    let old = cluster.members()[primary].addr;
    let replicas: Vec<_> = cluster
        .in_role(Role::Follower)
        .into_iter()
        .map(|r| cluster.members()[r].addr)
        .collect();
    for &replica in &replicas {
        cluster.firewall.cut(old, replica);
    }
    let a = fleet.spawn(&spec(
        Store::Redis(cluster.redis_url(primary)),
        &prefix,
        TTL,
        "none",
    ));
    expect(
        &mut fleet,
        Duration::from_secs(60),
        "worker A issuing",
        |v| v[a].ids > 0,
    );
    let renewals = fleet.views()[a]
        .extensions
        .iter()
        .filter(|e| !e.claim)
        .count();
    expect(
        &mut fleet,
        Duration::from_secs(60),
        "a renewal of A's lease",
        |v| v[a].extensions.iter().filter(|e| !e.claim).count() > renewals,
    );
    cluster.member_mut(primary).pause();
    let began = Instant::now();
    let promoted = loop {
        match cluster.leader() {
            Some(now) if now != primary => break true,
            _ if began.elapsed() > FAILOVER_WITHIN => break false,
            _ => thread::sleep(Duration::from_millis(50)),
        }
    };
    assert!(
        promoted,
        "Sentinel did not fail over within {FAILOVER_WITHIN:?}"
    );
    for &replica in &replicas {
        cluster.firewall.uncut(old, replica);
    }
    let b = fleet.spawn(&spec(cluster.sentinel_store(), &prefix, TTL, plant));
    // The verdict: B issued (after its wait, or at once), and A either
    // is fenced (its deadline passed: it issues no more) or issued after
    // B did (both at once).
    expect(
        &mut fleet,
        Duration::from_secs(120),
        "B issuing, and A fenced or issuing beside it",
        |v| v[b].ids > 0 && (v[a].fenced || v[a].last_issued_ns > v[b].last_issued_ns),
    );
    cluster.member_mut(primary).resume();
    let vb = fleet.views()[b].clone();
    fleet.stop_all();
    let report = check(dir);

    let claimed = vb.extensions.iter().find(|e| e.claim).map(|e| e.arrived_ns);
    let old_issued_after_claim =
        claimed.is_some_and(|c| issued(dir, a).last().is_some_and(|i| i.start_ns > c));
    let first = issued(dir, b).first().map(|i| i.start_ns);
    FailoverClaim {
        report,
        old_issued_after_claim,
        waited: vb
            .lease_events
            .iter()
            .any(|(_, e)| e.starts_with("claimed node id") && e.contains("issuing after")),
        first_id_after_claim_ms: claimed
            .zip(first)
            .map(|(c, f)| f.saturating_sub(c) / 1_000_000),
        runs: 0,
    }
}

/// A failover usually takes seconds; on a loaded machine a sentinel may
/// find the replica's last report too old and retry after twice the
/// failover timeout, more than once.
const FAILOVER_WITHIN: Duration = Duration::from_secs(180);

/// What [`skewed_handoff`] saw happen.
#[derive(Debug)]
pub struct SkewedHandoff {
    pub report: Report,
    /// How far B's clock, when it claimed, was behind A's last ID (ms;
    /// positive: behind).
    pub behind_ms: i64,
}

/// A node id handed over to a clock that is behind: worker A holds node
/// id 0 on a real etcd and issues, then stops (its release records its
/// last millisecond as the mark); worker B, its wall clock 2 s behind
/// (libfaketime), claims node id 0 and issues. An honest B starts after
/// the mark; with `claim-ignores-mark` it starts at its own clock, below
/// A's IDs.
pub fn skewed_handoff(plant: &str, exe: &Path, dir: &Path) -> SkewedHandoff {
    const TTL: Duration = Duration::from_secs(3);
    let server = Server::start(Kind::Etcd);
    let store = Store::Etcd(vec![server.url()]);
    let mut fleet = Fleet::new(dir, exe);
    let prefix = flakeid_test_servers::unique_prefix("skewed-handoff");
    let a = fleet.spawn(&spec(store.clone(), &prefix, TTL, "none"));
    expect(
        &mut fleet,
        Duration::from_secs(60),
        "worker A issuing",
        |v| v[a].ids >= 100,
    );
    fleet.stop(a);
    expect(&mut fleet, Duration::from_secs(90), "A gone", |v| {
        v[a].exited
    });
    let b = fleet.spawn(&WorkerSpec {
        skew_ms: -2_000,
        ..spec(store, &prefix, TTL, plant)
    });
    expect(
        &mut fleet,
        Duration::from_secs(60),
        "worker B issuing",
        |v| v[b].ids >= 100,
    );
    fleet.stop_all();
    drop(server);
    let report = check(dir);
    let layout = crate::layout();
    let a_last_ms = issued(dir, a)
        .last()
        .and_then(|i| layout.decode(flakeid::Id::from_u64(i.id)).ok())
        .map_or(0, |d| d.unix_ms());
    let b_built_ms = crate::record::Line::parse(
        std::fs::read_to_string(crate::record::events_path(dir, b))
            .unwrap_or_default()
            .lines()
            .find(|l| l.contains(" built "))
            .unwrap_or(""),
    )
    .map_or(0, |l| l.wall_ms);
    SkewedHandoff {
        report,
        behind_ms: a_last_ms as i64 - b_built_ms as i64,
    }
}
