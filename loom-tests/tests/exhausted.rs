//! A tick's sequence running out under each `OnExhausted` policy, with two
//! IDs per tick so that a handful of calls run out.
#![cfg(flakeid_loom)]

use std::time::Duration;

use flakeid::{Builder, GenerateError, Generator, Id, IdGenerator, ManualClock, OnExhausted};
use flakeid_loom_tests::{
    Done, Got, Reached, Rules, at, check, decode, layout, model, move_clock_when_full,
    multi_clock_layout, tick_used_up,
};
use loom::sync::Arc;
use loom::thread;

fn generator(builder: Builder<ManualClock>) -> Arc<Generator<ManualClock>> {
    Arc::new(builder.node_id(2).counters(true).build().unwrap())
}

/// Spawns one worker per entry of `calls`, each taking that many IDs with
/// `issue` and reading the clock after each; the worker reports to `done`.
fn workers<G: IdGenerator + 'static>(
    generator: &Arc<G>,
    clock: &ManualClock,
    done: &Done,
    calls: &[usize],
    issue: fn(&G) -> Id,
) -> Vec<thread::JoinHandle<Vec<Got>>> {
    calls
        .iter()
        .map(|&n| {
            let (generator, clock, done) = (generator.clone(), clock.clone(), done.clone());
            thread::spawn(move || {
                let got = (0..n)
                    .map(|_| Got::then_read(issue(&generator), &clock))
                    .collect();
                done.finish();
                got
            })
        })
        .collect()
}

/// Each ID's (timestamp, clock id, sequence).
fn clock_id_slots(layout: &flakeid::Layout, ids: &[Id]) -> Vec<(u64, u64, u64)> {
    ids.iter()
        .map(|&id| {
            let d = decode(layout, id);
            (d.timestamp(), d.clock_id(), d.sequence())
        })
        .collect()
}

fn ticks_of(layout: &flakeid::Layout, ids: &[Id]) -> Vec<u64> {
    ids.iter()
        .map(|&id| decode(layout, id).timestamp())
        .collect()
}

/// `Wait`: three IDs from a tick of two; the thread that finds tick 10 used
/// up waits until the clock moves to 11.
#[test]
fn wait_holds_a_thread_until_the_clock_reaches_the_next_tick() {
    let reached = Reached::new(&["a thread waited", "no thread waited"]);
    let seen = reached.clone();
    model("wait", move || {
        let layout = layout(1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone()),
        );
        let done = Done::default();
        let handles = workers(&generator, &clock, &done, &[2, 1], |g| g.next_id());
        let moved = move_clock_when_full(&*generator, &clock, &done, 2, tick_used_up(&layout));
        let per_thread: Vec<Vec<Got>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all = check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        assert_eq!(ticks_of(&layout, &all), [10, 10, 11]);
        assert_eq!(moved, 1);
        let stats = generator.stats().unwrap();
        assert_eq!((stats.issued, stats.borrowed_ticks), (3, 0));
        assert!(stats.waits <= 1);
        seen.saw(if stats.waits > 0 {
            "a thread waited"
        } else {
            "no thread waited"
        });
    });
    reached.assert_all();
}

/// `Borrow` up to its limit: with a 1 ms allowance and the clock held at
/// tick 10, four IDs fill ticks 10 and 11 without anyone waiting.
#[test]
fn borrow_runs_ahead_up_to_its_allowance_without_waiting() {
    model("borrow_up_to_the_limit", || {
        let layout = layout(1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone())
                .on_exhausted(OnExhausted::Borrow {
                    max_ahead: Duration::from_millis(1),
                }),
        );
        let handles = workers(&generator, &clock, &Done::default(), &[2, 2], |g| {
            g.next_id()
        });
        let per_thread: Vec<Vec<Got>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let rules = Rules {
            lead_ticks: 1,
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, generator.last_id(), rules);
        assert_eq!(ticks_of(&layout, &all), [10, 10, 11, 11]);
        let stats = generator.stats().unwrap();
        assert_eq!((stats.issued, stats.borrowed_ticks, stats.waits), (4, 1, 0));
    });
}

