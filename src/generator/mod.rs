//! The generators, their common trait, configuration and batches.

mod atomic;
mod core;
mod health;
mod mutex;
mod plan;
mod policy;
mod stats;
mod wait;
#[cfg(feature = "tokio")]
mod wait_async;

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::iter::FusedIterator;
use std::sync::Arc;

pub use crate::error::{BuildError, GenerateError};
pub use atomic::Generator;
pub use health::Health;
pub use mutex::MutexGenerator;
pub use policy::{OnClockBehind, OnExhausted};
pub use stats::Stats;

use crate::FieldError;
use crate::clock::{Clock, MonotonicClock};
use crate::events::{EventHook, Events};
use crate::fence::{Fence, Keeper};
use crate::id::Id;
use crate::layout::Layout;
use crate::persist::{self, Persist, Persister};
use plan::{Plan, PlanConfig};

/// The [`IdGenerator`] impl and `Debug` that a generator `$name` (a shell
/// around a `core::Core` in its field `core`) gets from that core, so the
/// two generators cannot differ in them.
macro_rules! shell {
    ($name:ident) => {
        impl<C: $crate::clock::Clock> $crate::generator::IdGenerator for $name<C> {
            fn layout(&self) -> &$crate::layout::Layout {
                self.core.layout()
            }

            fn stats(&self) -> Option<$crate::generator::Stats> {
                self.core.stats()
            }

            fn last_id(&self) -> $crate::id::Id {
                self.core.last_id()
            }

            #[inline]
            fn next_id(&self) -> $crate::id::Id {
                $crate::generator::wait::next_id(&self.core)
            }

            #[inline]
            fn try_next_id(&self) -> Result<$crate::id::Id, $crate::GenerateError> {
                $crate::generator::wait::try_next_id(&self.core)
            }

            #[inline]
            fn try_next_ids(
                &self,
                n: usize,
            ) -> Result<$crate::generator::IdBatch, $crate::GenerateError> {
                $crate::generator::wait::reserve_batch(
                    &self.core,
                    n,
                    $crate::generator::wait::Mode::Report,
                )
            }

            #[inline]
            fn next_ids(&self, n: usize) -> $crate::generator::IdBatch {
                match $crate::generator::wait::reserve_batch(
                    &self.core,
                    n,
                    $crate::generator::wait::Mode::Wait,
                ) {
                    Ok(batch) => batch,
                    Err(e) => panic!("flakeid: {e}"),
                }
            }

            #[inline]
            fn poll_ids(
                &self,
                n: usize,
            ) -> Result<$crate::generator::IdBatch, $crate::GenerateError> {
                $crate::generator::wait::poll_batch(&self.core, n)
            }
        }

        impl<C: $crate::clock::Clock + ::std::fmt::Debug> ::std::fmt::Debug for $name<C> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.core.fmt_as(stringify!($name), f)
            }
        }
    };
}
use shell;

/// What [`Generator`] and [`MutexGenerator`] have in common, so tests and
/// benches are written once for both.
///
/// Implementors supply [`try_next_ids`](IdGenerator::try_next_ids) and
/// [`poll_ids`](IdGenerator::poll_ids); the single-ID calls follow from them.
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

/// Consecutive IDs reserved by one step, from
/// [`Generator::next_ids`]: an iterator in increasing order.
///
/// ```
/// use flakeid::{Generator, Layout};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
/// let batch = generator.next_ids(16);
/// assert!(batch.len() >= 1 && batch.len() <= 16);
/// let first = batch.first_id();
/// let ids: Vec<_> = batch.collect();
/// assert_eq!(ids[0], first);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdBatch {
    next: u64,
    step: u64,
    remaining: u64,
}

impl IdBatch {
    #[inline]
    pub(crate) fn new(first: u64, step: u64, count: u64) -> IdBatch {
        IdBatch {
            next: first,
            step,
            remaining: count,
        }
    }

    #[inline]
    pub(crate) fn empty() -> IdBatch {
        IdBatch::new(0, 0, 0)
    }

    /// The first ID the batch yields (meaningless for an empty batch, which
    /// only `n = 0` produces).
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// let mut batch = generator.next_ids(3);
    /// let first = batch.first_id();
    /// assert_eq!(generator.layout().decode(first)?.sequence(), 0); // the tick's first ID
    /// assert_eq!(batch.next(), Some(first));
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn first_id(&self) -> Id {
        Id::from_u64(self.next)
    }
}

impl Iterator for IdBatch {
    type Item = Id;

