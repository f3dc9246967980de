//! flakeid against its mutex twin and the peer crates, measured in one run
//! and written up: a markdown report on stdout and in
//! `benches/results/peers.md`, and a chart (throughput by thread count, one
//! line per generator) in `benches/results/throughput.svg`.
//!
//! ```text
//! cargo bench -p flakeid-peers                      # everything, about 7 minutes
//! cargo bench -p flakeid-peers -- cap               # only what matches "cap"
//! FLAKEID_BENCH_QUICK=1 cargo bench -p flakeid-peers  # a short sanity run
//! ```
//!
//! Only a full run (no filter, not quick) writes `benches/results/`.
//!
//! The views (method and caveats in `benches/README.md`):
//!
//! - `cost/<generator>/<threads>` (criterion): the cost of an ID on a layout
//!   with a 22-bit sequence, so locks and atomics are measured, not the cap.
//! - `batch/…`, `clock/…`, `id/…` (criterion): `next_ids(n)`, clock reads,
//!   formatting and parsing.
//! - `cap/<generator>/<threads>`: the Twitter layout's 12-bit sequence at
//!   full speed: the share of the 4,096 IDs/ms issued, and CPU time.
//! - `latency/<generator>/<threads>`: per-call latency percentiles.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use crossbeam_utils::CachePadded;
use ferroid::generator::{AtomicSnowflakeGenerator, LockSnowflakeGenerator};
use ferroid::id::{SnowflakeId, SnowflakeTwitterId};
use ferroid::time::{MonotonicClock as FerroidClock, TWITTER_EPOCH, TimeSource};
use flakeid::report::{self, cpu_model};
use flakeid::{Clock, Generator, Id, IdGenerator, Layout, MonotonicClock, SystemClock};

const THREADS: [usize; 5] = [1, 2, 4, 8, 16];
const BATCHES: [usize; 4] = [1, 16, 256, 4096];
/// Epoch of the wide layouts (2023-11-14).
const WIDE_EPOCH_MS: u64 = 1_700_000_000_000;
const CAPACITY_PER_MS: f64 = 4096.0;

/// ferroid fixes a layout at compile time; these match flakeid's.
#[allow(missing_docs)]
mod ferroid_layouts {
    ferroid::define_snowflake_id!(
        /// 1 unused, 41 ms, 22 sequence: as `wide_layout`.
        Wide, u64,
        reserved: 1,
        timestamp: 41,
        machine_id: 0,
        sequence: 22
    );
    ferroid::define_snowflake_id!(
        /// 1 unused, 38 ms, 25 sequence: as `batch_layout`.
        Wider, u64,
        reserved: 1,
        timestamp: 38,
        machine_id: 0,
        sequence: 25
    );
}
use ferroid_layouts::Wide as FerroidWide;

/// 41 ms + 22-bit sequence: 4 M IDs per ms, far above what any generator
/// here issues, so the cost of an ID is measured rather than the cap.
fn wide_layout() -> Layout {
    Layout::builder()
        .epoch_ms(WIDE_EPOCH_MS)
        .timestamp_bits(41)
        .sequence(22)
        .build()
        .expect("valid layout")
}

/// 38 ms + 25-bit sequence (33 M IDs per ms, epoch + 8.7 years): a batch
/// of 4,096 from one thread stays below the cap even at 0.3 ns per ID.
fn batch_layout() -> Layout {
    Layout::builder()
        .epoch_ms(WIDE_EPOCH_MS)
        .timestamp_bits(38)
        .sequence(25)
        .build()
        .expect("valid layout")
}

// ---------------------------------------------------------------------------
// The generators, each used the way its README shows.

/// One generator under test.
trait Contender: Sync {
    /// One ID (as bits, for checks; a UUID is folded to 64 bits).
    fn id(&self) -> u64;
}

/// flakeid's `Generator` or `MutexGenerator`, any clock.
struct Flakeid<G>(G);

impl<G: IdGenerator> Contender for Flakeid<G> {
    #[inline]
    fn id(&self) -> u64 {
        self.0.next_id().to_u64()
    }
}

/// What a ferroid generator does when it must wait (it hands the choice to
/// the caller through a closure).
#[derive(Clone, Copy)]
enum FerroidWait {
    /// `spin_loop`, as ferroid's own benchmark does.
    Spin,
    /// Its README's example: spin, yield, then sleep for the suggested time.
    Readme,
}

impl FerroidWait {
    #[inline]
    fn pause(self, yield_for_ms: u64) {
        core::hint::spin_loop();
        if let FerroidWait::Readme = self {
            yield_then_sleep(yield_for_ms);
        }
    }
}

/// The README's wait past the spin, out of line: inlined, its constants
/// would take registers from the measured loop and push the loop's counter
/// to the stack (two loads and a store per ID that no other row pays).
#[cold]
#[inline(never)]
fn yield_then_sleep(ms: u64) {
    std::thread::yield_now();
    std::thread::sleep(Duration::from_millis(ms));
}

struct FerroidAtomic<I: SnowflakeId<Ty = u64>>(
    AtomicSnowflakeGenerator<I, FerroidClock>,
    FerroidWait,
);

impl<I: SnowflakeId<Ty = u64> + Send + Sync> Contender for FerroidAtomic<I> {
    #[inline]
    fn id(&self) -> u64 {
        self.0.next_id(|ms| self.1.pause(ms)).to_raw()
    }
}

struct FerroidLock<I: SnowflakeId<Ty = u64>>(LockSnowflakeGenerator<I, FerroidClock>, FerroidWait);

impl<I: SnowflakeId<Ty = u64> + Send + Sync> Contender for FerroidLock<I> {
    #[inline]
    fn id(&self) -> u64 {
        self.0
            .try_next_id(|ms| self.1.pause(ms))
            .expect("ferroid's lock is not poisoned")
            .to_raw()
    }
}