/// `Borrow` past its limit: a fifth ID would lead the clock by two ticks, so
/// its thread waits until the clock reaches tick 11, then borrows tick 12.
#[test]
fn borrow_past_its_allowance_waits_for_the_clock() {
    let reached = Reached::new(&["a thread waited at the limit"]);
    let seen = reached.clone();
    model("borrow_past_the_limit", move || {
        let layout = layout(1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone())
                .on_exhausted(OnExhausted::Borrow {
                    max_ahead: Duration::from_millis(1),
                }),
        );
        let done = Done::default();
        let handles = workers(&generator, &clock, &done, &[3, 2], |g| g.next_id());
        let at_the_limit = |last: &flakeid::Decoded<'_>, tick: u64| {
            last.timestamp() == tick + 1 && last.sequence() == 1
        };
        let moved = move_clock_when_full(&*generator, &clock, &done, 2, at_the_limit);
        let per_thread: Vec<Vec<Got>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let rules = Rules {
            lead_ticks: 1,
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, generator.last_id(), rules);
        assert_eq!(ticks_of(&layout, &all), [10, 10, 11, 11, 12]);
        assert_eq!(moved, 1);
        let stats = generator.stats().unwrap();
        assert_eq!((stats.issued, stats.borrowed_ticks), (5, 2));
        if stats.waits > 0 {
            seen.saw("a thread waited at the limit");
        }
    });
    reached.assert_all();
}

/// `Borrow` past its limit, polled: of six `poll_id` calls at a clock held
/// at tick 10, exactly four succeed (ticks 10 and 11) and two report the
/// sequence used up, to retry in 1 ms.
#[test]
fn borrow_past_its_allowance_is_reported_by_poll_id() {
    model("borrow_past_the_limit_polled", || {
        let layout = layout(1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone())
                .on_exhausted(OnExhausted::Borrow {
                    max_ahead: Duration::from_millis(1),
                }),
        );
        let (ids, errors) = polls(&generator, [3, 3], |g| g.poll_id());
        let rules = Rules {
            lead_ticks: 1,
            clock_max: Some(at(10)),
            ..Rules::STRICT
        };
        let all = check(&layout, &ids, generator.last_id(), rules);
        assert_eq!(ticks_of(&layout, &all), [10, 10, 11, 11]);
        let retry_in_1ms = GenerateError::SequenceExhausted {
            retry_after: Duration::from_millis(1),
        };
        assert_eq!(errors, [retry_in_1ms.clone(), retry_in_1ms]);
    });
}

/// Runs `issue` `calls[t]` times on thread `t`; returns each thread's IDs and
/// all the errors. A thread that got an error gets no ID after it (the clock
/// does not move, so a used-up tick stays used up).
fn polls<G: IdGenerator + 'static>(
    generator: &Arc<G>,
    calls: [usize; 2],
    issue: fn(&G) -> Result<Id, GenerateError>,
) -> (Vec<Vec<Got>>, Vec<GenerateError>) {
    let handles: Vec<_> = calls
        .iter()
        .map(|&n| {
            let generator = generator.clone();
            thread::spawn(move || (0..n).map(|_| issue(&generator)).collect::<Vec<_>>())
        })
        .collect();
    let mut ids = Vec::new();
    let mut errors = Vec::new();
    for h in handles {
        let results = h.join().unwrap();
        let first_error = results.iter().position(Result::is_err);
        if let Some(i) = first_error {
            assert!(
                results[i..].iter().all(Result::is_err),
                "an id after an exhausted tick at a fixed clock: {results:?}"
            );
        }
        let mut got = Vec::new();
        for r in results {
            match r {
                Ok(id) => got.push(Got::plain(id)),
                Err(e) => errors.push(e),
            }
        }
        ids.push(got);
    }
    (ids, errors)
}

