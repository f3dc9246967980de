//! The lease fence on a model's clock, opened, extended and closed by the
//! model playing the keeper, and the broken keepers the fence models catch.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering as StdOrdering};

use crate::clock::Clock;
use crate::generator::Builder;
use crate::primitive::{AtomicU64, Ordering};

/// What an open fence grants (see `fence::Grant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The leased node id's bits in ID position.
    pub node_bits: u64,
    /// The previous holders' highest timestamp: issue only after it.
    pub floor: u64,
    /// The highest timestamp this holder may enter.
    pub ceiling: u64,
    /// Move the timestamp back to the floor (a rotation).
    pub rewind: bool,
}

impl From<Grant> for crate::fence::Grant {
    fn from(g: Grant) -> Self {
        crate::fence::Grant {
            node_bits: g.node_bits,
            floor: g.floor,
            ceiling: g.ceiling,
            rewind: g.rewind,
        }
    }
}

impl From<crate::fence::Grant> for Grant {
    fn from(g: crate::fence::Grant) -> Self {
        Grant {
            node_bits: g.node_bits,
            floor: g.floor,
            ceiling: g.ceiling,
            rewind: g.rewind,
        }
    }
}

/// How [`Fence::open`] writes a grant.
const OPEN_SOUND: u8 = 0;
/// Planted: the grant's words are replaced under the old generation.
const OPEN_KEEPS_GENERATION: u8 = 1;
/// Planted: the grant's floor is written as 0.
const OPEN_LOSES_FLOOR: u8 = 2;

/// A lease fence on a model's monotonic clock that starts at 0 ns and moves
/// only when the model says so.
#[derive(Clone)]
pub struct Fence {
    inner: Arc<crate::fence::Fence>,
    /// The fence's monotonic clock: nanoseconds in a loom atomic, so loom
    /// orders the fence's readings against the model's moves.
    ns: Arc<AtomicU64>,
    /// How `open` writes, shared by the clones: sound, or a planted bug. A
    /// std atomic: set before the model's threads start, and no part of
    /// what loom explores.
    open: Arc<AtomicU8>,
}

impl Fence {
    /// A closed fence.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Fence {
        let ns = Arc::new(AtomicU64::new(0));
        Fence {
            inner: Arc::new(crate::fence::Fence::with_model_clock(ns.clone())),
            ns,
            open: Arc::new(AtomicU8::new(OPEN_SOUND)),
        }
    }

    /// Makes generators built from `builder` pass this fence, as a lease's do.
    pub fn guard<C: Clock>(&self, mut builder: Builder<C>) -> Builder<C> {
        builder.fence = Some(self.inner.clone());
        builder
    }

    /// A keeper's fresh claim: replaces the grant and opens the fence until
    /// `valid_until_ns` (the way a planted bug says, if one is).
    pub fn open(&self, grant: Grant, valid_until_ns: u64) {
        let fence = &self.inner;
        match self.open.load(StdOrdering::Relaxed) {
            OPEN_KEEPS_GENERATION => {
                let generation = fence.begin_replace();
                fence.write_grant(grant.into(), valid_until_ns);
                fence.end_replace(generation);
            }
            OPEN_LOSES_FLOOR => fence.open(Grant { floor: 0, ..grant }.into(), valid_until_ns),
            _ => fence.open(grant.into(), valid_until_ns),
        }
    }

    /// A keeper's renewal: pushes the deadline and raises the ceiling.
    pub fn extend(&self, valid_until_ns: u64, ceiling: u64) {
        self.inner.extend(valid_until_ns, ceiling);
    }

    /// Closes the fence until the next `open`.
    pub fn close(&self) {
        self.inner.close();
    }

    /// The grant and its ticket, if the fence is open now.
    pub fn check(&self) -> Option<(Grant, u64)> {
        self.inner.check().map(|(g, t)| (g.into(), t))
    }

    /// The current grant's ceiling, as a generator reads it between `check`
    /// and `confirm`.
    pub fn ceiling(&self) -> u64 {
        self.inner.ceiling()
    }

    /// Whether `ticket`'s grant is still the current one and valid.
    pub fn confirm(&self, ticket: u64) -> bool {
        self.inner.confirm(ticket)
    }

    /// Monotonic nanoseconds on the fence's clock.
    pub fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }

    /// Moves the fence's monotonic clock forward.
    pub fn advance_ns(&self, ns: u64) {
        self.ns.fetch_add(ns, Ordering::SeqCst);
    }

    /// Planted bug: `open` writing the grant's words without making the
    /// generation odd first (only a new even one after): a checker can read
    /// one grant's node bits with another's floor under an unchanged
    /// generation.
    pub fn broken_open_in_place(&self, grant: Grant, valid_until_ns: u64) {
        let fence = &self.inner;
        fence.write_grant(grant.into(), valid_until_ns);
        let generation = fence.begin_replace();
        fence.end_replace(generation.wrapping_add(2));
    }

    /// Planted bug: `extend` reopening a fence whose deadline has passed (any
    /// non-zero deadline is pushed forward), so a renewal answered after the
    /// deadline reopens it.
    pub fn broken_extend_any_open(&self, valid_until_ns: u64, ceiling: u64) {
        self.inner
            .extend_if(valid_until_ns, ceiling, |until| until != 0);
    }

    /// Planted bug, for every later `open`: the grant is replaced under the
    /// old generation, so a ticket of the replaced grant still confirms
    /// (the confirmation after a compare-and-swap passes whatever changed).
    pub fn plant_bug_open_keeps_generation(&self) {
        self.open.store(OPEN_KEEPS_GENERATION, StdOrdering::Relaxed);
    }

    /// Planted bug, for every later `open`: the grant's floor is lost (written
    /// as 0), so the gate lets the generator continue below it.
    pub fn plant_bug_open_loses_floor(&self) {
        self.open.store(OPEN_LOSES_FLOOR, StdOrdering::Relaxed);
    }
}
