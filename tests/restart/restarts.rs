//! Restarts: the reservation a start saves, clean restarts, restarts from
//! the state a crash would leave with the clock stepped back, and the
//! restart rules that issue at the real time under another clock id.

use std::time::Duration;

use flakeid::{
    BuildError, GenerateError, Generator, Id, Layout, ManualClock, OnClockBehind, OnExhausted,
    Persist, RestartRule,
};

use crate::{EPOCH, T, TempDir, file_marks, layout, marks, tick, ts};

/// 41 ms + 2-bit clock id + 8 machine + 12 sequence.
fn multi_clock() -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .clock_id(2)
        .node("machine", 8)
        .sequence(12)
        .build()
        .unwrap()
}

#[test]
fn the_first_start_saves_a_reservation_one_window_ahead() {
    let dir = TempDir::new("first");
    let clock = ManualClock::new(T);
    let g = Generator::builder(layout())
        .node_id(7)
        .clock(clock.clone())
        .persist(Persist::file(dir.file()).window(Duration::from_millis(1000)))
        .build()
        .unwrap();
    assert_eq!(file_marks(&dir.file()), [(0, tick(T) + 1000)]);
    let text = std::fs::read_to_string(dir.file()).unwrap();
    assert!(text.starts_with("flakeid state v1\ngenerator epoch=1600000000000 unit=1 "));
    assert!(text.contains(" node=7\n"));
    assert_eq!(ts(g.layout(), g.next_id()), tick(T));
}

#[test]
fn a_clean_restart_continues_right_after_the_last_timestamp() {
    let dir = TempDir::new("clean");
    let clock = ManualClock::new(T);
    let build = || {
        Generator::builder(layout())
            .node_id(7)
            .clock(clock.clone())
            .persist(Persist::file(dir.file()))
            .build()
            .unwrap()
    };
    let g = build();
    g.next_id();
    clock.advance(Duration::from_millis(5));
    let last = g.next_id();
    drop(g);
    // The exact last timestamp replaces the reserved one on a clean stop.
    assert_eq!(file_marks(&dir.file()), [(0, tick(T) + 5)]);
    let g = build();
    // Its tick counts as used: the next ID waits for the next tick.
    assert!(matches!(
        g.poll_id(),
        Err(GenerateError::SequenceExhausted { .. })
    ));
    clock.advance(Duration::from_millis(1));
    let next = g.next_id();
    assert!(next > last);
    assert_eq!(ts(g.layout(), next), tick(T) + 6);
}

/// Runs a generator at clock time `T`, returning its IDs and a copy of the
/// state file taken while it ran (what a crash would leave behind).
fn run_and_crash(dir: &TempDir, clock: &ManualClock) -> (Vec<Id>, Vec<u8>) {
    let g = Generator::builder(layout())
        .node_id(7)
        .clock(clock.clone())
        .persist(Persist::file(dir.file()).window(Duration::from_millis(500)))
        .build()
        .unwrap();
    let mut ids: Vec<Id> = g.next_ids(100).collect();
    clock.advance(Duration::from_millis(3));
    ids.extend(g.next_ids(100));
    let crash_image = std::fs::read(dir.file()).unwrap();
    drop(g);
    (ids, crash_image)
}