/// `Error`: four `try_next_id` calls on a tick of two at a fixed clock: two
/// IDs (sequence 0 and 1 of tick 10), two `SequenceExhausted` at once.
#[test]
fn error_reports_a_used_up_tick_at_once() {
    model("error", || {
        let layout = layout(1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone())
                .on_exhausted(OnExhausted::Error),
        );
        let (ids, errors) = polls(&generator, [2, 2], |g| g.try_next_id());
        let rules = Rules {
            clock_max: Some(at(10)),
            ..Rules::STRICT
        };
        let all = check(&layout, &ids, generator.last_id(), rules);
        let seqs: Vec<(u64, u64)> = all
            .iter()
            .map(|&id| {
                let d = decode(&layout, id);
                (d.timestamp(), d.sequence())
            })
            .collect();
        assert_eq!(seqs, [(10, 0), (10, 1)]);
        let retry_in_1ms = GenerateError::SequenceExhausted {
            retry_after: Duration::from_millis(1),
        };
        assert_eq!(errors, [retry_in_1ms.clone(), retry_in_1ms]);
        let stats = generator.stats().unwrap();
        assert_eq!((stats.issued, stats.waits), (2, 0));
    });
}

/// `NextClock`: with a 1-bit clock id above a 1-bit sequence, tick 10 holds
/// four IDs: clock id 0, then clock id 1, no thread waiting.
#[test]
fn next_clock_moves_to_the_next_clock_id_within_the_tick() {
    model("next_clock", || {
        let layout = multi_clock_layout(1, 1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone())
                .on_exhausted(OnExhausted::NextClock),
        );
        let handles = workers(&generator, &clock, &Done::default(), &[2, 2], |g| {
            g.next_id()
        });
        let per_thread: Vec<Vec<Got>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all = check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        let slots = clock_id_slots(&layout, &all);
        assert_eq!(slots, [(10, 0, 0), (10, 0, 1), (10, 1, 0), (10, 1, 1)]);
        let stats = generator.stats().unwrap();
        assert_eq!((stats.issued, stats.clock_id_bumps, stats.waits), (4, 1, 0));
    });
}

/// `NextClock` once every clock id is used in the tick: the fifth ID waits
/// for tick 11, which continues on the last clock id.
#[test]
fn next_clock_with_every_clock_id_used_waits_for_the_next_tick() {
    model("next_clock_all_used", || {
        let layout = multi_clock_layout(1, 1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone())
                .on_exhausted(OnExhausted::NextClock),
        );
        let done = Done::default();
        let handles = workers(&generator, &clock, &done, &[3, 2], |g| g.next_id());
        let all_used = |last: &flakeid::Decoded<'_>, tick: u64| {
            last.timestamp() == tick && last.clock_id() == 1 && last.sequence() == 1
        };
        let moved = move_clock_when_full(&*generator, &clock, &done, 2, all_used);
        let per_thread: Vec<Vec<Got>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all = check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        let slots = clock_id_slots(&layout, &all);
        assert_eq!(
            slots,
            [(10, 0, 0), (10, 0, 1), (10, 1, 0), (10, 1, 1), (11, 1, 0)]
        );
        assert_eq!(moved, 1);
        let stats = generator.stats().unwrap();
        assert_eq!((stats.issued, stats.clock_id_bumps), (5, 1));
    });
}

/// `NextClock` starting on the highest clock id: there is no next one up,
/// and clock ids never wrap down (a lower clock id in the same tick would
/// issue below the IDs just issued), so the third ID waits for tick 11.
#[test]
fn next_clock_on_the_highest_clock_id_never_wraps_down() {
    model("next_clock_no_wrap", || {
        let layout = multi_clock_layout(1, 1);
        let clock = ManualClock::new(at(10));
        let generator = generator(
            Builder::new(layout.clone())
                .single_node()
                .clock(clock.clone())
                .clock_id(1)
                .on_exhausted(OnExhausted::NextClock),
        );
        let done = Done::default();
        let handles = workers(&generator, &clock, &done, &[2, 1], |g| g.next_id());
        let used_up = |last: &flakeid::Decoded<'_>, tick: u64| {
            last.timestamp() == tick && last.clock_id() == 1 && last.sequence() == 1
        };
        let moved = move_clock_when_full(&*generator, &clock, &done, 2, used_up);
        let per_thread: Vec<Vec<Got>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all = check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        let slots = clock_id_slots(&layout, &all);
        assert_eq!(slots, [(10, 1, 0), (10, 1, 1), (11, 1, 0)]);
        assert_eq!(moved, 1);
        let stats = generator.stats().unwrap();
        assert_eq!((stats.issued, stats.clock_id_bumps), (3, 0));
    });
}
