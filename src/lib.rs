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
//! # Contents
//!
//! ## Generators
//!
//! - [`Generator`]: the lock-free generator: how to call it (blocking,
//!   `try_`, polling, batches, async) and the patterns of use.
//! - [`MutexGenerator`]: the same transition under a mutex, the baseline of
//!   the benchmarks and the oracle of the differential tests.
//! - [`IdGenerator`]: the trait both implement.
//! - [`Builder`]: a generator's configuration (node id, clock, policies,
//!   persistence, lease, event hook); [`BuildError`].
//! - [`OnExhausted`]: what happens when a tick's sequence is used up.
//! - [`OnClockBehind`]: what happens when the clock reads behind the last
//!   timestamp.
//! - [`IdBatch`]: consecutive IDs reserved by one compare-and-swap.
//! - [`GenerateError`]: what a `try_` call reports.
//! - [`Health`]: whether a generator can issue, for readiness probes.
//! - [`Stats`]: a generator's counters.
//!
//! ## IDs
//!
//! - [`Id`]: a 64-bit ID, decimal in `Display` and `FromStr`;
//!   [`ParseIdError`], [`ConvertIdError`].
//! - [`IdFormat`]: the string forms (decimal, hex, Crockford base32,
//!   base62), their widths and sort order; [`IdString`] holds one without
//!   allocating; [`ParseAnyIdError`].
//! - [`PublicIds`] (feature `public-ids`): volume-hiding public ids, what
//!   they hide and what not; [`PublicIdError`].
//!
//! ## Layouts
//!
//! - [`Layout`]: the bit plan of an ID, its presets, decoding, and its text
//!   form ([`ParseLayoutError`]).
//! - [`LayoutBuilder`]: a custom layout in any field order; [`LayoutError`].
//! - [`Field`] and [`FieldKind`]: a layout's fields; [`FieldError`]: a value
//!   a field cannot hold, or a node field left out.
//! - [`Layout::first_shared_id`]: whether two generators, on the same
//!   layout or on different ones, can issue one same ID.
//! - [`Decoded`]: an ID read back (time, node fields, sequence, clock id);
//!   [`Parts`]: its raw field values.
//!
//! ## Clocks
//!
//! - [`Clock`]: where a generator's time comes from, and the cached reading
//!   of its fast path.
//! - [`MonotonicClock`] (the default), [`SystemClock`] (the wall clock),
//!   [`ManualClock`] (set by hand, for tests and simulations).
//!
//! ## Across processes and restarts
//!
//! - [`node_id`]: a node id from an environment variable or a StatefulSet's
//!   pod ordinal; [`NodeIdError`].
//! - [`lease`]: node ids leased from etcd, Redis, PostgreSQL or
//!   MySQL/MariaDB with fencing (`Lease`, features `etcd`, `redis`,
//!   `postgres` and `mysql`): the protocol, what it guarantees and
//!   assumes, what it costs; [`LeaseError`].
//! - [`persist`]: restart safety through a saved high-water mark:
//!   [`Persist`], [`FileStore`], [`StateStore`], [`RestartRule`],
//!   [`OnInvalidState`], [`StateError`], [`SharedIoError`].
//!
//! ## Around generation
//!
//! - [`events`]: the event hook ([`Event`], [`EventHook`]), with hooks that
//!   write `tracing` events and `metrics` records.
//! - [`serde`](mod@crate::serde) (feature `serde`): an `Id` as a decimal
//!   string or a number, and why.
//! - [`sql`] (features `postgres-types`, `sqlx`, `diesel`): an `Id` as a
//!   checked `BIGINT` column, for rust-postgres and tokio-postgres, sqlx and
//!   Diesel.
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
//! # Design
//!
//! - A [`Generator`] keeps its whole state in one cache-padded `AtomicU64`:
//!   the last ID it handed out. A call reads the clock, computes the
//!   successor and installs it with one compare-and-swap, backing off after
//!   a lost race; the installed word is the ID. No path takes a lock.
//!   [`MutexGenerator`] applies the same transition under a mutex.
//! - The word, not the clock, orders the IDs: a reading behind the stored
//!   timestamp never moves it back; [`OnClockBehind`] decides what happens.
//! - The default [`MonotonicClock`] serves the fast path a cached
//!   millisecond that one thread per process refreshes; every other
//!   decision reads the precise clock.
//! - A node id has no default: `build` refuses
//!   ([`BuildError::NodeIdNotSet`]) until it is configured, leased, or
//!   declared the only one ([`Builder::single_node`]), because two replicas
//!   that both forgot it issue the same IDs.
//! - Persistence and leases bound the ticks a generator may enter: a saved
//!   high-water mark ([`persist`]), a lease proven valid ([`lease`]).
//!
//! # Caveats
//!
//! - A 12-bit sequence caps a generator at 4,096 IDs per millisecond; above
//!   that, the default [`OnExhausted::Wait`] waits for the next one.
//! - Uniqueness across machines rests on distinct node ids: one per
//!   process, never reused while the old holder may live ([`node_id`],
//!   [`lease`]). Generators on different layouts are apart only when their
//!   bits keep them apart: [`Layout::first_shared_id`] tells whether two
//!   could ever issue one same ID.
//! - Without [`Builder::persist`], a restarted process whose wall clock was
//!   stepped back can reissue IDs its predecessor issued: the monotonic
//!   clock protects only within one process. With it, a restart after a
//!   crash treats the reserved window as used, so the first ID may wait
//!   ([`persist`]).
//! - After `fork()`, build generators in the process that uses them. One
//!   built before the fork and used in the child carries the parent's node
//!   id and state, so parent and child issue the same IDs, and its default
//!   clock's cached reading is no longer refreshed there
//!   ([`MonotonicClock`]). One built in the child is a generator like any
//!   other, with a clock of the child's own; it needs a node id no other
//!   process holds ([`lease`]). flakeid's Python and Node packages detect a
//!   generator inherited across a fork: they refuse it or, if its node id
//!   is leased, claim a fresh one in the child.
//!
//! # Feature flags
//!
//! The default build depends only on `crossbeam-utils` and `quanta`. Static
//! node ids ([`node_id`]) need no feature.
//!
//! - `serde`: `Serialize` and `Deserialize` for [`Id`] and [`Layout`],
//!   `Serialize` for [`IdString`] and [`Decoded`] ([`mod@crate::serde`];
//!   adds `serde`).
//! - `public-ids`: [`PublicIds`] (adds `siphasher`).
//! - `tokio`: [`Generator::next_id_async`] and its siblings wait on tokio's
//!   timer instead of blocking the thread (adds `tokio` with `time`).
//! - `cli`: the `flakeid` command: `gen`, `decode`, `bench` (adds `clap`
//!   and `serde_json`; turns on `public-ids` and `serde`).
//! - `etcd`: node ids leased from etcd (`Lease::etcd`, [`lease`]). Building
//!   it needs `protoc` (Debian: `protobuf-compiler`) for etcd-client's gRPC
//!   code.
//! - `redis`: node ids leased from Redis (`Lease::redis`, [`lease`]).
//! - `postgres`: node ids leased from a table on PostgreSQL
//!   (`Lease::postgres`, [`lease`]; adds tokio-postgres, and rustls with
//!   ring for TLS).
//! - `mysql`: node ids leased from a table on MySQL 8 or MariaDB 10.11
//!   (`Lease::mysql`, [`lease`]; adds mysql_async, with rustls and ring).
//! - `postgres-types`: `ToSql` and `FromSql` for [`Id`] as a `BIGINT`, for
//!   rust-postgres and tokio-postgres (adds `postgres-types` and `bytes`;
//!   [`sql`]).
//! - `sqlx`: sqlx's `Type`, `Encode` and `Decode` for [`Id`] on every
//!   database whose `i64` has them: PostgreSQL, MySQL, SQLite (adds
//!   sqlx-core, no driver; sqlx 0.9 needs Rust 1.94; [`sql`]).
//! - `diesel`: Diesel's `ToSql`, `FromSql`, `AsExpression` and `FromSqlRow`
//!   for [`Id`] on the PostgreSQL and MySQL backends (adds `diesel` with
//!   their backend types, no native library; [`sql`]); `diesel-sqlite` adds
//!   the SQLite backend, which builds or links SQLite.
//! - `tracing`: [`events::Tracing`], an event hook that writes `tracing`
//!   events (adds `tracing`).
//! - `metrics`: [`events::Metrics`], an event hook that records through the
//!   `metrics` facade (adds `metrics`).

