//! 1,000 simulated nodes joining and leaving over 12 node ids.

use super::*;

/// One simulated node's life, for [`churn`].
struct Life {
    node: u64,
    claimed: Instant,
    ids: Vec<u64>,
    end: End,
}

enum End {
    /// Dropped (released) from this instant on.
    Released(Instant),
    /// Cut off from the store at `cut`; its last ID was made at `last_id`.
    Crashed { cut: Instant, last_id: Instant },
}

/// 1,000 simulated nodes join and leave (nine in ten by a clean release, one
/// in ten by a crash: cut off from the store without releasing) over a small
/// range of node ids, so ids are reused many times. A node id is claimed
/// again only after its holder released it, or after the holder's lease ran
/// out (the holder had stopped issuing: it was fenced); each new holder starts
/// after the last ID of the one before; no ID is issued twice.
pub fn churn(server: &Server) {
    const NODES: usize = 1_000;
    const WORKERS: usize = 12;
    const RANGE: u64 = 11; // node ids 0..=11, one per worker
    const CHURN_TTL: Duration = Duration::from_secs(3);
    let prefix = unique_prefix("churn");
    let next = AtomicU64::new(0);
    let all_held = AtomicU64::new(0);
    let lives = Mutex::new(Vec::<Life>::new());
    thread::scope(|s| {
        for w in 0..WORKERS {
            let (next, all_held, lives, prefix) = (&next, &all_held, &lives, &prefix);
            s.spawn(move || {
                let mut rng = (w as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut rand = move |n: u64| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng % n
                };
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= NODES as u64 {
                        return;
                    }
                    let crash = k % 10 == 3;
                    let mut proxy = crash.then(|| Proxy::new(server.addr()));
                    let addr = proxy.as_ref().map_or(server.addr(), Proxy::addr);
                    // A TTL of 3 s: each life asserts it kept its node id,
                    // and at the tests' 1 s a keeper starved for 800 ms (a
                    // loaded machine: seen on MariaDB with two CPU hogs)
                    // was fenced and claimed another.
                    let lease = lease_at(server.kind, addr, prefix)
                        .node_ids(0..=RANGE)
                        .ttl(CHURN_TTL)
                        .safety_margin(CHURN_TTL / 5);
                    let g = loop {
                        match build(lease.clone()) {
                            Ok(g) => break g,
                            Err(BuildError::Lease(LeaseError::AllHeld { .. })) => {
                                all_held.fetch_add(1, Ordering::Relaxed);
                                thread::sleep(Duration::from_millis(10 + rand(20)));
                            }
                            Err(e) => panic!("node {k}: {e}"),
                        }
                    };
                    let claimed = Instant::now();
                    let node = g.node_id();
                    let mut ids: Vec<u64> = (0..20).map(|_| g.next_id().to_u64()).collect();
                    thread::sleep(Duration::from_millis(5 + rand(40)));
                    ids.extend((0..20).map(|_| g.next_id().to_u64()));
                    let end = match &mut proxy {
                        None => {
                            let released = Instant::now();
                            drop(g);
                            End::Released(released)
                        }
                        Some(proxy) => {
                            let cut = Instant::now();
                            proxy.cut();
                            // It keeps trying until its fence closes.
                            let mut last_id = cut;
                            loop {
                                match g.try_next_id() {
                                    Ok(id) => {
                                        last_id = Instant::now();
                                        ids.push(id.to_u64());
                                    }
                                    Err(GenerateError::Fenced) => break,
                                    Err(e) => panic!("node {k}: {e}"),
                                }
                                thread::sleep(Duration::from_millis(2));
                            }
                            // Dropping it now fails to reach the store: the
                            // node id is freed by expiry alone.
                            drop(g);
                            End::Crashed { cut, last_id }
                        }
                    };
                    lives.lock().unwrap().push(Life {
                        node,
                        claimed,
                        ids,
                        end,
                    });
                }
            });
        }
    });
    let mut lives = lives.into_inner().unwrap();
    assert_eq!(lives.len(), NODES);
    let layout = Layout::twitter();
    let mut by_node: HashMap<u64, Vec<&Life>> = HashMap::new();
    for life in &lives {
        assert!(life.node <= RANGE);
        for &id in &life.ids {
            assert_eq!(layout.decode(Id::from(id)).unwrap().node_id(), life.node);
        }
        by_node.entry(life.node).or_default().push(life);
    }
    let mut reused = 0;
    for (node, holders) in &mut by_node {
        holders.sort_by_key(|l| l.claimed);
        for pair in holders.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            reused += 1;
            match before.end {
                End::Released(at) => assert!(
                    after.claimed > at,
                    "node id {node} claimed before its holder released it"
                ),
                End::Crashed { cut, last_id } => {
                    assert!(
                        after.claimed > last_id,
                        "node id {node} claimed while its cut-off holder still issued"
                    );
                    assert!(after.claimed > cut);
                }
            }
            let last = before.ids.iter().max().unwrap();
            let first = after.ids.iter().min().unwrap();
            assert!(
                first > last,
                "node id {node}: a new holder started before the old one's last ID"
            );
        }
    }
    let crashed = lives
        .iter()
        .filter(|l| matches!(l.end, End::Crashed { .. }))
        .count();
    eprintln!(
        "churn: {NODES} nodes ({crashed} crashed) on {} node ids, {reused} reuses, {} claims found all held",
        RANGE + 1,
        all_held.load(Ordering::Relaxed)
    );
    assert!(reused > NODES / 2);
    let mut ids: Vec<u64> = lives.iter_mut().flat_map(|l| l.ids.drain(..)).collect();
    assert_unique(&mut ids);
}
