//! The floor: what one cached-time load and one compare-and-swap cost on
//! this machine, the least a generator that swaps one shared word can pay.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crossbeam_utils::CachePadded;

use crate::contenders::Contender;
use crate::layouts::WIDE_EPOCH_MS;

/// The floor: the bare minimum a time-ordered ID from a shared word costs.
/// A call is one relaxed load of a cached time ([`FLOOR_TICK`]) and one
/// compare-and-swap of the state word (with the relaxed load of the word
/// that gives the swap its expected value), nothing else: no layout, no
/// policy, no backoff, no counting, no clock object, and no `Result` but
/// the swap's own.
///
/// Within the cached tick the successor is the state plus one, a value
/// that depends on the state alone; the comparison with the tick is a
/// branch the CPU predicts, not a select that would make the swap wait for
/// the time load. Entering a new tick, once per ms, is out of line
/// ([`Floor::enter`]). flakeid's fast path has the same shape.
pub struct Floor {
    state: CachePadded<AtomicU64>,
    /// Compare-and-swaps that lost, counted only by [`Floor::counted`].
    pub lost: AtomicU64,
}

/// Sequence bits of the floor's IDs, as in [`crate::layouts::wide_layout`].
const FLOOR_SEQUENCE_BITS: u32 = 22;

/// The floor's cached time: ms since [`WIDE_EPOCH_MS`], stored every ms by
/// one thread for the process ([`start_floor_clock`]). A static of its own
/// (the load needs no pointer), on a cache line of its own, as ferroid's
/// and flakeid's cached times are.
static FLOOR_TICK: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));

/// Starts the thread that keeps [`FLOOR_TICK`] fresh, once per process.
fn start_floor_clock() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        FLOOR_TICK.store(wide_tick(), Ordering::Relaxed);
        std::thread::Builder::new()
            .name("floor-clock".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(Duration::from_millis(1));
                    FLOOR_TICK.store(wide_tick(), Ordering::Relaxed);
                }
            })
            .expect("a thread for the floor's clock");
    });
}

/// Wall-clock ms since [`WIDE_EPOCH_MS`].
fn wide_tick() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        .saturating_sub(WIDE_EPOCH_MS)
}

impl Floor {
    pub fn new() -> Floor {
        start_floor_clock();
        Floor {
            state: CachePadded::new(AtomicU64::new(0)),
            lost: AtomicU64::new(0),
        }
    }

    /// One ID: the next in the cached tick, or (out of line) the first of a
    /// newer one.
    #[inline(always)]
    fn next(&self) -> u64 {
        let tick = FLOOR_TICK.load(Ordering::Relaxed);
        let mut cur = self.state.load(Ordering::Relaxed);
        while cur >> FLOOR_SEQUENCE_BITS == tick {
            match self.state.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return cur + 1,
                Err(actual) => cur = actual,
            }
        }
        self.enter(tick)
    }

    /// The state is in another tick than the cached one: the first ID of
    /// the cached tick if it is newer, else the next in the state's (a
    /// thread that read the tick just before the clock thread stored a new
    /// one must not go back).
    #[cold]
    #[inline(never)]
    fn enter(&self, tick: u64) -> u64 {
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            let next = (cur + 1).max(tick << FLOOR_SEQUENCE_BITS);
            match self
                .state
                .compare_exchange_weak(cur, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(actual) => cur = actual,
            }
        }
    }

    /// [`Floor::next`], counting lost compare-and-swaps in `lost`: for the
    /// contention table, never in a timed run.
    pub fn counted(&self) -> u64 {
        let tick = FLOOR_TICK.load(Ordering::Relaxed);
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            let next = (cur + 1).max(tick << FLOOR_SEQUENCE_BITS);
            match self
                .state
                .compare_exchange_weak(cur, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(actual) => {
                    self.lost.fetch_add(1, Ordering::Relaxed);
                    cur = actual;
                }
            }
        }
    }
}

impl Contender for Floor {
    #[inline]
    fn id(&self) -> u64 {
        self.next()
    }
}
