//! The generator the bindings share: the library's lock-free generator
//! behind a pointer that fork detection and closing can swap, with calls
//! split into a part that never blocks (run under the interpreter's lock)
//! and a part that may (run without it).

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::time::Duration;

use flakeid::{GenerateError, Layout, OnClockBehind, OnExhausted, Stats};

use crate::config::{Config, NodeSource};
use crate::error::{Error, ErrorKind};
use crate::fork;

/// How a call treats what stops it from issuing at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// `poll`: never waits for IDs; reports what stops it
    /// (`SequenceExhausted`, `ClockBehind`, `Reserving`, `Storage`,
    /// `Fenced`, `Expired`).
    Never,
    /// `try`: waits as the policies say (the next tick, a clock behind
    /// under `wait`, a reservation being saved), reports what a policy
    /// reports, and `Fenced` and `Storage` at once.
    Report,
    /// `next`: as `Report`, and also waits out a fenced lease and a failing
    /// store; reports only what a policy says to report, and `Expired`.
    Always,
}

/// Why a call that must not block stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// The call would wait: make it again with the blocking method, without
    /// the interpreter's lock.
    Wait,
    /// The call fails with this error (no need to wait to know).
    Fail(Error),
}

/// What a generator can do now, for a readiness probe.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Health {
    /// IDs are issued.
    Issuing,
    /// The node-id lease is not proven valid: nothing is issued until a
    /// fresh claim.
    Fenced {
        /// How long the lease has been lapsed.
        closed_for: Duration,
    },
    /// Restart safety's last save failed: IDs are issued while the reserved
    /// ticks last.
    StorageFailing {
        /// The storage error.
        reason: String,
    },
    /// The clock is past the layout's last instant.
    Expired {
        /// The layout's last instant, in Unix milliseconds.
        last_ms: u64,
    },
    /// Built before this process was forked. `leased`: the next call
    /// claims a fresh node id; otherwise every call fails with `Forked`.
    Forked {
        /// Whether the node id is leased (and so is claimed afresh here).
        leased: bool,
    },
    /// Closed.
    Closed,
}

impl Health {
    /// `issuing`, `fenced`, `storage_failing`, `expired`, `forked` or
    /// `closed`.
    ///
    /// ```
    /// use flakeid_bindings::Health;
    ///
    /// assert_eq!(Health::Forked { leased: true }.state(), "forked");
    /// ```
    pub fn state(&self) -> &'static str {
        match self {
            Health::Issuing => "issuing",
            Health::Fenced { .. } => "fenced",
            Health::StorageFailing { .. } => "storage_failing",
            Health::Expired { .. } => "expired",
            Health::Forked { .. } => "forked",
            Health::Closed => "closed",
        }
    }

    /// True only while issuing.
    ///
    /// ```
    /// use flakeid_bindings::Health;
    ///
    /// assert!(Health::Issuing.is_ready());
    /// assert!(!Health::Closed.is_ready());
    /// ```
    pub fn is_ready(&self) -> bool {
        matches!(self, Health::Issuing)
    }

    /// A sentence for logs and probes.
    ///
    /// ```
    /// use flakeid_bindings::Health;
    ///
    /// assert_eq!(Health::Issuing.describe(), "issuing");
    /// ```
    pub fn describe(&self) -> String {
        match self {
            Health::Issuing => "issuing".into(),
            Health::Fenced { closed_for } => {
                format!("fenced: the node-id lease lapsed {closed_for:?} ago")
            }
            Health::StorageFailing { reason } => format!("storage failing: {reason}"),
            Health::Expired { last_ms } => {
                format!("expired: the layout ended at {last_ms} ms since 1970")
            }
            Health::Forked { leased: true } => {
                "forked: built before this process was forked; the next call claims a fresh \
                 node id"
                    .into()
            }
            Health::Forked { leased: false } => {
                "forked: built before this process was forked; build it again here".into()
            }
            Health::Closed => "closed".into(),
        }
    }
}

