//! Both generators behind a node-id lease's fence: what they issue as the
//! fence opens, closes, switches node ids, rotates, raises its ceiling, and
//! what a dropped generator tells its keeper.

use std::sync::Arc;
use std::time::Duration;

use super::Readings;
use crate::clock::{Clock, ManualClock};
use crate::error::GenerateError;
use crate::fence::{Fence, Grant, Keeper};
use crate::generator::{Generator, IdGenerator, MutexGenerator, OnClockBehind, OnExhausted};
use crate::id::Id;
use crate::layout::Layout;

const T: u64 = 1_700_000_000_000;

/// Both generators behind one fence on a mocked monotonic clock.
struct Fenced {
    fence: Arc<Fence>,
    mock: Arc<quanta::Mock>,
    gens: Vec<Box<dyn IdGenerator>>,
    clock: ManualClock,
}

fn fenced() -> Fenced {
    let (source, mock) = quanta::Clock::mock();
    let fence = Arc::new(Fence::with_clock(source));
    let clock = ManualClock::new(T);
    let mut builder = Generator::builder(Layout::twitter())
        .single_node()
        .clock(clock.clone());
    builder.fence = Some(fence.clone());
    let gens: Vec<Box<dyn IdGenerator>> = vec![
        Box::new(builder.clone().build().unwrap()),
        Box::new(builder.build_mutex().unwrap()),
    ];
    Fenced {
        fence,
        mock,
        gens,
        clock,
    }
}

/// A grant of `node` on `layout`, issuing after `floor`, no ceiling.
fn grant(layout: &Layout, node: u64, floor: u64) -> Grant {
    Grant {
        node_bits: layout.node_mask_bits(node).unwrap(),
        floor,
        ceiling: u64::MAX,
        rewind: false,
    }
}

/// One of each generator behind `fence`, on `layout` with the policies.
fn fenced_pair(
    fence: &Arc<Fence>,
    layout: Layout,
    clock: &ManualClock,
    on_exhausted: OnExhausted,
    on_behind: OnClockBehind,
) -> Vec<Box<dyn IdGenerator>> {
    let mut builder = Generator::builder(layout)
        .single_node()
        .clock(clock.clone())
        .on_exhausted(on_exhausted)
        .on_clock_behind(on_behind);
    builder.fence = Some(fence.clone());
    vec![
        Box::new(builder.clone().build().unwrap()),
        Box::new(builder.build_mutex().unwrap()),
    ]
}

fn node_of(g: &dyn IdGenerator, id: Id) -> u64 {
    g.layout().decode(id).unwrap().node_id()
}

#[test]
fn a_closed_or_expired_fence_issues_nothing() {
    let Fenced {
        fence, mock, gens, ..
    } = fenced();
    for g in &gens {
        assert_eq!(g.poll_id(), Err(GenerateError::Fenced));
        assert_eq!(g.try_next_id(), Err(GenerateError::Fenced));
    }
    let layout = Layout::twitter();
    fence.open(grant(&layout, 9, 0), fence.now_ns() + 1_000_000);
    for g in &gens {
        assert_eq!(node_of(&**g, g.try_next_id().unwrap()), 9);
    }
    mock.increment(Duration::from_millis(2));
    for g in &gens {
        assert_eq!(g.try_next_id(), Err(GenerateError::Fenced));
    }
}

#[test]
fn a_new_claim_switches_the_node_id_after_the_previous_holders_floor() {
    let Fenced {
        fence, gens, clock, ..
    } = fenced();
    let layout = Layout::twitter();
    let now_tick = layout.timestamp_at(T).unwrap();
    fence.open(grant(&layout, 3, 0), u64::MAX);
    let before: Vec<Id> = gens.iter().map(|g| g.next_id()).collect();
    // Node 3 is lost; node 4 is claimed, whose previous holder may have
    // issued up to 5 ms after our clock.
    fence.open(grant(&layout, 4, now_tick + 5), u64::MAX);
    for (g, before) in gens.iter().zip(before) {
        // Nothing at or below the floor: wait for the clock (Continue).
        assert!(matches!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { .. })
        ));
        assert!(g.last_id() > before);
    }
    clock.advance(Duration::from_millis(6));
    for g in &gens {
        let id = g.next_id();
        let d = layout.decode(id).unwrap();
        assert_eq!((d.node_id(), d.timestamp()), (4, now_tick + 6));
    }
}

