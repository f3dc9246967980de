//! Stress: 8 to 16 threads take IDs as fast as they can from both
//! generators, on the real clock; no ID may repeat and each thread's IDs must
//! strictly increase.
//!
//! The default tests take a few seconds in release. The long one, ignored by
//! default, takes 10^8 IDs (half from each generator):
//!
//! ```text
//! cargo test --release --test stress -- --ignored
//! ```
//!
//! Memory stays bounded however long the run: IDs are checked in rounds, and
//! since a call that starts after another returned gets a larger ID, every
//! round's smallest ID must exceed the previous round's largest, which makes
//! the rounds' checks add up to a check of the whole run.

use std::thread;
use std::time::Duration;

use flakeid::{Generator, IdGenerator, Layout, OnExhausted};

/// Release runs the full default size; debug builds (plain `cargo test`)
/// take a tenth.
const SCALE: usize = if cfg!(debug_assertions) { 10 } else { 1 };

/// How a thread asks for IDs.
#[derive(Clone, Copy)]
enum Calls {
    /// `next_id`, one at a time.
    Single,
    /// Thread `t` alternates `next_id` with `next_ids(t + 2)`.
    Mixed,
}

/// Takes `rounds` rounds of `per_thread` IDs on each of `threads` threads;
/// returns how many IDs were checked.
fn stress(
    g: &dyn IdGenerator,
    threads: usize,
    per_thread: usize,
    rounds: usize,
    calls: Calls,
) -> u64 {
    let mut previous_max = None;
    let mut total = 0;
    for round in 0..rounds {
        let per_thread_ids: Vec<Vec<u64>> = thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| s.spawn(move || take(g, t, per_thread, calls)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<u64> = per_thread_ids.into_iter().flatten().collect();
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
            panic!("round {round}: id {} issued twice", w[0]);
        }
        let (min, max) = (all[0], all[all.len() - 1]);
        if let Some(previous) = previous_max {
            assert!(
                min > previous,
                "round {round} issued {min}, not above the last round's {previous}"
            );
        }
        previous_max = Some(max);
        total += all.len() as u64;
    }
    total
}

/// One thread's IDs, checked to strictly increase as they come.
fn take(g: &dyn IdGenerator, t: usize, n: usize, calls: Calls) -> Vec<u64> {
    let mut ids = Vec::with_capacity(n);
    let mut last = 0;
    let mut push = |id: u64| {
        assert!(id > last, "thread {t}: {id} after {last}");
        last = id;
        ids.push(id);
    };
    let mut i = 0;
    while i < n {
        match calls {
            Calls::Mixed if i % 2 == 1 => {
                for id in g.next_ids((t + 2).min(n - i)) {
                    push(id.to_u64());
                    i += 1;
                }
            }
            _ => {
                push(g.next_id().to_u64());
                i += 1;
            }
        }
    }
    ids
}

/// Both generators, built alike from `builder`.
fn both(builder: flakeid::Builder) -> [Box<dyn IdGenerator>; 2] {
    [
        Box::new(builder.clone().build().unwrap()),
        Box::new(builder.build_mutex().unwrap()),
    ]
}

/// A layout whose sequence never limits the rate: 21 bits, 2,097,152 IDs per
/// millisecond.
fn wide() -> Layout {
    Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .node("worker", 1)
        .sequence(21)
        .build()
        .unwrap()
}

/// Twitter's layout at its cap of 4,096 IDs per ms: threads wait for the
/// next millisecond all the time.
#[test]
fn eight_threads_at_the_twitter_cap() {
    for g in both(Generator::builder(Layout::twitter()).node_id(5)) {
        let n = stress(&*g, 8, 100_000 / SCALE, 2, Calls::Single);
        assert_eq!(n, 2 * 8 * 100_000 / SCALE as u64);
    }
}

/// Sixteen threads mixing single IDs and batches on a wide sequence with a
/// random start, borrowing ahead: the compare-and-swap loop under its
/// heaviest contention.
#[test]
fn sixteen_threads_mixing_batches_on_a_wide_sequence() {
    let builder = Generator::builder(wide())
        .node_id(1)
        .random_start(1 << 20)
        .on_exhausted(OnExhausted::Borrow {
            max_ahead: Duration::from_millis(5),
        });
    for g in both(builder) {
        stress(&*g, 16, 100_000 / SCALE, 3, Calls::Mixed);
    }
}

/// Twelve threads borrowing on Twitter's layout, where the sequence runs out
/// every few microseconds and ticks are entered ahead of the clock.
#[test]
fn twelve_threads_borrowing_on_the_twitter_layout() {
    let builder = Generator::builder(Layout::twitter())
        .node_id(9)
        .on_exhausted(OnExhausted::Borrow {
            max_ahead: Duration::from_millis(20),
        });
    for g in both(builder) {
        stress(&*g, 12, 50_000 / SCALE, 2, Calls::Mixed);
    }
}

/// 10^8 IDs: 5 * 10^7 from each generator, 16 threads, in rounds of 10^7.
/// About 160 MB of memory at its peak.
#[test]
#[ignore = "long: 10^8 IDs; run with --ignored in release"]
fn a_hundred_million_ids_from_sixteen_threads() {
    let builder = Generator::builder(wide()).node_id(1);
    let mut total = 0;
    for g in both(builder) {
        total += stress(&*g, 16, 625_000, 5, Calls::Mixed);
    }
    assert_eq!(total, 100_000_000);
}
