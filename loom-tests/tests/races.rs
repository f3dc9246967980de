//! Threads racing for IDs within one tick and across a tick change.
#![cfg(flakeid_loom)]

use flakeid::{Generator, Id, Layout, ManualClock};
use loom::sync::Arc;
use loom::thread;

const EPOCH: u64 = 1_600_000_000_000;

fn layout() -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .node("worker", 4)
        .sequence(4)
        .build()
        .unwrap()
}

/// Checks the properties every model asserts on the IDs each thread got.
fn check(per_thread: &[Vec<Id>], last: Id) {
    let mut all: Vec<Id> = per_thread.iter().flatten().copied().collect();
    for ids in per_thread {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "not increasing: {ids:?}"
        );
    }
    all.sort();
    let n = all.len();
    all.dedup();
    assert_eq!(all.len(), n, "duplicate ids");
    assert_eq!(
        all.last().copied(),
        Some(last),
        "state is not the largest id"
    );
}

#[test]
fn two_threads_race_within_a_tick_and_across_a_tick_change() {
    loom::model(|| {
        let clock = ManualClock::new(EPOCH + 10);
        let generator = Arc::new(
            Generator::builder(layout())
                .node_id(3)
                .clock(clock.clone())
                .build()
                .unwrap(),
        );
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let generator = generator.clone();
                thread::spawn(move || vec![generator.next_id(), generator.next_id()])
            })
            .collect();
        clock.set_ms(EPOCH + 11);
        let per_thread: Vec<Vec<Id>> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        check(&per_thread, generator.last_id());
    });
}
