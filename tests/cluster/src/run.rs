//! The runner: a cluster ([`Cluster`]), generator processes ([`Fleet`]),
//! and the nemesis ([`run`]) that injects one fault at a time and waits for
//! the cluster and the generators to recover before the next.
//!
//! Fault durations are the nemesis's choice (it sleeps while a fault
//! holds); nothing here asserts on time. What the tests assert comes from
//! the checker, on the IDs, after the run.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use flakeid_test_servers::{
    EtcdCluster, Firewall, MASTER_NAME, Member, RedisSentinel, loopback_block, signal,
};

use crate::check::{Report, check, fault_lines};
use crate::record::{Fault, Line, What, events_path, faults_path, ids_path};
use crate::worker::{Args, Plant, Store};
use crate::{NODE_IDS, mono_ns};

/// Which store the leases live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// A 3-member etcd cluster; workers get all three endpoints.
    Etcd,
    /// A Redis primary, two replicas and three sentinels.
    Redis,
}

impl StoreKind {
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Etcd => "etcd",
            StoreKind::Redis => "redis",
        }
    }
}

/// Which Redis URL a worker's `Lease::redis` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisUrl {
    /// The primary's when the run started, for every worker (a lease
    /// configured once, as a deployment would).
    Initial,
    /// The primary's when the worker starts, as the sentinels name it.
    AtSpawn,
    /// The sentinels ([`Store::Sentinel`]): the worker's lease finds the
    /// primary through them.
    Sentinel,
}

/// Which member a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The etcd leader, the Redis primary.
    Leader,
    /// An etcd member that is not the leader, a Redis replica.
    Follower,
    /// A Redis sentinel.
    Sentinel,
}

/// What a fault does to a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// SIGSTOP, then SIGCONT.
    Pause,
    /// SIGKILL, then a restart on the same data.
    Kill,
    /// Every packet to and from it dropped, then let through.
    Isolate,
}

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Member(Action, Role),
    /// A generator process stopped (SIGSTOP) for longer than its TTL.
    PauseGenerator,
    /// A generator process with its wall clock skewed replaces a running one
    /// (which stops cleanly, releasing its node id).
    SkewedGenerator,
}

impl FaultKind {
    pub fn name(self, store: StoreKind) -> String {
        match self {
            FaultKind::Member(action, role) => {
                let action = match action {
                    Action::Pause => "pause",
                    Action::Kill => "kill",
                    Action::Isolate => "isolate",
                };
                let role = match (store, role) {
                    (StoreKind::Etcd, Role::Leader) => "leader",
                    (StoreKind::Etcd, _) => "follower",
                    (StoreKind::Redis, Role::Leader) => "primary",
                    (StoreKind::Redis, Role::Follower) => "replica",
                    (StoreKind::Redis, Role::Sentinel) => "sentinel",
                };
                format!("{action} {role}")
            }
            FaultKind::PauseGenerator => "pause generator".into(),
            FaultKind::SkewedGenerator => "skewed generator".into(),
        }
    }

    /// Every kind for `store`: each action on the leader and a follower
    /// (and, on Redis, a sentinel), and the two generator faults.
    pub fn all(store: StoreKind) -> Vec<FaultKind> {
        let mut roles = vec![Role::Leader, Role::Follower];
        if store == StoreKind::Redis {
            roles.push(Role::Sentinel);
        }
        let mut kinds = Vec::new();
        for role in roles {
            for action in [Action::Pause, Action::Kill, Action::Isolate] {
                kinds.push(FaultKind::Member(action, role));
            }
        }
        kinds.push(FaultKind::PauseGenerator);
        kinds.push(FaultKind::SkewedGenerator);
        kinds
    }
}

/// A run's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    pub store: StoreKind,
    pub redis_url: RedisUrl,
    /// Worker processes alive at once (more than the node ids, so one
    /// waits and takes a node id as soon as it is free).
    pub workers: usize,
    pub ttl: Duration,
    /// Each worker lives a random time in this range, then is replaced.
    pub lifetime: (Duration, Duration),
    /// Every `skew_every`-th worker started has its clock skewed by
    /// `skew`, alternately ahead and behind (0: none).
    pub skew_every: usize,
    pub skew: Duration,
    /// Injected in turn (each round of them shuffled) until at least
    /// `faults` were and at least `duration` passed, but no longer than
    /// `max_duration` (each fault is bounded in time, so a run is too).
    pub kinds: Vec<FaultKind>,
    pub faults: usize,
    pub duration: Duration,
    pub max_duration: Duration,
    pub pause_for: Duration,
    pub kill_for: Duration,
    pub isolate_for: Duration,
    /// A generator process's stop: longer than the TTL.
    pub generator_pause_for: Duration,
    /// Quiet time between the recovery from one fault and the next fault.
    pub gap: Duration,
    /// How long to wait, after a fault, for every generator to issue again
    /// before going on anyway.
    pub recover_within: Duration,
    pub seed: u64,
    /// The `fault-worker` binary.
    pub worker_exe: PathBuf,
    /// Where the run's records go (created; kept).
    pub dir: PathBuf,
    /// Prints each fault as it is injected.
    pub verbose: bool,
    /// Starts etcd with `--pre-vote` (off by default in etcd 3.4): a member
    /// cut off then does not disrupt the leader when it comes back.
    pub etcd_pre_vote: bool,
}

