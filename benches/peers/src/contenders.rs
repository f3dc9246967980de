//! The generators under test, each used the way its README shows, and the
//! lists of them each view measures.

use std::sync::Mutex;
use std::time::Duration;

use criterion::BenchmarkGroup;
use criterion::BenchmarkId;
use criterion::measurement::WallTime;
use ferroid::generator::{AtomicSnowflakeGenerator, LockSnowflakeGenerator};
use ferroid::id::{SnowflakeId, SnowflakeTwitterId};
use ferroid::time::{MonotonicClock as FerroidClock, TWITTER_EPOCH};
use flakeid::{Generator, IdGenerator, Layout, MonotonicClock};

use crate::cap::CapSweep;
use crate::floor::Floor;
use crate::latency::{Percentiles, latencies};
use crate::layouts::{FerroidWide, THREADS, ferroid_wide_clock, snowflake_me_on, wide_layout};
use crate::runner::run_for_iters;
use crate::settings::Settings;

/// One generator under test.
pub trait Contender: Sync {
    /// One ID (as bits, for checks; a UUID is folded to 64 bits).
    fn id(&self) -> u64;
}

/// flakeid's `Generator` or `MutexGenerator`, any clock.
pub struct Flakeid<G>(pub G);

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

/// A generator in the report: its directory name in criterion's output, its
/// label, and what limits it.
pub struct Entry {
    pub key: &'static str,
    pub label: &'static str,
    /// The sequence it runs with in the `cost` and `latency` views.
    pub sequence: &'static str,
}

pub const ENTRIES: [Entry; 10] = [
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
        label: "uuid `Uuid::now_v7()` (128-bit, `fast-rng`)",
        sequence: "42-bit counter",
    },
];

pub fn label(key: &str) -> &'static str {
    ENTRIES
        .iter()
        .find(|e| e.key == key)
        .map_or("?", |e| e.label)
}

/// Runs the measurements of one generator, whatever its type.
pub trait Sweep {
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

/// The generators of the `cost` and `latency` views.
pub fn wide_contenders() -> Vec<(&'static str, Box<dyn Sweep>)> {
    let builder = Generator::builder(wide_layout()).single_node();
    let snowflake_me = snowflake_me_on(41, 22);
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

/// The generators of the `cap` view, each on a 12-bit sequence with 4,096
/// IDs per ms and its default way of waiting for the next ms.
pub fn cap_contenders() -> Vec<(&'static str, Box<dyn CapSweep>)> {
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