#[test]
fn a_rewinding_claim_issues_back_at_the_clock_under_the_new_node_id() {
    let Fenced {
        fence, gens, clock, ..
    } = fenced();
    let layout = Layout::twitter();
    let now_tick = layout.timestamp_at(T).unwrap();
    let grant = |node, floor, rewind| Grant {
        rewind,
        ..grant(&layout, node, floor)
    };
    fence.open(grant(3, 0, false), u64::MAX);
    // (Both generators share the fence, so each is checked on its own.)
    let before: Vec<Vec<Id>> = gens.iter().map(|g| g.next_ids(10).collect()).collect();
    // The clock steps back a minute; rotate to node 8, last used long ago.
    clock.rewind(Duration::from_secs(60));
    fence.open(grant(8, now_tick - 3_600_000, true), u64::MAX);
    for (g, before) in gens.iter().zip(before) {
        let after: Vec<Id> = g.next_ids(10).collect();
        let d = layout.decode(after[0]).unwrap();
        assert_eq!((d.node_id(), d.timestamp()), (8, now_tick - 60_000));
        assert!(after.iter().all(|id| !before.contains(id)));
    }
}

/// A rotation moves the state back in time, to a new node id. A reading
/// taken before the switch can be from before the clock stepped back
/// (the keeper rotated meanwhile): entering its tick would put the
/// timestamp ahead of the clock again, and ask for another rotation.
#[test]
fn after_a_rotation_a_reading_from_before_it_enters_no_tick() {
    let layout = Layout::twitter();
    let now_tick = layout.timestamp_at(T).unwrap();
    // Readings are ms after `base`: 60_000 is `now_tick`, 0 a minute back.
    let base = layout.unix_ms(now_tick) - 60_000;
    let grant = |node, floor, rewind| Grant {
        rewind,
        ..grant(&layout, node, floor)
    };
    // A leased generator reads the clock once per attempt: the lock-free
    // one after its load, the mutex twin under the lock.
    let stale = &[60_000, 0];
    for mutex in [false, true] {
        let (source, _mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        fence.open(grant(3, 0, false), u64::MAX);
        let clock = Arc::new(Readings::new(base, &[60_000]));
        let mut builder = Generator::builder(layout.clone())
            .single_node()
            .clock(clock.clone());
        builder.fence = Some(fence.clone());
        let g: Box<dyn IdGenerator> = if mutex {
            Box::new(builder.build_mutex().unwrap())
        } else {
            Box::new(builder.build().unwrap())
        };
        let d = layout.decode(g.next_id()).unwrap();
        assert_eq!((d.node_id(), d.timestamp()), (3, now_tick));
        // The clock steps back a minute; the keeper rotates to node 8,
        // last used an hour ago, while this call's reading is older.
        fence.open(grant(8, now_tick - 3_600_000, true), u64::MAX);
        clock.set(base, stale);
        let d = layout.decode(g.next_id()).unwrap();
        assert_eq!(
            (d.node_id(), d.timestamp()),
            (8, now_tick - 60_000),
            "mutex {mutex}"
        );
    }
}

#[test]
fn a_node_id_claimed_again_starts_after_the_floor_its_interim_holder_left() {
    let Fenced {
        fence, gens, clock, ..
    } = fenced();
    let layout = Layout::twitter();
    let now_tick = layout.timestamp_at(T).unwrap();
    let grant = |floor| grant(&layout, 3, floor);
    fence.open(grant(0), u64::MAX);
    for g in &gens {
        g.next_id();
    }
    // Lost node 3; someone else held it and issued up to 4 ms ahead of
    // our clock; now it is ours again, with their mark as the floor.
    fence.close();
    fence.open(grant(now_tick + 4), u64::MAX);
    clock.advance(Duration::from_millis(2));
    for g in &gens {
        assert!(matches!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { .. })
        ));
    }
    clock.advance(Duration::from_millis(3));
    for g in &gens {
        let d = layout.decode(g.next_id()).unwrap();
        assert_eq!((d.node_id(), d.timestamp()), (3, now_tick + 5));
    }
}

