//! The store's cluster for a run: a 3-member etcd cluster or Redis with a
//! primary, two replicas and three sentinels, each member on a loopback
//! address of its own, and the firewall that isolates members; or a
//! database ([`Sql`]): a PostgreSQL primary with a streaming standby, or
//! one MariaDB server, each on 127.0.0.1 and a port of its own.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use flakeid_test_servers::{
    EtcdCluster, Firewall, MASTER_NAME, Mariadb, Member, PgPair, Postgres, Proxy, RedisSentinel,
    loopback_block,
};

use crate::worker::Store;

/// Which store the leases live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// A 3-member etcd cluster; workers get all three endpoints.
    Etcd,
    /// A Redis primary, two replicas and three sentinels.
    Redis,
    /// A PostgreSQL primary and an asynchronous standby streaming from it
    /// through a proxy (the nemesis freezes it to lose writes); workers get
    /// both hosts with `target_session_attrs=read-write`.
    Postgres,
    /// One MariaDB server (`Lease::mysql`).
    Mysql,
}

impl StoreKind {
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Etcd => "etcd",
            StoreKind::Redis => "redis",
            StoreKind::Postgres => "postgres",
            StoreKind::Mysql => "mysql",
        }
    }

    /// PostgreSQL or MariaDB: one server the nemesis pauses, kills and
    /// cuts off as a whole, no members.
    pub fn is_sql(self) -> bool {
        matches!(self, StoreKind::Postgres | StoreKind::Mysql)
    }
}

/// The database of a PostgreSQL or MariaDB run. The workers' URL is fixed
/// at the start (a deployment's configuration): for PostgreSQL it names
/// the primary and the standby, and the driver connects to whichever
/// accepts writes.
///
/// Fields drop in order: the standby and its proxy before the primary (as
/// [`PgPair`]'s), so the primary's shutdown waits for no standby.
pub struct Sql {
    /// PostgreSQL: the standby and the proxy it replicates through, until
    /// it is promoted (one promotion per run: no standby is rebuilt).
    standby: Option<(Postgres, Proxy)>,
    /// The server that takes writes now: the MariaDB server, the
    /// PostgreSQL primary (the promoted standby after a promotion).
    db: Db,
    /// PostgreSQL: the deposed primary, killed for good (the lease
    /// assumes a deposed primary takes no writes); its directory goes at
    /// the end.
    deposed: Option<Postgres>,
    url: String,
    paused: bool,
    killed: bool,
    /// The iptables rules cutting the server off, while they are in.
    cut: Vec<Vec<String>>,
}

enum Db {
    Postgres(Postgres),
    Mariadb(Mariadb),
}

impl Db {
    fn port(&self) -> u16 {
        match self {
            Db::Postgres(p) => p.port(),
            Db::Mariadb(m) => m.port(),
        }
    }
}

/// What [`Cluster::promote`] did.
#[derive(Debug, Clone, Copy)]
pub struct Promotion {
    /// The old primary's port and the promoted standby's.
    pub old_port: u16,
    pub new_port: u16,
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

/// An etcd cluster or Redis with Sentinel, and the firewall that isolates
/// its members. Dropped: members killed, then the firewall's rules
/// removed.
pub struct Cluster {
    pub store: StoreKind,
    etcd: Option<EtcdCluster>,
    redis: Option<RedisSentinel>,
    sql: Option<Sql>,
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
        let mut firewall = Firewall::install();
        let (mut etcd, mut redis, mut sql) = (None, None, None);
        match store {
            StoreKind::Etcd | StoreKind::Redis => {
                let addrs = loopback_block();
                for &a in &addrs {
                    firewall.track(flakeid_test_servers::ident_of(a));
                }
                if store == StoreKind::Etcd {
                    let extra: &[&str] = if etcd_pre_vote { &["--pre-vote"] } else { &[] };
                    etcd = Some(EtcdCluster::start_with(&addrs, 3, extra));
                } else {
                    redis = Some(RedisSentinel::start(&addrs));
                }
            }
            StoreKind::Postgres => {
                let PgPair {
                    standby,
                    proxy,
                    primary,
                } = Postgres::primary_with_standby();
                let url = format!(
                    "postgres://postgres@{},{}/postgres?target_session_attrs=read-write",
                    primary.addr(),
                    standby.addr()
                );
                sql = Some(Sql::new(Db::Postgres(primary), Some((standby, proxy)), url));
            }
            StoreKind::Mysql => {
                let server = Mariadb::start();
                let url = server.url();
                sql = Some(Sql::new(Db::Mariadb(server), None, url));
            }
        }
        let mut cluster = Cluster {
            store,
            etcd,
            redis,
            sql,
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
            (StoreKind::Postgres | StoreKind::Mysql, _) => Vec::new(),
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
        match (&mut self.etcd, &mut self.redis, &self.sql) {
            (Some(e), _, _) => e.wait_healthy(Duration::ZERO),
            (_, Some(r), _) => r.wait_healthy(Duration::ZERO),
            (_, _, Some(sql)) => sql.answers(),
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
            StoreKind::Postgres => Store::Postgres(self.sql().url.clone()),
            StoreKind::Mysql => Store::Mysql(self.sql().url.clone()),
        }
    }