impl Config {
    /// The short run of CI: each kind of fault once on the leader and
    /// once on a follower, or so, in about a minute and a half (at most
    /// two and a half).
    pub fn short(store: StoreKind, worker_exe: PathBuf, dir: PathBuf) -> Config {
        let kinds = vec![
            FaultKind::Member(Action::Pause, Role::Leader),
            FaultKind::Member(Action::Kill, Role::Leader),
            FaultKind::Member(Action::Isolate, Role::Leader),
            FaultKind::PauseGenerator,
            FaultKind::Member(Action::Pause, Role::Follower),
            FaultKind::Member(Action::Kill, Role::Follower),
            FaultKind::Member(Action::Isolate, Role::Follower),
            FaultKind::SkewedGenerator,
        ];
        Config {
            store,
            redis_url: RedisUrl::Sentinel,
            workers: 5,
            ttl: Duration::from_secs(3),
            lifetime: (Duration::from_secs(15), Duration::from_secs(40)),
            skew_every: 4,
            skew: Duration::from_millis(1_500),
            faults: kinds.len(),
            kinds,
            duration: Duration::ZERO,
            max_duration: Duration::from_secs(150),
            pause_for: Duration::from_secs(4),
            kill_for: Duration::from_secs(3),
            isolate_for: Duration::from_secs(4),
            generator_pause_for: Duration::from_millis(4_500),
            gap: Duration::from_millis(500),
            recover_within: Duration::from_secs(8),
            seed: 1,
            worker_exe,
            dir,
            verbose: false,
            etcd_pre_vote: false,
        }
    }

    /// The long run: every kind, on every role, with the issue's
    /// durations (a 6 s pause, 4 s down, 8 s cut off), at least 200 faults
    /// and 30 minutes.
    pub fn long(store: StoreKind, worker_exe: PathBuf, dir: PathBuf) -> Config {
        Config {
            kinds: FaultKind::all(store),
            faults: 200,
            duration: Duration::from_secs(30 * 60),
            max_duration: Duration::from_secs(60 * 60),
            lifetime: (Duration::from_secs(20), Duration::from_secs(90)),
            pause_for: Duration::from_secs(6),
            kill_for: Duration::from_secs(4),
            isolate_for: Duration::from_secs(8),
            generator_pause_for: Duration::from_secs(5),
            gap: Duration::from_secs(1),
            recover_within: Duration::from_secs(10),
            verbose: true,
            ..Config::short(store, worker_exe, dir)
        }
    }
}

/// A small, seeded generator (xorshift64*): runs repeat with a seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn between(&mut self, (a, b): (Duration, Duration)) -> Duration {
        let span = b.saturating_sub(a).as_millis() as u64;
        a + Duration::from_millis(self.next_u64() % (span + 1))
    }
}

// --- the cluster -----------------------------------------------------------

/// An etcd cluster or Redis with Sentinel, and the firewall that isolates
/// its members. Dropped: members killed, then the firewall's rules
/// removed.
pub struct Cluster {
    pub store: StoreKind,
    etcd: Option<EtcdCluster>,
    redis: Option<RedisSentinel>,
    pub firewall: Firewall,
    /// Redis: the primary when the run started.
    pub initial_primary: usize,
}

impl Cluster {
    /// Starts the store's cluster on loopback addresses of this run's own.
    pub fn start(store: StoreKind) -> Cluster {
        Cluster::start_with(store, false)
    }

    /// [`Cluster::start`], etcd with `--pre-vote` if asked.
    pub fn start_with(store: StoreKind, etcd_pre_vote: bool) -> Cluster {
        let addrs = loopback_block();
        let mut firewall = Firewall::install();
        for &a in &addrs {
            firewall.track(flakeid_test_servers::ident_of(a));
        }
        let (etcd, redis) = match store {
            StoreKind::Etcd => {
                let extra: &[&str] = if etcd_pre_vote { &["--pre-vote"] } else { &[] };
                (Some(EtcdCluster::start_with(&addrs, 3, extra)), None)
            }
            StoreKind::Redis => (None, Some(RedisSentinel::start(&addrs))),
        };
        let mut cluster = Cluster {
            store,
            etcd,
            redis,
            firewall,
            initial_primary: 0,
        };
        cluster.initial_primary = cluster.leader().unwrap_or(0);
        cluster
    }

