//! The reference-model comparison (`src/reference.rs`) under `cargo test`:
//! the named seeds in `corpus/reference`, then seeded pseudo-random inputs.
//! Deterministic: the base seed is fixed unless `FLAKEID_REFERENCE_SEED`
//! sets one; a failure prints the seed and the input that failed.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use flakeid_fuzz::reference::run;

/// splitmix64: a stream of pseudo-random words from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn run_reported(what: &str, data: &[u8]) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(data))) {
        eprintln!("failed on {what}: input {data:02x?}");
        resume_unwind(panic);
    }
}

#[test]
fn the_named_seeds_agree_with_the_model() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/reference");
    let mut seeds: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus/reference exists")
        .map(|entry| entry.unwrap().path())
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {dir}");
    for path in seeds {
        run_reported(&path.display().to_string(), &std::fs::read(&path).unwrap());
    }
}

#[test]
fn seeded_inputs_agree_with_the_model() {
    let base = std::env::var("FLAKEID_REFERENCE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let cases: u64 = std::env::var("FLAKEID_REFERENCE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    for case in 0..cases {
        let seed = base ^ case.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let mut rng = Rng(seed);
        let len = 16 + rng.next() % 400;
        let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        run_reported(
            &format!("seed {seed} (FLAKEID_REFERENCE_SEED={base}, case {case})"),
            &data,
        );
    }
}
