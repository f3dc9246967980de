//! The event hook: what each slow path tells it, on which thread, and that a
//! hook cannot break the generator. The lease's events are checked against
//! real etcd and Redis servers in `lease_support::killed_then_restarted`.
//!
//! Waits here are for events (a counter moving, a hook hearing something),
//! never for a span of real time.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use flakeid::{Event, Generator, Layout, ManualClock, OnClockBehind, OnExhausted, Persist};

mod switch_store;
use switch_store::Switch;

const T0: u64 = 1_700_000_000_000;

/// A hook that keeps what it hears.
fn recorder() -> (
    Arc<Mutex<Vec<Event>>>,
    impl Fn(&Event) + Send + Sync + 'static,
) {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    (heard, move |e: &Event| log.lock().unwrap().push(e.clone()))
}

fn heard(log: &Mutex<Vec<Event>>) -> Vec<Event> {
    log.lock().unwrap().clone()
}

#[test]
fn a_clock_behind_is_heard_with_how_far_under_each_policy() {
    for policy in [OnClockBehind::Continue, OnClockBehind::Error] {
        let clock = ManualClock::new(T0);
        let (log, hook) = recorder();
        let generator = Generator::builder(Layout::twitter())
            .node_id(1)
            .clock(clock.clone())
            .on_clock_behind(policy)
            .on_event(hook)
            .build()
            .unwrap();
        generator.next_id();
        assert_eq!(heard(&log), [], "{policy:?}");
        clock.rewind(Duration::from_millis(40));
        let _ = generator.try_next_id();
        assert_eq!(
            heard(&log),
            [Event::ClockBehind {
                behind: Duration::from_millis(40)
            }],
            "{policy:?}"
        );
    }
}

#[test]
fn a_clock_id_step_is_heard_with_the_new_clock_id() {
    let layout: Layout = "epoch=1600000000000 fields=timestamp:41,clock_id:2,worker:8,sequence:12"
        .parse()
        .unwrap();
    let clock = ManualClock::new(T0);
    let (log, hook) = recorder();
    let generator = Generator::builder(layout)
        .node_id(3)
        .clock(clock.clone())
        .on_clock_behind(OnClockBehind::NextClock)
        .on_event(hook)
        .build()
        .unwrap();
    generator.next_id();
    clock.rewind(Duration::from_secs(2));
    let id = generator.next_id();
    assert_eq!(generator.layout().decode(id).unwrap().clock_id(), 1);
    assert_eq!(
        heard(&log),
        [
            Event::ClockBehind {
                behind: Duration::from_secs(2)
            },
            Event::ClockIdStepped { clock_id: 1 },
        ]
    );
}

#[test]
fn a_borrowed_tick_is_heard_with_how_far_ahead() {
    let clock = ManualClock::new(T0);
    let (log, hook) = recorder();
    let generator = Generator::builder(Layout::twitter())
        .node_id(1)
        .clock(clock.clone())
        .on_exhausted(OnExhausted::Borrow {
            max_ahead: Duration::from_millis(10),
        })
        .on_event(hook)
        .build()
        .unwrap();
    assert_eq!(generator.next_ids(4_096).count(), 4_096);
    generator.next_id();
    assert_eq!(
        heard(&log),
        [Event::TickBorrowed {
            ahead: Duration::from_millis(1)
        }]
    );
}

/// A call that waits for the next tick is heard once, when it ends, with a
/// wait at least as long as the time it was seen waiting.
#[test]
fn a_wait_is_heard_once_when_the_call_ends() {
    let clock = ManualClock::new(T0);
    let (log, hook) = recorder();
    let generator = Generator::builder(Layout::twitter())
        .node_id(1)
        .clock(clock.clone())
        .counters(true)
        .on_event(hook)
        .build()
        .unwrap();
    assert_eq!(generator.next_ids(4_096).count(), 4_096);
    thread::scope(|s| {
        let waiter = s.spawn(|| generator.next_id());
        // The waiter has waited once the counter says so; then the tick comes.
        while generator.stats().unwrap().waits == 0 {
            thread::yield_now();
        }
        let seen_waiting = Instant::now();
        assert!(heard(&log).is_empty(), "heard before the call ended");
        // The wait began before it was seen and ends after the clock moves.
        let advanced = Instant::now();
        clock.advance(Duration::from_millis(1));
        let id = waiter.join().unwrap();
        assert_eq!(generator.layout().decode(id).unwrap().unix_ms(), T0 + 1);
        match heard(&log)[..] {
            [Event::Waited { waited }] => {
                assert!(waited >= advanced - seen_waiting, "{waited:?}");
            }
            ref other => panic!("heard {other:?}"),
        }
    });
}

