//! Renewals answered late: after the deadline (both stores), and before
//! it, when the deadline must count from the renewal's sending (Redis).

use super::*;

/// A renewal answered late, then no more answers: the generator must stop
/// issuing a TTL less the margin after the renewal was *sent* (the time
/// the lease's `LeaseExtended` event reports; not after its answer), and
/// the test must see a keeper that counts from the answer. `Err` says what
/// broke.
///
/// A proxy holds the store's replies from just after the build (before
/// the first renewal, a third of the TTL after the claim). Once it holds
/// the first renewal's answer (the store applied the renewal), it keeps
/// it `LATE` more (less than the claim's deadline is away), delivers it,
/// and holds every later one: the renewal extends the lease from its sending,
/// and nothing extends it after. The test thread then calls `try_next_id`
/// without pause, noting when each call began, until well past where a
/// deadline counted from the answer would fall: a call that began at or
/// after the deadline (plus 5 ms for the fence's TSC against `Instant`)
/// must not return an ID.
///
/// Waited for, not timed: a run where the answer did not come back late
/// (the keeper gave up on it first, or the renewal came when the claim's
/// deadline was too near), or where no call began between the two
/// deadlines (the test thread was not scheduled), shows nothing; it runs
/// again, up to five times.
#[cfg(feature = "redis")]
pub fn deadline_counts_from_sending(server: &Server, tweak: Tweak) -> Result<(), String> {
    const LATE_TTL: Duration = Duration::from_secs(3);
    const LATE_MARGIN: Duration = Duration::from_millis(600);
    const LATE: Duration = Duration::from_millis(600);
    const WITHIN: Duration = Duration::from_secs(30);
    const SLACK: Duration = Duration::from_millis(5);
    for run in 1..=5 {
        let prefix = unique_prefix("deadline");
        let proxy = Proxy::new(server.addr());
        let heard = Heard::open();
        let hook = heard.clone();
        let g = Generator::builder(Layout::twitter())
            .lease(tweak(
                lease_at(server.kind, proxy.addr(), &prefix)
                    .node_ids(0..=0)
                    .ttl(LATE_TTL)
                    .safety_margin(LATE_MARGIN),
            ))
            .on_event(move |e: &Event| hook.hear(e))
            .build()
            .unwrap();
        proxy.hold(true);
        wait_until(WITHIN, "the first renewal's answer, held", || {
            proxy.held() > 0
        });
        thread::sleep(LATE);
        proxy.release();
        let renewed = heard.wait_for(WITHIN, "the renewal's end", |e| {
            e.iter()
                .any(|e| matches!(e, Event::LeaseExtended { claim: false, .. }))
                || e.iter().any(|e| is_renewal_failure(e) || is_fenced(e))
        });
        let late = renewed.iter().find_map(|e| match e {
            Event::LeaseExtended {
                claim: false,
                sent,
                answered,
                ..
            } if *answered - *sent >= LATE => Some((*sent, *answered)),
            _ => None,
        });
        let Some((sent, answered)) = late else {
            eprintln!("deadline, run {run}: no late answer extended the lease: {renewed:?}");
            continue;
        };
        let deadline = sent + (LATE_TTL - LATE_MARGIN);
        let from_answer = answered + (LATE_TTL - LATE_MARGIN);
        let (mut between, mut issued_late) = (0, None);
        loop {
            let began = Instant::now();
            if began > from_answer + Duration::from_millis(50) {
                break;
            }
            let id = g.try_next_id();
            let past = began.saturating_duration_since(deadline);
            if began >= deadline + SLACK && began + SLACK < from_answer {
                between += 1;
            }
            match id {
                Ok(_) if past >= SLACK => {
                    issued_late.get_or_insert(past);
                }
                Ok(_)
                | Err(GenerateError::Fenced)
                | Err(GenerateError::SequenceExhausted { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        let extended = heard
            .events()
            .iter()
            .filter(|e| matches!(e, Event::LeaseExtended { claim: false, .. }))
            .count();
        if extended != 1 {
            eprintln!("deadline, run {run}: {extended} renewals extended the lease, not 1");
            continue;
        }
        if let Some(past) = issued_late {
            return Err(format!(
                "issued {past:?} after the deadline of a renewal answered {:?} late",
                answered - sent
            ));
        }
        if between == 0 {
            eprintln!("deadline, run {run}: no call began between the two deadlines");
            continue;
        }
        return Ok(());
    }
    panic!("in 5 runs no renewal answered late was followed by a call past its deadline");
}

/// A renewal the store applied but whose answer came back after the
/// fence's deadline, on a fence that no generator call had closed (nobody
/// called between the deadline and the answer, so the deadline is still
/// stored): the generator must be fenced, the late answer must not reopen
/// it, and the keeper then claims afresh.
///
/// A proxy holds the store's replies from just after the build on (before
/// the first renewal is due: at least a twelfth of the TTL after the
/// claim). The lease's safety margin is half its TTL, so the deadline (the
/// claim's send plus half the TTL, before the build returned) comes while a
/// renewal waits for its answer: the first is due within a third of the TTL
/// and waits up to a third of the TTL, and one that failed is followed by
/// the next within a tenth of the TTL. The test lets the replies through
/// half a TTL after the build returned, when the deadline has certainly
/// passed: the renewal waiting then gets its answer late. Unless the
/// deadline fell between two renewals, or the keeper ran late: the lease
/// then ended without a late answer (a renewal failed, or none was
/// waiting), which checks the same fence by the other path, and the
/// scenario runs again, up to five times, until a late answer reached the
/// keeper.
pub fn late_renewal(server: &Server, tweak: Tweak) {
    const LATE_TTL: Duration = Duration::from_secs(3);
    const WITHIN: Duration = Duration::from_secs(60);
    let mut late_answers = 0;
    let mut runs = 0;
    while late_answers == 0 && runs < 5 {
        runs += 1;
        let prefix = unique_prefix("late");
        let proxy = Proxy::new(server.addr());
        let heard = Heard::gated();
        let hook = heard.clone();
        let asked = Instant::now();
        let g = Generator::builder(Layout::twitter())
            .lease(tweak(
                lease_at(server.kind, proxy.addr(), &prefix)
                    .node_ids(0..=0)
                    .ttl(LATE_TTL)
                    .safety_margin(LATE_TTL / 2),
            ))
            .on_event(move |e: &Event| hook.hear(e))
            .build()
            .unwrap();
        proxy.hold(true);
        let held = Instant::now();
        let _gate = OpenOnDrop(heard.clone());
        if held - asked >= LATE_TTL / 12 {
            // The first renewal may have been answered before the hold.
            eprintln!(
                "late renewal: the hold began {:?} after the build was asked for",
                held - asked
            );
            continue;
        }
        // (Read straight from the server, not through the proxy.)
        let claimed_mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
        // No generator call from here until the keeper says Fenced.
        let before = proxy.sent();
        wait_until(WITHIN, "the first renewal's request", || {
            proxy.sent() > before
        });
        // The deadline passed by then (5 ms for the fence's TSC
        // calibration): a lower bound, the renewal's request timeout runs
        // for a sixth of the TTL more.
        let release_at = held + LATE_TTL / 2 + Duration::from_millis(5);
        thread::sleep(release_at.saturating_duration_since(Instant::now()));
        let before_release = heard.events().len();
        proxy.hold(false);
        // The keeper gives the lease up, or (a bug the test must catch)
        // takes the late answer as an extension.
        let events = heard.wait_for(WITHIN, "Fenced", |e| {
            e.iter().any(is_fenced) || e[before_release..].iter().any(is_extension)
        });

        // The keeper is held at Fenced: the generator as the lapse left it.
        assert_eq!(
            g.try_next_id(),
            Err(GenerateError::Fenced),
            "issued after a late renewal; heard {events:?}"
        );
        assert!(
            matches!(g.health(), Health::Fenced { .. }),
            "{:?}; heard {events:?}",
            g.health()
        );
        // A renewal was waiting for its answer when the hold ended (held
        // bytes went to an open connection), it had reached the store (the
        // mark is raised), and its answer reached the keeper, which took it
        // as renewed (no failure heard after the hold) and extended nothing
        // (Fenced heard after the hold).
        let mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
        let after = &events[before_release..];
        if proxy.delivered_late() > 0
            && mark > claimed_mark
            && after.iter().any(is_fenced)
            && !after.iter().any(is_renewal_failure)
        {
            late_answers += 1;
        }
        heard.open_gate();

        // The keeper claims afresh, and the generator issues again.
        let events = heard.wait_for(WITHIN, "the fresh claim", |e| {
            e.iter().any(|e| matches!(e, Event::LeaseReopened { .. }))
        });
        wait_until(WITHIN, "an ID after the fresh claim", || {
            g.try_next_id().is_ok()
        });
        let changes: Vec<&Event> = events
            .iter()
            .filter(|e| !is_renewal_failure(e) && !is_extension(e))
            .collect();
        assert!(
            matches!(
                changes[..],
                [
                    Event::LeaseClaimed { node_id: 0 },
                    Event::Fenced { node_id: 0 },
                    Event::LeaseReopened { node_id: 0 }
                ]
            ),
            "lease events heard: {events:?}"
        );
    }
    eprintln!("late renewal: {late_answers} late answer(s) in {runs} run(s)");
    assert!(
        late_answers > 0,
        "in {runs} runs the keeper never had the held answer before giving up on it"
    );
}

/// A renewal etcd applies after a newer one (a copy of a hedged renewal,
/// stuck on its way to the member asked first while the next member's
/// copy and the renewal after it went through) must leave the mark where
/// the newer one put it: every value the mark takes while the node id is
/// held is at least the one before. `Err` says what broke.
///
/// The lease has two endpoints, two HTTP/2 proxies in front of the one
/// etcd. From just after the build, both hold the keeper's requests back.
/// The first renewal's mark transaction is held by the proxy of the member
/// asked first; that proxy is then frozen (nothing more passes), and the
/// other one forwards: the hedged copy of the renewal goes through it, and
/// the renewals after it. Once a renewal sent after the hold began has
/// extended the lease (its ceiling is above the held one's), the frozen
/// proxy delivers the held transaction, without the client's cancellation
/// of it, and the test waits until etcd answered it. The mark's history
/// (every write since the build, read from etcd's revisions) must then
/// never go down.
///
/// Waited for, not timed: a run where the keeper lost its lease meanwhile
/// (the held transaction could then raise nothing) shows nothing; it runs
/// again, up to five times.
#[cfg(feature = "etcd")]
pub fn late_copy_leaves_the_mark(server: &Server, tweak: Tweak) -> Result<(), String> {
    const COPY_TTL: Duration = Duration::from_secs(3);
    const WITHIN: Duration = Duration::from_secs(30);
    for run in 1..=5 {
        let prefix = unique_prefix("late-copy");
        let proxies = [Proxy::http2(server.addr()), Proxy::http2(server.addr())];
        let heard = Heard::open();
        let hook = heard.clone();
        let urls = proxies.each_ref().map(|p| url_at(Kind::Etcd, p.addr()));
        let lease = Lease::etcd(urls)
            .prefix(&prefix)
            .node_ids(0..=0)
            .ttl(COPY_TTL)
            .safety_margin(MARGIN)
            .connect_timeout(Duration::from_secs(5));
        let g = Generator::builder(Layout::twitter())
            .lease(tweak(lease))
            .on_event(move |e: &Event| hook.hear(e))
            .build()
            .unwrap();
        for p in &proxies {
            p.hold_requests(true);
        }
        let mark_key = format!("{prefix}/marks/0");
        let since = mark_history(&server.url(), &mark_key, 1).last().unwrap().0;
        wait_until(WITHIN, "a renewal's request held", || {
            proxies.iter().any(|p| p.held_requests() > 0)
        });
        let held_at = Instant::now();
        let (late, other) = match proxies[0].held_requests() > 0 {
            true => (&proxies[0], &proxies[1]),
            false => (&proxies[1], &proxies[0]),
        };
        late.freeze(true);
        other.hold_requests(false);
        let newer = |e: &Event| matches!(e, Event::LeaseExtended { claim: false, sent, .. } if *sent > held_at);
        heard.wait_for(WITHIN, "a renewal sent after the held one", |e| {
            e.iter().any(newer) || e.iter().any(is_fenced)
        });
        late.release_requests();
        wait_until(WITHIN, "etcd's answer to the held renewal", || {
            late.late_requests() > 0 && late.late_requests_answered() == late.late_requests()
        });
        let history = mark_history(&server.url(), &mark_key, since);
        let events = heard.events();
        drop(g);
        if events.iter().any(is_fenced) {
            eprintln!("late copy, run {run}: the lease lapsed meanwhile: {events:?}");
            continue;
        }
        if let Some(w) = history.windows(2).find(|w| w[1].1 < w[0].1) {
            return Err(format!(
                "the mark went down from {} to {} while the node id was held \
                 (a renewal applied late lowered it): {history:?}",
                w[0].1, w[1].1
            ));
        }
        return Ok(());
    }
    panic!("in 5 runs the lease lapsed before the held renewal reached etcd");
}

/// Every value `key` took from revision `since` on, with the revision that
/// wrote it, read from etcd's history.
#[cfg(feature = "etcd")]
fn mark_history(url: &str, key: &str, since: i64) -> Vec<(i64, u64)> {
    use etcd_client::GetOptions;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut c = etcd_client::Client::connect([url], None).await.unwrap();
            let now = c.get(key, None).await.unwrap().header().unwrap().revision();
            assert!(now - since < 100_000, "{} revisions to read", now - since);
            let mut writes: Vec<(i64, u64)> = Vec::new();
            for revision in since..=now {
                let options = GetOptions::new().with_revision(revision);
                let got = c.get(key, Some(options)).await.unwrap();
                let Some(kv) = got.kvs().first() else {
                    continue;
                };
                if writes.last().is_none_or(|w| w.0 != kv.mod_revision()) {
                    let value = String::from_utf8_lossy(kv.value()).parse().unwrap();
                    writes.push((kv.mod_revision(), value));
                }
            }
            writes
        })
}