/// A built generator and the process it belongs to.
struct Engine {
    /// The fork count it was built under: it issues only where that is
    /// still the count.
    forks: u64,
    /// The process that built it, for the `Forked` message.
    pid: u32,
    leased: bool,
    generator: flakeid::Generator,
}

impl Engine {
    fn build(config: &Config) -> Result<Engine, Error> {
        fork::install();
        let forks = fork::count();
        let layout = &config.layout;
        let mut builder = flakeid::Generator::builder(layout.clone());
        let leased = matches!(config.node, NodeSource::Lease(_));
        builder = match &config.node {
            NodeSource::Unset => builder,
            NodeSource::Id(node) => builder.node_id(*node),
            NodeSource::Fields(fields) => fields
                .iter()
                .fold(builder, |b, (name, value)| b.node_field(name, *value)),
            NodeSource::Env(var) => builder.node_id(flakeid::node_id::from_env(var, layout)?),
            NodeSource::StatefulSet => builder.node_id(flakeid::node_id::from_statefulset(layout)?),
            NodeSource::Hostname(name) => {
                builder.node_id(flakeid::node_id::from_hostname(name, layout)?)
            }
            NodeSource::Single => builder.single_node(),
            #[cfg(any(
                feature = "etcd",
                feature = "redis",
                feature = "postgres",
                feature = "mysql"
            ))]
            NodeSource::Lease(lease) => builder.lease(lease.lease()?),
            #[cfg(not(any(
                feature = "etcd",
                feature = "redis",
                feature = "postgres",
                feature = "mysql"
            )))]
            NodeSource::Lease(lease) => return Err(crate::config::not_built_with(&lease.store)),
        };
        builder = builder
            .on_exhausted(config.on_exhausted)
            .on_clock_behind(config.on_clock_behind)
            .clock_id(config.clock_id)
            .counters(config.counters);
        if let Some(bound) = config.random_start {
            builder = builder.random_start(bound);
        }
        if let Some(seed) = config.seed {
            builder = builder.seed(seed);
        }
        if let Some(persist) = &config.persist {
            builder = builder.persist(persist.persist());
        }
        let generator = builder.build()?;
        Ok(Engine {
            forks,
            pid: std::process::id(),
            leased,
            generator,
        })
    }
}

/// Ends an engine's life in this process: dropped (releasing its lease,
/// saving its last mark) if it was built here; forgotten if it was built
/// before a fork, so that nothing of its keeper or writer, whose threads
/// live only in the parent, is touched, and the parent's lease and state
/// stay the parent's.
fn retire(engine: Box<Engine>) {
    if engine.forks == fork::count() {
        drop(engine);
    } else {
        std::mem::forget(engine);
    }
}

/// `calls`: the closed bit ...
const CLOSED: u64 = 1 << 63;
/// ... the fork count the count below belongs to (bits 32..63) ...
const FORKS_SHIFT: u32 = 32;
/// ... and the blocking calls in flight (bits 0..32).
const COUNT_MASK: u64 = (1 << FORKS_SHIFT) - 1;

/// A generator for the bindings; see the [crate docs](crate) for how a
/// binding calls it.
///
/// # Fork safety
///
/// A process forked after the generator was built (gunicorn, uWSGI,
/// Celery, `multiprocessing` with the fork start method) carries a copy of
/// it. Every call compares the fork count it was built under with the
/// process's ([`pthread_atfork`](https://man7.org/linux/man-pages/man3/pthread_atfork.3.html)
/// keeps that count; the hot path pays one relaxed load). In a forked child:
///
/// - **A leased node id**: the first call claims a fresh node id from the
///   store (a round trip, like building) and issues under it. The copy of
///   the parent's generator is never used nor dropped in the child: its
///   lease keeper and its locks belong to the parent's threads, and
///   releasing its node id would take it from the parent, which still
///   holds it.
/// - **Any other node id** (a number, fields, the environment, a
///   StatefulSet ordinal, single node), with or without persistence:
///   every call fails with [`ErrorKind::Forked`], saying to build the
///   generator after the fork or to lease the node id. The copy is never
///   dropped either (its persistence writer is the parent's).
///
/// Generators built in the child behave as anywhere (the library's default
/// clock starts a refresh thread of the child's own).
pub struct Generator {
    config: Config,
    /// The engine, or null once closed. Swapped for a fresh one only in a
    /// forked child (the old one is then never freed there), and to null by
    /// [`begin_close`](Generator::begin_close).
    engine: AtomicPtr<Engine>,
    /// Blocking calls in flight (for closing), and the closed bit.
    calls: AtomicU64,
    /// A claim in a forked child in progress: the claiming process's fork
    /// count plus one (0: none). A value from an ancestor is stale: the
    /// thread that set it does not exist here.
    claiming: AtomicU64,
}

