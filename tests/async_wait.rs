//! The async calls (feature `tokio`): they wait for what `next_id` waits for
//! without blocking the executor, and report what `try_next_id` reports.

use std::collections::HashSet;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use flakeid::{
    GenerateError, Generator, Id, Layout, ManualClock, OnClockBehind, OnExhausted, Persist,
    StateError, StateStore,
};

const EPOCH: u64 = 1_600_000_000_000;
const T: u64 = 1_700_000_000_000;

/// 41 ms + 4 worker + `sequence_bits` sequence.
fn layout(sequence_bits: u32) -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .node("worker", 4)
        .sequence(sequence_bits)
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Runs `f` on its own thread and fails the test if it has not finished
/// within `limit`: a call that blocked the executor's only thread would wait
/// forever for a task that can no longer run.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .expect("the executor was blocked: the other task never ran")
}

#[test]
fn waiting_for_the_next_tick_lets_another_task_on_the_same_thread_move_the_clock() {
    let events = within(Duration::from_secs(20), || {
        let clock = ManualClock::new(T);
        let generator = Generator::builder(layout(1))
            .node_id(3)
            .clock(clock.clone())
            .build()
            .unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        current_thread().block_on(async {
            // Two IDs per ms: the tick is used up, and the clock stands still
            // until the other task moves it.
            generator.next_id_async().await;
            generator.next_id_async().await;
            let mover = {
                let (clock, events) = (clock.clone(), events.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    events.lock().unwrap().push("clock advanced".to_string());
                    clock.advance(Duration::from_millis(1));
                })
            };
            let id = generator.next_id_async().await;
            let decoded = generator.layout().decode(id).unwrap();
            events.lock().unwrap().push(format!(
                "id at {} ms, sequence {}, node {}",
                decoded.unix_ms() - T,
                decoded.sequence(),
                decoded.node_id()
            ));
            mover.await.unwrap();
        });
        Arc::try_unwrap(events).unwrap().into_inner().unwrap()
    });
    assert_eq!(
        events,
        ["clock advanced", "id at 1 ms, sequence 0, node 3"],
        "the ID must wait for the next tick, which only the other task brings"
    );
}

#[test]
fn what_try_next_id_reports_is_reported_at_once() {
    within(Duration::from_secs(20), || {
        let clock = ManualClock::new(T);
        let erroring = Generator::builder(layout(1))
            .single_node()
            .clock(clock.clone())
            .on_exhausted(OnExhausted::Error)
            .on_clock_behind(OnClockBehind::Error)
            .build()
            .unwrap();
        current_thread().block_on(async {
            erroring.try_next_id_async().await.unwrap();
            erroring.try_next_id_async().await.unwrap();
            assert!(matches!(
                erroring.try_next_id_async().await,
                Err(GenerateError::SequenceExhausted { .. })
            ));
            clock.rewind(Duration::from_secs(1));
            assert_eq!(
                erroring.try_next_id_async().await,
                Err(GenerateError::ClockBehind {
                    behind: Duration::from_secs(1)
                })
            );
        });
    });
}

#[test]
fn a_clock_behind_is_waited_for_only_within_the_policy() {
    within(Duration::from_secs(20), || {
        let clock = ManualClock::new(T);
        let generator = Generator::builder(layout(8))
            .single_node()
            .clock(clock.clone())
            .on_clock_behind(OnClockBehind::Wait {
                max: Duration::from_millis(100),
            })
            .build()
            .unwrap();
        current_thread().block_on(async {
            let first = generator.next_id_async().await;
            // Farther behind than the policy waits: reported at once.
            clock.rewind(Duration::from_secs(1));
            let started = Instant::now();
            assert!(matches!(
                generator.try_next_id_async().await,
                Err(GenerateError::ClockBehind { .. })
            ));
            assert!(started.elapsed() < Duration::from_millis(100));
            // 50 ms behind, and the clock stands still: reported when the
            // 100 ms allowance has passed, not before.
            clock.set_ms(T - 50);
            let started = Instant::now();
            assert!(matches!(
                generator.try_next_id_async().await,
                Err(GenerateError::ClockBehind { .. })
            ));
            assert!(started.elapsed() >= Duration::from_millis(100));
            // 50 ms behind, and another task lets the clock catch up.
            let mover = {
                let clock = clock.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    clock.set_ms(T + 1);
                })
            };
            let id = generator.try_next_id_async().await.unwrap();
            mover.await.unwrap();
            assert!(id > first);
            assert_eq!(generator.layout().decode(id).unwrap().unix_ms(), T + 1);
        });
    });
}

#[test]
fn the_counters_count_a_waiting_call_as_the_blocking_call_does() {
    within(Duration::from_secs(20), || {
        let make = |clock: &ManualClock| {
            Generator::builder(layout(8))
                .single_node()
                .clock(clock.clone())
                .on_clock_behind(OnClockBehind::Wait {
                    max: Duration::from_millis(30),
                })
                .counters(true)
                .build()
                .unwrap()
        };
        let (clock, async_clock) = (ManualClock::new(T), ManualClock::new(T));
        let (blocking, nonblocking) = (make(&clock), make(&async_clock));
        blocking.next_id();
        clock.set_ms(T - 10);
        assert!(matches!(
            blocking.try_next_id(),
            Err(GenerateError::ClockBehind { .. })
        ));
        current_thread().block_on(async {
            nonblocking.next_id_async().await;
            // 10 ms behind and standing still: several sleeps before the
            // 30 ms allowance runs out, but one call.
            async_clock.set_ms(T - 10);
            assert!(matches!(
                nonblocking.try_next_id_async().await,
                Err(GenerateError::ClockBehind { .. })
            ));
        });
        let stats = blocking.stats().unwrap();
        assert_eq!((stats.clock_behind, stats.waits), (1, 1), "{stats:?}");
        assert_eq!(nonblocking.stats(), Some(stats));
    });
}

