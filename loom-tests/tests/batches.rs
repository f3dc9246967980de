//! `next_ids(n)` racing `next_id`: a batch is one compare-and-swap, so its
//! IDs are consecutive and no other thread's ID falls among them.
#![cfg(flakeid_loom)]

use flakeid::{Builder, GenerateError, Generator, Id, Layout, ManualClock};
use flakeid_loom_tests::{
    Done, Got, Rules, at, check, decode, layout, model, move_clock_when_full, tick_used_up,
};
use loom::sync::Arc;
use loom::thread;

fn generator(layout: &Layout, clock: &ManualClock) -> Arc<Generator<ManualClock>> {
    Arc::new(
        Builder::new(layout.clone())
            .node_id(6)
            .clock(clock.clone())
            .counters(true)
            .build()
            .unwrap(),
    )
}

/// Checks that `batch` is consecutive sequence values of one tick and that
/// no ID in `others` lies between its first and last.
fn assert_whole(layout: &Layout, batch: &[Id], others: &[Id]) {
    assert!(!batch.is_empty(), "an empty batch for n >= 1");
    let slots: Vec<(u64, u64)> = batch
        .iter()
        .map(|&id| {
            let d = decode(layout, id);
            (d.timestamp(), d.sequence())
        })
        .collect();
    for w in slots.windows(2) {
        assert_eq!((w[1].0, w[1].1), (w[0].0, w[0].1 + 1), "{slots:?}");
    }
    let (lo, hi) = (batch[0], batch[batch.len() - 1]);
    assert!(
        others.iter().all(|&id| id < lo || id > hi),
        "another thread's id inside the batch {batch:?}: {others:?}"
    );
}

/// A batch of up to 3 against two single IDs, four IDs per tick: the batch
/// stops at the end of the tick, and a thread that finds the tick used up
/// waits for the clock.
#[test]
fn a_batch_racing_single_ids_is_consecutive_and_never_interleaved() {
    model("batch_vs_next_id", || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let generator = generator(&layout, &clock);
        let done = Done::default();
        let batch = {
            let (generator, clock, done) = (generator.clone(), clock.clone(), done.clone());
            thread::spawn(move || {
                let got: Vec<Got> = generator
                    .next_ids(3)
                    .map(|id| Got::then_read(id, &clock))
                    .collect();
                done.finish();
                got
            })
        };
        let singles = {
            let (generator, clock, done) = (generator.clone(), clock.clone(), done.clone());
            thread::spawn(move || {
                let got: Vec<Got> = (0..2)
                    .map(|_| Got::then_read(generator.next_id(), &clock))
                    .collect();
                done.finish();
                got
            })
        };
        move_clock_when_full(&*generator, &clock, &done, 2, tick_used_up(&layout));
        let per_thread = vec![batch.join().unwrap(), singles.join().unwrap()];
        check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        let ids = |t: usize| per_thread[t].iter().map(|g| g.id).collect::<Vec<_>>();
        assert!(ids(0).len() <= 3);
        assert_whole(&layout, &ids(0), &ids(1));
        let stats = generator.stats().unwrap();
        assert_eq!(stats.issued, (ids(0).len() + 2) as u64);
    });
}

/// Two batches polled against each other at a fixed clock: together they
/// take the whole tick (sequence 0..=3) and nothing more; whoever comes
/// second gets the rest, or is told the tick is used up.
#[test]
fn polled_batches_share_a_tick_without_overlap() {
    model("poll_ids_vs_poll_ids", || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let generator = generator(&layout, &clock);
        let handles: Vec<_> = [3, 4]
            .into_iter()
            .map(|n| {
                let generator = generator.clone();
                thread::spawn(move || match generator.poll_ids(n) {
                    Ok(batch) => batch.collect::<Vec<Id>>(),
                    Err(GenerateError::SequenceExhausted { .. }) => Vec::new(),
                    Err(e) => panic!("{e}"),
                })
            })
            .collect();
        let batches: Vec<Vec<Id>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let per_thread: Vec<Vec<Got>> = batches
            .iter()
            .map(|b| b.iter().map(|&id| Got::plain(id)).collect())
            .collect();
        let rules = Rules {
            clock_max: Some(at(10)),
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, generator.last_id(), rules);
        let seqs: Vec<u64> = all
            .iter()
            .map(|&id| decode(&layout, id).sequence())
            .collect();
        assert_eq!(seqs, [0, 1, 2, 3]);
        for (i, batch) in batches.iter().enumerate() {
            if !batch.is_empty() {
                assert_whole(&layout, batch, &batches[1 - i]);
            }
        }
    });
}