// SAFETY: the raw pointer is to an `Engine`, a `flakeid::Generator` that is
// Send and Sync, and it is only read through `&Engine`.
unsafe impl Send for Generator {}
// SAFETY: as above; all shared state is atomics and the engine.
unsafe impl Sync for Generator {}

impl Generator {
    /// Builds a generator: checks the configuration, reads an environment
    /// or host name node id, opens the saved state, or claims a leased node
    /// id. Blocks for the store (at most the lease's connect timeout); call
    /// it without the interpreter's lock.
    ///
    /// # Errors
    ///
    /// `NodeId`, `Config`, `State` or `Lease`, saying what is wrong.
    ///
    /// ```
    /// use flakeid_bindings::{Config, ErrorKind, Generator};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::new("twitter")?;
    /// let err = Generator::build(config).err().ok_or("built")?;
    /// assert_eq!(err.kind(), ErrorKind::NodeId); // no silent node 0
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(config: Config) -> Result<Generator, Error> {
        let engine = Engine::build(&config)?;
        Ok(Generator {
            config,
            engine: AtomicPtr::new(Box::into_raw(Box::new(engine))),
            calls: AtomicU64::new(0),
            claiming: AtomicU64::new(0),
        })
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The layout of its IDs.
    pub fn layout(&self) -> &Layout {
        &self.config.layout
    }

    /// The engine, if it belongs to this process.
    #[inline(always)]
    fn current(&self) -> Option<&Engine> {
        let engine = self.engine.load(Ordering::Acquire);
        // SAFETY: a non-null engine is freed only by `Closing::finish`,
        // after `begin_close` swapped it out; the caller of `begin_close`
        // promises that no non-blocking call runs meanwhile, and blocking
        // calls hold `calls`, which `finish` waits out. A forked child's
        // old engine is never freed.
        match unsafe { engine.as_ref() } {
            Some(e) if e.forks == fork::count() => Some(e),
            _ => None,
        }
    }

    /// One ID without blocking: the hot path. On [`Blocked::Wait`], call
    /// [`id_blocking`](Generator::id_blocking) with the same `wait`,
    /// without the interpreter's lock.
    ///
    /// ```
    /// use flakeid_bindings::{Config, Generator, NodeSource, Wait};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut config = Config::new("twitter")?;
    /// config.node = NodeSource::Id(7);
    /// let generator = Generator::build(config)?;
    /// let id = match generator.id_now(Wait::Always) {
    ///     Ok(id) => id,
    ///     Err(_) => generator.id_blocking(Wait::Always)?,
    /// };
    /// assert_eq!(flakeid_bindings::decode(generator.layout(), id)?.node_id, 7);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Blocked::Fail`] with what the call reports without waiting;
    /// [`Blocked::Wait`] if it would wait.
    #[inline]
    pub fn id_now(&self, wait: Wait) -> Result<u64, Blocked> {
        match self.current() {
            Some(engine) => match engine.generator.poll_id() {
                Ok(id) => Ok(id.to_u64()),
                Err(e) => Err(self.stalled(e, wait)),
            },
            None => Err(self.not_current(wait)),
        }
    }

    /// One ID, waiting as `wait` says. Call it without the interpreter's
    /// lock.
    ///
    /// # Errors
    ///
    /// What `wait` reports; `Closed`; `Forked`; a `Lease` error if a forked
    /// child cannot claim its node id.
    ///
    /// ```
    /// use flakeid_bindings::{Config, Generator, NodeSource, Wait};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut config = Config::new("twitter")?;
    /// config.node = NodeSource::Single;
    /// let generator = Generator::build(config)?;
    /// assert!(generator.id_blocking(Wait::Report)? < generator.id_blocking(Wait::Always)?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn id_blocking(&self, wait: Wait) -> Result<u64, Error> {
        let _call = self.enter()?;
        loop {
            let engine = self.engine_for_call()?;
            let issued = match wait {
                Wait::Never => engine.generator.poll_id(),
                Wait::Report | Wait::Always => engine.generator.try_next_id(),
            };
            match issued {
                Ok(id) => return Ok(id.to_u64()),
                Err(e) => self.retry_or_fail(e, wait)?,
            }
        }
    }

