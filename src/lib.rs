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
//! - Node ids have no default: for a layout with node fields, `build` refuses
//!   ([`BuildError::NodeIdNotSet`]) until the node id is configured, leased,
//!   or declared the only one ([`Builder::single_node`]), because two
//!   replicas that both forgot it issue the same IDs.
//! - Around generation: [`Generator::health`] for readiness probes; an event
//!   hook ([`Builder::on_event`], the [`events`] module, with `tracing` and
//!   `metrics` hooks) for clocks behind, waits, lease and storage trouble;
//!   [`Layout`] as configuration text (`FromStr`, `Display`, serde); time
//!   ranges of IDs for SQL ([`Layout::first_id_at`]); `BIGINT` columns
//!   through the `postgres-types` and `sqlx` features.
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
//! # Layouts
//!
//! A `Layout` is the bit plan of an ID. Five presets:
//!
//! | preset | bits, high to low | epoch | unit | capacity per node | last instant | IDs below 2^63 until |
//! |---|---|---|---|---|---|---|
//! | `Layout::twitter()` | 1 unused, 41 time, 5 datacenter, 5 worker, 12 sequence | 2010-11-04 | 1 ms | 4,096/ms | 2080-07-10 | always |
//! | `Layout::discord()` | 42 time, 5 worker, 5 process, 12 sequence | 2015-01-01 | 1 ms | 4,096/ms | 2154-05-15 | 2084-09-06 |
//! | `Layout::instagram(epoch)` | 41 time, 13 shard, 10 sequence | yours | 1 ms | 1,024/ms | epoch + 69.7 y | epoch + 34.8 y |
//! | `Layout::sonyflake()` | 1 unused, 39 time, 8 sequence, 16 machine | 2014-09-01 | 10 ms | 256/10 ms | 2188-11-16 | always |
//! | `Layout::js_safe()` | 11 unused, 41 time, 6 worker, 6 sequence | 2024-01-01 | 1 ms | 64/ms | 2093-09-06 | always; every ID ≤ 2^53 − 1 |
//!
//! Custom layouts take any field order (Sonyflake's sequence sits above its
//! machine id; the multi-clock scheme puts a clock id above the machine id):
//!
//! ```
//! use flakeid::Layout;
//!
//! # fn main() -> Result<(), flakeid::LayoutError> {
//! let layout = Layout::builder()
//!     .epoch_ms(1_600_000_000_000)
//!     .timestamp_bits(41)
//!     .clock_id(4)
//!     .node("machine", 8)
//!     .sequence(10)
//!     .build()?;
//! assert_eq!(layout.capacity_per_tick(), 1024);
//! # Ok(())
//! # }
//! ```
//!
//! Decoding works for any layout:
//!
//! ```
//! use flakeid::Layout;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let layout = Layout::discord();
//! let decoded = layout.decode("175928847299117063".parse()?)?;
//! assert_eq!(decoded.to_string(), "2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7");
//! # Ok(())
//! # }
//! ```
//!
//! # Policies
//!
//! When a tick's sequence is used up (`OnExhausted`):
//!
//! | policy | does | like |
//! |---|---|---|
//! | `Wait` (default) | waits for the next tick: spins briefly, yields, then sleeps | Twitter, most generators |
//! | `Borrow { max_ahead }` | moves the timestamp ahead of the clock, up to `max_ahead`, then waits | yitter, Baidu uid-generator |
//! | `Error` | `try_next_id` returns `SequenceExhausted` | the Go seed generator |
//! | `NextClock` | moves to the next clock id within the tick | the multi-clock seed |
//!
//! When the clock reads earlier than the last timestamp (`OnClockBehind`):
//!
//! | policy | does | like |
//! |---|---|---|
//! | `Continue` (default) | keeps issuing on the last timestamp (a logical clock) | Sonyflake, TSID |
//! | `Wait { max }` | waits up to `max` for the clock to catch up, then reports | Meituan Leaf (5 ms) |
//! | `Error` | `try_next_id` returns `ClockBehind` | Twitter's original |
//! | `NextClock` | bumps the clock id and issues at the real, earlier time | the multi-clock seed |
//!
//! `try_next_id` returns the errors a policy reports; `next_id` panics on them,
//! and on a clock past the layout's last instant, and on nothing else (it waits
//! for storage and leases), so use `try_next_id` with the `Error` and
//! `Wait { max }` policies. `poll_id` never waits. Each tick's sequence can
//! start at a random value below a bound (`random_start`), so low traffic does
//! not make every ID even and skew `id % shards`.
//!
//! # Clocks
//!
//! [`MonotonicClock`] (the default) reads the TSC through `quanta`, anchored to
//! the wall clock and never going backwards, and serves the generator's fast
//! path a cached millisecond that one thread per process refreshes; its docs
//! say what IDs' timestamps can lag and when the precise clock is read.
//! [`MonotonicClock::thread_free`] is the same clock without the thread.
//! [`SystemClock`] is the wall clock itself (pair it with an
//! [`OnClockBehind`] policy); [`ManualClock`] is set by hand, for tests and
//! simulations; any [`Clock`] can be injected.
//!
//! # Node ids across machines
//!
//! IDs from different processes are unique only if their node ids are. A
//! `Lease` on etcd or Redis (features `etcd`, `redis`) leases one per
//! process, with fencing; a StatefulSet's pod ordinal or an environment
//! variable ([`node_id`]) serve where something else assigns them. The
//! `lease` module docs (features `etcd`, `redis`) explain the lease protocol, what it
//! guarantees and assumes, and what it costs on real servers.
//!
//! # Restart safety
//!
//! A monotonic clock protects a generator only while its process lives. With
//! [`Builder::persist`], a background writer saves a high-water mark ahead of
//! use, and a restarted generator starts after it, even with the clock set
//! back: the [`persist`] module docs say how, with what storage, and where the
//! guarantee ends.
//!
//! # String forms
//!
//! `Display` and `FromStr` use decimal. Three more forms print into a stack
//! buffer (no allocation) and parse back with a `ParseIdError` that says what is
//! wrong: `Empty`, `TooLong { length, max }`, `InvalidCharacter { position,
//! character }` or `Overflow`.
//!
//! | form | method | alphabet | width | sorts as the number |
//! |---|---|---|---|---|
//! | decimal | `to_string()`, `parse()` | `0-9` | 1–20 | no (`"9" > "10"`) |
//! | hex | `to_hex()`, `Id::parse_hex` | `0-9a-f` (parses either case) | 16, zero-padded | yes |
//! | Crockford base32 | `to_base32()`, `Id::parse_base32` | `0-9A-Z` without `I L O U` (parses either case; `I`, `L` read as 1, `O` as 0) | 13, zero-padded | yes |
//! | base62 | `to_base62()`, `Id::parse_base62` | `0-9A-Za-z`, case-sensitive | 11, zero-padded | yes, in byte order |
//!
//! The padded forms keep their alphabets in ASCII order, so sorting the strings
//! byte by byte sorts the IDs. Base62 needs a case-sensitive, byte-wise
//! collation (`COLLATE "C"` in PostgreSQL); a case-insensitive one breaks its
//! order and even its uniqueness.
//!
//! ```
//! use flakeid::{Id, IdFormat};
//!
//! # fn main() -> Result<(), flakeid::ParseIdError> {
//! let id = Id::from_u64(175928847299117063);
//! assert_eq!(id.to_base62(), "0Czks0tP37X"); // URL-safe, 11 characters
//! assert_eq!(id.to_base32(), "04W86BB0G4007");
//! assert_eq!(id.to_hex(), "0271065ac1020007");
//! assert_eq!(Id::parse_base32("04w86bb0g4oo7")?, id);
//! assert_eq!(IdFormat::Base62.parse("0Czks0tP37X")?, id);
//! assert!(Id::from_u64(9).to_base62() < Id::from_u64(10).to_base62());
//! # Ok(())
//! # }
//! ```
//!
//! # serde
//!
//! With the `serde` feature, an `Id` is a **decimal string** in human-readable
//! formats (JSON, YAML, TOML, ...) and a **`u64`** in binary ones (CBOR,
//! postcard, bincode, ...). JavaScript holds integers exactly only up to
//! 2^53 − 1: `JSON.parse("175928847299117063")` gives `175928847299117060`, a
//! different ID. Reading accepts a decimal string or a non-negative integer in
//! human-readable formats (Rust, Go and Java services often send numbers; a
//! number a JavaScript program wrote may already be rounded), and an unsigned
//! integer in binary formats. Hex, base32 and base62 strings are refused, not
//! guessed at. `#[serde(with = "flakeid::serde::as_u64")]` makes a field a number
//! everywhere (`flakeid::serde::as_u64::option` for an `Option<Id>`).
//!
//! ```
//! # #[cfg(feature = "serde")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use flakeid::Id;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Order {
//!     id: Id,
//!     #[serde(with = "flakeid::serde::as_u64")]
//!     row: Id,
//! }
//!
//! let order = Order { id: Id::from_u64(175928847299117063), row: Id::from_u64(7) };
//! assert_eq!(serde_json::to_string(&order)?, r#"{"id":"175928847299117063","row":7}"#);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "serde"))]
//! # fn main() {}
//! ```
//!
//! # Public IDs (volume hiding)
//!
//! Sequential IDs let an outsider count: two order numbers a day apart tell how
//! many orders came in between, and an ID tells when and on which node it was
//! made. With the `public-ids` feature, `PublicIds` maps IDs to opaque public
//! ids and back with a keyed permutation of the 63-bit numbers: show the public
//! id, keep the ID.
//!
//! ```
//! # #[cfg(feature = "public-ids")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use flakeid::{Generator, Layout, PublicIds};
//!
//! let public_ids = PublicIds::new(*b"sixteen byte key"); // from your secret store
//! let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
//! let id = generator.next_id();
//! let public = public_ids.to_public(id)?;
//! println!("https://shop.example/orders/{}", public.to_base62());
//! assert_eq!(public_ids.from_public(public)?, id);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "public-ids"))]
//! # fn main() {}
//! ```
//!
//! **How.** An alternating Feistel network with 10 rounds, laid out like NIST
//! SP 800-38G's FF1 (halves of 31 and 32 bits, so the odd width needs no cycle
//! walking), with SipHash-2-4 under the 128-bit key as the round function. A
//! Feistel network is a permutation whatever its round function, so public ids
//! are unique and the round trip is exact by construction; Luby and Rackoff
//! (1988) showed that a few rounds of a pseudorandom function make a
//! pseudorandom permutation. `PublicIds::with_bits` gives other widths (53 for
//! `Layout::js_safe`, 64 for layouts that use every bit).
//!
//! **What it hides**, from anyone without the key: the order of IDs, the volume
//! between two of them, and their time and node fields.
//!
//! **What it does not hide**: that two requests name the same thing (public ids
//! are deterministic; use a key per resource type); what an observer learns by
//! other means (how many ids they were given, and when); and anything once the
//! key leaks. **It is not encryption** unless the key is secret and the
//! construction sound: the construction is standard, but this instance has no
//! published analysis. Treat it as obfuscation against counting; for
//! confidentiality, use a vetted FF1 implementation (NIST SP 800-38G Rev. 1) or
//! authenticated encryption with longer ids. Changing the key changes every
//! public id.
//!
//! # Async
//!
//! With the `tokio` feature, `next_id_async`, `try_next_id_async`,
//! `next_ids_async` and `try_next_ids_async` wait exactly where their blocking
//! twins do (the next tick, a clock behind under `OnClockBehind::Wait`, a
//! reservation being saved, a node-id lease being renewed) by sleeping on
//! tokio's timer, so the executor's threads keep running other tasks. What the
//! blocking call reports, they report at once.
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use flakeid::{Generator, Layout};
//!
//! let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
//! let id = generator.next_id_async().await;
//! let batch: Vec<_> = generator.next_ids_async(100).await.collect();
//! assert!(batch[0] > id);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "tokio"))]
//! # fn main() {}
//! ```
//!
//! # Command line
//!
//! With the `cli` feature, `flakeid` makes IDs, reads them back and measures
//! the generators (`cargo install flakeid --features cli`, or
//! `cargo run --release --features cli -- <command>` in this repository):
//!
//! ```sh
//! $ flakeid decode --layout discord 175928847299117063
//! 175928847299117063 2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7
//!
//! $ flakeid decode --layout discord --json 0Czks0tP37X
//! {"clock_id":0,"fields":{"process":0,"worker":1},"form":"base62","id":"175928847299117063","input":"0Czks0tP37X","layout":"discord","node_id":32,"sequence":7,"time":"2016-04-30T11:18:25.796Z","timestamp":41944705796,"unix_ms":1462015105796}
//!
//! $ flakeid gen -n 3 --layout discord --node-field worker=3 --format base62
//! 1sI7gFbGWhc
//! 1sI7gFbGWhd
//! 1sI7gFbGWhe
//!
//! $ grep -o 'order_id=[0-9]*' app.log | cut -d= -f2 | flakeid decode   # IDs from standard input
//! ```
//!
//! - `decode` reads IDs in any string form: `--format auto` (the default)
//!   tells the form by its shape, as [`Id::parse_any`] does (digits alone are
//!   decimal; else 16 characters hex, 13 Crockford base32, 11 base62; else a
//!   `0x` prefix hex). It prints the time (RFC 3339,
//!   UTC) and every field, and the form it read when that is not decimal;
//!   `--json` prints one object a line, with the ID as a string.
//! - `--layout` takes a preset (`twitter`, `discord`, `instagram` with
//!   Instagram's own 2011 epoch, `instagram:<epoch ms>`, `sonyflake`, `js-safe`)
//!   or a custom layout written like the `generator` line of a
//!   [state file](persist), for example
//!   `'epoch=1600000000000 unit=1 fields=timestamp:41,clock_id:4,machine:8,sequence:10'`
//!   (default: `twitter`).
//! - `gen` prints `-n` IDs for `--node` (or `--node-field name=value`) in
//!   `--format decimal|hex|base32|base62`; with `--public-key <32 hex digits>`
//!   it prints public ids, which `decode --public-key` reads back.
//! - `bench --threads 1,2,4 --duration 2s --svg chart.svg` measures the
//!   lock-free generator against its mutex twin, with live progress on standard
//!   error, and prints a markdown table; `--check` also keeps every ID and checks
//!   that none repeats.
//! - A bad argument or ID gets a message on standard error and a non-zero exit
//!   code; `decode` reports each ID it cannot read and goes on with the rest.
//!
//! # Patterns
//!
//! **One generator per process**, shared by every thread and task: a
//! `static` built on first use. Its node id comes from where the deployment
//! puts it (here an environment variable; see [`node_id`] and `Lease`).
//!
//! ```
//! use std::sync::LazyLock;
//! use flakeid::{Generator, Id, Layout, node_id};
//!
//! static IDS: LazyLock<Generator> = LazyLock::new(|| {
//!     let layout = Layout::twitter();
//!     let node = node_id::from_env("FLAKEID_NODE_ID", &layout)
//!         .expect("FLAKEID_NODE_ID is this replica's node id (0-1023)");
//!     Generator::builder(layout)
//!         .node_id(node)
//!         .build()
//!         .expect("the layout and node id were checked above")
//! });
//!
//! fn new_order_id() -> Id {
//!     IDS.next_id()
//! }
//!
//! # fn main() {
//! # // SAFETY: the doc test is single-threaded up to here.
//! # unsafe { std::env::set_var("FLAKEID_NODE_ID", "7") };
//! let (a, b) = (new_order_id(), new_order_id());
//! assert!(a < b);
//! assert_eq!(IDS.layout().decode(a).map(|d| d.node_id()), Ok(7));
//! # }
//! ```
//!
//! **A web handler that never hangs.** `next_id` and `next_id_async` wait
//! out whatever stops them, which is right for a used-up millisecond and
//! wrong for a lapsed node-id lease: a handler would hang until the lease
//! store is back. Call `try_next_id` (or `try_next_id_async`, feature
//! `tokio`), which reports at once, answer 503 with `Retry-After` on an
//! error, and point the readiness probe at [`Generator::health`], so the
//! load balancer stops sending requests while the generator cannot issue.
//! `examples/web_handler/` is this pattern, compiled, with axum:
//!
//! ```text
//! async fn create_event(State(app): State<Arc<App>>) -> Result<Json<Event>, Failure> {
//!     match app.generator.try_next_id_async().await {
//!         Ok(id) => Ok(Json(Event { id })),
//!         Err(e) => Err(unavailable(&e)), // 503, Retry-After: 1
//!     }
//! }
//!
//! async fn ready(State(app): State<Arc<App>>) -> (StatusCode, String) {
//!     let health = app.generator.health();
//!     let code = if health.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
//!     (code, health.to_string())
//! }
//! ```
//!
//! **flakeid or UUIDv7?** Both sort by creation time. Pick a 64-bit flakeid
//! ID when the ID is a database key (half the index of a UUID, a native
//! `BIGINT`, and over 100× cheaper to make: see `benches/results/peers.md`),
//! when you want to decode the time and the issuing node from it, or when
//! IDs must be dense enough to count per millisecond. Pick UUIDv7 when IDs
//! are made where no node id can be assigned (browsers, phones, offline
//! clients): its 74 random bits need no coordination, while flakeid's
//! uniqueness rests on distinct node ids (configured, or leased with
//! the [`lease`] module). Neither hides volume by itself; flakeid's
//! public ids do (feature `public-ids`).
//!
//! # Examples
//!
//! - `examples/web_handler/`: axum handlers handing out IDs and public ids,
//!   a crate of its own so that axum is not a dependency of this one
//!   (`cargo run -p flakeid-web-handler`).
//! - `examples/bulk_insert/`: 100,000 rows into PostgreSQL with `next_ids`
//!   batches and multi-row `INSERT`s, a crate of its own for tokio-postgres
//!   (`DATABASE_URL=... cargo run --release -p flakeid-bulk-insert`).
//! - `examples/decode_logs.rs`: finds IDs in log lines and decodes them.
//! - `examples/lease_measure.rs`: the lease numbers (in the `lease` module docs), measured on
//!   real etcd and Redis servers it starts itself.
//!
//! # Verification
//!
//! How the guarantees are checked: `loom-tests/README.md` (loom models of
//! every policy, the lease fence and persistence; the fleet simulation; stress
//! tests; Miri) and `fuzz/README.md` (the fuzz targets, among them a reference
//! model written from these docs alone). How speed is measured:
//! `benches/README.md`.
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
//! - `postgres-types`: `ToSql` and `FromSql` for [`Id`] as a `BIGINT`, for
//!   rust-postgres and tokio-postgres; an ID above `i64::MAX` is an error, not
//!   a negative number (adds `postgres-types` and `bytes`; see the `sql` module).
//! - `sqlx`: sqlx's `Type`, `Encode` and `Decode` for [`Id`] on every database
//!   whose `i64` has them (PostgreSQL, MySQL, SQLite), checked the same way
//!   (adds `sqlx` without default features: sqlx-core, no driver; sqlx 0.9
//!   needs Rust 1.94).
//! - `diesel`: Diesel's `ToSql`, `FromSql`, `AsExpression` and `FromSqlRow`
//!   for [`Id`] as a checked `BigInt` on the PostgreSQL and MySQL backends
//!   (adds `diesel` with their backend types, no native library);
//!   `diesel-sqlite` adds the SQLite backend (which builds or links SQLite).
//! - `tracing`: [`events::Tracing`], an event hook that writes `tracing`
//!   events (adds `tracing`).
//! - `metrics`: [`events::Metrics`], an event hook that records counters and
//!   histograms through the `metrics` facade (adds `metrics`).
//!
//! Static node ids from an environment variable or a StatefulSet ordinal
//! ([`node_id`]) need no feature.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;
pub mod events;
mod fence;
mod generator;
mod id;
mod id_string;
mod layout;
// The loom models' way in to crate-private parts; never in a user's build.
pub mod lease;
#[cfg(flakeid_loom)]
#[doc(hidden)]
pub mod loom_hooks;
pub mod node_id;
pub mod persist;
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

pub use clock::{Clock, ManualClock, MonotonicClock, SystemClock};
pub use events::{Event, EventHook};
pub use generator::{
    AtomicCell, BuildError, Builder, CellGenerator, GenerateError, Generator, Health, IdBatch,
    IdGenerator, LockedCell, MutexGenerator, OnClockBehind, OnExhausted, StateCell, Stats,
};
pub use id::{ConvertIdError, Id, ParseIdError};
pub use id_string::{IdFormat, IdString, ParseAnyIdError};
pub use layout::{
    Decoded, Field, FieldError, FieldKind, Layout, LayoutBuilder, LayoutError, ParseLayoutError,
    Parts,
};
#[cfg(any(feature = "etcd", feature = "redis"))]
pub use lease::Lease;
pub use lease::LeaseError;
pub use node_id::NodeIdError;
pub use persist::{
    FileStore, OnInvalidState, Persist, RestartRule, SharedIoError, StateError, StateStore,
};
#[cfg(feature = "public-ids")]
#[cfg_attr(docsrs, doc(cfg(feature = "public-ids")))]
pub use public_id::{PublicIdError, PublicIds};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
