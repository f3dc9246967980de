//! The memory store's servers: one, or a primary and its replicas with
//! asynchronous replication, failed over the way Redis Sentinel does it.
//!
//! Each server has its own copy of the data. A primary applies a write at
//! once and logs it with the store's time; a replica applies its primary's
//! log `lag_ms` behind, while the link between them is up (neither paused,
//! both on the same side of a partition). `WAIT n` makes the `n` fastest
//! linked replicas catch up at once (they acknowledged) and leaves the
//! others lagging. A promotion makes a replica a primary under a new
//! replication id with the data it has, and the replicas that can reach it
//! copy its data (a full resync): writes the old primary had that the new
//! one lacks are lost, acknowledged or not. The old primary goes on as a
//! primary, by its own view, until it is demoted (it then copies the new
//! one's data).

use std::collections::{BTreeMap, VecDeque};

use super::NodeKey;

/// One server's data: node keys, marks, the epoch key and the record of
/// TTLs in use.
#[derive(Debug, Clone, Default)]
pub(crate) struct Data {
    pub(crate) nodes: BTreeMap<u64, NodeKey>,
    pub(crate) marks: BTreeMap<u64, u64>,
    /// `<prefix>:epoch`.
    pub(crate) epoch: Option<Epoch>,
    /// `<prefix>:ttls`: each TTL a claim or renewal used (ms), and the
    /// latest store time a lease of it may last until.
    pub(crate) ttls: BTreeMap<u64, u64>,
}

/// `<prefix>:epoch`: the replication id of the primary that serves the
/// data, the store time from which it did, and the longest TTL its first
/// claims wait out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Epoch {
    pub(crate) replid: u64,
    pub(crate) since: u64,
    pub(crate) longest: u64,
}

impl Data {
    /// The node key of `node` if it has not expired.
    pub(crate) fn live(&self, node: u64, now_ms: u64) -> Option<NodeKey> {
        self.nodes
            .get(&node)
            .copied()
            .filter(|key| key.expires_ms > now_ms)
    }

    fn apply(&mut self, write: &Write) {
        match *write {
            Write::Node(node, Some(key)) => {
                self.nodes.insert(node, key);
            }
            Write::Node(node, None) => {
                self.nodes.remove(&node);
            }
            Write::Mark(node, mark) => {
                self.marks.insert(node, mark);
            }
            Write::Epoch(epoch) => self.epoch = Some(epoch),
            Write::Ttl(ttl, till) => {
                let kept = self.ttls.entry(ttl).or_default();
                *kept = (*kept).max(till);
            }
        }
    }
}

/// A write, as a primary logs it for its replicas.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Write {
    Node(u64, Option<NodeKey>),
    Mark(u64, u64),
    Epoch(Epoch),
    /// A TTL in use (ms), and until when a lease of it may last.
    Ttl(u64, u64),
}

/// One data node.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) data: Data,
    pub(crate) replid: u64,
    /// The server it replicates (`None`: a primary, by its own view).
    pub(crate) follows: Option<usize>,
    /// A primary's writes with their store times, from `log_base` on.
    log: VecDeque<(u64, Write)>,
    log_base: u64,
    /// A replica's position in its primary's log.
    applied: u64,
    /// How far behind its primary a replica applies writes (store ms).
    pub(crate) lag_ms: u64,
    /// Paused or killed: it answers nothing and replicates nothing.
    pub(crate) paused: bool,
    /// Which side of a partition it is on (0: with the sentinels).
    pub(crate) side: u8,
}

/// The data nodes, and which one the sentinels name.
#[derive(Debug)]
pub(crate) struct Servers {
    pub(crate) all: Vec<Server>,
    /// The primary the sentinels name.
    pub(crate) named: usize,
    /// A deposed primary that a sentinel behind the others may still name:
    /// one resolution in three finds it.
    pub(crate) stale: Option<usize>,
    resolutions: u64,
    next_replid: u64,
}

impl Servers {
    /// A primary (server 0) and replicas lagging `lags` ms behind it.
    pub(crate) fn new(lags: &[u64]) -> Servers {
        let mut all = vec![Server::new(1, None, 0)];
        for (i, &lag) in lags.iter().enumerate() {
            all.push(Server::new(2 + i as u64, Some(0), lag));
        }
        Servers {
            all,
            named: 0,
            stale: None,
            resolutions: 0,
            next_replid: 2 + lags.len() as u64,
        }
    }

    /// The primary a client that asks the sentinels now is sent to.
    pub(crate) fn resolve(&mut self) -> usize {
        self.resolutions += 1;
        match self.stale {
            Some(stale) if self.resolutions.is_multiple_of(3) => stale,
            _ => self.named,
        }
    }

