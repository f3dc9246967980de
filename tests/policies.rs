//! Every policy, on both generators, driven by a `ManualClock`: the clock
//! stalls, steps back, jumps forward, and ticks run out of sequence values.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread;
use std::time::Duration;

use flakeid::{
    Builder, GenerateError, Generator, Id, IdGenerator, Layout, ManualClock, OnClockBehind,
    OnExhausted,
};

const EPOCH: u64 = 1_600_000_000_000;
const T: u64 = 1_700_000_000_000;

fn layout(sequence_bits: u32) -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .node("worker", 4)
        .sequence(sequence_bits)
        .build()
        .unwrap()
}

/// 41 ms + 2-bit clock id + 4 worker + `sequence_bits` sequence.
fn multi_clock_layout(sequence_bits: u32) -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .clock_id(2)
        .node("worker", 4)
        .sequence(sequence_bits)
        .build()
        .unwrap()
}

fn builder(layout: Layout, clock: &ManualClock) -> Builder<ManualClock> {
    Generator::builder(layout).node_id(5).clock(clock.clone())
}

/// The lock-free generator and its mutex twin, each with its own clock set to `T`.
fn both(
    make: impl Fn(&ManualClock) -> Builder<ManualClock>,
) -> Vec<(&'static str, Box<dyn IdGenerator>, ManualClock)> {
    let c1 = ManualClock::new(T);
    let c2 = ManualClock::new(T);
    vec![
        ("lock-free", Box::new(make(&c1).build().unwrap()), c1),
        ("mutex", Box::new(make(&c2).build_mutex().unwrap()), c2),
    ]
}

/// (Unix ms, clock id, node, sequence) of an ID.
fn parts(g: &dyn IdGenerator, id: Id) -> (u64, u64, u64, u64) {
    let d = g.layout().decode(id).unwrap();
    (d.unix_ms(), d.clock_id(), d.node_id(), d.sequence())
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn wait_blocks_until_the_clock_reaches_the_next_tick() {
    for (name, g, clock) in both(|c| builder(layout(2), c)) {
        let ids: Vec<Id> = (0..4).map(|_| g.next_id()).collect();
        assert!(ids.iter().all(|&id| parts(&*g, id).0 == T), "{name}");
        assert_eq!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { retry_after: ms(1) }),
            "{name}"
        );
        // The fifth ID can only exist once another thread moves the clock on.
        let id = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(ms(30));
                clock.advance(ms(1));
            });
            g.next_id()
        });
        assert_eq!(parts(&*g, id), (T + 1, 0, 5, 0), "{name}");
        assert!(id > ids[3]);
    }
}

/// A wait computed from a clock far behind the last timestamp (a clock set
/// back, or a restart behind a saved mark) ends when the clock is corrected,
/// not when the wrong clock would have caught up.
#[test]
fn a_long_wait_ends_soon_after_the_clock_is_corrected() {
    let policies = [
        (OnExhausted::Wait, OnClockBehind::Continue),
        (
            OnExhausted::Wait,
            OnClockBehind::Wait {
                max: Duration::from_secs(60),
            },
        ),
    ];
    for (on_exhausted, on_behind) in policies {
        for (name, g, clock) in both(|c| {
            builder(layout(1), c)
                .on_exhausted(on_exhausted)
                .on_clock_behind(on_behind)
        }) {
            let name = format!("{name} {on_behind:?}");
            g.next_id();
            g.next_id();
            // Set back 10 s by mistake: the next ID waits for tick T + 1.
            clock.rewind(Duration::from_secs(10));
            let started = std::time::Instant::now();
            let id = thread::scope(|s| {
                s.spawn(|| {
                    thread::sleep(ms(50));
                    clock.set_ms(T + 1);
                });
                g.next_id()
            });
            let waited = started.elapsed();
            assert_eq!(parts(&*g, id), (T + 1, 0, 5, 0), "{name}");
            assert!(waited < Duration::from_secs(5), "{name}: waited {waited:?}");
        }
    }
}

