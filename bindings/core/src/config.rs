//! What a generator is built from: [`Config`], its node source
//! ([`NodeSource`], [`LeaseConfig`]) and restart safety ([`PersistConfig`]),
//! plus the named policies and durations both languages read the same way.

use std::path::PathBuf;
use std::time::Duration;

use flakeid::{Layout, OnClockBehind, OnExhausted, RestartRule};

use crate::error::{Error, ErrorKind};

/// Everything a [`Generator`](crate::Generator) is built from. Plain data:
/// each binding fills it from its own arguments. The defaults are the
/// library's: no node id (building refuses, so no replica silently gets
/// node 0), `OnExhausted::Wait`, `OnClockBehind::Continue`, sequence from
/// 0, clock id 0, counters off, no persistence.
///
/// ```
/// use flakeid_bindings::{Config, Generator, NodeSource};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut config = Config::new("twitter")?;
/// config.node = NodeSource::Fields(vec![("datacenter".into(), 1), ("worker".into(), 7)]);
/// let generator = Generator::build(config)?;
/// assert_eq!(generator.node_id()?, 1 << 5 | 7);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The bit plan of the IDs.
    pub layout: Layout,
    /// Where the node id comes from.
    pub node: NodeSource,
    /// What to do when a tick's sequence is used up ([`on_exhausted`]).
    pub on_exhausted: OnExhausted,
    /// What to do when the clock reads behind ([`on_clock_behind`]).
    pub on_clock_behind: OnClockBehind,
    /// Start each tick's sequence below this random bound instead of at 0.
    pub random_start: Option<u64>,
    /// The random start's seed (tests).
    pub seed: Option<u64>,
    /// The first clock id, for layouts with a clock-id field.
    pub clock_id: u64,
    /// Keep the counters of [`Generator::stats`](crate::Generator::stats).
    pub counters: bool,
    /// Restart safety: a saved high-water mark.
    pub persist: Option<PersistConfig>,
}

impl Config {
    /// A configuration for the layout `layout` (a preset name or the
    /// library's spec text, see [`parse_layout`](crate::parse_layout)) with
    /// the defaults above.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Layout`] if the layout does not parse.
    ///
    /// ```
    /// use flakeid_bindings::Config;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::new("epoch=1700000000000 fields=timestamp:41,shard:10,sequence:12")?;
    /// assert_eq!(config.layout.max_node_id(), 1023);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(layout: &str) -> Result<Config, Error> {
        Ok(Config::with_layout(crate::parse_layout(layout)?))
    }

    /// A configuration for an already parsed layout.
    ///
    /// ```
    /// use flakeid_bindings::Config;
    ///
    /// let config = Config::with_layout(flakeid::Layout::discord());
    /// assert_eq!(config.clock_id, 0);
    /// ```
    pub fn with_layout(layout: Layout) -> Config {
        Config {
            layout,
            node: NodeSource::Unset,
            on_exhausted: OnExhausted::default(),
            on_clock_behind: OnClockBehind::default(),
            random_start: None,
            seed: None,
            clock_id: 0,
            counters: false,
            persist: None,
        }
    }
}

/// Where a generator's node id comes from.
///
/// Only a [`Lease`](NodeSource::Lease) survives a fork: every other source
/// names one node id per configuration, which a forked child would share
/// with its parent and siblings (see the [`Generator`](crate::Generator#fork-safety)
/// docs).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum NodeSource {
    /// None chosen: building refuses ([`ErrorKind::NodeId`], detail
    /// `not_set`) if the layout has node fields.
    #[default]
    Unset,
    /// All node fields as one number, the first field highest.
    Id(u64),
    /// Named node fields, every one of the layout's (building refuses a
    /// field left out: [`ErrorKind::NodeId`], detail `field_not_set`).
    Fields(Vec<(String, u64)>),
    /// A decimal node id in this environment variable, read at build.
    Env(String),
    /// The ordinal of the StatefulSet pod this process runs in (the host
    /// name's `-<digits>` suffix), read at build.
    StatefulSet,
    /// The StatefulSet ordinal in this host name.
    Hostname(String),
    /// Node id 0, on purpose: the only generator of its layout.
    Single,
    /// A node id leased from etcd, Redis, PostgreSQL or MySQL/MariaDB, with
    /// fencing.
    Lease(LeaseConfig),
}

