//! What the fuzz targets share with the fuzz crate's own tests, so that a
//! check runs under `cargo test` (seeded, deterministic) and under
//! libFuzzer from one copy.

pub mod reference;
