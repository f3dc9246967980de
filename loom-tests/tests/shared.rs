//! Generators in separate "processes" over one shared word
//! (`Builder::build_shared`, the seam the PostgreSQL extension stands on):
//! each thread builds its own generator, with its own clock, over the same
//! `&'static` word, as each backend does over the word in shared memory.
#![cfg(flakeid_loom)]

use flakeid::{BuildError, Builder, Clock, Layout, ManualClock, SharedGenerator};
use flakeid_loom_tests::{Got, Rules, at, check, decode, layout, model};
use loom::sync::atomic::AtomicU64;
use loom::thread;

/// A word that lives as long as the model's run: loom atomics must be made
/// inside the model, and a shared-memory word is `'static`.
fn word() -> &'static AtomicU64 {
    Box::leak(Box::new(AtomicU64::new(0)))
}

fn build(
    layout: &Layout,
    node: u64,
    clock: &ManualClock,
    word: &'static AtomicU64,
) -> SharedGenerator<ManualClock> {
    Builder::new(layout.clone())
        .node_id(node)
        .clock(clock.clone())
        .build_shared(word)
        .expect("a generator over the shared word")
}

/// Two processes build their generators over a fresh word at once (both
/// may find it zero) and take two IDs each in one tick: the tick's four
/// sequence values, once each.
#[test]
fn processes_over_one_word_share_a_tick_sequence() {
    model("processes_over_one_word_share_a_tick_sequence", || {
        let layout = layout(2);
        let word = word();
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let layout = layout.clone();
                thread::spawn(move || {
                    let generator = build(&layout, 3, &ManualClock::new(at(10)), word);
                    (0..2)
                        .map(|_| Got::plain(generator.try_next_id().unwrap()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let per_thread: Vec<Vec<Got>> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        let last = build(&layout, 3, &ManualClock::new(at(10)), word).last_id();
        let rules = Rules {
            clock_max: Some(at(10)),
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, last, rules);
        let slots: Vec<(u64, u64)> = all
            .iter()
            .map(|&id| {
                let d = decode(&layout, id);
                (d.timestamp(), d.sequence())
            })
            .collect();
        assert_eq!(slots, [(10, 0), (10, 1), (10, 2), (10, 3)]);
    });
}

/// Two processes whose clocks disagree by a tick (A reads tick 11, B tick
/// 10): B, finding the word in A's later tick, continues it under
/// `OnClockBehind::Continue` and never issues an ID at or below one A
/// issued before it, nor a duplicate. IDs may lead B's clock by the one
/// tick A's clock is ahead.
#[test]
fn a_process_whose_clock_is_a_tick_behind_continues_the_word() {
    model("a_process_whose_clock_is_a_tick_behind", || {
        let layout = layout(2);
        let word = word();
        let ahead = ManualClock::new(at(11));
        let behind = ManualClock::new(at(10));
        let spawn = |clock: ManualClock| {
            let layout = layout.clone();
            thread::spawn(move || {
                let generator = build(&layout, 5, &clock, word);
                (0..2)
                    .map(|_| Got::plain(generator.try_next_id().unwrap()))
                    .collect::<Vec<_>>()
            })
        };
        let (a, b) = (spawn(ahead.clone()), spawn(behind.clone()));
        let per_thread = vec![a.join().unwrap(), b.join().unwrap()];
        let last = build(&layout, 5, &ahead, word).last_id();
        let rules = Rules {
            clock_max: Some(ahead.now_ms()),
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, last, rules);
        assert_eq!(all.len(), 4);
        for got in &per_thread[0] {
            assert_eq!(
                decode(&layout, got.id).timestamp(),
                11,
                "A issues in its own tick"
            );
        }
    });
}

/// A generator built over a word another node id's generator used is
/// refused, whichever builds first; the refused one issues nothing.
#[test]
fn a_second_node_id_on_one_word_is_refused() {
    model("a_second_node_id_on_one_word_is_refused", || {
        let layout = layout(2);
        let word = word();
        let spawn = |node: u64| {
            let layout = layout.clone();
            thread::spawn(move || {
                Builder::new(layout)
                    .node_id(node)
                    .clock(ManualClock::new(at(10)))
                    .build_shared(word)
                    .map(|g| g.try_next_id().unwrap())
            })
        };
        let (one, two) = (spawn(1), spawn(2));
        let results = [one.join().unwrap(), two.join().unwrap()];
        let built: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
        assert_eq!(
            built.len(),
            1,
            "exactly one node id owns the word: {results:?}"
        );
        for (node, result) in [(1, &results[0]), (2, &results[1])] {
            match result {
                Ok(id) => assert_eq!(decode(&layout, *id).node_id(), node),
                Err(BuildError::SharedWordNodeId { found, node_id }) => {
                    assert_eq!((*found, *node_id), (3 - node, node));
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    });
}
