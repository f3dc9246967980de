//! Where a generator keeps its state word: the two cells, and the one trait
//! over them.
//!
//! A [`CellGenerator`](crate::CellGenerator) runs the same attempt over
//! either cell, and the cells differ only in how an attempt replaces the
//! word: [`AtomicCell`] by compare-and-swap, which can lose a race;
//! [`LockedCell`] by assignment under its lock, which cannot.

use std::fmt;

use crossbeam_utils::CachePadded;

use crate::primitive::{AtomicU64, Mutex, MutexGuard, Ordering, lock};

/// A cell a generator can keep its state word in: [`AtomicCell`] (the
/// lock-free [`Generator`](crate::Generator)) or [`LockedCell`] (the
/// [`MutexGenerator`](crate::MutexGenerator) twin). Sealed: only these two
/// implement it, so code generic over the cell covers every generator.
///
/// ```
/// use flakeid::{CellGenerator, Clock, Generator, Id, IdBatch, Layout, ManualClock, StateCell};
///
/// /// Any generator's IDs, with the inherent methods (no trait import).
/// fn first_and_batch<C: Clock, S: StateCell>(g: &CellGenerator<C, S>) -> (Id, IdBatch) {
///     (g.next_id(), g.next_ids(3))
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let builder = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .clock(ManualClock::new(1_700_000_000_000));
/// let (id, batch) = first_and_batch(&builder.clone().build()?);
/// assert_eq!((id, batch), first_and_batch(&builder.build_mutex()?));
/// # Ok(())
/// # }
/// ```
pub trait StateCell: sealed::Cell {}

/// The lock-free generator's cell: one `AtomicU64` on a cache line of its
/// own (so neighbours do not share its contention), replaced by
/// compare-and-swap. [`Generator`](crate::Generator) is a
/// [`CellGenerator`](crate::CellGenerator) over it.
///
/// ```
/// use flakeid::{AtomicCell, CellGenerator, Generator, Layout, ManualClock};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator: CellGenerator<ManualClock, AtomicCell> = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .clock(ManualClock::new(1_700_000_000_000))
///     .build()?;
/// assert!(format!("{generator:?}").starts_with("Generator {"));
/// # Ok(())
/// # }
/// ```
pub struct AtomicCell(CachePadded<AtomicU64>);

/// The mutex twin's cell: the same word behind a mutex, replaced by
/// assignment under the lock, so an install never loses a race.
/// [`MutexGenerator`](crate::MutexGenerator) is a
/// [`CellGenerator`](crate::CellGenerator) over it.
///
/// ```
/// use flakeid::{CellGenerator, Generator, Layout, LockedCell, ManualClock};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator: CellGenerator<ManualClock, LockedCell> = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .clock(ManualClock::new(1_700_000_000_000))
///     .build_mutex()?;
/// assert!(format!("{generator:?}").starts_with("MutexGenerator {"));
/// # Ok(())
/// # }
/// ```
pub struct LockedCell(CachePadded<Mutex<u64>>);

/// A cell over a word the generator does not own: an `AtomicU64` in memory
/// that other generators, in this process or in others (shared memory),
/// advance by compare-and-swap too. The attempt is the lock-free
/// generator's, word for word: every generator over the word installs
/// strictly larger successors, so together they issue each ID once, as one
/// [`Generator`](crate::Generator) shared by all their callers would.
/// [`SharedGenerator`](crate::SharedGenerator) is a
/// [`CellGenerator`](crate::CellGenerator) over it; build one with
/// [`Builder::build_shared`](crate::Builder::build_shared).
///
/// Every generator over one word must share its layout and node id (the
/// build checks the node id against the word) and read clocks that agree,
/// within the `OnClockBehind` policy's tolerance: a clock behind the word's
/// tick is a clock behind, as in one process.
///
/// ```
/// use flakeid::{Generator, Layout, ManualClock};
/// use std::sync::atomic::AtomicU64;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// static WORD: AtomicU64 = AtomicU64::new(0);
/// let builder = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .clock(ManualClock::new(1_700_000_000_000));
/// let (a, b) = (builder.clone().build_shared(&WORD)?, builder.build_shared(&WORD)?);
/// let (x, y) = (a.next_id(), b.next_id());
/// assert!(x < y); // one sequence between them
/// assert!(format!("{a:?}").starts_with("SharedGenerator {"));
/// # Ok(())
/// # }
/// ```
pub struct SharedCell(&'static AtomicU64);

/// What a cell does for the generator: crate-private, so no one outside can
/// add a cell ([`StateCell`] requires it).
pub(crate) mod sealed {
    /// Holding and replacing the state word.
    pub trait Cell: Send + Sync + Sized {
        /// The word as one attempt sees it: a loaded value, or the value
        /// under a held lock.
        type Held<'a>: Held
        where
            Self: 'a;

        /// The name `Debug` prints for a generator over this cell.
        const GENERATOR: &'static str;

        /// Starts an attempt: loads the word (acquiring the clock reading
        /// its tick came from), or locks it.
        fn hold(&self) -> Self::Held<'_>;

        /// The word now, for reports (`last_id`, the final save on drop).
        fn get(&self) -> u64;
    }

    /// A cell the generator owns: made with the first state.
    pub trait Owned: Cell {
        fn new(state: u64) -> Self;
    }

    /// One attempt's view of the state word.
    pub trait Held {
        /// The word the attempt works from.
        fn cur(&self) -> u64;

        /// Replaces [`cur`](Held::cur) with `next`. `Err(actual)` when the
        /// word had moved on to `actual` (a lost race, or a spurious failure
        /// with `actual == cur`); `cur` is then `actual`. Only the atomic
        /// cell fails.
        fn install(&mut self, next: u64) -> Result<(), u64>;
    }
}

use sealed::{Cell, Held, Owned};

impl StateCell for AtomicCell {}
impl StateCell for LockedCell {}
impl StateCell for SharedCell {}

impl fmt::Debug for AtomicCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AtomicCell").field(&self.get()).finish()
    }
}

