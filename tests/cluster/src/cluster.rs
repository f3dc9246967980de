//! The store's cluster for a run: a 3-member etcd cluster or Redis with a
//! primary, two replicas and three sentinels, each member on a loopback
//! address of its own, and the firewall that isolates members.

use std::path::Path;
use std::time::Duration;

use flakeid_test_servers::{
    EtcdCluster, Firewall, MASTER_NAME, Member, RedisSentinel, loopback_block,
};

use crate::worker::Store;

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
