//! The crate's tests that need its internals across modules: the lease
//! keeper stepped by hand on an in-process store, and a simulated fleet of
//! leased generators. Compiled for `cargo test` only; the unit tests of one
//! module stay in that module.

mod fleet_sim;
mod keeper;
mod memory;
