//! The generators: one shell over two state cells, its trait, its
//! configuration and its batches.
//!
//! - `mod.rs`: the shell, [`CellGenerator`], and its two faces, the
//!   lock-free [`Generator`] and the [`MutexGenerator`] twin; the
//!   [`IdGenerator`] trait.
//! - `cell.rs`: where the state word lives ([`AtomicCell`], [`LockedCell`]).
//! - `core.rs`: the engine both run: the fast path, the loop, waiting.
//! - `plan.rs`: the configuration compiled, and the state transition.
//! - `wait.rs` (and `wait_async.rs`, feature `tokio`): how long a waiting
//!   call pauses, or when it gives up.
//! - `builder.rs`, `batch.rs`, `policy.rs`, `telemetry.rs` (counters and the
//!   event hook), `health.rs`: what their names say. Their errors,
//!   [`BuildError`] and [`GenerateError`], live in `crate::error`, below
//!   every module that uses them.

mod batch;
mod builder;
mod cell;
mod core;
mod health;
mod plan;
mod policy;
mod telemetry;
mod wait;
#[cfg(feature = "tokio")]
mod wait_async;

use std::fmt;
use std::time::Duration;

pub(crate) use crate::error::GenerateError;
pub use batch::IdBatch;
pub use builder::Builder;
pub use cell::{AtomicCell, LockedCell, SharedCell, StateCell};
pub use health::Health;
pub use policy::{OnClockBehind, OnExhausted};
pub use telemetry::Stats;

use crate::clock::{Clock, MonotonicClock};
use crate::id::Id;
use crate::layout::Layout;
use builder::Components;
use core::Core;

/// An ID generator reading the clock `C` and keeping its state word in the
/// cell `S`. Two cells make the two generators, which share every method
/// here: [`Generator`] (an [`AtomicCell`]: lock-free, the one to use) and
/// [`MutexGenerator`] (a [`LockedCell`]: the same transitions under a mutex,
/// for measurements and tests). Write those names; this one serves code
/// generic over both.
///
/// ```
/// use flakeid::{Generator, Layout, ManualClock, MutexGenerator};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let builder = Generator::builder(Layout::twitter()).node_id(5).clock(ManualClock::new(1_700_000_000_000));
/// let lock_free: Generator<ManualClock> = builder.clone().build()?;
/// let locked: MutexGenerator<ManualClock> = builder.build_mutex()?;
/// assert_eq!(lock_free.next_id(), locked.next_id()); // the same methods, the same IDs
/// assert_eq!(lock_free.node_id(), locked.node_id());
/// # Ok(())
/// # }
/// ```
pub struct CellGenerator<C, S: StateCell> {
    /// The state word in its cell, the configuration and the clock; the
    /// word's layout is drawn on `Core::state`, its transitions in `plan.rs`.
    core: Core<C, S>,
}

