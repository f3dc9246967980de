//! The model's store: Redis behind Sentinel, reduced to what the lease
//! protocol depends on. A primary that applies each write at once; a
//! replica that `WAIT 1` waits for (it has every claim and renewal); a
//! lagging replica that catches up only when the checker says so
//! ([`Action::Sync`](super::state::Action::Sync)), and that a failover
//! promotes, losing what it had not received; the deposed primary, which
//! answers the holders still connected to it until a request of theirs
//! fails. The claim, renewal and release rules, the epoch rule and the
//! record of TTLs in use are the memory store's (`src/tests/memory`), over
//! integer ticks; the store-side plants are planted here as there.

use crate::lease::keeper::Ask;
use crate::plant::Plant;

/// A node key: who holds the node id, under which claim, until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) holder: u8,
    /// The tick the claim was applied at: the claim's handle (a later
    /// claim of the same node id by the same holder is another claim).
    pub(crate) since: u8,
    pub(crate) expires: u8,
}

/// `<prefix>:epoch`: the replication id of the primary serving the data,
/// since when, and the longest TTL its first claims wait out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Epoch {
    pub(crate) replid: u8,
    pub(crate) since: u8,
    pub(crate) longest: u8,
}

/// One server's copy of the lease data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Data {
    pub(crate) keys: Vec<Option<Key>>,
    pub(crate) marks: Vec<u8>,
    pub(crate) epoch: Epoch,
    /// `<prefix>:ttls`, by holder (each holder has one TTL): until when a
    /// lease of that TTL may last (0: never noted).
    pub(crate) ttls: Vec<u8>,
    /// Ghost: the same record, kept whatever the plant (what the
    /// honest store would know).
    pub(crate) noted: Vec<u8>,
}

impl Data {
    pub(crate) fn new(nodes: usize, holders: usize) -> Data {
        Data {
            keys: vec![None; nodes],
            marks: vec![0; nodes],
            // Served since tick 0: the model's time starts past every TTL.
            epoch: Epoch {
                replid: 1,
                since: 0,
                longest: 0,
            },
            ttls: vec![0; holders],
            noted: vec![0; holders],
        }
    }

    /// The node key of `node` if it has not expired at `now`.
    pub(crate) fn live(&self, node: usize, now: u8) -> Option<Key> {
        self.keys[node].filter(|key| key.expires > now)
    }
}

/// A server's role.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Server {
    pub(crate) data: Data,
    pub(crate) replid: u8,
    /// Replicas that acknowledge its writes (`WAIT`).
    pub(crate) replicas: u8,
}

/// The store: the named primary, the lagging replica (until a failover
/// promotes it) and the deposed primary (after one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Store {
    pub(crate) primary: Server,
    pub(crate) lagging: Option<Data>,
    pub(crate) deposed: Option<Server>,
}

/// Which server a request reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum On {
    Primary,
    Deposed,
}

/// A claim as the store answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Granted {
    pub(crate) node: u8,
    pub(crate) since: u8,
    pub(crate) mark: u8,
    pub(crate) ceiling: u8,
    /// Ticks to wait before the fence may open (the epoch rule).
    pub(crate) wait: u8,
}

/// What the store's rules need of one holder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Who {
    pub(crate) holder: u8,
    pub(crate) ttl: u8,
}

impl Store {
    pub(crate) fn new(nodes: usize, holders: usize) -> Store {
        let data = Data::new(nodes, holders);
        Store {
            primary: Server {
                data: data.clone(),
                replid: 1,
                replicas: 1,
            },
            lagging: Some(data),
            deposed: None,
        }
    }

    pub(crate) fn server(&mut self, on: On) -> &mut Server {
        match on {
            On::Primary => &mut self.primary,
            On::Deposed => self.deposed.as_mut().expect("a deposed primary"),
        }
    }

    /// The lagging replica receives everything the primary has.
    pub(crate) fn sync(&mut self) {
        if let Some(lagging) = &mut self.lagging {
            *lagging = self.primary.data.clone();
        }
    }

    /// Whether a failover now keeps the crate's guarantee: the lagging
    /// replica has a current record of the TTL of every lease in use on
    /// the primary. (One that missed every claim and renewal of a TTL
    /// longer than all others lets the epoch wait out too short a
    /// stretch: a limit the crate documents.)
    pub(crate) fn may_fail_over(&self, now: u8, ttls: &[u8]) -> bool {
        let Some(lagging) = &self.lagging else {
            return false;
        };
        let primary = &self.primary.data;
        (0..primary.keys.len()).all(|node| {
            primary.live(node, now).is_none_or(|key| {
                let h = usize::from(key.holder);
                lagging.noted[h].saturating_add(ttls[h]) > now
            })
        })
    }

    /// Sentinel promotes the lagging replica under a new replication id;
    /// the other replica resyncs from it; the old primary, still a
    /// primary by its own view, keeps its data and no replica.
    pub(crate) fn fail_over(&mut self) {
        let data = self.lagging.take().expect("a replica to promote");
        let old = std::mem::replace(
            &mut self.primary,
            Server {
                data,
                replid: 2,
                replicas: 1,
            },
        );
        self.deposed = Some(Server { replicas: 0, ..old });
    }
}

