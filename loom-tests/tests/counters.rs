//! The counters, on, under racing threads: each ID counted once, each
//! borrowed tick once, and a lead within the allowance not counted as the
//! clock reading behind.
#![cfg(flakeid_loom)]

use std::time::Duration;

use flakeid::{Builder, ManualClock, OnExhausted};
use flakeid_loom_tests::{Got, Rules, at, check, decode, layout, model};
use loom::sync::Arc;
use loom::thread;

#[test]
fn counters_count_every_id_and_borrowed_tick_once() {
    model("counters", || {
        let layout = layout(1);
        let clock = ManualClock::new(at(10));
        let generator = Arc::new(
            Builder::new(layout.clone())
                .node_id(4)
                .clock(clock.clone())
                .on_exhausted(OnExhausted::Borrow {
                    max_ahead: Duration::from_millis(1),
                })
                .counters(true)
                .build()
                .unwrap(),
        );
        let batch = {
            let generator = generator.clone();
            thread::spawn(move || generator.next_ids(2).map(Got::plain).collect::<Vec<_>>())
        };
        let singles = {
            let generator = generator.clone();
            thread::spawn(move || (0..2).map(|_| Got::plain(generator.next_id())).collect())
        };
        let per_thread: Vec<Vec<Got>> = vec![batch.join().unwrap(), singles.join().unwrap()];
        let rules = Rules {
            lead_ticks: 1,
            clock_max: Some(at(10)),
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, generator.last_id(), rules);
        let borrowed = all.iter().any(|&id| decode(&layout, id).timestamp() == 11);
        let stats = generator.stats().unwrap();
        let counted = (
            stats.issued,
            stats.borrowed_ticks,
            stats.waits,
            stats.clock_behind,
            stats.clock_id_bumps,
        );
        assert_eq!(counted, (all.len() as u64, u64::from(borrowed), 0, 0, 0));
    });
}