/// A node-id lease: the store and the library's `Lease` settings (`None`
/// keeps the library's default).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaseConfig {
    /// The store.
    pub store: LeaseStore,
    /// The key prefix (default `flakeid`).
    pub prefix: Option<String>,
    /// The lease's time to live (default 10 s).
    pub ttl: Option<Duration>,
    /// The fence's safety margin (default a fifth of the TTL).
    pub safety_margin: Option<Duration>,
    /// How long the first claim may take (default 5 s).
    pub connect_timeout: Option<Duration>,
    /// The node ids to claim from, first and last (default the layout's).
    pub node_ids: Option<(u64, u64)>,
    /// Rotate to a fresh node id after a clock rollback of this much.
    pub rotate_after_rollback: Option<Duration>,
    /// How far ahead of the clock a free node id's mark may be.
    pub max_mark_ahead: Option<Duration>,
    /// Replicas that must acknowledge each claim and renewal (Redis only).
    pub wait_for_replicas: Option<u32>,
    /// The table of the leases (PostgreSQL and MySQL only; default
    /// `flakeid_leases`).
    pub table: Option<String>,
    /// Whether the first claim creates the table if it is missing
    /// (PostgreSQL and MySQL only; default yes).
    pub create_table: Option<bool>,
}

impl LeaseConfig {
    /// A lease on `store` with the library's defaults.
    ///
    /// ```
    /// use flakeid_bindings::{LeaseConfig, LeaseStore};
    ///
    /// let lease = LeaseConfig::new(LeaseStore::Redis("redis://127.0.0.1:6379/".into()));
    /// assert!(lease.ttl.is_none());
    /// ```
    pub fn new(store: LeaseStore) -> LeaseConfig {
        LeaseConfig {
            store,
            prefix: None,
            ttl: None,
            safety_margin: None,
            connect_timeout: None,
            node_ids: None,
            rotate_after_rollback: None,
            max_mark_ahead: None,
            wait_for_replicas: None,
            table: None,
            create_table: None,
        }
    }

    /// The library's `Lease`.
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    pub(crate) fn lease(&self) -> Result<flakeid::Lease, Error> {
        let mut lease = match &self.store {
            #[cfg(feature = "etcd")]
            LeaseStore::Etcd(endpoints) => flakeid::Lease::etcd(endpoints.iter().cloned()),
            #[cfg(feature = "redis")]
            LeaseStore::Redis(url) => flakeid::Lease::redis(url.clone()),
            #[cfg(feature = "redis")]
            LeaseStore::RedisSentinel { sentinels, master } => {
                flakeid::Lease::redis_sentinel(sentinels.iter().cloned(), master.clone())
            }
            #[cfg(feature = "postgres")]
            LeaseStore::Postgres(url) => flakeid::Lease::postgres(url.clone()),
            #[cfg(feature = "mysql")]
            LeaseStore::Mysql(url) => flakeid::Lease::mysql(url.clone()),
            #[allow(unreachable_patterns)]
            other => return Err(not_built_with(other)),
        };
        if let Some(prefix) = &self.prefix {
            lease = lease.prefix(prefix.clone());
        }
        if let Some(ttl) = self.ttl {
            lease = lease.ttl(ttl);
        }
        if let Some(margin) = self.safety_margin {
            lease = lease.safety_margin(margin);
        }
        if let Some(timeout) = self.connect_timeout {
            lease = lease.connect_timeout(timeout);
        }
        if let Some((first, last)) = self.node_ids {
            lease = lease.node_ids(first..=last);
        }
        if let Some(threshold) = self.rotate_after_rollback {
            lease = lease.rotate_after_rollback(threshold);
        }
        if let Some(bound) = self.max_mark_ahead {
            lease = lease.max_mark_ahead(bound);
        }
        if let Some(n) = self.wait_for_replicas {
            #[cfg(feature = "redis")]
            {
                lease = lease.wait_for_replicas(n);
            }
            #[cfg(not(feature = "redis"))]
            {
                let _ = n;
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "wait_for_replicas applies to Redis leases, not {}",
                        self.store.name()
                    ),
                ));
            }
        }
        // The library refuses both on an etcd or Redis lease (`Config`).
        if let Some(table) = &self.table {
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            {
                lease = lease.table(table.clone());
            }
            #[cfg(not(any(feature = "postgres", feature = "mysql")))]
            {
                let _ = table;
                return Err(not_sql("table", &self.store));
            }
        }
        if let Some(create) = self.create_table {
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            {
                lease = lease.create_table(create);
            }
            #[cfg(not(any(feature = "postgres", feature = "mysql")))]
            {
                let _ = create;
                return Err(not_sql("create_table", &self.store));
            }
        }
        Ok(lease)
    }
}