impl fmt::Debug for SharedCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedCell").field(&self.get()).finish()
    }
}

impl fmt::Debug for LockedCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LockedCell").field(&self.get()).finish()
    }
}

/// A value loaded from an [`AtomicCell`] (or a [`SharedCell`]), to
/// compare-and-swap from.
pub struct Loaded<'a> {
    word: &'a AtomicU64,
    cur: u64,
}

impl<'a> Loaded<'a> {
    /// Starts an attempt on `word`: loads it, acquiring the clock reading
    /// its tick came from.
    #[inline(always)]
    fn from(word: &'a AtomicU64) -> Self {
        Loaded {
            word,
            cur: word.load(Ordering::Acquire),
        }
    }
}

impl Owned for AtomicCell {
    fn new(state: u64) -> Self {
        AtomicCell(CachePadded::new(AtomicU64::new(state)))
    }
}

impl Cell for AtomicCell {
    type Held<'a> = Loaded<'a>;

    const GENERATOR: &'static str = "Generator";

    #[inline(always)]
    fn hold(&self) -> Loaded<'_> {
        Loaded::from(&self.0)
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl AtomicCell {
    /// The word itself, for the loom models' planted bugs (`loom_hooks`).
    #[cfg(flakeid_loom)]
    pub(crate) fn word(&self) -> &AtomicU64 {
        &self.0
    }
}

impl SharedCell {
    /// A cell over `word`, which holds `first` if no generator has used it
    /// (it is 0), or else a state installed by a generator of the same
    /// layout: `Err(found)` when that state's node bits (`node_mask`) are
    /// not `first`'s.
    pub(crate) fn adopt(word: &'static AtomicU64, first: u64, node_mask: u64) -> Result<Self, u64> {
        match word.compare_exchange(0, first, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(SharedCell(word)),
            Err(found) if found & node_mask == first & node_mask => Ok(SharedCell(word)),
            Err(found) => Err(found),
        }
    }
}

/// The lock-free generator's attempt, on a word it does not own.
impl Cell for SharedCell {
    type Held<'a> = Loaded<'a>;

    const GENERATOR: &'static str = "SharedGenerator";

    #[inline(always)]
    fn hold(&self) -> Loaded<'_> {
        Loaded::from(self.0)
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Held for Loaded<'_> {
    #[inline(always)]
    fn cur(&self) -> u64 {
        self.cur
    }

    /// Uniqueness and order need no more than Relaxed: IDs derive from this
    /// word alone, and the single modification order of one atomic makes
    /// every successful CAS start from the value the previous one stored.
    /// The clock needs more. A successful CAS releases the clock reading its
    /// tick came from, and every load of the state acquires, so a thread that
    /// sees another's new tick then reads the clock at least as far along.
    /// With Relaxed, a weakly ordered CPU may read the clock before the
    /// state, find the clock behind a tick it never moved back from, and
    /// report `ClockBehind` or bump the clock id for nothing (the loom model
    /// `a_clock_that_only_moves_forward_is_never_reported_behind` finds this).
    /// On x86 these orderings compile to the same instructions as Relaxed.
    #[inline(always)]
    fn install(&mut self, next: u64) -> Result<(), u64> {
        match self
            .word
            .compare_exchange_weak(self.cur, next, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => {
                self.cur = next;
                Ok(())
            }
            Err(actual) => {
                self.cur = actual;
                Err(actual)
            }
        }
    }
}

impl Owned for LockedCell {
    fn new(state: u64) -> Self {
        LockedCell(CachePadded::new(Mutex::new(state)))
    }
}

impl Cell for LockedCell {
    type Held<'a> = MutexGuard<'a, u64>;

    const GENERATOR: &'static str = "MutexGenerator";

    #[inline(always)]
    fn hold(&self) -> MutexGuard<'_, u64> {
        lock(&self.0)
    }

    fn get(&self) -> u64 {
        *lock(&self.0)
    }
}

impl Held for MutexGuard<'_, u64> {
    #[inline(always)]
    fn cur(&self) -> u64 {
        **self
    }

    #[inline(always)]
    fn install(&mut self, next: u64) -> Result<(), u64> {
        **self = next;
        Ok(())
    }
}
