//! `Generator` and `MutexGenerator`, each against the reference model
//! ([`model`]), which is written from the documented rules and shares no
//! code with them.
//!
//! The input chooses a small layout (1 to 4 sequence bits, up to 3 clock-id
//! and node bits, short lifetimes, 1 to 10 ms ticks), a configuration
//! (every `OnExhausted` and `OnClockBehind` policy, a random start with a
//! seed, a clock id to start at, counters, and sometimes a value the builder
//! must refuse) and a list of operations: clock moves (small and far, back
//! and forward, to the layout's end and past it, to the epoch and before it)
//! and calls (`next_id`, `try_next_id`, `poll_id` and their batch forms for
//! `n` in `0..=capacity + 2`). Each generator runs the same list on its own
//! `ManualClock`, and after every call:
//!
//! - the call's verdict is the model's: the exact IDs (a random start is
//!   checked to lie below its bound, then taken as the generator's choice),
//!   or the exact error, with its `retry_after` or `behind`;
//! - `last_id` is the model's state, and the counters (when on) count what
//!   the model counted.
//!
//! Scenarios whose seed has its top bit set run on a clock with a cached
//! reading (`Clock::recent_ms`, as the default `MonotonicClock` has): the
//! generator's precise readings refresh it, and a `Refresh` operation plays
//! the refresh thread; the model continues a tick on that reading as the
//! docs say the fast path does, stale or not.
//!
//! Nothing waits for real time. A call the model says waits is first polled
//! (which must report the stall the model predicts); then the clock moves by
//! the reported time, as a waiting caller's clock would, and the call is
//! made. Some blocking calls run on a thread while the clock moves, so the
//! generator's own waiting is exercised too, and some `try_*` calls under
//! `OnClockBehind::Wait { max }` (with `max` of 5 ms at most) wait it out
//! and must then report. A call that blocks when the
//! model says it should not shows up as a hang (a libFuzzer timeout).

mod model;

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flakeid::{
    Clock, GenerateError, Generator, Id, Layout, ManualClock, MutexGenerator, OnClockBehind,
    OnExhausted, Parts, Stats,
};
use libfuzzer_sys::arbitrary::Unstructured;

pub use model::{Config, Model, Rules, State, Verdict};

/// At most this many operations per input.
const MAX_OPS: usize = 300;

/// A blocking call runs on a thread while the clock moves only when the
/// wait is at most this long, so a generator that sleeps for the whole wait
/// in real time costs little; and `try_*` under `OnClockBehind::Wait { max }`
/// is left to wait out `max` (the clock staying behind) only up to this.
const THREADED_WAIT_MS: u64 = 5;

/// At most this many calls per generator and input may wait in real time
/// (up to [`THREADED_WAIT_MS`] each), so long inputs stay fast to run.
const REAL_WAITS: u32 = 2;

/// Which call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Next,
    Try,
    Poll,
}

/// One step of a scenario.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    Advance(u64),
    Rewind(u64),
    Set(u64),
    /// Sets the clock to this many ms past the start of the last ID's
    /// tick (back from past the end, forward from far behind).
    ToState(u64),
    /// The refresh thread's step: the cached reading becomes the clock's.
    Refresh,
    Take {
        call: Call,
        /// `None`: the single-ID call; `Some(n)`: the batch call for `n`.
        batch: Option<usize>,
        /// Make a call that waits on a thread while the clock moves.
        threaded: bool,
    },
}

/// A layout, a configuration, a start time and the operations.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub layout: Layout,
    pub config: Config,
    pub seed: u64,
    pub counters: bool,
    /// Run on a [`CachedClock`].
    pub cached: bool,
    pub start_ms: u64,
    pub ops: Vec<Op>,
}

fn byte(u: &mut Unstructured<'_>) -> u8 {
    u.arbitrary().unwrap_or(0)
}

fn word(u: &mut Unstructured<'_>) -> u16 {
    u.arbitrary().unwrap_or(0)
}