    fn sql(&self) -> &Sql {
        self.sql.as_ref().expect("a PostgreSQL or MariaDB run")
    }

    fn sql_mut(&mut self) -> &mut Sql {
        self.sql.as_mut().expect("a PostgreSQL or MariaDB run")
    }

    /// The database server taking writes now, for messages:
    /// `postgres:<port>`, `mariadb:<port>`.
    pub fn database(&self) -> String {
        let sql = self.sql();
        match &sql.db {
            Db::Postgres(_) => format!("postgres:{}", sql.db.port()),
            Db::Mariadb(_) => format!("mariadb:{}", sql.db.port()),
        }
    }

    /// SIGSTOP to the database server (PostgreSQL: the postmaster and
    /// every backend).
    pub fn pause_database(&mut self) {
        let sql = self.sql_mut();
        match &sql.db {
            Db::Postgres(p) => p.pause(),
            Db::Mariadb(m) => m.pause(),
        }
        sql.paused = true;
    }

    pub fn resume_database(&mut self) {
        let sql = self.sql_mut();
        match &sql.db {
            Db::Postgres(p) => p.resume(),
            Db::Mariadb(m) => m.resume(),
        }
        sql.paused = false;
    }

    /// SIGKILL to the database server (a crash).
    pub fn kill_database(&mut self) {
        let sql = self.sql_mut();
        match &mut sql.db {
            Db::Postgres(p) => p.kill(),
            Db::Mariadb(m) => m.kill(),
        }
        sql.paused = false;
        sql.killed = true;
    }

    /// Starts the killed server again on its data (returns once it
    /// answers, crash recovery done).
    pub fn restart_database(&mut self) {
        let sql = self.sql_mut();
        match &mut sql.db {
            Db::Postgres(p) => p.restart(),
            Db::Mariadb(m) => m.restart(),
        }
        sql.killed = false;
    }

    /// Drops every packet to and from the database server's port on
    /// 127.0.0.1 (its clients', and for PostgreSQL the standby's
    /// replication too), in this run's own iptables chain: the rules are
    /// removed by [`Cluster::heal_database`], and with the chain anyway.
    pub fn isolate_database(&mut self) {
        let chain = self.firewall.chain().to_owned();
        let sql = self.sql_mut();
        if !sql.cut.is_empty() {
            return;
        }
        let port = sql.db.port().to_string();
        for (addr, port_flag) in [("-d", "--dport"), ("-s", "--sport")] {
            let rule: Vec<String> = [
                "-p",
                "tcp",
                addr,
                "127.0.0.1/32",
                port_flag,
                &port,
                "-j",
                "DROP",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let mut add = vec!["-A".to_owned(), chain.clone()];
            add.extend(rule.iter().cloned());
            assert!(iptables(&add), "iptables {add:?} failed (root needed)");
            sql.cut.push(rule);
        }
    }

    /// Removes the rules of [`Cluster::isolate_database`].
    pub fn heal_database(&mut self) {
        let chain = self.firewall.chain().to_owned();
        let sql = self.sql_mut();
        for rule in std::mem::take(&mut sql.cut) {
            let mut delete = vec!["-D".to_owned(), chain.clone()];
            delete.extend(rule);
            iptables(&delete);
        }
    }

    /// Whether a PostgreSQL standby is left to promote.
    pub fn can_promote(&self) -> bool {
        self.sql.as_ref().is_some_and(|s| s.standby.is_some())
    }

    /// Waits (up to a minute; panics after) for the standby to have
    /// replayed everything the primary wrote, then stops replication
    /// (the proxy freezes): what the primary commits from now on is
    /// missing on the standby.
    pub fn freeze_replication(&mut self) {
        let sql = self.sql_mut();
        let Db::Postgres(primary) = &sql.db else {
            return;
        };
        let Some((standby, proxy)) = &sql.standby else {
            return;
        };
        catch_up(primary, standby);
        proxy.freeze(true);
    }

    /// Kills the primary for good and promotes the standby (returns once
    /// it takes writes): the commits the primary made since
    /// [`Cluster::freeze_replication`] are lost. `None` if there is no
    /// standby (already promoted).
    pub fn promote(&mut self) -> Option<Promotion> {
        let sql = self.sql_mut();
        let (standby, proxy) = sql.standby.take()?;
        let mut old = std::mem::replace(&mut sql.db, Db::Postgres(standby));
        if let Db::Postgres(p) = &mut old {
            if sql.paused {
                p.resume();
            }
            p.kill();
        }
        sql.paused = false;
        sql.killed = false;
        let old_port = old.port();
        let new_port = sql.db.port();
        if let Db::Postgres(p) = &sql.db {
            p.promote();
        }
        drop(proxy);
        if let Db::Postgres(p) = old {
            sql.deposed = Some(p);
        }
        Some(Promotion { old_port, new_port })
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
            _ => Path::new("(scratch directories of the test servers)"),
        }
    }

