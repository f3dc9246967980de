//! Bad generator configurations get a typed error naming the problem.

use std::time::Duration;

use flakeid::{
    BuildError, FieldError, Generator, Layout, LayoutError, OnClockBehind, OnExhausted, Persist,
    StateError,
};

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

/// A node field left out is refused, naming it, in either generator: every
/// host that forgot it would otherwise issue with it 0, and so the same IDs.
#[test]
fn a_forgotten_node_field_is_refused_by_name() {
    let forgot = || Generator::builder(Layout::twitter()).node_field("datacenter", 1);
    let expected = BuildError::Field(FieldError::NodeFieldNotSet {
        field: "worker".into(),
    });
    assert_eq!(forgot().build().unwrap_err(), expected);
    assert_eq!(forgot().build_mutex().unwrap_err(), expected);
    assert_eq!(
        expected.to_string(),
        "node field `worker` is not set: give every node field a value \
         (0 if that is meant), or the whole node id"
    );
    // The highest field left out is the one named.
    let err = Generator::builder(Layout::twitter())
        .node_field("worker", 3)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::Field(FieldError::NodeFieldNotSet {
            field: "datacenter".into()
        })
    );
    // Given as 0 on purpose, it is accepted.
    let generator = forgot().node_field("worker", 0).build().unwrap();
    assert_eq!(generator.node_id(), 1 << 5);
    let decoded = generator.layout().decode(generator.next_id()).unwrap();
    assert_eq!(
        (decoded.field("datacenter"), decoded.field("worker")),
        (Some(1), Some(0))
    );
}

#[test]
fn clock_ids_must_fit_and_need_a_field() {
    assert_eq!(
        Generator::builder(multi_clock())
            .single_node()
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
            .single_node()
            .clock_id(1)
            .build()
            .unwrap_err(),
        BuildError::Field(FieldError::NoSuchField { field: "clock_id" })
    );
    assert!(
        Generator::builder(multi_clock())
            .single_node()
            .clock_id(15)
            .build()
            .is_ok()
    );
}

#[test]
fn next_clock_policies_need_a_clock_id_field_in_the_right_place() {
    assert_eq!(
        Generator::builder(Layout::twitter())
            .single_node()
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
            .single_node()
            .on_exhausted(OnExhausted::NextClock)
            .build()
            .unwrap_err(),
        BuildError::ClockIdBelowSequence
    );
    // Bumping on a step back does not need the order.
    assert!(
        Generator::builder(clock_below_sequence)
            .single_node()
            .on_clock_behind(OnClockBehind::NextClock)
            .build()
            .is_ok()
    );
}

#[test]
fn borrow_shorter_than_a_tick_and_bad_random_bounds_are_refused() {
    assert_eq!(
        Generator::builder(Layout::sonyflake())
            .single_node()
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
                .single_node()
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
            .single_node()
            .random_start(4096)
            .build_mutex()
            .is_ok()
    );
}

/// A unique temporary state-file path, removed when dropped.
struct TempState(std::path::PathBuf);

impl TempState {
    fn new(name: &str) -> TempState {
        let dir =
            std::env::temp_dir().join(format!("flakeid-validation-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempState(dir)
    }

    fn file(&self) -> std::path::PathBuf {
        self.0.join("node.state")
    }
}

impl Drop for TempState {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn with_node(name: &str, bits: u32) -> Result<Layout, LayoutError> {
    Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .node(name.to_owned(), bits)
        .sequence(12)
        .build()
}

#[test]
fn node_field_names_outside_the_documented_set_are_refused() {
    for (name, expected) in [
        (
            "a:1,b",
            LayoutError::BadNameCharacter {
                field: "a:1,b".into(),
                character: ':',
            },
        ),
        (
            "a\nb",
            LayoutError::BadNameCharacter {
                field: "a\nb".into(),
                character: '\n',
            },
        ),
        (
            "a,b",
            LayoutError::BadNameCharacter {
                field: "a,b".into(),
                character: ',',
            },
        ),
        (
            "a=b",
            LayoutError::BadNameCharacter {
                field: "a=b".into(),
                character: '=',
            },
        ),
        (
            "rack 1",
            LayoutError::BadNameCharacter {
                field: "rack 1".into(),
                character: ' ',
            },
        ),
        (
            "zone\u{e9}",
            LayoutError::BadNameCharacter {
                field: "zone\u{e9}".into(),
                character: '\u{e9}',
            },
        ),
        (
            &"w".repeat(33),
            LayoutError::NameTooLong {
                field: "w".repeat(33),
                len: 33,
                max: 32,
            },
        ),
        (
            "clock_id",
            LayoutError::ReservedName {
                field: "clock_id".into(),
            },
        ),
        (
            "timestamp",
            LayoutError::ReservedName {
                field: "timestamp".into(),
            },
        ),
    ] {
        let err = with_node(name, 5).unwrap_err();
        assert_eq!(err, expected, "{name:?}");
        // The message names the field (escaped) and what is wrong.
        let message = err.to_string();
        assert!(message.contains(&format!("{name:?}")), "{message}");
    }
    assert_eq!(
        with_node("a:1,b", 5).unwrap_err().to_string(),
        "node field \"a:1,b\" has ':' in its name: names are ASCII letters, digits, `_` and `-`"
    );
    // The whole documented set, at the longest length, is accepted.
    let longest = "aZ09_-bcdefghijklmnopqrstuvwxyzA";
    assert_eq!(longest.len(), Layout::MAX_NAME_LEN);
    assert!(with_node(longest, 5).is_ok());
}

#[test]
fn a_layout_cannot_pass_for_another_in_its_state_file() {
    // 41 + `a`:1 + `b`:5 + 12: its state file describes the fields as
    // `timestamp:41,a:1,b:5,sequence:12`. A node field named `a:1,b` (5 bits,
    // one bit less in all) would describe itself the same way and so build
    // on this file without a mismatch.
    let dir = TempState::new("described");
    let wide = Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .node("a", 1)
        .node("b", 5)
        .sequence(12)
        .build()
        .unwrap();
    let g = Generator::builder(wide)
        .node_id(3)
        .persist(Persist::file(dir.file()))
        .build()
        .unwrap();
    g.next_id();
    drop(g);
    match with_node("a:1,b", 5) {
        Err(e) => assert!(matches!(e, LayoutError::BadNameCharacter { .. }), "{e:?}"),
        Ok(narrow) => {
            let built = Generator::builder(narrow)
                .node_id(3)
                .persist(Persist::file(dir.file()))
                .build();
            assert!(
                matches!(built, Err(BuildError::State(StateError::Mismatch { .. }))),
                "a 58-bit layout built on a 59-bit layout's state: {built:?}"
            );
        }
    }
}

#[test]
fn a_node_named_clock_id_cannot_pass_for_a_clock_id_field() {
    // A node field named `clock_id` would describe itself as a clock-id field.
    assert_eq!(
        Layout::builder()
            .epoch_ms(1_600_000_000_000)
            .timestamp_bits(41)
            .node("clock_id", 4)
            .node("machine", 8)
            .sequence(10)
            .build(),
        Err(LayoutError::ReservedName {
            field: "clock_id".into()
        })
    );
    assert!(multi_clock().field("clock_id").is_some());
}