#[test]
fn after_a_crash_and_a_clock_step_back_no_id_is_reissued() {
    let dir = TempDir::new("crash-continue");
    let clock = ManualClock::new(T);
    let (before, image) = run_and_crash(&dir, &clock);
    let reserved = marks(&String::from_utf8(image.clone()).unwrap())[0].1;
    assert!(
        reserved >= tick(T) + 3 + 250,
        "mark {reserved} not ahead of use"
    );

    // Continue (default): the restored mark counts as the last timestamp;
    // with the clock 10 s back, the next ID must wait for the clock.
    std::fs::write(dir.file(), &image).unwrap();
    clock.rewind(Duration::from_secs(10));
    let g = Generator::builder(layout())
        .node_id(7)
        .clock(clock.clone())
        .persist(Persist::file(dir.file()))
        .build()
        .unwrap();
    match g.poll_id() {
        Err(GenerateError::SequenceExhausted { retry_after }) => {
            assert!(retry_after >= Duration::from_secs(10), "{retry_after:?}");
        }
        other => panic!("expected to wait, got {other:?}"),
    }
    clock.set_ms(EPOCH + reserved + 1);
    let after = g.next_id();
    assert!(before.iter().all(|&id| id < after));
    assert_eq!(ts(g.layout(), after), reserved + 1);
    drop(g);

    // Error: refuses while the clock is behind the mark.
    std::fs::write(dir.file(), &image).unwrap();
    clock.set_ms(T - 10_000);
    let g = Generator::builder(layout())
        .node_id(7)
        .clock(clock.clone())
        .on_clock_behind(OnClockBehind::Error)
        .persist(Persist::file(dir.file()))
        .build()
        .unwrap();
    assert!(matches!(
        g.try_next_id(),
        Err(GenerateError::ClockBehind { .. })
    ));
    drop(g);

    // Borrow with a wide allowance: continues logically right after the mark.
    std::fs::write(dir.file(), &image).unwrap();
    let g = Generator::builder(layout())
        .node_id(7)
        .clock(clock.clone())
        .on_exhausted(OnExhausted::Borrow {
            max_ahead: Duration::from_secs(20),
        })
        .persist(Persist::file(dir.file()))
        .build()
        .unwrap();
    let id = g.try_next_id().unwrap();
    assert_eq!(ts(g.layout(), id), reserved + 1);
    assert!(before.iter().all(|&b| b < id));
}

#[test]
fn restarts_that_issue_nothing_do_not_push_the_mark_ahead() {
    let dir = TempDir::new("crash-loop");
    let clock = ManualClock::new(T);
    let (before, image) = run_and_crash(&dir, &clock);
    let reserved = marks(&String::from_utf8(image.clone()).unwrap())[0].1;
    std::fs::write(dir.file(), &image).unwrap();
    clock.rewind(Duration::from_secs(10));
    let build = || {
        Generator::builder(layout())
            .node_id(7)
            .clock(clock.clone())
            .persist(Persist::file(dir.file()).window(Duration::from_millis(500)))
            .build()
            .unwrap()
    };
    // A crash loop: each start finds the clock behind the mark, issues
    // nothing, and is killed; what it leaves is the state file as it ran.
    for _ in 0..5 {
        let g = build();
        // Several of the writer's polls (every 125 ms for this window).
        std::thread::sleep(Duration::from_millis(400));
        let crash_image = std::fs::read(dir.file()).unwrap();
        drop(g);
        std::fs::write(dir.file(), &crash_image).unwrap();
        assert_eq!(file_marks(&dir.file()), [(0, reserved)]);
    }
    // Once the clock passes the mark, IDs need new ticks, which get reserved.
    let g = build();
    clock.set_ms(EPOCH + reserved + 1);
    let id = g.next_id();
    assert_eq!(ts(g.layout(), id), reserved + 1);
    assert!(before.iter().all(|&b| b < id));
    assert!(file_marks(&dir.file())[0].1 > reserved);
}

#[test]
fn the_next_clock_id_rule_issues_at_the_real_time_and_respects_old_marks() {
    let dir = TempDir::new("next-clock");
    let clock = ManualClock::new(T);
    let build = || {
        Generator::builder(multi_clock())
            .node_id(3)
            .clock(clock.clone())
            .on_clock_behind(OnClockBehind::NextClock)
            .persist(
                Persist::file(dir.file())
                    .restart_rule(RestartRule::NextClockId)
                    .window(Duration::from_millis(200)),
            )
            .build()
            .unwrap()
    };
    let mut all = Vec::new();
    // Four crashes, each restart with the clock back at T: clock ids 0..=3
    // each issue at T, the real time.
    for expect_clock in 0..4 {
        let g = build();
        let id = g.next_id();
        let d = g.layout().decode(id).unwrap();
        assert_eq!((d.clock_id(), d.timestamp()), (expect_clock, tick(T)));
        all.push(id);
        all.extend(g.next_ids(50));
        let image = std::fs::read(dir.file()).unwrap();
        drop(g);
        std::fs::write(dir.file(), image).unwrap();
    }
    // Clock id 0 comes round again, still at T: its mark is past T and so are
    // all others', so nothing may be issued at T.
    let g = build();
    assert!(g.poll_id().is_err());
    clock.advance(Duration::from_secs(1));
    let id = g.next_id();
    assert_eq!(g.layout().decode(id).unwrap().clock_id(), 0);
    all.push(id);
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "an id was issued twice");
}