    #[inline]
    fn next(&mut self) -> Option<Id> {
        if self.remaining == 0 {
            return None;
        }
        let id = Id::from_u64(self.next);
        self.remaining -= 1;
        self.next = self.next.wrapping_add(self.step);
        Some(id)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for IdBatch {}
impl FusedIterator for IdBatch {}

/// Where a builder gets its clock: given, or the default made at build time
/// (so building with an injected clock never calibrates the TSC).
#[derive(Debug, Clone)]
enum ClockSource<C> {
    Given(C),
    Default(fn() -> C),
}

#[derive(Debug, Clone)]
enum NodeSpec {
    /// None chosen: refused by `build` if the layout has node fields.
    Unset,
    Id(u64),
    Fields(Vec<(String, u64)>),
}

/// Configures a [`Generator`] or [`MutexGenerator`]; from [`Generator::builder`].
///
/// The node id has no default: if the layout has node fields, one of
/// [`node_id`](Builder::node_id), [`node_field`](Builder::node_field),
/// `lease` or [`single_node`](Builder::single_node) must choose it, or
/// [`build`](Builder::build) refuses with [`BuildError::NodeIdNotSet`] (two
/// replicas that both forgot it would issue the same IDs). The other
/// defaults: the [`MonotonicClock`], [`OnExhausted::Wait`],
/// [`OnClockBehind::Continue`], sequence starting at 0 in each tick, clock id
/// 0, counters off.
///
/// ```
/// use flakeid::{Generator, Layout, OnClockBehind, OnExhausted, SystemClock};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // The classic Twitter generator: wall clock, refuse when it steps back.
/// let generator = Generator::builder(Layout::twitter())
///     .node_field("datacenter", 2)
///     .node_field("worker", 17)
///     .clock(SystemClock)
///     .on_exhausted(OnExhausted::Wait)
///     .on_clock_behind(OnClockBehind::Error)
///     .build()?;
/// assert_eq!(generator.node_id(), 2 << 5 | 17);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Builder<C = MonotonicClock> {
    layout: Layout,
    node: NodeSpec,
    clock: ClockSource<C>,
    on_exhausted: OnExhausted,
    on_behind: OnClockBehind,
    random_start: Option<u64>,
    seed: Option<u64>,
    clock_id: u64,
    counters: bool,
    events: Events,
    persist: Option<Persist>,
    #[cfg(any(feature = "etcd", feature = "redis"))]
    lease: Option<crate::lease::Lease>,
    /// Set by a node-id lease (the `etcd` and `redis` features).
    pub(crate) fence: Option<Arc<Fence>>,
}

/// Everything a generator is made of, from [`Builder`].
pub(crate) struct Components<C> {
    pub(crate) plan: Plan,
    pub(crate) clock: C,
    pub(crate) counters: bool,
    pub(crate) events: Events,
    pub(crate) state: u64,
    pub(crate) persister: Option<Persister>,
    /// The node-id lease's keeper, released when the generator is dropped.
    pub(crate) keeper: Option<Box<dyn Keeper>>,
}

impl Builder {
    /// A builder for `layout` with the defaults listed above, and no node id.
    ///
    /// ```
    /// use flakeid::{BuildError, Builder, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let unset = Builder::new(Layout::twitter()).build();
    /// assert!(matches!(unset, Err(BuildError::NodeIdNotSet)));
    /// let generator = Builder::new(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// assert_eq!(generator.node_id(), 1);
    /// assert_eq!(generator.stats(), None); // counters off
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(layout: Layout) -> Builder {
        Builder {
            layout,
            node: NodeSpec::Unset,
            clock: ClockSource::Default(MonotonicClock::new),
            on_exhausted: OnExhausted::default(),
            on_behind: OnClockBehind::default(),
            random_start: None,
            seed: None,
            clock_id: 0,
            counters: false,
            events: Events::default(),
            persist: None,
            #[cfg(any(feature = "etcd", feature = "redis"))]
            lease: None,
            fence: None,
        }
    }
}

impl<C: Clock> Builder<C> {
    /// The node id: all node fields as one number, the first field highest
    /// (see [`Layout::max_node_id`]). Replaces earlier `node_field` calls.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(37)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!((decoded.field("datacenter"), decoded.field("worker")), (Some(1), Some(5)));
    /// let too_big = Generator::builder(Layout::twitter()).node_id(1_024).build();
    /// assert!(matches!(too_big, Err(BuildError::Field(_))));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node_id(mut self, node: u64) -> Self {
        self.node = NodeSpec::Id(node);
        self
    }