#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;
mod error;
pub mod events;
mod fence;
mod generator;
mod id;
mod id_string;
mod layout;
pub mod lease;
// The loom models' way in to crate-private parts; never in a user's build.
#[cfg(flakeid_loom)]
#[doc(hidden)]
pub mod loom_hooks;
pub mod node_id;
pub mod persist;
// Lease bugs planted on purpose, for the tests that must catch them; never
// in a user's build.
#[cfg(flakeid_plant)]
#[doc(hidden)]
pub mod plant;
#[cfg(all(test, not(flakeid_plant)))]
mod plant;
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
#[cfg(any(feature = "postgres-types", feature = "sqlx", feature = "diesel"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "postgres-types", feature = "sqlx", feature = "diesel")))
)]
pub mod sql;
#[cfg(all(test, not(flakeid_loom)))]
mod tests;

pub use clock::{Clock, ManualClock, MonotonicClock, SystemClock};
pub use error::{BuildError, GenerateError, LeaseError, SharedIoError, StateError};
pub use events::{Event, EventHook};
pub use generator::{
    AtomicCell, Builder, CellGenerator, Generator, Health, IdBatch, IdGenerator, LeaseGrant,
    LockedCell, MutexGenerator, OnClockBehind, OnExhausted, SharedCell, SharedGenerator, StateCell,
    Stats,
};
pub use id::{ConvertIdError, Id, ParseIdError};
pub use id_string::{IdFormat, IdString, ParseAnyIdError};
pub use layout::{
    Decoded, Field, FieldError, FieldKind, Layout, LayoutBuilder, LayoutError, ParseLayoutError,
    Parts,
};
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub use lease::Lease;
pub use node_id::NodeIdError;
pub use persist::{FileStore, OnInvalidState, Persist, RestartRule, StateStore};
#[cfg(feature = "public-ids")]
#[cfg_attr(docsrs, doc(cfg(feature = "public-ids")))]
pub use public_id::{PublicIdError, PublicIds};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
