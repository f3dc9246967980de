//! The refresh thread's rest and wake-up: `MonotonicClock`'s refresh thread
//! rests (parked, no timeout) once nobody reads the precise clock, with the
//! cached reading set to `RESTING`, and a reader whose calls go on into a
//! second millisecond wakes it. The models run the crate's own handshake
//! (`flakeid::loom_hooks::Served`) on a refresh thread whose loop is the
//! real one's (`src/clock/refresh.rs`) with a stop flag for its end.
//!
//! The rule they check: the cached reading is a real one only while the
//! thread refreshes it or has been woken to. A lost wake-up (the thread
//! parked with a real reading nobody refreshes) would let IDs lag; each
//! model ends by moving the clock on and waiting until the cached reading
//! follows it or rests, which a lost wake-up turns into a spin loom
//! reports.
#![cfg(flakeid_loom)]

use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};

use flakeid::loom_hooks::{RESTING, Served};
use flakeid::{Builder, Clock, Generator, ManualClock};
use flakeid_loom_tests::{Got, Reached, Rules, at, check, decode, layout, model};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use loom::thread::{self, JoinHandle};

/// A reader's side after a precise reading: the crate's (`Served::read`),
/// or a deliberately broken one. Returns the reading to use.
type Read = fn(&Served, u64, &dyn Fn()) -> u64;

/// The crate's reader side.
fn crate_read(served: &Served, ms: u64, wake: &dyn Fn()) -> u64 {
    served.read(ms, wake)
}

/// Teeth: a reader that raises the cached reading with a load and a store
/// instead of `fetch_max`, so a raise that lands just after the thread
/// rested turns `RESTING` back into a real reading without waking it.
fn broken_read(served: &Served, ms: u64, wake: &dyn Fn()) -> u64 {
    let word = served.reading();
    let now = word.load(Ordering::Relaxed);
    if now != RESTING && ms > now {
        word.store(ms, Ordering::Relaxed);
        ms
    } else {
        served.read(ms, wake)
    }
}

/// The precise clock of the model, as `MonotonicClock`'s: the model's clock,
/// never read below the highest reading returned (the clock's floor, a word
/// apart from the cached reading).
#[derive(Clone)]
struct Precise {
    clock: ManualClock,
    floor: Arc<AtomicU64>,
}

impl Precise {
    fn new(clock: &ManualClock) -> Precise {
        Precise {
            clock: clock.clone(),
            floor: Arc::new(AtomicU64::new(clock.now_ms())),
        }
    }

    /// A precise reading that tells the refresh thread nothing (the
    /// thread's own, or a clock's without the cached reading).
    fn now(&self) -> u64 {
        let now = self.clock.now_ms();
        self.floor.fetch_max(now, Ordering::Relaxed).max(now)
    }
}

/// The refresh thread of the model: `RefreshThread::run`'s loop, where a
/// refresh takes a precise reading of the model's clock and the thread never
/// sleeps between refreshes (a yield), ended by `stop`. Counts its rests.
struct Refresher {
    handle: JoinHandle<()>,
    stop: Arc<AtomicBool>,
    rests: StdArc<StdAtomicUsize>,
}

impl Refresher {
    fn start(served: Arc<Served>, precise: Precise) -> Refresher {
        let stop = Arc::new(AtomicBool::new(false));
        let rests = StdArc::new(StdAtomicUsize::new(0));
        let handle = {
            let (stop, rests) = (stop.clone(), rests.clone());
            thread::spawn(move || {
                let mut quiet_since = None;
                while !stop.load(Ordering::SeqCst) {
                    if served.refreshed(precise.now(), &mut quiet_since) {
                        rests.fetch_add(1, StdOrdering::Relaxed);
                        while served.is_resting() && !stop.load(Ordering::SeqCst) {
                            thread::park();
                        }
                    } else {
                        thread::yield_now();
                    }
                }
            })
        };
        Refresher {
            handle,
            stop,
            rests,
        }
    }

    fn thread(&self) -> thread::Thread {
        self.handle.thread().clone()
    }

    /// The liveness check, then the end: moves the clock to `to` and waits
    /// until the cached reading follows it or rests. A thread parked with a
    /// real reading never gets there (loom reports the spin); one that runs
    /// gets there, and so does one that rests. Then stops the thread and
    /// returns how many times it rested.
    fn follows_or_rests(self, served: &Served, precise: &Precise, to: u64) -> usize {
        precise.clock.set_ms(to);
        // Read by a no-op read-modify-write, which reads the last value
        // written: a plain relaxed load may go on seeing an older one.
        while served.reading().fetch_max(0, Ordering::Relaxed) < to {
            thread::yield_now();
        }
        self.stop.store(true, Ordering::SeqCst);
        self.handle.thread().unpark();
        self.handle.join().unwrap();
        self.rests.load(StdOrdering::Relaxed)
    }
}

/// `MonotonicClock` with a cached reading, in the model: the precise reading
/// is told to the refresh thread through `read`; the cached one is the
/// served reading.
#[derive(Clone)]
struct Resting {
    precise: Precise,
    served: Arc<Served>,
    refresher: thread::Thread,
    read: Read,
    wakes: StdArc<StdAtomicUsize>,
}

impl Clock for Resting {
    fn now_ms(&self) -> u64 {
        let ms = self.precise.now();
        (self.read)(&self.served, ms, &|| {
            self.wakes.fetch_add(1, StdOrdering::Relaxed);
            self.refresher.unpark();
        })
    }

    fn recent_ms(&self) -> Option<u64> {
        Some(self.served.load())
    }
}