/// The refusal of a SQL store's setting on another store, in a build
/// without the SQL stores (the library's own refusal otherwise).
#[cfg(all(
    any(feature = "etcd", feature = "redis"),
    not(any(feature = "postgres", feature = "mysql"))
))]
fn not_sql(setting: &str, store: &LeaseStore) -> Error {
    Error::new(
        ErrorKind::Config,
        format!(
            "{setting} applies to PostgreSQL and MySQL leases, not {}",
            store.name()
        ),
    )
}

/// Where node ids are leased.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LeaseStore {
    /// An etcd cluster: every member's client URL (`http://host:2379`).
    Etcd(Vec<String>),
    /// One Redis server (`redis://[:password@]host:port/[db]`).
    Redis(String),
    /// Redis behind Sentinel: the sentinels' addresses and the master's name.
    RedisSentinel {
        /// `redis://host:port` or `host:port`, one per sentinel.
        sentinels: Vec<String>,
        /// The name the sentinels monitor (or a URL with it as host).
        master: String,
    },
    /// A PostgreSQL server: `postgres://user:password@host:port/db`
    /// (`?sslmode=require` for TLS; several hosts with
    /// `target_session_attrs=read-write`), or the `key=value` form.
    Postgres(String),
    /// A MySQL 8 or MariaDB 10.11 server:
    /// `mysql://user:password@host:port/db`.
    Mysql(String),
}

impl LeaseStore {
    /// `etcd`, `redis`, `redis_sentinel`, `postgres` or `mysql`.
    pub fn name(&self) -> &'static str {
        match self {
            LeaseStore::Etcd(_) => "etcd",
            LeaseStore::Redis(_) => "redis",
            LeaseStore::RedisSentinel { .. } => "redis_sentinel",
            LeaseStore::Postgres(_) => "postgres",
            LeaseStore::Mysql(_) => "mysql",
        }
    }
}

/// The refusal for a store this build has no client for.
pub(crate) fn not_built_with(store: &LeaseStore) -> Error {
    let feature = match store {
        LeaseStore::Etcd(_) => "etcd",
        LeaseStore::Redis(_) | LeaseStore::RedisSentinel { .. } => "redis",
        LeaseStore::Postgres(_) => "postgres",
        LeaseStore::Mysql(_) => "mysql",
    };
    Error::new(
        ErrorKind::Config,
        format!(
            "this build of flakeid has no {} lease support (the `{feature}` feature)",
            store.name()
        ),
    )
}

/// Restart safety: the library's `Persist::file` and its settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PersistConfig {
    /// The state file (`<path>.lock` and `<path>.tmp` beside it).
    pub path: PathBuf,
    /// How far ahead the mark is saved (default 1 s, at most an hour).
    pub window: Option<Duration>,
    /// How a restarted generator picks its clock id.
    pub restart_rule: RestartRule,
    /// `OnInvalidState::Replace`: the operator's word that this node issued
    /// nothing after this Unix millisecond (`None`: refuse a bad state).
    pub replace_issued_until_ms: Option<u64>,
}

