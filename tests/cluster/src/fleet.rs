//! The generator processes of a run ([`Fleet`]): started, watched through
//! the lines they print ([`View`]), stopped (SIGSTOP) and resumed by the
//! nemesis, asked to stop, and killed if they do not.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use flakeid_test_servers::signal;

use crate::record::{Line, What, events_path, ids_path, stderr_path};
use crate::worker::{Args, Store};

/// How long a worker asked to stop may take to exit (drop its generator,
/// release its node id) before it is killed and counted as hung. Release
/// takes one request timeout at most (a third of the TTL); this is far
/// more, so that only a worker that hangs is killed.
pub const STOP_WITHIN: Duration = Duration::from_secs(60);

/// One extension of a worker's lease, as its line said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extension {
    pub node: u64,
    pub claim: bool,
    pub sent_ns: u64,
    pub arrived_ns: u64,
}

/// What the runner knows of a worker, from its lines.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub index: usize,
    pub plant: String,
    pub skew_ms: i64,
    pub built: bool,
    /// The node id it issues under (or last did).
    pub node: Option<u64>,
    pub fenced: bool,
    pub paused: bool,
    pub stopped: bool,
    pub exited: bool,
    pub build_failures: u64,
    /// From its last progress line.
    pub ids: u64,
    pub last_ms: u64,
    /// CLOCK_MONOTONIC of its last progress line with more IDs than the
    /// one before.
    pub last_issued_ns: u64,
    /// Its lease's extensions so far.
    pub extensions: Vec<Extension>,
    /// Its lease's events (their text) so far.
    pub lease_events: Vec<(u64, String)>,
}

impl View {
    /// Built, not fenced, not paused, not stopped, not gone.
    pub fn issuing(&self) -> bool {
        self.built && !self.fenced && !self.paused && !self.stopped && !self.exited
    }
}

struct Proc {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    reader: Option<JoinHandle<()>>,
    events: Arc<Mutex<BufWriter<File>>>,
    /// When it was asked to stop.
    stop_asked: Option<Instant>,
}

/// The generator processes of a run. Dropped: every process still
/// running is resumed and killed.
pub struct Fleet {
    dir: PathBuf,
    exe: PathBuf,
    procs: Vec<Proc>,
    views: Arc<(Mutex<Vec<View>>, Condvar)>,
}

/// How to start one worker.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    pub store: Store,
    pub prefix: String,
    pub ttl: Duration,
    /// The lease's safety margin (`None`: the library's default).
    pub margin: Option<Duration>,
    /// Its life from its build.
    pub run_for: Duration,
    /// A planted bug's name, or `none`.
    pub plant: String,
    pub skew_ms: i64,
    pub nodes: RangeInclusive<u64>,
}

/// libfaketime, as Debian installs it (package libfaketime).
fn libfaketime() -> Option<PathBuf> {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/faketime/libfaketimeMT.so.1",
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    ];
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

impl Fleet {
    /// A fleet whose workers run `exe` and keep their records in `dir`.
    pub fn new(dir: &Path, exe: &Path) -> Fleet {
        std::fs::create_dir_all(dir).unwrap();
        Fleet {
            dir: dir.to_owned(),
            exe: exe.to_owned(),
            procs: Vec::new(),
            views: Arc::new((Mutex::new(Vec::new()), Condvar::new())),
        }
    }