/// One thread takes two IDs while the main thread moves the clock from tick
/// 10 to 11 to 12, and the refresh thread (resting at its first refresh
/// that nobody asked for) rests and is woken. Besides what every model
/// checks: no ID lags the reading its call started with (the cached one if
/// real, else the precise one: a call that finds the thread resting reads
/// the clock), the thread is woken at most once per rest, and the liveness
/// check.
fn calls_wake_a_resting_refresh(name: &str, read: Read) {
    let reached = Reached::new(&[
        "a call found the thread resting and read the clock",
        "a call in the next millisecond woke the thread",
        "a call continued a tick on the cached reading",
    ]);
    let seen = reached.clone();
    model(name, move || {
        let layout = layout(2);
        let clock = ManualClock::new(at(10));
        let precise = Precise::new(&clock);
        let served = Arc::new(Served::new(0));
        assert!(served.wake_now(at(10)), "the thread starts");
        let refresher = Refresher::start(served.clone(), precise.clone());
        let wakes = StdArc::new(StdAtomicUsize::new(0));
        let resting = Resting {
            precise: precise.clone(),
            served: served.clone(),
            refresher: refresher.thread(),
            read,
            wakes: wakes.clone(),
        };
        let generator: Arc<Generator<Resting>> = Arc::new(
            Builder::new(layout.clone())
                .node_id(3)
                .clock(resting)
                .build()
                .unwrap(),
        );
        let worker = {
            let (generator, served, precise) = (generator.clone(), served.clone(), precise.clone());
            thread::spawn(move || {
                (0..2)
                    .map(|_| {
                        let (cached, started) = (served.load(), precise.now());
                        let id = generator.next_id();
                        // The clock as the generator reads it, right after.
                        let got = Got {
                            id,
                            clock_after: Some(precise.now()),
                        };
                        (cached, started, got)
                    })
                    .collect::<Vec<_>>()
            })
        };
        clock.set_ms(at(11));
        clock.set_ms(at(12));
        let calls = worker.join().unwrap();
        let got: Vec<Got> = calls.iter().map(|&(_, _, got)| got).collect();
        check(&layout, &[got], generator.last_id(), Rules::STRICT);
        for &(cached, started, got) in &calls {
            let tick = decode(&layout, got.id).timestamp();
            let bound = if cached == RESTING { started } else { cached };
            assert!(
                tick >= bound - layout.epoch_ms(),
                "an ID at tick {tick} lags the reading its call started with: {calls:?}"
            );
            if cached == RESTING {
                seen.saw("a call found the thread resting and read the clock");
            } else if tick == cached - layout.epoch_ms() && started > cached {
                seen.saw("a call continued a tick on the cached reading");
            }
        }
        let rests = refresher.follows_or_rests(&served, &precise, at(13));
        let woken = wakes.load(StdOrdering::Relaxed);
        assert!(woken <= rests, "{woken} wake-ups for {rests} rests");
        if woken > 0 {
            seen.saw("a call in the next millisecond woke the thread");
        }
    });
    reached.assert_all();
}

#[test]
fn calls_that_go_on_wake_a_resting_refresh_and_no_id_lags() {
    calls_wake_a_resting_refresh("idle_refresh_generator", crate_read);
}

/// A reader takes two precise readings while the main thread moves the
/// clock from tick 10 to 11 and then takes one, and the refresh thread rests
/// at its first refresh that nobody asked for: the handshake alone, with
/// races the generator model reaches less often (two readers finding it
/// resting at once, a raise landing just as it rests). At most one wake-up
/// per rest, and the liveness check.
fn readers_race_the_rest(name: &str, read: Read) {
    let reached = Reached::new(&[
        "the thread rested",
        "a reader woke it",
        "the readers left it resting",
    ]);
    let seen = reached.clone();
    model(name, move || {
        let clock = ManualClock::new(at(10));
        let precise = Precise::new(&clock);
        let served = Arc::new(Served::new(0));
        assert!(served.wake_now(at(10)), "the thread starts");
        let refresher = Refresher::start(served.clone(), precise.clone());
        let wakes = StdArc::new(StdAtomicUsize::new(0));
        let reads = |times: usize| {
            let (served, precise, wakes) = (served.clone(), precise.clone(), wakes.clone());
            let thread = refresher.thread();
            move || {
                for _ in 0..times {
                    read(&served, precise.now(), &|| {
                        wakes.fetch_add(1, StdOrdering::Relaxed);
                        thread.unpark();
                    });
                }
            }
        };
        let reader = thread::spawn(reads(2));
        clock.set_ms(at(11));
        reads(1)();
        reader.join().unwrap();
        if served.is_resting() {
            seen.saw("the readers left it resting");
        }
        let rests = refresher.follows_or_rests(&served, &precise, at(12));
        let woken = wakes.load(StdOrdering::Relaxed);
        assert!(woken <= rests, "{woken} wake-ups for {rests} rests");
        if rests > 0 {
            seen.saw("the thread rested");
        }
        if woken > 0 {
            seen.saw("a reader woke it");
        }
    });
    reached.assert_all();
}

#[test]
fn readers_racing_the_rest_never_leave_a_real_reading_unrefreshed() {
    readers_race_the_rest("idle_refresh_handshake", crate_read);
}

/// Teeth: a raise by load and store instead of `fetch_max` can turn
/// `RESTING` back into a real reading as the thread parks, and nobody wakes
/// it: the liveness check spins.
#[test]
#[should_panic(expected = "exceeded maximum number of branches")]
fn the_model_catches_a_raise_that_revives_a_resting_reading() {
    readers_race_the_rest("idle_refresh_teeth", broken_read);
}