#[test]
fn error_on_exhaustion_reports_and_next_id_panics() {
    for (name, g, clock) in both(|c| builder(layout(1), c).on_exhausted(OnExhausted::Error)) {
        g.try_next_id().unwrap();
        g.try_next_id().unwrap();
        assert_eq!(
            g.try_next_id(),
            Err(GenerateError::SequenceExhausted { retry_after: ms(1) }),
            "{name}"
        );
        let panic = catch_unwind(AssertUnwindSafe(|| g.next_id())).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("sequence of the current tick is used up"),
            "{message}"
        );
        clock.advance(ms(1));
        assert_eq!(parts(&*g, g.try_next_id().unwrap()).0, T + 1, "{name}");
    }
}

#[test]
fn borrow_runs_ahead_up_to_the_allowance_then_waits() {
    let policy = OnExhausted::Borrow { max_ahead: ms(3) };
    for (name, g, clock) in both(|c| builder(layout(1), c).on_exhausted(policy)) {
        let mut times = Vec::new();
        while let Ok(id) = g.poll_id() {
            times.push(parts(&*g, id).0);
        }
        assert_eq!(
            times,
            [T, T, T + 1, T + 1, T + 2, T + 2, T + 3, T + 3],
            "{name}"
        );
        assert!(matches!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { .. })
        ));
        // With the clock one tick on, one more tick may be borrowed.
        clock.advance(ms(1));
        assert_eq!(parts(&*g, g.next_id()).0, T + 4, "{name}");
        // The clock stepping back within the borrowed lead is not "behind".
        clock.rewind(ms(1));
        assert_eq!(parts(&*g, g.next_id()).0, T + 4, "{name}");
    }
}

#[test]
fn next_clock_on_exhaustion_moves_to_fresh_clock_ids_then_waits() {
    for (name, g, _clock) in
        both(|c| builder(multi_clock_layout(1), c).on_exhausted(OnExhausted::NextClock))
    {
        let mut seen = Vec::new();
        while let Ok(id) = g.poll_id() {
            seen.push(id);
        }
        let clock_ids: Vec<u64> = seen.iter().map(|&id| parts(&*g, id).1).collect();
        assert_eq!(clock_ids, [0, 0, 1, 1, 2, 2, 3, 3], "{name}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{name}");
        assert!(seen.iter().all(|&id| parts(&*g, id).0 == T));
        // All four clock ids used: now it waits like OnExhausted::Wait.
        assert!(matches!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { .. })
        ));
    }
}

#[test]
fn continue_keeps_issuing_on_the_last_timestamp_when_the_clock_steps_back() {
    for (name, g, clock) in both(|c| builder(layout(2), c)) {
        let first = g.next_id();
        clock.rewind(Duration::from_secs(1));
        let after: Vec<Id> = (0..3).map(|_| g.next_id()).collect();
        assert!(after.iter().all(|&id| parts(&*g, id).0 == T), "{name}");
        assert!(first < after[0] && after.windows(2).all(|w| w[0] < w[1]));
        // The tick is used up and the clock is a second behind it.
        assert_eq!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted {
                retry_after: ms(1001)
            }),
            "{name}"
        );
        clock.advance(Duration::from_secs(1) + ms(1));
        assert_eq!(parts(&*g, g.next_id()).0, T + 1, "{name}");
    }
}

#[test]
fn error_on_clock_behind_refuses_until_the_clock_catches_up() {
    for (name, g, clock) in both(|c| builder(layout(4), c).on_clock_behind(OnClockBehind::Error)) {
        g.next_id();
        clock.rewind(ms(250));
        assert_eq!(
            g.try_next_id(),
            Err(GenerateError::ClockBehind { behind: ms(250) }),
            "{name}"
        );
        clock.advance(ms(250));
        assert_eq!(parts(&*g, g.try_next_id().unwrap()), (T, 0, 5, 1), "{name}");
    }
}

#[test]
fn wait_on_clock_behind_waits_for_the_clock_or_gives_up() {
    let policy = OnClockBehind::Wait { max: ms(200) };
    for (name, g, clock) in both(|c| builder(layout(4), c).on_clock_behind(policy)) {
        g.next_id();
        // Behind by 10 ms, and the clock catches up while we wait.
        clock.rewind(ms(10));
        let id = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(ms(20));
                clock.advance(ms(11));
            });
            g.try_next_id()
        })
        .unwrap();
        assert_eq!(parts(&*g, id).0, T + 1, "{name}");
        // Behind by 10 ms and the clock is stuck: the wait runs out.
        clock.rewind(ms(10));
        assert_eq!(
            g.try_next_id(),
            Err(GenerateError::ClockBehind { behind: ms(10) }),
            "{name}"
        );
        // Further behind than the wait allows: reported at once.
        clock.rewind(Duration::from_secs(10));
        assert!(matches!(
            g.try_next_id(),
            Err(GenerateError::ClockBehind { .. })
        ));
        // poll_id never waits.
        assert!(matches!(
            g.poll_id(),
            Err(GenerateError::ClockBehind { .. })
        ));
    }
}

