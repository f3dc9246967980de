//! loom models of flakeid's generators. The models live in `tests/`, one file
//! per topic; this library holds what they share: the model runner, the
//! checks every model makes, the thread that moves the clock, and the
//! scenarios the deliberately broken variants are run through.
//!
//! Run them with:
//!
//! ```text
//! RUSTFLAGS="--cfg flakeid_loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p flakeid-loom-tests --release --target-dir target/loom
//! ```
//!
//! Every model checks, in every interleaving loom explores:
//!
//! - no ID is issued twice;
//! - each thread's IDs strictly increase (with `OnClockBehind::NextClock`,
//!   which gives up order by design: strictly increase by clock id first);
//! - the generator's final state is the largest ID issued (by the same order);
//! - no ID's timestamp leads the clock by more than the allowance;
//! - every thread finishes: the model joins them all, and loom fails a model
//!   that deadlocks or spins past its branch limit.
#![cfg(flakeid_loom)]

use std::collections::HashSet;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};

use flakeid::{Builder, Decoded, Id, IdGenerator, Layout, ManualClock};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

/// The epoch of every model layout; tick `t` is Unix ms `EPOCH + t`.
pub const EPOCH: u64 = 1_600_000_000_000;

/// The Unix millisecond at which tick `t` starts (1 ms units).
pub const fn at(tick: u64) -> u64 {
    EPOCH + tick
}

/// A small layout: 41 bits of ms, a 4-bit worker, `seq_bits` of sequence, so
/// a tick runs out after a few IDs.
pub fn layout(seq_bits: u32) -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .node("worker", 4)
        .sequence(seq_bits)
        .build()
        .expect("a valid layout")
}

/// The multi-clock layout: 41 bits of ms, a clock id above a 4-bit worker
/// and the sequence.
pub fn multi_clock_layout(clock_bits: u32, seq_bits: u32) -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .clock_id(clock_bits)
        .node("worker", 4)
        .sequence(seq_bits)
        .build()
        .expect("a valid layout")
}

/// Runs `f` in every interleaving loom explores and returns how many there
/// were. At most 2 preemptions per interleaving unless `LOOM_MAX_PREEMPTIONS`
/// says otherwise (unbounded exploration of these models takes hours).
pub fn model<F>(name: &str, f: F) -> usize
where
    F: Fn() + Sync + Send + 'static,
{
    let runs = model_quietly(f);
    eprintln!("{name}: {runs} interleavings");
    runs
}

/// [`model`] without the line it prints: for many small models in a row.
pub fn model_quietly<F>(f: F) -> usize
where
    F: Fn() + Sync + Send + 'static,
{
    let runs = std::sync::Arc::new(StdAtomicUsize::new(0));
    let counted = runs.clone();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(2);
    builder.check(move || {
        counted.fetch_add(1, StdOrdering::Relaxed);
        f();
    });
    runs.load(StdOrdering::Relaxed)
}

/// Whether each named situation came up in at least one interleaving: a model
/// asserts at the end that it reached the transition it is about, so it
/// cannot pass by never getting there.
pub struct Reached {
    names: &'static [&'static str],
    seen: StdMutex<HashSet<&'static str>>,
}

impl Reached {
    /// Tracks the situations `names`.
    pub fn new(names: &'static [&'static str]) -> std::sync::Arc<Reached> {
        std::sync::Arc::new(Reached {
            names,
            seen: StdMutex::new(HashSet::new()),
        })
    }

    /// Notes that `name` came up in this interleaving.
    pub fn saw(&self, name: &'static str) {
        assert!(self.names.contains(&name), "unknown situation {name}");
        self.seen.lock().unwrap().insert(name);
    }

    /// Panics unless every situation came up.
    pub fn assert_all(&self) {
        let seen = self.seen.lock().unwrap();
        for name in self.names {
            assert!(seen.contains(name), "no interleaving reached: {name}");
        }
    }
}

/// One ID a thread got, with the clock reading taken right after the call
/// returned (`None` where the model bounds the clock otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Got {
    /// The ID.
    pub id: Id,
    /// The clock right after the call returned.
    pub clock_after: Option<u64>,
}

