//! The `batch` view (criterion): `next_ids(n)` on one thread, against the
//! one peer with batches.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::SystemTime;

use criterion::{BenchmarkId, Criterion, Throughput};
use flakeid::{Generator, IdGenerator};

use crate::layouts::{BATCHES, batch_layout, snowflake_me_on};
use crate::report::{cell, estimate_ns};

/// The criterion group `batch/<generator>/<n>`.
pub fn bench(c: &mut Criterion) {
    let builder = Generator::builder(batch_layout()).single_node();
    let lock_free = builder.clone().build().expect("valid");
    let locked = builder.build_mutex().expect("valid");
    let snowflake_me = snowflake_me_on(38, 25);
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

/// The view's section of the report: ns per ID by batch size, from the
/// results criterion wrote since `since`.
pub fn write_section(md: &mut String, since: SystemTime) {
    let _ = writeln!(
        md,
        "\n## Batches: `next_ids(n)`, one thread\n\nns per ID, each ID taken from the batch \
     (38 ms + 25-bit sequence).\n\n| n | flakeid `Generator` | flakeid `MutexGenerator` | snowflake_me `next_ids_into` |\n|---:|---:|---:|---:|"
    );
    for n in BATCHES {
        let per =
            |k: &str| estimate_ns("batch", &format!("{k}/{n}"), since).map(|ns| ns / n as f64);
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} |",
            cell(per("flakeid"), 2),
            cell(per("flakeid-mutex"), 2),
            cell(per("snowflake_me"), 2)
        );
    }
}