/// The lock-free ID generator. Share it by reference (or `Arc`) across threads.
///
/// Every call is one compare-and-swap on one word in the common case; no path
/// takes a lock. It is a [`CellGenerator`] over an [`AtomicCell`], whose
/// methods it has. See the [crate docs](crate#guarantees) for what it
/// guarantees.
///
/// ```
/// use flakeid::{Generator, Layout};
/// use std::collections::HashSet;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter()).node_id(42).build()?;
/// let ids: Vec<_> = std::thread::scope(|s| {
///     let handles: Vec<_> = (0..4)
///         .map(|_| s.spawn(|| (0..1000).map(|_| generator.next_id()).collect::<Vec<_>>()))
///         .collect();
///     handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
/// });
/// assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 4000);
/// let decoded = generator.layout().decode(ids[0])?;
/// assert_eq!(decoded.node_id(), 42);
/// # Ok(())
/// # }
/// ```
///
/// # Waiting, reporting, polling
///
/// What a call does when it cannot issue at once is set by the policies
/// ([`OnExhausted`] for a used-up tick, [`OnClockBehind`] for a clock that
/// reads behind). `try_next_id` returns the errors a policy reports;
/// `next_id` panics on them, and on a clock past the layout's last instant,
/// and on nothing else (it waits for storage and leases), so use
/// `try_next_id` with the `Error` and `Wait { max }` policies. `poll_id`
/// never waits. Each tick's sequence can start at a random value below a
/// bound ([`Builder::random_start`]), so low traffic does not make every ID
/// even and skew `id % shards`.
///
/// # Async
///
/// With the `tokio` feature, `next_id_async`, `try_next_id_async`,
/// `next_ids_async` and `try_next_ids_async` wait exactly where their blocking
/// twins do (the next tick, a clock behind under `OnClockBehind::Wait`, a
/// reservation being saved, a node-id lease being renewed) by sleeping on
/// tokio's timer, so the executor's threads keep running other tasks. What the
/// blocking call reports, they report at once.
///
/// ```
/// # #[cfg(feature = "tokio")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use flakeid::{Generator, Layout};
///
/// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
/// let id = generator.next_id_async().await;
/// let batch: Vec<_> = generator.next_ids_async(100).await.collect();
/// assert!(batch[0] > id);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "tokio"))]
/// # fn main() {}
/// ```
///
/// # Patterns
///
/// **One generator per process**, shared by every thread and task: a
/// `static` built on first use. Its node id comes from where the deployment
/// puts it (here an environment variable; see [`node_id`](crate::node_id) and
/// [`lease`](crate::lease)).
///
/// ```
/// use std::sync::LazyLock;
/// use flakeid::{Generator, Id, Layout, node_id};
///
/// static IDS: LazyLock<Generator> = LazyLock::new(|| {
///     let layout = Layout::twitter();
///     let node = node_id::from_env("FLAKEID_NODE_ID", &layout)
///         .expect("FLAKEID_NODE_ID is this replica's node id (0-1023)");
///     Generator::builder(layout)
///         .node_id(node)
///         .build()
///         .expect("the layout and node id were checked above")
/// });
///
/// fn new_order_id() -> Id {
///     IDS.next_id()
/// }
///
/// # fn main() {
/// # // SAFETY: the doc test is single-threaded up to here.
/// # unsafe { std::env::set_var("FLAKEID_NODE_ID", "7") };
/// let (a, b) = (new_order_id(), new_order_id());
/// assert!(a < b);
/// assert_eq!(IDS.layout().decode(a).map(|d| d.node_id()), Ok(7));
/// # }
/// ```
///
/// **A web handler that never hangs.** `next_id` and `next_id_async` wait
/// out whatever stops them, which is right for a used-up millisecond and
/// wrong for a lapsed node-id lease: a handler would hang until the lease
/// store is back. Call `try_next_id` (or `try_next_id_async`, feature
/// `tokio`), which reports at once, answer 503 with `Retry-After` on an
/// error, and point the readiness probe at [`health`](CellGenerator::health),
/// so the load balancer stops sending requests while the generator cannot
/// issue. `examples/web_handler/` is this pattern, compiled, with axum:
///
/// ```text
/// async fn create_event(State(app): State<Arc<App>>) -> Result<Json<Event>, Failure> {
///     match app.generator.try_next_id_async().await {
///         Ok(id) => Ok(Json(Event { id })),
///         Err(e) => Err(unavailable(&e)), // 503, Retry-After: 1
///     }
/// }
///
/// async fn ready(State(app): State<Arc<App>>) -> (StatusCode, String) {
///     let health = app.generator.health();
///     let code = if health.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
///     (code, health.to_string())
/// }
/// ```
pub type Generator<C = MonotonicClock> = CellGenerator<C, AtomicCell>;

