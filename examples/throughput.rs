//! The main job: IDs from many threads, lock-free vs mutex, side by side.
//!
//! ```text
//! cargo run --release --example throughput            # 1, 2, 4, 8, 16 threads, 1 s each
//! cargo run --release --example throughput -- 2 8 0.5 # 2 and 8 threads, 0.5 s each
//! ```
//!
//! Both generators use a layout with a 22-bit sequence (4 M IDs per ms) so the
//! generators are measured rather than the sequence cap, and the default
//! `MonotonicClock`. Every ID is checked for uniqueness after each run.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use flakeid::{Generator, Id, IdGenerator, Layout};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut threads = Vec::new();
    let mut duration = Duration::from_secs(1);
    for arg in std::env::args().skip(1) {
        if arg.contains('.') {
            duration = arg
                .parse()
                .ok()
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| format!("bad duration {arg:?}: seconds above 0, like 0.5"))?;
        } else {
            threads.push(
                arg.parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("bad thread count {arg:?}: a whole number above 0"))?,
            );
        }
    }
    if threads.is_empty() {
        threads = vec![1, 2, 4, 8, 16];
    }
    let layout = Layout::builder()
        .epoch_ms(1_700_000_000_000)
        .timestamp_bits(41)
        .node("worker", 1)
        .sequence(22)
        .build()?;

    println!(
        "{} cores, {:?} per run, layout 41 ms + 1 node + 22 sequence bits\n",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        duration
    );
    println!("| threads | lock-free (M IDs/s) | mutex (M IDs/s) | lock-free / mutex |");
    println!("|---:|---:|---:|---:|");
    for &t in &threads {
        let lock_free = Generator::builder(layout.clone()).build()?;
        let locked = Generator::builder(layout.clone()).build_mutex()?;
        let a = run(&lock_free, t, duration);
        let b = run(&locked, t, duration);
        println!("| {t} | {:.2} | {:.2} | {:.2}x |", a / 1e6, b / 1e6, a / b);
    }
    Ok(())
}

/// IDs per second from `threads` threads calling `next_id` for `duration`.
fn run(generator: &impl IdGenerator, threads: usize, duration: Duration) -> f64 {
    let start = Instant::now();
    let per_thread: Vec<Vec<Id>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut ids = Vec::with_capacity(1 << 20);
                    while start.elapsed() < duration {
                        for _ in 0..256 {
                            ids.push(generator.next_id());
                        }
                    }
                    ids
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let total: usize = per_thread.iter().map(Vec::len).sum();
    let unique: HashSet<Id> = per_thread.iter().flatten().copied().collect();
    assert_eq!(unique.len(), total, "duplicate IDs");
    for ids in &per_thread {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a thread saw IDs out of order"
        );
    }
    total as f64 / elapsed
}
