//! The `clock` view (criterion): what each clock reading costs, flakeid's,
//! the standard library's, quanta's and ferroid's.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use ferroid::time::{MonotonicClock as FerroidClock, TWITTER_EPOCH, TimeSource};
use flakeid::{Clock, MonotonicClock, SystemClock};

use crate::report::{cell, estimate_ns};

/// The criterion group `clock/<clock>`.
pub fn bench(c: &mut Criterion) {
    let monotonic = MonotonicClock::new();
    let thread_free = MonotonicClock::thread_free();
    let quanta = quanta::Clock::new();
    let ferroid: FerroidClock = FerroidClock::with_epoch(TWITTER_EPOCH);
    let mut group = c.benchmark_group("clock");
    group.bench_function("flakeid-MonotonicClock-now", |b| {
        b.iter(|| black_box(&monotonic).now_ms())
    });
    group.bench_function("flakeid-MonotonicClock-recent", |b| {
        b.iter(|| black_box(&monotonic).recent_ms())
    });
    group.bench_function("flakeid-thread_free-recent", |b| {
        b.iter(|| black_box(&thread_free).recent_ms())
    });
    group.bench_function("flakeid-SystemClock", |b| {
        b.iter(|| black_box(SystemClock).now_ms())
    });
    group.bench_function("SystemTime-now", |b| b.iter(SystemTime::now));
    group.bench_function("quanta-raw", |b| b.iter(|| black_box(&quanta).raw()));
    group.bench_function("quanta-now", |b| b.iter(|| black_box(&quanta).now()));
    {
        // quanta's own recent time needs its (one per process) upkeep thread.
        let upkeep = quanta::Upkeep::new(Duration::from_micros(200)).start();
        group.bench_function("quanta-recent", |b| b.iter(|| black_box(&quanta).recent()));
        drop(upkeep);
    }
    group.bench_function("ferroid-MonotonicClock", |b| {
        b.iter(|| TimeSource::<u64>::current_millis(black_box(&ferroid)))
    });
    group.finish();
}

/// The view's section of the report, from the results criterion wrote
/// since `since`.
pub fn write_section(md: &mut String, since: SystemTime) {
    let _ = writeln!(
        md,
        "\n## Clock reads\n\n| clock | ns per reading | what it pays for |\n|---|---:|---|"
    );
    for (key, what) in [
        (
            "flakeid-MonotonicClock-now",
            "the precise reading: TSC read (quanta), one multiply",
        ),
        (
            "flakeid-MonotonicClock-recent",
            "the cached reading the fast path uses: one load of the ms the process's refresh thread keeps fresh",
        ),
        (
            "flakeid-thread_free-recent",
            "`MonotonicClock::thread_free()`: no cached reading (`None`), so the generator reads the TSC",
        ),
        ("flakeid-SystemClock", "`SystemTime::now` and a division"),
        ("SystemTime-now", "vDSO `clock_gettime`"),
        ("quanta-raw", "the TSC read alone"),
        ("quanta-now", "TSC read, scaled to ns"),
        (
            "quanta-recent",
            "quanta's upkept time (needs its one-per-process thread)",
        ),
        (
            "ferroid-MonotonicClock",
            "one load of a ms a thread stores every ms",
        ),
    ] {
        let _ = writeln!(
            md,
            "| {key} | {} | {what} |",
            cell(estimate_ns("clock", key, since), 2)
        );
    }
}