    /// Every member: the etcd members; the Redis data nodes, then the
    /// sentinels.
    pub fn members(&self) -> Vec<&Member> {
        match (&self.etcd, &self.redis) {
            (Some(e), _) => e.members.iter().collect(),
            (_, Some(r)) => r.nodes.iter().chain(&r.sentinels).collect(),
            _ => Vec::new(),
        }
    }

    pub fn member_mut(&mut self, i: usize) -> &mut Member {
        if let Some(e) = &mut self.etcd {
            return &mut e.members[i];
        }
        let r = self.redis.as_mut().expect("a cluster has a store");
        let n = r.nodes.len();
        if i < n {
            &mut r.nodes[i]
        } else {
            &mut r.sentinels[i - n]
        }
    }

    /// The etcd leader, or the Redis primary the sentinels name, by member
    /// index.
    pub fn leader(&mut self) -> Option<usize> {
        match (&mut self.etcd, &self.redis) {
            (Some(e), _) => e.leader(),
            (_, Some(r)) => r.primary(),
            _ => None,
        }
    }

    /// The members in `role` now (the leader as last known if nobody is
    /// leader right now).
    pub fn in_role(&mut self, role: Role) -> Vec<usize> {
        let leader = self.leader();
        match (self.store, role) {
            (_, Role::Leader) => leader.into_iter().collect(),
            (StoreKind::Etcd, _) => (0..3).filter(|&i| Some(i) != leader).collect(),
            (StoreKind::Redis, role) => {
                let r = self.redis.as_ref().expect("Redis");
                match role {
                    Role::Follower => leader.map(|p| r.replicas_of(p)).unwrap_or_default(),
                    _ => (r.nodes.len()..r.nodes.len() + r.sentinels.len()).collect(),
                }
            }
        }
    }

    /// Whether the cluster is whole: every etcd member healthy under one
    /// leader; a Redis primary the sentinels agree on with both replicas in
    /// sync.
    pub fn healthy(&mut self) -> bool {
        match (&mut self.etcd, &mut self.redis) {
            (Some(e), _) => e.wait_healthy(Duration::ZERO),
            (_, Some(r)) => r.wait_healthy(Duration::ZERO),
            _ => false,
        }
    }

    /// What a worker's lease is given, now.
    pub fn store_for_worker(&mut self, redis_url: RedisUrl) -> Store {
        match self.store {
            StoreKind::Etcd => Store::Etcd(self.etcd.as_ref().unwrap().endpoints()),
            StoreKind::Redis => {
                let node = match redis_url {
                    RedisUrl::Initial => self.initial_primary,
                    RedisUrl::AtSpawn => self.leader().unwrap_or(self.initial_primary),
                    RedisUrl::Sentinel => return self.sentinel_store(),
                };
                Store::Redis(self.redis.as_ref().unwrap().url(node))
            }
        }
    }

    /// etcd's history of every key ([`EtcdCluster::history`]).
    pub fn etcd_history(&self) -> Option<String> {
        self.etcd.as_ref()?.history()
    }

    /// The etcd endpoint of member `i`.
    pub fn etcd_endpoint(&self, i: usize) -> String {
        self.etcd.as_ref().expect("an etcd cluster").endpoint(i)
    }

    /// The Redis URL of data node `i`.
    pub fn redis_url(&self, i: usize) -> String {
        self.redis.as_ref().expect("Redis").url(i)
    }

    /// The sentinels, for a lease that follows them.
    pub fn sentinel_store(&self) -> Store {
        let r = self.redis.as_ref().expect("Redis");
        Store::Sentinel(r.sentinel_addrs(), MASTER_NAME.into())
    }

    /// Isolates member `i` (all its traffic, both ways).
    pub fn isolate(&mut self, i: usize) {
        let (addr, ident) = {
            let m = &self.members()[i];
            (m.addr, m.ident())
        };
        self.firewall.isolate(addr, ident);
    }

    pub fn heal(&mut self, i: usize) {
        let addr = self.members()[i].addr;
        self.firewall.heal(addr);
    }

    /// Where the members keep their data and logs.
    pub fn dir(&self) -> &Path {
        match (&self.etcd, &self.redis) {
            (Some(e), _) => e.dir(),
            (_, Some(r)) => r.dir(),
            _ => Path::new("."),
        }
    }