    /// Fills `out` with consecutive IDs without blocking, in increasing
    /// order. Returns how many it wrote and, if fewer than `out.len()`,
    /// why it stopped: on [`Blocked::Wait`], fill the rest with
    /// [`fill_blocking`](Generator::fill_blocking) without the
    /// interpreter's lock. Under [`Wait::Never`] it stops without an error
    /// once at least one ID is written and the next would wait.
    ///
    /// ```
    /// use flakeid_bindings::{Config, Generator, NodeSource, Wait};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut config = Config::new("twitter")?;
    /// config.node = NodeSource::Id(1);
    /// let generator = Generator::build(config)?;
    /// let mut ids = vec![0; 10_000];
    /// let (written, stop) = generator.fill_now(&mut ids, Wait::Always);
    /// if stop.is_some() {
    ///     generator.fill_blocking(&mut ids[written..], Wait::Always)?;
    /// }
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn fill_now(&self, out: &mut [u64], wait: Wait) -> (usize, Option<Blocked>) {
        let Some(engine) = self.current() else {
            return (0, (!out.is_empty()).then(|| self.not_current(wait)));
        };
        let mut written = 0;
        while written < out.len() {
            match engine.generator.poll_ids(out.len() - written) {
                Ok(batch) => {
                    for (slot, id) in out[written..].iter_mut().zip(batch) {
                        *slot = id.to_u64();
                        written += 1;
                    }
                }
                Err(_) if wait == Wait::Never && written > 0 => break,
                Err(e) => return (written, Some(self.stalled(e, wait))),
            }
        }
        (written, None)
    }

    /// Fills `out` with consecutive IDs, waiting as `wait` says (under
    /// [`Wait::Never`] only for a forked child's claim); returns how many it
    /// wrote: all of `out`, or under `Never` at least one. Call it without
    /// the interpreter's lock.
    ///
    /// # Errors
    ///
    /// As [`id_blocking`](Generator::id_blocking); IDs written before the
    /// error are not handed out.
    pub fn fill_blocking(&self, out: &mut [u64], wait: Wait) -> Result<usize, Error> {
        let _call = self.enter()?;
        let mut written = 0;
        while written < out.len() {
            let engine = self.engine_for_call()?;
            let n = out.len() - written;
            let batch = match wait {
                Wait::Never => engine.generator.poll_ids(n),
                Wait::Report | Wait::Always => engine.generator.try_next_ids(n),
            };
            match batch {
                Ok(batch) => {
                    for (slot, id) in out[written..].iter_mut().zip(batch) {
                        *slot = id.to_u64();
                        written += 1;
                    }
                }
                Err(_) if wait == Wait::Never && written > 0 => break,
                Err(e) => self.retry_or_fail(e, wait)?,
            }
        }
        Ok(written)
    }

