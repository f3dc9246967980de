//! The lock-free `Generator` against its `MutexGenerator` twin, and both
//! against the guarantees.
//!
//! An arbitrary layout, configuration (every policy, random starts, clock
//! ids, counters) and sequence of operations (clock moves, including back and
//! big jumps; `next_id`, `try_next_id`, `poll_id` and their batch forms) is
//! applied to both generators on one `ManualClock`. After every step:
//!
//! - both gave the same IDs or the same error, and hold the same state and
//!   counters;
//! - no ID was issued twice; a batch is consecutive values of one tick;
//! - IDs increase and time never runs backwards, except where
//!   `OnClockBehind::NextClock` steps back, which must issue at the clock's
//!   tick under a clock id never used before;
//! - entering a tick never puts the timestamp past the clock plus the
//!   allowance;
//! - the state is the last ID issued; the counters count what was issued;
//! - every error is what the state and clock call for, with exact numbers.
//!
//! Nothing here may wait for real time, so every call is made when it can
//! complete at once: each call is first polled on one generator (which never
//! waits); when that succeeds, the other generator gets the call under test,
//! which then cannot block either. When the poll reports a stall a blocking
//! call would wait through, the target plays the waiting caller: it moves
//! the clock by the reported `retry_after` or `behind`, and retries, which
//! must then get further. A blocking call that unexpectedly blocks shows up
//! as a libFuzzer timeout.
#![no_main]

use std::collections::HashSet;
use std::time::Duration;

use flakeid::{
    Builder, GenerateError, Generator, Id, IdGenerator, Layout, ManualClock, MutexGenerator,
    OnClockBehind, OnExhausted,
};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    layout: LayoutPlan,
    config: Config,
    start_ms: u16,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
struct LayoutPlan {
    epoch: u32,
    unit: u8,
    timestamp_bits: u8,
    node_bits: u8,
    sequence_bits: u8,
    clock_bits: u8,
    /// Which of a few field orders, to put the clock id and the sequence in
    /// each place a layout allows.
    order: u8,
}

