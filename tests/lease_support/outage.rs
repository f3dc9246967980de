//! The store killed and restarted, or frozen behind a proxy.

use super::*;

/// What one generator thread saw, stamped on the monotonic clock.
/// Sets its flag when dropped: the body of a `thread::scope` holds one, so a
/// panic in the body stops the scope's threads (the scope joins them before
/// the panic goes on) instead of waiting on them forever.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[derive(Default)]
/// Calls are stamped when they start: a call that starts after the fence's
/// deadline cannot return an ID (it confirms each ID against the deadline
/// later still), whatever the scheduler does to the thread.
struct Seen {
    ids: Vec<(Instant, u64)>,
    /// Calls answered `Fenced`: when each started and when it was answered.
    fenced: Vec<(Instant, Instant)>,
}

/// Takes IDs from `g` with `try_next_id` about every 300 µs until `stop`:
/// each ID and each `Fenced` with when its call started (and, for
/// `Fenced`, was answered); a `Fenced` call that started after `deadline`
/// (once set) sets `fenced_late`; `on_id` runs after each ID.
fn issue_until(
    g: &Generator,
    stop: &AtomicBool,
    deadline: &std::sync::OnceLock<Instant>,
    fenced_late: &AtomicBool,
    on_id: impl Fn(),
) -> Seen {
    let mut seen = Seen::default();
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        match g.try_next_id() {
            Ok(id) => {
                seen.ids.push((start, id.to_u64()));
                on_id();
            }
            Err(GenerateError::Fenced) => {
                seen.fenced.push((start, Instant::now()));
                if deadline.get().is_some_and(|&d| start > d) {
                    fenced_late.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => panic!("unexpected {e}"),
        }
        thread::sleep(Duration::from_micros(300));
    }
    seen
}

/// What a readiness probe said, and when it was asked.
struct Probe {
    before: Instant,
    after: Instant,
    closed_for: Duration,
}

/// Kill the server mid-run: every generator fences within the TTL and issues
/// nothing after; restart it: every generator claims again and resumes.
pub fn killed_then_restarted(server: &mut Server) {
    const GENERATORS: usize = 8;
    let prefix = unique_prefix("kill");
    // Each generator's lease events, as its hook heard them.
    let heard: Vec<Arc<Mutex<Vec<Event>>>> = (0..GENERATORS).map(|_| Arc::default()).collect();
    let generators: Vec<Generator> = heard
        .iter()
        .map(|log| {
            let log = log.clone();
            Generator::builder(Layout::twitter())
                .lease(server.lease(&prefix))
                .on_event(move |e: &Event| log.lock().unwrap().push(e.clone()))
                .build()
                .unwrap()
        })
        .collect();
    let stop = AtomicBool::new(false);
    let back = AtomicBool::new(false);
    let resumed: Vec<AtomicBool> = (0..GENERATORS).map(|_| AtomicBool::new(false)).collect();
    let fenced_late: Vec<AtomicBool> = (0..GENERATORS).map(|_| AtomicBool::new(false)).collect();
    // Every renewal that succeeded was sent before the kill, so every fence
    // closed by `killed + TTL - MARGIN` (its clock and `Instant` run at the
    // same rate; 5 ms is for the TSC calibration).
    let deadline = std::sync::OnceLock::<Instant>::new();
    let mut probes: Vec<Option<Probe>> = (0..GENERATORS).map(|_| None).collect();
    let (killed, restarted, seen) = thread::scope(|s| {
        let _stop_on_panic = StopOnDrop(&stop);
        let threads: Vec<_> = generators
            .iter()
            .zip(resumed.iter().zip(&fenced_late))
            .map(|(g, (resumed, fenced_late))| {
                let (stop, back, deadline) = (&stop, &back, &deadline);
                s.spawn(move || {
                    issue_until(g, stop, deadline, fenced_late, || {
                        if back.load(Ordering::Relaxed) {
                            resumed.store(true, Ordering::Relaxed);
                        }
                    })
                })
            })
            .collect();
        thread::sleep(TTL + TTL / 2); // a few renewals
        // The kill's instant is when the signal goes: reaping the process
        // can take long (a Redis in an fsync on a busy disk took 105 s once),
        // and the generators fence meanwhile.
        let killed = Instant::now();
        server.kill();
        let _ = deadline.set(killed + TTL - MARGIN + Duration::from_millis(5));
        // Restart once every generator has made a call after its deadline
        // (waited for, not timed).
        wait_until(Duration::from_secs(60), "every generator fenced", || {
            fenced_late.iter().all(|f| f.load(Ordering::Relaxed))
        });
        // A readiness probe sees each generator fenced; when it says the
        // fence closed is checked below, against the calls' answers.
        for (g, probe) in generators.iter().zip(&mut probes) {
            let before = Instant::now();
            let health = g.health();
            *probe = match health {
                Health::Fenced { closed_for } => Some(Probe {
                    before,
                    after: Instant::now(),
                    closed_for,
                }),
                other => panic!("a generator past its deadline reports {other:?}"),
            };
        }
        // The async handler's pattern answers at once (503) instead of
        // hanging until the store is back, as `next_id_async` would.
        #[cfg(feature = "tokio")]
        {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            for g in &generators {
                let answer = runtime.block_on(g.try_next_id_async());
                assert_eq!(answer, Err(GenerateError::Fenced));
            }
        }
        let restarted = Instant::now();
        back.store(true, Ordering::Relaxed);
        server.restart();
        while !resumed.iter().all(|r| r.load(Ordering::Relaxed)) {
            thread::sleep(Duration::from_millis(20));
        }
        // Each has issued since the restart; its probe reports so too (once
        // the keeper's renewals keep the fresh claim proven).
        for g in &generators {
            while g.health() != Health::Issuing {
                thread::sleep(Duration::from_millis(5));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let seen: Vec<Seen> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        (killed, restarted, seen)
    });
    let mut all = Vec::new();
    let deadline = *deadline.get().unwrap();
    for (i, seen) in seen.iter().enumerate() {
        // No ID from a call that started after the deadline...
        if let Some((t, _)) = seen
            .ids
            .iter()
            .find(|&&(t, _)| t > deadline && t < restarted)
        {
            panic!(
                "generator {i} issued an ID in a call made {:?} after the kill",
                *t - killed
            );
        }
        // ... while calls went on (each of them fenced) ...
        assert!(
            seen.fenced
                .iter()
                .any(|&(t, _)| t > deadline && t < restarted),
            "generator {i} made no call between its deadline and the restart"
        );
        // ... and none after the generator first found itself fenced.
        let fenced_at = seen
            .fenced
            .iter()
            .map(|&(t, _)| t)
            .find(|&t| t > killed)
            .unwrap_or_else(|| panic!("generator {i} was never fenced"));
        let late = seen
            .ids
            .iter()
            .filter(|(t, _)| *t > fenced_at && *t < restarted)
            .count();
        assert_eq!(late, 0, "generator {i} issued {late} IDs after fencing");
        // ... and resumed after the restart.
        assert!(
            seen.ids.iter().any(|&(t, _)| t > restarted),
            "generator {i} did not resume"
        );
        // The probe dated the fence's closing between the last call that got
        // an ID and the first answer `Fenced` after it (usually after the
        // kill; before it if a starved keeper missed its deadline earlier).
        // The fence times itself on the TSC, the test on `Instant`: 5 ms
        // allow for the calibration.
        let probe = probes[i].as_ref().unwrap();
        let last_ok = seen
            .ids
            .iter()
            .map(|&(t, _)| t)
            .filter(|&t| t < probe.before)
            .max()
            .unwrap_or_else(|| panic!("generator {i} issued nothing before the probe"));
        let first_fenced = seen
            .fenced
            .iter()
            .find(|&&(t, _)| t > last_ok)
            .map(|&(_, answered)| answered)
            .unwrap_or_else(|| panic!("generator {i} was not fenced before the probe"));
        let slack = Duration::from_millis(5);
        assert!(
            probe.after - probe.closed_for + slack > last_ok,
            "generator {i}: fenced for {:?}, but it issued an ID in a call made {:?} before the probe",
            probe.closed_for,
            probe.after - last_ok
        );
        assert!(
            probe.before - probe.closed_for < first_fenced + slack,
            "generator {i}: fenced for {:?}, but it was first answered Fenced only {:?} before the probe",
            probe.closed_for,
            probe.before - first_fenced
        );
        all.extend(seen.ids.iter().map(|&(_, id)| id));
    }
    let nodes: HashSet<u64> = generators.iter().map(Generator::node_id).collect();
    assert_eq!(
        nodes.len(),
        GENERATORS,
        "two generators share a node id after reclaiming"
    );
    assert_unique(&mut all);
    // Each hook heard the claim, then (after failed renewals, if any were
    // due) the fence, then the fresh claim, each with its node id. The hook
    // also hears the calls' waits (a full tick at 8 threads) and IDs dropped
    // by the lapse; only the lease's changes of state are checked here.
    for (g, log) in generators.iter().zip(&heard) {
        let events: Vec<Event> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::LeaseClaimed { .. }
                        | Event::Fenced { .. }
                        | Event::LeaseReopened { .. }
                        | Event::LeaseRotated { .. }
                )
            })
            .cloned()
            .collect();
        // A starved keeper may have lost and reclaimed the lease before the
        // kill too: one or more fence-and-reopen pairs, each fence naming the
        // node id held, the last reopening naming the one the generator has.
        let [Event::LeaseClaimed { node_id: mut held }, ref cycles @ ..] = events[..] else {
            panic!("lease events heard: {events:?}");
        };
        assert!(
            !cycles.is_empty() && cycles.len() % 2 == 0,
            "lease events heard: {events:?}"
        );
        for pair in cycles.chunks(2) {
            let [
                Event::Fenced { node_id: fenced },
                Event::LeaseReopened { node_id: reopened },
            ] = pair[..]
            else {
                panic!("lease events heard: {events:?}");
            };
            assert_eq!(fenced, held, "lease events heard: {events:?}");
            held = reopened;
        }
        assert_eq!(held, g.node_id(), "lease events heard: {events:?}");
    }
}

