//! The nemesis and the run ([`run`]): a cluster, worker processes kept
//! alive, and one fault at a time (pause, kill or isolate a member; pause
//! a generator past its deadline; start a generator with a skewed clock),
//! each held, healed, and followed by a wait for the cluster and the
//! generators to recover before the next. Then the checker.
//!
//! On PostgreSQL and MariaDB the faults are the database's (`pause
//! database`, `kill database`, `isolate database`: the server that takes
//! writes now) and, on PostgreSQL, `promote standby`: the standby is let
//! catch up, replication is frozen, a generator stops so that a waiting
//! one claims its node id on the primary alone, the primary acknowledges
//! renewals the standby never gets, then the primary is killed for good
//! and the standby promoted; the fault holds two TTLs after, so that the
//! lost claim's holder is fenced and the new epoch's wait is over within
//! it. Later faults hit the promoted server. There is no standby after
//! that: one promotion per run (later rounds leave the kind out).
//!
//! Fault durations are the nemesis's choice; nothing here asserts on
//! time. A fault that cannot be injected when its turn comes (no member in
//! the role, no generator issuing) is recorded as skipped, not as
//! injected, and tried again later in the run.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use flakeid_test_servers::Rng;

use crate::check::{Report, check, fault_lines};
use crate::cluster::{Cluster, RedisUrl, Role, StoreKind};
use crate::fleet::{Fleet, WorkerSpec};
use crate::record::{Fault, Params, faults_path, params_path, skipped_path};
use crate::{NODE_IDS, mono_ns};

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

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Pause => "pause",
            Action::Kill => "kill",
            Action::Isolate => "isolate",
        }
    }
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
    /// PostgreSQL or MariaDB: the database server paused, killed (and
    /// restarted on its data) or cut off (iptables on its port).
    Database(Action),
    /// PostgreSQL: replication frozen, claims and renewals acknowledged by
    /// the primary alone, the primary killed for good and the standby
    /// promoted without them. Once per run (no standby is rebuilt).
    Promote,
}

impl FaultKind {
    pub fn name(self, store: StoreKind) -> String {
        match self {
            FaultKind::Member(action, role) => {
                let role = match (store, role) {
                    (StoreKind::Etcd, Role::Leader) => "leader",
                    (StoreKind::Etcd, _) => "follower",
                    (StoreKind::Redis, Role::Leader) => "primary",
                    (StoreKind::Redis, Role::Follower) => "replica",
                    (StoreKind::Redis, Role::Sentinel) => "sentinel",
                    (StoreKind::Postgres | StoreKind::Mysql, _) => "member",
                };
                format!("{} {role}", action.name())
            }
            FaultKind::PauseGenerator => "pause generator".into(),
            FaultKind::SkewedGenerator => "skewed generator".into(),
            FaultKind::Database(action) => format!("{} database", action.name()),
            FaultKind::Promote => "promote standby".into(),
        }
    }

