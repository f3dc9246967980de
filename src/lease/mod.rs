//! Node-id leases on etcd or Redis, with fencing.
//!
//! # How a lease works
//!
//! For each node id the store holds two keys under the application's prefix:
//!
//! | etcd | Redis | value |
//! |---|---|---|
//! | `<prefix>/nodes/<id>` | `<prefix>:node:<id>` | the holder's token; bound to an etcd lease, or set with `PX` |
//! | `<prefix>/marks/<id>` | `<prefix>:mark:<id>` | the *mark*: a Unix millisecond no ID of this node id has a later time than; never expires |
//!
//! - **Claim**: the lowest node id in range whose node key is absent and
//!   whose mark is *usable* (at most the claimer's wall clock plus
//!   `Lease::max_mark_ahead`; free node ids with later marks are skipped,
//!   counted, and named in `LeaseError::MarksAhead` if none is left), in one
//!   atomic step that creates the node key and raises the mark to this
//!   holder's *ceiling* (an etcd transaction bound to a lease, comparing the
//!   node key's absence and the mark's revision; a Lua script that takes the
//!   node key with `SET NX PX`, the TTL in milliseconds rounded up). The
//!   mark found is the new holder's *floor*: it issues only after it. On
//!   etcd, a claimer that loses a race picks at random among the lowest 2,
//!   4, 8, ... usable node ids on its next tries; an etcd lease granted with
//!   a shorter TTL than asked is refused.
//! - **Ceiling**: the wall clock plus the TTL and the generator's lead
//!   allowance, or that far past a tick the generator was refused for want
//!   of ceiling under the current grant (a fresh grant forgets such ticks,
//!   and a rotation's claim ignores them).
//! - **Renew** every third of the TTL (sooner while the generator waits for
//!   a higher ceiling): the lease's keep-alive and the mark raised to a new
//!   ceiling, both only if the node key is still this holder's (the etcd
//!   lease compared in a transaction; the token compared by a Lua script).
//! - **Fence**: the generator enters no tick past the ceiling the store has
//!   acknowledged, and issues nothing once renewals have failed for the TTL
//!   less a safety margin (never 0), measured on the monotonic clock from the
//!   moment the last successful renewal request was *sent*. A renewal
//!   answered after that deadline extends nothing, and a generator that
//!   finds the deadline passed closes the fence. It resumes only after a
//!   fresh claim; the claim given up goes back with its mark at the ceiling
//!   the generator was granted (if the store still has it as this holder's).
//! - **Release** on drop: the mark set to the exact last timestamp issued
//!   (left at the ceiling after an `OnClockBehind::NextClock` step back),
//!   and the node key deleted (if still this holder's); etcd's lease revoked.
//!
//! # Threads and blocking
//!
//! Each leased generator has a keeper thread that makes the store's client
//! (for etcd, a current-thread tokio runtime of its own), claims, renews and
//! releases; the client is made, used and dropped on that thread only, so
//! building and dropping work the same inside an async runtime as outside.
//! `build()` waits for the first claim (at most the connect timeout); drop
//! waits for the release (at most the request timeout: a third of the TTL,
//! and no more than the connect timeout).
//!
//! Uniqueness rests on the marks alone: a holder never issues past the mark
//! the store has recorded for it, and the next holder of the node id starts
//! after that mark, so their IDs cannot meet, whatever the clocks or pauses.
//! The fence adds that a holder which lost its store stops within the TTL, so
//! no two live processes issue under one node id at once.

mod keeper;

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(all(test, not(flakeid_loom)))]
mod fleet_sim;
#[cfg(test)]
pub(crate) mod memory;
#[cfg(feature = "redis")]
mod redis;

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use crate::error::LeaseError;
use crate::fence::{Fence, Keeper};
use crate::layout::Layout;

pub(crate) use keeper::Settings;