#[test]
fn next_clock_on_behind_issues_at_the_real_time_under_a_new_clock_id() {
    for (name, g, clock) in both(|c| {
        builder(multi_clock_layout(4), c)
            .clock_id(2)
            .on_clock_behind(OnClockBehind::NextClock)
    }) {
        let mut all = vec![g.next_id()];
        clock.rewind(Duration::from_secs(5));
        let id = g.next_id();
        assert_eq!(parts(&*g, id), (T - 5000, 3, 5, 0), "{name}");
        all.push(id);
        // Clock ids 3, 0, 1 are fresh; 2 was the first, so after 1 the
        // generator continues on its last timestamp instead of bumping.
        for expect in [0, 1, 1] {
            clock.rewind(Duration::from_secs(1));
            let id = g.next_id();
            assert_eq!(parts(&*g, id).1, expect, "{name}");
            all.push(id);
        }
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "{name}: duplicate ids");
    }
}

#[test]
fn a_forward_jump_moves_the_timestamp_with_it() {
    for (name, g, clock) in both(|c| builder(layout(12), c)) {
        let a = g.next_id();
        clock.advance(Duration::from_secs(3600));
        let b = g.next_id();
        assert_eq!(parts(&*g, b).0 - parts(&*g, a).0, 3_600_000, "{name}");
    }
}

#[test]
fn random_start_varies_below_the_bound_and_is_reproducible_by_seed() {
    let run = |g: &dyn IdGenerator, clock: &ManualClock| -> Vec<Id> {
        (0..200)
            .map(|_| {
                clock.advance(ms(1));
                g.next_id()
            })
            .collect()
    };
    let gens = both(|c| builder(layout(12), c).random_start(100).seed(7));
    let (a, b) = (run(&*gens[0].1, &gens[0].2), run(&*gens[1].1, &gens[1].2));
    assert_eq!(a, b, "same seed, same IDs");
    let starts: Vec<u64> = a.iter().map(|&id| parts(&*gens[0].1, id).3).collect();
    assert!(starts.iter().all(|&s| s < 100));
    assert!(starts.iter().any(|&s| s % 2 == 1), "not all even");
    let distinct: std::collections::HashSet<_> = starts.iter().collect();
    assert!(distinct.len() > 50, "{} distinct starts", distinct.len());

    // A tick still holds at least capacity - bound + 1 IDs, in order.
    let clock = ManualClock::new(T);
    let g = builder(layout(4), &clock)
        .random_start(16)
        .seed(1)
        .build()
        .unwrap();
    let mut tick = Vec::new();
    while let Ok(id) = g.poll_id() {
        tick.push(id);
    }
    assert!(!tick.is_empty() && tick.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(parts(&g, *tick.last().unwrap()).3, 15);
}

#[test]
fn batches_are_consecutive_and_stop_at_the_end_of_the_tick() {
    for (name, g, clock) in both(|c| builder(layout(8), c)) {
        let single = g.next_id();
        let batch: Vec<Id> = g.next_ids(100).collect();
        assert_eq!(batch.len(), 100, "{name}");
        assert_eq!(batch[0].to_u64(), single.to_u64() + 1);
        assert!(batch.windows(2).all(|w| w[1].to_u64() == w[0].to_u64() + 1));
        // 256 per tick: 1 + 100 taken, so at most 155 remain.
        assert_eq!(g.next_ids(1000).len(), 155, "{name}");
        assert!(g.poll_ids(1).is_err());
        assert_eq!(g.next_ids(0).len(), 0);
        clock.advance(ms(1));
        assert_eq!(g.next_ids(1000).len(), 256, "{name}");
    }
}

#[test]
fn counters_count_what_happened() {
    for (name, g, clock) in both(|c| {
        builder(multi_clock_layout(1), c)
            .counters(true)
            .on_exhausted(OnExhausted::Borrow { max_ahead: ms(1) })
            .on_clock_behind(OnClockBehind::NextClock)
    }) {
        // 2 at T, then borrow T+1 (2 more).
        for _ in 0..4 {
            g.next_id();
        }
        clock.rewind(Duration::from_secs(1));
        g.next_id(); // a clock-id bump at the real time
        clock.advance(Duration::from_secs(1));
        let s = g.stats().unwrap();
        assert_eq!(
            (
                s.issued,
                s.waits,
                s.borrowed_ticks,
                s.clock_behind,
                s.clock_id_bumps
            ),
            (5, 0, 1, 1, 1),
            "{name}"
        );
    }
}

#[test]
fn counters_on_the_concrete_types() {
    let clock = ManualClock::new(T);
    let g = builder(layout(1), &clock)
        .counters(true)
        .on_exhausted(OnExhausted::Borrow { max_ahead: ms(1) })
        .build()
        .unwrap();
    let m = builder(layout(1), &clock)
        .counters(true)
        .on_exhausted(OnExhausted::Borrow { max_ahead: ms(1) })
        .build_mutex()
        .unwrap();
    for _ in 0..4 {
        g.next_id();
        m.next_id();
    }
    let waits_for = |f: &dyn Fn() -> Id| {
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(ms(20));
                clock.advance(ms(1));
            });
            f()
        })
    };
    waits_for(&|| g.next_id());
    clock.rewind(ms(1));
    waits_for(&|| m.next_id());
    clock.rewind(Duration::from_secs(5));
    g.next_id();
    m.next_id();
    // Each: 2 IDs at T, 2 borrowed at T+1, a wait until the clock reaches
    // T+1 (which lets it borrow T+2), then one ID with the clock 5 s behind.
    for stats in [g.stats().unwrap(), m.stats().unwrap()] {
        assert_eq!(stats.issued, 6);
        assert_eq!(stats.waits, 1);
        assert_eq!(stats.borrowed_ticks, 2);
        assert_eq!(stats.clock_behind, 1);
        assert_eq!(stats.clock_id_bumps, 0);
    }
    let off = builder(layout(1), &clock).build().unwrap();
    assert_eq!(off.stats(), None);
}