/// A generator with the same semantics as [`Generator`](crate::Generator),
/// behind a mutex: the baseline the lock-free generator is measured against,
/// and the oracle it is tested against.
///
/// It runs the same attempt as the lock-free generator (the same clock
/// readings at the same points, the same loop), with the state word under a
/// lock instead of in an atomic: the one difference is that its install
/// never loses a race. It is a [`CellGenerator`] over a [`LockedCell`], so
/// it has the same inherent methods as [`Generator`]. Build it with
/// [`Builder::build_mutex`].
///
/// ```
/// use flakeid::{Generator, Layout, ManualClock};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let clock = ManualClock::new(1_700_000_000_000);
/// let lock_free = Generator::builder(Layout::twitter()).node_id(1).clock(clock.clone()).build()?;
/// let locked = Generator::builder(Layout::twitter()).node_id(1).clock(clock.clone()).build_mutex()?;
/// for _ in 0..100 {
///     assert_eq!(lock_free.try_next_id(), locked.try_next_id());
/// }
/// # Ok(())
/// # }
/// ```
///
/// Threads wait for its lock instead of retrying a compare-and-swap:
///
/// ```
/// use flakeid::{Layout, ManualClock, MutexGenerator};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let builder = MutexGenerator::builder(Layout::twitter()).node_id(1).counters(true);
/// let generator = builder.clock(ManualClock::new(1_700_000_000_000)).build_mutex()?;
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| generator.next_ids(10).count());
///     }
/// });
/// let stats = generator.stats().ok_or("counters are off")?;
/// assert_eq!((stats.issued, stats.lost_races), (40, 0)); // threads wait for the lock
/// # Ok(())
/// # }
/// ```
pub type MutexGenerator<C = MonotonicClock> = CellGenerator<C, LockedCell>;

/// A leased node id's grant, as [`CellGenerator::lease_grant`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseGrant {
    /// The leased node id (all node fields as one number).
    pub node_id: u64,
    /// Changes with every fresh claim (and only then): an ID issued under
    /// one generation counts only if the generation is unchanged after it.
    pub generation: u64,
    /// The highest timestamp field (ticks since the layout's epoch) any
    /// earlier holder of the node id may have used: issue only above it.
    pub floor: u64,
    /// The highest timestamp field the store has recorded for this holder:
    /// issue at or below it.
    pub ceiling: u64,
    /// How much longer, from the call, the lease is proven valid (its
    /// deadline less the safety margin, on a monotonic clock).
    pub valid_for: Duration,
}

/// Generators in many processes over one word in shared memory: each
/// process builds its own over the same `&'static AtomicU64` with
/// [`Builder::build_shared`], and together they issue each ID once, as one
/// [`Generator`] would (the attempt is the same compare-and-swap; see
/// [`SharedCell`]). This is how the PostgreSQL extension (`flakeid-pg`)
/// makes IDs from every backend at once.
///
/// ```
/// use flakeid::{Generator, Layout, SharedGenerator};
/// use std::sync::atomic::AtomicU64;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// static WORD: AtomicU64 = AtomicU64::new(0);
/// let generator: SharedGenerator = Generator::builder(Layout::twitter())
///     .node_id(3)
///     .build_shared(&WORD)?;
/// assert_eq!(generator.layout().decode(generator.next_id())?.node_id(), 3);
/// # Ok(())
/// # }
/// ```
pub type SharedGenerator<C = MonotonicClock> = CellGenerator<C, SharedCell>;

impl Generator {
    /// Starts configuring a generator for `layout`, with the default
    /// [`MonotonicClock`] and the default policies. There is no default node
    /// id: for a layout with node fields, choose one (or declare this the
    /// only generator) before [`build`](Builder::build), which refuses
    /// otherwise; see [`Builder`].
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::discord())
    ///     .node_field("worker", 3)
    ///     .node_field("process", 1)
    ///     .build()?;
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!((decoded.field("worker"), decoded.field("process")), (Some(3), Some(1)));
    /// let unset = Generator::builder(Layout::discord()).build();
    /// assert!(matches!(unset, Err(BuildError::NodeIdNotSet)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(layout: Layout) -> Builder {
        Builder::new(layout)
    }
}

impl MutexGenerator {
    /// Starts configuring a generator for `layout`, as
    /// [`Generator::builder`]; finish with [`Builder::build_mutex`].
    ///
    /// ```
    /// use flakeid::{Layout, ManualClock, MutexGenerator};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = MutexGenerator::builder(Layout::twitter())
    ///     .node_id(4)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build_mutex()?;
    /// assert_eq!(generator.layout().decode(generator.next_id())?.node_id(), 4);
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(layout: Layout) -> Builder {
        Builder::new(layout)
    }
}

/// Every method of both generators: each hands the call to the core
/// (`core.rs`).
impl<C: Clock, S: StateCell + cell::sealed::Owned> CellGenerator<C, S> {
    /// A generator made of what [`Builder::into_parts`] made, in a cell of
    /// its own.
    pub(crate) fn from_parts(parts: Components<C>) -> Self {
        let state = S::new(parts.state);
        CellGenerator {
            core: Core::new(parts, state),
        }
    }
}

