//! `Generator::health` for readiness probes: issuing, storage failing (and
//! recovered), expired. The fenced state is checked against real etcd and
//! Redis servers in `lease_support::killed_then_restarted`.
//!
//! Every wait here is for an event (the writer's failed or successful save),
//! never for a span of real time.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use flakeid::{GenerateError, Generator, Health, Layout, ManualClock, MutexGenerator, Persist};

mod switch_store;
use switch_store::Switch;

const T0: u64 = 1_700_000_000_000;

#[test]
fn a_generator_that_issues_is_ready() {
    let generator = Generator::builder(Layout::twitter())
        .node_id(3)
        .build()
        .unwrap();
    assert_eq!(generator.health(), Health::Issuing);
    let twin = MutexGenerator::builder(Layout::twitter())
        .node_id(3)
        .build_mutex()
        .unwrap();
    assert_eq!(twin.health(), Health::Issuing);
    assert!(twin.health().is_ready());
}

#[test]
fn failing_storage_is_reported_until_a_save_succeeds() {
    let clock = ManualClock::new(T0);
    let store = Switch::default();
    let generator = Generator::builder(Layout::twitter())
        .node_id(1)
        .clock(clock.clone())
        .persist(Persist::store(store.clone()).window(Duration::from_secs(1)))
        .build()
        .unwrap();
    generator.try_next_id().unwrap();
    assert_eq!(generator.health(), Health::Issuing);

    store.failing.store(true, Ordering::SeqCst);
    // Past the saved reservation: the next ID needs a save, which fails.
    clock.advance(Duration::from_secs(5));
    let health = loop {
        match generator.try_next_id() {
            Err(GenerateError::Reserving) => thread::sleep(Duration::from_millis(1)),
            Err(GenerateError::Storage(_)) => break generator.health(),
            other => panic!("issued past the reservation while saving fails: {other:?}"),
        }
    };
    assert!(store.failed.load(Ordering::SeqCst) >= 1);
    match &health {
        Health::StorageFailing(e) => assert!(e.to_string().contains("write (injected)"), "{e}"),
        other => panic!("expected StorageFailing, got {other:?}"),
    }
    assert!(!health.is_ready());
    assert!(
        health.to_string().starts_with("storage failing: "),
        "{health}"
    );

    // The writer retries on its own; once a save lands, the generator issues.
    store.failing.store(false, Ordering::SeqCst);
    while generator.health() != Health::Issuing {
        thread::sleep(Duration::from_millis(1));
    }
    let id = generator.next_id();
    let decoded = generator.layout().decode(id).unwrap();
    assert_eq!(decoded.unix_ms(), T0 + 5_000);
}

#[test]
fn a_layout_past_its_end_is_expired_for_good() {
    // 10 bits of ms: the layout ends 1,024 ms after its epoch.
    let layout = Layout::builder()
        .epoch_ms(T0)
        .timestamp_bits(10)
        .node("worker", 4)
        .sequence(8)
        .build()
        .unwrap();
    let clock = ManualClock::new(T0 + 100);
    let generator = Generator::builder(layout.clone())
        .node_id(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    assert_eq!(generator.health(), Health::Issuing);
    clock.set_ms(T0 + 2_000);
    let last_ms = layout.last_ms();
    assert_eq!(last_ms, T0 + 1_023);
    assert_eq!(generator.health(), Health::Expired { last_ms });
    assert_eq!(
        generator.try_next_id(),
        Err(GenerateError::Expired { last_ms })
    );
    assert_eq!(
        generator.health().to_string(),
        format!("expired: the layout ended at {last_ms} ms since 1970")
    );
}