impl PersistConfig {
    /// Restart safety in the file at `path`, with the library's defaults.
    ///
    /// ```
    /// use flakeid_bindings::PersistConfig;
    ///
    /// let persist = PersistConfig::new("/var/lib/orders/node.state");
    /// assert!(persist.window.is_none());
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> PersistConfig {
        PersistConfig {
            path: path.into(),
            window: None,
            restart_rule: RestartRule::default(),
            replace_issued_until_ms: None,
        }
    }

    pub(crate) fn persist(&self) -> flakeid::Persist {
        let mut persist = flakeid::Persist::file(&self.path).restart_rule(self.restart_rule);
        if let Some(window) = self.window {
            persist = persist.window(window);
        }
        if let Some(issued_until_ms) = self.replace_issued_until_ms {
            persist =
                persist.on_invalid_state(flakeid::OnInvalidState::Replace { issued_until_ms });
        }
        persist
    }
}

/// The policy for a used-up tick, by name: `wait`, `borrow` (with
/// `max_ahead`), `error` or `next_clock`.
///
/// # Errors
///
/// [`ErrorKind::InvalidArgument`] for another name, `borrow` without
/// `max_ahead`, or `max_ahead` with another policy.
///
/// ```
/// use flakeid::OnExhausted;
/// use flakeid_bindings::on_exhausted;
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ms = Duration::from_millis(50);
/// assert_eq!(on_exhausted("borrow", Some(ms))?, OnExhausted::Borrow { max_ahead: ms });
/// assert!(on_exhausted("borrow", None).is_err());
/// # Ok(())
/// # }
/// ```
pub fn on_exhausted(name: &str, max_ahead: Option<Duration>) -> Result<OnExhausted, Error> {
    let policy = match (name, max_ahead) {
        ("borrow", Some(max_ahead)) => return Ok(OnExhausted::Borrow { max_ahead }),
        ("borrow", None) => {
            return Err(Error::invalid(
                "the `borrow` policy for a used-up tick needs max_ahead, how far ahead of \
                 the clock IDs may run",
            ));
        }
        ("wait", _) => OnExhausted::Wait,
        ("error", _) => OnExhausted::Error,
        ("next_clock", _) => OnExhausted::NextClock,
        _ => {
            return Err(Error::invalid(format!(
                "unknown policy {name:?} for a used-up tick: expected wait, borrow, error or \
                 next_clock"
            )));
        }
    };
    match max_ahead {
        Some(_) => Err(Error::invalid(format!(
            "max_ahead applies only to the `borrow` policy, not {name:?}"
        ))),
        None => Ok(policy),
    }
}

/// The policy for a clock that reads behind, by name: `continue`, `wait`
/// (with `max_wait`), `error` or `next_clock`.
///
/// # Errors
///
/// [`ErrorKind::InvalidArgument`] for another name, `wait` without
/// `max_wait`, or `max_wait` with another policy.
///
/// ```
/// use flakeid::OnClockBehind;
/// use flakeid_bindings::on_clock_behind;
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let max = Duration::from_millis(5);
/// assert_eq!(on_clock_behind("wait", Some(max))?, OnClockBehind::Wait { max });
/// assert_eq!(on_clock_behind("continue", None)?, OnClockBehind::Continue);
/// assert!(on_clock_behind("skip", None).is_err());
/// # Ok(())
/// # }
/// ```
pub fn on_clock_behind(name: &str, max_wait: Option<Duration>) -> Result<OnClockBehind, Error> {
    let policy = match (name, max_wait) {
        ("wait", Some(max)) => return Ok(OnClockBehind::Wait { max }),
        ("wait", None) => {
            return Err(Error::invalid(
                "the `wait` policy for a clock behind needs max_wait, the longest wait",
            ));
        }
        ("continue", _) => OnClockBehind::Continue,
        ("error", _) => OnClockBehind::Error,
        ("next_clock", _) => OnClockBehind::NextClock,
        _ => {
            return Err(Error::invalid(format!(
                "unknown policy {name:?} for a clock behind: expected continue, wait, error or \
                 next_clock"
            )));
        }
    };
    match max_wait {
        Some(_) => Err(Error::invalid(format!(
            "max_wait applies only to the `wait` policy, not {name:?}"
        ))),
        None => Ok(policy),
    }
}

