//! The fast path on a clock with a cached reading, the default
//! `MonotonicClock`'s design: the generator continues a tick on the cached
//! reading and makes every other decision on the precise one. A refresh
//! racing a tick change, a refresh that never comes, and a cached reading
//! older than the state, on both generators.
#![cfg(flakeid_loom)]

use flakeid::loom_hooks::Broken;
use flakeid::{Builder, Clock, Generator, IdGenerator, ManualClock, MutexGenerator, OnClockBehind};
use flakeid_loom_tests::{EPOCH, Got, Reached, Rules, at, check, decode, layout, model};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::thread;

/// A clock with `MonotonicClock`'s two readings: `now_ms` reads the model's
/// clock and, as the real one does, raises the cached reading to it and
/// never returns less than it (the cached reading is the highest precise
/// reading returned); `recent_ms` loads the cached reading, which the
/// refresh thread raises.
#[derive(Clone)]
struct CachedClock {
    precise: ManualClock,
    cached: Arc<AtomicU64>,
}

impl CachedClock {
    fn new(unix_ms: u64) -> CachedClock {
        CachedClock {
            precise: ManualClock::new(unix_ms),
            cached: Arc::new(AtomicU64::new(unix_ms)),
        }
    }

    /// An ID with the clock read right after the call returned, as the
    /// generator reads it (the model's clock alone can lag a reading the
    /// clock already returned on another thread).
    fn got(&self, id: flakeid::Id) -> Got {
        Got {
            id,
            clock_after: Some(self.now_ms()),
        }
    }

    /// The cached reading.
    fn cached(&self) -> u64 {
        self.cached.load(Ordering::Relaxed)
    }

    /// What the refresh thread does each millisecond: a precise reading.
    fn refresh(&self) {
        self.now_ms();
    }
}

impl Clock for CachedClock {
    fn now_ms(&self) -> u64 {
        let now = self.precise.now_ms();
        self.cached.fetch_max(now, Ordering::Relaxed).max(now)
    }

    fn recent_ms(&self) -> Option<u64> {
        Some(self.cached.load(Ordering::Relaxed))
    }
}

fn lock_free(builder: Builder<CachedClock>) -> Generator<CachedClock> {
    builder.build().unwrap()
}

fn locked(builder: Builder<CachedClock>) -> MutexGenerator<CachedClock> {
    builder.build_mutex().unwrap()
}

