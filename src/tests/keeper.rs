//! The lease keeper's state machine, stepped by hand on the in-process
//! store.

use std::sync::Arc;
use std::time::Duration;

use super::memory::{MemoryBackend, MemoryStore};
use crate::clock::ManualClock;
use crate::fence::Fence;
use crate::layout::Layout;
use crate::lease::Terms;
use crate::lease::keeper::{Run, WallClock};

const T: u64 = 1_700_000_000_000;

/// A keeper on `backend` whose wall clock is `wall`, holding a claim.
fn keeper(
    backend: &MemoryBackend,
    terms: &Terms,
    wall: &ManualClock,
) -> (Run<MemoryStore>, Arc<Fence>, Arc<quanta::Mock>) {
    let (source, mock) = quanta::Clock::mock();
    let fence = Arc::new(Fence::with_clock(source));
    let mut settings = terms
        .settings(&Layout::twitter(), Duration::ZERO, "memory".into())
        .unwrap();
    settings.wall = WallClock::new(wall.clone());
    let mut run = Run::new(backend.store(&settings), settings, fence.clone());
    run.claim_first().unwrap();
    (run, fence, mock)
}

/// A generator an hour ahead of the keeper's wall clock wants its tick
/// covered, then (its clock stepped back) asks for a rotation: the fresh
/// node id's mark is the wall clock plus the TTL, not the old node id's
/// wanted tick plus the TTL.
#[test]
fn a_rotation_does_not_raise_the_fresh_mark_to_the_old_wanted_tick() {
    let wall = ManualClock::new(T);
    let backend = MemoryBackend::new(wall.clone());
    let terms = Terms {
        ttl: Duration::from_secs(1),
        rotate_after: Some(Duration::from_secs(1)),
        ..Terms::default()
    };
    let (mut run, fence, _) = keeper(&backend, &terms, &wall);
    let layout = Layout::twitter();
    fence.want(layout.timestamp_at(T + 3_600_000).unwrap());
    run.step();
    assert!(
        backend.mark(0).unwrap() >= T + 3_600_000,
        "renewed past the wanted tick"
    );
    let (grant, _) = fence.check().unwrap();
    let now_tick = layout.timestamp_at(T).unwrap();
    fence.behind(grant.node_bits, now_tick, 3_600_000);
    run.step();
    assert_eq!(run.held_node(), Some(1), "rotated to a fresh node id");
    let mark = backend.mark(1).unwrap();
    assert!(
        mark <= T + 1_000,
        "the fresh node id's mark is {} ms past the wall clock",
        mark - T
    );
    assert_eq!(fence.wanted(), 0, "reset by the fresh grant");
}