impl Got {
    /// An ID from a model whose clock never moves back: the reading after the
    /// call is at least the one the call used.
    pub fn then_read(id: Id, clock: &ManualClock) -> Got {
        use flakeid::Clock;
        Got {
            id,
            clock_after: Some(clock.now_ms()),
        }
    }

    /// An ID from a model that bounds the clock with [`Rules::clock_max`].
    pub fn plain(id: Id) -> Got {
        Got {
            id,
            clock_after: None,
        }
    }
}

/// How IDs are ordered in a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// By value: every policy but `OnClockBehind::NextClock`.
    Numeric,
    /// By clock id, then value: `OnClockBehind::NextClock` starting at clock
    /// id 0, where an ID after a step back carries an earlier time under a
    /// fresh, higher clock id.
    ClockIdFirst,
}

/// What a model's checks allow.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// Ticks an ID may lead the clock (`OnExhausted::Borrow`'s allowance).
    pub lead_ticks: u64,
    /// The highest clock reading in the model, for models whose clock moves
    /// back (the reading after a call then no longer bounds the one it used).
    pub clock_max: Option<u64>,
    /// The order IDs come out in.
    pub order: Order,
}

impl Rules {
    /// No lead, the clock never moves back, numeric order.
    pub const STRICT: Rules = Rules {
        lead_ticks: 0,
        clock_max: None,
        order: Order::Numeric,
    };
}

/// Checks what every model checks on what each thread got and the
/// generator's final state; returns every ID, sorted by the model's order.
pub fn check(layout: &Layout, per_thread: &[Vec<Got>], last: Id, rules: Rules) -> Vec<Id> {
    let key = |id: Id| -> (u64, Id) {
        match rules.order {
            Order::Numeric => (0, id),
            Order::ClockIdFirst => (decode(layout, id).clock_id(), id),
        }
    };
    let mut all: Vec<Id> = per_thread.iter().flatten().map(|g| g.id).collect();
    all.sort_by_key(|&id| key(id));
    for w in all.windows(2) {
        assert!(w[0] != w[1], "duplicate id {}: {per_thread:?}", w[0]);
    }
    for (t, got) in per_thread.iter().enumerate() {
        for w in got.windows(2) {
            assert!(
                key(w[0].id) < key(w[1].id),
                "thread {t} got ids out of order: {got:?}"
            );
        }
    }
    if let Some(&largest) = all.last() {
        assert_eq!(
            last, largest,
            "the final state is not the largest id issued: {per_thread:?}"
        );
    }
    for got in per_thread.iter().flatten() {
        let bound = rules
            .clock_max
            .or(got.clock_after)
            .expect("each id comes with a clock bound");
        let ts = decode(layout, got.id).timestamp();
        let clock_tick = bound - layout.epoch_ms();
        assert!(
            ts <= clock_tick + rules.lead_ticks,
            "id {} at tick {ts} leads the clock (tick {clock_tick}) by more than {} ticks",
            got.id,
            rules.lead_ticks
        );
    }
    all
}

/// Decodes an ID the model's generator made.
pub fn decode(layout: &Layout, id: Id) -> Decoded<'_> {
    layout.decode(id).expect("a generated id decodes")
}

/// Counts finished worker threads, so the clock mover knows when to stop.
#[derive(Clone, Default)]
pub struct Done(Arc<AtomicUsize>);

