//! Crate-private parts that the loom models in `loom-tests/` drive directly.
//!
//! Compiled only under `--cfg flakeid_loom` (never in a user's build) and
//! hidden from the docs. The models reach the lease fence and the
//! persistence reservation through these thin wrappers, so the code they
//! check is the crate's own, not a copy.

mod generator;

pub use generator::Broken;

use std::sync::Arc;

use crate::clock::Clock;
use crate::generator::Builder;

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

/// A lease fence on a model's monotonic clock that starts at 0 ns and moves
/// only when the model says so.
#[derive(Clone)]
pub struct Fence {
    inner: Arc<crate::fence::Fence>,
    /// The fence's monotonic clock: nanoseconds in a loom atomic, so loom
    /// orders the fence's readings against the model's moves.
    ns: Arc<crate::primitive::AtomicU64>,
}

impl Fence {
    /// A closed fence.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Fence {
        let ns = Arc::new(crate::primitive::AtomicU64::new(0));
        Fence {
            inner: Arc::new(crate::fence::Fence::with_model_clock(ns.clone())),
            ns,
        }
    }

    /// Makes generators built from `builder` pass this fence, as a lease's do.
    pub fn guard<C: Clock>(&self, mut builder: Builder<C>) -> Builder<C> {
        builder.fence = Some(self.inner.clone());
        builder
    }

    /// A keeper's fresh claim: replaces the grant and opens the fence until
    /// `valid_until_ns`.
    pub fn open(&self, grant: Grant, valid_until_ns: u64) {
        self.inner.open(grant.into(), valid_until_ns);
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
        self.ns.fetch_add(ns, crate::primitive::Ordering::SeqCst);
    }

    /// Planted bug: `open` writing the grant's words without the seqlock.
    pub fn broken_open_in_place(&self, grant: Grant, valid_until_ns: u64) {
        self.inner
            .broken_open_in_place(grant.into(), valid_until_ns);
    }

    /// Planted bug: `extend` reopening a fence whose deadline has passed.
    pub fn broken_extend_any_open(&self, valid_until_ns: u64, ceiling: u64) {
        self.inner.broken_extend_any_open(valid_until_ns, ceiling);
    }

    /// Planted bug: every ticket confirms, however the grant changed.
    pub fn plant_bug_confirm_always(&self) {
        self.inner.plant(crate::fence::PLANT_CONFIRM_ALWAYS);
    }

    /// Planted bug: the grant's floor reads as 0 at the gate.
    pub fn plant_bug_lose_floor(&self) {
        self.inner.plant(crate::fence::PLANT_LOSE_FLOOR);
    }
}

/// A [`StateStore`](crate::StateStore) in memory, shared by its clones, that
/// tells the highest mark its last save holds. Its lock is std's, not
/// loom's: loom runs one thread at a time, so what a model reads from it is
/// what was saved before, in real time.
#[derive(Clone, Default)]
pub struct MemoryStore {
    saved: Arc<std::sync::Mutex<Option<Vec<u8>>>>,
}

impl MemoryStore {
    /// The highest mark, over every clock id, of the last save.
    pub fn max_mark(&self) -> Option<u64> {
        let saved = self.saved.lock().unwrap().clone()?;
        let state = crate::persist::SavedState::decode(&saved).expect("a valid saved state");
        state.marks.iter().map(|&(_, mark)| mark).max()
    }
}

impl crate::StateStore for MemoryStore {
    fn load(&mut self) -> Result<Option<Vec<u8>>, crate::StateError> {
        Ok(self.saved.lock().unwrap().clone())
    }

    fn save(&mut self, state: &[u8]) -> Result<(), crate::StateError> {
        *self.saved.lock().unwrap() = Some(state.to_vec());
        Ok(())
    }
}

/// Deliberately broken variants of the persistence writer, which the loom
/// models must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistBug {
    /// The writer publishes a new ceiling before the save that covers it.
    PublishBeforeSave,
    /// A generator's request records the tick but does not wake the writer.
    RequestWithoutUnpark,
}

/// `persist` with `bug` planted in the writer it starts.
pub fn plant_persist_bug(mut persist: crate::Persist, bug: PersistBug) -> crate::Persist {
    persist.planted = Some(bug);
    persist
}