struct SnowflakeMe(snowflake_me::Snowflake);

impl Contender for SnowflakeMe {
    #[inline]
    fn id(&self) -> u64 {
        self.0.next_id().expect("snowflake_me issues").as_u64()
    }
}

struct Snowflaked(snowflaked::sync::Generator);

impl Contender for Snowflaked {
    #[inline]
    fn id(&self) -> u64 {
        self.0.generate()
    }
}

/// rs-snowflake's generator is `&mut self`: shared behind a `Mutex`.
struct RsSnowflake(Mutex<snowflake::SnowflakeIdGenerator>);

impl Contender for RsSnowflake {
    #[inline]
    fn id(&self) -> u64 {
        let mut g = self.0.lock().expect("not poisoned");
        g.real_time_generate() as u64
    }
}

struct UuidV7;

impl Contender for UuidV7 {
    #[inline]
    fn id(&self) -> u64 {
        let (high, low) = uuid::Uuid::now_v7().as_u64_pair();
        high ^ low
    }
}

/// The floor: the bare minimum a time-ordered ID from a shared word costs.
/// A call is one relaxed load of a cached time ([`FLOOR_TICK`]) and one
/// compare-and-swap of the state word (with the relaxed load of the word
/// that gives the swap its expected value), nothing else: no layout, no
/// policy, no backoff, no counting, no clock object, and no `Result` but
/// the swap's own.
///
/// Within the cached tick the successor is the state plus one, a value
/// that depends on the state alone; the comparison with the tick is a
/// branch the CPU predicts, not a select that would make the swap wait for
/// the time load. Entering a new tick, once per ms, is out of line
/// ([`Floor::enter`]). flakeid's fast path has the same shape.
struct Floor {
    state: CachePadded<AtomicU64>,
    /// Compare-and-swaps that lost, counted only by [`Floor::counted`].
    lost: AtomicU64,
}

/// Sequence bits of the floor's IDs, as in [`wide_layout`].
const FLOOR_SEQUENCE_BITS: u32 = 22;

/// The floor's cached time: ms since [`WIDE_EPOCH_MS`], stored every ms by
/// one thread for the process ([`start_floor_clock`]). A static of its own
/// (the load needs no pointer), on a cache line of its own, as ferroid's
/// and flakeid's cached times are.
static FLOOR_TICK: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));

/// Starts the thread that keeps [`FLOOR_TICK`] fresh, once per process.
fn start_floor_clock() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        FLOOR_TICK.store(wide_tick(), Ordering::Relaxed);
        std::thread::Builder::new()
            .name("floor-clock".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(Duration::from_millis(1));
                    FLOOR_TICK.store(wide_tick(), Ordering::Relaxed);
                }
            })
            .expect("a thread for the floor's clock");
    });
}

/// Wall-clock ms since [`WIDE_EPOCH_MS`].
fn wide_tick() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        .saturating_sub(WIDE_EPOCH_MS)
}

impl Floor {
    fn new() -> Floor {
        start_floor_clock();
        Floor {
            state: CachePadded::new(AtomicU64::new(0)),
            lost: AtomicU64::new(0),
        }
    }

    /// One ID: the next in the cached tick, or (out of line) the first of a
    /// newer one.
    #[inline(always)]
    fn next(&self) -> u64 {
        let tick = FLOOR_TICK.load(Ordering::Relaxed);
        let mut cur = self.state.load(Ordering::Relaxed);
        while cur >> FLOOR_SEQUENCE_BITS == tick {
            match self.state.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return cur + 1,
                Err(actual) => cur = actual,
            }
        }
        self.enter(tick)
    }

    /// The state is in another tick than the cached one: the first ID of
    /// the cached tick if it is newer, else the next in the state's (a
    /// thread that read the tick just before the clock thread stored a new
    /// one must not go back).
    #[cold]
    #[inline(never)]
    fn enter(&self, tick: u64) -> u64 {
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            let next = (cur + 1).max(tick << FLOOR_SEQUENCE_BITS);
            match self
                .state
                .compare_exchange_weak(cur, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(actual) => cur = actual,
            }
        }
    }

    /// [`Floor::next`], counting lost compare-and-swaps in `lost`: for the
    /// contention table, never in a timed run.
    fn counted(&self) -> u64 {
        let tick = FLOOR_TICK.load(Ordering::Relaxed);
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            let next = (cur + 1).max(tick << FLOOR_SEQUENCE_BITS);
            match self
                .state
                .compare_exchange_weak(cur, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(actual) => {
                    self.lost.fetch_add(1, Ordering::Relaxed);
                    cur = actual;
                }
            }
        }
    }
}

impl Contender for Floor {
    #[inline]
    fn id(&self) -> u64 {
        self.next()
    }
}

/// A generator in the report: its directory name in criterion's output, its
/// label, and what limits it.
struct Entry {
    key: &'static str,
    label: &'static str,
    /// The sequence it runs with in the `cost` and `latency` views.
    sequence: &'static str,
}

