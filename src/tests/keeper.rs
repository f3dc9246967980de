//! The lease keeper's state machine, stepped by hand on the in-process
//! store.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::memory::{Fault, MemoryBackend, MemoryStore};
use crate::clock::ManualClock;
use crate::events::{Event, Events};
use crate::fence::Fence;
use crate::layout::Layout;
use crate::lease::Terms;
use crate::lease::keeper::{Run, WallClock};
use crate::plant::Plant;

const T: u64 = 1_700_000_000_000;

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A keeper on `backend`, holding a claim, and what it is stepped with.
struct Rig {
    run: Run<MemoryStore>,
    fence: Arc<Fence>,
    /// The fence's clock (the keeper's monotonic clock).
    mock: Arc<quanta::Mock>,
    holder: u64,
    events: Arc<Mutex<Vec<Event>>>,
    /// The fence's clock when the claim was sent: time 0 of the test.
    start: u64,
}

impl Rig {
    /// A keeper on `backend` whose wall clock is `wall`, with `terms`, that
    /// has claimed a node id at fence time 0; its answers' lateness
    /// ([`Fault::LateThenCut`]) moves its fence clock.
    fn new(backend: &MemoryBackend, terms: &Terms, wall: &ManualClock) -> Rig {
        let (source, mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        let mut settings = terms
            .settings(&Layout::twitter(), Duration::ZERO, "memory".into())
            .unwrap();
        settings.wall = WallClock::new(wall.clone());
        let events = Arc::new(Mutex::new(Vec::new()));
        let heard = events.clone();
        settings.events = Events::new(move |e: &Event| heard.lock().unwrap().push(e.clone()));
        let store = backend.store(&settings);
        let holder = store.holder();
        let moved = mock.clone();
        backend.set_clock(holder, move |by| moved.increment(by));
        let mut run = Run::new(store, settings, fence.clone());
        // (The fence's clock reads at least 1 ns: start it well past 0.)
        mock.increment(Duration::from_secs(1));
        let start = fence.now_ns();
        run.claim_first().unwrap();
        Rig {
            run,
            fence,
            mock,
            holder,
            events,
            start,
        }
    }

    /// The fence's clock, from when the claim was sent.
    fn now(&self) -> Duration {
        Duration::from_nanos(self.fence.now_ns() - self.start)
    }

    /// Moves the fence's clock to `at` (from when the claim was sent).
    fn at(&self, at: Duration) {
        let now = self.now();
        assert!(at >= now, "the fence's clock is at {now:?} already");
        self.mock.increment(at - now);
    }

    fn fenced(&self) -> bool {
        self.events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, Event::Fenced { .. }))
    }
}

/// A keeper with a one-second lease (the fence closes 800 ms after a
/// renewal was sent) and `plant`, on a fresh one-server store.
fn one_second_lease(plant: Option<Plant>) -> (MemoryBackend, Rig) {
    let wall = ManualClock::new(T);
    let backend = MemoryBackend::new(wall.clone());
    let terms = Terms {
        ttl: Duration::from_secs(1),
        plant,
        ..Terms::default()
    };
    let rig = Rig::new(&backend, &terms, &wall);
    (backend, rig)
}

/// The renewal sent at 400 ms is answered 300 ms late; then the holder is
/// cut off. The fence must stay open until, and close at, 400 ms plus the
/// TTL less the margin (1,200 ms): counted from when the renewal was sent,
/// not from its answer. `Err` says what broke.
fn a_late_renewal_counts_from_its_sending(plant: Option<Plant>) -> Result<(), String> {
    let (backend, mut rig) = one_second_lease(plant);
    let (sent, late, deadline) = (ms(400), ms(300), ms(1_200));
    rig.at(sent);
    backend.set_fault(rig.holder, Some(Fault::LateThenCut(late)));
    rig.run.step();
    assert_eq!(rig.now(), sent + late, "the answer came late");
    rig.at(deadline - Duration::from_nanos(1));
    rig.run.step();
    if rig.fence.check().is_none() {
        return Err("the late renewal extended nothing".into());
    }
    rig.at(deadline);
    rig.run.step();
    if rig.fence.check().is_some() {
        let mut open_until = deadline;
        while rig.fence.check().is_some() {
            open_until += ms(1);
            rig.at(open_until);
        }
        return Err(format!(
            "the fence was open {:?} after the renewal was sent (TTL 1 s, margin 200 ms)",
            open_until - sent
        ));
    }
    if !rig.fenced() {
        return Err("the keeper reported no fence".into());
    }
    Ok(())
}

/// The fence closes a TTL less the margin after a renewal was sent, however
/// late its answer came, and the test catches a keeper that counts from
/// the answer.
#[test]
fn a_late_answer_moves_the_deadline_from_the_renewals_sending() {
    assert_eq!(a_late_renewal_counts_from_its_sending(None), Ok(()));
    assert_eq!(
        a_late_renewal_counts_from_its_sending(Some(Plant::DeadlineFromAnswer)),
        Err("the fence was open 1.1s after the renewal was sent (TTL 1 s, margin 200 ms)".into()),
        "a deadline counted from the answer went unnoticed"
    );
}

/// The renewal sent at 400 ms is answered 500 ms late, after the claim's
/// deadline (800 ms): it must extend nothing. The fence stays closed for
/// the grant it was open for (a ticket taken before the deadline never
/// confirms), the keeper reports the fence, and only a fresh claim (a new
/// grant) opens it again. `Err` says what broke.
fn an_answer_after_the_deadline_extends_nothing(plant: Option<Plant>) -> Result<(), String> {
    let (backend, mut rig) = one_second_lease(plant);
    rig.at(ms(400));
    let (_, ticket) = rig.fence.check().ok_or("not open after the claim")?;
    backend.set_fault(rig.holder, Some(Fault::LateThenCut(ms(500))));
    rig.run.step();
    // The keeper claims afresh once the store answers again (it retries
    // claims every tenth of the TTL).
    backend.set_fault(rig.holder, None);
    rig.at(rig.now() + ms(100));
    rig.run.step();
    if rig.fence.confirm(ticket) {
        return Err("an answer after the deadline reopened the fence for its grant".into());
    }
    if !rig.fenced() {
        return Err("the keeper reported no fence".into());
    }
    match rig.fence.check() {
        Some((_, fresh)) if fresh != ticket => Ok(()),
        _ => Err("no fresh grant after the lapse".into()),
    }
}

#[test]
fn a_renewal_answered_after_the_deadline_extends_nothing() {
    assert_eq!(an_answer_after_the_deadline_extends_nothing(None), Ok(()));
    assert_eq!(
        an_answer_after_the_deadline_extends_nothing(Some(Plant::LateAnswerReopens)),
        Err("an answer after the deadline reopened the fence for its grant".into()),
        "a late answer reopening the fence went unnoticed"
    );
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
    let Rig { mut run, fence, .. } = Rig::new(&backend, &terms, &wall);
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
