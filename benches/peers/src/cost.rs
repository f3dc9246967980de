//! The `cost` view (criterion): the time per ID of every generator at each
//! thread count, on layouts whose sequence is not the limit.

use std::fmt::Write as _;

use criterion::{Criterion, Throughput};

use crate::contenders::{ENTRIES, Sweep};
use crate::layouts::THREADS;
use crate::report::{Results, cell};

/// The criterion group `cost/<generator>/<threads>`.
pub fn bench(c: &mut Criterion, contenders: &[(&'static str, Box<dyn Sweep>)]) {
    let mut group = c.benchmark_group("cost");
    group.throughput(Throughput::Elements(1));
    for (key, g) in contenders {
        g.cost(&mut group, key);
    }
    group.finish();
}

/// The view's section of the report: throughput by thread count, and each
/// generator's time per ID on one thread.
pub fn write_section(md: &mut String, r: &Results) {
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
}