/// A previous holder of the node id may have used every clock id up to
/// the floor, so a `NextClock` step (to a fresh clock id in the floor's
/// tick, or back to the clock's earlier tick) must not issue there.
#[test]
fn next_clock_policies_issue_nothing_at_or_below_the_leases_floor() {
    let layout = Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .clock_id(2)
        .node("worker", 4)
        .sequence(2)
        .build()
        .unwrap();
    let now_tick = layout.timestamp_at(T).unwrap();
    let policies = [
        (OnExhausted::NextClock, OnClockBehind::Continue),
        (OnExhausted::Wait, OnClockBehind::NextClock),
        (OnExhausted::NextClock, OnClockBehind::NextClock),
    ];
    // The floor at the clock's tick, and ahead of it (the previous
    // holder's ceiling, or its clock ahead of ours).
    for floor in [now_tick, now_tick + 5] {
        for (on_exhausted, on_behind) in policies {
            let (source, _mock) = quanta::Clock::mock();
            let fence = Arc::new(Fence::with_clock(source));
            let clock = ManualClock::new(T);
            fence.open(grant(&layout, 3, floor), u64::MAX);
            for g in fenced_pair(&fence, layout.clone(), &clock, on_exhausted, on_behind) {
                let case = format!("floor +{} {on_exhausted:?} {on_behind:?}", floor - now_tick);
                for _ in 0..4 {
                    if let Ok(id) = g.poll_id() {
                        let d = layout.decode(id).unwrap();
                        assert!(
                            d.timestamp() > floor,
                            "{case}: issued {:?} at or below the floor",
                            d.parts()
                        );
                    }
                }
                // Once the clock passes the floor, issuing goes on.
                clock.set_ms(layout.unix_ms(floor + 1));
                let d = layout.decode(g.next_id()).unwrap();
                assert_eq!((d.timestamp(), d.node_id()), (floor + 1, 3), "{case}");
                clock.set_ms(T);
            }
        }
    }
}

