//! What the default clock costs a process that asks for no IDs, and what the
//! first ID after such a pause costs.
//!
//! ```text
//! cargo bench --bench idle                        # about 30 s, Linux only
//! cargo bench --bench idle -- --loop 1000000      # for callgrind, below
//! ```
//!
//! - **Idle**: a default generator (41 ms + a 22-bit sequence) issues IDs for 200 ms, then the process
//!   asks for nothing. Over 1 s of settling and then 5 s of idling, the
//!   refresh thread (`flakeid-clock`) is watched through
//!   `/proc/self/task/<tid>/status` (voluntary context switches: its
//!   wake-ups), `/proc/self/task/<tid>/schedstat` (its on-CPU nanoseconds)
//!   and `/proc/self/task/<tid>/stat` (its user and system time, in clock
//!   ticks).
//! - **First ID after idle**: one `next_id` timed after 300 ms without a
//!   call, against one timed 2 ms after the previous call (a steady-state
//!   call that enters a new tick: the slow path, with one precise read), and
//!   the cost of one precise read (`MonotonicClock::now_ms` without a cached
//!   reading) to express the difference in. Then the call after the first,
//!   made as the next millisecond begins: the one that wakes a resting
//!   refresh thread. Last, the first call after 300 ms again, while another
//!   thread takes a precise reading (asking the refresh thread for nothing)
//!   every millisecond: what is left of the difference when the clock's
//!   memory and code stay in cache, as a refresh thread that never rests
//!   keeps them.
//! - **Burst after idle**: the IDs a loop gets in its first 2 ms after 300 ms
//!   without a call, against the same loop right after another.
//!
//! Timings on a shared machine swing; the medians of many samples are
//! printed, with the 10th and 90th percentiles.
//!
//! `--loop N` issues N IDs on the default clock and nothing else, in an
//! `#[inline(never)]` `hot_next`, for instruction counts that repeat:
//!
//! ```text
//! valgrind --tool=callgrind --separate-threads=yes <bench binary> --loop 1000000
//! valgrind --tool=callgrind --separate-threads=yes <bench binary> --loop 2000000
//! ```
//!
//! The difference of the main thread's totals, over 1,000,000, is the
//! instructions per ID (the program's start cancels out). Each mode prints
//! the clock's source (`quanta` or `Instant`): compare runs on the same one.
//!
//! `--calls N` makes N calls of each kind the timings above make, each kind
//! from a function of its own (`hot_2ms_after`, `hot_300ms_after`,
//! `hot_next_ms`), for their instructions per call (user space only: a
//! system call's time in the kernel is not counted):
//!
//! ```text
//! valgrind --tool=callgrind --separate-threads=yes <bench binary> --calls 20
//! callgrind_annotate --inclusive=yes callgrind.out.<pid>-01 | grep hot_
//! ```
//!
//! `--precise N` takes N precise readings (`hot_precise`), for the
//! instructions of one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use flakeid::{Clock, Generator, Layout, MonotonicClock};

/// The name the refresh thread runs under.
const THREAD_NAME: &str = "flakeid-clock";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count = |flag: &str| -> Option<u64> {
        let at = args.iter().position(|a| a == flag)?;
        let n = args.get(at + 1).and_then(|n| n.parse().ok());
        Some(n.unwrap_or_else(|| panic!("{flag} takes a count")))
    };
    if let Some(n) = count("--loop") {
        id_loop(n);
        return;
    }
    if let Some(n) = count("--calls") {
        spaced_calls(n);
        return;
    }
    if let Some(n) = count("--precise") {
        precise_reads(n);
        return;
    }
    if !cfg!(target_os = "linux") {
        println!("idle: needs Linux's /proc; nothing measured");
        return;
    }
    let generator = default_generator();
    idle(&generator);
    first_after_idle(&generator);
    burst_after_idle(&generator);
}

/// The default generator on 41 ms + a 22-bit sequence: 4 M IDs per ms, so
/// no loop here reaches the sequence cap.
fn default_generator() -> Generator {
    let layout = Layout::builder()
        .epoch_ms(1_700_000_000_000)
        .timestamp_bits(41)
        .sequence(22)
        .build()
        .expect("a valid layout");
    Generator::builder(layout)
        .single_node()
        .build()
        .expect("a valid generator")
}

/// Where the process's clock reads the time: the TSC (`quanta`) or
/// `Instant`, whose precise readings differ in cost. Under valgrind the TSC
/// check can go either way, so instruction counts compare only runs on the
/// same source.
fn source() -> String {
    let clock = format!("{:?}", MonotonicClock::thread_free());
    let source = clock.split("source: ").nth(1).unwrap_or("?");
    source.split([',', ' ']).next().unwrap_or("?").to_owned()
}

#[inline(never)]
fn hot_next(generator: &Generator) -> u64 {
    generator.next_id().to_u64()
}

