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
//! - `lost/<threads>`: lost compare-and-swaps per issued ID.
//!
//! Each view is a module (what it measures and its section of the report);
//! `contenders` holds the generators, `runner` the threads that drive them,
//! `report` the page and its targets.

mod batch;
mod cap;
mod clocks;
mod contenders;
mod cost;
mod estimates;
mod floor;
mod ids;
mod latency;
mod layouts;
mod lost;
mod report;
mod runner;
mod settings;

use std::time::SystemTime;

use crate::contenders::{cap_contenders, wide_contenders};
use crate::latency::timer_overhead_ns;
use crate::lost::lost_races;
use crate::report::Results;
use crate::settings::Settings;

fn main() {
    let settings = Settings::from_env();
    let since = SystemTime::now();
    let load_before = report::load_average();
    let mut c = settings.criterion();

    let contenders = wide_contenders();
    cost::bench(&mut c, &contenders);
    batch::bench(&mut c);
    clocks::bench(&mut c);
    ids::bench(&mut c);

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
    let markdown = report::write(&results);
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
        .and_then(|()| {
            std::fs::write(
                dir.join("throughput.svg"),
                report::throughput_chart(&results),
            )
        });
    match written {
        Ok(()) => eprintln!("wrote {}/peers.md and throughput.svg", dir.display()),
        Err(e) => eprintln!("could not write the report to {}: {e}", dir.display()),
    }
}