    /// What a non-blocking call that stalled on `e` does.
    #[cold]
    fn stalled(&self, e: GenerateError, wait: Wait) -> Blocked {
        let config = &self.config;
        let fails = match (wait, &e) {
            (Wait::Never, _) | (_, GenerateError::Expired { .. }) => true,
            (Wait::Report, GenerateError::Fenced | GenerateError::Storage(_)) => true,
            (_, GenerateError::SequenceExhausted { .. }) => {
                config.on_exhausted == OnExhausted::Error
            }
            (_, GenerateError::ClockBehind { .. }) => {
                config.on_clock_behind == OnClockBehind::Error
            }
            _ => false,
        };
        if fails {
            Blocked::Fail(e.into())
        } else {
            Blocked::Wait
        }
    }

    /// What a blocking call does after the library reported `e`: waits a
    /// little and returns (to try again), or fails.
    #[cold]
    fn retry_or_fail(&self, e: GenerateError, wait: Wait) -> Result<(), Error> {
        match (wait, &e) {
            // The library's `next_id` waits these out the same way.
            (Wait::Always, GenerateError::Fenced | GenerateError::Storage(_)) => {
                if self.calls.load(Ordering::Acquire) & CLOSED != 0 {
                    return Err(closed());
                }
                std::thread::sleep(Duration::from_millis(2));
                Ok(())
            }
            _ => Err(e.into()),
        }
    }

    /// A non-blocking call found no engine of this process.
    #[cold]
    fn not_current(&self, wait: Wait) -> Blocked {
        let engine = self.engine.load(Ordering::Acquire);
        // SAFETY: as in `current`.
        match unsafe { engine.as_ref() } {
            None => Blocked::Fail(closed()),
            Some(e) if e.forks == fork::count() => {
                // Claimed by another thread between the two loads.
                let _ = wait;
                Blocked::Wait
            }
            Some(e) if e.leased => Blocked::Wait,
            Some(e) => Blocked::Fail(self.forked(e)),
        }
    }

    /// The engine a blocking call issues from: this process's, claiming a
    /// fresh node id first in a forked child with a lease.
    fn engine_for_call(&self) -> Result<&Engine, Error> {
        loop {
            let engine = self.engine.load(Ordering::Acquire);
            // SAFETY: as in `current`; this call holds `calls`.
            let Some(e) = (unsafe { engine.as_ref() }) else {
                return Err(closed());
            };
            let forks = fork::count();
            if e.forks == forks {
                return Ok(e);
            }
            if !e.leased {
                return Err(self.forked(e));
            }
            self.claim_after_fork(forks, engine)?;
        }
    }

    /// In a forked child: builds a generator of the same configuration,
    /// which claims a fresh node id, and puts it in place of `inherited`,
    /// which is never dropped here. One thread claims; the others wait.
    #[cold]
    fn claim_after_fork(&self, forks: u64, inherited: *mut Engine) -> Result<(), Error> {
        let mine = forks + 1;
        loop {
            let claiming = self.claiming.load(Ordering::Acquire);
            if claiming == mine {
                // Another thread of this process claims: wait for it.
                if self.calls.load(Ordering::Acquire) & CLOSED != 0 {
                    return Err(closed());
                }
                std::thread::sleep(Duration::from_millis(1));
                if self.engine.load(Ordering::Acquire) != inherited {
                    return Ok(());
                }
                continue;
            }
            if self
                .claiming
                .compare_exchange(claiming, mine, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            let claimed = if self.engine.load(Ordering::Acquire) != inherited {
                Ok(())
            } else {
                Engine::build(&self.config).and_then(|fresh| {
                    let fresh = Box::into_raw(Box::new(fresh));
                    match self.engine.compare_exchange(
                        inherited,
                        fresh,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => Ok(()),
                        Err(_) => {
                            // Closed meanwhile: give the fresh node id back.
                            // SAFETY: `fresh` was never published.
                            retire(unsafe { Box::from_raw(fresh) });
                            Err(closed())
                        }
                    }
                })
            };
            self.claiming.store(0, Ordering::Release);
            return claimed;
        }
    }

    fn forked(&self, engine: &Engine) -> Error {
        let persist = if self.config.persist.is_some() {
            ", and its saved state belongs to that process"
        } else {
            ""
        };
        Error::new(
            ErrorKind::Forked,
            format!(
                "this generator was built in process {} before this process ({}) was forked \
                 from it; its node id {} is not leased{persist}, so IDs made here could repeat \
                 the parent's or a sibling's: build the generator after the fork (gunicorn: a \
                 post_fork hook; multiprocessing: inside the worker), or lease the node id, \
                 which claims a fresh one in each forked process",
                engine.pid,
                std::process::id(),
                engine.generator.node_id(),
            ),
        )
    }

    /// Counts a blocking call in flight, unless closed. Counts left by an
    /// ancestor's threads (which do not exist here) are dropped.
    fn enter(&self) -> Result<Call<'_>, Error> {
        let forks = fork::count() << FORKS_SHIFT;
        let mut calls = self.calls.load(Ordering::SeqCst);
        loop {
            if calls & CLOSED != 0 {
                return Err(closed());
            }
            let next = if calls & !COUNT_MASK == forks {
                calls + 1
            } else {
                forks | 1
            };
            match self
                .calls
                .compare_exchange_weak(calls, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(Call(self)),
                Err(actual) => calls = actual,
            }
        }
    }