    /// Undoes every fault left: rules removed, paused members resumed,
    /// killed ones restarted.
    pub fn heal_all(&mut self) {
        self.firewall.heal_all();
        for i in 0..self.members().len() {
            let m = self.member_mut(i);
            if m.is_paused() {
                m.resume();
            }
            if !m.is_running() {
                m.spawn();
            }
        }
    }
}

// --- the generator processes ---------------------------------------------

/// What the runner knows of a worker, from its lines.
#[derive(Debug, Clone)]
pub struct View {
    pub index: usize,
    pub plant: Plant,
    pub skew_ms: i64,
    pub built: bool,
    /// The node id it issues under (or last did).
    pub node: Option<u64>,
    pub fenced: bool,
    pub unleased: bool,
    pub paused: bool,
    pub exited: bool,
    pub build_failures: u64,
    /// From its last progress line.
    pub ids: u64,
    pub last_ms: u64,
    /// Unix ms (its own clock) of its first ID under a node id, per node.
    pub first_ms: Vec<(u64, u64)>,
}

impl View {
    /// Built, not fenced, not stopped, not gone, and leased.
    pub fn issuing(&self) -> bool {
        self.built && !self.fenced && !self.paused && !self.exited && !self.unleased
    }

    /// Holds a generator that may be fenced now (a leased one, running).
    pub fn live(&self) -> bool {
        self.built && !self.paused && !self.exited && !self.unleased
    }
}