impl Scenario {
    /// Reads a scenario off fuzz input (zeros once the input runs out).
    pub fn read(data: &[u8]) -> Scenario {
        let mut u = Unstructured::new(data);
        let u = &mut u;
        let unit = [1, 1, 2, 3, 10][usize::from(byte(u) % 5)];
        let timestamp_bits = [41, 41, 20, 12, 7][usize::from(byte(u) % 5)];
        let sequence_bits = u32::from(byte(u) % 4) + 1;
        let clock_bits = u32::from(byte(u) % 4);
        let node_bits = u32::from(byte(u) % 4);
        let order = usize::from(byte(u));
        let epoch_ms = 1_600_000_000_000 + u64::from(word(u)) * 1_009;
        let layout = layout(
            epoch_ms,
            unit,
            timestamp_bits,
            sequence_bits,
            clock_bits,
            node_bits,
            order,
        );
        let capacity = 1u64 << sequence_bits;

        // A byte of 255 asks for a value the builder must refuse.
        let refused = |b: u8, valid: u64, invalid: u64| if b == 255 { invalid } else { valid };
        let b = byte(u);
        let node_id = refused(b, u64::from(b) % (1 << node_bits), 1 << node_bits);
        let b = byte(u);
        let clock_id = refused(b, u64::from(b) % (1 << clock_bits), 1 << clock_bits);
        let on_exhausted = match byte(u) % 4 {
            0 => OnExhausted::Wait,
            1 => {
                let b = byte(u);
                let ms = unit * (1 + u64::from(b % 4)) + u64::from(b / 4) % unit;
                OnExhausted::Borrow {
                    max_ahead: Duration::from_millis(refused(b, ms, unit - 1)),
                }
            }
            2 => OnExhausted::Error,
            _ => OnExhausted::NextClock,
        };
        let on_behind = match byte(u) % 4 {
            0 => OnClockBehind::Continue,
            1 => OnClockBehind::Wait {
                max: Duration::from_millis(match byte(u) {
                    b if b % 2 == 0 => 0,
                    b => u64::from(b) % (4 * unit),
                }),
            },
            2 => OnClockBehind::Error,
            _ => OnClockBehind::NextClock,
        };
        let random_bound = match byte(u) {
            255 => Some(capacity + 1),
            253 => Some(0),
            b if b % 2 == 0 => None,
            b => Some(1 + u64::from(b / 2) % capacity),
        };
        let seed = u64::from(word(u));
        let cached = seed & 0x8000 != 0;
        let counters = byte(u).is_multiple_of(2);
        let last_tick = (1u64 << timestamp_bits) - 1;
        let start_tick = 1 + u64::from(byte(u)) % 200.min(last_tick);
        let start_ms = epoch_ms + start_tick * unit + u64::from(byte(u)) % unit;
        let last_ms = epoch_ms + (last_tick + 1) * unit - 1;

        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            let b = byte(u);
            let op = match b % 32 {
                20 | 21 => Op::Advance(u64::from(byte(u)) % (3 * unit + 1)),
                22 | 23 => Op::Rewind(u64::from(byte(u)) % (3 * unit + 1)),
                24 => Op::Advance(u64::from(byte(u)) % (40 * unit)),
                25 => Op::Rewind(u64::from(byte(u)) % (40 * unit)),
                26 => Op::Advance(u64::from(word(u)) << 8),
                27 => Op::Rewind(u64::from(word(u)) << 8),
                28 if byte(u).is_multiple_of(4) => {
                    // To the last few ticks, or just past the end.
                    let x = u64::from(byte(u));
                    if x % 4 == 0 {
                        Op::Set(last_ms + 1 + x % 3)
                    } else {
                        Op::Set(last_ms - x % (3 * unit))
                    }
                }
                28 | 29 => Op::ToState(u64::from(byte(u)) % (3 * unit)),
                // Around the epoch, before it included.
                30 => Op::Set(epoch_ms + u64::from(byte(u)) % (3 * unit) - unit.min(2)),
                31 if cached => Op::Refresh,
                _ => {
                    let call = [Call::Next, Call::Try, Call::Poll][usize::from(b / 32 % 3)];
                    let batch =
                        (byte(u) % 2 == 1).then(|| usize::from(byte(u)) % (capacity as usize + 3));
                    Op::Take {
                        call,
                        batch,
                        threaded: b >= 128,
                    }
                }
            };
            ops.push(op);
        }
        Scenario {
            layout,
            config: Config {
                node_id,
                clock_id,
                on_exhausted,
                on_behind,
                random_bound,
            },
            seed,
            counters,
            cached,
            start_ms,
            ops,
        }
    }
}

