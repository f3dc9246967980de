//! Bad generator configurations get a typed error naming the problem.

use std::time::Duration;

use flakeid::{BuildError, FieldError, Generator, Layout, OnClockBehind, OnExhausted};

fn multi_clock() -> Layout {
    Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .clock_id(4)
        .node("machine", 8)
        .sequence(10)
        .build()
        .unwrap()
}

#[test]
fn node_ids_out_of_range_or_unknown_are_refused() {
    let err = Generator::builder(Layout::twitter())
        .node_id(1024)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::Field(FieldError::OutOfRange {
            field: "node".into(),
            value: 1024,
            max: 1023
        })
    );
    assert_eq!(err.to_string(), "node 1024 is out of range (0..=1023)");
    let err = Generator::builder(Layout::twitter())
        .node_field("worker", 32)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::Field(FieldError::OutOfRange {
            field: "worker".into(),
            value: 32,
            max: 31
        })
    );
    let err = Generator::builder(Layout::twitter())
        .node_field("shard", 1)
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "the layout has no field `shard`");
}

#[test]
fn clock_ids_must_fit_and_need_a_field() {
    assert_eq!(
        Generator::builder(multi_clock())
            .clock_id(16)
            .build()
            .unwrap_err(),
        BuildError::Field(FieldError::OutOfRange {
            field: "clock_id".into(),
            value: 16,
            max: 15
        })
    );
    assert_eq!(
        Generator::builder(Layout::twitter())
            .clock_id(1)
            .build()
            .unwrap_err(),
        BuildError::Field(FieldError::NoSuchField { field: "clock_id" })
    );
    assert!(
        Generator::builder(multi_clock())
            .clock_id(15)
            .build()
            .is_ok()
    );
}

#[test]
fn next_clock_policies_need_a_clock_id_field_in_the_right_place() {
    assert_eq!(
        Generator::builder(Layout::twitter())
            .on_clock_behind(OnClockBehind::NextClock)
            .build()
            .unwrap_err(),
        BuildError::NeedsClockIdField {
            policy: "OnClockBehind::NextClock"
        }
    );
    let clock_below_sequence = Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .sequence(10)
        .clock_id(4)
        .build()
        .unwrap();
    assert_eq!(
        Generator::builder(clock_below_sequence.clone())
            .on_exhausted(OnExhausted::NextClock)
            .build()
            .unwrap_err(),
        BuildError::ClockIdBelowSequence
    );
    // Bumping on a step back does not need the order.
    assert!(
        Generator::builder(clock_below_sequence)
            .on_clock_behind(OnClockBehind::NextClock)
            .build()
            .is_ok()
    );
}

#[test]
fn borrow_shorter_than_a_tick_and_bad_random_bounds_are_refused() {
    assert_eq!(
        Generator::builder(Layout::sonyflake())
            .on_exhausted(OnExhausted::Borrow {
                max_ahead: Duration::from_millis(9)
            })
            .build()
            .unwrap_err(),
        BuildError::BorrowTooShort {
            max_ahead: Duration::from_millis(9),
            unit_ms: 10
        }
    );
    for bound in [0, 4097] {
        assert_eq!(
            Generator::builder(Layout::twitter())
                .random_start(bound)
                .build()
                .unwrap_err(),
            BuildError::RandomStartOutOfRange {
                bound,
                capacity: 4096
            }
        );
    }
    assert!(
        Generator::builder(Layout::twitter())
            .random_start(4096)
            .build_mutex()
            .is_ok()
    );
}