    /// Copies every member's log into `dir` (`<member>.log`): the
    /// cluster's own directory goes with it.
    pub fn copy_logs(&self, dir: &Path) {
        for m in self.members() {
            let _ = std::fs::copy(m.log_path(), dir.join(format!("{}.log", m.name)));
        }
    }

    /// Undoes every fault left: rules removed, paused members resumed,
    /// killed ones restarted.
    pub fn heal_all(&mut self) {
        self.firewall.heal_all();
        if let Some(sql) = &self.sql {
            let (cut, paused, killed) = (!sql.cut.is_empty(), sql.paused, sql.killed);
            if cut {
                self.heal_database();
            }
            if paused {
                self.resume_database();
            }
            if killed {
                self.restart_database();
            }
        }
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

impl Sql {
    fn new(db: Db, standby: Option<(Postgres, Proxy)>, url: String) -> Sql {
        Sql {
            db,
            standby,
            deposed: None,
            url,
            paused: false,
            killed: false,
            cut: Vec::new(),
        }
    }

    /// Whether the server taking writes answers a query (through its
    /// command-line client, which gives up after 10 s).
    fn answers(&self) -> bool {
        if self.paused || self.killed || !self.cut.is_empty() {
            return false;
        }
        match &self.db {
            Db::Postgres(p) => p.sql("SELECT 1").is_ok(),
            Db::Mariadb(m) => m.sql("SELECT 1").is_ok(),
        }
    }
}

/// Waits, up to a minute, for the standby to have replayed what the
/// primary had written: the writes lost at a promotion are then only the
/// ones made while replication is frozen. Panics after a minute, with
/// both servers' logs ([`PgPair::wait_caught_up`]'s message).
fn catch_up(primary: &Postgres, standby: &Postgres) {
    // PgPair owns its servers; the same query, on ours.
    let target = primary
        .sql("SELECT pg_current_wal_lsn()")
        .unwrap_or_else(|e| panic!("the primary did not say where its WAL ends: {e}"));
    let query = format!("SELECT coalesce(pg_last_wal_replay_lsn() >= '{target}'::pg_lsn, false)");
    let begun = std::time::Instant::now();
    let mut last = Ok(String::new());
    while begun.elapsed() < Duration::from_secs(60) {
        last = standby.sql(&query);
        if matches!(&last, Ok(answer) if answer == "t") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the standby did not replay the primary's WAL up to {target} within 60 s: {last:?}");
}

/// `iptables -w ARGS` (through `sudo -n` unless root); whether it
/// succeeded.
fn iptables(args: &[String]) -> bool {
    let mut command = if flakeid_test_servers::is_root() {
        Command::new("iptables")
    } else {
        let mut c = Command::new("sudo");
        c.args(["-n", "iptables"]);
        c
    };
    command
        .arg("-w")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