fn id_loop(n: u64) {
    let generator = default_generator();
    let mut all = 0;
    for _ in 0..n {
        all ^= black_box(hot_next(&generator));
    }
    println!("{n} IDs, xor {all:#x}, {}", source());
}

#[inline(never)]
fn hot_precise(clock: &MonotonicClock) -> u64 {
    clock.now_ms()
}

/// For callgrind: `n` precise readings (`hot_precise`), on a clock without
/// a cached reading.
fn precise_reads(n: u64) {
    let clock = MonotonicClock::thread_free();
    let mut all = 0;
    for _ in 0..n {
        all ^= black_box(hot_precise(&clock));
    }
    println!("{n} precise readings, xor {all:#x}, {}", source());
}

#[inline(never)]
fn hot_2ms_after(generator: &Generator) -> u64 {
    generator.next_id().to_u64()
}

#[inline(never)]
fn hot_300ms_after(generator: &Generator) -> u64 {
    generator.next_id().to_u64()
}

#[inline(never)]
fn hot_next_ms(generator: &Generator) -> u64 {
    generator.next_id().to_u64()
}

/// For callgrind, one function per kind of call: `n` calls 2 ms after the
/// previous one (`hot_2ms_after`), then `n` times a call 300 ms after the
/// previous one (`hot_300ms_after`) followed by one as the next millisecond
/// begins (`hot_next_ms`).
fn spaced_calls(n: u64) {
    let generator = default_generator();
    let clock = MonotonicClock::thread_free();
    let mut all = 0;
    for _ in 0..n {
        std::thread::sleep(Duration::from_millis(2));
        all ^= black_box(hot_2ms_after(&generator));
    }
    for _ in 0..n {
        std::thread::sleep(Duration::from_millis(300));
        all ^= black_box(hot_300ms_after(&generator));
        let ms = clock.now_ms();
        while clock.now_ms() <= ms {
            std::hint::spin_loop();
        }
        all ^= black_box(hot_next_ms(&generator));
    }
    println!("{n} calls of each kind, xor {all:#x}, {}", source());
}

/// What the kernel counts for one thread.
#[derive(Debug, Clone, Copy)]
struct ThreadCounts {
    /// Voluntary context switches: each a wake-up after a sleep or a park.
    voluntary: u64,
    involuntary: u64,
    /// On-CPU time (schedstat).
    cpu_ns: u64,
    /// User plus system time in clock ticks (stat).
    ticks: u64,
}

/// The refresh thread's id, by its name.
fn refresh_tid() -> Option<String> {
    std::fs::read_dir("/proc/self/task").ok()?.find_map(|task| {
        let task = task.ok()?;
        let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
        (comm.trim() == THREAD_NAME).then(|| task.file_name().to_string_lossy().into_owned())
    })
}

fn thread_counts(tid: &str) -> ThreadCounts {
    let dir = format!("/proc/self/task/{tid}");
    let status = std::fs::read_to_string(format!("{dir}/status")).expect("status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .expect("a context switch count")
    };
    let schedstat = std::fs::read_to_string(format!("{dir}/schedstat")).expect("schedstat");
    let cpu_ns = schedstat
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("on-CPU ns");
    let stat = std::fs::read_to_string(format!("{dir}/stat")).expect("stat");
    // Fields after the command name (which may hold spaces), from field 3 on:
    // utime and stime are fields 14 and 15.
    let after_name = &stat[stat.rfind(')').expect("stat") + 2..];
    let fields: Vec<u64> = after_name
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    ThreadCounts {
        voluntary: field("voluntary_ctxt_switches:"),
        involuntary: field("nonvoluntary_ctxt_switches:"),
        cpu_ns,
        ticks: fields[11] + fields[12],
    }
}

fn idle(generator: &Generator) {
    let busy_until = Instant::now() + Duration::from_millis(200);
    let mut issued = 0u64;
    while Instant::now() < busy_until {
        for _ in 0..256 {
            black_box(generator.next_id());
        }
        issued += 256;
    }
    println!("idle: {issued} IDs in 200 ms, then none");
    // Looked up once it has run: a new thread names itself when it starts.
    let tid = refresh_tid().expect("the refresh thread is running");
    let report = |what: &str, secs: f64, from: ThreadCounts, to: ThreadCounts| {
        let wakeups = (to.voluntary - from.voluntary) as f64;
        let cpu_ms = (to.cpu_ns - from.cpu_ns) as f64 / 1e6;
        println!(
            "  {what}: {:.1} wake-ups/s ({} voluntary, {} involuntary switches in {secs} s), \
             CPU {:.3} ms/s = {:.4}% of a core ({} clock ticks of user+system time)",
            wakeups / secs,
            to.voluntary - from.voluntary,
            to.involuntary - from.involuntary,
            cpu_ms / secs,
            cpu_ms / secs / 10.0,
            to.ticks - from.ticks,
        );
    };
    let start = thread_counts(&tid);
    std::thread::sleep(Duration::from_secs(1));
    let settled = thread_counts(&tid);
    report("first second", 1.0, start, settled);
    std::thread::sleep(Duration::from_secs(5));
    let end = thread_counts(&tid);
    report("next 5 s", 5.0, settled, end);
}

