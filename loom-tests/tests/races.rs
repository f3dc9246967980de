//! Threads racing for IDs within one tick and across a tick change, on both
//! generators, and the order of calls that do not overlap.
#![cfg(flakeid_loom)]

use flakeid::{Builder, Generator, ManualClock, MutexGenerator};
use flakeid_loom_tests::{
    Got, Rules, at, check, decode, layout, model, race_across_a_tick_change, race_in_one_tick,
};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::thread;

fn lock_free(builder: Builder<ManualClock>) -> Generator<ManualClock> {
    builder.build().unwrap()
}

fn locked(builder: Builder<ManualClock>) -> MutexGenerator<ManualClock> {
    builder.build_mutex().unwrap()
}

#[test]
fn threads_racing_in_one_tick_get_its_sequence_values_once_each() {
    race_in_one_tick(lock_free, |g| g.next_id());
}

#[test]
fn the_mutex_twin_racing_in_one_tick_does_the_same() {
    race_in_one_tick(locked, |g| g.next_id());
}

#[test]
fn the_tick_can_advance_between_a_load_and_its_compare_and_swap() {
    race_across_a_tick_change(lock_free, |g| g.next_id());
}

#[test]
fn the_mutex_twin_across_a_tick_change_does_the_same() {
    race_across_a_tick_change(locked, |g| g.next_id());
}

/// Three threads, one `try_next_id` each, in one tick.
#[test]
fn three_threads_race_for_one_tick() {
    model("three_threads_race_for_one_tick", || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let generator = Arc::new(lock_free(
            Builder::new(layout.clone()).node_id(1).clock(clock.clone()),
        ));
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let generator = generator.clone();
                thread::spawn(move || vec![Got::plain(generator.try_next_id().unwrap())])
            })
            .collect();
        let per_thread: Vec<Vec<Got>> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        let rules = Rules {
            clock_max: Some(at(10)),
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, generator.last_id(), rules);
        let seqs: Vec<u64> = all
            .iter()
            .map(|&id| decode(&layout, id).sequence())
            .collect();
        assert_eq!(seqs, [0, 1, 2]);
    });
}

/// A call that starts after another returned (seen through a release/acquire
/// flag) gets a larger ID, while the clock moves.
#[test]
fn a_call_that_starts_after_another_returned_gets_a_larger_id() {
    model("a_call_that_starts_after_another_returned", || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let generator = Arc::new(lock_free(
            Builder::new(layout.clone()).node_id(1).clock(clock.clone()),
        ));
        // 0: not yet; otherwise the first thread's ID.
        let published = Arc::new(AtomicU64::new(0));
        let first = {
            let (generator, published) = (generator.clone(), published.clone());
            thread::spawn(move || {
                let id = generator.next_id();
                published.store(id.to_u64(), Ordering::Release);
                id
            })
        };
        let second = {
            let (generator, published) = (generator.clone(), published.clone());
            thread::spawn(move || {
                let before = published.load(Ordering::Acquire);
                let id = generator.next_id();
                (before, id)
            })
        };
        clock.set_ms(at(11));
        let a = first.join().unwrap();
        let (before, b) = second.join().unwrap();
        if before != 0 {
            assert_eq!(before, a.to_u64());
            assert!(b > a, "{b} was issued after {a} returned, but is smaller");
        }
        let rules = Rules {
            clock_max: Some(at(11)),
            ..Rules::STRICT
        };
        check(
            &layout,
            &[vec![Got::plain(a)], vec![Got::plain(b)]],
            generator.last_id(),
            rules,
        );
    });
}

/// A clock that only moves forward is never reported behind, even with
/// `OnClockBehind::Error`: a thread that sees another's new tick in the state
/// also sees at least the clock reading that tick came from.
#[test]
fn a_clock_that_only_moves_forward_is_never_reported_behind() {
    let reached = flakeid_loom_tests::Reached::new(&["a thread issued in a tick another entered"]);
    let seen = reached.clone();
    model(
        "a_clock_that_only_moves_forward_is_never_reported_behind",
        move || {
            let layout = layout(2);
            let clock = ManualClock::new(at(10));
            let generator = Arc::new(lock_free(
                Builder::new(layout.clone())
                    .node_id(1)
                    .clock(clock.clone())
                    .on_clock_behind(flakeid::OnClockBehind::Error),
            ));
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    let (generator, clock) = (generator.clone(), clock.clone());
                    thread::spawn(move || {
                        (0..2)
                            .map(|_| match generator.try_next_id() {
                                Ok(id) => Got::then_read(id, &clock),
                                Err(e) => panic!("the clock never moved back, yet: {e}"),
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            clock.set_ms(at(11));
            let per_thread: Vec<Vec<Got>> =
                workers.into_iter().map(|h| h.join().unwrap()).collect();
            check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
            let tick = |g: &Got| decode(&layout, g.id).timestamp();
            if tick(&per_thread[0][1]) == 11 && tick(&per_thread[1][1]) == 11 {
                seen.saw("a thread issued in a tick another entered");
            }
        },
    );
    reached.assert_all();
}
