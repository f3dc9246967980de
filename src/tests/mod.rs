//! The crate's tests that need its internals across modules: both
//! generators behind a lease's fence, the lease keeper stepped by hand on
//! an in-process store, and a simulated fleet of leased generators; and a
//! clock of queued readings the generators' unit tests share. Compiled for
//! `cargo test` only; the unit tests of one module stay in that module.

mod fenced;
mod fleet_sim;
mod keeper;
mod memory;
// Miri builds neither the model nor its checker (Cargo.toml).
#[cfg(not(miri))]
mod model;
mod readings;

pub(crate) use readings::Readings;
