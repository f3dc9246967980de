//! A random sequence start per tick under racing threads.
#![cfg(flakeid_loom)]

use std::sync::atomic::{AtomicU64 as StdAtomicU64, Ordering as StdOrdering};

use flakeid::{Builder, Layout, ManualClock};
use flakeid_loom_tests::{
    Done, Got, Rules, at, check, decode, layout, model, move_clock_when_full, tick_used_up,
};
use loom::sync::Arc;
use loom::thread;

const BOUND: u64 = 3;

fn builder(layout: &Layout, clock: &ManualClock, seed: u64) -> Builder<ManualClock> {
    Builder::new(layout.clone())
        .node_id(9)
        .clock(clock.clone())
        .random_start(BOUND)
        .seed(seed)
}

/// The sequence values ticks 10 and 11 start at for `seed`, from a
/// generator used by one thread.
fn starts(layout: &Layout, seed: u64) -> (u64, u64) {
    let clock = ManualClock::new(at(10));
    let generator = builder(layout, &clock, seed).build_mutex().unwrap();
    let a = decode(layout, generator.next_id()).sequence();
    clock.set_ms(at(11));
    let b = decode(layout, generator.next_id()).sequence();
    (a, b)
}

/// Three IDs from a tick of four whose sequence starts at a random value
/// below 3. The seed is picked so that tick 10 starts at 2 (two IDs fit, so
/// a thread waits for tick 11) and tick 11 does not start at 0. In every
/// interleaving each tick's IDs are consecutive from that tick's start.
#[test]
fn racing_threads_get_consecutive_ids_from_each_ticks_random_start() {
    let layout = layout(2);
    let picked = std::sync::Arc::new(StdAtomicU64::new(0));
    {
        let (layout, picked) = (layout.clone(), picked.clone());
        // One thread, so one interleaving: loom atomics need a model to run in.
        model("random_start_seed", move || {
            let seed = (0..1000)
                .find(|&s| matches!(starts(&layout, s), (2, 1..)))
                .expect("some seed starts tick 10 at 2");
            picked.store(seed, StdOrdering::Relaxed);
        });
    }
    let seed = picked.load(StdOrdering::Relaxed);
    model("random_start", move || {
        let (start_10, start_11) = starts(&layout, seed);
        let clock = ManualClock::new(at(10));
        let generator = Arc::new(builder(&layout, &clock, seed).build().unwrap());
        let done = Done::default();
        let handles: Vec<_> = [2, 1]
            .into_iter()
            .map(|n| {
                let (generator, clock, done) = (generator.clone(), clock.clone(), done.clone());
                thread::spawn(move || {
                    let got: Vec<Got> = (0..n)
                        .map(|_| Got::then_read(generator.next_id(), &clock))
                        .collect();
                    done.finish();
                    got
                })
            })
            .collect();
        move_clock_when_full(&*generator, &clock, &done, 2, tick_used_up(&layout));
        let per_thread: Vec<Vec<Got>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all = check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        let slots: Vec<(u64, u64)> = all
            .iter()
            .map(|&id| {
                let d = decode(&layout, id);
                (d.timestamp(), d.sequence())
            })
            .collect();
        assert_eq!(slots, [(10, start_10), (10, start_10 + 1), (11, start_11)]);
    });
}

/// Every tick's start is below the bound (a start equal to it leaves the
/// tick one ID short, or, with the bound at the capacity, overflows into the
/// node field), over 200 seeds, each a model of one thread (loom bounds the
/// steps of one execution).
#[test]
fn every_random_start_is_below_its_bound() {
    let layout = layout(2);
    for seed in 0..200 {
        let layout = layout.clone();
        let runs = flakeid_loom_tests::model_quietly(move || {
            let (a, b) = starts(&layout, seed);
            assert!(a < BOUND && b < BOUND, "seed {seed} starts at {a}, {b}");
        });
        assert_eq!(runs, 1);
    }
}
