//! Stores that fail, stall, panic or are slow: no ID passes the saved mark,
//! a failing store stops issuance until it recovers, a waiting caller
//! neither hurries the writer nor spins, and a slow store still lets IDs
//! through.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use flakeid::{
    BuildError, FileStore, GenerateError, Generator, Id, ManualClock, OnExhausted, Persist,
    StateError, StateStore,
};

use crate::{T, TempDir, layout, marks, tick, ts};

/// A store that records the highest mark it durably saved and can be told
/// to fail, around a real `FileStore`.
struct Watched {
    inner: FileStore,
    saved_max: Arc<AtomicU64>,
    fail: Arc<AtomicBool>,
}

impl StateStore for Watched {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        self.inner.load()
    }

    fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StateError::from_io(
                "write (injected)",
                std::io::Error::from(std::io::ErrorKind::StorageFull),
            ));
        }
        self.inner.save(state)?;
        let mark = marks(std::str::from_utf8(state).unwrap())[0].1;
        self.saved_max.fetch_max(mark, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn no_id_passes_the_saved_mark_and_a_failing_store_stops_issuance() {
    let dir = TempDir::new("watched");
    let saved_max = Arc::new(AtomicU64::new(0));
    let fail = Arc::new(AtomicBool::new(false));
    let store = Watched {
        inner: FileStore::open(dir.file()).unwrap(),
        saved_max: saved_max.clone(),
        fail: fail.clone(),
    };
    // A frozen clock and a wide borrow allowance: the timestamps run ahead
    // of the clock as fast as IDs are taken, far past a 5 ms window.
    let clock = ManualClock::new(T);
    let g = Generator::builder(layout())
        .single_node()
        .clock(clock.clone())
        .on_exhausted(OnExhausted::Borrow {
            max_ahead: Duration::from_secs(3600),
        })
        .persist(Persist::store(store).window(Duration::from_millis(5)))
        .build()
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..200 {
                    for id in g.next_ids(4096) {
                        // Saved before issued: the mark covers every ID.
                        assert!(ts(g.layout(), id) <= saved_max.load(Ordering::SeqCst));
                    }
                }
            });
        }
    });
    let issued_ts = ts(g.layout(), g.last_id());
    assert!(issued_ts > tick(T) + 100, "timestamps did not run ahead");

    // Storage fails: IDs continue up to the saved mark, then try_next_id
    // reports the failure and nothing beyond the mark was issued. The mark
    // is read after the report: a save that began before the failure may end
    // after it and raise the mark, but once a save has failed, every earlier
    // one has ended (the writer saves one at a time).
    fail.store(true, Ordering::SeqCst);
    let mut highest = 0;
    let err = loop {
        match g.try_next_ids(4096) {
            Ok(batch) => {
                for id in batch {
                    highest = highest.max(ts(g.layout(), id));
                }
            }
            Err(e) => break e,
        }
    };
    let mark = saved_max.load(Ordering::SeqCst);
    assert!(
        highest <= mark,
        "issued tick {highest} past the mark {mark}"
    );
    assert!(
        matches!(err, GenerateError::Storage(StateError::Io { .. })),
        "{err}"
    );
    // next_id waits for storage to recover instead.
    let id = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            fail.store(false, Ordering::SeqCst);
        });
        g.next_id()
    });
    assert!(ts(g.layout(), id) > mark);
    assert!(ts(g.layout(), id) <= saved_max.load(Ordering::SeqCst));
}

/// A store in an outage: while it lasts, every save fails and is noted with
/// the time it was tried. The outage ends on its own at the first save
/// after the caller has waited through [`FAILED_WHILE_WAITING`] failed ones,
/// so how long it lasts depends on the writer, not on a timer.
#[derive(Clone, Default)]
struct Outage(Arc<Mutex<OutageLog>>);

#[derive(Default)]
struct OutageLog {
    on: bool,
    caller_waiting: bool,
    failed_while_waiting: usize,
    /// When each save of the outage was tried (the last one succeeded).
    tries: Vec<Instant>,
}