/// As the memory store's `start_epoch`: how long a claim on `server` at
/// `now` waits, starting the server's epoch if the data is new to it;
/// `Err` if it cannot start one (no replica).
fn start_epoch(
    server: &mut Server,
    now: u8,
    who: Who,
    ttls: &[u8],
    plant: Option<Plant>,
) -> Result<u8, ()> {
    let epoch = server.data.epoch;
    if epoch.replid == server.replid {
        let longest = who.ttl.max(epoch.longest);
        return Ok(epoch.since.saturating_add(longest).saturating_sub(now));
    }
    if server.replicas == 0 {
        return Err(());
    }
    let mut longest = who.ttl;
    if plant != Some(Plant::EpochOwnTtl) {
        for (h, &till) in server.data.ttls.iter().enumerate() {
            let ttl = ttls[h];
            if ttl > longest && till.saturating_add(ttl) > now {
                longest = ttl;
            }
        }
    }
    server.data.epoch = Epoch {
        replid: server.replid,
        since: now,
        longest,
    };
    Ok(longest)
}

/// A claim or renewal's TTL noted in the record.
fn note_ttl(data: &mut Data, now: u8, who: Who, plant: Option<Plant>) {
    let noted = &mut data.noted[usize::from(who.holder)];
    *noted = (*noted).max(now.saturating_add(who.ttl));
    if plant != Some(Plant::EpochOwnTtl) {
        let till = &mut data.ttls[usize::from(who.holder)];
        *till = (*till).max(now.saturating_add(who.ttl));
    }
}

/// Whether `WAIT 1` counts on `server`: a replica acknowledged, or (the
/// plant) it counts anyway.
fn acknowledged(server: &Server, plant: Option<Plant>) -> bool {
    server.replicas > 0 || plant == Some(Plant::WaitShortCounted)
}

/// A claim at `now` on `server`: the lowest free node id that `ask`
/// takes (the keeper's own [`Ask::takes`]). `Ok(None)`: none free.
pub(crate) fn claim(
    server: &mut Server,
    now: u8,
    who: Who,
    ttls: &[u8],
    ask: &Ask,
    plant: Option<Plant>,
) -> Result<Option<Granted>, ()> {
    let wait = start_epoch(server, now, who, ttls, plant)?;
    let data = &mut server.data;
    let mut granted = None;
    for node in 0..data.keys.len() {
        if data.live(node, now).is_some() {
            continue;
        }
        let mark = data.marks[node];
        if ask.takes(u64::from(mark)) != Ok(true) {
            continue;
        }
        data.keys[node] = Some(Key {
            holder: who.holder,
            since: now,
            expires: now.saturating_add(who.ttl),
        });
        let ceiling = mark.max(ask.ceiling_ms as u8);
        data.marks[node] = ceiling;
        note_ttl(data, now, who, plant);
        granted = Some(Granted {
            node: node as u8,
            since: now,
            mark,
            ceiling,
            wait,
        });
        break;
    }
    if !acknowledged(server, plant) {
        // Given back: it counts for nothing.
        if let Some(g) = granted {
            server.data.keys[usize::from(g.node)] = None;
        }
        return Err(());
    }
    Ok(granted)
}

/// A renewal at `now` of the claim `(node, since)` raising its mark to
/// `ceiling`: `Ok(false)` if the claim is no longer the holder's.
pub(crate) fn renew(
    server: &mut Server,
    now: u8,
    who: Who,
    node: u8,
    since: u8,
    ceiling: u8,
    plant: Option<Plant>,
) -> Result<bool, ()> {
    let data = &mut server.data;
    let node = usize::from(node);
    let Some(key) = data
        .live(node, now)
        .filter(|key| key.holder == who.holder && key.since == since)
    else {
        return Ok(false);
    };
    data.keys[node] = Some(Key {
        expires: now.saturating_add(who.ttl),
        ..key
    });
    note_ttl(data, now, who, plant);
    // A renewal raises the mark only from below: a copy applied late (a
    // hedged or retried request) must not lower what a later renewal
    // recorded. Unguarded (the etcd store's plant), it sets it.
    if data.marks[node] < ceiling || plant == Some(Plant::EtcdMarkUnguarded) {
        data.marks[node] = ceiling;
    }
    if !acknowledged(server, plant) {
        return Err(());
    }
    Ok(true)
}

/// A release at `now`: the mark set to `mark` if given, the key deleted,
/// if the claim is still the holder's.
pub(crate) fn release(
    server: &mut Server,
    now: u8,
    who: Who,
    node: u8,
    since: u8,
    mark: Option<u8>,
) {
    let data = &mut server.data;
    let node = usize::from(node);
    if data
        .live(node, now)
        .is_some_and(|key| key.holder == who.holder && key.since == since)
    {
        if let Some(mark) = mark {
            data.marks[node] = mark;
        }
        data.keys[node] = None;
    }
}