struct Proc {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    reader: Option<JoinHandle<()>>,
    events: Arc<Mutex<BufWriter<File>>>,
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
    pub run_for: Duration,
    pub plant: Plant,
    pub skew_ms: i64,
    pub nodes: std::ops::RangeInclusive<u64>,
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
            run_for: spec.run_for,
            ids: ids_path(&self.dir, index),
            plant: spec.plant,
            skew_ms: spec.skew_ms,
            burst: 4,
            nodes: spec.nodes.clone(),
        };
        let mut command = Command::new(&self.exe);
        command
            .args(args.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(self.dir.join(format!("w{index}.stderr"))).unwrap());
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
                plant: spec.plant,
                skew_ms: spec.skew_ms,
                built: false,
                node: None,
                fenced: false,
                unleased: false,
                paused: false,
                exited: false,
                build_failures: 0,
                ids: 0,
                last_ms: 0,
                first_ms: Vec::new(),
            });
        }
        let stdout = child.stdout.take().unwrap();
        let reader = {
            let (views, events) = (self.views.clone(), events.clone());
            thread::spawn(move || {
                for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                    let Some(line) = Line::parse(&text) else {
                        continue;
                    };
                    let _ = writeln!(events.lock().unwrap(), "{line}");
                    let (lock, changed) = &*views;
                    let mut all = lock.lock().unwrap();
                    let v = &mut all[index];
                    match line.what {
                        What::Built { node } => {
                            v.built = true;
                            v.node = Some(node);
                        }
                        What::BuildFailed { .. } => v.build_failures += 1,
                        What::Fenced { .. } => v.fenced = true,
                        What::Issuing { node } => {
                            v.fenced = false;
                            v.node = Some(node);
                        }
                        What::Unleased { node } => {
                            v.unleased = true;
                            v.node = Some(node);
                        }
                        What::Progress {
                            ids, node, last_ms, ..
                        } => {
                            v.ids = ids;
                            v.last_ms = last_ms;
                            if ids > 0 && !v.first_ms.iter().any(|(n, _)| *n == node) {
                                v.first_ms.push((node, last_ms));
                            }
                        }
                        _ => {}
                    }
                    changed.notify_all();
                }
            })
        };
        self.procs.push(Proc {
            stdin: child.stdin.take(),
            child: Some(child),
            reader: Some(reader),
            events,
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

    /// Reaps the workers that exited; returns how many did.
    pub fn reap(&mut self) -> usize {
        let mut reaped = 0;
        for index in 0..self.procs.len() {
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
    /// releasing the node id, and exits.
    pub fn stop(&mut self, index: usize) {
        self.procs[index].stdin = None;
    }

    /// Workers not yet exited.
    pub fn running(&self) -> usize {
        self.procs.iter().filter(|p| p.child.is_some()).count()
    }

    /// Stops every worker, waits up to `within` for them to exit, then
    /// kills the rest.
    pub fn stop_all(&mut self, within: Duration) {
        for index in 0..self.procs.len() {
            if self.views()[index].paused {
                self.resume(index);
            }
            self.stop(index);
        }
        let until = Instant::now() + within;
        while self.running() > 0 && Instant::now() < until {
            self.reap();
            thread::sleep(Duration::from_millis(50));
        }
        self.kill_all();
    }

    fn kill_all(&mut self) {
        for p in &mut self.procs {
            if let Some(child) = &mut p.child {
                signal(child.id(), libc::SIGCONT);
                let _ = child.kill();
            }
        }
        self.reap();
        for p in &mut self.procs {
            if let Some(mut child) = p.child.take() {
                let _ = child.wait();
            }
            let _ = p.events.lock().unwrap().flush();
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.kill_all();
    }
}

// --- the nemesis -----------------------------------------------------------

/// Set (by `fault-run`'s signal handler) when the run is to stop early: the
/// runner then panics at its next step, so that every worker and member
/// is killed and every firewall rule removed on the way out.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// A run in progress: the cluster, the workers, the faults so far.
pub struct Runner {
    pub config: Config,
    /// Dropped after the fleet (field order): workers die before the
    /// cluster.
    pub fleet: Fleet,
    pub cluster: Cluster,
    rng: Rng,
    prefix: String,
    spawned: usize,
    faults: BufWriter<File>,
    begun: Instant,
}

impl Runner {
    /// Starts the cluster and the first workers.
    pub fn new(config: Config) -> Runner {
        std::fs::create_dir_all(&config.dir).unwrap();
        let cluster = Cluster::start_with(config.store, config.etcd_pre_vote);
        let fleet = Fleet::new(&config.dir, &config.worker_exe);
        let faults = BufWriter::new(File::create(faults_path(&config.dir)).unwrap());
        let prefix = flakeid_test_servers::unique_prefix("faults");
        Runner {
            rng: Rng::new(config.seed),
            config,
            fleet,
            cluster,
            prefix,
            spawned: 0,
            faults,
            begun: Instant::now(),
        }
    }

    fn say(&self, what: &str) {
        if self.config.verbose {
            eprintln!("[{:>7.1}s] {what}", self.begun.elapsed().as_secs_f64());
        }
    }

    /// A regular worker's spec.
    pub fn spec(&mut self, skew_ms: i64) -> WorkerSpec {
        WorkerSpec {
            store: self.cluster.store_for_worker(self.config.redis_url),
            prefix: self.prefix.clone(),
            ttl: self.config.ttl,
            run_for: self.rng.between(self.config.lifetime),
            plant: Plant::None,
            skew_ms,
            nodes: NODE_IDS,
        }
    }

    fn next_skew(&mut self) -> i64 {
        let skew = self.config.skew.as_millis() as i64;
        if (self.spawned / self.config.skew_every.max(1)).is_multiple_of(2) {
            skew
        } else {
            -skew
        }
    }

    /// Starts a worker, skewed if it is its turn.
    fn spawn_regular(&mut self) -> usize {
        self.spawned += 1;
        let skew_ms =
            if self.config.skew_every > 0 && self.spawned.is_multiple_of(self.config.skew_every) {
                self.next_skew()
            } else {
                0
            };
        let spec = self.spec(skew_ms);
        self.fleet.spawn(&spec)
    }

    /// Reaps exited workers and starts replacements.
    ///
    /// # Panics
    ///
    /// When [`INTERRUPTED`] is set.
    pub fn tick(&mut self) {
        assert!(
            !INTERRUPTED.load(Ordering::Relaxed),
            "interrupted: cleaning up"
        );
        self.fleet.reap();
        while self.fleet.running() < self.config.workers {
            self.spawn_regular();
        }
    }

    /// Lets time pass (a fault holding), replacing workers meanwhile.
    pub fn hold(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until {
            self.tick();
            thread::sleep(Duration::from_millis(100).min(until - Instant::now()));
        }
    }

    /// Waits up to `within` for `done`, replacing workers meanwhile.
    pub fn wait(&mut self, within: Duration, mut done: impl FnMut(&mut Runner) -> bool) -> bool {
        let until = Instant::now() + within;
        loop {
            self.tick();
            if done(self) {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether every node id has a generator issuing under it.
    fn all_nodes_issuing(&self) -> bool {
        let views = self.fleet.views();
        NODE_IDS
            .clone()
            .all(|n| views.iter().any(|v| v.issuing() && v.node == Some(n)))
    }

    fn record(&mut self, kind: FaultKind, target: String, start_ns: u64) {
        let fault = Fault {
            kind: kind.name(self.config.store),
            target,
            start_ns,
            end_ns: mono_ns(),
        };
        writeln!(self.faults, "{fault}").unwrap();
        self.faults.flush().unwrap();
    }

    /// Injects one fault, holds it, heals it, and waits for recovery.
    pub fn inject(&mut self, kind: FaultKind) {
        let name = kind.name(self.config.store);
        let start = mono_ns();
        let target = match kind {
            FaultKind::Member(action, role) => {
                let candidates = self.cluster.in_role(role);
                let Some(&i) = candidates.get(self.rng.below(candidates.len())) else {
                    self.say(&format!("{name}: no member in that role now; skipped"));
                    return;
                };
                let member = self.cluster.members()[i].name.clone();
                self.say(&format!("{name}: {member}"));
                match action {
                    Action::Pause => {
                        self.cluster.member_mut(i).pause();
                        self.hold(self.config.pause_for);
                        self.cluster.member_mut(i).resume();
                    }
                    Action::Kill => {
                        self.cluster.member_mut(i).kill();
                        self.hold(self.config.kill_for);
                        self.cluster.member_mut(i).spawn();
                    }
                    Action::Isolate => {
                        self.cluster.isolate(i);
                        self.hold(self.config.isolate_for);
                        self.cluster.heal(i);
                    }
                }
                member
            }
            FaultKind::PauseGenerator => {
                let issuing: Vec<usize> = self
                    .fleet
                    .views()
                    .iter()
                    .filter(|v| v.issuing())
                    .map(|v| v.index)
                    .collect();
                let Some(&k) = issuing.get(self.rng.below(issuing.len())) else {
                    self.say(&format!("{name}: no generator issuing; skipped"));
                    return;
                };
                self.say(&format!("{name}: w{k}"));
                self.fleet.pause(k);
                self.hold(self.config.generator_pause_for);
                self.fleet.resume(k);
                format!("w{k}")
            }
            FaultKind::SkewedGenerator => {
                let issuing: Vec<usize> = self
                    .fleet
                    .views()
                    .iter()
                    .filter(|v| v.issuing())
                    .map(|v| v.index)
                    .collect();
                let Some(&k) = issuing.get(self.rng.below(issuing.len())) else {
                    self.say(&format!("{name}: no generator issuing; skipped"));
                    return;
                };
                self.spawned += 1;
                let skew = self.next_skew();
                let spec = self.spec(skew);
                let new = self.fleet.spawn(&spec);
                self.fleet.stop(k);
                self.say(&format!("{name}: w{k} stopped, w{new} skewed {skew:+} ms"));
                // The skewed worker takes a node id once one is free.
                let ttl = self.config.ttl;
                self.wait(ttl * 3, |r| r.fleet.views()[new].built);
                format!("w{new}")
            }
        };
        self.record(kind, target, start);
        let healthy = self.wait(Duration::from_secs(40), |r| r.cluster.healthy());
        if !healthy {
            self.say("the cluster is not whole 40 s after the fault; going on");
        }
        let within = self.config.recover_within;
        if !self.wait(within, |r| r.all_nodes_issuing()) {
            let views = self.fleet.views();
            let idle: Vec<String> = NODE_IDS
                .clone()
                .filter(|&n| !views.iter().any(|v| v.issuing() && v.node == Some(n)))
                .map(|n| n.to_string())
                .collect();
            self.say(&format!(
                "node ids {} still unissued {} s after the fault; going on",
                idle.join(", "),
                within.as_secs()
            ));
        }
        self.hold(self.config.gap);
    }

    /// Stops every worker and the nemesis; the records are complete after
    /// (with etcd's history of every key, `etcd-history`).
    pub fn finish(&mut self) {
        self.cluster.heal_all();
        self.fleet.stop_all(Duration::from_secs(20));
        self.faults.flush().unwrap();
        if let Some(history) = self.cluster.etcd_history() {
            std::fs::write(self.config.dir.join("etcd-history"), history).unwrap();
        }
    }
}

/// A whole run: the cluster, workers kept alive, faults of each kind in
/// turn (each round shuffled), then the checker. Prints the report if
/// verbose.
pub fn run(config: Config) -> Report {
    let mut r = Runner::new(config);
    r.say(&format!(
        "{} up in {}; workers start (TTL {:?})",
        r.config.store.name(),
        r.cluster.dir().display(),
        r.config.ttl
    ));
    let ids = NODE_IDS.count();
    let ready = r.wait(Duration::from_secs(120), |r| {
        r.fleet.views().iter().filter(|v| v.issuing()).count() >= ids.min(r.config.workers)
    });
    assert!(ready, "the workers did not get their node ids within 120 s");
    r.say("every node id is held; a quiet baseline, then the faults");
    r.hold(Duration::from_secs(3));
    let begun = Instant::now();
    let mut round: Vec<FaultKind> = Vec::new();
    let mut injected = 0;
    while (injected < r.config.faults || begun.elapsed() < r.config.duration)
        && begun.elapsed() < r.config.max_duration
    {
        injected += 1;
        if round.is_empty() {
            round = r.config.kinds.clone();
            // Fisher-Yates, seeded.
            for i in (1..round.len()).rev() {
                let j = r.rng.below(i + 1);
                round.swap(i, j);
            }
            // Reversed, so pop() gives the round's order.
            round.reverse();
        }
        let kind = round.pop().unwrap();
        r.inject(kind);
    }
    r.say("faults done; stopping the workers");
    r.finish();
    let report = check(&r.config.dir);
    if r.config.verbose {
        eprintln!("{}", fault_lines(&report));
    }
    report
}

/// The worker binary next to the running one (`fault-run` and
/// `fault-worker` are built together).
pub fn sibling_worker() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.with_file_name("fault-worker")
}

// --- planted bugs ------------------------------------------------------------

/// Waits for `done`, or panics naming `what` (a planted-bug scenario that
/// cannot reach its next step proves nothing).
fn expect(fleet: &mut Fleet, within: Duration, what: &str, done: impl FnMut(&[View]) -> bool) {
    assert!(
        fleet.wait_for(within, done),
        "{what}: not within {within:?}"
    );
}

/// Waits until two workers both issued under `node` for a second of wall
/// time after the later of them started to: they issued in the same
/// milliseconds.
fn both_issue(fleet: &mut Fleet, a: usize, b: usize, node: u64) {
    expect(
        fleet,
        Duration::from_secs(120),
        "both issuing under one node id",
        |v| {
            let first = |k: usize| {
                v[k].first_ms
                    .iter()
                    .find(|(n, _)| *n == node)
                    .map(|&(_, ms)| ms)
            };
            let (Some(fa), Some(fb)) = (first(a), first(b)) else {
                return false;
            };
            let since = fa.max(fb) + 1_000;
            v[a].last_ms >= since && v[b].last_ms >= since
        },
    );
}

const PLANT_TTL: Duration = Duration::from_secs(3);

/// A failover usually takes seconds; on a loaded machine a sentinel may
/// find the replica's last report too old and retry after twice the
/// failover timeout, more than once.
const FAILOVER_WITHIN: Duration = Duration::from_secs(180);

fn plant_spec(store: Store, prefix: &str, plant: Plant) -> WorkerSpec {
    WorkerSpec {
        store,
        prefix: prefix.into(),
        ttl: PLANT_TTL,
        run_for: Duration::from_secs(180),
        plant,
        skew_ms: 0,
        nodes: 0..=0,
    }
}

/// The planted bug "a fence that stays open after a failed renewal"
/// ([`Plant::OpenFence`]) on `store`: a worker holding node id 0 is cut
/// off (etcd: the one member it talks to is isolated; Redis: the primary
/// is isolated, and Sentinel fails over to a replica, which the other
/// replica follows), keeps issuing under node id 0 after its generator is
/// fenced, and another worker claims node id 0 (on the other members; on
/// the promoted replica). Returns the checker's report on the run kept in
/// `dir`: it must find an overlap.
pub fn planted_open_fence(store: StoreKind, exe: &Path, dir: &Path) -> Report {
    let mut cluster = Cluster::start(store);
    let mut fleet = Fleet::new(dir, exe);
    let prefix = flakeid_test_servers::unique_prefix("open-fence");
    // Etcd: the planted worker talks to one follower only, the honest one
    // to the other two members. Redis: both find the primary through the
    // sentinels when they start.
    let (cut, planted_store, honest_store) = match store {
        StoreKind::Etcd => {
            let x = cluster.in_role(Role::Follower)[0];
            let others: Vec<String> = (0..3)
                .filter(|&i| i != x)
                .map(|i| cluster.etcd_endpoint(i))
                .collect();
            (
                x,
                Store::Etcd(vec![cluster.etcd_endpoint(x)]),
                Store::Etcd(others),
            )
        }
        StoreKind::Redis => {
            let primary = cluster.leader().expect("a primary");
            (primary, cluster.sentinel_store(), cluster.sentinel_store())
        }
    };
    let p = fleet.spawn(&plant_spec(planted_store, &prefix, Plant::OpenFence));
    expect(
        &mut fleet,
        Duration::from_secs(30),
        "the planted worker issuing",
        |v| v[p].built && v[p].ids > 0,
    );
    let h = match store {
        StoreKind::Etcd => {
            let h = fleet.spawn(&plant_spec(honest_store.clone(), &prefix, Plant::None));
            expect(
                &mut fleet,
                Duration::from_secs(30),
                "the honest worker waiting",
                |v| v[h].build_failures > 0,
            );
            Some(h)
        }
        StoreKind::Redis => None,
    };
    cluster.isolate(cut);
    expect(
        &mut fleet,
        Duration::from_secs(120),
        "the planted worker fenced, going on",
        |v| v[p].unleased,
    );
    let h = match h {
        Some(h) => h,
        None => {
            let began = Instant::now();
            let promoted = loop {
                match cluster.leader() {
                    Some(now) if now != cut => break true,
                    _ if began.elapsed() > FAILOVER_WITHIN => break false,
                    _ => thread::sleep(Duration::from_millis(100)),
                }
            };
            assert!(
                promoted,
                "Sentinel did not fail over within {FAILOVER_WITHIN:?}"
            );
            fleet.spawn(&plant_spec(honest_store, &prefix, Plant::None))
        }
    };
    expect(
        &mut fleet,
        Duration::from_secs(120),
        "the honest worker claiming node id 0",
        |v| v[h].built && v[h].node == Some(0),
    );
    both_issue(&mut fleet, p, h, 0);
    cluster.heal(cut);
    fleet.stop_all(Duration::from_secs(20));
    check(dir)
}

/// "A claim that ignores the predecessor's deadline under a failover"
/// ([`Plant::EagerClaim`]), or with `Plant::None` the same scenario with an
/// honest claimer (the control). Worker A holds node id 0 with
/// `Lease::redis` on the primary (no `WAIT`) while the primary is cut off
/// from both replicas, so A's claim never reaches them. The primary is
/// paused (until the verdict) and Sentinel promotes a replica without A's
/// claim; the other replica follows it. A, its renewals unanswered,
/// issues until its deadline. Worker B, a Sentinel lease started after the
/// promotion, claims node id 0 on the new primary at once. Both hold a
/// 30 s TTL, so that A's deadline (at least 14 s after the pause: 0.8 TTL
/// after a renewal at most a third of a TTL old) outlasts B's claim by
/// seconds even when the failover is slow. Returns the checker's report
/// on the run kept in `dir`.
///
/// An honest B waits out the epoch's TTL, which starts after the
/// promotion, past A's deadline: the control stays clean. The planted B
/// issues at once and overlaps A.
pub fn failover_claim(plant: Plant, exe: &Path, dir: &Path) -> Report {
    const TTL: Duration = Duration::from_secs(30);
    let mut cluster = Cluster::start(StoreKind::Redis);
    let mut fleet = Fleet::new(dir, exe);
    let prefix = flakeid_test_servers::unique_prefix("failover-claim");
    let primary = cluster.leader().expect("a primary");
    let old = cluster.members()[primary].addr;
    let replicas: Vec<_> = cluster
        .in_role(Role::Follower)
        .into_iter()
        .map(|r| cluster.members()[r].addr)
        .collect();
    for &replica in &replicas {
        cluster.firewall.cut(old, replica);
    }
    let a = fleet.spawn(&WorkerSpec {
        ttl: TTL,
        ..plant_spec(
            Store::Redis(cluster.redis_url(primary)),
            &prefix,
            Plant::None,
        )
    });
    expect(
        &mut fleet,
        Duration::from_secs(30),
        "worker A issuing",
        |v| v[a].built && v[a].ids > 0,
    );
    cluster.member_mut(primary).pause();
    let began = Instant::now();
    let promoted = loop {
        match cluster.leader() {
            Some(now) if now != primary => break true,
            _ if began.elapsed() > FAILOVER_WITHIN => break false,
            _ => thread::sleep(Duration::from_millis(100)),
        }
    };
    assert!(
        promoted,
        "Sentinel did not fail over within {FAILOVER_WITHIN:?}"
    );
    for &replica in &replicas {
        cluster.firewall.uncut(old, replica);
    }
    let b = fleet.spawn(&WorkerSpec {
        ttl: TTL,
        ..plant_spec(cluster.sentinel_store(), &prefix, plant)
    });
    expect(
        &mut fleet,
        Duration::from_secs(120),
        "worker B claiming node id 0",
        |v| v[b].built,
    );
    // A verdict either way: both issued a second past B's claim, or B
    // issued a TTL and a second after it.
    let claimed_ms = crate::wall_ms();
    expect(
        &mut fleet,
        Duration::from_secs(120),
        "A and B issuing, or B waiting A out",
        |v| {
            let past = claimed_ms + 1_000;
            let a_on = v[a].last_ms >= past && !v[a].fenced;
            let b_on = v[b].last_ms >= past;
            (a_on && b_on) || (v[b].last_ms >= claimed_ms + TTL.as_millis() as u64 + 1_000)
        },
    );
    cluster.member_mut(primary).resume();
    fleet.stop_all(Duration::from_secs(20));
    check(dir)
}
