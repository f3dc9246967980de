//! The `cap` view: each generator at full speed on a 12-bit sequence (4,096
//! IDs per ms), every ID kept and checked, and the CPU time it took.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::contenders::{Contender, label};
use crate::layouts::THREADS;
use crate::report::{cell, cores};
use crate::runner::run_for_time;
use crate::settings::Settings;

/// IDs per ms a 12-bit sequence allows.
const CAPACITY_PER_MS: f64 = 4096.0;

/// One run at the sequence cap.
pub struct CapRun {
    pub threads: usize,
    /// Share of 4,096 IDs per ms actually issued, over the ms the run spans.
    pub share: f64,
    /// CPU time of all threads over wall time: cores kept busy.
    pub cores: Option<f64>,
    /// The busiest thread's CPU time over wall time.
    pub max_thread: Option<f64>,
    /// No duplicate, and each thread's IDs increasing.
    pub sound: bool,
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

pub trait CapSweep {
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

/// The view's section of the report, if it ran.
pub fn write_section(md: &mut String, cap: &[(&'static str, Vec<CapRun>)]) {
    if cap.is_empty() {
        return;
    }
    let cores = cores();
    let _ = writeln!(
        md,
        "\n## At the cap: Twitter layout (12-bit sequence, 4,096 IDs per ms)\n\n\
         Each cell: share of the capacity issued in the whole ms of the run (the \
         first and last ms are partly outside it) / cores kept busy \
         (CPU time of all threads over wall time) / the busiest thread's CPU share. \
         On this machine {cores} cores are the most there is; a thread that spins while \
         it waits shows 100% alone, or its share of {cores} cores. ✗ marks a duplicate \
         or an out-of-order ID.\n"
    );
    let _ = writeln!(
        md,
        "| generator | 1 thread | 2 | 4 | 8 | 16 |\n|---|---|---|---|---|---|"
    );
    for (key, runs) in cap {
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
