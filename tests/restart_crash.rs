//! Fault tests with real processes: a child generates IDs and streams them to
//! the parent, which kills it and restarts it with its wall clock shifted back
//! by up to 10 s. The union of everything every child printed must hold no
//! duplicate.
//!
//! Children end in turn three ways:
//! - **At the crash point.** On a save the parent chose (the first is the
//!   build's), the child's store writes part of the new state to
//!   `<path>.tmp`, which is what `FileStore` leaves when a crash comes between
//!   writing its temporary file and renaming it over the state. The store
//!   then says so on stderr and blocks, and the parent SIGKILLs the child.
//!   Every such crash happens mid-write, whatever the machine's speed.
//! - **After its first ID.** The parent waits for the child's first ID and
//!   kills it after a random further delay. This child follows a crash-point
//!   child, so it starts from that crash's leftovers. A child that has printed
//!   nothing after [`STUCK`] fails the test: an ID may legitimately wait for a
//!   clock set back by up to 10 s, but not for a minute.
//! - **At a random moment** up to 200 ms after spawn: during start-up,
//!   during the first save, or while the child issues IDs. Only uniqueness is
//!   asserted of these.
//!
//! No assertion depends on how quickly a child gets scheduled: the parent
//! waits for the event itself, and real time is only a failure-only timeout.
//!
//! The child is this test binary run again with `FLAKEID_CRASH_CHILD` set
//! (the ignored `child` test is its entry point). Kills per scenario default
//! to 50; the full run is `FLAKEID_CRASH_KILLS=500 cargo test --release --test
//! restart_crash`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flakeid::{
    Clock, FileStore, Generator, Layout, MonotonicClock, OnClockBehind, OnExhausted, Persist,
    RestartRule, StateError, StateStore, SystemClock,
};
use flakeid_test_servers::{Rng, ScratchDir};

const CHILD_ENV: &str = "FLAKEID_CRASH_CHILD";

/// What a child prints on stderr when it reaches its crash point.
const CRASH_POINT: &str = "flakeid-crash-point";

/// How long the parent waits for a child's first ID or crash point before
/// it calls the child stuck. This is generous: a child waits at most about
/// 10 s for its clock.
const STUCK: Duration = Duration::from_secs(60);

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

/// A `FileStore` that crashes within one chosen save: it writes part of the
/// new state to the temporary file (where `FileStore` writes it before the
/// rename) and never returns, leaving the process to be killed there.
struct CrashingStore {
    inner: FileStore,
    /// `<path>.tmp`, as `FileStore` names it.
    tmp: PathBuf,
    saves: u64,
    crash_at: u64,
    /// How much of the new state reaches the temporary file, in thousandths.
    cut_permille: usize,
}

impl StateStore for CrashingStore {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        self.inner.load()
    }

    fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
        self.saves += 1;
        if self.saves == self.crash_at {
            let cut = state.len() * self.cut_permille / 1000;
            std::fs::write(&self.tmp, &state[..cut]).expect("write the temporary file");
            eprintln!("{CRASH_POINT}");
            loop {
                std::thread::park();
            }
        }
        self.inner.save(state)
    }
}

/// The child's settings, passed in [`CHILD_ENV`] with the path last (it may
/// contain spaces).
struct ChildConfig<'a> {
    scenario: &'a str,
    back_ms: u64,
    /// The save to crash in (1 is the build's); 0 for none.
    crash_at: u64,
    cut_permille: u64,
    path: &'a Path,
}

impl ChildConfig<'_> {
    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.scenario,
            self.back_ms,
            self.crash_at,
            self.cut_permille,
            self.path.display()
        )
    }
}

