//! The leased path of the lock-free generator: the gate each attempt passes
//! (the fence's grant), the compare-and-swap that moves the state to another
//! node id, the ceiling, and the confirmation after the swap that drops IDs
//! made under a grant that lapsed or was replaced meanwhile.
//!
//! The keeper is played by the main thread through `loom_hooks::Fence`,
//! whose deadline runs on a mocked monotonic clock.
#![cfg(flakeid_loom)]

use flakeid::loom_hooks::{Fence, Grant};
use flakeid::{Builder, GenerateError, Generator, Id, Layout, ManualClock};
use flakeid_loom_tests::{Reached, at, decode, layout, model};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;

/// Node id `node`'s bits in ID position for `layout(2)` (worker above a
/// 2-bit sequence).
fn node_bits(layout: &Layout, node: u64) -> u64 {
    let bits = node << 2;
    assert_eq!(decode(layout, Id::from_u64(bits)).node_id(), node);
    bits
}

fn grant(layout: &Layout, node: u64, floor: u64, ceiling: u64) -> Grant {
    Grant {
        node_bits: node_bits(layout, node),
        floor,
        ceiling,
        rewind: false,
    }
}

/// A leased generator behind `fence`, on `layout(2)` and `clock`.
fn leased(fence: &Fence, clock: &ManualClock) -> Arc<Generator<ManualClock>> {
    let builder = Builder::new(layout(2)).single_node().clock(clock.clone());
    Arc::new(fence.guard(builder).build().unwrap())
}

/// `threads` workers make `calls` `poll_id` calls each; returns each one's IDs.
/// Errors are the transient kinds a leased generator reports while it
/// cannot issue (the tick used up, fenced, waiting for the ceiling).
fn workers(
    generator: &Arc<Generator<ManualClock>>,
    calls: usize,
    threads: usize,
) -> Vec<thread::JoinHandle<Vec<Id>>> {
    (0..threads)
        .map(|_| {
            let generator = generator.clone();
            thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..calls {
                    match generator.poll_id() {
                        Ok(id) => ids.push(id),
                        Err(
                            GenerateError::SequenceExhausted { .. }
                            | GenerateError::Fenced
                            | GenerateError::Reserving,
                        ) => {}
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
                ids
            })
        })
        .collect()
}

/// No ID twice, each thread's IDs increasing, and the state at or past every
/// ID issued (past it when IDs were dropped).
fn check_common(per_thread: &[Vec<Id>], last: Id) -> Vec<Id> {
    for (t, ids) in per_thread.iter().enumerate() {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "thread {t} got ids out of order: {per_thread:?}"
        );
    }
    let mut all: Vec<Id> = per_thread.iter().flatten().copied().collect();
    all.sort_unstable();
    for w in all.windows(2) {
        assert!(w[0] != w[1], "duplicate id {}: {per_thread:?}", w[0]);
    }
    if let Some(&largest) = all.last() {
        assert!(last >= largest, "the state {last} is behind id {largest}");
    }
    all
}

/// The keeper has moved the lease from node 1 (one ID issued at tick 10) to
/// node 2, whose previous holder used ticks up to 10, and the clock reads
/// 11. Two workers race the compare-and-swap that moves the state to node 2:
/// one installs it, the other retries from it. No ID under node 2 is at or
/// below its floor, and none is issued under node 1 any more.
#[test]
fn workers_race_the_switch_to_another_node_id() {
    let reached = Reached::new(&["both workers issued under node 2"]);
    let seen_by = reached.clone();
    model("workers_race_the_switch_to_another_node_id", move || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let fence = Fence::new();
        fence.open(grant(&layout, 1, 0, 100), u64::MAX);
        let generator = leased(&fence, &clock);
        let first = generator.try_next_id().unwrap();
        fence.open(grant(&layout, 2, 10, 100), u64::MAX);
        clock.set_ms(at(11));
        let handles = workers(&generator, 1, 2);
        let mut per_thread: Vec<Vec<Id>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        per_thread.push(vec![first]);
        let all = check_common(&per_thread, generator.last_id());
        let mut nodes = Vec::new();
        for &id in &all {
            let d = decode(&layout, id);
            match d.node_id() {
                1 => assert_eq!(id, first, "issued {id} under node 1 after the switch"),
                2 => assert!(d.timestamp() > 10, "id {id} at or below node 2's floor"),
                n => panic!("id {id} under node {n}, never granted"),
            }
            nodes.push(d.node_id());
        }
        if nodes.iter().filter(|&&n| n == 2).count() == 2 {
            seen_by.saw("both workers issued under node 2");
        }
    });
    reached.assert_all();
}