/// A node-id lease on etcd or Redis, for
/// [`Builder::lease`](crate::Builder::lease): the generator claims the lowest
/// free node id when it is built, keeps the lease alive on a background
/// thread, is fenced while the lease cannot be proven valid, and gives the
/// node id back when it is dropped.
///
/// Defaults: prefix `flakeid`, TTL 10 s, safety margin a fifth of the TTL,
/// 5 s to reach the server at start, the layout's whole node-id range, no
/// rotation, marks up to a minute ahead of the clock usable.
///
/// Under the prefix, each node id has a node key naming its holder (bound to
/// an etcd lease, or set with Redis' `PX`) and a *mark* that never expires:
/// a Unix millisecond no ID of that node id carries a later time than. A
/// claim takes the lowest node id without a node key whose mark is not too
/// far ahead of the clock ([`max_mark_ahead`](Lease::max_mark_ahead)) and, in
/// the same atomic step, reads the mark (the new holder issues only after
/// it) and raises it to the holder's ceiling (the wall clock plus the TTL);
/// renewals raise it
/// further, and the generator never passes the ceiling the store has
/// acknowledged. So successive holders of a node id never issue the same ID,
/// whatever their clocks say. On top of that the generator is fenced: it
/// issues nothing once renewals have failed for the TTL less the safety
/// margin (on the monotonic clock, from when the last good renewal was
/// sent), until a fresh claim. The README's "Across machines" section states
/// the assumptions and the measured costs.
///
/// # Blocking, and async services
///
/// The store's client lives on the generator's keeper thread (etcd's on a
/// tokio runtime of its own there), so a leased generator is built, used and
/// dropped the same way inside an async runtime (either flavor) as outside.
/// [`build`](crate::Builder::build) blocks the calling thread until the
/// first claim succeeds or fails: at most the
/// [connect timeout](Lease::connect_timeout) (5 s by default), during which a
/// current-thread runtime runs nothing else (build once at start, or inside
/// `tokio::task::spawn_blocking`). Dropping the generator blocks until the
/// keeper has recorded the last timestamp and released the node id: at most
/// the request timeout, a third of the TTL and no more than the connect
/// timeout (3.3 s by default), after which the node id is left to expire.
///
/// ```no_run
/// use flakeid::{Generator, Layout, Lease};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # #[cfg(feature = "etcd")]
/// let lease = Lease::etcd(["http://etcd-0.etcd:2379", "http://etcd-1.etcd:2379"]);
/// # #[cfg(all(feature = "redis", not(feature = "etcd")))]
/// # let lease = Lease::redis("redis://redis:6379/");
/// let generator = Generator::builder(Layout::twitter())
///     .lease(lease.prefix("orders/ids").ttl(Duration::from_secs(10)))
///     .build()?; // claims a node id, or fails within the connect timeout
/// println!("node {} issued {}", generator.node_id(), generator.next_id());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
#[must_use]
pub struct Lease {
    store: StoreConfig,
    prefix: String,
    ttl: Duration,
    safety_margin: Option<Duration>,
    connect_timeout: Duration,
    node_ids: Option<RangeInclusive<u64>>,
    rotate_after: Option<Duration>,
    max_mark_ahead: Option<Duration>,
}

#[derive(Clone)]
enum StoreConfig {
    #[cfg(feature = "etcd")]
    Etcd(Vec<String>),
    #[cfg(feature = "redis")]
    Redis(String),
    /// The in-process store of the tests and the fleet simulation.
    #[cfg(test)]
    Memory(memory::MemoryBackend),
}

impl Lease {
    /// Leases node ids from the etcd cluster at `endpoints` (`http://host:port`).
    ///
    /// etcd rounds the TTL up to whole seconds, and to its minimum (1.5 times
    /// its election timeout, 2 s by default); the fence keeps to the TTL you
    /// set, the shorter. A server that grants a shorter TTL than asked is
    /// refused ([`LeaseError::BadReply`]).
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    pub fn etcd<I, E>(endpoints: I) -> Lease
    where
        I: IntoIterator<Item = E>,
        E: Into<String>,
    {
        Lease::new(StoreConfig::Etcd(
            endpoints.into_iter().map(Into::into).collect(),
        ))
    }

    /// Leases node ids from the Redis server at `url` (`redis://[:password@]host:port/[db]`).
    ///
    /// One Redis server, or the primary of a Sentinel setup; not Redis
    /// Cluster (the claim scans keys in one script). For the marks to survive
    /// a crash of Redis itself, run it with `appendonly yes` and
    /// `appendfsync always` (see the README).
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn redis(url: impl Into<String>) -> Lease {
        Lease::new(StoreConfig::Redis(url.into()))
    }

    fn new(store: StoreConfig) -> Lease {
        Lease {
            store,
            prefix: "flakeid".into(),
            ttl: Duration::from_secs(10),
            safety_margin: None,
            connect_timeout: Duration::from_secs(5),
            node_ids: None,
            rotate_after: None,
            max_mark_ahead: None,
        }
    }

    /// A lease on the in-process store `backend` (tests and the simulation).
    #[cfg(test)]
    pub(crate) fn memory(backend: &memory::MemoryBackend) -> Lease {
        Lease::new(StoreConfig::Memory(backend.clone()))
    }