    /// Sets one named node field; fields not set are 0. Replaces an earlier
    /// `node_id`.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::discord())
    ///     .node_field("process", 2)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// assert_eq!(generator.node_id(), 2); // worker 0, process 2
    /// let unknown = Generator::builder(Layout::discord()).node_field("datacenter", 1).build();
    /// assert!(matches!(unknown, Err(BuildError::Field(_))));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node_field(mut self, name: &str, value: u64) -> Self {
        match &mut self.node {
            NodeSpec::Fields(fields) => fields.push((name.to_owned(), value)),
            NodeSpec::Unset | NodeSpec::Id(_) => {
                self.node = NodeSpec::Fields(vec![(name.to_owned(), value)]);
            }
        }
        self
    }

    /// Node id 0, chosen on purpose: this generator is the only one that
    /// issues IDs of its layout (one process, one generator), so no other can
    /// share its node id. The same as `node_id(0)`, but says why.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let forgot = Generator::builder(Layout::twitter()).build();
    /// assert!(matches!(forgot, Err(BuildError::NodeIdNotSet)));
    /// let generator = Generator::builder(Layout::twitter()).single_node().build()?;
    /// assert_eq!(generator.node_id(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn single_node(mut self) -> Self {
        self.node = NodeSpec::Id(0);
        self
    }

    /// The clock to read instead of a new [`MonotonicClock`].
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).clock(clock.clone()).build()?;
    /// clock.set_ms(1_700_000_060_000); // clones share one time
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!(decoded.unix_ms(), 1_700_000_060_000);
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock<D: Clock>(self, clock: D) -> Builder<D> {
        Builder {
            layout: self.layout,
            node: self.node,
            clock: ClockSource::Given(clock),
            on_exhausted: self.on_exhausted,
            on_behind: self.on_behind,
            random_start: self.random_start,
            seed: self.seed,
            clock_id: self.clock_id,
            counters: self.counters,
            events: self.events,
            persist: self.persist,
            #[cfg(any(feature = "etcd", feature = "redis"))]
            lease: self.lease,
            fence: self.fence,
        }
    }

    /// What to do when a tick's sequence is used up.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock, OnExhausted};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .on_exhausted(OnExhausted::Borrow { max_ahead: Duration::from_millis(10) })
    ///     .build()?;
    /// // 5,000 IDs in a millisecond that holds 4,096: the rest borrow the next one.
    /// let last = (0..5_000).map(|_| generator.next_id()).last().ok_or("no ID")?;
    /// assert_eq!(generator.layout().decode(last)?.unix_ms(), 1_700_000_000_001);
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_exhausted(mut self, policy: OnExhausted) -> Self {
        self.on_exhausted = policy;
        self
    }

    /// What to do when the clock reads behind the last timestamp.
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
    ///     .on_clock_behind(OnClockBehind::Wait { max: Duration::from_millis(5) })
    ///     .build()?;
    /// generator.try_next_id()?;
    /// clock.rewind(Duration::from_secs(1)); // further back than waiting can help: at once
    /// let behind = Err(GenerateError::ClockBehind { behind: Duration::from_secs(1) });
    /// assert_eq!(generator.try_next_id(), behind);
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_clock_behind(mut self, policy: OnClockBehind) -> Self {
        self.on_behind = policy;
        self
    }

    /// Starts each tick's sequence at a pseudo-random value below `bound`
    /// instead of 0, so that at low traffic IDs are not all even (which skews
    /// `id % shards`) and do not reveal how many were made. A tick then holds
    /// at least `capacity - bound + 1` IDs.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .random_start(1_024)
    ///     .build()?;
    /// assert!(generator.layout().decode(generator.next_id())?.sequence() < 1_024);
    /// let out_of_range = Generator::builder(Layout::twitter()).node_id(1).random_start(5_000).build();
    /// assert!(matches!(out_of_range, Err(BuildError::RandomStartOutOfRange { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn random_start(mut self, bound: u64) -> Self {
        self.random_start = Some(bound);
        self
    }

    /// The seed of the random sequence start (default: a random seed), so two
    /// generators can be made to behave identically in tests.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let builder = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .random_start(4_000)
    ///     .seed(42);
    /// let (a, b) = (builder.clone().build()?, builder.build()?);
    /// assert_eq!(a.next_id(), b.next_id());
    /// # Ok(())
    /// # }
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The clock id to start with, for layouts with a clock-id field (the
    /// multi-clock scheme persists it and bumps it at every restart).
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::builder()
    ///     .epoch_ms(1_600_000_000_000)
    ///     .timestamp_bits(41)
    ///     .clock_id(2)
    ///     .node("worker", 8)
    ///     .sequence(12)
    ///     .build()?;
    /// let builder = Generator::builder(layout).node_id(1).clock(ManualClock::new(1_700_000_000_000));
    /// let generator = builder.clock_id(3).build()?;
    /// assert_eq!(generator.layout().decode(generator.next_id())?.clock_id(), 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock_id(mut self, clock_id: u64) -> Self {
        self.clock_id = clock_id;
        self
    }

    /// Turns the [`Stats`] counters on. Off by default: counting issued IDs is
    /// a shared write on the hot path.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .counters(true)
    ///     .build()?;
    /// let ids: Vec<_> = generator.next_ids(100).collect();
    /// assert_eq!(generator.stats().map(|s| s.issued), Some(ids.len() as u64));
    /// # Ok(())
    /// # }
    /// ```
    pub fn counters(mut self, on: bool) -> Self {
        self.counters = on;
        self
    }

    /// Sets the hook that hears what the generator does besides issuing: a
    /// clock behind, waits, borrowed ticks, clock-id steps, the lease's
    /// claims, failures and fences, the reservation's failed and recovered
    /// saves, dropped IDs ([`Event`](crate::Event); ready-made hooks for
    /// `tracing` and `metrics` in [`events`](crate::events)). Without a hook
    /// (the default), the hot path is unchanged.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use flakeid::{Event, Generator, Layout, ManualClock, OnExhausted};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let events = Arc::new(Mutex::new(Vec::new()));
    /// let log = events.clone();
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .on_exhausted(OnExhausted::Borrow { max_ahead: std::time::Duration::from_millis(5) })
    ///     .on_event(move |e: &Event| log.lock().unwrap().push(e.clone()))
    ///     .build()?;
    /// let _ = generator.next_ids(4_096).count(); // the whole tick
    /// generator.next_id(); // the next tick, ahead of the (frozen) clock
    /// assert!(matches!(events.lock().unwrap()[..], [Event::TickBorrowed { .. }]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_event(mut self, hook: impl EventHook) -> Self {
        self.events = Events::new(hook);
        self
    }

    /// Turns on restart safety: the generator saves a high-water mark of its
    /// timestamps ahead of use and, when restarted, starts after the mark its
    /// predecessor saved, so it never reissues an ID, even if the clock was
    /// set back in between. See [`Persist`].
    ///
    /// Building then opens and checks the saved state and saves the first
    /// reservation, so a store that cannot be read or written fails the build,
    /// before any ID is issued.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock, Persist};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("flakeid-doc-builder-persist-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let path = dir.join("node-0.state");
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let builder = Generator::builder(Layout::twitter()).node_id(1).clock(clock.clone());
    /// let generator = builder.clone().persist(Persist::file(&path)).build()?;
    /// let last = generator.next_id();
    /// drop(generator); // saves the exact last timestamp
    /// clock.rewind(Duration::from_secs(60)); // set back while the process was down
    /// let generator = builder.persist(Persist::file(&path)).build()?;
    /// assert!(generator.poll_id().is_err()); // nothing until the clock passes the mark
    /// clock.advance(Duration::from_secs(61));
    /// assert!(generator.next_id() > last);
    /// # drop(generator);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn persist(mut self, persist: Persist) -> Self {
        self.persist = Some(persist);
        self
    }

    /// Leases the node id from etcd or Redis instead of configuring it (the
    /// `etcd` and `redis` features; see [`Lease`](crate::Lease)).
    ///
    /// Building then claims the lowest free node id (failing with
    /// [`BuildError::Lease`] if every one is held, or if the server cannot
    /// be reached within the lease's connect timeout) and starts a keeper
    /// thread that renews the lease. The generator issues only while the
    /// lease is proven valid: [`Generator::try_next_id`] returns
    /// [`GenerateError::Fenced`] otherwise, and [`Generator::next_id`] waits
    /// for a fresh claim. Dropping the generator records its last timestamp
    /// in the store and gives the node id back. Each generator built from a
    /// clone of this builder claims a node id of its own. Building blocks
    /// for the claim (at most the lease's connect timeout) and dropping for
    /// the release (at most a third of the TTL), inside an async runtime as
    /// outside one: see [`Lease`](crate::Lease#blocking-and-async-services).
    ///
    /// A leased node id replaces [`node_id`](Builder::node_id) and
    /// [`persist`](Builder::persist): the store keeps, per node id, the
    /// high-water mark a restarted or different process starts after.
    ///
    /// ```no_run
    /// use flakeid::{Generator, Layout, Lease};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// let generator = Generator::builder(Layout::twitter()).lease(lease).build()?;
    /// let id = generator.try_next_id()?; // Err(Fenced) if the lease lapsed
    /// assert_eq!(generator.layout().decode(id)?.node_id(), generator.node_id());
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(any(feature = "etcd", feature = "redis"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "etcd", feature = "redis"))))]
    pub fn lease(mut self, lease: crate::lease::Lease) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Builds the lock-free [`Generator`].
    ///
    /// # Errors
    ///
    /// A [`BuildError`] if the node id or clock id does not fit the layout, a
    /// `NextClock` policy has no clock-id field to use, a `Borrow` allowance is
    /// shorter than one tick, the random start bound is out of range, (with
    /// [`persist`](Builder::persist)) the saved state cannot be used, or
    /// (with a lease) no node id can be leased.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, ManualClock, OnExhausted};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(9)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// assert_eq!(generator.layout().decode(generator.next_id())?.node_id(), 9);
    /// // Twitter's layout has no clock-id field to move to.
    /// let next_clock = Generator::builder(Layout::twitter()).node_id(1).on_exhausted(OnExhausted::NextClock);
    /// assert!(matches!(next_clock.build(), Err(BuildError::NeedsClockIdField { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(self) -> Result<Generator<C>, BuildError> {
        Ok(Generator::from_parts(self.into_parts()?))
    }

    /// Builds the [`MutexGenerator`] twin.
    ///
    /// # Errors
    ///
    /// As [`build`](Builder::build).
    ///
    /// ```
    /// use flakeid::{Generator, IdGenerator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(9)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build_mutex()?;
    /// let (a, b) = (generator.next_id(), generator.next_id());
    /// assert!(a < b);
    /// assert_eq!(generator.layout().decode(b)?.node_id(), 9);
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_mutex(self) -> Result<MutexGenerator<C>, BuildError> {
        Ok(MutexGenerator::from_parts(self.into_parts()?))
    }

    /// The lead allowance: how far ahead of the clock the policies let a
    /// timestamp run (`OnExhausted::Borrow`'s `max_ahead`, else zero).
    pub(crate) fn lead(&self) -> std::time::Duration {
        self.on_exhausted.lead()
    }

    /// Checks the configuration, claims the lease or starts restart safety
    /// if configured, and returns what a generator is made of.
    pub(crate) fn into_parts(self) -> Result<Components<C>, BuildError> {
        let mut config = self.config()?;
        let lead = self.lead();
        #[cfg(any(feature = "etcd", feature = "redis"))]
        let keeper = match &self.lease {
            Some(_) if self.persist.is_some() => {
                return Err(crate::LeaseError::Config {
                    reason: "a leased node id keeps its high-water mark in the lease's store; \
                             remove Builder::persist"
                        .into(),
                }
                .into());
            }
            Some(lease) => {
                let fence = Arc::new(Fence::new());
                let keeper = crate::lease::start(lease, &self.layout, lead, &fence, &self.events)?;
                config.fence = Some(fence);
                Some(keeper)
            }
            None => None,
        };
        #[cfg(not(any(feature = "etcd", feature = "redis")))]
        let keeper = None;
        let clock = match self.clock {
            ClockSource::Given(clock) => clock,
            ClockSource::Default(make) => make(),
        };
        let Some(persist) = &self.persist else {
            let plan = Plan::new(self.layout, config);
            let state = plan.initial_state();
            return Ok(Components {
                plan,
                clock,
                counters: self.counters,
                events: self.events.clone(),
                state,
                persister: None,
                keeper,
            });
        };
        let now_ms = clock.now_ms();
        let now_tick = self.layout.timestamp_at_clamped(now_ms);
        let started = persist::start(
            persist,
            &self.layout,
            config.node_id,
            self.clock_id,
            now_tick,
            lead,
            &self.events,
        )?;
        config.first_clock_id = started.clock_id;
        config.reservation = Some(started.reservation);
        let plan = Plan::new(self.layout, config);
        let state = match started.floor {
            Some(tick) => plan.state_after(tick),
            None => plan.initial_state(),
        };
        Ok(Components {
            plan,
            clock,
            counters: self.counters,
            events: self.events.clone(),
            state,
            persister: Some(started.persister),
            keeper: None,
        })
    }

    fn config(&self) -> Result<PlanConfig, BuildError> {
        let layout = &self.layout;
        #[cfg(any(feature = "etcd", feature = "redis"))]
        let leased = self.lease.is_some();
        #[cfg(not(any(feature = "etcd", feature = "redis")))]
        let leased = false;
        let node_id = match &self.node {
            // A layout without node fields has only node 0; a lease picks one.
            NodeSpec::Unset if layout.node_bits() == 0 || leased => 0,
            NodeSpec::Unset => return Err(BuildError::NodeIdNotSet),
            NodeSpec::Id(node) => *node,
            NodeSpec::Fields(fields) => {
                layout.node_id_from_fields(fields.iter().map(|(n, v)| (n.as_str(), *v)))?
            }
        };
        let node_bits = layout.node_mask_bits(node_id)?;
        let clock_field = layout.clock_id_field();
        match clock_field {
            Some(f) if self.clock_id > f.max() => {
                return Err(FieldError::OutOfRange {
                    field: "clock_id".into(),
                    value: self.clock_id,
                    max: f.max(),
                }
                .into());
            }
            None if self.clock_id != 0 => {
                return Err(FieldError::NoSuchField { field: "clock_id" }.into());
            }
            _ => {}
        }
        match self.on_exhausted {
            OnExhausted::NextClock => match clock_field {
                None => {
                    return Err(BuildError::NeedsClockIdField {
                        policy: "OnExhausted::NextClock",
                    });
                }
                Some(f) if f.shift() < layout.sequence_field().shift() => {
                    return Err(BuildError::ClockIdBelowSequence);
                }
                Some(_) => {}
            },
            OnExhausted::Borrow { max_ahead }
                if max_ahead.as_millis() < u128::from(layout.unit_ms()) =>
            {
                return Err(BuildError::BorrowTooShort {
                    max_ahead,
                    unit_ms: layout.unit_ms(),
                });
            }
            _ => {}
        }
        if self.on_behind == OnClockBehind::NextClock && clock_field.is_none() {
            return Err(BuildError::NeedsClockIdField {
                policy: "OnClockBehind::NextClock",
            });
        }
        let start_bound = match self.random_start {
            None => 0,
            Some(bound) if bound == 0 || bound > layout.capacity_per_tick() => {
                return Err(BuildError::RandomStartOutOfRange {
                    bound,
                    capacity: layout.capacity_per_tick(),
                });
            }
            Some(bound) => bound,
        };
        let seed = self
            .seed
            .unwrap_or_else(|| RandomState::new().hash_one("flakeid"));
        Ok(PlanConfig {
            node_bits,
            node_id,
            on_exhausted: self.on_exhausted,
            on_behind: self.on_behind,
            start_bound,
            seed,
            first_clock_id: self.clock_id,
            reservation: None,
            fence: self.fence.clone(),
        })
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::fence::Grant;

    const T: u64 = 1_700_000_000_000;

    /// Both generators behind one fence on a mocked monotonic clock.
    struct Fenced {
        fence: Arc<Fence>,
        mock: Arc<quanta::Mock>,
        gens: Vec<Box<dyn IdGenerator>>,
        clock: ManualClock,
    }

    fn fenced() -> Fenced {
        let (source, mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        let clock = ManualClock::new(T);
        let mut builder = Generator::builder(Layout::twitter())
            .single_node()
            .clock(clock.clone());
        builder.fence = Some(fence.clone());
        let gens: Vec<Box<dyn IdGenerator>> = vec![
            Box::new(builder.clone().build().unwrap()),
            Box::new(builder.build_mutex().unwrap()),
        ];
        Fenced {
            fence,
            mock,
            gens,
            clock,
        }
    }

    /// A grant of `node` on `layout`, issuing after `floor`, no ceiling.
    fn grant(layout: &Layout, node: u64, floor: u64) -> Grant {
        Grant {
            node_bits: layout.node_mask_bits(node).unwrap(),
            floor,
            ceiling: u64::MAX,
            rewind: false,
        }
    }

    /// A clock that serves queued readings (ms after a base), then repeats
    /// the last: a thread preempted between its clock read and its use of
    /// it, while others moved on, is a reading that comes out stale.
    pub(super) struct Readings(std::sync::Mutex<Vec<u64>>);

    impl Readings {
        pub(super) fn new(base: u64, readings: &[u64]) -> Readings {
            let r = Readings(std::sync::Mutex::new(Vec::new()));
            r.set(base, readings);
            r
        }

        pub(super) fn set(&self, base: u64, readings: &[u64]) {
            *self.0.lock().unwrap() = readings.iter().map(|ms| base + ms).collect();
        }
    }

    impl Clock for Readings {
        fn now_ms(&self) -> u64 {
            let mut queue = self.0.lock().unwrap();
            if queue.len() > 1 {
                queue.remove(0)
            } else {
                queue[0]
            }
        }
    }

    /// One of each generator behind `fence`, on `layout` with the policies.
    fn fenced_pair(
        fence: &Arc<Fence>,
        layout: Layout,
        clock: &ManualClock,
        on_exhausted: OnExhausted,
        on_behind: OnClockBehind,
    ) -> Vec<Box<dyn IdGenerator>> {
        let mut builder = Generator::builder(layout)
            .single_node()
            .clock(clock.clone())
            .on_exhausted(on_exhausted)
            .on_clock_behind(on_behind);
        builder.fence = Some(fence.clone());
        vec![
            Box::new(builder.clone().build().unwrap()),
            Box::new(builder.build_mutex().unwrap()),
        ]
    }

    fn node_of(g: &dyn IdGenerator, id: Id) -> u64 {
        g.layout().decode(id).unwrap().node_id()
    }

    #[test]
    fn a_closed_or_expired_fence_issues_nothing() {
        let Fenced {
            fence, mock, gens, ..
        } = fenced();
        for g in &gens {
            assert_eq!(g.poll_id(), Err(GenerateError::Fenced));
            assert_eq!(g.try_next_id(), Err(GenerateError::Fenced));
        }
        let layout = Layout::twitter();
        fence.open(grant(&layout, 9, 0), fence.now_ns() + 1_000_000);
        for g in &gens {
            assert_eq!(node_of(&**g, g.try_next_id().unwrap()), 9);
        }
        mock.increment(Duration::from_millis(2));
        for g in &gens {
            assert_eq!(g.try_next_id(), Err(GenerateError::Fenced));
        }
    }

    #[test]
    fn a_new_claim_switches_the_node_id_after_the_previous_holders_floor() {
        let Fenced {
            fence, gens, clock, ..
        } = fenced();
        let layout = Layout::twitter();
        let now_tick = layout.timestamp_at(T).unwrap();
        fence.open(grant(&layout, 3, 0), u64::MAX);
        let before: Vec<Id> = gens.iter().map(|g| g.next_id()).collect();
        // Node 3 is lost; node 4 is claimed, whose previous holder may have
        // issued up to 5 ms after our clock.
        fence.open(grant(&layout, 4, now_tick + 5), u64::MAX);
        for (g, before) in gens.iter().zip(before) {
            // Nothing at or below the floor: wait for the clock (Continue).
            assert!(matches!(
                g.poll_id(),
                Err(GenerateError::SequenceExhausted { .. })
            ));
            assert!(g.last_id() > before);
        }
        clock.advance(Duration::from_millis(6));
        for g in &gens {
            let id = g.next_id();
            let d = layout.decode(id).unwrap();
            assert_eq!((d.node_id(), d.timestamp()), (4, now_tick + 6));
        }
    }

    #[test]
    fn a_rewinding_claim_issues_back_at_the_clock_under_the_new_node_id() {
        let Fenced {
            fence, gens, clock, ..
        } = fenced();
        let layout = Layout::twitter();
        let now_tick = layout.timestamp_at(T).unwrap();
        let grant = |node, floor, rewind| Grant {
            rewind,
            ..grant(&layout, node, floor)
        };
        fence.open(grant(3, 0, false), u64::MAX);
        // (Both generators share the fence, so each is checked on its own.)
        let before: Vec<Vec<Id>> = gens.iter().map(|g| g.next_ids(10).collect()).collect();
        // The clock steps back a minute; rotate to node 8, last used long ago.
        clock.rewind(Duration::from_secs(60));
        fence.open(grant(8, now_tick - 3_600_000, true), u64::MAX);
        for (g, before) in gens.iter().zip(before) {
            let after: Vec<Id> = g.next_ids(10).collect();
            let d = layout.decode(after[0]).unwrap();
            assert_eq!((d.node_id(), d.timestamp()), (8, now_tick - 60_000));
            assert!(after.iter().all(|id| !before.contains(id)));
        }
    }

    /// A rotation moves the state back in time, to a new node id. A reading
    /// taken before the switch can be from before the clock stepped back
    /// (the keeper rotated meanwhile): entering its tick would put the
    /// timestamp ahead of the clock again, and ask for another rotation.
    #[test]
    fn after_a_rotation_a_reading_from_before_it_enters_no_tick() {
        let layout = Layout::twitter();
        let now_tick = layout.timestamp_at(T).unwrap();
        // Readings are ms after `base`: 60_000 is `now_tick`, 0 a minute back.
        let base = layout.unix_ms(now_tick) - 60_000;
        let grant = |node, floor, rewind| Grant {
            rewind,
            ..grant(&layout, node, floor)
        };
        // A leased generator reads the clock once per attempt: the lock-free
        // one after its load, the mutex twin under the lock.
        let stale = &[60_000, 0];
        for mutex in [false, true] {
            let (source, _mock) = quanta::Clock::mock();
            let fence = Arc::new(Fence::with_clock(source));
            fence.open(grant(3, 0, false), u64::MAX);
            let clock = Arc::new(Readings::new(base, &[60_000]));
            let mut builder = Generator::builder(layout.clone())
                .single_node()
                .clock(clock.clone());
            builder.fence = Some(fence.clone());
            let g: Box<dyn IdGenerator> = if mutex {
                Box::new(builder.build_mutex().unwrap())
            } else {
                Box::new(builder.build().unwrap())
            };
            let d = layout.decode(g.next_id()).unwrap();
            assert_eq!((d.node_id(), d.timestamp()), (3, now_tick));
            // The clock steps back a minute; the keeper rotates to node 8,
            // last used an hour ago, while this call's reading is older.
            fence.open(grant(8, now_tick - 3_600_000, true), u64::MAX);
            clock.set(base, stale);
            let d = layout.decode(g.next_id()).unwrap();
            assert_eq!(
                (d.node_id(), d.timestamp()),
                (8, now_tick - 60_000),
                "mutex {mutex}"
            );
        }
    }

    #[test]
    fn a_node_id_claimed_again_starts_after_the_floor_its_interim_holder_left() {
        let Fenced {
            fence, gens, clock, ..
        } = fenced();
        let layout = Layout::twitter();
        let now_tick = layout.timestamp_at(T).unwrap();
        let grant = |floor| grant(&layout, 3, floor);
        fence.open(grant(0), u64::MAX);
        for g in &gens {
            g.next_id();
        }
        // Lost node 3; someone else held it and issued up to 4 ms ahead of
        // our clock; now it is ours again, with their mark as the floor.
        fence.close();
        fence.open(grant(now_tick + 4), u64::MAX);
        clock.advance(Duration::from_millis(2));
        for g in &gens {
            assert!(matches!(
                g.poll_id(),
                Err(GenerateError::SequenceExhausted { .. })
            ));
        }
        clock.advance(Duration::from_millis(3));
        for g in &gens {
            let d = layout.decode(g.next_id()).unwrap();
            assert_eq!((d.node_id(), d.timestamp()), (3, now_tick + 5));
        }
    }

    /// A previous holder of the node id may have used every clock id up to
    /// the floor, so a `NextClock` step (to a fresh clock id in the floor's
    /// tick, or back to the clock's earlier tick) must not issue there.
    #[test]
    fn next_clock_policies_issue_nothing_at_or_below_the_leases_floor() {
        let layout = Layout::builder()
            .epoch_ms(1_600_000_000_000)
            .timestamp_bits(41)
            .clock_id(2)
            .node("worker", 4)
            .sequence(2)
            .build()
            .unwrap();
        let now_tick = layout.timestamp_at(T).unwrap();
        let policies = [
            (OnExhausted::NextClock, OnClockBehind::Continue),
            (OnExhausted::Wait, OnClockBehind::NextClock),
            (OnExhausted::NextClock, OnClockBehind::NextClock),
        ];
        // The floor at the clock's tick, and ahead of it (the previous
        // holder's ceiling, or its clock ahead of ours).
        for floor in [now_tick, now_tick + 5] {
            for (on_exhausted, on_behind) in policies {
                let (source, _mock) = quanta::Clock::mock();
                let fence = Arc::new(Fence::with_clock(source));
                let clock = ManualClock::new(T);
                fence.open(grant(&layout, 3, floor), u64::MAX);
                for g in fenced_pair(&fence, layout.clone(), &clock, on_exhausted, on_behind) {
                    let case =
                        format!("floor +{} {on_exhausted:?} {on_behind:?}", floor - now_tick);
                    for _ in 0..4 {
                        if let Ok(id) = g.poll_id() {
                            let d = layout.decode(id).unwrap();
                            assert!(
                                d.timestamp() > floor,
                                "{case}: issued {:?} at or below the floor",
                                d.parts()
                            );
                        }
                    }
                    // Once the clock passes the floor, issuing goes on.
                    clock.set_ms(layout.unix_ms(floor + 1));
                    let d = layout.decode(g.next_id()).unwrap();
                    assert_eq!((d.timestamp(), d.node_id()), (floor + 1, 3), "{case}");
                    clock.set_ms(T);
                }
            }
        }
    }

    /// A claim of another node id, while the clock still reads the tick
    /// issued under the old one, moves the state to the new node id with that
    /// tick used up. With the node field above the clock id, a
    /// `OnExhausted::NextClock` step in that tick would issue below the IDs
    /// just issued under a higher node id: the tick must be waited out.
    #[test]
    fn a_switch_to_a_lower_node_id_in_the_same_tick_keeps_ids_in_order() {
        let layout = Layout::builder()
            .epoch_ms(1_600_000_000_000)
            .timestamp_bits(41)
            .node("worker", 4)
            .clock_id(2)
            .sequence(1)
            .build()
            .unwrap();
        for on_behind in [OnClockBehind::Continue, OnClockBehind::NextClock] {
            let (source, _mock) = quanta::Clock::mock();
            let fence = Arc::new(Fence::with_clock(source));
            let clock = ManualClock::new(T);
            fence.open(grant(&layout, 9, 0), u64::MAX);
            let gens = fenced_pair(
                &fence,
                layout.clone(),
                &clock,
                OnExhausted::NextClock,
                on_behind,
            );
            // Each generator issues under node 9 in this tick, then the
            // keeper claims node 2 (a lower number) and the clock stays put.
            for g in gens {
                fence.open(grant(&layout, 9, 0), u64::MAX);
                let before = g.next_id();
                fence.open(grant(&layout, 2, 0), u64::MAX);
                for _ in 0..4 {
                    if let Ok(id) = g.poll_id() {
                        assert!(
                            id > before,
                            "{on_behind:?}: {:?} after {:?}",
                            layout.decode(id).unwrap().parts(),
                            layout.decode(before).unwrap().parts()
                        );
                    }
                }
                clock.advance(Duration::from_millis(1));
                let after = g.next_id();
                let (d, b) = (
                    layout.decode(after).unwrap(),
                    layout.decode(before).unwrap(),
                );
                assert_eq!((d.node_id(), d.timestamp()), (2, b.timestamp() + 1));
                assert!(after > before);
            }
        }
    }

    /// The node bits and timestamp a dropped generator tells its keeper.
    type Last = Option<(u64, u64)>;

    /// Records what dropped generators tell their keeper.
    #[derive(Clone, Default)]
    struct Recorder(Arc<std::sync::Mutex<Vec<Last>>>);

    impl Keeper for Recorder {
        fn release(self: Box<Self>, last: Last) {
            self.0.lock().unwrap().push(last);
        }
    }

    /// The keeper records the last timestamp it is told as the node id's
    /// mark, where the next holder starts: after an `OnClockBehind::NextClock`
    /// step the state's timestamp is below IDs already issued, so it must not
    /// be passed on as the last one.
    #[test]
    fn a_dropped_generator_never_tells_its_keeper_a_mark_below_its_ids() {
        let layout = Layout::builder()
            .epoch_ms(1_600_000_000_000)
            .timestamp_bits(41)
            .clock_id(2)
            .node("worker", 4)
            .sequence(2)
            .build()
            .unwrap();
        let node_bits = layout.node_mask_bits(3).unwrap();
        let (source, _mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        fence.open(grant(&layout, 3, 0), u64::MAX);
        let recorder = Recorder::default();
        for on_behind in [OnClockBehind::Continue, OnClockBehind::NextClock] {
            for mutex in [false, true] {
                let clock = ManualClock::new(T);
                let mut builder = Generator::builder(layout.clone())
                    .single_node()
                    .clock(clock.clone())
                    .on_clock_behind(on_behind);
                builder.fence = Some(fence.clone());
                let mut parts = builder.into_parts().unwrap();
                parts.keeper = Some(Box::new(recorder.clone()));
                let g: Box<dyn IdGenerator> = if mutex {
                    Box::new(MutexGenerator::from_parts(parts))
                } else {
                    Box::new(Generator::from_parts(parts))
                };
                let mut highest = 0;
                for step in [0i64, -1_000, 10, -50] {
                    match step {
                        0.. => clock.advance(Duration::from_millis(step.unsigned_abs())),
                        _ => clock.rewind(Duration::from_millis(step.unsigned_abs())),
                    }
                    let d = layout.decode(g.next_id()).unwrap();
                    highest = highest.max(d.timestamp());
                }
                drop(g);
                let told = recorder.0.lock().unwrap().pop().unwrap();
                // Exact where it can be, so a prompt restart need not wait.
                assert_eq!(told.is_some(), on_behind == OnClockBehind::Continue);
                if let Some((bits, ts)) = told {
                    assert_eq!(bits, node_bits);
                    assert!(
                        ts >= highest,
                        "{on_behind:?} mutex {mutex}: told {ts}, issued up to {highest}"
                    );
                }
            }
        }
    }

    #[test]
    fn no_tick_past_the_ceiling_until_the_store_records_it() {
        let Fenced {
            fence, gens, clock, ..
        } = fenced();
        let layout = Layout::twitter();
        let now_tick = layout.timestamp_at(T).unwrap();
        fence.open(
            Grant {
                ceiling: now_tick,
                ..grant(&layout, 2, 0)
            },
            u64::MAX,
        );
        for g in &gens {
            g.next_id();
        }
        clock.advance(Duration::from_millis(1));
        for g in &gens {
            // The next tick is past the ceiling: the keeper is asked to
            // record a later one, and the generator waits for it.
            assert_eq!(g.poll_id(), Err(GenerateError::Reserving));
        }
        assert_eq!(fence.wanted(), now_tick + 1);
        fence.extend(u64::MAX, now_tick + 1);
        for g in &gens {
            let d = layout.decode(g.try_next_id().unwrap()).unwrap();
            assert_eq!(d.timestamp(), now_tick + 1);
        }
    }

    #[test]
    fn a_long_rollback_asks_the_keeper_for_a_fresh_node_id() {
        let Fenced {
            fence, gens, clock, ..
        } = fenced();
        let layout = Layout::twitter();
        fence.rotate_after(5_000);
        fence.open(grant(&layout, 6, 0), u64::MAX);
        for g in &gens {
            g.next_id();
        }
        clock.rewind(Duration::from_secs(4));
        for g in &gens {
            g.next_id();
        }
        assert_eq!(fence.take_rotation(), None, "4 s is below the threshold");
        clock.rewind(Duration::from_secs(2));
        let now_tick = layout.timestamp_at(clock.now_ms()).unwrap();
        gens[0].next_id();
        assert_eq!(
            fence.take_rotation(),
            Some((layout.node_mask_bits(6).unwrap(), now_tick))
        );
    }

    #[test]
    fn a_leased_generator_reports_the_granted_node_id_before_its_first_id() {
        let Fenced { fence, gens, .. } = fenced();
        let layout = Layout::twitter();
        fence.open(grant(&layout, 11, 0), u64::MAX);
        let mut builder = Generator::builder(Layout::twitter())
            .node_id(1)
            .clock(ManualClock::new(T));
        builder.fence = Some(fence.clone());
        let g = builder.build().unwrap();
        assert_eq!(g.node_id(), 11);
        assert_eq!(gens.len(), 2);
    }

    #[test]
    fn next_id_waits_for_a_fresh_claim() {
        let Fenced { fence, gens, .. } = fenced();
        let layout = Layout::twitter();
        for g in &gens {
            let id = std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    fence.open(grant(&layout, 7, 0), u64::MAX);
                });
                g.next_id()
            });
            assert_eq!(node_of(&**g, id), 7);
            fence.close();
        }
    }
}