#[test]
#[ignore = "entry point of the child process that the crash tests start and kill"]
fn child() {
    let Ok(config) = std::env::var(CHILD_ENV) else {
        return;
    };
    let words: Vec<&str> = config.splitn(5, ' ').collect();
    let [scenario, back_ms, crash_at, cut_permille, path] = words[..] else {
        panic!("bad child config {config:?}");
    };
    let (back_ms, crash_at): (u64, u64) = (back_ms.parse().unwrap(), crash_at.parse().unwrap());
    let path = PathBuf::from(path);
    let persist = if crash_at == 0 {
        Persist::file(&path)
    } else {
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        Persist::store(CrashingStore {
            inner: FileStore::open(&path).unwrap(),
            tmp: tmp.into(),
            saves: 0,
            crash_at,
            cut_permille: cut_permille.parse().unwrap(),
        })
    };
    let clock = MonotonicClock::with_wall(SteppedBack { by_ms: back_ms });
    // Windows shorter than a child's life: every crash forfeits up to one
    // window of timestamps, so children killed faster than the window would
    // push the mark ever further ahead of the clock until, past the Borrow
    // allowance, they could only wait (README, restart safety limits).
    let builder = match scenario {
        "borrow" => Generator::builder(twitter_like())
            .node_id(5)
            .on_exhausted(OnExhausted::Borrow {
                max_ahead: Duration::from_secs(15),
            })
            .persist(persist.window(Duration::from_millis(50))),
        "next-clock" => Generator::builder(multi_clock())
            .node_id(5)
            .on_clock_behind(OnClockBehind::NextClock)
            .persist(
                persist
                    .window(Duration::from_millis(50))
                    .restart_rule(RestartRule::NextClockId),
            ),
        "write" => Generator::builder(twitter_like())
            .node_id(5)
            .on_exhausted(OnExhausted::Borrow {
                max_ahead: Duration::from_secs(15),
            })
            .persist(persist.window(Duration::from_millis(1))),
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

fn kills() -> usize {
    std::env::var("FLAKEID_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50)
}

/// What the parent waits for before it kills a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    FirstId,
    CrashPoint,
}

/// A running child and the threads reading its output. It is killed when
/// dropped, so a failing assertion leaves no child behind.
struct Child {
    process: std::process::Child,
    events: Receiver<Event>,
    ids: Option<JoinHandle<Vec<u64>>>,
    stderr: Option<JoinHandle<String>>,
}

impl Child {
    fn spawn(config: &ChildConfig<'_>) -> Child {
        let mut process = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, config.encode())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (first_id, events) = mpsc::channel();
        let crash_point = first_id.clone();
        let stdout = process.stdout.take().unwrap();
        let ids = std::thread::spawn(move || {
            let mut ids = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // libtest's own lines are not numbers.
                if let Ok(id) = line.trim().parse::<u64>() {
                    if ids.is_empty() {
                        let _ = first_id.send(Event::FirstId);
                    }
                    ids.push(id);
                }
            }
            ids
        });
        let stderr = process.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line == CRASH_POINT {
                    let _ = crash_point.send(Event::CrashPoint);
                }
                text.push_str(&line);
                text.push('\n');
            }
            text
        });
        Child {
            process,
            events,
            ids: Some(ids),
            stderr: Some(stderr),
        }
    }

    /// Waits for `event`, or fails the test if the child ends or is stuck
    /// (nothing within [`STUCK`]) first.
    fn wait_for(&mut self, event: Event) {
        let deadline = Instant::now() + STUCK;
        let missing = loop {
            match self
                .events
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(e) if e == event => return,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => break "is stuck",
                Err(mpsc::RecvTimeoutError::Disconnected) => break "ended",
            }
        };
        let ended = self.process.try_wait().unwrap();
        let (_, stderr) = self.kill();
        panic!("a child {missing} before {event:?} (exit status {ended:?}); its stderr:\n{stderr}");
    }

    /// Kills the child and returns its IDs and its stderr. Fails the test if
    /// the child had ended on its own (it never should).
    fn kill(&mut self) -> (Vec<u64>, String) {
        let ended = self.process.try_wait().unwrap();
        let _ = self.process.kill();
        self.process.wait().unwrap();
        let ids = self.ids.take().unwrap().join().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        if let Some(status) = ended {
            panic!("a child ended before it was killed ({status}); its stderr:\n{stderr}");
        }
        (ids, stderr)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// How the parent ends one child.
#[derive(Debug, Clone, Copy)]
enum End {
    /// The child's store crashes within save number `save`.
    CrashPoint { save: u64, cut_permille: u64 },
    /// Killed `extra_ms` after the first ID arrived.
    AfterFirstId { extra_ms: u64 },
    /// Killed `after_ms` after spawn, whatever it was doing.
    Random { after_ms: u64 },
}

struct Outcome {
    ids: Vec<u64>,
    /// Children killed within a save, after its temporary file was written.
    crashes_mid_write: usize,
    /// Children that had to issue (each did, or the test failed).
    issued_after_a_crash: usize,
    /// The longest a child that had to issue took to (informational).
    longest_wait: Duration,
    /// Random kills that left a temporary file (landed in a write, or came
    /// before the child's first save replaced a crash-point child's).
    random_kills_leaving_tmp: usize,
}

fn crash_repeatedly(scenario: &str, dir: &Path) -> Outcome {
    let path = dir.join("node.state");
    let tmp = dir.join("node.state.tmp");
    let mut rng = Rng::from_env_or_time("FLAKEID_CRASH_SEED");
    let mut outcome = Outcome {
        ids: Vec::new(),
        crashes_mid_write: 0,
        issued_after_a_crash: 0,
        longest_wait: Duration::ZERO,
        random_kills_leaving_tmp: 0,
    };
    for i in 0..kills() {
        let end = match i % 3 {
            0 => End::CrashPoint {
                save: 1 + rng.below(4),
                // Half of them the whole state (a crash after the fsync and
                // before the rename), half of them a part of it.
                cut_permille: if rng.below(2) == 0 {
                    1000
                } else {
                    rng.below(1000)
                },
            },
            1 => End::AfterFirstId {
                extra_ms: rng.below(101),
            },
            _ => End::Random {
                after_ms: rng.below(201),
            },
        };
        let (crash_at, cut_permille) = match end {
            End::CrashPoint { save, cut_permille } => (save, cut_permille),
            _ => (0, 0),
        };
        let spawned = Instant::now();
        let mut child = Child::spawn(&ChildConfig {
            scenario,
            back_ms: rng.below(10_001),
            crash_at,
            cut_permille,
            path: &path,
        });
        match end {
            End::CrashPoint { .. } => child.wait_for(Event::CrashPoint),
            End::AfterFirstId { extra_ms } => {
                child.wait_for(Event::FirstId);
                outcome.longest_wait = outcome.longest_wait.max(spawned.elapsed());
                std::thread::sleep(Duration::from_millis(extra_ms));
            }
            End::Random { after_ms } => std::thread::sleep(Duration::from_millis(after_ms)),
        }
        let (mine, _) = child.kill();
        match end {
            End::CrashPoint { .. } => {
                assert!(tmp.exists(), "the crash left no temporary file");
                outcome.crashes_mid_write += 1;
            }
            End::AfterFirstId { .. } => outcome.issued_after_a_crash += 1,
            End::Random { .. } => outcome.random_kills_leaving_tmp += usize::from(tmp.exists()),
        }
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "a child printed IDs out of order"
        );
        outcome.ids.extend(mine);
    }
    eprintln!(
        "{scenario}: {} kills: {} crashes mid-write, {} children issued after one \
         (the slowest after {:?}), {} random kills left a temporary file",
        kills(),
        outcome.crashes_mid_write,
        outcome.issued_after_a_crash,
        outcome.longest_wait,
        outcome.random_kills_leaving_tmp
    );
    outcome
}