const ENTRIES: [Entry; 10] = [
    Entry {
        key: "floor",
        label: "floor: one cached-time load + one CAS",
        sequence: "22 bits",
    },
    Entry {
        key: "flakeid",
        label: "flakeid `Generator` (default clock)",
        sequence: "22 bits",
    },
    Entry {
        key: "flakeid-thread-free",
        label: "flakeid `Generator` + `MonotonicClock::thread_free()`",
        sequence: "22 bits",
    },
    Entry {
        key: "flakeid-mutex",
        label: "flakeid `MutexGenerator`",
        sequence: "22 bits",
    },
    Entry {
        key: "ferroid-atomic",
        label: "ferroid `AtomicSnowflakeGenerator`",
        sequence: "22 bits",
    },
    Entry {
        key: "ferroid-lock",
        label: "ferroid `LockSnowflakeGenerator`",
        sequence: "22 bits",
    },
    Entry {
        key: "snowflake_me",
        label: "snowflake_me `Snowflake`",
        sequence: "22 bits",
    },
    Entry {
        key: "snowflaked",
        label: "snowflaked `sync::Generator`",
        sequence: "12 bits, fixed (capped)",
    },
    Entry {
        key: "rs-snowflake",
        label: "rs-snowflake in a `Mutex`",
        sequence: "12 bits, fixed (capped)",
    },
    Entry {
        key: "uuid-v7",
        label: "uuid `Uuid::now_v7()` (128-bit)",
        sequence: "42-bit counter",
    },
];

fn label(key: &str) -> &'static str {
    ENTRIES
        .iter()
        .find(|e| e.key == key)
        .map_or("?", |e| e.label)
}

/// Runs the measurements of one generator, whatever its type.
trait Sweep {
    fn cost(&self, group: &mut BenchmarkGroup<'_, WallTime>, key: &str);
    fn latency(&self, key: &str, settings: &Settings) -> Vec<(usize, Percentiles)>;
}

impl<G: Contender> Sweep for G {
    fn cost(&self, group: &mut BenchmarkGroup<'_, WallTime>, key: &str) {
        for threads in THREADS {
            group.bench_with_input(BenchmarkId::new(key, threads), &threads, |b, &t| {
                b.iter_custom(|iters| run_for_iters(self, t, iters));
            });
        }
    }

    fn latency(&self, key: &str, settings: &Settings) -> Vec<(usize, Percentiles)> {
        THREADS
            .iter()
            .filter(|&&t| settings.selects(&format!("latency/{key}/{t}")))
            .map(|&t| (t, latencies(self, t, settings.latency_time)))
            .collect()
    }
}

fn ferroid_wide_clock() -> FerroidClock {
    FerroidClock::with_epoch(Duration::from_millis(WIDE_EPOCH_MS))
}

/// The generators of the `cost` and `latency` views.
fn wide_contenders() -> Vec<(&'static str, Box<dyn Sweep>)> {
    let builder = Generator::builder(wide_layout()).single_node();
    let snowflake_me = snowflake_me::Snowflake::builder()
        .start_time(WIDE_EPOCH_MS as i64)
        .bit_len_time(41)
        .bit_len_sequence(22)
        .bit_len_data_center_id(0)
        .bit_len_machine_id(0)
        .machine_id(&|| Ok(0))
        .data_center_id(&|| Ok(0))
        .finalize()
        .expect("valid snowflake_me layout");
    vec![
        ("floor", Box::new(Floor::new())),
        (
            "flakeid",
            Box::new(Flakeid(builder.clone().build().expect("valid"))),
        ),
        (
            "flakeid-thread-free",
            Box::new(Flakeid(
                builder
                    .clone()
                    .clock(MonotonicClock::thread_free())
                    .build()
                    .expect("valid"),
            )),
        ),
        (
            "flakeid-mutex",
            Box::new(Flakeid(builder.build_mutex().expect("valid"))),
        ),
        (
            "ferroid-atomic",
            Box::new(FerroidAtomic::<FerroidWide>(
                AtomicSnowflakeGenerator::new(0, ferroid_wide_clock()),
                FerroidWait::Spin,
            )),
        ),
        (
            "ferroid-lock",
            Box::new(FerroidLock::<FerroidWide>(
                LockSnowflakeGenerator::new(0, ferroid_wide_clock()),
                FerroidWait::Spin,
            )),
        ),
        ("snowflake_me", Box::new(SnowflakeMe(snowflake_me))),
        (
            "snowflaked",
            Box::new(Snowflaked(snowflaked::sync::Generator::new(1))),
        ),
        (
            "rs-snowflake",
            Box::new(RsSnowflake(Mutex::new(
                snowflake::SnowflakeIdGenerator::new(1, 1),
            ))),
        ),
        ("uuid-v7", Box::new(UuidV7)),
    ]
}

// ---------------------------------------------------------------------------
// Running generators on threads.

/// Runs `iters` calls split over `threads` threads (on this one for 1) and
/// returns the wall time from the moment all are ready.
fn run_for_iters<G: Contender + ?Sized>(g: &G, threads: usize, iters: u64) -> Duration {
    if threads == 1 {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(g.id());
        }
        return start.elapsed();
    }
    let per_thread = iters.div_ceil(threads as u64);
    let ready = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                ready.wait();
                for _ in 0..per_thread {
                    black_box(g.id());
                }
            });
        }
        ready.wait();
        let start = Instant::now();
        // The scope joins the threads before returning.
        start
    })
    .elapsed()
}

/// Time this thread has spent on a CPU, from the kernel (Linux only).
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// What one thread did in a timed run.
struct ThreadRun<T> {
    out: T,
    cpu: Option<Duration>,
}

/// Runs `work` on `threads` threads until `duration` has passed since all
/// were ready (it checks `stop` between calls); returns each thread's output
/// and CPU time, and the wall time.
fn run_for_time<T: Send>(
    threads: usize,
    duration: Duration,
    work: impl Fn(&AtomicBool) -> T + Sync,
) -> (Vec<ThreadRun<T>>, Duration) {
    let ready = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    ready.wait();
                    let cpu_before = thread_cpu_time();
                    let out = work(&stop);
                    let cpu = thread_cpu_time()
                        .zip(cpu_before)
                        .map(|(after, before)| after.saturating_sub(before));
                    ThreadRun { out, cpu }
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let runs = handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect();
        (runs, start.elapsed())
    })
}