/// The longest window must leave a mark a restart can use: a window of
/// `Duration::MAX`, one ID, a crash.
#[test]
fn a_crash_with_the_longest_window_leaves_a_state_a_restart_can_use() {
    let dir = TempDir::new("window-crash");
    let clock = ManualClock::new(T);
    let build = |window| {
        Generator::builder(layout())
            .node_id(7)
            .clock(clock.clone())
            .persist(Persist::file(dir.file()).window(window))
            .build()
    };
    assert!(matches!(
        build(Duration::MAX),
        Err(BuildError::WindowTooLong { .. })
    ));
    let g = build(Duration::from_secs(3600)).unwrap();
    let first = g.next_id();
    let image = std::fs::read(dir.file()).unwrap();
    drop(g);
    std::fs::write(dir.file(), image).unwrap();
    let g = build(Duration::from_secs(1)).unwrap();
    // Behind the mark: wait (not Expired), and issue once the clock passes it.
    assert!(matches!(
        g.poll_id(),
        Err(GenerateError::SequenceExhausted { .. })
    ));
    clock.advance(Duration::from_secs(3601));
    let id = g.try_next_id().unwrap();
    assert!(id > first);
}

/// 41 ms + 4-bit clock id + 8 machine + 10 sequence: sixteen clock ids.
fn sixteen_clocks() -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .clock_id(4)
        .node("machine", 8)
        .sequence(10)
        .build()
        .unwrap()
}

/// Polls until the reservation an ID needs has been saved.
fn poll_saved(g: &Generator<ManualClock>, n: usize) -> Result<Vec<Id>, GenerateError> {
    loop {
        match g.poll_ids(n) {
            Err(GenerateError::Reserving) => std::thread::yield_now(),
            other => return other.map(Iterator::collect),
        }
    }
}

/// Under `OnExhausted::NextClock`, each restart with the clock behind the
/// saved mark continues in the mark's tick under a clock id no predecessor
/// used there, at once, as long as one is left.
#[test]
fn quick_restarts_under_next_clock_each_issue_at_once_while_a_clock_id_is_free() {
    let dir = TempDir::new("quick-next-clock");
    let clock = ManualClock::new(T);
    let build = || {
        Generator::builder(sixteen_clocks())
            .node_id(3)
            .clock(clock.clone())
            .on_exhausted(OnExhausted::NextClock)
            .persist(Persist::file(dir.file()).window(Duration::from_secs(1)))
            .build()
            .unwrap()
    };
    let crash = |g: Generator<ManualClock>| {
        let image = std::fs::read(dir.file()).unwrap();
        drop(g);
        std::fs::write(dir.file(), image).unwrap();
    };
    let g = build();
    let mut all = poll_saved(&g, 10).unwrap();
    crash(g);
    let reserved = file_marks(&dir.file())[0].1;
    assert_eq!(reserved, tick(T) + 1000);
    // Fifteen quick restarts, the clock a little further back each time.
    for restart in 1..16 {
        clock.set_ms(T - 4_700 - 100 * restart);
        let g = build();
        let ids = poll_saved(&g, 10).unwrap_or_else(|e| panic!("restart {restart}: {e}"));
        let d = g.layout().decode(ids[0]).unwrap();
        // In the predecessor's reserved tick: the lead is bounded by it.
        assert_eq!((d.timestamp(), d.clock_id()), (reserved, restart));
        all.extend(ids);
        crash(g);
    }
    // Every clock id has been used in that tick: now it waits for the clock.
    let g = build();
    assert!(matches!(
        g.poll_id(),
        Err(GenerateError::SequenceExhausted { .. })
    ));
    clock.set_ms(EPOCH + reserved + 1);
    all.push(g.next_id());
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "an id was issued twice");
}
