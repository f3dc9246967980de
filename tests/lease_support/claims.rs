//! Claims, renewals, releases, rotation, bad marks and replies, runtimes:
//! one generator or a few, the store healthy.

use super::*;

/// Claim the lowest free node id, keep it through several TTLs, give it back
/// with the exact last time as its mark; the next holder starts after it.
pub fn claim_renew_release(server: &Server) {
    let prefix = unique_prefix("crr");
    let layout = Layout::twitter();
    let before_ms = wall_ms();
    let a = build(server.lease(&prefix)).unwrap();
    assert_eq!(a.node_id(), 0, "the lowest free node id");
    assert!(server.holder(&prefix, 0).is_some());
    let first_mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
    assert!(
        first_mark >= before_ms + TTL.as_millis() as u64,
        "the claim recorded a ceiling a TTL ahead: {first_mark} vs {before_ms}"
    );

    // Renewals raise the mark (waited for, not timed: a starved keeper
    // thread may fence the generator for a while, which `next_id` waits
    // out); every ID is node 0's and later than the one before.
    let mut last_a = a.next_id();
    loop {
        let id = a.next_id();
        assert!(id > last_a);
        assert_eq!(node_of(id), 0);
        last_a = id;
        let mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
        if mark > first_mark + 2 * TTL.as_millis() as u64 {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }

    let b = build(server.lease(&prefix)).unwrap();
    assert_eq!(b.node_id(), 1, "0 is held");
    b.try_next_id().unwrap();

    drop(a);
    assert_eq!(server.holder(&prefix, 0), None, "released on drop");
    let last_ms = layout.decode(last_a).unwrap().unix_ms();
    assert_eq!(
        server.mark(&prefix, 0),
        Some(last_ms.to_string()),
        "the mark is the exact last time issued"
    );

    let c = build(server.lease(&prefix)).unwrap();
    assert_eq!(c.node_id(), 0, "the lowest free node id again");
    let first_c = c.next_id();
    assert_eq!(node_of(first_c), 0);
    assert!(first_c > last_a, "the next holder starts after the mark");
}

/// All node ids held, a bad mark, an unreachable server: typed errors.
pub fn errors(server: &Server) {
    let prefix = unique_prefix("held");
    let two = |p: &str| server.lease(p).node_ids(0..=1);
    let a = build(two(&prefix)).unwrap();
    let b = build(two(&prefix)).unwrap();
    assert_eq!((a.node_id(), b.node_id()), (0, 1));
    match build(two(&prefix)) {
        Err(BuildError::Lease(LeaseError::AllHeld { first: 0, last: 1 })) => {}
        other => panic!("expected AllHeld, got {other:?}"),
    }
    drop(a);
    assert_eq!(build(two(&prefix)).unwrap().node_id(), 0, "free again");

    let prefix = unique_prefix("bad-mark");
    // A key holds any string; a table's BIGINT column, any integer.
    let bad = if server.kind.is_sql() {
        "-1"
    } else {
        "yesterday"
    };
    server.set_mark(&prefix, 0, bad);
    match build(server.lease(&prefix)) {
        Err(BuildError::Lease(LeaseError::BadReply { reason })) => {
            assert!(reason.contains(bad), "{reason}");
        }
        other => panic!("expected BadReply, got {other:?}"),
    }

    let with_persist = Generator::builder(Layout::twitter())
        .lease(server.lease(&unique_prefix("persist")))
        .persist(Persist::file(
            std::env::temp_dir().join("flakeid-never-written.state"),
        ))
        .build();
    assert!(
        matches!(
            with_persist,
            Err(BuildError::Lease(LeaseError::Config { .. }))
        ),
        "{with_persist:?}"
    );

    let closed = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let timeout = Duration::from_millis(700);
    let begun = Instant::now();
    let result = build(lease_at(server.kind, closed, "unreachable").connect_timeout(timeout));
    let took = begun.elapsed();
    match result {
        Err(BuildError::Lease(LeaseError::Unreachable { waited, .. })) => {
            assert_eq!(waited, timeout);
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    // (No upper bound: how soon the thread runs again is the scheduler's.)
    assert!(
        took >= timeout,
        "gave up after {took:?}, before the timeout"
    );
}

/// A holder whose clock runs 2 s ahead issues under node id 0 and gives it
/// back (its mark: the exact last millisecond it issued); the next holder
/// of node id 0, on the real clock, must issue only after that mark, so
/// above every ID of its predecessor. `Err` says what broke.
pub fn successor_starts_after_the_mark(server: &Server, tweak: Tweak) -> Result<(), String> {
    let prefix = unique_prefix("successor");
    let ahead = ManualClock::new(wall_ms() + 2_000);
    let a = Generator::builder(Layout::twitter())
        .clock(ahead)
        .lease(tweak(server.lease(&prefix).node_ids(0..=0)))
        .build()
        .unwrap();
    let last_a = (0..100).map(|_| a.next_id()).max().unwrap();
    drop(a);
    let b = build(tweak(server.lease(&prefix).node_ids(0..=0))).unwrap();
    let first_b = b.next_id();
    if first_b <= last_a {
        let layout = Layout::twitter();
        let (a_ms, b_ms) = (
            layout.decode(last_a).unwrap().unix_ms(),
            layout.decode(first_b).unwrap().unix_ms(),
        );
        return Err(format!(
            "the next holder issued at {b_ms} ms, below its predecessor's last ID at {a_ms} ms"
        ));
    }
    Ok(())
}

/// The rotation policy: after the clock steps back further than the
/// threshold, the generator gives its node id back and issues at the real
/// time under a node id whose mark is before it; the node id given back
/// keeps its mark, so its next holder starts after everything issued on it.
pub fn rotation_after_rollback(server: &Server) {
    let prefix = unique_prefix("rotate");
    let layout = Layout::twitter();
    let clock = ManualClock::new(wall_ms());
    let a = Generator::builder(layout.clone())
        .clock(clock.clone())
        .lease(
            server
                .lease(&prefix)
                .rotate_after_rollback(Duration::from_secs(1)),
        )
        .build()
        .unwrap();
    let before: Vec<u64> = (0..100).map(|_| a.next_id().to_u64()).collect();
    assert!(before.iter().all(|&id| node_of(Id::from(id)) == 0));
    let last_before = *before.last().unwrap();

    clock.rewind(Duration::from_secs(5));
    let stepped_back = layout.timestamp_at(clock.now_ms()).unwrap();
    let mut after = Vec::new();
    let rotated = loop {
        // OnClockBehind::Continue keeps issuing on node 0 until the keeper
        // has claimed a fresh node id.
        let id = a.next_id();
        after.push(id.to_u64());
        let d = layout.decode(id).unwrap();
        if d.node_id() != 0 {
            break d.timestamp();
        }
        thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(a.node_id(), 1, "the lowest node id with no mark");
    assert_eq!(rotated, stepped_back, "issues at the real, earlier time");
    // The keeper opens the fence for the new node id first, then gives the
    // old one back.
    while server.holder(&prefix, 0).is_some() {
        thread::sleep(Duration::from_millis(10));
    }
    let mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
    assert!(mark >= layout.decode(Id::from(last_before)).unwrap().unix_ms());

    let b = build(server.lease(&prefix)).unwrap();
    assert_eq!(b.node_id(), 0);
    let first_b = b.next_id().to_u64();
    assert!(
        after
            .iter()
            .chain(&before)
            .filter(|&&id| node_of(Id::from(id)) == 0)
            .all(|&id| id < first_b),
        "node id 0's next holder starts after everything issued on it"
    );
    let mut all: Vec<u64> = before.into_iter().chain(after).chain([first_b]).collect();
    assert_unique(&mut all);
}

/// A server that answers nonsense gets a typed error within the connect
/// timeout, never a panic or a hang.
pub fn nonsense_replies(kind: Kind) {
    let reply: &'static [u8] = match kind {
        // Not HTTP/2: the gRPC connection cannot be set up.
        Kind::Etcd => b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        // Well-formed Redis integers where a script result is expected (two
        // per request: the client pipelines two commands when connecting).
        Kind::Redis => b":5\r\n:5\r\n",
        // No TLS (to the client's TLS request), then ready for a query
        // before any authentication.
        Kind::Postgres => b"NZ\x00\x00\x00\x05I",
        // A MySQL client waits for the server's greeting; the impostor
        // waits to be spoken to: see the check below.
        Kind::Mysql => b"\x00",
    };
    let impostor = Impostor::new(reply);
    let timeout = Duration::from_millis(800);
    let begun = Instant::now();
    let result = build(lease_at(kind, impostor.addr(), "nonsense").connect_timeout(timeout));
    let took = begun.elapsed();
    eprintln!("{kind:?} answering nonsense: {result:?} after {took:?}");
    // Not a transport problem (the server answers at once), but replies
    // flakeid cannot use: not retried until the timeout (which would end in
    // `Unreachable`), reported as is.
    if kind == Kind::Mysql {
        // Silence, to a client that waits for the server to speak first:
        // unreachable, within the connect timeout (and a margin for a
        // loaded machine).
        assert!(
            matches!(
                result,
                Err(BuildError::Lease(LeaseError::Unreachable { .. }))
            ),
            "{result:?}"
        );
        assert!(took < timeout + Duration::from_secs(5), "{took:?}");
        return;
    }
    assert!(
        matches!(result, Err(BuildError::Lease(LeaseError::BadReply { .. }))),
        "{result:?}"
    );
}

/// Built, used and dropped inside an async runtime (the caller's thread is
/// one of the runtime's): the keeper's store and its runtime live on the
/// keeper thread only, so nothing here may start or drop a runtime inside
/// this one. With a live server, and with an unreachable one (a typed error,
/// no panic). Runs inside `#[tokio::test]`, of either flavor.
pub fn inside_a_runtime(server: &Server) {
    assert!(
        tokio::runtime::Handle::try_current().is_ok(),
        "called from inside a runtime"
    );
    let prefix = unique_prefix("runtime");
    let g = build(server.lease(&prefix)).expect("builds inside a runtime");
    let node = g.node_id();
    let first = g.try_next_id().unwrap();
    let second = g.next_id();
    assert!(second > first);
    drop(g); // releases the node id, inside the runtime
    let again = build(server.lease(&prefix)).unwrap();
    assert_eq!(again.node_id(), node, "released on drop: the lowest again");
    assert!(again.next_id() > second, "after the mark the drop recorded");

    // A store that stops answering: the drop gives up after the request
    // timeout (a third of the TTL here), it does not hang.
    let proxy = Proxy::new(server.addr());
    let frozen = build(lease_at(server.kind, proxy.addr(), &prefix)).unwrap();
    frozen.next_id();
    proxy.freeze(true);
    drop(frozen);
    proxy.freeze(false);
    drop(again);

    let closed = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let timeout = Duration::from_millis(300);
    match build(lease_at(server.kind, closed, "unreachable").connect_timeout(timeout)) {
        Err(BuildError::Lease(LeaseError::Unreachable { waited, .. })) => {
            assert_eq!(waited, timeout);
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
}

/// 1 Jan 2200 in Unix milliseconds: a mark from a clock 175 years ahead.
pub const YEAR_2200_MS: u64 = 7_258_118_400_000;

/// Marks too far ahead of the claimer's clock (planted: the year 2200 and
/// 2^64 - 1; left by a holder whose clock ran a day ahead) do not poison
/// their node ids: a claim skips them, takes the lowest usable one and
/// issues at once, and counts what it skipped; it fails with a typed error
/// naming them only when every free node id is skipped.
pub fn poisoned_marks(server: &Server) {
    let prefix = unique_prefix("poisoned");
    server.set_mark(&prefix, 0, &YEAR_2200_MS.to_string());
    server.set_mark(&prefix, 1, &u64::MAX.to_string());
    // A table's BIGINT column holds at most 2^63 - 1.
    let huge = if server.kind.is_sql() {
        i64::MAX.unsigned_abs()
    } else {
        u64::MAX
    };
    let g = build(server.lease(&prefix).node_ids(0..=3)).unwrap();
    assert_eq!(g.node_id(), 2, "the lowest usable node id");
    assert_eq!(g.lease_skipped_node_ids(), 2);
    let id = g
        .try_next_id()
        .expect("issues at once, without waiting for the clock to reach a mark");
    assert_eq!(node_of(id), 2);

    // A holder whose clock ran a day ahead takes node id 3 and leaves its
    // mark a day ahead.
    const DAY_MS: u64 = 86_400_000;
    let ahead = Generator::builder(Layout::twitter())
        .clock(ManualClock::new(wall_ms() + DAY_MS))
        .lease(server.lease(&prefix).node_ids(0..=3))
        .build()
        .unwrap();
    assert_eq!(ahead.node_id(), 3);
    let last_ahead = ahead.next_id();
    drop(ahead);
    let mark: u64 = server.mark(&prefix, 3).unwrap().parse().unwrap();
    assert!(mark >= wall_ms() + DAY_MS - 60_000, "{mark}");

    // Every free node id (0, 1, 3) is skipped: a typed error naming them.
    match build(server.lease(&prefix).node_ids(0..=3)) {
        Err(BuildError::Lease(LeaseError::MarksAhead {
            first: 0,
            last: 3,
            skipped: 3,
            lowest,
            ..
        })) => assert_eq!(
            lowest,
            [(0, YEAR_2200_MS), (1, huge), (3, mark)],
            "the skipped node ids and their marks"
        ),
        other => panic!("expected MarksAhead, got {other:?}"),
    }

    // A wider bound takes the day-ahead node id again; its first ID is
    // after the day-ahead holder's last.
    let patient = Generator::builder(Layout::twitter())
        .clock(ManualClock::new(wall_ms() + DAY_MS + 1_000))
        .lease(
            server
                .lease(&prefix)
                .node_ids(3..=3)
                .max_mark_ahead(Duration::from_millis(2 * DAY_MS)),
        )
        .build()
        .unwrap();
    assert_eq!(patient.node_id(), 3);
    assert!(patient.next_id() > last_ahead);
    drop(g);
}