#[test]
fn failed_and_recovered_saves_are_heard_from_the_writer() {
    let clock = ManualClock::new(T0);
    let store = Switch::default();
    let (log, hook) = recorder();
    let generator = Generator::builder(Layout::twitter())
        .node_id(1)
        .clock(clock.clone())
        .persist(Persist::store(store.clone()).window(Duration::from_secs(1)))
        .on_event(hook)
        .build()
        .unwrap();
    generator.try_next_id().unwrap();
    store.failing.store(true, Ordering::SeqCst);
    clock.advance(Duration::from_secs(5));
    // Asks the writer for the tick; its save fails.
    while !heard(&log)
        .iter()
        .any(|e| matches!(e, Event::SaveFailed { .. }))
    {
        let _ = generator.try_next_id();
        thread::sleep(Duration::from_millis(1));
    }
    store.failing.store(false, Ordering::SeqCst);
    let id = generator.next_id(); // waits until a save lands
    assert_eq!(generator.layout().decode(id).unwrap().unix_ms(), T0 + 5_000);
    let events = heard(&log);
    let recovered = events.iter().position(|e| *e == Event::SaveRecovered);
    let failed = events
        .iter()
        .position(|e| matches!(e, Event::SaveFailed { error } if error.to_string().contains("write (injected)")));
    assert!(
        matches!((failed, recovered), (Some(f), Some(r)) if f < r),
        "{events:?}"
    );
}

#[test]
fn a_hook_that_panics_loses_its_event_and_nothing_else() {
    let clock = ManualClock::new(T0);
    let generator = Generator::builder(Layout::twitter())
        .node_id(1)
        .clock(clock.clone())
        .on_event(|_: &Event| panic!("a hook with a bug"))
        .build()
        .unwrap();
    let first = generator.next_id();
    clock.rewind(Duration::from_millis(3));
    let second = generator.next_id(); // continues in the tick; the hook panics
    assert!(second > first);
    assert_eq!(generator.stats(), None, "a hook alone turns no counting on");
}

#[cfg(feature = "tracing")]
mod tracing_hook {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use flakeid::events::Tracing;
    use flakeid::{Generator, Layout, ManualClock};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Level, Metadata, Subscriber};

    /// Keeps each event's level, target and message.
    #[derive(Default, Clone)]
    struct Keep(Arc<Mutex<Vec<(Level, String, String)>>>);

    struct Message(String);

    impl Visit for Message {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }

    impl Subscriber for Keep {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut message = Message(String::new());
            event.record(&mut message);
            let meta = event.metadata();
            self.0
                .lock()
                .unwrap()
                .push((*meta.level(), meta.target().to_owned(), message.0));
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn a_clock_behind_is_a_warning_with_target_flakeid() {
        let keep = Keep::default();
        let clock = ManualClock::new(super::T0);
        let generator = Generator::builder(Layout::twitter())
            .node_id(1)
            .clock(clock.clone())
            .on_event(Tracing)
            .build()
            .unwrap();
        tracing::subscriber::with_default(keep.clone(), || {
            generator.next_id();
            clock.rewind(Duration::from_millis(7));
            generator.next_id();
        });
        assert_eq!(
            keep.0.lock().unwrap()[..],
            [(
                Level::WARN,
                "flakeid".to_owned(),
                "clock read 7ms behind".to_owned()
            )]
        );
    }
}

#[cfg(feature = "metrics")]
mod metrics_hook {
    use std::time::Duration;

    use flakeid::events::Metrics;
    use flakeid::{Generator, Layout, ManualClock};
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    #[test]
    fn a_clock_behind_counts_and_records_how_far() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let clock = ManualClock::new(super::T0);
        let generator = Generator::builder(Layout::twitter())
            .node_id(1)
            .clock(clock.clone())
            .on_event(Metrics)
            .build()
            .unwrap();
        metrics::with_local_recorder(&recorder, || {
            generator.next_id();
            clock.rewind(Duration::from_millis(250));
            generator.next_id();
        });
        let mut counted = None;
        let mut recorded = Vec::new();
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let key = key.key();
            match (key.name(), value) {
                ("flakeid_events_total", DebugValue::Counter(n)) => {
                    let label: Vec<_> = key.labels().map(|l| (l.key(), l.value())).collect();
                    assert_eq!(label, [("event", "clock_behind")]);
                    counted = Some(n);
                }
                ("flakeid_clock_behind_seconds", DebugValue::Histogram(values)) => {
                    recorded = values.into_iter().map(|v| v.into_inner()).collect();
                }
                (name, _) => panic!("unexpected metric {name}"),
            }
        }
        assert_eq!(counted, Some(1));
        assert_eq!(recorded, [0.25]);
    }
}
