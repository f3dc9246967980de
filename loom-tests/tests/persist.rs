//! Restart safety's reservation: the writer thread saving marks ahead of
//! use and publishing the ceiling a generator may enter ticks up to; a
//! generator's request for a tick past it, which wakes the writer; and the
//! stop on drop with its final save.
//!
//! Under loom the writer runs on a loom thread and parks without a timeout
//! (`primitive::thread::park_timeout` is a plain park there), so a lost
//! wake-up is a deadlock loom reports, not a delay.
#![cfg(flakeid_loom)]

use std::time::Duration;

use flakeid::loom_hooks::{MemoryStore, PersistBug};
use flakeid::{Builder, GenerateError, Generator, Id, ManualClock, Persist};
use flakeid_loom_tests::{Reached, at, decode, layout, model};
use loom::sync::Arc;
use loom::thread;

/// A persisted generator on `layout(2)` at tick 10 with a one-tick window:
/// building saves mark 11 before it returns. `bug`, if any, is planted in
/// the store's later saves.
fn persisted(
    store: &MemoryStore,
    clock: &ManualClock,
    bug: Option<PersistBug>,
) -> Generator<ManualClock> {
    let persist = Persist::store(store.clone()).window(Duration::from_millis(1));
    let generator = Builder::new(layout(2))
        .node_id(1)
        .clock(clock.clone())
        .persist(persist)
        .build()
        .unwrap();
    if let Some(bug) = bug {
        store.plant(bug);
    }
    generator
}

/// The clock jumps to tick 12, past the saved mark (11), while a worker
/// polls: it gets `Reserving` until the writer has saved a mark covering
/// tick 12, and every ID it gets is at or below a mark already saved when
/// the call returned.
pub fn no_id_outruns_the_saved_mark(bug: Option<PersistBug>) {
    let reached = Reached::new(&["an id at tick 12", "refused until saved"]);
    let seen_by = reached.clone();
    model("no_id_outruns_the_saved_mark", move || {
        let store = MemoryStore::default();
        let clock = ManualClock::new(at(10));
        let generator = Arc::new(persisted(&store, &clock, bug));
        assert_eq!(
            store.max_mark(),
            Some(11),
            "building saves one window ahead"
        );
        clock.set_ms(at(12));
        let worker = {
            let (generator, store) = (generator.clone(), store.clone());
            thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..3 {
                    match generator.poll_id() {
                        Ok(id) => {
                            let tick = decode(generator.layout(), id).timestamp();
                            let saved = store.max_mark().unwrap_or(0);
                            assert!(
                                tick <= saved,
                                "id {id} at tick {tick} past the saved mark {saved}"
                            );
                            ids.push(id);
                        }
                        Err(GenerateError::Reserving) => {}
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
                ids
            })
        };
        let ids: Vec<Id> = worker.join().unwrap();
        if ids.is_empty() {
            seen_by.saw("refused until saved");
        } else {
            seen_by.saw("an id at tick 12");
        }
        drop(generator);
    });
    reached.assert_all();
}

#[test]
fn no_id_outruns_the_saved_mark_while_the_writer_catches_up() {
    no_id_outruns_the_saved_mark(None);
}

/// The ceiling has teeth: a ceiling published before the save that covers
/// it is durable (here, by a store that acknowledges the save before it is
/// durable) lets an ID through past the mark on disk.
#[test]
#[should_panic(expected = "past the saved mark")]
fn the_reservation_model_catches_a_ceiling_published_before_the_save() {
    no_id_outruns_the_saved_mark(Some(PersistBug::AcknowledgeBeforeDurable));
}

/// A blocking `next_id` whose tick needs a save: its request must wake the
/// parked writer (loom's park has no timeout here), and the call returns an
/// ID at or below the saved mark. A lost wake-up leaves both threads
/// waiting, which loom reports.
pub fn a_waiting_caller_wakes_the_writer(bug: Option<PersistBug>) {
    model("a_waiting_caller_wakes_the_writer", move || {
        let store = MemoryStore::default();
        let clock = ManualClock::new(at(10));
        let generator = persisted(&store, &clock, bug);
        clock.set_ms(at(12));
        let id = generator.next_id();
        let tick = decode(generator.layout(), id).timestamp();
        assert_eq!(tick, 12);
        assert!(store.max_mark().unwrap_or(0) >= 12);
    });
}

#[test]
fn a_waiting_caller_wakes_the_parked_writer() {
    a_waiting_caller_wakes_the_writer(None);
}

/// The wake-up has teeth: a request whose wake-up the writer loses (here,
/// its store waits for another one, which a caller repeating its request
/// never sends) never gets its save; the caller yields forever, which loom
/// reports once the execution exceeds its branch limit.
#[test]
#[should_panic(expected = "exceeded maximum number of branches")]
fn the_wake_up_model_catches_a_lost_wake_up() {
    a_waiting_caller_wakes_the_writer(Some(PersistBug::SwallowWakeUp));
}

/// Dropping the generator while a worker issues and the writer may be
/// mid-save: the final save never leaves the mark below an ID issued, and
/// the writer thread is joined (the model ends with no thread left).
#[test]
fn the_final_save_never_lowers_the_mark_below_an_issued_id() {
    let reached = Reached::new(&["lowered to the last id"]);
    let seen_by = reached.clone();
    model(
        "the_final_save_never_lowers_the_mark_below_an_issued_id",
        move || {
            let store = MemoryStore::default();
            let clock = ManualClock::new(at(10));
            let generator = Arc::new(persisted(&store, &clock, None));
            let worker = {
                let (generator, clock) = (generator.clone(), clock.clone());
                thread::spawn(move || {
                    let first = generator.next_id();
                    clock.set_ms(at(11));
                    let second = generator.next_id();
                    [first, second]
                })
            };
            let ids = worker.join().unwrap();
            let last = ids
                .iter()
                .map(|&id| decode(generator.layout(), id).timestamp())
                .max()
                .unwrap();
            let before = store.max_mark().unwrap();
            let Ok(generator) = Arc::try_unwrap(generator) else {
                panic!("the model holds the only handle");
            };
            drop(generator);
            let after = store.max_mark().unwrap();
            assert!(
                after >= last,
                "the final mark {after} is below the last id's tick {last}"
            );
            assert!(after <= before, "the final save raised the mark");
            if after == last {
                seen_by.saw("lowered to the last id");
            }
        },
    );
    reached.assert_all();
}
