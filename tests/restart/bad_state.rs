//! State a build refuses: damaged, foreign or from a newer format; marks
//! past the layout's end or far ahead of the clock; windows too long to be
//! safe; a restart rule the layout cannot serve. Each with the operator's
//! override where there is one.

use std::path::Path;
use std::time::Duration;

use flakeid::{
    BuildError, GenerateError, Generator, Layout, ManualClock, OnInvalidState, Persist,
    RestartRule, StateError,
};

use crate::{EPOCH, T, TempDir, file_marks, layout, node_7, tick, ts};

#[test]
fn damaged_or_foreign_state_is_refused_until_an_operator_overrides_it() {
    let dir = TempDir::new("damaged");
    let clock = ManualClock::new(T);
    let build = |persist: Persist| node_7(&clock, persist);
    drop(build(Persist::file(dir.file())).unwrap());
    let good = std::fs::read(dir.file()).unwrap();
    let state_err = |r: Result<Generator<ManualClock>, BuildError>| match r {
        Err(BuildError::State(e)) => e,
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a bad state was accepted"),
    };

    let mut flipped = good.clone();
    flipped[40] ^= 0x01;
    std::fs::write(dir.file(), &flipped).unwrap();
    assert!(matches!(
        state_err(build(Persist::file(dir.file()))),
        StateError::Corrupt { .. }
    ));

    std::fs::write(dir.file(), &good[..good.len() - 5]).unwrap();
    assert_eq!(
        state_err(build(Persist::file(dir.file()))),
        StateError::Truncated
    );

    let future = String::from_utf8(good.clone()).unwrap().replacen(
        "flakeid state v1",
        "flakeid state v9",
        1,
    );
    std::fs::write(dir.file(), future).unwrap();
    assert_eq!(
        state_err(build(Persist::file(dir.file()))),
        StateError::UnsupportedVersion {
            found: 9,
            supported: 1
        }
    );

    // Another node's state.
    std::fs::write(dir.file(), &good).unwrap();
    let other = Generator::builder(layout())
        .node_id(8)
        .clock(clock.clone())
        .persist(Persist::file(dir.file()))
        .build();
    match state_err(other) {
        StateError::Mismatch { what } => {
            assert!(what.contains("node=7") && what.contains("node=8"))
        }
        e => panic!("{e}"),
    }
    // The refused file is untouched.
    assert_eq!(std::fs::read(dir.file()).unwrap(), good);

    // The override: an operator vouches that nothing after T + 60 s was issued.
    std::fs::write(dir.file(), &flipped).unwrap();
    let g = build(
        Persist::file(dir.file()).on_invalid_state(OnInvalidState::Replace {
            issued_until_ms: T + 60_000,
        }),
    )
    .unwrap();
    assert!(matches!(
        g.poll_id(),
        Err(GenerateError::SequenceExhausted { .. })
    ));
    clock.set_ms(T + 60_001);
    assert_eq!(ts(g.layout(), g.next_id()), tick(T) + 60_001);
}

#[test]
fn persistence_needs_a_clock_id_field_for_the_next_clock_id_rule() {
    let dir = TempDir::new("rule");
    let err = Generator::builder(layout())
        .single_node()
        .clock(ManualClock::new(T))
        .persist(Persist::file(dir.file()).restart_rule(RestartRule::NextClockId))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::NeedsClockIdField {
            policy: "RestartRule::NextClockId"
        }
    );
    assert!(!dir.file().exists(), "nothing was written");
}

/// CRC-32 (IEEE), as the state format uses, to forge states with chosen marks.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                0xedb8_8320 ^ (crc >> 1)
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Rewrites the state at `path` (written by a generator, so its `generator`
/// line is right) with the clock id `clock` and the given marks.
fn forge(path: &Path, clock: u64, marks: &[(u64, u64)]) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut body: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    body.push_str(&format!("clock {clock}\n"));
    for (c, t) in marks {
        body.push_str(&format!("mark {c} {t}\n"));
    }
    let crc = crc32(body.as_bytes());
    std::fs::write(path, format!("{body}crc32 {crc:08x}\n")).unwrap();
}

/// The tick of a Unix time on `layout()` (epoch 2020-09-13).
const YEAR_2200_MS: u64 = 7_258_118_400_000;

#[test]
fn a_mark_past_the_layouts_end_or_far_ahead_of_the_clock_is_refused_at_build() {
    let dir = TempDir::new("marks-out-of-range");
    let clock = ManualClock::new(T);
    let build = |persist: Persist| node_7(&clock, persist);
    drop(build(Persist::file(dir.file())).unwrap());
    let last = layout().timestamp_at(layout().last_ms()).unwrap();
    let day = 24 * 3_600_000;
    for (mark, past_end) in [
        (u64::MAX, true),
        (tick(YEAR_2200_MS), true),
        (last + 1, true),
        (tick(T) + day + 1, false),
        (tick(T) + 2 * day, false),
    ] {
        forge(&dir.file(), 0, &[(0, mark)]);
        let err = build(Persist::file(dir.file())).unwrap_err();
        let expected = if past_end {
            StateError::MarkPastEnd {
                clock_id: 0,
                mark,
                last,
            }
        } else {
            StateError::MarkAhead {
                clock_id: 0,
                mark,
                limit: tick(T) + day,
            }
        };
        assert_eq!(err, BuildError::State(expected), "mark {mark}");
        assert!(err.to_string().contains(&mark.to_string()), "{err}");
        // The operator's override still works.
        let g = build(
            Persist::file(dir.file()).on_invalid_state(OnInvalidState::Replace {
                issued_until_ms: T - 1,
            }),
        )
        .unwrap();
        assert_eq!(ts(g.layout(), g.try_next_id().unwrap()), tick(T));
    }
    // A legitimately reserved window ahead of the clock (the longest window,
    // an hour, after the clock was set back most of a day) is accepted: the
    // generator starts after it.
    for ahead in [1_000, 3_600_000, day] {
        forge(&dir.file(), 0, &[(0, tick(T) + ahead)]);
        let g = build(Persist::file(dir.file())).unwrap();
        assert!(matches!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { .. })
        ));
    }
}

#[test]
fn a_window_too_long_to_be_safe_is_refused_at_build() {
    let dir = TempDir::new("window");
    let ten_ms = Layout::builder()
        .epoch_ms(EPOCH)
        .unit_ms(10)
        .timestamp_bits(41)
        .node("worker", 10)
        .sequence(12)
        .build()
        .unwrap();
    let hour = Duration::from_secs(3600);
    for layout in [layout(), ten_ms] {
        for window in [Duration::MAX, hour + Duration::from_millis(1)] {
            let err = Generator::builder(layout.clone())
                .single_node()
                .clock(ManualClock::new(T))
                .persist(Persist::file(dir.file()).window(window))
                .build()
                .unwrap_err();
            assert_eq!(err, BuildError::WindowTooLong { window, max: hour });
            assert!(!dir.file().exists(), "nothing was written");
        }
        // The longest window is accepted, and reserves exactly that far.
        let g = Generator::builder(layout.clone())
            .single_node()
            .clock(ManualClock::new(T))
            .persist(Persist::file(dir.file()).window(hour))
            .build()
            .unwrap();
        let now_tick = layout.timestamp_at(T).unwrap();
        assert_eq!(
            file_marks(&dir.file()),
            [(0, now_tick + 3_600_000 / layout.unit_ms())]
        );
        drop(g);
        std::fs::remove_file(dir.file()).unwrap();
    }
}