    /// Whether blocking calls of this process are in flight.
    fn calls_in_flight(&self) -> bool {
        let calls = self.calls.load(Ordering::SeqCst);
        calls & !CLOSED & !COUNT_MASK == fork::count() << FORKS_SHIFT && calls & COUNT_MASK != 0
    }

    /// Closes the generator, first step: every later call fails with
    /// `Closed`. Finish with [`Closing::finish`], which waits for the
    /// blocking calls in flight and then releases the lease or saves the
    /// last mark (which blocks: call it without the interpreter's lock).
    /// Closing again does nothing. In a forked child, the parent's copy is
    /// not released (it is the parent's).
    ///
    /// # Safety
    ///
    /// No non-blocking call ([`id_now`](Generator::id_now),
    /// [`fill_now`](Generator::fill_now), the getters) may run on this
    /// generator at the same time: the caller serializes them, as Python's
    /// interpreter lock and Node's JavaScript thread do.
    ///
    /// ```
    /// use flakeid_bindings::{Config, ErrorKind, Generator, NodeSource, Wait};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut config = Config::new("twitter")?;
    /// config.node = NodeSource::Id(3);
    /// let generator = Generator::build(config)?;
    /// // SAFETY: this thread makes every call.
    /// unsafe { generator.begin_close() }.finish();
    /// let err = generator.id_blocking(Wait::Always).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Closed);
    /// # Ok(())
    /// # }
    /// ```
    pub unsafe fn begin_close(&self) -> Closing<'_> {
        self.calls.fetch_or(CLOSED, Ordering::SeqCst);
        let engine = self.engine.swap(ptr::null_mut(), Ordering::SeqCst);
        Closing {
            generator: self,
            engine,
        }
    }

    /// What it can do now; reads the clock and the lease's and storage's
    /// state, issues nothing.
    ///
    /// ```
    /// use flakeid_bindings::{Config, Generator, Health, NodeSource};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut config = Config::new("twitter")?;
    /// config.node = NodeSource::Id(3);
    /// assert_eq!(Generator::build(config)?.health(), Health::Issuing);
    /// # Ok(())
    /// # }
    /// ```
    pub fn health(&self) -> Health {
        let engine = self.engine.load(Ordering::Acquire);
        // SAFETY: as in `current`.
        let Some(e) = (unsafe { engine.as_ref() }) else {
            return Health::Closed;
        };
        if e.forks != fork::count() {
            return Health::Forked { leased: e.leased };
        }
        match e.generator.health() {
            flakeid::Health::Fenced { closed_for } => Health::Fenced { closed_for },
            flakeid::Health::StorageFailing(error) => Health::StorageFailing {
                reason: error.to_string(),
            },
            flakeid::Health::Expired { last_ms } => Health::Expired { last_ms },
            _ => Health::Issuing,
        }
    }

    /// This process's engine, or the reason there is none.
    fn engine_here(&self) -> Result<&Engine, Error> {
        if let Some(e) = self.current() {
            return Ok(e);
        }
        match self.not_current(Wait::Never) {
            Blocked::Fail(e) => Err(e),
            Blocked::Wait => Err(Error::new(
                ErrorKind::Fenced,
                "this process was forked after the generator was built; its node id is \
                 claimed by the next call that issues IDs",
            )),
        }
    }

    /// The node id in its IDs: the configured one, or the one its lease
    /// holds now.
    ///
    /// # Errors
    ///
    /// `Closed`; `Forked`; `Fenced` in a forked child whose fresh node id
    /// is not claimed yet.
    pub fn node_id(&self) -> Result<u64, Error> {
        Ok(self.engine_here()?.generator.node_id())
    }

    /// The largest ID issued so far (or a point the generator moved past).
    ///
    /// # Errors
    ///
    /// As [`node_id`](Generator::node_id).
    pub fn last_id(&self) -> Result<u64, Error> {
        Ok(self.engine_here()?.generator.last_id().to_u64())
    }

    /// The counters, if the configuration turned them on.
    ///
    /// # Errors
    ///
    /// As [`node_id`](Generator::node_id).
    pub fn stats(&self) -> Result<Option<Stats>, Error> {
        Ok(self.engine_here()?.generator.stats())
    }

    /// How many free node ids the lease's claims passed over for marks too
    /// far ahead of the clock (0 without a lease).
    ///
    /// # Errors
    ///
    /// As [`node_id`](Generator::node_id).
    pub fn lease_skipped_node_ids(&self) -> Result<u64, Error> {
        let engine = self.engine_here()?;
        #[cfg(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        ))]
        return Ok(engine.generator.lease_skipped_node_ids());
        #[cfg(not(any(
            feature = "etcd",
            feature = "redis",
            feature = "postgres",
            feature = "mysql"
        )))]
        {
            let _ = engine;
            Ok(0)
        }
    }

    /// The largest ID a layout can hold, for a cheap native call to compare
    /// the hot path with (the benchmarks' floor): the work of a call that
    /// returns an ID-sized integer and does nothing else.
    #[doc(hidden)]
    #[inline]
    pub fn floor(&self) -> u64 {
        u64::MAX >> 1
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        let engine = std::mem::replace(self.engine.get_mut(), ptr::null_mut());
        if !engine.is_null() {
            // SAFETY: `&mut self`: no call is in flight, and the pointer
            // came from `Box::into_raw`.
            retire(unsafe { Box::from_raw(engine) });
        }
    }
}

