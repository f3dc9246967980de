//! Crate-private parts that the loom models in `loom-tests/` drive directly,
//! and the deliberately broken variants those models must catch.
//!
//! Compiled only under `--cfg flakeid_loom` (never in a user's build) and
//! hidden from the docs. The models reach the lease fence and the
//! persistence reservation through these thin wrappers, so the code they
//! check is the crate's own, not a copy. Every bug the models plant lives
//! here, on the models' side of the crate: generators that replace the
//! compare-and-swap or decide on the cached reading ([`Broken`]), a keeper
//! that writes the fence's words out of order, a store that acknowledges a
//! save early or swallows the writer's wake-up. The production code they
//! run against carries no hook for them. (The lease bugs that the lease
//! and fault tests plant are another seam: `plant.rs`, under `--cfg
//! flakeid_plant`.)

mod fence;
mod generator;
mod persist;

// The refresh thread's rest and wake-up, as the crate runs it.
pub use crate::clock::{RESTING, Served};
pub use fence::{Fence, Grant};
pub use generator::Broken;
pub use persist::{MemoryStore, PersistBug};
