//! # pg_flakeid: flakeid inside PostgreSQL
//!
//! Snowflake-style 64-bit IDs made by the database itself, usable as a
//! column's `DEFAULT`, from one lock-free generator per server:
//!
//! ```sql
//! CREATE EXTENSION pg_flakeid;
//! CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT flakeid_next_id(), item text);
//! ```
//!
//! - **One generator per server.** The library's packed timestamp and
//!   sequence word lives in shared memory; every backend builds a
//!   `flakeid::SharedGenerator` over it and advances it by compare-and-swap
//!   ([`shared`]). So the extension must be in `shared_preload_libraries`;
//!   without it every generating call is an error, never a per-backend
//!   generator.
//! - **No default node id.** `flakeid.node_id` unset is an error that says
//!   how to set it ([`settings`]).
//! - **Never back after a crash, a clock stepped back or a promotion.** A
//!   background worker reserves timestamps ahead of use in a WAL-logged
//!   sequence and publishes the reservation to shared memory only after its
//!   commit; backends issue nothing past it, and a restarted or promoted
//!   server starts its clock after it ([`worker`]).
//!
//! The SQL functions are in [`functions`]; the README in this directory has
//! the settings, the guarantees and what asynchronous replication can lose.

use pgrx::prelude::*;

pub mod functions;
pub mod lease;
pub mod settings;
pub mod shared;
pub mod worker;

::pgrx::pg_module_magic!(name = c"pg_flakeid", version = c"0.1.0");

/// Loaded by the postmaster (`shared_preload_libraries`): reserves the
/// shared memory and registers the worker. Loaded later by a backend
/// (`CREATE EXTENSION` alone): defines the settings only, and the
/// generating functions refuse to run.
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    let preloading = unsafe { pg_sys::process_shared_preload_libraries_in_progress };
    settings::define(preloading);
    if preloading {
        shared::init();
        worker::register();
    }
}

/// Required by `cargo pgrx test`, which this crate does not use (its tests
/// start their own servers: `tests/`).
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'pg_flakeid'"]
    }
}
