//! Fault tests with real processes: a child generates IDs and streams them to
//! the parent, which SIGKILLs it at random points and restarts it with its
//! wall clock shifted back by up to 10 s. The union of everything every child
//! printed must hold no duplicate.
//!
//! The child is this test binary run again with `FLAKEID_CRASH_CHILD` set
//! (the ignored `child` test is its entry point). Kills per scenario default
//! to 50; the full run is `FLAKEID_CRASH_KILLS=500 cargo test --release --test
//! restart_crash`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flakeid::{
    Clock, Generator, Layout, MonotonicClock, OnClockBehind, OnExhausted, Persist, RestartRule,
    SystemClock,
};

const CHILD_ENV: &str = "FLAKEID_CRASH_CHILD";

/// The wall clock, set back by a fixed offset: what the child sees after an
/// operator (or NTP, or a VM migration) stepped the clock back.
struct SteppedBack {
    by_ms: u64,
}

impl Clock for SteppedBack {
    fn now_ms(&self) -> u64 {
        SystemClock.now_ms() - self.by_ms
    }
}

fn twitter_like() -> Layout {
    Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .node("worker", 10)
        .sequence(12)
        .build()
        .unwrap()
}

/// 41 ms + 2-bit clock id + 8 machine + 12 sequence: only four clock ids, so
/// restarts come round to used ones quickly.
fn multi_clock() -> Layout {
    Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .clock_id(2)
        .node("machine", 8)
        .sequence(12)
        .build()
        .unwrap()
}

#[test]
#[ignore = "entry point of the child process that the crash tests start and kill"]
fn child() {
    let Ok(config) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut words = config.split(' ');
    let (scenario, path, back_ms) = (
        words.next().unwrap(),
        PathBuf::from(words.next().unwrap()),
        words.next().unwrap().parse::<u64>().unwrap(),
    );
    let clock = MonotonicClock::with_wall(SteppedBack { by_ms: back_ms });
    // Windows shorter than a child's life (40-200 ms): every crash forfeits up
    // to one window of timestamps, so children killed faster than the window
    // would push the mark ever further ahead of the clock until, past the
    // Borrow allowance, they could only wait (README, restart safety limits).
    let builder = match scenario {
        "borrow" => Generator::builder(twitter_like())
            .node_id(5)
            .on_exhausted(OnExhausted::Borrow {
                max_ahead: Duration::from_secs(15),
            })
            .persist(Persist::file(&path).window(Duration::from_millis(50))),
        "next-clock" => Generator::builder(multi_clock())
            .node_id(5)
            .on_clock_behind(OnClockBehind::NextClock)
            .persist(
                Persist::file(&path)
                    .window(Duration::from_millis(50))
                    .restart_rule(RestartRule::NextClockId),
            ),
        "write" => Generator::builder(twitter_like())
            .node_id(5)
            .on_exhausted(OnExhausted::Borrow {
                max_ahead: Duration::from_secs(15),
            })
            .persist(Persist::file(&path).window(Duration::from_millis(1))),
        other => panic!("unknown scenario {other}"),
    };
    let generator = builder.clock(clock).build().unwrap();
    let mut out = std::io::stdout().lock();
    loop {
        // One line per ID, written as it is made: what the parent reads was
        // really handed out before the kill.
        for id in generator.next_ids(64) {
            writeln!(out, "{id}").unwrap();
        }
    }
}

/// A small xorshift generator, seeded from the time (and printed, so a
/// failing run can be repeated with `FLAKEID_CRASH_SEED`).
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::env::var("FLAKEID_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        eprintln!("crash test seed {seed}");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn kills() -> usize {
    std::env::var("FLAKEID_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50)
}

struct Outcome {
    ids: Vec<u64>,
    kills_during_a_write: usize,
    children_with_ids: usize,
}

fn crash_repeatedly(scenario: &str, dir: &Path) -> Outcome {
    let path = dir.join("node.state");
    let tmp = dir.join("node.state.tmp");
    let mut rng = Rng::new();
    let mut ids = Vec::new();
    let mut kills_during_a_write = 0;
    let mut children_with_ids = 0;
    for _ in 0..kills() {
        let back_ms = rng.below(10_001);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                CHILD_ENV,
                format!("{scenario} {} {back_ms}", path.display()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| line.trim().parse::<u64>().ok())
                .collect::<Vec<u64>>()
        });
        // Let it start (and calibrate its clock), then kill it at a random point.
        std::thread::sleep(Duration::from_millis(40 + rng.below(160)));
        child.kill().unwrap();
        child.wait().unwrap();
        if tmp.exists() {
            kills_during_a_write += 1;
        }
        let mine = reader.join().unwrap();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "a child printed IDs out of order"
        );
        if !mine.is_empty() {
            children_with_ids += 1;
        }
        ids.extend(mine);
    }
    Outcome {
        ids,
        kills_during_a_write,
        children_with_ids,
    }
}

fn assert_unique(mut ids: Vec<u64>) -> usize {
    let n = ids.len();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        panic!("id {} was issued twice", w[0]);
    }
    n
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-crash-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn killed_and_restarted_with_the_clock_set_back_it_never_reissues_high_water_mark() {
    let dir = temp_dir("borrow");
    let outcome = crash_repeatedly("borrow", &dir);
    let n = assert_unique(outcome.ids);
    eprintln!(
        "borrow: {} kills, {} children printed IDs, {n} IDs, no duplicate",
        kills(),
        outcome.children_with_ids
    );
    assert!(
        outcome.children_with_ids * 2 >= kills(),
        "too few children got to issue IDs"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn killed_and_restarted_with_the_clock_set_back_it_never_reissues_next_clock_id() {
    let dir = temp_dir("next-clock");
    let outcome = crash_repeatedly("next-clock", &dir);
    let n = assert_unique(outcome.ids);
    eprintln!(
        "next-clock: {} kills, {} children printed IDs, {n} IDs, no duplicate",
        kills(),
        outcome.children_with_ids
    );
    // With four clock ids and the clock set back by up to 10 s, a restart
    // often lands on a clock id whose old mark is still ahead of its clock and
    // must wait (correctly); enough children still issue to make this count.
    assert!(
        outcome.children_with_ids * 10 >= kills(),
        "too few children got to issue IDs"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn killed_during_reservation_writes_it_never_reissues() {
    let dir = temp_dir("write");
    let outcome = crash_repeatedly("write", &dir);
    let n = assert_unique(outcome.ids);
    eprintln!(
        "write: {} kills, {} landed during a write, {n} IDs, no duplicate",
        kills(),
        outcome.kills_during_a_write
    );
    // With a 1 ms window the child writes much of the time (about a third of
    // kills landed inside a write when this was written).
    assert!(
        outcome.kills_during_a_write >= 3,
        "only {} of {} kills landed during a write",
        outcome.kills_during_a_write,
        kills()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