// ---------------------------------------------------------------------------
// View (b): at the cap.

/// One run at the sequence cap.
struct CapRun {
    threads: usize,
    /// Share of 4,096 IDs per ms actually issued, over the ms the run spans.
    share: f64,
    /// CPU time of all threads over wall time: cores kept busy.
    cores: Option<f64>,
    /// The busiest thread's CPU time over wall time.
    max_thread: Option<f64>,
    /// No duplicate, and each thread's IDs increasing.
    sound: bool,
}

fn at_cap<G: Contender + ?Sized>(g: &G, threads: usize, duration: Duration) -> CapRun {
    let (runs, wall) = run_for_time(threads, duration, |stop| {
        let mut ids = Vec::with_capacity(1 << 20);
        while !stop.load(Ordering::Relaxed) {
            ids.push(g.id());
        }
        ids
    });
    let wall_s = wall.as_secs_f64();
    let issued: usize = runs.iter().map(|r| r.out.len()).sum();
    // Every layout here has its timestamp at bit 22. The first and last ms
    // of the run are partly outside it, so only the ms between count.
    let tick = |id: &u64| id >> 22;
    let first = runs.iter().flat_map(|r| r.out.first()).map(tick).min();
    let last = runs.iter().flat_map(|r| r.out.last()).map(tick).max();
    let share = match (first, last) {
        (Some(first), Some(last)) if last > first + 1 => {
            let inside = runs
                .iter()
                .flat_map(|r| r.out.iter())
                .filter(|id| (first + 1..last).contains(&tick(id)))
                .count();
            inside as f64 / (CAPACITY_PER_MS * (last - first - 1) as f64)
        }
        _ => 0.0,
    };
    let ordered = runs.iter().all(|r| r.out.windows(2).all(|w| w[0] < w[1]));
    let mut all: Vec<u64> = runs.iter().flat_map(|r| r.out.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    let cpus: Option<Vec<f64>> = runs
        .iter()
        .map(|r| r.cpu.map(|c| c.as_secs_f64() / wall_s))
        .collect();
    CapRun {
        threads,
        share,
        cores: cpus.as_ref().map(|c| c.iter().sum()),
        max_thread: cpus.as_ref().map(|c| c.iter().copied().fold(0.0, f64::max)),
        sound: ordered && all.len() == issued,
    }
}

/// The generators of the `cap` view, each on a 12-bit sequence with 4,096
/// IDs per ms and its default way of waiting for the next ms.
fn cap_contenders() -> Vec<(&'static str, Box<dyn CapSweep>)> {
    let twitter = Generator::builder(Layout::twitter()).node_id(1);
    let ferroid_clock = || FerroidClock::with_epoch(TWITTER_EPOCH);
    let snowflake_me = snowflake_me::Snowflake::builder()
        .machine_id(&|| Ok(1))
        .data_center_id(&|| Ok(1))
        .finalize()
        .expect("valid snowflake_me config");
    vec![
        (
            "flakeid",
            Box::new(Flakeid(twitter.clone().build().expect("valid"))),
        ),
        (
            "flakeid-thread-free",
            Box::new(Flakeid(
                twitter
                    .clone()
                    .clock(MonotonicClock::thread_free())
                    .build()
                    .expect("valid"),
            )),
        ),
        (
            "flakeid-mutex",
            Box::new(Flakeid(twitter.build_mutex().expect("valid"))),
        ),
        (
            "ferroid-atomic",
            Box::new(FerroidAtomic::<SnowflakeTwitterId>(
                AtomicSnowflakeGenerator::new(1, ferroid_clock()),
                FerroidWait::Readme,
            )),
        ),
        (
            "ferroid-lock",
            Box::new(FerroidLock::<SnowflakeTwitterId>(
                LockSnowflakeGenerator::new(1, ferroid_clock()),
                FerroidWait::Readme,
            )),
        ),
        ("snowflake_me", Box::new(SnowflakeMe(snowflake_me))),
        (
            "snowflaked",
            Box::new(Snowflaked(snowflaked::sync::Generator::new(1))),
        ),
        (
            "rs-snowflake",
            Box::new(RsSnowflake(Mutex::new(
                snowflake::SnowflakeIdGenerator::new(1, 1),
            ))),
        ),
    ]
}

trait CapSweep {
    fn cap(&self, key: &str, settings: &Settings) -> Vec<CapRun>;
}

impl<G: Contender> CapSweep for G {
    fn cap(&self, key: &str, settings: &Settings) -> Vec<CapRun> {
        THREADS
            .iter()
            .filter(|&&t| settings.selects(&format!("cap/{key}/{t}")))
            .map(|&t| {
                let run = at_cap(self, t, settings.cap_time);
                eprintln!(
                    "cap/{key}/{t}: {:.1}% of capacity, {} cores busy",
                    run.share * 100.0,
                    run.cores.map_or("?".into(), |c| format!("{c:.2}"))
                );
                run
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// View (c): latency.

#[derive(Clone, Copy)]
struct Percentiles {
    p50: f64,
    p99: f64,
    p999: f64,
}

/// At most this many samples per thread and run.
const MAX_SAMPLES: usize = 2_000_000;

fn latencies<G: Contender + ?Sized>(g: &G, threads: usize, duration: Duration) -> Percentiles {
    let clock = quanta::Clock::new();
    let (runs, _) = run_for_time(threads, duration, |stop| {
        let mut samples = Vec::with_capacity(MAX_SAMPLES);
        while samples.len() < MAX_SAMPLES && !stop.load(Ordering::Relaxed) {
            let start = clock.raw();
            black_box(g.id());
            samples.push(clock.raw().saturating_sub(start));
        }
        samples
    });
    let mut all: Vec<u64> = runs.into_iter().flat_map(|r| r.out).collect();
    let mut at = |q: f64| {
        if all.is_empty() {
            return f64::NAN;
        }
        let i = ((all.len() as f64 * q) as usize).min(all.len() - 1);
        let (_, v, _) = all.select_nth_unstable(i);
        clock.delta_as_nanos(0, *v) as f64
    };
    Percentiles {
        p50: at(0.5),
        p99: at(0.99),
        p999: at(0.999),
    }
}

/// The cost of the two counter reads around each call.
fn timer_overhead_ns() -> f64 {
    let clock = quanta::Clock::new();
    let mut samples: Vec<u64> = (0..100_000)
        .map(|_| {
            let start = clock.raw();
            clock.raw().saturating_sub(start)
        })
        .collect();
    let mid = samples.len() / 2;
    let (_, v, _) = samples.select_nth_unstable(mid);
    clock.delta_as_nanos(0, *v) as f64
}

// ---------------------------------------------------------------------------
// The criterion groups.

/// Lost compare-and-swaps per issued ID at one thread count.
struct Lost {
    threads: usize,
    /// The default `Generator`, from its counters (`Stats::lost_races`).
    flakeid: f64,
    /// The floor loop, counting its own.
    floor: f64,
}

/// Contention made visible: compare-and-swaps that lost a race, per issued
/// ID, at each thread count. Counted in passes of their own, not in the
/// timed ones: the generator's counters add one shared increment per call,
/// so its figure here is from slightly busier runs than the cost view's.
fn lost_races(settings: &Settings) -> Vec<Lost> {
    let ids: u64 = if settings.quick { 200_000 } else { 4_000_000 };
    THREADS
        .iter()
        .filter(|&&t| settings.selects(&format!("lost/{t}")))
        .map(|&threads| {
            let generator = Generator::builder(wide_layout())
                .single_node()
                .counters(true)
                .build()
                .expect("valid");
            let generator = Flakeid(generator);
            run_for_iters(&generator, threads, ids);
            let stats = generator.0.stats().expect("counters are on");
            let floor = Floor::new();
            let per_thread = ids.div_ceil(threads as u64);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..per_thread {
                            black_box(floor.counted());
                        }
                    });
                }
            });
            let floor_lost = floor.lost.load(Ordering::Relaxed);
            eprintln!("lost/{threads}: measured");
            Lost {
                threads,
                flakeid: stats.lost_races as f64 / stats.issued as f64,
                floor: floor_lost as f64 / (per_thread * threads as u64) as f64,
            }
        })
        .collect()
}