impl Done {
    /// A worker says it has finished.
    pub fn finish(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

/// Plays the passing of time for models whose threads wait for it: moves the
/// clock one tick forward each time `full` says the generator can issue
/// nothing more at the current clock, until `workers` threads have finished.
/// Returns how many ticks it moved the clock.
///
/// `full` gets the last ID issued and the clock's tick.
///
/// A model should let at most one worker wait at a time: loom may run two
/// threads that yield in turn while waiting for a third forever (it counts
/// switching away from a yielding thread as no preemption), an unfair
/// schedule that no real scheduler keeps up, and it then fails the model
/// for exceeding its branch limit.
pub fn move_clock_when_full<G: IdGenerator>(
    generator: &G,
    clock: &ManualClock,
    done: &Done,
    workers: usize,
    full: impl Fn(&Decoded<'_>, u64) -> bool,
) -> u64 {
    use flakeid::Clock;
    let layout = generator.layout();
    let mut moved = 0;
    while done.count() < workers {
        let last = generator.last_id();
        let tick = clock.now_ms() - layout.epoch_ms();
        if full(&decode(layout, last), tick) {
            clock.set_ms(layout.epoch_ms() + tick + 1);
            moved += 1;
        } else {
            thread::yield_now();
        }
    }
    moved
}

/// The last sequence value of the clock's tick is taken.
pub fn tick_used_up(layout: &Layout) -> impl Fn(&Decoded<'_>, u64) -> bool + '_ {
    move |last, tick| last.timestamp() == tick && last.sequence() == layout.capacity_per_tick() - 1
}

/// Two threads take two IDs each from a generator whose clock stays in one
/// tick (10) of a layout with four IDs per tick: they must get that tick's
/// sequence values 0..=3, once each.
///
/// `issue` is the call under test, so the same model runs the real
/// generators and the deliberately broken variants.
pub fn race_in_one_tick<G>(build: fn(Builder<ManualClock>) -> G, issue: fn(&G) -> Id)
where
    G: IdGenerator + 'static,
{
    model("race_in_one_tick", move || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let generator = Arc::new(build(
            Builder::new(layout.clone()).node_id(3).clock(clock.clone()),
        ));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let generator = generator.clone();
                thread::spawn(move || {
                    (0..2)
                        .map(|_| Got::plain(issue(&generator)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let per_thread: Vec<Vec<Got>> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        let rules = Rules {
            clock_max: Some(at(10)),
            ..Rules::STRICT
        };
        let all = check(&layout, &per_thread, generator.last_id(), rules);
        let slots: Vec<(u64, u64, u64)> = all
            .iter()
            .map(|&id| {
                let d = decode(&layout, id);
                (d.timestamp(), d.node_id(), d.sequence())
            })
            .collect();
        assert_eq!(slots, [(10, 3, 0), (10, 3, 1), (10, 3, 2), (10, 3, 3)]);
    });
}

/// Two threads take two IDs each while the main thread moves the clock from
/// tick 10 to 11, so the tick can change between a thread's load of the
/// state and its compare-and-swap. Each tick's IDs are its first sequence
/// values, in order.
pub fn race_across_a_tick_change<G>(build: fn(Builder<ManualClock>) -> G, issue: fn(&G) -> Id)
where
    G: IdGenerator + 'static,
{
    let reached = Reached::new(&["ids in both ticks", "a thread crossed the tick"]);
    let seen = reached.clone();
    model("race_across_a_tick_change", move || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let generator = Arc::new(build(
            Builder::new(layout.clone()).node_id(3).clock(clock.clone()),
        ));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (generator, clock) = (generator.clone(), clock.clone());
                thread::spawn(move || {
                    (0..2)
                        .map(|_| Got::then_read(issue(&generator), &clock))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clock.set_ms(at(11));
        let per_thread: Vec<Vec<Got>> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        let all = check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        let ticks: Vec<(u64, u64)> = all
            .iter()
            .map(|&id| {
                let d = decode(&layout, id);
                (d.timestamp(), d.sequence())
            })
            .collect();
        for tick in [10, 11] {
            let seqs: Vec<u64> = ticks
                .iter()
                .filter(|&&(t, _)| t == tick)
                .map(|&(_, s)| s)
                .collect();
            assert!(
                seqs.iter().copied().eq(0..seqs.len() as u64),
                "tick {tick} did not start at sequence 0 or skipped one: {ticks:?}"
            );
        }
        assert_eq!(ticks.len(), 4);
        if ticks[0].0 == 10 && ticks[3].0 == 11 {
            seen.saw("ids in both ticks");
        }
        let tick_of = |g: &Got| decode(&layout, g.id).timestamp();
        if per_thread
            .iter()
            .any(|got| tick_of(&got[0]) != tick_of(&got[1]))
        {
            seen.saw("a thread crossed the tick");
        }
    });
    reached.assert_all();
}
