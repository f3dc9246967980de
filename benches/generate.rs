//! Cost of one ID from the lock-free generator and its mutex twin, on one
//! thread and under contention.
//!
//! The layout has a 22-bit sequence (4 M IDs per ms), so the generators are
//! measured, not the sequence cap.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use flakeid::{Generator, IdGenerator, Layout};

fn wide_layout() -> Layout {
    Layout::builder()
        .epoch_ms(1_700_000_000_000)
        .timestamp_bits(41)
        .sequence(22)
        .build()
        .expect("valid layout")
}

/// Runs `iters` calls split over `threads` threads and returns the wall time.
fn contended(generator: &impl IdGenerator, threads: u64, iters: u64) -> Duration {
    let per_thread = iters.div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..per_thread {
                    black_box(generator.next_id());
                }
            });
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let builder = Generator::builder(wide_layout()).single_node();
    let lock_free = builder.clone().build().expect("valid config");
    let locked = builder.build_mutex().expect("valid config");

    let mut group = c.benchmark_group("next_id");
    group.throughput(Throughput::Elements(1));
    group.bench_function("lock-free/1", |b| b.iter(|| lock_free.next_id()));
    group.bench_function("mutex/1", |b| b.iter(|| locked.next_id()));
    for threads in [2, 4, 8, 16] {
        group.bench_with_input(BenchmarkId::new("lock-free", threads), &threads, |b, &t| {
            b.iter_custom(|iters| contended(&lock_free, t, iters))
        });
        group.bench_with_input(BenchmarkId::new("mutex", threads), &threads, |b, &t| {
            b.iter_custom(|iters| contended(&locked, t, iters))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