/// A blocking call in flight.
struct Call<'a>(&'a Generator);

impl Drop for Call<'_> {
    fn drop(&mut self) {
        let forks = fork::count() << FORKS_SHIFT;
        // Only this process's count: a count inherited from an ancestor
        // was dropped when this process's first call entered.
        let _ = self
            .0
            .calls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |calls| {
                (calls & !CLOSED & !COUNT_MASK == forks && calls & COUNT_MASK != 0)
                    .then(|| calls - 1)
            });
    }
}

/// A generator being closed; see [`Generator::begin_close`].
#[must_use = "finish() releases the lease or saves the last mark"]
pub struct Closing<'a> {
    generator: &'a Generator,
    engine: *mut Engine,
}

// SAFETY: the engine is Send; `finish` frees it on whichever thread runs it.
unsafe impl Send for Closing<'_> {}

impl Closing<'_> {
    /// Waits for the blocking calls in flight to end (they notice the
    /// close within a few milliseconds, or when the wait they are in ends),
    /// then releases the lease or saves the last mark. Blocks: call it
    /// without the interpreter's lock.
    pub fn finish(self) {
        while self.generator.calls_in_flight() {
            std::thread::sleep(Duration::from_millis(1));
        }
        if !self.engine.is_null() {
            // SAFETY: swapped out of the generator by `begin_close`, so no
            // new call reaches it, and no call in flight is left.
            retire(unsafe { Box::from_raw(self.engine) });
        }
    }
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the generator is closed")
}