    /// Every kind for `store`: each action on the leader and a follower
    /// (and, on Redis, a sentinel), and the two generator faults.
    pub fn all(store: StoreKind) -> Vec<FaultKind> {
        if store.is_sql() {
            let mut kinds: Vec<FaultKind> = [Action::Pause, Action::Kill, Action::Isolate]
                .into_iter()
                .map(FaultKind::Database)
                .collect();
            if store == StoreKind::Postgres {
                kinds.push(FaultKind::Promote);
            }
            kinds.push(FaultKind::PauseGenerator);
            kinds.push(FaultKind::SkewedGenerator);
            return kinds;
        }
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
    /// Each worker lives a random time in this range from its build, then
    /// is replaced.
    pub lifetime: (Duration, Duration),
    /// Every `skew_every`-th worker started has its clock skewed by
    /// `skew`, alternately ahead and behind (0: none).
    pub skew_every: usize,
    pub skew: Duration,
    /// Injected in turn (each round of them shuffled) until at least
    /// `faults` were and at least `duration` passed. Each fault is bounded
    /// in time, so the run is; `max_duration`, if set, ends it sooner (the
    /// long run's stop, whatever the faults).
    pub kinds: Vec<FaultKind>,
    pub faults: usize,
    pub duration: Duration,
    pub max_duration: Option<Duration>,
    /// How often a fault that could not be injected is tried again before
    /// the run goes on without it (each try after the cluster had up to
    /// 40 s to be whole again).
    pub tries: usize,
    pub pause_for: Duration,
    pub kill_for: Duration,
    pub isolate_for: Duration,
    /// A fault on the Redis primary holds until the sentinels name another
    /// primary (a completed failover) or this long has passed, and at
    /// least its own time (`pause_for`, ...). `None`: its own time only.
    pub failover_within: Option<Duration>,
    /// A generator process's stop: longer than the TTL.
    pub generator_pause_for: Duration,
    /// Quiet time between the recovery from one fault and the next fault.
    pub gap: Duration,
    /// How long to wait, after a fault, for every node id to have a
    /// generator issuing under it again before going on anyway.
    pub recover_within: Duration,
    /// A worker that built its generator and then lived this long (not
    /// counting nemesis pauses) without issuing one ID fails the run.
    pub fenced_life_limit: Duration,
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
    /// once on a follower. On Redis each fault on the primary lasts until
    /// a failover completed (at most a minute).
    ///
    /// On PostgreSQL and MariaDB: the database paused, killed and cut off
    /// (paused and cut off past the TTL), on PostgreSQL the promotion with
    /// lost writes, and the two generator faults, once each.
    pub fn short(store: StoreKind, worker_exe: PathBuf, dir: PathBuf) -> Config {
        let kinds = if store.is_sql() {
            FaultKind::all(store)
        } else {
            vec![
                FaultKind::Member(Action::Pause, Role::Leader),
                FaultKind::Member(Action::Kill, Role::Leader),
                FaultKind::Member(Action::Isolate, Role::Leader),
                FaultKind::PauseGenerator,
                FaultKind::Member(Action::Pause, Role::Follower),
                FaultKind::Member(Action::Kill, Role::Follower),
                FaultKind::Member(Action::Isolate, Role::Follower),
                FaultKind::SkewedGenerator,
            ]
        };
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
            max_duration: None,
            tries: 3,
            // A database is paused and cut off past the TTL.
            pause_for: Duration::from_secs(if store.is_sql() { 4 } else { 3 }),
            kill_for: Duration::from_secs(3),
            isolate_for: Duration::from_secs(if store.is_sql() { 4 } else { 3 }),
            failover_within: (store == StoreKind::Redis).then_some(Duration::from_secs(60)),
            generator_pause_for: Duration::from_millis(4_000),
            gap: Duration::from_millis(500),
            recover_within: Duration::from_secs(8),
            fenced_life_limit: Duration::from_secs(30),
            seed: 1,
            worker_exe,
            dir,
            verbose: false,
            etcd_pre_vote: false,
        }
    }

    /// The long run: every kind, on every role, with the issue's
    /// durations (a 6 s pause, 4 s down, 8 s cut off; on Redis at least
    /// until the failover), at least 200 faults and 30 minutes, and no
    /// more than twice that or an hour.
    pub fn long(store: StoreKind, worker_exe: PathBuf, dir: PathBuf) -> Config {
        Config {
            kinds: FaultKind::all(store),
            faults: 200,
            duration: Duration::from_secs(30 * 60),
            max_duration: Some(Duration::from_secs(60 * 60)),
            lifetime: (Duration::from_secs(20), Duration::from_secs(90)),
            pause_for: Duration::from_secs(6),
            kill_for: Duration::from_secs(4),
            isolate_for: Duration::from_secs(8),
            generator_pause_for: Duration::from_secs(5),
            gap: Duration::from_secs(1),
            recover_within: Duration::from_secs(10),
            fenced_life_limit: Duration::from_secs(90),
            verbose: true,
            ..Config::short(store, worker_exe, dir)
        }
    }

    /// What the checker reads of the run's parameters.
    pub fn params(&self) -> Params {
        Params {
            store: self.store.name().into(),
            fenced_life_limit_ms: self.fenced_life_limit.as_millis() as u64,
            kinds: self.kinds.iter().map(|k| k.name(self.store)).collect(),
        }
    }
}

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
    skipped: BufWriter<File>,
    begun: Instant,
}