/// A store that stops answering (requests hang, connections stay open) must
/// fence every generator at the deadline even though the keeper is stuck in
/// a request: the fence closes by itself. When the store answers again, the
/// generators claim afresh and resume.
pub fn frozen_store(server: &Server) {
    const GENERATORS: usize = 4;
    let prefix = unique_prefix("frozen");
    let proxy = Proxy::new(server.addr());
    let generators: Vec<Generator> = (0..GENERATORS)
        .map(|_| build(lease_at(server.kind, proxy.addr(), &prefix)).unwrap())
        .collect();
    let stop = AtomicBool::new(false);
    let fenced_late: Vec<AtomicBool> = (0..GENERATORS).map(|_| AtomicBool::new(false)).collect();
    let deadline = std::sync::OnceLock::<Instant>::new();
    let (frozen, thawed, seen) = thread::scope(|s| {
        let _stop_on_panic = StopOnDrop(&stop);
        let threads: Vec<_> = generators
            .iter()
            .zip(&fenced_late)
            .map(|(g, fenced_late)| {
                let (stop, deadline) = (&stop, &deadline);
                s.spawn(move || issue_until(g, stop, deadline, fenced_late, || {}))
            })
            .collect();
        thread::sleep(TTL);
        let frozen = Instant::now();
        let _ = deadline.set(frozen + TTL - MARGIN + Duration::from_millis(5));
        proxy.freeze(true);
        // Thaw once every generator has made a call after its deadline
        // (waited for, not timed).
        wait_until(Duration::from_secs(60), "every generator fenced", || {
            fenced_late.iter().all(|f| f.load(Ordering::Relaxed))
        });
        let thawed = Instant::now();
        proxy.freeze(false);
        // Wait until every generator issues again.
        wait_until(
            Duration::from_secs(60),
            "every generator issuing again",
            || generators.iter().all(|g| g.try_next_id().is_ok()),
        );
        stop.store(true, Ordering::Relaxed);
        let seen: Vec<Seen> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        (frozen, thawed, seen)
    });
    let deadline = *deadline.get().unwrap();
    for (i, seen) in seen.iter().enumerate() {
        if let Some((t, _)) = seen.ids.iter().find(|&&(t, _)| t > deadline && t < thawed) {
            panic!(
                "generator {i} issued an ID in a call made {:?} after the freeze",
                *t - frozen
            );
        }
        assert!(
            seen.fenced.iter().any(|&(t, _)| t > deadline && t < thawed),
            "generator {i} made no call between its deadline and the thaw"
        );
    }
}
