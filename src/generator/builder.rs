//! Configuring a generator: the [`Builder`], and what it builds
//! ([`Components`], from which either twin is made).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use super::cell::SharedCell;
use super::plan::{Plan, PlanConfig};
use super::policy::{OnClockBehind, OnExhausted};
use super::{Generator, MutexGenerator, SharedGenerator};
use crate::clock::{Clock, MonotonicClock};
use crate::error::BuildError;
use crate::events::{EventHook, Events};
use crate::fence::{Fence, Keeper};
use crate::id::Id;
use crate::layout::FieldError;
use crate::layout::Layout;
use crate::persist::{self, Persist, Persister};

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
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
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
            #[cfg(any(
                feature = "etcd",
                feature = "redis",
                feature = "postgres",
                feature = "mysql"
            ))]
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

    /// Sets one named node field. Every node field of the layout must be set
    /// (a field meant to be 0 is set to 0): `build` refuses a field left
    /// out, naming it, since every host that forgot it would issue the same
    /// IDs. Replaces an earlier `node_id`.
    ///
    /// ```
    /// use flakeid::{BuildError, FieldError, Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::discord())
    ///     .node_field("worker", 0)
    ///     .node_field("process", 2)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// assert_eq!(generator.node_id(), 2); // worker 0, process 2
    /// let forgot = Generator::builder(Layout::discord()).node_field("process", 2).build();
    /// assert_eq!(
    ///     forgot.err(),
    ///     Some(BuildError::Field(FieldError::NodeFieldNotSet { field: "worker".into() }))
    /// );
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
            #[cfg(any(
                feature = "etcd",
                feature = "redis",
                feature = "postgres",
                feature = "mysql"
            ))]
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

    /// Turns the [`Stats`](crate::Stats) counters on. Off by default: counting issued IDs is
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
    /// [`GenerateError::Fenced`](crate::GenerateError::Fenced) otherwise, and [`Generator::next_id`] waits
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
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let generator = Generator::builder(Layout::twitter()).lease(lease).build()?;
    /// let id = generator.try_next_id()?; // Err(Fenced) if the lease lapsed
    /// assert_eq!(generator.layout().decode(id)?.node_id(), generator.node_id());
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
    /// use flakeid::{Generator, Layout, ManualClock};
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

    /// Builds a [`SharedGenerator`] over `word`, a state word that other
    /// generators (other processes, through shared memory) advance too:
    /// together they issue each ID once, with the lock-free generator's
    /// compare-and-swap. A zero word is a new one; otherwise it must hold a
    /// state installed by a generator of this layout and node id.
    ///
    /// # Errors
    ///
    /// As [`build`](Builder::build); [`BuildError::SharedWordNodeId`] if
    /// the word holds another node id's state;
    /// [`BuildError::SharedWordUnsupported`] with
    /// [`persist`](Builder::persist) or a lease, which belong to one
    /// generator (the word's owner keeps it safe across restarts).
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, ManualClock};
    /// use std::sync::atomic::AtomicU64;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// static WORD: AtomicU64 = AtomicU64::new(0);
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let one = Generator::builder(Layout::twitter()).node_id(4).clock(clock.clone());
    /// let (a, b) = (one.clone().build_shared(&WORD)?, one.build_shared(&WORD)?);
    /// let ids = [a.next_id(), b.next_id(), a.next_id()];
    /// assert!(ids[0] < ids[1] && ids[1] < ids[2]);
    /// let other = Generator::builder(Layout::twitter()).node_id(5).clock(clock).build_shared(&WORD);
    /// assert!(matches!(other, Err(BuildError::SharedWordNodeId { found: 4, node_id: 5 })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn build_shared(
        self,
        word: &'static crate::primitive::AtomicU64,
    ) -> Result<SharedGenerator<C>, BuildError> {
        if self.persist.is_some() {
            return Err(BuildError::SharedWordUnsupported {
                option: "Builder::persist",
            });
        }
        #[cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        ))]
        if self.lease.is_some() {
            return Err(BuildError::SharedWordUnsupported {
                option: "Builder::lease",
            });
        }
        let parts = self.into_parts()?;
        let mask = parts.plan.node_mask();
        let cell = SharedCell::adopt(word, parts.state, mask).map_err(|found| {
            let node_of = |state: u64| {
                parts
                    .plan
                    .layout
                    .decode(Id::from_u64(state & mask))
                    .map_or(0, |d| d.node_id())
            };
            BuildError::SharedWordNodeId {
                found: node_of(found),
                node_id: node_of(parts.state),
            }
        })?;
        Ok(SharedGenerator::from_shared(parts, cell))
    }

    /// How far ahead of the clock the timestamp may run: the
    /// [`OnExhausted::Borrow`] allowance, zero under the other policies. A
    /// lease's keeper and the persistence writer reserve that far ahead.
    pub(crate) fn lead(&self) -> Duration {
        self.on_exhausted.lead()
    }

    /// Validates the configuration and makes what a generator is made of:
    /// claims a leased node id and starts its keeper, or opens the saved
    /// state and starts its writer.
    pub(crate) fn into_parts(self) -> Result<Components<C>, BuildError> {
        let lead = self.lead();
        let mut config = self.config()?;
        #[cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        ))]
        let keeper = match &self.lease {
            Some(_) if self.persist.is_some() => {
                return Err(crate::error::LeaseError::Config {
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
        #[cfg(not(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )))]
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
        #[cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        ))]
        let leased = self.lease.is_some();
        #[cfg(not(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )))]
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