/// Node 1's lease lapsed while its ceiling was tick 10; another holder took
/// node 1 and used ticks 11 and 12; the keeper claims node 1 again (floor 12)
/// while a worker issues twice and the clock reaches tick 11. Every ID is at
/// tick 10 (the first grant, capped by its ceiling) or after 12 (the second,
/// which the clock never reaches here): an attempt that checked the first
/// grant and read the second's ceiling must be dropped, and the gate must
/// keep to the new floor.
pub fn a_reclaimed_node_id_keeps_to_its_new_floor(
    guard: fn(&Fence, Builder<ManualClock>) -> Builder<ManualClock>,
) {
    let reached = Reached::new(&["issued at tick 10"]);
    let seen_by = reached.clone();
    model("a_reclaimed_node_id_keeps_to_its_new_floor", move || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let fence = Fence::new();
        fence.open(grant(&layout, 1, 0, 10), u64::MAX);
        let generator = Arc::new(
            guard(
                &fence,
                Builder::new(layout.clone())
                    .single_node()
                    .clock(clock.clone()),
            )
            .build()
            .unwrap(),
        );
        let handles = workers(&generator, 2, 1);
        clock.set_ms(at(11));
        fence.open(grant(&layout, 1, 12, 100), u64::MAX);
        let per_thread: Vec<Vec<Id>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all = check_common(&per_thread, generator.last_id());
        for &id in &all {
            let ts = decode(&layout, id).timestamp();
            assert!(
                ts == 10 || ts > 12,
                "id {id} at tick {ts}, which another holder of node 1 used"
            );
            seen_by.saw("issued at tick 10");
        }
    });
    reached.assert_all();
}

#[test]
fn a_reclaimed_node_id_issues_only_after_its_new_floor() {
    a_reclaimed_node_id_keeps_to_its_new_floor(|fence, builder| fence.guard(builder));
}

/// The confirmation has teeth: a keeper that replaces the grant under the
/// old generation, so that every ticket of the first grant still confirms,
/// lets an attempt that passed the first grant enter tick 11 on the second
/// grant's ceiling and hand that ID out.
#[test]
#[should_panic(expected = "which another holder of node 1 used")]
fn the_floor_model_catches_a_skipped_confirmation() {
    a_reclaimed_node_id_keeps_to_its_new_floor(|fence, builder| {
        fence.plant_bug_open_keeps_generation();
        fence.guard(builder)
    });
}

/// The gate has teeth: a grant whose floor is lost lets the generator
/// continue node 1 at tick 11.
#[test]
#[should_panic(expected = "which another holder of node 1 used")]
fn the_floor_model_catches_a_gate_without_the_floor() {
    a_reclaimed_node_id_keeps_to_its_new_floor(|fence, builder| {
        fence.plant_bug_open_loses_floor();
        fence.guard(builder)
    });
}

/// The lease lapses (the fence's clock passes its deadline) while a worker
/// issues: a call that starts after the lapse is seen gets `Fenced`, and an
/// ID whose compare-and-swap raced the lapse is dropped, not handed out.
#[test]
fn a_lapsed_lease_issues_nothing_more() {
    let reached = Reached::new(&["fenced after the lapse", "an id before the lapse"]);
    let seen_by = reached.clone();
    model("a_lapsed_lease_issues_nothing_more", move || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let fence = Fence::new();
        fence.open(grant(&layout, 1, 0, 100), 100);
        let generator = leased(&fence, &clock);
        let lapsed = Arc::new(AtomicBool::new(false));
        let worker = {
            let (generator, lapsed) = (generator.clone(), lapsed.clone());
            thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..2 {
                    let after_lapse = lapsed.load(Ordering::SeqCst);
                    match generator.poll_id() {
                        Ok(id) => {
                            assert!(!after_lapse, "issued {id} after the lease lapsed");
                            ids.push(id);
                        }
                        Err(GenerateError::Fenced) => {}
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
                (ids, lapsed.load(Ordering::SeqCst))
            })
        };
        fence.advance_ns(200);
        lapsed.store(true, Ordering::SeqCst);
        let (ids, _) = worker.join().unwrap();
        check_common(std::slice::from_ref(&ids), generator.last_id());
        assert_eq!(generator.poll_id(), Err(GenerateError::Fenced));
        if !ids.is_empty() {
            seen_by.saw("an id before the lapse");
        }
        if ids.len() < 2 {
            seen_by.saw("fenced after the lapse");
        }
    });
    reached.assert_all();
}

/// The clock enters tick 11 while the ceiling is tick 10 and the keeper
/// raises it to 11: no ID past the ceiling in force, and once raised, the
/// workers go on into tick 11.
#[test]
fn the_ceiling_is_raised_while_workers_wait_for_it() {
    let reached = Reached::new(&["an id at tick 11", "refused for want of ceiling"]);
    let seen_by = reached.clone();
    model(
        "the_ceiling_is_raised_while_workers_wait_for_it",
        move || {
            let layout = layout(2);
            let clock = ManualClock::new(at(11));
            let fence = Fence::new();
            fence.open(grant(&layout, 1, 0, 10), u64::MAX);
            let generator = leased(&fence, &clock);
            let refused = Arc::new(AtomicBool::new(false));
            let worker = {
                let (generator, refused) = (generator.clone(), refused.clone());
                thread::spawn(move || {
                    let mut ids = Vec::new();
                    for _ in 0..2 {
                        match generator.poll_id() {
                            Ok(id) => ids.push(id),
                            Err(GenerateError::Reserving) => refused.store(true, Ordering::Relaxed),
                            Err(e) => panic!("unexpected {e}"),
                        }
                    }
                    ids
                })
            };
            fence.extend(u64::MAX, 11);
            let ids = worker.join().unwrap();
            let all = check_common(std::slice::from_ref(&ids), generator.last_id());
            for &id in &all {
                let ts = decode(&layout, id).timestamp();
                assert_eq!(ts, 11, "id {id} at tick {ts}");
                seen_by.saw("an id at tick 11");
            }
            if refused.load(Ordering::Relaxed) {
                seen_by.saw("refused for want of ceiling");
            }
            // After the raise, the generator issues.
            assert!(generator.poll_id().is_ok());
        },
    );
    reached.assert_all();
}