/// A claim of another node id, while the clock still reads the tick
/// issued under the old one, moves the state to the new node id with that
/// tick used up. With the node field above the clock id, a
/// `OnExhausted::NextClock` step in that tick would issue below the IDs
/// just issued under a higher node id: the tick must be waited out.
#[test]
fn a_switch_to_a_lower_node_id_in_the_same_tick_keeps_ids_in_order() {
    let layout = Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .node("worker", 4)
        .clock_id(2)
        .sequence(1)
        .build()
        .unwrap();
    for on_behind in [OnClockBehind::Continue, OnClockBehind::NextClock] {
        let (source, _mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        let clock = ManualClock::new(T);
        fence.open(grant(&layout, 9, 0), u64::MAX);
        let gens = fenced_pair(
            &fence,
            layout.clone(),
            &clock,
            OnExhausted::NextClock,
            on_behind,
        );
        // Each generator issues under node 9 in this tick, then the
        // keeper claims node 2 (a lower number) and the clock stays put.
        for g in gens {
            fence.open(grant(&layout, 9, 0), u64::MAX);
            let before = g.next_id();
            fence.open(grant(&layout, 2, 0), u64::MAX);
            for _ in 0..4 {
                if let Ok(id) = g.poll_id() {
                    assert!(
                        id > before,
                        "{on_behind:?}: {:?} after {:?}",
                        layout.decode(id).unwrap().parts(),
                        layout.decode(before).unwrap().parts()
                    );
                }
            }
            clock.advance(Duration::from_millis(1));
            let after = g.next_id();
            let (d, b) = (
                layout.decode(after).unwrap(),
                layout.decode(before).unwrap(),
            );
            assert_eq!((d.node_id(), d.timestamp()), (2, b.timestamp() + 1));
            assert!(after > before);
        }
    }
}

/// The node bits and timestamp a dropped generator tells its keeper.
type Last = Option<(u64, u64)>;

/// Records what dropped generators tell their keeper.
#[derive(Clone, Default)]
struct Recorder(Arc<std::sync::Mutex<Vec<Last>>>);

impl Keeper for Recorder {
    fn release(self: Box<Self>, last: Last) {
        self.0.lock().unwrap().push(last);
    }
}

/// The keeper records the last timestamp it is told as the node id's
/// mark, where the next holder starts: after an `OnClockBehind::NextClock`
/// step the state's timestamp is below IDs already issued, so it must not
/// be passed on as the last one.
#[test]
fn a_dropped_generator_never_tells_its_keeper_a_mark_below_its_ids() {
    let layout = Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .clock_id(2)
        .node("worker", 4)
        .sequence(2)
        .build()
        .unwrap();
    let node_bits = layout.node_mask_bits(3).unwrap();
    let (source, _mock) = quanta::Clock::mock();
    let fence = Arc::new(Fence::with_clock(source));
    fence.open(grant(&layout, 3, 0), u64::MAX);
    let recorder = Recorder::default();
    for on_behind in [OnClockBehind::Continue, OnClockBehind::NextClock] {
        for mutex in [false, true] {
            let clock = ManualClock::new(T);
            let mut builder = Generator::builder(layout.clone())
                .single_node()
                .clock(clock.clone())
                .on_clock_behind(on_behind);
            builder.fence = Some(fence.clone());
            let mut parts = builder.into_parts().unwrap();
            parts.keeper = Some(Box::new(recorder.clone()));
            let g: Box<dyn IdGenerator> = if mutex {
                Box::new(MutexGenerator::from_parts(parts))
            } else {
                Box::new(Generator::from_parts(parts))
            };
            let mut highest = 0;
            for step in [0i64, -1_000, 10, -50] {
                match step {
                    0.. => clock.advance(Duration::from_millis(step.unsigned_abs())),
                    _ => clock.rewind(Duration::from_millis(step.unsigned_abs())),
                }
                let d = layout.decode(g.next_id()).unwrap();
                highest = highest.max(d.timestamp());
            }
            drop(g);
            let told = recorder.0.lock().unwrap().pop().unwrap();
            // Exact where it can be, so a prompt restart need not wait.
            assert_eq!(told.is_some(), on_behind == OnClockBehind::Continue);
            if let Some((bits, ts)) = told {
                assert_eq!(bits, node_bits);
                assert!(
                    ts >= highest,
                    "{on_behind:?} mutex {mutex}: told {ts}, issued up to {highest}"
                );
            }
        }
    }
}

#[test]
fn no_tick_past_the_ceiling_until_the_store_records_it() {
    let Fenced {
        fence, gens, clock, ..
    } = fenced();
    let layout = Layout::twitter();
    let now_tick = layout.timestamp_at(T).unwrap();
    fence.open(
        Grant {
            ceiling: now_tick,
            ..grant(&layout, 2, 0)
        },
        u64::MAX,
    );
    for g in &gens {
        g.next_id();
    }
    clock.advance(Duration::from_millis(1));
    for g in &gens {
        // The next tick is past the ceiling: the keeper is asked to
        // record a later one, and the generator waits for it.
        assert_eq!(g.poll_id(), Err(GenerateError::Reserving));
    }
    assert_eq!(fence.wanted(), now_tick + 1);
    fence.extend(u64::MAX, now_tick + 1);
    for g in &gens {
        let d = layout.decode(g.try_next_id().unwrap()).unwrap();
        assert_eq!(d.timestamp(), now_tick + 1);
    }
}

#[test]
fn a_long_rollback_asks_the_keeper_for_a_fresh_node_id() {
    let Fenced {
        fence, gens, clock, ..
    } = fenced();
    let layout = Layout::twitter();
    fence.rotate_after(5_000);
    fence.open(grant(&layout, 6, 0), u64::MAX);
    for g in &gens {
        g.next_id();
    }
    clock.rewind(Duration::from_secs(4));
    for g in &gens {
        g.next_id();
    }
    assert_eq!(fence.take_rotation(), None, "4 s is below the threshold");
    clock.rewind(Duration::from_secs(2));
    let now_tick = layout.timestamp_at(clock.now_ms()).unwrap();
    gens[0].next_id();
    assert_eq!(
        fence.take_rotation(),
        Some((layout.node_mask_bits(6).unwrap(), now_tick))
    );
}

#[test]
fn a_leased_generator_reports_the_granted_node_id_before_its_first_id() {
    let Fenced { fence, gens, .. } = fenced();
    let layout = Layout::twitter();
    fence.open(grant(&layout, 11, 0), u64::MAX);
    let mut builder = Generator::builder(Layout::twitter())
        .node_id(1)
        .clock(ManualClock::new(T));
    builder.fence = Some(fence.clone());
    let g = builder.build().unwrap();
    assert_eq!(g.node_id(), 11);
    assert_eq!(gens.len(), 2);
}

#[test]
fn next_id_waits_for_a_fresh_claim() {
    let Fenced { fence, gens, .. } = fenced();
    let layout = Layout::twitter();
    for g in &gens {
        let id = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                fence.open(grant(&layout, 7, 0), u64::MAX);
            });
            g.next_id()
        });
        assert_eq!(node_of(&**g, id), 7);
        fence.close();
    }
}