fn cost(c: &mut Criterion, contenders: &[(&'static str, Box<dyn Sweep>)]) {
    let mut group = c.benchmark_group("cost");
    group.throughput(Throughput::Elements(1));
    for (key, g) in contenders {
        g.cost(&mut group, key);
    }
    group.finish();
}

fn batch(c: &mut Criterion) {
    let builder = Generator::builder(batch_layout()).single_node();
    let lock_free = builder.clone().build().expect("valid");
    let locked = builder.build_mutex().expect("valid");
    let snowflake_me = snowflake_me::Snowflake::builder()
        .start_time(WIDE_EPOCH_MS as i64)
        .bit_len_time(38)
        .bit_len_sequence(25)
        .bit_len_data_center_id(0)
        .bit_len_machine_id(0)
        .machine_id(&|| Ok(0))
        .data_center_id(&|| Ok(0))
        .finalize()
        .expect("valid snowflake_me layout");
    let mut group = c.benchmark_group("batch");
    for n in BATCHES {
        group.throughput(Throughput::Elements(n as u64));
        // A batch ends with its tick; take batches until n IDs are in hand.
        group.bench_with_input(BenchmarkId::new("flakeid", n), &n, |b, &n| {
            b.iter(|| take(&lock_free, n));
        });
        group.bench_with_input(BenchmarkId::new("flakeid-mutex", n), &n, |b, &n| {
            b.iter(|| take(&locked, n));
        });
        let mut ids = Vec::with_capacity(n);
        group.bench_with_input(BenchmarkId::new("snowflake_me", n), &n, |b, &n| {
            b.iter(|| {
                ids.clear();
                snowflake_me
                    .next_ids_into(n, &mut ids)
                    .expect("snowflake_me issues");
                for id in &ids {
                    black_box(id);
                }
            });
        });
    }
    group.finish();
}

/// `n` IDs from `next_ids`, each looked at.
#[inline]
fn take(g: &impl IdGenerator, n: usize) {
    let mut got = 0;
    while got < n {
        for id in g.next_ids(n - got) {
            black_box(id);
            got += 1;
        }
    }
}

fn clock(c: &mut Criterion) {
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

fn id(c: &mut Criterion) {
    let generator = Generator::builder(Layout::twitter())
        .node_id(7)
        .build()
        .expect("valid");
    let id = generator.next_id();
    let text = id.to_string();
    let uuid = uuid::Uuid::now_v7();
    let uuid_text = uuid.to_string();
    let mut buf = String::with_capacity(64);
    let mut group = c.benchmark_group("id");
    group.bench_function("flakeid-to_string", |b| {
        b.iter(|| black_box(id).to_string())
    });
    group.bench_function("flakeid-write-decimal", |b| {
        b.iter(|| {
            buf.clear();
            write!(buf, "{}", black_box(id)).expect("a String takes it");
            black_box(&buf);
        })
    });
    group.bench_function("flakeid-write-hex", |b| {
        b.iter(|| {
            buf.clear();
            write!(buf, "{:x}", black_box(id)).expect("a String takes it");
            black_box(&buf);
        })
    });
    group.bench_function("flakeid-parse", |b| {
        b.iter(|| black_box(text.as_str()).parse::<Id>())
    });
    group.bench_function("flakeid-decode", |b| {
        b.iter(|| generator.layout().decode(black_box(id)))
    });
    group.bench_function("uuid-to_string", |b| b.iter(|| black_box(uuid).to_string()));
    group.bench_function("uuid-parse", |b| {
        b.iter(|| black_box(uuid_text.as_str()).parse::<uuid::Uuid>())
    });
    group.finish();
}

// ---------------------------------------------------------------------------
// Settings and the report.

struct Settings {
    quick: bool,
    /// The first free command-line argument: runs only what contains it.
    filter: Option<String>,
    cap_time: Duration,
    latency_time: Duration,
}

impl Settings {
    fn from_env() -> Settings {
        let quick = std::env::var_os("FLAKEID_BENCH_QUICK").is_some_and(|v| v != "0");
        // criterion's options that take a value; anything else free is a filter.
        const WITH_VALUE: [&str; 17] = [
            "--measurement-time",
            "--warm-up-time",
            "--sample-size",
            "--save-baseline",
            "-s",
            "--baseline",
            "-b",
            "--baseline-lenient",
            "--load-baseline",
            "--color",
            "-c",
            "--output-format",
            "--noise-threshold",
            "--confidence-level",
            "--significance-level",
            "--nresamples",
            "--profile-time",
        ];
        let mut filter = None;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            if WITH_VALUE.contains(&arg.as_str()) {
                args.next();
            } else if !arg.starts_with('-') && filter.is_none() {
                filter = Some(arg);
            }
        }
        Settings {
            quick,
            filter,
            cap_time: Duration::from_millis(if quick { 200 } else { 1000 }),
            latency_time: Duration::from_millis(if quick { 100 } else { 500 }),
        }
    }

    fn selects(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| name.contains(f))
    }

    fn criterion(&self) -> Criterion {
        let c = Criterion::default();
        let c = if self.quick {
            c.sample_size(10)
                .warm_up_time(Duration::from_millis(200))
                .measurement_time(Duration::from_millis(500))
        } else {
            c.sample_size(30)
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(2))
        };
        c.configure_from_args()
    }
}