/// A layout with the fields in one of five orders.
fn layout(
    epoch_ms: u64,
    unit: u64,
    timestamp_bits: u32,
    sequence_bits: u32,
    clock_bits: u32,
    node_bits: u32,
    order: usize,
) -> Layout {
    #[derive(Clone, Copy)]
    enum F {
        Clock,
        Node,
        Seq,
    }
    let orders: [[F; 3]; 5] = [
        [F::Clock, F::Node, F::Seq],
        [F::Node, F::Clock, F::Seq],
        [F::Node, F::Seq, F::Clock],
        [F::Seq, F::Node, F::Clock],
        [F::Clock, F::Seq, F::Node],
    ];
    let mut b = Layout::builder()
        .epoch_ms(epoch_ms)
        .unit_ms(unit)
        .timestamp_bits(timestamp_bits);
    for f in orders[order % orders.len()] {
        b = match f {
            F::Clock if clock_bits > 0 => b.clock_id(clock_bits),
            F::Node if node_bits > 0 => b.node("node", node_bits),
            F::Seq => b.sequence(sequence_bits),
            _ => b,
        };
    }
    b.build().expect("these layouts are valid")
}

/// The generator under test, through its own (inherent) calls.
trait Subject: Sync {
    fn take(&self, call: Call, batch: Option<usize>) -> Result<Vec<Id>, GenerateError>;
    fn state(&self) -> Id;
    fn counters(&self) -> Option<Stats>;
}

impl<C: Clock> Subject for Generator<C> {
    fn take(&self, call: Call, batch: Option<usize>) -> Result<Vec<Id>, GenerateError> {
        match (call, batch) {
            (Call::Next, None) => Ok(vec![self.next_id()]),
            (Call::Try, None) => self.try_next_id().map(|id| vec![id]),
            (Call::Poll, None) => self.poll_id().map(|id| vec![id]),
            (Call::Next, Some(n)) => Ok(self.next_ids(n).collect()),
            (Call::Try, Some(n)) => self.try_next_ids(n).map(Iterator::collect),
            (Call::Poll, Some(n)) => self.poll_ids(n).map(Iterator::collect),
        }
    }

    fn state(&self) -> Id {
        self.last_id()
    }

    fn counters(&self) -> Option<Stats> {
        self.stats()
    }
}

impl<C: Clock> Subject for MutexGenerator<C> {
    fn take(&self, call: Call, batch: Option<usize>) -> Result<Vec<Id>, GenerateError> {
        match (call, batch) {
            (Call::Next, None) => Ok(vec![self.next_id()]),
            (Call::Try, None) => self.try_next_id().map(|id| vec![id]),
            (Call::Poll, None) => self.poll_id().map(|id| vec![id]),
            (Call::Next, Some(n)) => Ok(self.next_ids(n).collect()),
            (Call::Try, Some(n)) => self.try_next_ids(n).map(Iterator::collect),
            (Call::Poll, Some(n)) => self.poll_ids(n).map(Iterator::collect),
        }
    }

    fn state(&self) -> Id {
        self.last_id()
    }

    fn counters(&self) -> Option<Stats> {
        self.stats()
    }
}

/// A clock with a cached reading, as `MonotonicClock` has: a precise
/// reading stores itself as the cached one, and [`CachedClock::refresh`]
/// plays the refresh thread. Its time is a [`ManualClock`]'s, which may go
/// back, so a stale cached reading can also be ahead of the clock.
#[derive(Clone)]
struct CachedClock {
    precise: ManualClock,
    cached: std::sync::Arc<AtomicU64>,
}

impl CachedClock {
    fn new(precise: ManualClock) -> CachedClock {
        let cached = std::sync::Arc::new(AtomicU64::new(precise.now_ms()));
        CachedClock { precise, cached }
    }

    fn refresh(&self) {
        self.now_ms();
    }
}

impl Clock for CachedClock {
    fn now_ms(&self) -> u64 {
        let now = self.precise.now_ms();
        self.cached.store(now, Ordering::Relaxed);
        now
    }