/// The failed saves a caller waits through before the outage ends.
const FAILED_WHILE_WAITING: usize = 3;

impl Outage {
    fn log(&self) -> std::sync::MutexGuard<'_, OutageLog> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl StateStore for Outage {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        Ok(None)
    }

    fn save(&mut self, _: &[u8]) -> Result<(), StateError> {
        let mut log = self.log();
        if !log.on {
            return Ok(());
        }
        log.tries.push(Instant::now());
        if log.caller_waiting {
            if log.failed_while_waiting == FAILED_WHILE_WAITING {
                log.on = false;
                return Ok(());
            }
            log.failed_while_waiting += 1;
        }
        Err(StateError::from_io(
            "write (injected)",
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        ))
    }
}

/// A `ManualClock` that counts its readings: each attempt of a waiting
/// caller reads it once or twice.
#[derive(Clone)]
struct Counted {
    clock: ManualClock,
    reads: Arc<AtomicU64>,
}

impl flakeid::Clock for Counted {
    fn now_ms(&self) -> u64 {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.clock.now_ms()
    }
}

/// How long the writer waits after the `n`th failed save in a row before
/// it tries again: 10 ms, doubling up to 1 s.
fn writer_backoff(n: usize) -> Duration {
    Duration::from_millis(10 << (n - 1).min(7)).min(Duration::from_secs(1))
}

/// While storage fails, the writer retries after 10 ms, doubling to 1 s. A
/// thread blocked in `next_id` meanwhile must not hurry it (a failing disk
/// would be hit thousands of times a second), nor try more than about once
/// a millisecond itself (every 50 µs costs a fifth of a core per thread).
///
/// Both are checked against events, not a span of real time: a loaded
/// machine only lengthens the waits. The writer's tries must be at least its
/// backoff apart, and the caller's clock readings at most a few per
/// millisecond it waited.
#[test]
fn a_caller_waiting_out_a_storage_failure_neither_hurries_the_writer_nor_spins() {
    let outage = Outage::default();
    let clock = Counted {
        clock: ManualClock::new(T),
        reads: Arc::default(),
    };
    let g = Generator::builder(layout())
        .single_node()
        .clock(clock.clone())
        .persist(Persist::store(outage.clone()).window(Duration::from_millis(5)))
        .build()
        .unwrap();
    g.next_id();
    outage.log().on = true;
    // Past the saved window: the next ID needs a save, which fails.
    clock.clock.advance(Duration::from_secs(1));
    assert!(matches!(
        g.poll_id(),
        Err(GenerateError::Reserving | GenerateError::Storage(_))
    ));
    // try_next_id waits for the writer's first try, and reports its failure.
    assert!(matches!(g.try_next_id(), Err(GenerateError::Storage(_))));
    outage.log().caller_waiting = true;
    let reads_before = clock.reads.load(Ordering::Relaxed);
    let started = Instant::now();
    let id = g.next_id();
    let waited_ms = started.elapsed().as_millis() as u64;
    assert_eq!(ts(g.layout(), id), tick(T + 1_000));
    let log = outage.log();
    assert!(!log.on, "the ID came before the outage ended");
    // A try may come early once: the wake-up the first request sent may find
    // the writer awake, and end its first backoff at once. A caller hurrying
    // the writer would end nearly every one early.
    let gaps: Vec<Duration> = log.tries.windows(2).map(|w| w[1] - w[0]).collect();
    let early = (1..)
        .zip(&gaps)
        .filter(|&(failed, &gap)| gap < writer_backoff(failed))
        .count();
    assert!(
        early <= 1,
        "{early} of {} tries came before the writer's backoff ended: {gaps:?}",
        gaps.len()
    );
    // Two readings per attempt (three leave room), and an attempt at most
    // once a millisecond (sleeps never end early), plus the attempts at the
    // start and at the end of the wait. Spinning would try many times a
    // millisecond.
    let reads = clock.reads.load(Ordering::Relaxed) - reads_before;
    assert!(
        reads <= 3 * (waited_ms + 2),
        "{reads} clock readings in {waited_ms} ms of waiting"
    );
    eprintln!(
        "{} tries {gaps:?} apart; {reads} clock readings in {waited_ms} ms",
        log.tries.len()
    );
}