    /// Starts a worker; returns its index.
    ///
    /// # Panics
    ///
    /// If a skewed clock is asked for and libfaketime is not installed.
    pub fn spawn(&mut self, spec: &WorkerSpec) -> usize {
        let index = self.procs.len();
        let args = Args {
            store: spec.store.clone(),
            prefix: spec.prefix.clone(),
            ttl: spec.ttl,
            margin: spec.margin,
            run_for: spec.run_for,
            ids: ids_path(&self.dir, index),
            plant: spec.plant.clone(),
            skew_ms: spec.skew_ms,
            per_ms: 2,
            nodes: spec.nodes.clone(),
        };
        let mut command = Command::new(&self.exe);
        command
            .args(args.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(stderr_path(&self.dir, index)).unwrap());
        if spec.skew_ms != 0 {
            let lib = libfaketime().expect(
                "a skewed clock needs libfaketime (Debian: faketime, libfaketime; .ci/test \
                 installs them)",
            );
            command
                .env("LD_PRELOAD", lib)
                .env("FAKETIME", format!("{:+}s", spec.skew_ms as f64 / 1000.0))
                // One monotonic time line for every process.
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
                .env("FAKETIME_NO_CACHE", "1");
        }
        let mut child = command.spawn().unwrap_or_else(|e| {
            panic!("cannot start {}: {e}", self.exe.display());
        });
        let events = Arc::new(Mutex::new(BufWriter::new(
            File::create(events_path(&self.dir, index)).unwrap(),
        )));
        {
            let (views, _) = &*self.views;
            views.lock().unwrap().push(View {
                index,
                plant: spec.plant.clone(),
                skew_ms: spec.skew_ms,
                ..View::default()
            });
        }
        let stdout = child.stdout.take().unwrap();
        let reader = {
            let (views, events) = (self.views.clone(), events.clone());
            thread::spawn(move || {
                for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                    // Anything else on stdout (nothing an honest worker
                    // prints) is kept as it is, for the checker to find.
                    let Some(line) = Line::parse(&text) else {
                        let _ = writeln!(events.lock().unwrap(), "{text}");
                        continue;
                    };
                    let _ = writeln!(events.lock().unwrap(), "{line}");
                    let (lock, changed) = &*views;
                    let mut all = lock.lock().unwrap();
                    see(&mut all[index], &line);
                    changed.notify_all();
                }
            })
        };
        self.procs.push(Proc {
            stdin: child.stdin.take(),
            child: Some(child),
            reader: Some(reader),
            events,
            stop_asked: None,
        });
        index
    }

    fn note(&self, index: usize, what: What) {
        let _ = writeln!(
            self.procs[index].events.lock().unwrap(),
            "{}",
            Line::now(what)
        );
    }

    /// Reaps the workers that exited, and kills those asked to stop more
    /// than [`STOP_WITHIN`] ago; returns how many exited.
    pub fn reap(&mut self) -> usize {
        let mut reaped = 0;
        for index in 0..self.procs.len() {
            let overdue = self.procs[index]
                .stop_asked
                .is_some_and(|at| at.elapsed() > STOP_WITHIN);
            if overdue && let Some(child) = &mut self.procs[index].child {
                signal(child.id(), libc::SIGCONT);
                let _ = child.kill();
                self.note(index, What::Killed);
                self.procs[index].stop_asked = None;
            }
            let status = match self.procs[index].child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => status,
                _ => continue,
            };
            self.procs[index].child = None;
            if let Some(reader) = self.procs[index].reader.take() {
                let _ = reader.join();
            }
            self.note(
                index,
                What::Exit {
                    status: status.to_string(),
                },
            );
            let _ = self.procs[index].events.lock().unwrap().flush();
            self.update(index, |v| v.exited = true);
            reaped += 1;
        }
        reaped
    }

    fn update(&self, index: usize, f: impl FnOnce(&mut View)) {
        let (lock, changed) = &*self.views;
        f(&mut lock.lock().unwrap()[index]);
        changed.notify_all();
    }

    pub fn views(&self) -> Vec<View> {
        self.views.0.lock().unwrap().clone()
    }

    /// Waits (up to `within`) until `done` holds for the views; false if it
    /// did not. Wakes on every line a worker prints.
    pub fn wait_for(&mut self, within: Duration, mut done: impl FnMut(&[View]) -> bool) -> bool {
        let until = Instant::now() + within;
        loop {
            self.reap();
            {
                let (lock, changed) = &*self.views;
                let all = lock.lock().unwrap();
                if done(&all) {
                    return true;
                }
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                let _ = changed
                    .wait_timeout(all, left.min(Duration::from_millis(200)))
                    .unwrap();
            }
        }
    }

    /// SIGSTOP.
    pub fn pause(&mut self, index: usize) {
        if let Some(child) = &self.procs[index].child {
            signal(child.id(), libc::SIGSTOP);
            self.note(index, What::Paused);
            self.update(index, |v| v.paused = true);
        }
    }

    /// SIGCONT.
    pub fn resume(&mut self, index: usize) {
        if let Some(child) = &self.procs[index].child {
            signal(child.id(), libc::SIGCONT);
            self.note(index, What::Resumed);
            self.update(index, |v| v.paused = false);
        }
    }

    /// Asks a worker to stop (closes its stdin): it drops its generator,
    /// releasing the node id, and exits. Resumed first if paused.
    pub fn stop(&mut self, index: usize) {
        if self.procs[index].child.is_none() || self.procs[index].stdin.is_none() {
            return;
        }
        if self.views()[index].paused {
            self.resume(index);
        }
        self.note(index, What::Stopped);
        self.procs[index].stdin = None;
        self.procs[index].stop_asked = Some(Instant::now());
        self.update(index, |v| v.stopped = true);
    }

    /// Workers not yet exited.
    pub fn running(&self) -> usize {
        self.procs.iter().filter(|p| p.child.is_some()).count()
    }

    /// Stops every worker and waits for them to exit (killing those that
    /// take more than [`STOP_WITHIN`]).
    pub fn stop_all(&mut self) {
        for index in 0..self.procs.len() {
            self.stop(index);
        }
        while self.running() > 0 {
            self.reap();
            thread::sleep(Duration::from_millis(50));
        }
        self.flush();
    }

    fn flush(&mut self) {
        for p in &mut self.procs {
            let _ = p.events.lock().unwrap().flush();
        }
    }

    fn kill_all(&mut self) {
        for index in 0..self.procs.len() {
            if let Some(child) = &mut self.procs[index].child {
                signal(child.id(), libc::SIGCONT);
                let _ = child.kill();
                self.note(index, What::Killed);
            }
        }
        self.reap();
        for p in &mut self.procs {
            if let Some(mut child) = p.child.take() {
                let _ = child.wait();
            }
        }
        self.flush();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// A worker's line, into what the runner knows of it.
fn see(v: &mut View, line: &Line) {
    match &line.what {
        What::Built { node } => {
            v.built = true;
            v.node = Some(*node);
        }
        What::BuildFailed { .. } => v.build_failures += 1,
        What::Fenced { .. } => v.fenced = true,
        What::Issuing { node } => {
            v.fenced = false;
            v.node = Some(*node);
        }
        What::Extended {
            node,
            claim,
            sent_ns,
            arrived_ns,
        } => v.extensions.push(Extension {
            node: *node,
            claim: *claim,
            sent_ns: *sent_ns,
            arrived_ns: *arrived_ns,
        }),
        What::Lease { event } => v.lease_events.push((line.mono_ns, event.clone())),
        What::Progress { ids, last_ms, .. } => {
            if *ids > v.ids {
                v.last_issued_ns = line.mono_ns;
            }
            v.ids = *ids;
            v.last_ms = *last_ms;
        }
        _ => {}
    }
}