#[derive(Arbitrary, Debug)]
struct Config {
    node_id: u16,
    clock_id: u8,
    on_exhausted: Exhausted,
    on_behind: Behind,
    random_start: Option<u8>,
    seed: u64,
    counters: bool,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Exhausted {
    Wait,
    Borrow(u8),
    Error,
    NextClock,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Behind {
    Continue,
    Wait(u8),
    Error,
    NextClock,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Advance(u8),
    Rewind(u8),
    JumpForward(u32),
    JumpBack(u32),
    /// To a few ms before the layout's last instant.
    NearTheEnd(u8),
    Take {
        call: Call,
        /// 0: the single-ID call; otherwise the batch call for this many.
        n: u8,
        lock_free_polls_first: bool,
    },
    EmptyBatch,
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Next,
    Try,
    Poll,
}

fn build_layout(p: &LayoutPlan) -> Layout {
    let unit = u64::from(p.unit % 10) + 1;
    let ts_bits = u32::from(p.timestamp_bits % 38) + 4;
    let node_bits = u32::from(p.node_bits % 9);
    let seq_bits = u32::from(p.sequence_bits % 6) + 1;
    let clock_bits = u32::from(p.clock_bits % 4);
    let mut b = Layout::builder()
        .epoch_ms(u64::from(p.epoch) * 373)
        .unit_ms(unit)
        .timestamp_bits(ts_bits);
    #[derive(Clone, Copy)]
    enum F {
        Clock,
        Node,
        Seq,
    }
    let orders: [&[F]; 5] = [
        &[F::Clock, F::Node, F::Seq],
        &[F::Node, F::Clock, F::Seq],
        &[F::Node, F::Seq, F::Clock],
        &[F::Seq, F::Node, F::Clock],
        &[F::Clock, F::Seq, F::Node],
    ];
    for f in orders[usize::from(p.order) % orders.len()] {
        b = match f {
            F::Clock if clock_bits > 0 => b.clock_id(clock_bits),
            F::Node if node_bits > 0 => b.node("node", node_bits),
            F::Seq => b.sequence(seq_bits),
            _ => b,
        };
    }
    b.build().expect("these layouts are valid")
}

/// What the builder must accept, worked out from the documented rules.
fn should_build(layout: &Layout, c: &Config, on_exhausted: OnExhausted) -> bool {
    let clock_field = layout.field("clock_id");
    let seq_shift = layout.field("sequence").unwrap().shift();
    u64::from(c.node_id) <= layout.max_node_id()
        && u64::from(c.clock_id) <= layout.max_clock_id()
        && match on_exhausted {
            OnExhausted::NextClock => clock_field.is_some_and(|f| f.shift() > seq_shift),
            OnExhausted::Borrow { max_ahead } => {
                max_ahead.as_millis() >= u128::from(layout.unit_ms())
            }
            _ => true,
        }
        && (!matches!(c.on_behind, Behind::NextClock) || clock_field.is_some())
        && c.random_start
            .is_none_or(|b| b > 0 && u64::from(b) <= layout.capacity_per_tick())
}

struct Model {
    layout: Layout,
    on_exhausted: OnExhausted,
    on_behind: OnClockBehind,
    lead_ticks: u64,
    node_id: u64,
    seen: HashSet<Id>,
    clock_ids_used: HashSet<u64>,
    issued: u64,
    last: Id,
}

impl Model {
    fn ts(&self, id: Id) -> u64 {
        self.layout.decode(id).unwrap().timestamp()
    }

    fn ticks(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.layout.epoch_ms()) / self.layout.unit_ms()
    }

    fn ts_max(&self) -> u64 {
        self.layout.field("timestamp").unwrap().max()
    }

    fn seq_max(&self) -> u64 {
        self.layout.capacity_per_tick() - 1
    }

    /// Checks IDs issued at clock reading `now` for a request of `n`.
    fn issued(&mut self, ids: &[Id], n: usize, now: u64) {
        assert!(
            !ids.is_empty() && ids.len() <= n.max(1),
            "{} ids for {n}",
            ids.len()
        );
        let first = self.layout.decode(ids[0]).unwrap();
        assert_eq!(first.node_id(), self.node_id);
        for w in ids.windows(2) {
            let (a, b) = (
                self.layout.decode(w[0]).unwrap(),
                self.layout.decode(w[1]).unwrap(),
            );
            assert_eq!(
                (b.timestamp(), b.clock_id(), b.node_id(), b.sequence()),
                (a.timestamp(), a.clock_id(), a.node_id(), a.sequence() + 1),
                "a batch is consecutive values of one tick"
            );
        }
        for &id in ids {
            assert!(self.seen.insert(id), "{id} issued twice");
        }
        let (prev_ts, ts) = (self.ts(self.last), first.timestamp());
        let clock_tick = self.ticks(now);
        if ids[0] < self.last {
            // Only a NextClock step back may go back, to the clock's tick,
            // under a clock id never used before.
            assert_eq!(
                self.on_behind,
                OnClockBehind::NextClock,
                "{} after {}",
                ids[0],
                self.last
            );
            assert!(
                clock_tick + self.lead_ticks < prev_ts,
                "stepped back without the clock behind"
            );
            assert_eq!(ts, clock_tick, "a step back issues at the clock's tick");
            assert_ne!(
                first.clock_id(),
                self.layout.decode(self.last).unwrap().clock_id()
            );
        } else {
            assert!(ts >= prev_ts, "time ran backwards");
        }
        let prev_clock_id = self.layout.decode(self.last).unwrap().clock_id();
        if first.clock_id() != prev_clock_id {
            assert!(
                !self.clock_ids_used.contains(&first.clock_id()),
                "clock id {} reused",
                first.clock_id()
            );
        }
        if ts != prev_ts {
            assert!(
                ts <= clock_tick + self.lead_ticks,
                "tick {ts} entered with the clock at tick {clock_tick} (lead {})",
                self.lead_ticks
            );
        }
        self.clock_ids_used.insert(first.clock_id());
        self.issued += ids.len() as u64;
        self.last = *ids.last().unwrap();
    }

    /// Checks that `e` is what the state and the clock (at `now`) call for.
    fn error(&self, e: &GenerateError, now: u64) {
        let state = self.layout.decode(self.last).unwrap();
        let (ts, clock_tick) = (state.timestamp(), self.ticks(now));
        let unix_ms = |tick: u64| self.layout.epoch_ms() + tick * self.layout.unit_ms();
        match e {
            GenerateError::SequenceExhausted { retry_after } => {
                assert_eq!(
                    state.sequence(),
                    self.seq_max(),
                    "exhausted with values left"
                );
                // In the layout's last tick: until the clock passes the end.
                let target = if ts >= self.ts_max() {
                    unix_ms(ts + 1)
                } else {
                    unix_ms((ts + 1).saturating_sub(self.lead_ticks))
                };
                let expect = target.saturating_sub(now).max(1);
                assert_eq!(*retry_after, Duration::from_millis(expect));
            }
            GenerateError::ClockBehind { behind } => {
                assert!(
                    matches!(
                        self.on_behind,
                        OnClockBehind::Wait { .. } | OnClockBehind::Error
                    ),
                    "{:?} reported the clock behind",
                    self.on_behind
                );
                assert!(
                    clock_tick + self.lead_ticks < ts,
                    "reported behind, but is not"
                );
                let expect = unix_ms(ts).saturating_sub(now).max(1);
                assert_eq!(*behind, Duration::from_millis(expect));
            }
            GenerateError::Expired { last_ms } => {
                assert_eq!(*last_ms, self.layout.last_ms());
                assert!(
                    clock_tick > self.ts_max()
                        || (ts == self.ts_max() && state.sequence() == self.seq_max()),
                    "expired before the end"
                );
            }
            other => panic!("unexpected error {other:?}"),
        }
    }

    /// Whether `try_next_id` reports `e` at once (rather than waiting).
    fn reported_at_once(&self, e: &GenerateError) -> bool {
        match e {
            GenerateError::Expired { .. } => true,
            GenerateError::SequenceExhausted { .. } => self.on_exhausted == OnExhausted::Error,
            GenerateError::ClockBehind { behind } => match self.on_behind {
                OnClockBehind::Wait { max } => *behind > max,
                _ => true,
            },
            _ => false,
        }
    }
}

/// One call on `g`, as a batch of IDs.
fn call(g: &dyn IdGenerator, c: Call, n: usize) -> Result<Vec<Id>, GenerateError> {
    match (c, n) {
        (Call::Next, 0) => Ok(vec![g.next_id()]),
        (Call::Try, 0) => g.try_next_id().map(|id| vec![id]),
        (Call::Poll, 0) => g.poll_id().map(|id| vec![id]),
        (Call::Next, n) => Ok(g.next_ids(n).collect()),
        (Call::Try, n) => g.try_next_ids(n).map(Iterator::collect),
        (Call::Poll, n) => g.poll_ids(n).map(Iterator::collect),
    }
}

fuzz_target!(|input: Input| {
    let layout = build_layout(&input.layout);
    let c = &input.config;
    let on_exhausted = match c.on_exhausted {
        Exhausted::Wait => OnExhausted::Wait,
        Exhausted::Borrow(ms) => OnExhausted::Borrow {
            max_ahead: Duration::from_millis(u64::from(ms % 40)),
        },
        Exhausted::Error => OnExhausted::Error,
        Exhausted::NextClock => OnExhausted::NextClock,
    };
    let on_behind = match c.on_behind {
        Behind::Continue => OnClockBehind::Continue,
        Behind::Wait(ms) => OnClockBehind::Wait {
            max: Duration::from_millis(u64::from(ms % 40)),
        },
        Behind::Error => OnClockBehind::Error,
        Behind::NextClock => OnClockBehind::NextClock,
    };
    let clock = ManualClock::new(layout.epoch_ms() + u64::from(input.start_ms));
    let mut builder: Builder<ManualClock> = Generator::builder(layout.clone())
        .clock(clock.clone())
        .node_id(u64::from(c.node_id))
        .clock_id(u64::from(c.clock_id))
        .on_exhausted(on_exhausted)
        .on_clock_behind(on_behind)
        .seed(c.seed)
        .counters(c.counters);
    if let Some(bound) = c.random_start {
        builder = builder.random_start(u64::from(bound));
    }
    let (lock_free, locked): (Generator<ManualClock>, MutexGenerator<ManualClock>) =
        match (builder.clone().build(), builder.build_mutex()) {
            (Ok(a), Ok(m)) => (a, m),
            (Err(a), Err(m)) => {
                assert_eq!(a, m);
                assert!(!should_build(&layout, c, on_exhausted), "refused: {a}");
                return;
            }
            (a, m) => panic!(
                "the twins disagree on building: {:?} vs {:?}",
                a.err(),
                m.err()
            ),
        };
    assert!(should_build(&layout, c, on_exhausted));
    assert_eq!(lock_free.last_id(), locked.last_id());
    let lead_ticks = match on_exhausted {
        OnExhausted::Borrow { max_ahead } => max_ahead.as_millis() as u64 / layout.unit_ms(),
        _ => 0,
    };
    let mut model = Model {
        last: lock_free.last_id(),
        layout: layout.clone(),
        on_exhausted,
        on_behind,
        lead_ticks,
        node_id: u64::from(c.node_id),
        seen: HashSet::new(),
        clock_ids_used: HashSet::from([u64::from(c.clock_id)]),
        issued: 0,
    };
    use flakeid::Clock;
    for op in input.ops.iter().take(300) {
        match *op {
            Op::Advance(ms) => clock.advance(Duration::from_millis(u64::from(ms))),
            Op::Rewind(ms) => clock.rewind(Duration::from_millis(u64::from(ms))),
            Op::JumpForward(ms) => clock.advance(Duration::from_millis(u64::from(ms) << 8)),
            Op::JumpBack(ms) => clock.rewind(Duration::from_millis(u64::from(ms) << 8)),
            Op::NearTheEnd(ms) => clock.set_ms(layout.last_ms().saturating_sub(u64::from(ms))),
            Op::EmptyBatch => {
                assert_eq!(lock_free.next_ids(0).len(), 0);
                assert_eq!(locked.try_next_ids(0).unwrap().len(), 0);
                assert_eq!(lock_free.poll_ids(0).unwrap().len(), 0);
            }
            Op::Take {
                call: what,
                n,
                lock_free_polls_first,
            } => {
                let n = usize::from(n % 65);
                let (first, second): (&dyn IdGenerator, &dyn IdGenerator) = if lock_free_polls_first
                {
                    (&lock_free, &locked)
                } else {
                    (&locked, &lock_free)
                };
                // A waiting caller retries after the clock moved as told; a
                // correct hint lets it through within a few rounds.
                for round in 0.. {
                    assert!(round < 4, "still stalled after waiting as told");
                    let now = clock.now_ms();
                    match call(first, Call::Poll, n) {
                        Ok(ids) => {
                            let twin = call(second, what, n);
                            assert_eq!(twin.as_ref(), Ok(&ids), "the twins disagree");
                            model.issued(&ids, n, now);
                            break;
                        }
                        Err(e) => {
                            assert_eq!(call(second, Call::Poll, n), Err(e.clone()));
                            model.error(&e, now);
                            if model.reported_at_once(&e) {
                                if what == Call::Try {
                                    assert_eq!(call(first, Call::Try, n), Err(e.clone()));
                                    assert_eq!(call(second, Call::Try, n), Err(e));
                                }
                                break;
                            }
                            if what == Call::Poll {
                                break;
                            }
                            let wait = match e {
                                GenerateError::SequenceExhausted { retry_after } => retry_after,
                                GenerateError::ClockBehind { behind } => behind,
                                other => panic!("waited on {other:?}"),
                            };
                            clock.advance(wait);
                        }
                    }
                }
            }
        }
        assert_eq!(
            lock_free.last_id(),
            model.last,
            "the state is not the last id issued"
        );
        assert_eq!(locked.last_id(), model.last);
        assert_eq!(lock_free.stats(), locked.stats());
        if let Some(stats) = lock_free.stats() {
            assert_eq!(stats.issued, model.issued);
        }
    }
});
