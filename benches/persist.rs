//! The cost of restart safety: `next_id` on one thread with persistence off
//! and on (a 1 s reservation window, a real file), side by side, in criterion
//! and as a ratio of alternated runs; then the save (fsync) rate while one
//! thread generates at full speed, counted by a store that wraps `FileStore`.
//!
//! ```text
//! cargo bench --bench persist
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
use flakeid::{FileStore, Generator, Layout, Persist, StateError, StateStore};

/// 41 ms + 22-bit sequence: 4 M IDs per ms, so the sequence cap is not what
/// is measured.
fn wide_layout() -> Layout {
    Layout::builder()
        .epoch_ms(1_700_000_000_000)
        .timestamp_bits(41)
        .sequence(22)
        .build()
        .expect("valid layout")
}

fn state_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-bench-persist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A `FileStore` that counts its saves.
struct Counted {
    inner: FileStore,
    saves: Arc<AtomicU64>,
}

impl StateStore for Counted {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        self.inner.load()
    }

    fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
        self.inner.save(state)?;
        self.saves.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn per_id_cost(c: &mut Criterion) {
    let dir = state_dir();
    let off = Generator::builder(wide_layout())
        .single_node()
        .build()
        .expect("valid");
    let on = Generator::builder(wide_layout())
        .single_node()
        .persist(Persist::file(dir.join("bench.state")).window(Duration::from_secs(1)))
        .build()
        .expect("state file");
    let mut group = c.benchmark_group("persistence");
    group.throughput(Throughput::Elements(1));
    group.bench_function("off", |b| b.iter(|| black_box(off.next_id())));
    group.bench_function("on, 1 s window", |b| b.iter(|| black_box(on.next_id())));
    group.finish();
    drop(on);
    let _ = std::fs::remove_dir_all(&dir);
}

/// IDs per second from `generator` on this thread for `duration`.
fn rate(generator: &Generator, duration: Duration) -> f64 {
    let start = Instant::now();
    let mut ids = 0u64;
    while start.elapsed() < duration {
        for _ in 0..1024 {
            black_box(generator.next_id());
        }
        ids += 1024;
    }
    ids as f64 / start.elapsed().as_secs_f64()
}

/// The overhead of persistence as a ratio measured side by side: short runs
/// with it off and on, alternated so that a noisy machine slows both alike,
/// and the median of each.
fn overhead() {
    let dir = state_dir();
    let off = Generator::builder(wide_layout())
        .single_node()
        .build()
        .expect("valid");
    let on = Generator::builder(wide_layout())
        .single_node()
        .persist(Persist::file(dir.join("overhead.state")).window(Duration::from_secs(1)))
        .build()
        .expect("state file");
    let (mut rates_off, mut rates_on) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        rates_off.push(rate(&off, Duration::from_millis(200)));
        rates_on.push(rate(&on, Duration::from_millis(200)));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off_rate, on_rate) = (median(&mut rates_off), median(&mut rates_on));
    println!(
        "persistence/overhead, 1 s window, one thread: {:.2} ns per ID off, {:.2} ns on: {:+.1}% (target < 5%)",
        1e9 / off_rate,
        1e9 / on_rate,
        (off_rate / on_rate - 1.0) * 100.0
    );
    drop(on);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Saves per second while one thread takes IDs as fast as it can.
fn save_rate() {
    let dir = state_dir();
    for window_ms in [1000, 100, 10] {
        let saves = Arc::new(AtomicU64::new(0));
        let store = Counted {
            inner: FileStore::open(dir.join(format!("rate-{window_ms}.state"))).expect("lock"),
            saves: saves.clone(),
        };
        let generator = Generator::builder(wide_layout())
            .single_node()
            .persist(Persist::store(store).window(Duration::from_millis(window_ms)))
            .build()
            .expect("state file");
        let first_saves = saves.load(Ordering::Relaxed);
        let start = Instant::now();
        let mut ids = 0u64;
        while start.elapsed() < Duration::from_secs(3) {
            for _ in 0..1024 {
                black_box(generator.next_id());
            }
            ids += 1024;
        }
        let secs = start.elapsed().as_secs_f64();
        let n = saves.load(Ordering::Relaxed) - first_saves;
        println!(
            "persistence/save rate, {window_ms} ms window: {:.1} saves/s at {:.1} M IDs/s",
            n as f64 / secs,
            ids as f64 / secs / 1e6
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, per_id_cost);

fn main() {
    benches();
    overhead();
    save_rate();
    Criterion::default().configure_from_args().final_summary();
}