    fn linked(&self, replica: usize) -> Option<usize> {
        let r = &self.all[replica];
        let p = r.follows?;
        let primary = &self.all[p];
        (!r.paused && !primary.paused && r.side == primary.side).then_some(p)
    }

    /// Replicas apply what their lag lets them of their primaries' logs,
    /// and logs every replica has applied are trimmed.
    pub(crate) fn replicate(&mut self, now_ms: u64) {
        for r in 0..self.all.len() {
            let Some(p) = self.linked(r) else { continue };
            let lag = self.all[r].lag_ms;
            self.catch_up(r, p, |at| at.saturating_add(lag) <= now_ms);
        }
        for p in 0..self.all.len() {
            let oldest = (0..self.all.len())
                .filter(|&r| self.all[r].follows == Some(p))
                .map(|r| self.all[r].applied)
                .min();
            let primary = &mut self.all[p];
            let upto = oldest.unwrap_or(primary.log_base + primary.log.len() as u64);
            while primary.log_base < upto && primary.log.pop_front().is_some() {
                primary.log_base += 1;
            }
        }
    }

    /// Replica `r` applies primary `p`'s writes from where it is, while
    /// `due` says a write's time has come.
    fn catch_up(&mut self, r: usize, p: usize, due: impl Fn(u64) -> bool) {
        let (base, end) = {
            let primary = &self.all[p];
            (
                primary.log_base,
                primary.log_base + primary.log.len() as u64,
            )
        };
        let mut at = self.all[r].applied.max(base);
        while at < end {
            let (time, write) = self.all[p].log[(at - base) as usize];
            if !due(time) {
                break;
            }
            self.all[r].data.apply(&write);
            at += 1;
        }
        self.all[r].applied = at;
    }

    /// A write on primary `p`: applied, and logged for its replicas (the
    /// log is trimmed as they apply it).
    pub(crate) fn write(&mut self, p: usize, now_ms: u64, write: Write) {
        let primary = &mut self.all[p];
        primary.data.apply(&write);
        primary.log.push_back((now_ms, write));
    }

    /// Replicas linked to primary `p` now.
    pub(crate) fn online(&self, p: usize) -> u32 {
        (0..self.all.len())
            .filter(|&r| self.linked(r) == Some(p))
            .count() as u32
    }

    /// `WAIT n` on primary `p`: the `n` fastest linked replicas acknowledge
    /// (they have every write of `p` now); how many did.
    pub(crate) fn wait(&mut self, p: usize, n: u32) -> u32 {
        let mut linked: Vec<usize> = (0..self.all.len())
            .filter(|&r| self.linked(r) == Some(p))
            .collect();
        linked.sort_by_key(|&r| self.all[r].lag_ms);
        linked.truncate(n as usize);
        for &r in &linked {
            self.catch_up(r, p, |_| true);
        }
        linked.len() as u32
    }

    /// Promotes replica `r`: a primary under a new replication id, named by
    /// the sentinels; the other replicas on its side copy its data and
    /// follow it. The old primary is left as it is (still a primary by its
    /// own view, whatever its state).
    pub(crate) fn promote(&mut self, r: usize) {
        let old = self.named;
        let replid = self.next_replid;
        self.next_replid += 1;
        let server = &mut self.all[r];
        server.follows = None;
        server.replid = replid;
        server.log.clear();
        server.log_base = 0;
        self.named = r;
        for other in 0..self.all.len() {
            let s = &self.all[other];
            if other != r && other != old && s.follows.is_some() && s.side == self.all[r].side {
                self.resync(other, r);
            }
        }
    }

    /// Server `s` becomes a replica of `primary`, with a copy of its data.
    pub(crate) fn resync(&mut self, s: usize, primary: usize) {
        let data = self.all[primary].data.clone();
        let applied = self.all[primary].log_base + self.all[primary].log.len() as u64;
        let server = &mut self.all[s];
        server.data = data;
        server.follows = Some(primary);
        server.applied = applied;
        server.log.clear();
        server.log_base = 0;
        if self.stale == Some(s) {
            self.stale = None;
        }
    }

    /// The replica of `p` that has applied the most of its log.
    pub(crate) fn freshest_replica(&self, p: usize) -> Option<usize> {
        (0..self.all.len())
            .filter(|&r| self.all[r].follows == Some(p))
            .max_by_key(|&r| (self.all[r].applied, std::cmp::Reverse(r)))
    }
}

impl Server {
    fn new(replid: u64, follows: Option<usize>, lag_ms: u64) -> Server {
        Server {
            data: Data::default(),
            replid,
            follows,
            log: VecDeque::new(),
            log_base: 0,
            applied: 0,
            lag_ms,
            paused: false,
            side: 0,
        }
    }
}