/// Two threads take two IDs each while the main thread moves the clock from
/// tick 10 to 11 and then refreshes the cached reading, so a thread's cached
/// reading can be stale, fresh, or raised by another thread's precise one.
/// Besides what every model checks: no ID is earlier than the cached reading
/// its call started with (the lag is at most the cached reading's age).
fn a_refresh_races_a_tick_change<G: IdGenerator + 'static>(
    name: &str,
    build: fn(Builder<CachedClock>) -> G,
) {
    let reached = Reached::new(&[
        "an ID continued the cached tick after the clock moved",
        "an ID entered the new tick before the refresh",
    ]);
    let seen = reached.clone();
    model(name, move || {
        let layout = layout(2);
        let clock = CachedClock::new(at(10));
        let generator = Arc::new(build(
            Builder::new(layout.clone()).node_id(3).clock(clock.clone()),
        ));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (generator, clock) = (generator.clone(), clock.clone());
                thread::spawn(move || {
                    (0..2)
                        .map(|_| {
                            let (cached, precise) = (clock.cached(), clock.precise.now_ms());
                            let got = clock.got(generator.next_id());
                            (cached, precise, got)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clock.precise.set_ms(at(11));
        clock.refresh();
        let calls: Vec<Vec<(u64, u64, Got)>> =
            workers.into_iter().map(|h| h.join().unwrap()).collect();
        let per_thread: Vec<Vec<Got>> = calls
            .iter()
            .map(|calls| calls.iter().map(|&(_, _, got)| got).collect())
            .collect();
        check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        for &(cached, precise, got) in calls.iter().flatten() {
            let tick = decode(&layout, got.id).timestamp();
            assert!(
                tick >= cached - EPOCH,
                "an ID at tick {tick} lags the cached reading its call started with: {calls:?}"
            );
            if tick == 10 && precise == at(11) {
                seen.saw("an ID continued the cached tick after the clock moved");
            }
            if tick == 11 && cached == at(10) {
                seen.saw("an ID entered the new tick before the refresh");
            }
        }
    });
    reached.assert_all();
}

#[test]
fn a_refresh_racing_a_tick_change_keeps_ids_unique_ordered_and_bounded() {
    a_refresh_races_a_tick_change("cached_clock_tick_change", lock_free);
}

#[test]
fn the_mutex_twin_with_a_racing_refresh_does_the_same() {
    a_refresh_races_a_tick_change("cached_clock_tick_change_mutex", locked);
}

/// No refresh ever comes: one thread takes three IDs at two per tick while
/// the main thread moves the clock on once the tick is used up. The used-up
/// tick sends the generator to the precise clock, which takes it to the next
/// tick and raises the cached reading: every tick is filled, and the stream
/// moves on.
fn a_stalled_refresh_still_moves_on<G: IdGenerator + 'static>(
    name: &str,
    build: fn(Builder<CachedClock>) -> G,
) {
    model(name, move || {
        let layout = layout(1);
        let clock = CachedClock::new(at(10));
        let generator = Arc::new(build(
            Builder::new(layout.clone()).node_id(3).clock(clock.clone()),
        ));
        let worker = {
            let (generator, clock) = (generator.clone(), clock.clone());
            thread::spawn(move || {
                (0..3)
                    .map(|_| clock.got(generator.next_id()))
                    .collect::<Vec<_>>()
            })
        };
        // The mover plays time: one tick on, once tick 10 is used up.
        loop {
            let last = decode(&layout, generator.last_id());
            if (last.timestamp(), last.sequence()) == (10, 1) {
                break;
            }
            thread::yield_now();
        }
        clock.precise.set_ms(at(11));
        let got = worker.join().unwrap();
        check(&layout, &[got.clone()], generator.last_id(), Rules::STRICT);
        let slots: Vec<(u64, u64)> = got
            .iter()
            .map(|g| {
                let d = decode(&layout, g.id);
                (d.timestamp(), d.sequence())
            })
            .collect();
        assert_eq!(slots, [(10, 0), (10, 1), (11, 0)]);
        assert_eq!(clock.cached(), at(11), "the generator raised the cache");
    });
}

#[test]
fn a_stalled_refresh_still_fills_each_tick_and_moves_on() {
    a_stalled_refresh_still_moves_on("cached_clock_stalled", lock_free);
}

#[test]
fn the_mutex_twin_with_a_stalled_refresh_does_the_same() {
    a_stalled_refresh_still_moves_on("cached_clock_stalled_mutex", locked);
}

/// The clock moves from tick 10 to 11 and nothing refreshes the cached
/// reading, so a thread can hold a cached reading (10) older than a tick
/// another thread entered on its precise one (11). Under
/// `OnClockBehind::Error` that must not pass for the clock stepping back.
fn a_stale_cache_is_never_a_clock_behind(
    name: &str,
    issue: fn(&Generator<CachedClock>) -> Result<flakeid::Id, flakeid::GenerateError>,
) {
    let reached = Reached::new(&["a thread held a cached reading older than the state"]);
    let seen = reached.clone();
    model(name, move || {
        let layout = layout(2);
        let clock = CachedClock::new(at(10));
        let generator = Arc::new(lock_free(
            Builder::new(layout.clone())
                .node_id(1)
                .clock(clock.clone())
                .on_clock_behind(OnClockBehind::Error),
        ));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (generator, clock) = (generator.clone(), clock.clone());
                thread::spawn(move || {
                    (0..2)
                        .map(|_| {
                            let cached = clock.cached();
                            match issue(&generator) {
                                Ok(id) => (cached, clock.got(id)),
                                Err(e) => panic!("the clock never moved back, yet: {e}"),
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clock.precise.set_ms(at(11));
        let calls: Vec<Vec<(u64, Got)>> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        let per_thread: Vec<Vec<Got>> = calls
            .iter()
            .map(|calls| calls.iter().map(|&(_, got)| got).collect())
            .collect();
        check(&layout, &per_thread, generator.last_id(), Rules::STRICT);
        for &(cached, got) in calls.iter().flatten() {
            if cached == at(10) && decode(&layout, got.id).timestamp() == 11 {
                seen.saw("a thread held a cached reading older than the state");
            }
        }
    });
    reached.assert_all();
}

#[test]
fn a_cached_reading_older_than_the_state_is_never_reported_behind() {
    a_stale_cache_is_never_a_clock_behind("cached_clock_never_behind", |g| g.try_next_id());
}

/// Teeth: deciding on the cached reading where the precise one is needed
/// reports the clock behind although it never moved back.
#[test]
#[should_panic(expected = "the clock never moved back")]
fn the_model_catches_decisions_on_the_cached_reading() {
    a_stale_cache_is_never_a_clock_behind("cached_clock_teeth", |g| {
        g.broken_try_next_id_on_cached()
    });
}
