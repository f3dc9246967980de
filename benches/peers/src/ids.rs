//! The `id` view (criterion): formatting, parsing and decoding an `Id`,
//! with uuid's as a reference.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::SystemTime;

use criterion::Criterion;
use flakeid::{Generator, Id, Layout};

use crate::report::{cell, estimate_ns};

/// The criterion group `id/<operation>`.
pub fn bench(c: &mut Criterion) {
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

/// The view's section of the report, from the results criterion wrote
/// since `since`.
pub fn write_section(md: &mut String, since: SystemTime) {
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
        let _ = writeln!(md, "| {key} | {} |", cell(estimate_ns("id", key, since), 1));
    }
}