/// As for `next_id`: a wait worked out from a clock set back far by mistake
/// ends soon after the clock is corrected, not when the wrong clock would
/// have caught up.
#[test]
fn a_long_wait_ends_soon_after_the_clock_is_corrected() {
    let waited = within(Duration::from_secs(20), || {
        let clock = ManualClock::new(T);
        let generator = Generator::builder(layout(1))
            .node_id(5)
            .clock(clock.clone())
            .build()
            .unwrap();
        current_thread().block_on(async {
            generator.next_id_async().await;
            generator.next_id_async().await;
            // Set back 10 s: the next ID waits for tick T + 1.
            clock.rewind(Duration::from_secs(10));
            let fixer = {
                let clock = clock.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    clock.set_ms(T + 1);
                })
            };
            let started = Instant::now();
            let id = generator.next_id_async().await;
            let waited = started.elapsed();
            fixer.await.unwrap();
            let d = generator.layout().decode(id).unwrap();
            assert_eq!((d.unix_ms(), d.sequence()), (T + 1, 0));
            waited
        })
    });
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
}

#[test]
fn past_the_layouts_end_the_error_is_returned_not_awaited() {
    within(Duration::from_secs(20), || {
        let short = Layout::builder()
            .epoch_ms(EPOCH)
            .timestamp_bits(10)
            .sequence(4)
            .build()
            .unwrap();
        let generator = Generator::builder(short.clone())
            .single_node()
            .clock(ManualClock::new(short.last_ms() + 1))
            .build()
            .unwrap();
        current_thread().block_on(async {
            assert_eq!(
                generator.try_next_id_async().await,
                Err(GenerateError::Expired {
                    last_ms: short.last_ms()
                })
            );
        });
    });
}

#[test]
fn many_tasks_on_a_multi_thread_runtime_get_unique_ordered_ids() {
    // 64 IDs per ms, so the tasks wait for ticks on the real clock often.
    let generator = Arc::new(
        Generator::builder(layout(6))
            .node_id(7)
            .counters(true)
            .build()
            .unwrap(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    let per_task: Vec<Vec<Id>> = runtime.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let generator = generator.clone();
                tokio::spawn(async move {
                    let mut ids = Vec::with_capacity(2_000);
                    while ids.len() < 2_000 {
                        if ids.len() % 2 == 0 {
                            ids.push(generator.next_id_async().await);
                        } else {
                            ids.extend(generator.next_ids_async(2_000 - ids.len()).await);
                        }
                    }
                    ids
                })
            })
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            all.push(task.await.unwrap());
        }
        all
    });
    for ids in &per_task {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a task saw IDs out of order"
        );
    }
    let unique: HashSet<Id> = per_task.iter().flatten().copied().collect();
    assert_eq!(unique.len(), 16_000);
    let stats = generator.stats().unwrap();
    assert!(stats.waits > 0, "the tasks never had to wait: {stats:?}");
}

#[test]
fn the_futures_can_be_spawned() {
    fn assert_send<F: std::future::Future + Send>(_: F) {}
    let generator = Generator::builder(layout(4)).single_node().build().unwrap();
    assert_send(generator.next_id_async());
    assert_send(generator.try_next_ids_async(8));
}

/// A store whose `save` panics while told to.
struct Panicking(Arc<std::sync::atomic::AtomicBool>);

impl StateStore for Panicking {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        Ok(None)
    }

    fn save(&mut self, _: &[u8]) -> Result<(), StateError> {
        assert!(
            !self.0.load(std::sync::atomic::Ordering::SeqCst),
            "injected store panic"
        );
        Ok(())
    }
}

/// A store whose save panics is a storage failure: the async calls report
/// it (`try_`) or wait for the store to recover, as the blocking ones do,
/// instead of waiting for a writer thread that died.
#[test]
fn a_store_whose_save_panics_is_reported_or_waited_out() {
    within(Duration::from_secs(60), || {
        let panic = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let clock = ManualClock::new(T);
        let generator = Generator::builder(layout(12))
            .single_node()
            .clock(clock.clone())
            .persist(Persist::store(Panicking(panic.clone())).window(Duration::from_millis(5)))
            .build()
            .unwrap();
        generator.next_id();
        panic.store(true, std::sync::atomic::Ordering::SeqCst);
        // Past the saved window: the next ID needs a save, which panics.
        clock.advance(Duration::from_secs(1));
        current_thread().block_on(async {
            assert!(matches!(
                generator.try_next_id_async().await,
                Err(GenerateError::Storage(StateError::StorePanicked { .. }))
            ));
            let recover = async {
                panic.store(false, std::sync::atomic::Ordering::SeqCst);
            };
            let (id, ()) = tokio::join!(generator.next_id_async(), recover);
            assert_eq!(
                generator.layout().decode(id).unwrap().timestamp(),
                T + 1_000 - EPOCH
            );
        });
    });
}