/// Median, 10th and 90th percentile of `samples` (ns).
fn spread(samples: &mut [f64]) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.1), at(0.9))
}

/// One `next_id`, timed, after `pause` without a call.
fn timed_after(generator: &Generator, pause: Duration) -> f64 {
    std::thread::sleep(pause);
    let start = Instant::now();
    black_box(generator.next_id());
    start.elapsed().as_nanos() as f64
}

/// Nanoseconds per precise reading (`now_ms` without a cached reading).
fn precise_read_ns() -> f64 {
    let clock = MonotonicClock::thread_free();
    let mut runs: Vec<f64> = (0..11)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..1_000_000 {
                black_box(black_box(&clock).now_ms());
            }
            start.elapsed().as_nanos() as f64 / 1e6
        })
        .collect();
    spread(&mut runs).0
}

/// One `next_id`, timed, as soon as the clock's millisecond after `ms`
/// begins: the first call of a millisecond that follows one with a call.
fn timed_in_next_ms(generator: &Generator, ms: u64) -> f64 {
    // A clock without a cached reading: reading it asks the refresh thread
    // for nothing.
    let clock = MonotonicClock::thread_free();
    while clock.now_ms() <= ms {
        std::hint::spin_loop();
    }
    let start = Instant::now();
    black_box(generator.next_id());
    start.elapsed().as_nanos() as f64
}

fn first_after_idle(generator: &Generator) {
    let precise = precise_read_ns();
    let clock = MonotonicClock::thread_free();
    // Warm: the code and the generator in cache.
    for _ in 0..20 {
        timed_after(generator, Duration::from_millis(2));
    }
    let mut steady: Vec<f64> = (0..300)
        .map(|_| timed_after(generator, Duration::from_millis(2)))
        .collect();
    let (mut after_idle, mut next_ms): (Vec<f64>, Vec<f64>) = (0..40)
        .map(|_| {
            let first = timed_after(generator, Duration::from_millis(300));
            (first, timed_in_next_ms(generator, clock.now_ms()))
        })
        .unzip();
    // The same pause with a thread that takes a precise reading every
    // millisecond meanwhile, on a clock without a cached reading (so the
    // refresh thread still rests): the clock's memory and code stay in
    // cache, as a refresh thread that never rests keeps them.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut warm: Vec<f64> = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                black_box(clock.now_ms());
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let warm = (0..40)
            .map(|_| timed_after(generator, Duration::from_millis(300)))
            .collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        warm
    });
    let (s50, s10, s90) = spread(&mut steady);
    let (i50, i10, i90) = spread(&mut after_idle);
    let (n50, n10, n90) = spread(&mut next_ms);
    let (w50, w10, w90) = spread(&mut warm);
    println!("first ID after idle (one precise read: {precise:.1} ns):");
    println!(
        "  2 ms after the last call: median {s50:.0} ns (p10 {s10:.0}, p90 {s90:.0}), 300 calls"
    );
    println!(
        "  300 ms after the last call: median {i50:.0} ns (p10 {i10:.0}, p90 {i90:.0}), 40 calls"
    );
    println!(
        "  difference of medians: {:.0} ns = {:.1} precise reads",
        i50 - s50,
        (i50 - s50) / precise
    );
    println!(
        "  the call after it, first in the next ms: median {n50:.0} ns (p10 {n10:.0}, p90 {n90:.0}), 40 calls"
    );
    println!(
        "  300 ms after the last call, the clock kept in cache meanwhile: median {w50:.0} ns (p10 {w10:.0}, p90 {w90:.0}), 40 calls"
    );
}

/// IDs a loop gets in 2 ms, after `pause` without a call.
fn burst(generator: &Generator, pause: Duration) -> f64 {
    std::thread::sleep(pause);
    let start = Instant::now();
    let until = start + Duration::from_millis(2);
    let mut issued = 0u64;
    while Instant::now() < until {
        for _ in 0..64 {
            black_box(generator.next_id());
        }
        issued += 64;
    }
    issued as f64
}

fn burst_after_idle(generator: &Generator) {
    let (mut steady, mut after_idle): (Vec<f64>, Vec<f64>) = (0..20)
        .map(|_| {
            let idle = burst(generator, Duration::from_millis(300));
            (burst(generator, Duration::ZERO), idle)
        })
        .unzip();
    let (s50, s10, s90) = spread(&mut steady);
    let (i50, i10, i90) = spread(&mut after_idle);
    println!("IDs in a loop's first 2 ms:");
    println!("  right after another loop: median {s50:.0} (p10 {s10:.0}, p90 {s90:.0}), 20 loops");
    println!(
        "  after 300 ms without a call: median {i50:.0} (p10 {i10:.0}, p90 {i90:.0}), 20 loops"
    );
}
