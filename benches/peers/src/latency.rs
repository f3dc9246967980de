//! The `latency` view: every call timed with two TSC reads, exact
//! percentiles over all threads' calls.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Duration;

use flakeid::report::quantile;

use crate::contenders::{Contender, label};
use crate::layouts::THREADS;
use crate::runner::run_for_time;

#[derive(Clone, Copy)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
}

/// At most this many samples per thread and run.
const MAX_SAMPLES: usize = 2_000_000;

pub fn latencies<G: Contender + ?Sized>(g: &G, threads: usize, duration: Duration) -> Percentiles {
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
    let mut at =
        |q: f64| quantile(&mut all, q).map_or(f64::NAN, |v| clock.delta_as_nanos(0, v) as f64);
    Percentiles {
        p50: at(0.5),
        p99: at(0.99),
        p999: at(0.999),
    }
}

/// The cost of the two counter reads around each call.
pub fn timer_overhead_ns() -> f64 {
    let clock = quanta::Clock::new();
    let mut samples: Vec<u64> = (0..100_000)
        .map(|_| {
            let start = clock.raw();
            clock.raw().saturating_sub(start)
        })
        .collect();
    let median = quantile(&mut samples, 0.5).expect("100,000 samples");
    clock.delta_as_nanos(0, median) as f64
}

/// The view's section of the report, if it ran; `timer_ns` is what the two
/// reads around each call cost.
pub fn write_section(
    md: &mut String,
    latency: &[(&'static str, Vec<(usize, Percentiles)>)],
    timer_ns: f64,
) {
    if latency.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Latency per call under contention\n\n\
         p50 / p99 / p99.9 in ns, all threads' calls together, same layouts as the \
         throughput table; each includes about {:.0} ns of timer reads. With more \
         threads than cores, the tail includes time a thread was descheduled.\n",
        timer_ns
    );
    let _ = writeln!(
        md,
        "| generator | 1 thread | 2 | 4 | 8 | 16 |\n|---|---|---|---|---|---|"
    );
    for (key, runs) in latency {
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