    /// The key prefix, one per application and layout (default `flakeid`).
    /// Generators that share a prefix share the node ids under it.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long the store keeps a claim without renewal (default 10 s). The
    /// keeper renews every third of it. A crashed holder's node id is free
    /// again after one TTL; a holder cut off from the store stops issuing
    /// after the TTL less the safety margin.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How much earlier than the store's expiry the generator stops issuing
    /// when renewals fail (default: a fifth of the TTL). It absorbs the
    /// monotonic clock running slower than the store's, and the store's own
    /// clock jumping forward (Redis expires keys by its wall clock); see the
    /// README for the assumptions. It must be more than 0 and less than the
    /// TTL (building fails with [`LeaseError::Config`] otherwise).
    pub fn safety_margin(mut self, margin: Duration) -> Self {
        self.safety_margin = Some(margin);
        self
    }

    /// How long building may try to reach the server and claim a node id
    /// before it fails with [`LeaseError::Unreachable`] (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The node ids to lease from (default: all the layout has, from 0 to
    /// [`Layout::max_node_id`]), for example to give two datacenters disjoint
    /// ranges under one prefix.
    pub fn node_ids(mut self, range: RangeInclusive<u64>) -> Self {
        self.node_ids = Some(range);
        self
    }

    /// The rotation policy: after the clock reads `threshold` or more behind
    /// the generator's last timestamp (beyond what `OnExhausted::Borrow`
    /// allows it to lead), give the node id back and claim one
    /// whose mark is before the clock, then issue at the real time under it
    /// (the timestamp goes back under the new node id; IDs stay unique).
    /// Without it (the default) the generator's
    /// [`OnClockBehind`](crate::OnClockBehind) policy alone decides.
    pub fn rotate_after_rollback(mut self, threshold: Duration) -> Self {
        self.rotate_after = Some(threshold);
        self
    }

    /// How far past this generator's wall clock a free node id's mark may be
    /// for a claim to take it (default: one minute, or the TTL plus the
    /// generator's lead allowance if that is longer).
    ///
    /// A holder whose clock ran ahead (or a mark written by hand) leaves a
    /// mark this generator's clock would need that long to pass: it would
    /// wait that long before issuing. A claim skips such node ids and takes
    /// the lowest usable one; it fails with [`LeaseError::MarksAhead`] only
    /// if every free node id was skipped. A holder with a correct clock
    /// leaves a mark at most the TTL plus its lead allowance ahead, and by
    /// the time its node id is free again (a TTL after its last renewal) only
    /// the lead allowance; the default tolerates clocks a minute apart on
    /// top. The bound is also the longest a claim can make the generator
    /// wait for its first ID.
    ///
    /// ```
    /// use flakeid::Lease;
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// let lease = lease.max_mark_ahead(Duration::from_secs(5));
    /// # let _ = lease;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_mark_ahead(mut self, bound: Duration) -> Self {
        self.max_mark_ahead = Some(bound);
        self
    }

    /// The server, for messages (a Redis password is masked).
    fn server(&self) -> String {
        match &self.store {
            #[cfg(feature = "etcd")]
            StoreConfig::Etcd(endpoints) => format!("etcd {}", endpoints.join(",")),
            #[cfg(feature = "redis")]
            StoreConfig::Redis(url) => format!("redis {}", mask_password(url)),
            #[cfg(test)]
            StoreConfig::Memory(_) => "memory".into(),
        }
    }

    /// Checks the configuration against the generator's layout and time lead.
    fn settings(&self, layout: &Layout, lead: Duration) -> Result<Settings, LeaseError> {
        let config = |reason: String| Err(LeaseError::Config { reason });
        let margin = self.safety_margin.unwrap_or(self.ttl / 5);
        if self.ttl < Duration::from_millis(100) {
            return config(format!("the TTL ({:?}) is shorter than 100 ms", self.ttl));
        }
        if margin.is_zero() {
            return config(
                "the safety margin is 0: it must absorb the monotonic clock running slower \
                 than the store's"
                    .into(),
            );
        }
        if margin >= self.ttl {
            return config(format!(
                "the safety margin ({margin:?}) is not shorter than the TTL ({:?})",
                self.ttl
            ));
        }
        let (first, last) = match &self.node_ids {
            Some(range) => (*range.start(), *range.end()),
            None => (0, layout.max_node_id()),
        };
        if first > last || last > layout.max_node_id() {
            return config(format!(
                "node ids {first}..={last} are not a non-empty range within the layout's 0..={}",
                layout.max_node_id()
            ));
        }
        if self.prefix.is_empty() {
            return config("the key prefix is empty".into());
        }
        let unit = Duration::from_millis(layout.unit_ms());
        let rotate_after_ticks = match self.rotate_after {
            None => 0,
            Some(threshold) if threshold < unit => {
                return config(format!(
                    "the rotation threshold ({threshold:?}) is shorter than the layout's time unit"
                ));
            }
            Some(threshold) => u64::try_from(threshold.as_millis() / u128::from(layout.unit_ms()))
                .unwrap_or(u64::MAX),
        };
        let ahead = self.ttl.saturating_add(lead);
        Ok(Settings {
            layout: layout.clone(),
            first,
            last,
            ttl: self.ttl,
            margin,
            connect_timeout: self.connect_timeout,
            ahead,
            usable_ahead: self
                .max_mark_ahead
                .unwrap_or_else(|| Duration::from_secs(60).max(ahead)),
            rotate_after_ticks,
            server: self.server(),
            wall: keeper::WallClock::system(),
        })
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("server", &self.server())
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("safety_margin", &self.safety_margin.unwrap_or(self.ttl / 5))
            .field("connect_timeout", &self.connect_timeout)
            .field("node_ids", &self.node_ids)
            .field("rotate_after_rollback", &self.rotate_after)
            .field("max_mark_ahead", &self.max_mark_ahead)
            .finish()
    }
}

