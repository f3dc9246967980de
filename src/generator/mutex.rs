//! The mutex twin: the same state and transition behind `std::sync::Mutex`.

use super::core::{Core, LockedCell};
use super::health::Health;
use super::stats::Stats;
use super::{Builder, Components};
use crate::clock::{Clock, MonotonicClock};
use crate::id::Id;
use crate::layout::Layout;

/// A generator with the same semantics as [`Generator`](crate::Generator),
/// behind a mutex: the baseline the lock-free generator is measured against,
/// and the oracle it is tested against.
///
/// It runs the same attempt as the lock-free generator (the same clock
/// readings at the same points, the same loop), with the state word under a
/// lock instead of in an atomic: the one difference is that its install
/// never loses a race. Build it with
/// [`Builder::build_mutex`](crate::Builder::build_mutex); generate through the
/// [`IdGenerator`](crate::IdGenerator) trait, which `Generator` implements too.
///
/// ```
/// use flakeid::{Generator, IdGenerator, Layout, ManualClock};
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
pub struct MutexGenerator<C = MonotonicClock> {
    /// The same state word as `Generator`'s, under a mutex.
    core: Core<LockedCell, C>,
}

impl MutexGenerator {
    /// Starts configuring a generator for `layout`; finish with
    /// [`Builder::build_mutex`].
    ///
    /// ```
    /// use flakeid::{IdGenerator, Layout, ManualClock, MutexGenerator};
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

impl<C: Clock> MutexGenerator<C> {
    pub(crate) fn from_parts(parts: Components<C>) -> Self {
        MutexGenerator {
            core: Core::new(parts),
        }
    }

    /// The layout this generator makes IDs for.
    ///
    /// ```
    /// use flakeid::{IdGenerator, Layout, ManualClock, MutexGenerator};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = MutexGenerator::builder(Layout::discord())
    ///     .node_field("worker", 3)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build_mutex()?;
    /// let decoded = generator.layout().decode(generator.next_id())?;
    /// assert_eq!((decoded.field("worker"), decoded.unix_ms()), (Some(3), 1_700_000_000_000));
    /// # Ok(())
    /// # }
    /// ```
    pub fn layout(&self) -> &Layout {
        self.core.layout()
    }

    /// The node id in the IDs: the configured one, or the one a lease holds now.
    ///
    /// ```
    /// use flakeid::{IdGenerator, Layout, ManualClock, MutexGenerator};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = MutexGenerator::builder(Layout::twitter())
    ///     .node_field("datacenter", 3)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build_mutex()?;
    /// assert_eq!(generator.node_id(), 3 << 5); // worker 0
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
    /// use flakeid::{GenerateError, IdGenerator, Layout, ManualClock, MutexGenerator};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = MutexGenerator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build_mutex()?;
    /// assert_eq!(generator.poll_ids(4_096)?.len(), 4_096); // the whole tick
    /// assert!(matches!(generator.poll_id(), Err(GenerateError::SequenceExhausted { .. })));
    /// generator.clock().advance(Duration::from_millis(1));
    /// assert!(generator.poll_id().is_ok());
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock(&self) -> &C {
        self.core.clock()
    }

    /// As [`Generator::last_id`](crate::Generator::last_id).
    ///
    /// ```
    /// use flakeid::{IdGenerator, Layout, ManualClock, MutexGenerator};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = MutexGenerator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build_mutex()?;
    /// let ids: Vec<_> = generator.next_ids(5).collect();
    /// assert_eq!(generator.last_id(), ids[4]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn last_id(&self) -> Id {
        self.core.last_id()
    }

    /// The counters, if the builder turned them on.
    ///
    /// ```
    /// use flakeid::{IdGenerator, Layout, ManualClock, MutexGenerator};
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
    /// use flakeid::{MutexGenerator, Health, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::builder().epoch_ms(1_700_000_000_000).timestamp_bits(10).sequence(12).build()?;
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = MutexGenerator::builder(layout).clock(clock.clone()).build_mutex()?;
    /// assert_eq!(generator.health(), Health::Issuing);
    /// clock.advance(Duration::from_secs(2)); // 10 bits of ms end after 1.024 s
    /// assert_eq!(generator.health(), Health::Expired { last_ms: 1_700_000_001_023 });
    /// # Ok(())
    /// # }
    /// ```
    pub fn health(&self) -> Health {
        self.core.health()
    }
}

super::shell!(MutexGenerator);