impl<C: Clock> SharedGenerator<C> {
    /// A generator made of what [`Builder::into_parts`] made, over a word
    /// it shares.
    pub(crate) fn from_shared(parts: Components<C>, cell: SharedCell) -> Self {
        CellGenerator {
            core: Core::new(parts, cell),
        }
    }
}

impl<C: Clock, S: StateCell> CellGenerator<C, S> {
    /// The next ID, waiting as the policies say.
    ///
    /// With the default policies (`OnExhausted::Wait`, `OnClockBehind::Continue`)
    /// this never fails before the layout's last instant: when a tick's
    /// sequence is used up it waits for the next tick (spinning briefly, then
    /// yielding, then sleeping). With a leased
    /// node id it also waits while the lease cannot be proven valid, until the
    /// keeper has claimed a node id again.
    ///
    /// # Panics
    ///
    /// Only where [`try_next_id`](Self::try_next_id) would return an error:
    /// when a policy set to report (`OnExhausted::Error`, `OnClockBehind::Error`,
    /// or `OnClockBehind::Wait` whose wait ran out) reports, or when the clock
    /// is past the layout's last instant ([`Layout::last_ms`]). Use
    /// `try_next_id` with those policies.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let (a, b) = (generator.next_id(), generator.next_id());
    /// assert!(a < b);
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn next_id(&self) -> Id {
        self.core.next_id()
    }

    /// The next ID, waiting as the policies say, or the error a policy reports.
    ///
    /// # Errors
    ///
    /// [`GenerateError::SequenceExhausted`] under `OnExhausted::Error`;
    /// [`GenerateError::ClockBehind`] under `OnClockBehind::Error` or when
    /// `OnClockBehind::Wait` runs out; [`GenerateError::Expired`] past the
    /// layout's last instant; [`GenerateError::Storage`] while restart
    /// safety's store fails to save the reservation the next ID needs
    /// ([`Builder::persist`](crate::Builder::persist));
    /// [`GenerateError::Fenced`] while a leased node id's lease cannot be
    /// proven valid (`Builder::lease`, features `etcd` and `redis`).
    ///
    /// ```
    /// use flakeid::{GenerateError, Generator, Layout, ManualClock, OnClockBehind};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(clock.clone())
    ///     .on_clock_behind(OnClockBehind::Error)
    ///     .build()?;
    /// generator.try_next_id()?;
    /// clock.rewind(Duration::from_secs(2));
    /// assert_eq!(
    ///     generator.try_next_id(),
    ///     Err(GenerateError::ClockBehind { behind: Duration::from_secs(2) })
    /// );
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn try_next_id(&self) -> Result<Id, GenerateError> {
        self.core.try_next_id()
    }

