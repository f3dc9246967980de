//! The documented guarantees, checked with real threads on both generators:
//! uniqueness, per-thread order, order of calls that do not overlap, distinct
//! nodes never colliding.

use std::sync::mpsc;
use std::thread;

use flakeid::{Generator, Id, IdGenerator, Layout, ManualClock, MutexGenerator, OnExhausted};

const THREADS: usize = 4;
const PER_THREAD: usize = 1_000_000;

/// Runs `threads` threads taking `per_thread` IDs each; returns each thread's IDs.
fn take(g: &dyn IdGenerator, threads: usize, per_thread: usize) -> Vec<Vec<Id>> {
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| s.spawn(move || (0..per_thread).map(|_| g.next_id()).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Asserts every thread's IDs increase and no ID appears twice; returns them all.
fn assert_unique_and_ordered(per_thread: &[Vec<Id>]) -> Vec<Id> {
    for (t, ids) in per_thread.iter().enumerate() {
        if let Some(w) = ids.windows(2).find(|w| w[0] >= w[1]) {
            panic!("thread {t} saw {:?} then {:?}", w[0], w[1]);
        }
    }
    let mut all: Vec<Id> = per_thread.iter().flatten().copied().collect();
    all.sort_unstable();
    if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
        panic!("duplicate id {:?}", w[0]);
    }
    all
}

fn generators(layout: Layout, exhausted: OnExhausted) -> Vec<Box<dyn IdGenerator>> {
    let builder = Generator::builder(layout)
        .node_id(9)
        .on_exhausted(exhausted);
    vec![
        Box::new(builder.clone().build().unwrap()),
        Box::new(builder.build_mutex().unwrap()),
    ]
}

#[test]
fn threads_at_the_twitter_cap_get_unique_increasing_ids() {
    for g in generators(Layout::twitter(), OnExhausted::Wait) {
        let all = assert_unique_and_ordered(&take(&*g, THREADS, PER_THREAD));
        assert_eq!(all.len(), THREADS * PER_THREAD);
        let node = g.layout().decode(all[0]).unwrap().node_id();
        assert_eq!(node, 9);
    }
}

#[test]
fn threads_borrowing_on_a_wide_random_start_layout_get_unique_increasing_ids() {
    let wide = Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .node("worker", 6)
        .sequence(16)
        .build()
        .unwrap();
    let builder = Generator::builder(wide)
        .node_id(63)
        .random_start(1000)
        .on_exhausted(OnExhausted::Borrow {
            max_ahead: std::time::Duration::from_millis(5),
        });
    let gens: Vec<Box<dyn IdGenerator>> = vec![
        Box::new(builder.clone().build().unwrap()),
        Box::new(builder.build_mutex().unwrap()),
    ];
    for g in gens {
        assert_unique_and_ordered(&take(&*g, THREADS, PER_THREAD));
    }
}

#[test]
fn a_call_that_starts_after_another_returned_gets_a_larger_id() {
    const RING: usize = 3;
    const HOPS: u32 = 30_000;
    for g in generators(Layout::twitter(), OnExhausted::Wait) {
        // A token passes around a ring of threads; each takes an ID only after
        // receiving the previous holder's, so no two calls overlap in time and
        // every ID must exceed the one before it.
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..RING).map(|_| mpsc::channel::<(u32, Id)>()).unzip();
        thread::scope(|s| {
            for (i, rx) in rxs.into_iter().enumerate() {
                let tx = txs[(i + 1) % RING].clone();
                let g = &*g;
                s.spawn(move || {
                    for (hop, prev) in rx {
                        if hop == HOPS {
                            let _ = tx.send((hop, prev));
                            return;
                        }
                        let id = g.next_id();
                        assert!(id > prev, "{id:?} after {prev:?}");
                        if tx.send((hop + 1, id)).is_err() {
                            return;
                        }
                    }
                });
            }
            txs[0].send((0, Id::MIN)).unwrap();
            drop(txs);
        });
    }
}

#[test]
fn generators_with_distinct_node_ids_never_collide() {
    let clock = ManualClock::new(1_700_000_000_000);
    let make = |node| {
        Generator::builder(Layout::twitter())
            .node_id(node)
            .clock(clock.clone())
            .build()
            .unwrap()
    };
    let (a, b) = (make(1), make(2));
    let mut all = Vec::new();
    for _ in 0..3 {
        for _ in 0..4096 {
            all.push(a.next_id());
            all.push(b.next_id());
        }
        clock.advance(std::time::Duration::from_millis(1));
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n);
}

#[test]
fn generators_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Generator>();
    assert_send_sync::<MutexGenerator>();
    assert_send_sync::<Generator<ManualClock>>();
    assert_send_sync::<flakeid::IdBatch>();
    assert_send_sync::<flakeid::GenerateError>();
    assert_send_sync::<flakeid::LayoutError>();
    assert_send_sync::<flakeid::BuildError>();
}