    fn recent_ms(&self) -> Option<u64> {
        Some(self.cached.load(Ordering::Relaxed))
    }
}

/// Runs `data` as a scenario on both generators, each against the model.
/// Panics, saying what differs, where a generator departs from the model.
pub fn run(data: &[u8]) {
    let s = Scenario::read(data);
    let clock = ManualClock::new(s.start_ms);
    let builder = Generator::builder(s.layout.clone())
        .clock(clock.clone())
        .node_id(s.config.node_id)
        .clock_id(s.config.clock_id)
        .on_exhausted(s.config.on_exhausted)
        .on_clock_behind(s.config.on_behind)
        .seed(s.seed)
        .counters(s.counters);
    let builder = match s.config.random_bound {
        Some(bound) => builder.random_start(bound),
        None => builder,
    };
    let rules = match Rules::new(&s.layout, &s.config) {
        Ok(rules) => rules,
        Err(why) => {
            let (a, m) = (builder.clone().build(), builder.build_mutex());
            assert!(a.is_err(), "Generator built where it must refuse: {why}");
            assert!(
                m.is_err(),
                "MutexGenerator built where it must refuse: {why}"
            );
            return;
        }
    };
    if s.cached {
        let cached = CachedClock::new(clock.clone());
        let lock_free = builder
            .clone()
            .clock(cached.clone())
            .build()
            .expect("Generator refused a valid configuration");
        Run::new(&s, &rules, clock, Some(cached)).all(&lock_free, "Generator (cached clock)");
        let clock = ManualClock::new(s.start_ms);
        let cached = CachedClock::new(clock.clone());
        let locked = builder
            .clock(cached.clone())
            .build_mutex()
            .expect("MutexGenerator refused a valid configuration");
        Run::new(&s, &rules, clock, Some(cached)).all(&locked, "MutexGenerator (cached clock)");
        return;
    }
    let lock_free = builder
        .clone()
        .build()
        .expect("Generator refused a valid configuration");
    Run::new(&s, &rules, clock, None).all(&lock_free, "Generator");
    let clock = ManualClock::new(s.start_ms);
    let locked = builder
        .clock(clock.clone())
        .build_mutex()
        .expect("MutexGenerator refused a valid configuration");
    Run::new(&s, &rules, clock, None).all(&locked, "MutexGenerator");
}

/// One generator's run through a scenario.
struct Run<'a> {
    s: &'a Scenario,
    rules: &'a Rules,
    clock: ManualClock,
    /// The generator's clock, when it has a cached reading.
    cached: Option<CachedClock>,
    /// How many more calls may wait in real time ([`REAL_WAITS`]).
    real_waits: Cell<u32>,
}