/// `redis://user:secret@host/` as `redis://user:***@host/`.
#[cfg(feature = "redis")]
fn mask_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.into();
    };
    match rest.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or("", |(user, _)| user);
            format!("{scheme}://{user}:***@{host}")
        }
        None => url.into(),
    }
}

/// A token no other holder has: the process, the time, and a random seed.
fn token() -> String {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{:016x}{:016x}",
        std::process::id(),
        random.hash_one(nanos),
        random.hash_one((nanos, std::thread::current().id()))
    )
}

/// Claims a node id for a generator being built: returns its keeper once the
/// fence is open. The store is made, used and dropped on the keeper's thread
/// only; this waits for the first claim (up to the connect timeout).
pub(crate) fn start(
    lease: &Lease,
    layout: &Layout,
    lead: Duration,
    fence: &Arc<Fence>,
) -> Result<Box<dyn Keeper>, LeaseError> {
    let settings = lease.settings(layout, lead)?;
    let token = token();
    let prefix = lease.prefix.clone();
    let fence = fence.clone();
    match &lease.store {
        #[cfg(feature = "etcd")]
        StoreConfig::Etcd(endpoints) => {
            let endpoints = endpoints.clone();
            let make = move |s: &Settings| etcd::EtcdStore::new(endpoints, &prefix, s, token);
            Ok(Box::new(keeper::start(make, settings, fence)?))
        }
        #[cfg(feature = "redis")]
        StoreConfig::Redis(url) => {
            let url = url.clone();
            let make = move |s: &Settings| redis::RedisStore::new(&url, &prefix, s, token);
            Ok(Box::new(keeper::start(make, settings, fence)?))
        }
        #[cfg(test)]
        StoreConfig::Memory(backend) => {
            let backend = backend.clone();
            let _ = (prefix, token);
            let make = move |s: &Settings| Ok(backend.store(s));
            Ok(Box::new(keeper::start(make, settings, fence)?))
        }
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    fn any_lease() -> Lease {
        #[cfg(feature = "etcd")]
        return Lease::etcd(["http://127.0.0.1:1"]);
        #[cfg(not(feature = "etcd"))]
        return Lease::redis("redis://127.0.0.1:1/");
    }

    #[test]
    fn bad_configurations_are_named() {
        let layout = Layout::twitter();
        let lead = Duration::ZERO;
        let reason = |lease: Lease| match lease.settings(&layout, lead) {
            Err(LeaseError::Config { reason }) => reason,
            other => panic!("expected a configuration error, got {other:?}"),
        };
        assert!(reason(any_lease().ttl(Duration::from_millis(10))).contains("TTL"));
        assert!(
            reason(
                any_lease()
                    .ttl(Duration::from_secs(2))
                    .safety_margin(Duration::from_secs(2))
            )
            .contains("safety margin")
        );
        assert!(reason(any_lease().safety_margin(Duration::ZERO)).contains("safety margin is 0"));
        assert!(reason(any_lease().node_ids(5..=1024)).contains("0..=1023"));
        assert!(reason(any_lease().prefix("")).contains("prefix"));
        let settings = any_lease().node_ids(3..=9).settings(&layout, lead).unwrap();
        assert_eq!((settings.first, settings.last), (3, 9));
        assert_eq!(
            settings.margin,
            Duration::from_secs(2),
            "a fifth of the TTL"
        );
    }

    #[cfg(feature = "redis")]
    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            mask_password("redis://app:s3cret@cache:6379/0"),
            "redis://app:***@cache:6379/0"
        );
        assert_eq!(mask_password("redis://cache:6379/"), "redis://cache:6379/");
        let lease = Lease::redis("redis://:s3cret@cache/");
        assert!(!format!("{lease:?}").contains("s3cret"));
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(token(), token());
    }
}