impl Runner {
    /// Starts the cluster; workers start at the first [`Runner::tick`].
    pub fn new(config: Config) -> Runner {
        std::fs::create_dir_all(&config.dir).unwrap();
        std::fs::write(params_path(&config.dir), config.params().to_string()).unwrap();
        let cluster = Cluster::start_with(config.store, config.etcd_pre_vote);
        let fleet = Fleet::new(&config.dir, &config.worker_exe);
        let faults = BufWriter::new(File::create(faults_path(&config.dir)).unwrap());
        let skipped = BufWriter::new(File::create(skipped_path(&config.dir)).unwrap());
        let prefix = flakeid_test_servers::unique_prefix("faults");
        Runner {
            rng: Rng::new(config.seed),
            config,
            fleet,
            cluster,
            prefix,
            spawned: 0,
            faults,
            skipped,
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
        let (lo, hi) = self.config.lifetime;
        WorkerSpec {
            store: self.cluster.store_for_worker(self.config.redis_url),
            prefix: self.prefix.clone(),
            ttl: self.config.ttl,
            margin: None,
            run_for: self.rng.duration_between(lo, hi),
            plant: "none".into(),
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

    /// Holds a fault on member `i`: its own time, and on the Redis primary
    /// (when [`Config::failover_within`] says so) until the sentinels name
    /// another primary.
    fn hold_member_fault(&mut self, i: usize, role: Role, own: Duration) {
        let begun = Instant::now();
        self.hold(own);
        if let (Some(within), StoreKind::Redis, Role::Leader) =
            (self.config.failover_within, self.config.store, role)
        {
            let left = within.saturating_sub(begun.elapsed());
            let failed_over = self.wait(left, |r| r.cluster.leader().is_some_and(|p| p != i));
            if !failed_over {
                self.say(&format!(
                    "no failover within {} s; healing",
                    within.as_secs()
                ));
            }
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

    fn skip(&mut self, kind: FaultKind, why: &str) {
        let name = kind.name(self.config.store);
        self.say(&format!("{name}: {why}; skipped"));
        writeln!(self.skipped, "{} {name}", mono_ns()).unwrap();
        self.skipped.flush().unwrap();
    }

    /// A generator issuing now, chosen at random.
    fn issuing_generator(&mut self) -> Option<usize> {
        let issuing: Vec<usize> = self
            .fleet
            .views()
            .iter()
            .filter(|v| v.issuing())
            .map(|v| v.index)
            .collect();
        issuing.get(self.rng.index(issuing.len())).copied()
    }

    /// Injects one fault, holds it, heals it, and waits for recovery.
    /// Returns false if it could not be injected (recorded as skipped).
    pub fn inject(&mut self, kind: FaultKind) -> bool {
        let name = kind.name(self.config.store);
        let start = mono_ns();
        let target = match kind {
            FaultKind::Member(action, role) => {
                let candidates = self.cluster.in_role(role);
                let Some(&i) = candidates.get(self.rng.index(candidates.len())) else {
                    self.skip(kind, "no member in that role now");
                    return false;
                };
                let member = self.cluster.members()[i].name.clone();
                self.say(&format!("{name}: {member}"));
                match action {
                    Action::Pause => {
                        self.cluster.member_mut(i).pause();
                        self.hold_member_fault(i, role, self.config.pause_for);
                        self.cluster.member_mut(i).resume();
                    }
                    Action::Kill => {
                        self.cluster.member_mut(i).kill();
                        self.hold_member_fault(i, role, self.config.kill_for);
                        self.cluster.member_mut(i).spawn();
                    }
                    Action::Isolate => {
                        self.cluster.isolate(i);
                        self.hold_member_fault(i, role, self.config.isolate_for);
                        self.cluster.heal(i);
                    }
                }
                member
            }
            FaultKind::Database(action) => {
                let server = self.cluster.database();
                self.say(&format!("{name}: {server}"));
                match action {
                    Action::Pause => {
                        self.cluster.pause_database();
                        self.hold(self.config.pause_for);
                        self.cluster.resume_database();
                    }
                    Action::Kill => {
                        self.cluster.kill_database();
                        self.hold(self.config.kill_for);
                        self.cluster.restart_database();
                    }
                    Action::Isolate => {
                        self.cluster.isolate_database();
                        self.hold(self.config.isolate_for);
                        self.cluster.heal_database();
                    }
                }
                server
            }
            FaultKind::Promote => {
                if !self.cluster.can_promote() {
                    self.skip(kind, "no standby left (one promotion per run)");
                    return false;
                }
                self.cluster.freeze_replication();
                let frozen_at = mono_ns();
                self.say(&format!("{name}: replication frozen"));
                // Claims and renewals only the primary acknowledged: a node
                // id handed over (a generator stops, releasing it, and a
                // waiting one claims it) and every holder's renewals, each
                // waited for within a bound.
                let after = |r: &Runner, claims: bool| {
                    r.fleet
                        .views()
                        .iter()
                        .map(|v| {
                            v.extensions
                                .iter()
                                .filter(|e| e.sent_ns > frozen_at && (e.claim || !claims))
                                .count()
                        })
                        .sum::<usize>()
                };
                self.hold(self.config.ttl / 2);
                if let Some(k) = self.issuing_generator() {
                    self.fleet.stop(k);
                    self.say(&format!("{name}: w{k} stopped, its node id to be claimed"));
                }
                if !self.wait(Duration::from_secs(20), |r| {
                    after(r, true) >= 1 && after(r, false) >= 4
                }) {
                    self.say("no claim and 4 extensions within 20 s; promoting anyway");
                }
                let (lost, claims) = (after(self, false), after(self, true));
                let promotion = self.cluster.promote().expect("a standby to promote");
                self.say(&format!(
                    "{name}: primary :{} killed with {lost} extensions unreplicated \
                     ({claims} claims), standby :{} promoted",
                    promotion.old_port, promotion.new_port
                ));
                // Held on for two TTLs: every lease only the old primary
                // acknowledged has run out, the new epoch's wait is over,
                // and the node ids lost with it are claimed again.
                self.hold(self.config.ttl * 2);
                format!(
                    "postgres:{}->postgres:{}({lost}-lost,{claims}-claims)",
                    promotion.old_port, promotion.new_port
                )
            }
            FaultKind::PauseGenerator => {
                let Some(k) = self.issuing_generator() else {
                    self.skip(kind, "no generator issuing");
                    return false;
                };
                self.say(&format!("{name}: w{k}"));
                self.fleet.pause(k);
                self.hold(self.config.generator_pause_for);
                self.fleet.resume(k);
                format!("w{k}")
            }
            FaultKind::SkewedGenerator => {
                let Some(k) = self.issuing_generator() else {
                    self.skip(kind, "no generator issuing");
                    return false;
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
        self.recover();
        true
    }

    /// Waits for the cluster to be whole and every node id issued under
    /// again (each bounded: the run goes on, and the checker reports what
    /// did not recover), then the gap.
    fn recover(&mut self) {
        if !self.wait(Duration::from_secs(40), |r| r.cluster.healthy()) {
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
    /// (with etcd's history of every key, `etcd-history`, and every
    /// member's log).
    pub fn finish(&mut self) {
        self.cluster.heal_all();
        self.fleet.stop_all();
        self.faults.flush().unwrap();
        self.skipped.flush().unwrap();
        if let Some(history) = self.cluster.etcd_history() {
            std::fs::write(self.config.dir.join("etcd-history"), history).unwrap();
        }
        self.cluster.copy_logs(&self.config.dir);
    }
}

/// A whole run: the cluster, workers kept alive, faults of each kind in
/// turn (each round shuffled), then the checker. Prints the report if
/// verbose.
///
/// # Panics
///
/// If the workers do not hold every node id within two minutes of the
/// start (nothing can be said of the run then).
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
    // The kinds still to inject in this round (popped from the end), and
    // the faults that could not be injected, with their tries so far.
    let mut round: Vec<FaultKind> = Vec::new();
    let mut retry: Vec<(FaultKind, usize)> = Vec::new();
    let mut injected = 0;
    let over = |r: &Runner, injected: usize| {
        let done = injected >= r.config.faults && begun.elapsed() >= r.config.duration;
        done || r
            .config
            .max_duration
            .is_some_and(|max| begun.elapsed() >= max)
    };
    while !over(&r, injected) || !retry.is_empty() {
        if r.config
            .max_duration
            .is_some_and(|max| begun.elapsed() >= max)
        {
            break;
        }
        let (kind, tries) = match retry.pop() {
            Some(again) => again,
            None if over(&r, injected) => break,
            None => {
                if round.is_empty() {
                    round = r.config.kinds.clone();
                    // One promotion per run: no standby after it.
                    let can_promote = r.cluster.can_promote();
                    round.retain(|&k| k != FaultKind::Promote || can_promote);
                    if round.is_empty() {
                        break;
                    }
                    r.rng.shuffle(&mut round);
                }
                (round.pop().unwrap(), 0)
            }
        };
        if r.inject(kind) {
            injected += 1;
        } else if tries + 1 < r.config.tries {
            // Again after the cluster had its chance to be whole.
            r.recover();
            retry.push((kind, tries + 1));
        }
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