impl<'a> Run<'a> {
    fn new(
        s: &'a Scenario,
        rules: &'a Rules,
        clock: ManualClock,
        cached: Option<CachedClock>,
    ) -> Run<'a> {
        Run {
            s,
            rules,
            clock,
            cached,
            real_waits: Cell::new(REAL_WAITS),
        }
    }

    fn id(&self, state: State) -> Id {
        let parts = Parts {
            timestamp: state.tick,
            node: self.s.config.node_id,
            sequence: state.seq,
            clock_id: state.clock_id,
        };
        self.s.layout.compose(parts).expect("the model's IDs fit")
    }

    fn parts(&self, id: Id) -> Parts {
        self.s.layout.decode(id).expect("IDs decode").parts()
    }

    fn all(&self, g: &dyn Subject, name: &str) {
        // "before the first ID, timestamp 0", with the node id and the
        // clock id "to start with". Ambiguous: its sequence value; taken
        // from the generator.
        let initial = self.parts(g.state());
        let expected = (0, self.s.config.node_id, self.s.config.clock_id);
        assert_eq!(
            (initial.timestamp, initial.node, initial.clock_id),
            expected,
            "{name}: the state before the first ID"
        );
        let mut model = Model::new(
            self.rules.clone(),
            State {
                tick: 0,
                seq: initial.sequence,
                clock_id: self.s.config.clock_id,
            },
            self.cached.as_ref().and_then(Clock::recent_ms),
        );
        let mut log = Vec::new();
        for (i, op) in self.s.ops.iter().enumerate() {
            log.push(format!("{op:?} at {}", self.clock.now_ms()));
            match *op {
                Op::Advance(ms) => self.clock.advance(Duration::from_millis(ms)),
                Op::Rewind(ms) => self.clock.rewind(Duration::from_millis(ms)),
                Op::Set(ms) => self.clock.set_ms(ms),
                Op::ToState(ms) => self.clock.set_ms(self.rules.unix_ms(model.state.tick) + ms),
                Op::Refresh => {
                    let clock = self.cached.as_ref().expect("only on a cached clock");
                    clock.refresh();
                    model.cached = clock.recent_ms();
                }
                Op::Take {
                    call,
                    batch,
                    threaded,
                } => {
                    let before = model.clone();
                    if let Err(e) = self.take(g, &mut model, call, batch, threaded) {
                        panic!(
                            "{name}, op {i} ({op:?}): {e}\nlayout {:?}\nconfig {:?}\n\
                             model before: {before:?}\nsteps:\n{}",
                            self.s.layout,
                            self.s.config,
                            log.join("\n")
                        );
                    }
                }
            }
            let want = self.id(model.state);
            assert_eq!(
                g.state(),
                want,
                "{name}: last_id is not the model's state after op {i} ({op:?})\nsteps:\n{}",
                log.join("\n")
            );
            if let Some(stats) = g.counters() {
                let got = (stats.issued, stats.borrowed_ticks, stats.clock_id_bumps);
                let want = (model.issued, model.borrowed_ticks, model.clock_id_bumps);
                assert_eq!(
                    got,
                    want,
                    "{name}: counters (issued, borrowed, bumps) after op {i}\nsteps:\n{}",
                    log.join("\n")
                );
            }
        }
    }

    /// One call, checked against the model.
    fn take(
        &self,
        g: &dyn Subject,
        model: &mut Model,
        call: Call,
        batch: Option<usize>,
        threaded: bool,
    ) -> Result<(), String> {
        if batch == Some(0) {
            // "`n = 0` reserves nothing and returns an empty batch".
            // Ambiguous: whether `try_next_ids(0)` and `poll_ids(0)` still
            // report a policy's error; taken as they do not (nothing is
            // reserved, so nothing can be refused).
            let got = g.take(call, batch);
            return match got {
                Ok(ids) if ids.is_empty() => Ok(()),
                other => Err(format!("{call:?} for 0 IDs gave {other:?}")),
            };
        }
        let n = batch.map_or(1, |n| n as u64);
        if call == Call::Poll {
            let now = self.clock.now_ms();
            let verdict = model.decide(now);
            return self.check(model, &verdict, n, now, g.take(call, batch));
        }
        // A waiting caller: its call waits until the clock has moved as
        // the stall said, so it is made then (or made now, on a thread,
        // while the clock moves). At most a few stalls follow each other
        // (a clock behind, then the tick it catches up to used up).
        for _round in 0..4 {
            let now = self.clock.now_ms();
            let verdict = model.decide(now);
            let Some(wait) = verdict.wait() else {
                let call = match verdict {
                    // `next_*` panics where `try_next_*` reports: ask that.
                    Verdict::Report(_) => Call::Try,
                    _ => call,
                };
                return self.check(model, &verdict, n, now, g.take(call, batch));
            };
            self.check(model, &verdict, n, now, g.take(Call::Poll, batch))?;
            let threaded = threaded && self.real_waits.get() > 0;
            if let (true, Call::Try, OnClockBehind::Wait { max }, Verdict::Stall(behind)) =
                (threaded, call, self.rules.on_behind, &verdict)
                && matches!(behind, GenerateError::ClockBehind { .. })
                && max <= Duration::from_millis(THREADED_WAIT_MS)
            {
                // "Wait up to `max` for the clock to catch up, then report":
                // the clock stays where it is, so the call reports, after
                // `max` of real time, what it found.
                self.real_waits.set(self.real_waits.get() - 1);
                let reported = Verdict::Report(behind.clone());
                return self.check(model, &reported, n, now, g.take(call, batch));
            }
            let later = now + wait.as_millis() as u64;
            let after = model.decide(later);
            let short = wait <= Duration::from_millis(THREADED_WAIT_MS);
            if threaded
                && short
                && matches!(
                    verdict,
                    Verdict::Stall(GenerateError::SequenceExhausted { .. })
                )
                && matches!(after, Verdict::Issue { .. })
            {
                // The generator waits by itself; the clock moves once, so
                // whenever its thread reads it, it reads `now` or `later`.
                self.real_waits.set(self.real_waits.get() - 1);
                let got = std::thread::scope(|scope| {
                    let waiter = scope.spawn(|| g.take(call, batch));
                    self.clock.advance(wait);
                    waiter.join().expect("the waiting call panicked")
                });
                return self.check(model, &after, n, later, got);
            }
            self.clock.advance(wait);
        }
        Err("the model stalled four times in a row".to_string())
    }

    /// Whether `got` is what `verdict` says, for a call for `n` IDs at `now`;
    /// records issued IDs in the model.
    fn check(
        &self,
        model: &mut Model,
        verdict: &Verdict,
        n: u64,
        now: u64,
        got: Result<Vec<Id>, GenerateError>,
    ) -> Result<(), String> {
        model.called_at(now);
        if let Some(clock) = &self.cached
            && clock.recent_ms() != model.cached
        {
            return Err(format!(
                "the call left the cached reading at {:?}, the model at {:?}",
                clock.recent_ms(),
                model.cached
            ));
        }
        let at = format!("at {now} ms (tick {})", self.rules.tick_of(now));
        let ids = match (verdict, got) {
            (Verdict::Report(want) | Verdict::Stall(want), got) => {
                return match got {
                    Err(e) if e == *want => Ok(()),
                    got => Err(format!(
                        "{at}: expected Err({want:?}), got {}",
                        show(self, &got)
                    )),
                };
            }
            (Verdict::Issue { .. }, Err(e)) => {
                return Err(format!("{at}: expected {verdict:?}, got Err({e:?})"));
            }
            (Verdict::Issue { .. }, Ok(ids)) => ids,
        };
        let Verdict::Issue {
            tick,
            clock_id,
            first,
            ..
        } = *verdict
        else {
            unreachable!()
        };
        let Some(&head) = ids.first() else {
            return Err(format!("{at}: expected {verdict:?}, got an empty batch"));
        };
        let p = self.parts(head);
        if (p.timestamp, p.clock_id, p.node) != (tick, clock_id, self.s.config.node_id) {
            return Err(format!(
                "{at}: expected {verdict:?}, got {}",
                show_ids(self, &ids)
            ));
        }
        let start = p.sequence;
        let first = match first.or(model.fresh_start()) {
            Some(first) => first,
            None => {
                let bound = self
                    .rules
                    .random_bound
                    .expect("unknown only with a random start");
                if start >= bound {
                    return Err(format!(
                        "{at}: a tick opened at sequence {start}, not below the random bound {bound}"
                    ));
                }
                start
            }
        };
        let len = model.batch_len(n, first);
        let want: Vec<Id> = (0..len)
            .map(|i| {
                self.id(State {
                    tick,
                    seq: first + i,
                    clock_id,
                })
            })
            .collect();
        if ids != want {
            return Err(format!(
                "{at}: expected {verdict:?}, {len} IDs from sequence {first}: {}\ngot {}",
                show_ids(self, &want),
                show_ids(self, &ids)
            ));
        }
        model.commit(verdict, first, len);
        Ok(())
    }
}

/// IDs as (tick, clock id, sequence), for messages.
fn show_ids(run: &Run<'_>, ids: &[Id]) -> String {
    let parts: Vec<_> = ids
        .iter()
        .map(|&id| {
            let p = run.parts(id);
            format!("(t{} c{} s{})", p.timestamp, p.clock_id, p.sequence)
        })
        .collect();
    format!("{} IDs [{}]", ids.len(), parts.join(" "))
}

fn show(run: &Run<'_>, got: &Result<Vec<Id>, GenerateError>) -> String {
    match got {
        Ok(ids) => format!("Ok({})", show_ids(run, ids)),
        Err(e) => format!("Err({e:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_read_from_nothing() {
        let s = Scenario::read(&[]);
        assert!(s.ops.is_empty());
        run(&[]);
    }
}