/// The restart rule by name: `high_water_mark` or `next_clock_id`.
///
/// # Errors
///
/// [`ErrorKind::InvalidArgument`] for another name.
///
/// ```
/// use flakeid::RestartRule;
/// use flakeid_bindings::restart_rule;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// assert_eq!(restart_rule("next_clock_id")?, RestartRule::NextClockId);
/// # Ok(())
/// # }
/// ```
pub fn restart_rule(name: &str) -> Result<RestartRule, Error> {
    match name {
        "high_water_mark" => Ok(RestartRule::HighWaterMark),
        "next_clock_id" => Ok(RestartRule::NextClockId),
        _ => Err(Error::invalid(format!(
            "unknown restart rule {name:?}: expected high_water_mark or next_clock_id"
        ))),
    }
}

/// A duration given as a number of `unit`s (Python: seconds, 1.0; Node:
/// milliseconds, 0.001), for the argument `what`.
///
/// # Errors
///
/// [`ErrorKind::InvalidArgument`] if it is negative, not finite, or too
/// large for a duration.
///
/// ```
/// use flakeid_bindings::duration;
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// assert_eq!(duration(0.05, 1.0, "max_ahead")?, Duration::from_millis(50));
/// assert_eq!(duration(50.0, 0.001, "maxAhead")?, Duration::from_millis(50));
/// assert!(duration(-1.0, 1.0, "ttl").is_err());
/// # Ok(())
/// # }
/// ```
pub fn duration(value: f64, unit_secs: f64, what: &str) -> Result<Duration, Error> {
    let secs = value * unit_secs;
    if !value.is_finite() || value < 0.0 {
        return Err(Error::invalid(format!(
            "{what} must be a finite, non-negative duration, not {value}"
        )));
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|_| Error::invalid(format!("{what} of {value} is too long a duration")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_refuse_what_they_do_not_take() {
        let ms = Some(Duration::from_millis(1));
        assert_eq!(on_exhausted("wait", None), Ok(OnExhausted::Wait));
        assert_eq!(on_exhausted("next_clock", None), Ok(OnExhausted::NextClock));
        for (name, arg) in [("wait", ms), ("error", ms), ("Wait", None), ("", None)] {
            let e = on_exhausted(name, arg).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name}");
        }
        for (name, arg) in [("continue", ms), ("wait", None), ("borrow", None)] {
            let e = on_clock_behind(name, arg).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name}");
        }
        assert!(duration(f64::NAN, 1.0, "x").is_err());
        assert!(duration(f64::INFINITY, 1.0, "x").is_err());
        assert!(duration(1e30, 1.0, "x").is_err());
    }

    /// The SQL stores' settings on a Redis lease: refused before any store
    /// is contacted (nothing listens on port 1), by the library or, in a
    /// build without the SQL stores, here.
    #[cfg(feature = "redis")]
    #[test]
    fn a_table_on_a_redis_lease_is_refused_as_config() {
        for table in [true, false] {
            let mut lease = LeaseConfig::new(LeaseStore::Redis("redis://127.0.0.1:1/".into()));
            if table {
                lease.table = Some("ids".into());
            } else {
                lease.create_table = Some(false);
            }
            let mut config = Config::new("twitter").unwrap();
            config.node = NodeSource::Lease(lease);
            let e = crate::Generator::build(config).err().unwrap();
            assert_eq!(e.kind(), ErrorKind::Config, "{e}");
        }
    }

    #[test]
    fn each_store_has_its_name() {
        let names: Vec<&str> = [
            LeaseStore::Etcd(vec![]),
            LeaseStore::Redis(String::new()),
            LeaseStore::RedisSentinel {
                sentinels: vec![],
                master: String::new(),
            },
            LeaseStore::Postgres(String::new()),
            LeaseStore::Mysql(String::new()),
        ]
        .iter()
        .map(LeaseStore::name)
        .collect();
        assert_eq!(
            names,
            ["etcd", "redis", "redis_sentinel", "postgres", "mysql"]
        );
    }
}
