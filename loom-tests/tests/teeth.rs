//! The models have teeth: run on deliberately broken variants of the
//! generator (compiled only under `--cfg flakeid_loom`), the same models that
//! pass on the real one must fail.
#![cfg(flakeid_loom)]

use flakeid::loom_hooks::Broken;
use flakeid::{Builder, Generator, ManualClock};
use flakeid_loom_tests::{race_across_a_tick_change, race_in_one_tick};

fn lock_free(builder: Builder<ManualClock>) -> Generator<ManualClock> {
    builder.build().unwrap()
}

/// A load and a store in place of the compare-and-swap: two threads install
/// the same successor and both hand it out.
#[test]
#[should_panic(expected = "duplicate id")]
fn the_race_model_catches_a_load_and_store_in_place_of_the_cas() {
    race_in_one_tick(lock_free, |g| g.broken_next_id_load_store());
}

/// The same bug, caught by the model whose clock moves.
#[test]
#[should_panic(expected = "duplicate id")]
fn the_tick_change_model_catches_a_load_and_store_in_place_of_the_cas() {
    race_across_a_tick_change(lock_free, |g| g.broken_next_id_load_store());
}

/// A retry after a lost race that reuses its stale successor: the state does
/// not advance, and the winner's ID is handed out twice.
#[test]
#[should_panic(expected = "duplicate id")]
fn the_race_model_catches_a_lost_increment_after_a_lost_race() {
    race_in_one_tick(lock_free, |g| g.broken_next_id_stale_retry());
}