/// A store whose `save` panics while told to.
struct Panicking {
    panic: Arc<AtomicBool>,
}

impl StateStore for Panicking {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        Ok(None)
    }

    fn save(&mut self, _: &[u8]) -> Result<(), StateError> {
        assert!(!self.panic.load(Ordering::SeqCst), "injected store panic");
        Ok(())
    }
}

#[test]
fn a_store_whose_save_panics_is_a_storage_error_not_a_hang() {
    let panic = Arc::new(AtomicBool::new(false));
    let clock = ManualClock::new(T);
    let g = Generator::builder(layout())
        .single_node()
        .clock(clock.clone())
        .persist(
            Persist::store(Panicking {
                panic: panic.clone(),
            })
            .window(Duration::from_millis(5)),
        )
        .build()
        .unwrap();
    g.next_id();
    panic.store(true, Ordering::SeqCst);
    // Past the saved window: the next ID needs a save, which panics.
    clock.advance(Duration::from_secs(1));
    let err = loop {
        match g.poll_id() {
            Err(GenerateError::Reserving) => std::thread::yield_now(),
            other => break other.unwrap_err(),
        }
    };
    let GenerateError::Storage(StateError::StorePanicked { message }) = &err else {
        panic!("expected a panicked store, got {err:?}");
    };
    assert!(message.contains("injected store panic"), "{message}");
    assert!(matches!(
        g.try_next_id(),
        Err(GenerateError::Storage(StateError::StorePanicked { .. }))
    ));
    // next_id waits for the store to recover, as for any storage failure.
    let id = std::thread::scope(|s| {
        s.spawn(|| panic.store(false, Ordering::SeqCst));
        g.next_id()
    });
    assert_eq!(ts(g.layout(), id), tick(T) + 1000);
}

#[test]
fn a_store_whose_load_panics_fails_the_build() {
    struct LoadPanics;
    impl StateStore for LoadPanics {
        fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
            panic!("injected load panic")
        }
        fn save(&mut self, _: &[u8]) -> Result<(), StateError> {
            Ok(())
        }
    }
    let err = Generator::builder(layout())
        .single_node()
        .clock(ManualClock::new(T))
        .persist(Persist::store(LoadPanics))
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError::State(StateError::StorePanicked { message }) if message.contains("injected load panic")),
        "{err:?}"
    );
}

/// A store slower than the window: every save takes 20 ms, the window is
/// 1 ms, the clock is the real one. Before the writer covered its own save
/// time, the clock had always passed a new mark by the time the mark was
/// published, the caller asked again, and nothing was ever issued (a
/// livelock the crash test found on an overloaded machine). The 60 s limit
/// only turns such a hang into a failure; a pass takes a few saves.
#[test]
fn a_store_slower_than_the_window_still_lets_ids_through() {
    #[derive(Default)]
    struct Slow(Option<Vec<u8>>);

    impl StateStore for Slow {
        fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
            Ok(self.0.clone())
        }

        fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
            std::thread::sleep(Duration::from_millis(20));
            self.0 = Some(state.to_vec());
            Ok(())
        }
    }

    let generator = Generator::builder(layout())
        .node_id(1)
        .persist(Persist::store(Slow::default()).window(Duration::from_millis(1)))
        .build()
        .unwrap();
    let (sent, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ids: Vec<Id> = (0..3).map(|_| generator.next_id()).collect();
        let _ = sent.send(ids);
    });
    let ids = got
        .recv_timeout(Duration::from_secs(60))
        .expect("no ID within 60 s: generation is chasing a store slower than the window");
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}
