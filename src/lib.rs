//! Time-ordered, unique 64-bit IDs (the Snowflake family), generated from many
//! threads without locks.
//!
//! ```
//! use flakeid::{Generator, Layout};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let generator = Generator::builder(Layout::twitter()).node_id(42).build()?;
//! let id = generator.next_id();
//! let decoded = generator.layout().decode(id)?;
//! assert_eq!(decoded.node_id(), 42);
//! println!("{id} was made at {}", decoded); // 2026-11-22T07:15:42.123Z datacenter=1 worker=10 sequence=0
//! # Ok(())
//! # }
//! ```
//!
//! # Design
//!
//! - A [`Layout`] is the bit plan: an epoch, a timestamp of whole-millisecond
//!   units, named node fields, a sequence, and optionally a clock id, in an
//!   order the layout states. Presets reproduce Twitter, Discord, Instagram,
//!   Sonyflake, and a layout whose IDs JavaScript holds exactly.
//! - A [`Generator`] keeps its whole state in one cache-padded `AtomicU64`:
//!   the last ID it handed out. A call reads the clock, loads it, computes the
//!   successor (the next sequence value, or the first of a new tick) and
//!   installs it with one compare-and-swap, backing off after a lost race; the
//!   installed word is the ID. No path takes a lock.
//! - [`MutexGenerator`] applies the same transition function under a mutex. It
//!   is the baseline for benchmarks and the oracle for differential tests; the
//!   [`IdGenerator`] trait covers both.
//! - Time comes from a [`Clock`]. The default [`MonotonicClock`] reads the
//!   TSC through `quanta`, anchored to the wall clock and never going
//!   backwards, and serves the generator's fast path a cached reading that
//!   one thread per process refreshes each millisecond;
//!   [`SystemClock`] follows the wall clock; [`ManualClock`] is set by hand for
//!   tests and simulations.
//! - With [`Builder::persist`], a background writer saves a high-water mark of
//!   the timestamps ahead of use ([`Persist`], [`FileStore`]); a new tick is
//!   entered only below the saved mark.
//! - An [`Id`] prints and parses as decimal and, through [`IdFormat`], as
//!   hex, Crockford base32 and base62; those three are fixed-width and sort
//!   as the numbers do. Formatting fills a stack buffer ([`IdString`]).
//! - Policies say what happens when a tick's sequence runs out
//!   ([`OnExhausted`]: wait, borrow future ticks, report, or move to the next
//!   clock id) and when the clock reads behind ([`OnClockBehind`]: continue on
//!   the last timestamp, wait a bounded time, report, or bump the clock id).
//!
//! # Guarantees
//!
//! For one generator (and, with distinct node ids, across generators):
//!
//! 1. **Unique.** No two calls return the same ID. Across generators of one
//!    layout, IDs differ when the node ids differ.
//! 2. **Ordered.** IDs come out in the order their compare-and-swap succeeded,
//!    so each thread sees strictly increasing IDs, and of two calls that do not
//!    overlap in time the later gets the larger ID.
//! 3. **Time never runs backwards** inside the ID stream, whatever the clock does.
//! 4. **Bounded lead.** The generator never moves its timestamp past the
//!    latest clock reading plus the lead allowance (`OnExhausted::Borrow`'s
//!    `max_ahead`, otherwise zero). If the clock is then stepped back, the
//!    stored timestamp stays where it was and `OnClockBehind` decides. One
//!    exception, by choice: restarted with persistence and
//!    `OnExhausted::NextClock`, a generator whose clock reads behind the
//!    saved mark it starts after continues in the mark's tick under clock
//!    ids no predecessor used there, instead of waiting for the clock to
//!    reach it. That tick is at most one reservation window (as
//!    [`Persist::window`] says, lengthened for a store slower than it) past
//!    the latest clock reading or timestamp its predecessor had, so each
//!    quick restart with the clock still behind can add up to a window.
//! 5. **Bad input is an error, not a panic**: layouts, node ids, clock ids,
//!    strings and saved state are validated with typed errors
//!    ([`LayoutError`], [`FieldError`], [`BuildError`], [`NodeIdError`],
//!    [`ParseIdError`], [`StateError`]).
//! 6. **Restart-safe**, with [`Builder::persist`]: no ID with a timestamp
//!    after `T` is issued unless `T` was first saved durably, and a restarted
//!    generator starts after its predecessor's saved mark, so it never
//!    reissues an ID, even with the clock set back in between (see [`Persist`]).
//!
//! One policy gives up guarantees 2 and 3 by design: with
//! [`OnClockBehind::NextClock`], the ID after a clock step-back carries the
//! earlier time under a new clock id. It stays unique. A leased node id's
//! rotation after a rollback (`Lease::rotate_after_rollback`) does the same
//! under a fresh node id.
//!
//! `next_id` panics only where `try_next_id` would return an error: a policy
//! set to report, or a clock past the layout's last instant (see
//! [`Generator::next_id`]). With the default policies it never fails before the
//! layout's end of life.
//!
//! # Caveats
//!
//! - A 12-bit sequence caps a generator at 4,096 IDs per millisecond. Above
//!   that, `OnExhausted::Wait` waits for the next millisecond; use
//!   `OnExhausted::Borrow` for bursts or a layout with a wider sequence.
//! - Uniqueness across machines rests on distinct node ids: assign them with
//!   care (one per process, never reused while the old holder may live), or
//!   lease them from etcd or Redis (features `etcd`, `redis`): a leased
//!   generator issues only while its lease is proven valid, and each holder
//!   of a node id starts after the high-water mark its predecessors left in
//!   the store.
//! - Without [`Builder::persist`], a restarted process whose wall clock was
//!   stepped back can reissue IDs its predecessor issued: the monotonic clock
//!   protects only within one process.
//! - With persistence, a restart after a crash treats the whole reserved
//!   window (1 s by default, at most an hour) as used: the first ID may wait
//!   for the clock to pass it, depending on the policies. A saved mark more
//!   than a day (plus the `Borrow` allowance) ahead of the clock, or past the
//!   layout's end, fails the build instead of a wait that long.
//!
//! # Feature flags
//!
//! The default build depends only on `crossbeam-utils` and `quanta`.
//!
//! - `serde`: `Serialize` and `Deserialize` for [`Id`]: a decimal string in
//!   human-readable formats (JavaScript rounds integers above 2^53), a `u64`
//!   in binary ones; [`serde::as_u64`] writes a number everywhere.
//! - `public-ids`: [`PublicIds`], a keyed permutation that turns IDs into
//!   volume-hiding public ids and back (adds `siphasher`).
//! - `tokio`: [`Generator::next_id_async`] and its siblings wait on tokio's
//!   timer instead of blocking the thread (adds `tokio` with `time`).
//! - `cli`: the `flakeid` command: `gen`, `decode`, `bench` (adds `clap`
//!   and `serde_json`; turns on `public-ids`).
//! - `etcd`: node ids leased from etcd, with fencing (`Lease::etcd`,
//!   `Builder::lease`). Building it needs `protoc` (Debian:
//!   `protobuf-compiler`) for etcd-client's gRPC code.
//! - `redis`: node ids leased from Redis, with fencing (`Lease::redis`).
//!
//! Static node ids from an environment variable or a StatefulSet ordinal
//! ([`node_id`]) need no feature.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;
mod error;
mod fence;
mod generator;
mod id;
mod id_string;
mod layout;
// The loom models' way in to crate-private parts; never in a user's build.
#[cfg(any(feature = "etcd", feature = "redis"))]
mod lease;
#[cfg(flakeid_loom)]
#[doc(hidden)]
pub mod loom_hooks;
pub mod node_id;
mod persist;
mod primitive;
#[cfg(feature = "public-ids")]
mod public_id;
// Not API: what the `flakeid` command and the peers bench's report share
// (see the module's docs).
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod report;
mod rfc3339;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod serde;

pub use clock::{Clock, ManualClock, MonotonicClock, SystemClock};
pub use error::{
    BuildError, ConvertIdError, FieldError, GenerateError, LayoutError, LeaseError, NodeIdError,
    ParseIdError, StateError,
};
pub use generator::{
    Builder, Generator, IdBatch, IdGenerator, MutexGenerator, OnClockBehind, OnExhausted, Stats,
};
pub use id::Id;
pub use id_string::{IdFormat, IdString};
pub use layout::{Decoded, Field, FieldKind, Layout, LayoutBuilder, Parts};
#[cfg(any(feature = "etcd", feature = "redis"))]
pub use lease::Lease;
pub use persist::{FileStore, InvalidState, Persist, RestartRule, StateStore};
#[cfg(feature = "public-ids")]
#[cfg_attr(docsrs, doc(cfg(feature = "public-ids")))]
pub use {error::PublicIdError, public_id::PublicIds};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