    /// The next ID if one can be issued without waiting.
    ///
    /// # Errors
    ///
    /// As [`try_next_id`](Self::try_next_id), and also
    /// [`GenerateError::SequenceExhausted`] or [`GenerateError::ClockBehind`]
    /// where the policy would wait, and [`GenerateError::Reserving`] where it
    /// would wait for a reservation to be saved or a lease's ceiling to be
    /// raised. For event loops and async runtimes that do their own waiting.
    ///
    /// ```
    /// use flakeid::{GenerateError, Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// match generator.poll_id() {
    ///     Ok(id) => println!("{id}"),
    ///     Err(GenerateError::SequenceExhausted { retry_after }) => println!("retry in {retry_after:?}"),
    ///     Err(e) => return Err(e.into()),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn poll_id(&self) -> Result<Id, GenerateError> {
        self.core.poll_id()
    }

    /// Reserves up to `n` consecutive IDs in one step (one compare-and-swap
    /// for the lock-free generator), waiting as the policies say. The batch
    /// holds at least one ID and at most the rest of the current tick (fewer
    /// than `n` when the tick runs out; call again for more). `n = 0`
    /// reserves nothing and returns an empty batch.
    ///
    /// # Panics
    ///
    /// As [`next_id`](Self::next_id).
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let mut ids = Vec::with_capacity(10_000);
    /// while ids.len() < 10_000 {
    ///     ids.extend(generator.next_ids(10_000 - ids.len()));
    /// }
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn next_ids(&self, n: usize) -> IdBatch {
        self.core.next_ids(n)
    }

    /// [`next_ids`](Self::next_ids) that reports instead of panicking.
    ///
    /// # Errors
    ///
    /// As [`try_next_id`](Self::try_next_id).
    ///
    /// ```
    /// use flakeid::{GenerateError, Generator, Layout, ManualClock, OnExhausted};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .on_exhausted(OnExhausted::Error)
    ///     .build()?;
    /// assert_eq!(generator.try_next_ids(5_000)?.len(), 4_096); // the rest of the tick
    /// let next = generator.try_next_ids(1);
    /// assert!(matches!(next, Err(GenerateError::SequenceExhausted { .. })));
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn try_next_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        self.core.try_next_ids(n)
    }

    /// [`next_ids`](Self::next_ids) that never waits.
    ///
    /// # Errors
    ///
    /// As [`poll_id`](Self::poll_id).
    ///
    /// ```
    /// use flakeid::{GenerateError, Generator, Layout, ManualClock};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).clock(clock.clone()).build()?;
    /// assert_eq!(generator.poll_ids(4_096)?.len(), 4_096);
    /// // The tick is used up: `next_ids` would wait for the next one.
    /// let next = generator.poll_ids(10);
    /// assert!(matches!(next, Err(GenerateError::SequenceExhausted { .. })));
    /// clock.advance(Duration::from_millis(1));
    /// assert_eq!(generator.poll_ids(10)?.len(), 10);
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn poll_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        self.core.poll_ids(n)
    }

    /// The layout this generator makes IDs for.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::sonyflake())
    ///     .node_id(5)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!((decoded.field("machine"), decoded.unix_ms()), (Some(5), 1_700_000_000_000));
    /// # Ok(())
    /// # }
    /// ```
    pub fn layout(&self) -> &Layout {
        self.core.layout()
    }

    /// How many free node ids this generator's lease claims have passed over
    /// because their marks were too far ahead of its clock (see
    /// [`Lease::max_mark_ahead`](crate::Lease::max_mark_ahead)); each claim
    /// counts each node id it skipped. 0 without a lease. A count that grows
    /// points at node ids poisoned by a holder whose clock ran ahead: the
    /// [`LeaseError::MarksAhead`](crate::LeaseError::MarksAhead) a claim
    /// fails with when it skips them all names them and their marks.
    ///
    /// ```no_run
    /// use flakeid::{Generator, Layout, Lease};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let generator = Generator::builder(Layout::twitter()).lease(lease).build()?;
    /// if generator.lease_skipped_node_ids() > 0 {
    ///     eprintln!("some node ids carry marks far ahead of this clock");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    #[cfg_attr(
        docsrs,
        doc(cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )))
    )]
    pub fn lease_skipped_node_ids(&self) -> u64 {
        self.core.lease_skipped_node_ids()
    }

    /// The lease's grant, while it is proven valid: for IDs issued under
    /// this generator's lease by other generators (other processes, over a
    /// word in shared memory), as the PostgreSQL extension's backends do
    /// while its worker holds the lease. `None` without a lease, and while
    /// the lease is fenced.
    ///
    /// Whoever issues under the grant must follow it as this generator
    /// does: only timestamps above [`floor`](LeaseGrant::floor) and at or
    /// below [`ceiling`](LeaseGrant::ceiling) (ask for more with
    /// [`want_lease_ceiling`](Self::want_lease_ceiling)), only before
    /// [`valid_for`](LeaseGrant::valid_for) runs out, and an ID counts only
    /// if the grant (its [`generation`](LeaseGrant::generation)) is still
    /// the current one and still valid after the ID was installed.
    ///
    /// ```no_run
    /// # #[cfg(feature = "postgres")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use flakeid::{Generator, Layout, Lease};
    ///
    /// let holder = Generator::builder(Layout::twitter())
    ///     .lease(Lease::postgres("postgres://flakeid@db.internal/ids"))
    ///     .build()?;
    /// if let Some(grant) = holder.lease_grant() {
    ///     println!("node {} for {:?} more", grant.node_id, grant.valid_for);
    /// }
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "postgres"))]
    /// # fn main() {}
    /// ```
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    #[cfg_attr(
        docsrs,
        doc(cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )))
    )]
    pub fn lease_grant(&self) -> Option<LeaseGrant> {
        self.core.lease_grant()
    }

    /// Asks the lease's keeper to record a ceiling past `tick` (a timestamp
    /// field value) in the store, for IDs issued under
    /// [`lease_grant`](Self::lease_grant) that need a later tick than its
    /// ceiling. Does nothing without a lease.
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    #[cfg_attr(
        docsrs,
        doc(cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )))
    )]
    pub fn want_lease_ceiling(&self, tick: u64) {
        self.core.want_lease_ceiling(tick);
    }

    /// The node id in the IDs (all node fields as one number): the
    /// configured one, or the one a lease holds now: from the claim on, even
    /// while its fence waits to open, and while the lease is not proven
    /// valid, the one it claimed last, which the next claim takes back if it
    /// can.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_field("datacenter", 1)
    ///     .node_field("worker", 2)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// assert_eq!(generator.node_id(), 1 << 5 | 2);
    /// assert_eq!(generator.layout().decode(generator.next_id())?.node_id(), generator.node_id());
    /// # Ok(())
    /// # }
    /// ```
    pub fn node_id(&self) -> u64 {
        self.core.node_id()
    }

    /// The clock the generator reads.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// generator.clock().advance(Duration::from_millis(5));
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!(decoded.unix_ms(), 1_700_000_000_005);
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock(&self) -> &C {
        self.core.clock()
    }

    /// The generator's state: the largest ID issued so far, or a point it
    /// moved past without issuing (before the first ID, timestamp 0 or where
    /// a restored state left off; with a leased node id, the lease's floor,
    /// or IDs dropped because the lease lapsed as they were made). Every
    /// later ID is larger, except after an `OnClockBehind::NextClock` step
    /// or a lease's rotation.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let id = generator.next_id();
    /// assert_eq!(generator.last_id(), id);
    /// # Ok(())
    /// # }
    /// ```
    pub fn last_id(&self) -> Id {
        self.core.last_id()
    }

    /// The counters, if the builder turned them on.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(clock.clone())
    ///     .counters(true)
    ///     .build()?;
    /// generator.next_id();
    /// clock.rewind(Duration::from_secs(1));
    /// generator.next_id(); // `OnClockBehind::Continue`: on the last timestamp
    /// let stats = generator.stats().ok_or("counters are off")?;
    /// assert_eq!((stats.issued, stats.clock_behind), (2, 1));
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> Option<Stats> {
        self.core.stats()
    }

    /// Whether the generator can issue IDs now: for a readiness probe. See
    /// [`Health`] for what each state means for `try_next_id` and `next_id`.
    /// Reads the clock, and the lease's and the reservation's state; issues
    /// nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakeid::{Generator, Health, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::builder().epoch_ms(1_700_000_000_000).timestamp_bits(10).sequence(12).build()?;
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(layout).clock(clock.clone()).build()?;
    /// assert_eq!(generator.health(), Health::Issuing);
    /// clock.advance(Duration::from_secs(2)); // 10 bits of ms end after 1.024 s
    /// assert_eq!(generator.health(), Health::Expired { last_ms: 1_700_000_001_023 });
    /// # Ok(())
    /// # }
    /// ```
    pub fn health(&self) -> Health {
        self.core.health()
    }

    /// The core, for the loom models' planted bugs (`loom_hooks`).
    #[cfg(flakeid_loom)]
    pub(crate) fn core(&self) -> &Core<C, S> {
        &self.core
    }
}