/// Where criterion keeps its results: `CRITERION_HOME`, else the target
/// directory's `criterion/` (criterion asks `cargo metadata` for it; the
/// bench binary's own path says the same without a process).
fn criterion_dir() -> std::path::PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            // The bench runs as <target>/<profile>/deps/peers-<hash>.
            let exe = std::env::current_exe().ok()?;
            exe.ancestors().nth(3).map(std::path::Path::to_path_buf)
        })
        .unwrap_or_else(|| "target".into());
    target.join("criterion")
}

/// Criterion's estimate of the time per iteration of `group/bench`, in ns:
/// the slope of its linear fit where it made one, else the mean. Only
/// results written by this run count.
fn estimate_ns(group: &str, bench: &str, since: SystemTime) -> Option<f64> {
    let path = criterion_dir()
        .join(group)
        .join(bench)
        .join("new")
        .join("estimates.json");
    if std::fs::metadata(&path).and_then(|m| m.modified()).ok()? < since {
        return None;
    }
    let json = std::fs::read_to_string(path).ok()?;
    point_estimate(&json, "slope").or_else(|| point_estimate(&json, "mean"))
}

/// `"key":{..."point_estimate":N...}` in criterion's estimates file.
fn point_estimate(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":{{"))?;
    let rest = &json[at..];
    let value = &rest[rest.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = value.find([',', '}'])?;
    value[..end].trim().parse().ok()
}

struct Results {
    since: SystemTime,
    load_before: String,
    cap: Vec<(&'static str, Vec<CapRun>)>,
    latency: Vec<(&'static str, Vec<(usize, Percentiles)>)>,
    lost: Vec<Lost>,
    timer_ns: f64,
}

impl Results {
    /// ns per ID of `key` at `threads` in the cost view.
    fn cost_ns(&self, key: &str, threads: usize) -> Option<f64> {
        estimate_ns("cost", &format!("{key}/{threads}"), self.since)
    }

    /// Millions of IDs per second.
    fn throughput(&self, key: &str, threads: usize) -> Option<f64> {
        self.cost_ns(key, threads).map(|ns| 1e3 / ns)
    }
}

fn main() {
    let settings = Settings::from_env();
    let since = SystemTime::now();
    let load_before = load_average();
    let mut c = settings.criterion();

    let contenders = wide_contenders();
    cost(&mut c, &contenders);
    batch(&mut c);
    clock(&mut c);
    id(&mut c);

    let mut cap = Vec::new();
    for (key, g) in cap_contenders() {
        let runs = g.cap(key, &settings);
        if !runs.is_empty() {
            cap.push((key, runs));
        }
    }
    let mut latency = Vec::new();
    for (key, g) in &contenders {
        let runs = g.latency(key, &settings);
        if !runs.is_empty() {
            eprintln!("latency/{key}: measured");
            latency.push((*key, runs));
        }
    }
    drop(contenders);
    c.final_summary();
    let lost = lost_races(&settings);

    let results = Results {
        since,
        load_before,
        cap,
        latency,
        lost,
        timer_ns: timer_overhead_ns(),
    };
    let markdown = report(&results);
    print!("{markdown}");
    if settings.filter.is_some() || settings.quick {
        eprintln!("a filtered or quick run: benches/results/ left as it was");
        return;
    }
    // benches/results/, beside the notes on every bench (benches/README.md).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/peers has a parent")
        .join("results");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("peers.md"), &markdown))
        .and_then(|()| std::fs::write(dir.join("throughput.svg"), throughput_chart(&results)));
    match written {
        Ok(()) => eprintln!("wrote {}/peers.md and throughput.svg", dir.display()),
        Err(e) => eprintln!("could not write the report to {}: {e}", dir.display()),
    }
}