#[test]
fn past_the_layouts_end_it_reports_expired_and_never_wraps() {
    let short = Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(20)
        .sequence(4)
        .build()
        .unwrap();
    let end = short.last_ms();
    for (name, g, clock) in both(|c| {
        Generator::builder(short.clone())
            .single_node()
            .clock(c.clone())
    }) {
        clock.set_ms(end);
        let last = g.next_id();
        assert_eq!(parts(&*g, last).0, end, "{name}");
        clock.advance(ms(1));
        assert_eq!(
            g.try_next_id(),
            Err(GenerateError::Expired { last_ms: end }),
            "{name}"
        );
        let panic = catch_unwind(AssertUnwindSafe(|| g.next_id())).unwrap_err();
        assert!(
            panic
                .downcast_ref::<String>()
                .unwrap()
                .contains("last instant")
        );
    }
}

/// `Expired` means the clock is past the layout's end. A state in the last
/// tick ahead of the clock (borrowed, or a restart's mark) waits for the
/// clock like any used-up tick, and expires only when the clock passes the end.
#[test]
fn in_the_last_tick_ahead_of_the_clock_it_waits_and_expires_only_at_the_end() {
    let short = Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(20)
        .sequence(1)
        .build()
        .unwrap();
    let end = short.last_ms();
    for (name, g, clock) in both(|c| {
        Generator::builder(short.clone())
            .single_node()
            .clock(c.clone())
            .on_exhausted(OnExhausted::Borrow { max_ahead: ms(10) })
    }) {
        clock.set_ms(end - 5);
        // Borrowing runs the timestamp to the layout's last tick, ahead of the clock.
        let mut last = g.next_id();
        while let Ok(id) = g.poll_id() {
            last = id;
        }
        assert_eq!(parts(&*g, last).0, end, "{name}");
        assert_eq!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { retry_after: ms(6) }),
            "{name}: the clock is not past the end"
        );
        clock.set_ms(end);
        assert_eq!(
            g.poll_id(),
            Err(GenerateError::SequenceExhausted { retry_after: ms(1) }),
            "{name}"
        );
        clock.advance(ms(1));
        assert_eq!(
            g.poll_id(),
            Err(GenerateError::Expired { last_ms: end }),
            "{name}"
        );
    }
}