fn assert_unique(mut ids: Vec<u64>) -> usize {
    let n = ids.len();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        panic!("id {} was issued twice", w[0]);
    }
    n
}

/// Runs a scenario: every ID unique, every crash mid-write, and every child
/// that had to issue after a crash did so.
fn run_scenario(name: &str) {
    let dir = ScratchDir::on_disk(&format!("crash-{name}"));
    let outcome = crash_repeatedly(name, dir.path());
    let n = assert_unique(outcome.ids);
    eprintln!("{name}: {n} IDs, no duplicate");
    assert_eq!(outcome.crashes_mid_write, kills().div_ceil(3));
    assert_eq!(outcome.issued_after_a_crash, (kills() + 1) / 3);
}

#[test]
fn killed_and_restarted_with_the_clock_set_back_it_never_reissues_high_water_mark() {
    run_scenario("borrow");
}

/// With four clock ids and the clock set back by up to 10 s, a restart often
/// lands on a clock id whose old mark is still ahead of its clock and must
/// wait for the clock (correctly, and never as long as [`STUCK`]).
#[test]
fn killed_and_restarted_with_the_clock_set_back_it_never_reissues_next_clock_id() {
    run_scenario("next-clock");
}

/// A 1 ms window: the child writes much of the time, so random kills land
/// inside writes too, besides the crash-point children's.
#[test]
fn killed_during_reservation_writes_it_never_reissues() {
    run_scenario("write");
}