/// What [`Generator`] and [`MutexGenerator`] have in common, as a trait: for
/// code that takes either behind `dyn` or `impl`, and for generators of
/// one's own. Both twins have every one of these methods as inherent
/// methods too, so calling them needs no import of this trait.
///
/// An implementor supplies [`layout`](IdGenerator::layout),
/// [`stats`](IdGenerator::stats), [`last_id`](IdGenerator::last_id),
/// [`next_ids`](IdGenerator::next_ids),
/// [`try_next_ids`](IdGenerator::try_next_ids) and
/// [`poll_ids`](IdGenerator::poll_ids). The single-ID calls
/// [`next_id`](IdGenerator::next_id), [`try_next_id`](IdGenerator::try_next_id)
/// and [`poll_id`](IdGenerator::poll_id) are provided, as the first ID of a
/// one-ID batch; this crate's generators replace them with their own
/// single-ID paths.
///
/// ```
/// use flakeid::{Generator, IdGenerator, Layout};
///
/// fn hundred(generator: &impl IdGenerator) -> Vec<flakeid::Id> {
///     (0..100).map(|_| generator.next_id()).collect()
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let builder = Generator::builder(Layout::twitter()).node_id(3);
/// let (lock_free, locked) = (builder.clone().build()?, builder.build_mutex()?);
/// assert_eq!(hundred(&lock_free).len(), hundred(&locked).len());
/// # Ok(())
/// # }
/// ```
///
/// A generator of one's own supplies the six and gets the single-ID calls:
///
/// ```
/// use flakeid::{GenerateError, Generator, Id, IdBatch, IdGenerator, Layout, ManualClock, Stats};
///
/// /// A generator's IDs in batches of at most 8.
/// struct Capped(Generator<ManualClock>);
///
/// impl IdGenerator for Capped {
///     fn layout(&self) -> &Layout {
///         self.0.layout()
///     }
///     fn stats(&self) -> Option<Stats> {
///         self.0.stats()
///     }
///     fn last_id(&self) -> Id {
///         self.0.last_id()
///     }
///     fn next_ids(&self, n: usize) -> IdBatch {
///         self.0.next_ids(n.min(8))
///     }
///     fn try_next_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
///         self.0.try_next_ids(n.min(8))
///     }
///     fn poll_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
///         self.0.poll_ids(n.min(8))
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let clock = ManualClock::new(1_700_000_000_000);
/// let capped = Capped(Generator::builder(Layout::twitter()).node_id(1).clock(clock).build()?);
/// assert_eq!(capped.next_ids(100).len(), 8);
/// let id = capped.next_id(); // provided: the first ID of `next_ids(1)`
/// assert_eq!(capped.last_id(), id);
/// # Ok(())
/// # }
/// ```
pub trait IdGenerator: Send + Sync {
    /// The layout the generator makes IDs for.
    fn layout(&self) -> &Layout;

