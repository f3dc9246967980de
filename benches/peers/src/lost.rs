//! The `lost` view: compare-and-swaps that lost a race, per issued ID, for
//! the default generator and the floor loop.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::Ordering;

use flakeid::Generator;

use crate::contenders::Flakeid;
use crate::floor::Floor;
use crate::layouts::{THREADS, wide_layout};
use crate::runner::run_for_iters;
use crate::settings::Settings;

/// Lost compare-and-swaps per issued ID at one thread count.
pub struct Lost {
    pub threads: usize,
    /// The default `Generator`, from its counters (`Stats::lost_races`).
    pub flakeid: f64,
    /// The floor loop, counting its own.
    pub floor: f64,
}

/// Contention made visible: compare-and-swaps that lost a race, per issued
/// ID, at each thread count. Counted in passes of their own, not in the
/// timed ones: the generator's counters add one shared increment per call,
/// so its figure here is from slightly busier runs than the cost view's.
pub fn lost_races(settings: &Settings) -> Vec<Lost> {
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

/// The view's section of the report, if it ran.
pub fn write_section(md: &mut String, lost: &[Lost]) {
    if lost.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Contention: lost compare-and-swaps per issued ID\n\n\
         Counted in passes of their own (not the timed ones): the default `Generator` \
         through its counters (`Stats::lost_races`; the counters add one shared \
         increment per call), the floor loop by itself. What these figures can and \
         cannot say about a machine with more cores: `benches/README.md`.\n\n\
         | threads | flakeid `Generator` | floor (no backoff) |\n|---:|---:|---:|"
    );
    for l in lost {
        let _ = writeln!(md, "| {} | {:.3} | {:.3} |", l.threads, l.flakeid, l.floor);
    }
}