/// The load averages over 1, 5 and 15 minutes, as the report shows them.
fn load_average() -> String {
    report::load_average().map_or_else(
        || "?".into(),
        |[one, five, fifteen]| format!("{one:.2} {five:.2} {fifteen:.2}"),
    )
}

fn machine() -> String {
    let cpu = cpu_model();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(
        |_| std::env::consts::OS.into(),
        |k| format!("Linux {}", k.trim()),
    );
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "rustc ?".into(), |v| v.trim().to_string());
    format!("{cpu}, {cores} cores, {kernel}, {rustc}")
}

/// `YYYY-MM-DD HH:MM UTC` for now: the time of an ID made on the wall clock,
/// in the RFC 3339 form flakeid decodes it to.
fn utc_now() -> String {
    let generator = Generator::builder(Layout::twitter())
        .single_node()
        .clock(SystemClock)
        .build()
        .expect("the Twitter layout builds");
    let id = generator.next_id();
    let time = generator
        .layout()
        .decode(id)
        .expect("an ID of its own layout")
        .rfc3339()
        .to_string(); // 2026-11-23T06:16:42.123Z
    format!("{} {} UTC", &time[..10], &time[11..16])
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

fn ratio_cell(v: Option<f64>, target: f64, at_least: bool) -> (String, &'static str) {
    match v {
        None => ("not measured".into(), "–"),
        Some(v) => {
            let met = if at_least { v >= target } else { v <= target };
            (format!("{v:.2}×"), if met { "yes" } else { "**no**" })
        }
    }
}

fn report(r: &Results) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# flakeid and its peers, measured in one run\n");
    let _ = writeln!(
        md,
        "Measured {} on {}. Load average {} before, {} after.\n",
        utc_now(),
        machine(),
        r.load_before,
        load_average()
    );
    let _ = writeln!(
        md,
        "Made by `cargo bench -p flakeid-peers` (method: `benches/README.md`).\n"
    );

    // View (a).
    let _ = writeln!(
        md,
        "## Throughput by thread count (cost view)\n\nMillions of IDs per second, all threads together, \
         on a layout with a 22-bit sequence where the generator allows one \
         (criterion, slope of time per ID).\n"
    );
    let _ = writeln!(
        md,
        "| generator | sequence | 1 thread | 2 | 4 | 8 | 16 |\n|---|---|---:|---:|---:|---:|---:|"
    );
    for e in &ENTRIES {
        let cells: Vec<String> = THREADS
            .iter()
            .map(|&t| cell(r.throughput(e.key, t), 1))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            e.label,
            e.sequence,
            cells.join(" | ")
        );
    }
    let _ = writeln!(
        md,
        "\nSingle thread, ns per ID: {}.\n",
        ENTRIES
            .iter()
            .filter_map(|e| r.cost_ns(e.key, 1).map(|ns| format!("{} {ns:.1}", e.key)))
            .collect::<Vec<_>>()
            .join(", ")
    );

    // Targets.
    let _ = writeln!(
        md,
        "## Targets\n\n| target | measured | met |\n|---|---:|:---:|"
    );
    let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
    // `at_least`: the measured ratio must reach `goal` (else stay within it).
    let mut target = |what: String, v: Option<f64>, goal: f64, at_least: bool| {
        let (m, ok) = ratio_cell(v, goal, at_least);
        let _ = writeln!(md, "| {what} | {m} | {ok} |");
    };
    // One thread: both at the floor; the lead is under contention.
    target(
        "1 thread: default `Generator` vs ferroid atomic, each on its own default clock (≥ 1×: both at the floor)"
            .into(),
        ratio(r.cost_ns("ferroid-atomic", 1), r.cost_ns("flakeid", 1)),
        1.0,
        true,
    );
    target(
        "1 thread: default `Generator` / the floor, one cached-time load + one CAS (≤ 1.15×)"
            .into(),
        ratio(r.cost_ns("flakeid", 1), r.cost_ns("floor", 1)),
        1.15,
        false,
    );
    for t in [2, 4, 8, 16] {
        target(
            format!("{t} threads: default `Generator` vs ferroid atomic (≥ 2×)"),
            ratio(
                r.throughput("flakeid", t),
                r.throughput("ferroid-atomic", t),
            ),
            2.0,
            true,
        );
        target(
            format!("{t} threads: default `Generator` vs its `MutexGenerator` twin (≥ 2×)"),
            ratio(r.throughput("flakeid", t), r.throughput("flakeid-mutex", t)),
            2.0,
            true,
        );
    }
    // Batches: at most 0.33 ns per ID in batches of 256.
    let per_id_256 = estimate_ns("batch", "flakeid/256", r.since).map(|ns| ns / 256.0);
    let (m, ok) = ratio_cell(per_id_256, 0.33, false);
    let _ = writeln!(
        md,
        "| `next_ids(256)`: ns per ID (≤ 0.33 ns) | {} ns | {ok} |",
        m.trim_end_matches('×')
    );
    if let Some((_, runs)) = r.cap.iter().find(|(k, _)| *k == "flakeid") {
        let worst = runs.iter().map(|c| c.share).fold(f64::INFINITY, f64::min);
        let (m, ok) = ratio_cell(Some(worst * 100.0), 99.0, true);
        let _ = writeln!(
            md,
            "| at the cap: lowest share of 4,096 IDs/ms issued, 1–16 threads (≥ 99%) | {}% | {ok} |",
            m.trim_end_matches('×')
        );
        let hottest = runs.iter().filter_map(|c| c.max_thread).fold(0.0, f64::max);
        let cores = runs.iter().filter_map(|c| c.cores).fold(0.0, f64::max);
        let _ = writeln!(
            md,
            "| at the cap: busiest thread's CPU / wall (a core-burner is 100%; ≤ 50%), most cores busy | {:.0}%, {cores:.2} cores | {} |",
            hottest * 100.0,
            if hottest <= 0.5 { "yes" } else { "**no**" }
        );
    }

    // Batches.
    let _ = writeln!(
        md,
        "\n## Batches: `next_ids(n)`, one thread\n\nns per ID, each ID taken from the batch \
         (38 ms + 25-bit sequence).\n\n| n | flakeid `Generator` | flakeid `MutexGenerator` | snowflake_me `next_ids_into` |\n|---:|---:|---:|---:|"
    );
    for n in BATCHES {
        let per =
            |k: &str| estimate_ns("batch", &format!("{k}/{n}"), r.since).map(|ns| ns / n as f64);
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} |",
            cell(per("flakeid"), 2),
            cell(per("flakeid-mutex"), 2),
            cell(per("snowflake_me"), 2)
        );
    }

    // Contention.
    if !r.lost.is_empty() {
        let _ = writeln!(
            md,
            "\n## Contention: lost compare-and-swaps per issued ID\n\n\
             Counted in passes of their own (not the timed ones): the default `Generator` \
             through its counters (`Stats::lost_races`; the counters add one shared \
             increment per call), the floor loop by itself. What these figures can and \
             cannot say about a machine with more cores: `benches/README.md`.\n\n\
             | threads | flakeid `Generator` | floor (no backoff) |\n|---:|---:|---:|"
        );
        for l in &r.lost {
            let _ = writeln!(md, "| {} | {:.3} | {:.3} |", l.threads, l.flakeid, l.floor);
        }
    }

    // Clocks.
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
            cell(estimate_ns("clock", key, r.since), 2)
        );
    }

    // Ids.
    let _ = writeln!(
        md,
        "\n## `Id` formatting and parsing\n\n| operation | ns |\n|---|---:|"
    );
    for key in [
        "flakeid-to_string",
        "flakeid-write-decimal",
        "flakeid-write-hex",
        "flakeid-parse",
        "flakeid-decode",
        "uuid-to_string",
        "uuid-parse",
    ] {
        let _ = writeln!(
            md,
            "| {key} | {} |",
            cell(estimate_ns("id", key, r.since), 1)
        );
    }

    // View (b).
    if !r.cap.is_empty() {
        let _ = writeln!(
            md,
            "\n## At the cap: Twitter layout (12-bit sequence, 4,096 IDs per ms)\n\n\
             Each cell: share of the capacity issued in the whole ms of the run (the \
             first and last ms are partly outside it) / cores kept busy \
             (CPU time of all threads over wall time) / the busiest thread's CPU share. \
             On this machine 2 cores are the most there is; a thread that spins while it \
             waits shows 100% alone, or its share of 2 cores. ✗ marks a duplicate or an \
             out-of-order ID.\n"
        );
        let _ = writeln!(
            md,
            "| generator | 1 thread | 2 | 4 | 8 | 16 |\n|---|---|---|---|---|---|"
        );
        for (key, runs) in &r.cap {
            let cells: Vec<String> = THREADS
                .iter()
                .map(|&t| {
                    runs.iter()
                        .find(|c| c.threads == t)
                        .map_or("–".into(), |c| {
                            format!(
                                "{:.1}% / {} / {}{}",
                                c.share * 100.0,
                                cell(c.cores, 2),
                                c.max_thread
                                    .map_or("–".into(), |m| format!("{:.0}%", m * 100.0)),
                                if c.sound { "" } else { " ✗" }
                            )
                        })
                })
                .collect();
            let _ = writeln!(md, "| {} | {} |", label(key), cells.join(" | "));
        }
    }

    // View (c).
    if !r.latency.is_empty() {
        let _ = writeln!(
            md,
            "\n## Latency per call under contention\n\n\
             p50 / p99 / p99.9 in ns, all threads' calls together, same layouts as the \
             throughput table; each includes about {:.0} ns of timer reads. With more \
             threads than cores, the tail includes time a thread was descheduled.\n",
            r.timer_ns
        );
        let _ = writeln!(
            md,
            "| generator | 1 thread | 2 | 4 | 8 | 16 |\n|---|---|---|---|---|---|"
        );
        for (key, runs) in &r.latency {
            let cells: Vec<String> = THREADS
                .iter()
                .map(|&t| {
                    runs.iter()
                        .find(|(n, _)| *n == t)
                        .map_or("–".into(), |(_, p)| {
                            format!(
                                "{} / {} / {}",
                                short_ns(p.p50),
                                short_ns(p.p99),
                                short_ns(p.p999)
                            )
                        })
                })
                .collect();
            let _ = writeln!(md, "| {} | {} |", label(key), cells.join(" | "));
        }
    }
    md
}

/// ns below 10 µs, µs above.
fn short_ns(ns: f64) -> String {
    if ns.is_nan() {
        "–".into()
    } else if ns < 10_000.0 {
        format!("{ns:.0}")
    } else {
        format!("{:.0} µs", ns / 1000.0)
    }
}

fn throughput_chart(r: &Results) -> String {
    let series: Vec<report::Series> = ENTRIES
        .iter()
        .map(|e| report::Series {
            name: e.key.to_string(),
            points: THREADS
                .iter()
                .filter_map(|&t| r.throughput(e.key, t).map(|v| (t as f64, v)))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    report::line_chart(
        &format!("IDs per second by thread count ({})", utc_now()),
        "threads",
        "M IDs/s",
        &series,
    )
}