    /// The counters, if the builder turned them on.
    fn stats(&self) -> Option<Stats>;

    /// The largest ID issued so far; see [`Generator::last_id`].
    fn last_id(&self) -> Id;

    /// Reserves up to `n` consecutive IDs in one step, waiting as the policies
    /// say; see [`Generator::try_next_ids`].
    ///
    /// # Errors
    ///
    /// As [`Generator::try_next_id`].
    fn try_next_ids(&self, n: usize) -> Result<IdBatch, GenerateError>;

    /// Reserves up to `n` consecutive IDs if possible without waiting; see
    /// [`Generator::poll_ids`].
    ///
    /// # Errors
    ///
    /// As [`Generator::poll_id`].
    fn poll_ids(&self, n: usize) -> Result<IdBatch, GenerateError>;

    /// Up to `n` consecutive IDs, waiting as the policies say and for outside
    /// help (a state store recovering); see [`Generator::next_ids`].
    ///
    /// # Panics
    ///
    /// As [`Generator::next_id`].
    fn next_ids(&self, n: usize) -> IdBatch;

    /// The next ID, waiting as the policies say; see [`Generator::next_id`].
    ///
    /// # Panics
    ///
    /// As [`Generator::next_id`].
    #[inline]
    fn next_id(&self) -> Id {
        self.next_ids(1).first_id()
    }

    /// The next ID, or the error a policy reports; see [`Generator::try_next_id`].
    ///
    /// # Errors
    ///
    /// As [`Generator::try_next_id`].
    #[inline]
    fn try_next_id(&self) -> Result<Id, GenerateError> {
        self.try_next_ids(1).map(|batch| batch.first_id())
    }

    /// The next ID if one can be issued without waiting; see [`Generator::poll_id`].
    ///
    /// # Errors
    ///
    /// As [`Generator::poll_id`].
    #[inline]
    fn poll_id(&self) -> Result<Id, GenerateError> {
        self.poll_ids(1).map(|batch| batch.first_id())
    }
}

