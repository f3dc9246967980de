//! The report: a markdown page with every view's section, the targets, and
//! the throughput chart, from what this run measured.

use std::fmt::Write as _;
use std::time::SystemTime;

use flakeid::report::{self, cpu_model};
use flakeid::{Generator, Layout, SystemClock};

use crate::cap::CapRun;
use crate::contenders::ENTRIES;
pub use crate::estimates::estimate_ns;
use crate::latency::Percentiles;
use crate::layouts::THREADS;
use crate::lost::Lost;
use crate::{batch, cap, clocks, cost, ids, latency, lost};

/// What the run measured beyond criterion's own files.
pub struct Results {
    /// When the run began: criterion's results from before are not this run's.
    pub since: SystemTime,
    pub load_before: String,
    pub cap: Vec<(&'static str, Vec<CapRun>)>,
    pub latency: Vec<(&'static str, Vec<(usize, Percentiles)>)>,
    pub lost: Vec<Lost>,
    pub timer_ns: f64,
}

impl Results {
    /// ns per ID of `key` at `threads` in the cost view.
    pub fn cost_ns(&self, key: &str, threads: usize) -> Option<f64> {
        estimate_ns("cost", &format!("{key}/{threads}"), self.since)
    }

    /// Millions of IDs per second.
    pub fn throughput(&self, key: &str, threads: usize) -> Option<f64> {
        self.cost_ns(key, threads).map(|ns| 1e3 / ns)
    }
}

/// The whole report.
pub fn write(r: &Results) -> String {
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
    cost::write_section(&mut md, r);
    write_targets(&mut md, r);
    batch::write_section(&mut md, r.since);
    lost::write_section(&mut md, &r.lost);
    clocks::write_section(&mut md, r.since);
    ids::write_section(&mut md, r.since);
    cap::write_section(&mut md, &r.cap);
    latency::write_section(&mut md, &r.latency, r.timer_ns);
    md
}

/// The targets: flakeid against the floor, ferroid and its mutex twin, in
/// batches and at the cap, each with whether it was met.
fn write_targets(md: &mut String, r: &Results) {
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
    // One thread has no contention to win: the lead is under contention.
    target(
        "1 thread: default `Generator` vs ferroid atomic, each on its own default clock (≥ 1×)"
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
}

/// The cores this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The load averages over 1, 5 and 15 minutes, as the report shows them.
pub fn load_average() -> String {
    report::load_average().map_or_else(
        || "?".into(),
        |[one, five, fifteen]| format!("{one:.2} {five:.2} {fifteen:.2}"),
    )
}

/// The CPU, the cores, the kernel and the compiler.
fn machine() -> String {
    let cpu = cpu_model();
    let cores = cores();
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

/// `v` with `digits` decimals, or a dash if it was not measured.
pub fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// A measured ratio and whether it meets `target` (at least it, or at most
/// it): `("1.06×", "yes")`.
fn ratio_cell(v: Option<f64>, target: f64, at_least: bool) -> (String, &'static str) {
    match v {
        None => ("not measured".into(), "–"),
        Some(v) => {
            let met = if at_least { v >= target } else { v <= target };
            (format!("{v:.2}×"), if met { "yes" } else { "**no**" })
        }
    }
}

/// The chart: throughput by thread count, one line per generator.
pub fn throughput_chart(r: &Results) -> String {
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
