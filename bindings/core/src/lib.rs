//! The language-neutral core of flakeid's Python and Node packages.
//!
//! Each package converts its language's arguments into a [`Config`], calls a
//! [`Generator`], and turns an [`Error`] into its language's error by the
//! error's [`ErrorKind::code`]. What is decided once, here:
//!
//! - **The configuration**: a layout (a preset name or the library's spec
//!   text, [`parse_layout`]), a [`NodeSource`] (a number, fields, an
//!   environment variable, a StatefulSet ordinal, a single node, or a lease
//!   on etcd, Redis, Redis behind Sentinel, PostgreSQL or MySQL/MariaDB,
//!   [`LeaseConfig`]), the
//!   policies by name ([`on_exhausted`], [`on_clock_behind`]), durations
//!   ([`duration`]), persistence ([`PersistConfig`], [`restart_rule`]). The
//!   library's defaults and refusals hold: no node id, no generator
//!   (`NodeId`, detail `not_set`).
//! - **The errors**: [`ErrorKind`]'s table lists every code and what raises
//!   it; [`Error::detail`] refines `Lease`, `State`, `Layout` and `NodeId`.
//! - **Fork safety**: see [`Generator`'s docs](Generator#fork-safety).
//! - **Decoding, composing, string forms**: [`decode`], [`compose`],
//!   [`node_id_from_fields`], [`encode`], [`parse_id`], [`id_format`].
//!
//! # How a binding calls a generator
//!
//! Every call that issues IDs comes in two halves. The non-blocking half
//! (`*_now`) runs with the interpreter's lock held (Python's GIL, Node's
//! JavaScript thread): it is the hot path, a fork check (one relaxed load)
//! and the library's compare-and-swap. When it answers [`Blocked::Wait`],
//! the binding releases the lock and calls the blocking half (`*_blocking`)
//! with the same [`Wait`], on that thread (Python) or a worker thread
//! (Node). Releasing the lock costs more than an ID, so the hot path never
//! does.
//!
//! | call | `Wait` | waits for | reports |
//! |---|---|---|---|
//! | `next_id`, `next_ids` | [`Always`](Wait::Always) | the next tick, a clock behind under `wait`, a reservation, a fenced lease, a failing store, a forked child's claim | what a policy set to `error` reports, `ClockBehind` when `wait` runs out, `Expired`, `Forked`, `Closed` |
//! | `try_next_id`, `try_next_ids` | [`Report`](Wait::Report) | the next tick, a clock behind under `wait`, a reservation, a forked child's claim | as above, and `Fenced`, `Storage` |
//! | `poll_id`, `poll_ids` | [`Never`](Wait::Never) | a forked child's claim only | every stall: `SequenceExhausted`, `ClockBehind`, `Reserving`, `Storage`, `Fenced`, ... |
//!
//! Batches ([`Generator::fill_now`], [`Generator::fill_blocking`]) write
//! consecutive IDs into a `u64` slice: exactly its length under `Always`
//! and `Report`, at least one under `Never`.
//!
//! ```
//! use flakeid_bindings::{Blocked, Config, Error, Generator, NodeSource, Wait};
//!
//! /// A binding's `next_id`: the hot path, then the blocking half.
//! fn next_id(generator: &Generator) -> Result<u64, Error> {
//!     match generator.id_now(Wait::Always) {
//!         Ok(id) => Ok(id),
//!         Err(Blocked::Fail(e)) => Err(e),
//!         // Release the interpreter's lock around this call.
//!         Err(Blocked::Wait) => generator.id_blocking(Wait::Always),
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = Config::new("twitter")?;
//! config.node = NodeSource::Env("FLAKEID_DOC_NODE_ID".into());
//! # // SAFETY: the doc test is single-threaded up to here.
//! # unsafe { std::env::set_var("FLAKEID_DOC_NODE_ID", "7") };
//! let generator = Generator::build(config)?;
//! let (a, b) = (next_id(&generator)?, next_id(&generator)?);
//! assert!(a < b);
//! # Ok(())
//! # }
//! ```
//!
//! Closing ([`Generator::begin_close`], then [`Closing::finish`] without
//! the lock) releases a lease or saves the last mark at a time the
//! program chooses; dropping the generator does the same.
//!
//! # Features
//!
//! - `etcd`: leases on etcd (building needs `protoc`).
//! - `redis`: leases on Redis and Redis behind Sentinel.
//! - `postgres`: leases on PostgreSQL.
//! - `mysql`: leases on MySQL 8 and MariaDB 10.11.
//!
//! Without them, a [`NodeSource::Lease`] fails to build with `Config`.

mod config;
mod error;
mod fork;
mod generator;
mod ids;

pub use config::{
    Config, LeaseConfig, LeaseStore, NodeSource, PersistConfig, duration, on_clock_behind,
    on_exhausted, restart_rule,
};
pub use error::{Error, ErrorKind};
pub use fork::set_fork_detection_for_tests;
pub use generator::{Blocked, Closing, Generator, Health, Wait};
pub use ids::{
    Decoded, compose, decode, encode, id_format, node_id_from_fields, parse_id, parse_layout,
};

/// The library, for the types the configuration holds (`Layout`,
/// `OnExhausted`, `OnClockBehind`, `RestartRule`, `IdFormat`, `Parts`,
/// `Stats`).
pub use flakeid;