impl<C: Clock, S: StateCell> IdGenerator for CellGenerator<C, S> {
    fn layout(&self) -> &Layout {
        CellGenerator::layout(self)
    }

    fn stats(&self) -> Option<Stats> {
        CellGenerator::stats(self)
    }

    fn last_id(&self) -> Id {
        CellGenerator::last_id(self)
    }

    #[inline]
    fn next_ids(&self, n: usize) -> IdBatch {
        CellGenerator::next_ids(self, n)
    }

    #[inline]
    fn try_next_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        CellGenerator::try_next_ids(self, n)
    }

    #[inline]
    fn poll_ids(&self, n: usize) -> Result<IdBatch, GenerateError> {
        CellGenerator::poll_ids(self, n)
    }

    #[inline]
    fn next_id(&self) -> Id {
        CellGenerator::next_id(self)
    }

    #[inline]
    fn try_next_id(&self) -> Result<Id, GenerateError> {
        CellGenerator::try_next_id(self)
    }

    #[inline]
    fn poll_id(&self) -> Result<Id, GenerateError> {
        CellGenerator::poll_id(self)
    }
}

/// Prints `Generator { .. }` or `MutexGenerator { .. }`, after the cell.
impl<C: fmt::Debug, S: StateCell> fmt::Debug for CellGenerator<C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.core.fmt_as(S::GENERATOR, f)
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;

    /// The mutex twin answers every inherent method as the lock-free
    /// generator does.
    #[test]
    fn the_mutex_twin_has_the_inherent_methods() {
        let locked = MutexGenerator::builder(Layout::discord())
            .node_field("worker", 3)
            .node_field("process", 0)
            .clock(ManualClock::new(1_700_000_000_000))
            .build_mutex()
            .unwrap();
        let decoded = locked.layout().decode(locked.next_id()).unwrap();
        assert_eq!(
            (decoded.field("worker"), decoded.unix_ms()),
            (Some(3), 1_700_000_000_000)
        );

        let locked = MutexGenerator::builder(Layout::twitter())
            .node_field("datacenter", 3)
            .node_field("worker", 0)
            .clock(ManualClock::new(1_700_000_000_000))
            .build_mutex()
            .unwrap();
        assert_eq!(locked.node_id(), 3 << 5);
        let decoded = locked.layout().decode(locked.next_id()).unwrap();
        assert_eq!(decoded.node_id(), locked.node_id());

        let locked = MutexGenerator::builder(Layout::twitter())
            .node_id(1)
            .clock(ManualClock::new(1_700_000_000_000))
            .build_mutex()
            .unwrap();
        assert_eq!(locked.poll_ids(4_096).unwrap().len(), 4_096); // the whole tick
        assert!(matches!(
            locked.poll_id(),
            Err(GenerateError::SequenceExhausted { .. })
        ));
        locked.clock().advance(Duration::from_millis(1));
        assert!(locked.poll_id().is_ok());
        let ids: Vec<_> = locked.next_ids(5).collect();
        assert_eq!(locked.last_id(), ids[4]);

        let layout = Layout::builder()
            .epoch_ms(1_700_000_000_000)
            .timestamp_bits(10)
            .sequence(12)
            .build()
            .unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let locked = MutexGenerator::builder(layout)
            .clock(clock.clone())
            .build_mutex()
            .unwrap();
        assert_eq!(locked.health(), Health::Issuing);
        clock.advance(Duration::from_secs(2)); // 10 bits of ms end after 1.024 s
        assert_eq!(
            locked.health(),
            Health::Expired {
                last_ms: 1_700_000_001_023
            }
        );
    }

    #[test]
    fn debug_names_the_generator_after_its_cell() {
        let builder = Generator::builder(Layout::twitter())
            .node_id(1)
            .clock(ManualClock::new(1_700_000_000_000));
        let lock_free = format!("{:?}", builder.clone().build().unwrap());
        let locked = format!("{:?}", builder.build_mutex().unwrap());
        assert!(lock_free.starts_with("Generator { layout: "), "{lock_free}");
        assert!(locked.starts_with("MutexGenerator { layout: "), "{locked}");
    }
}
