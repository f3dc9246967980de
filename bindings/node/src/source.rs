//! `Lease` and `Persist`: a leased node id and restart safety, as values a
//! `Generator` is built with.

use flakeid_bindings::{LeaseConfig, LeaseStore, PersistConfig};
use napi::bindgen_prelude::{JsObjectValue, Object, Unknown};
use napi::{Env, JsValue, ValueType};
use napi_derive::napi;

use crate::args::{self, Options};
use crate::errors::{OrRaise, raise};

/// A node id leased from etcd, Redis, Redis behind Sentinel, PostgreSQL or
/// MySQL/MariaDB, with fencing.
#[napi]
#[derive(Clone)]
pub struct Lease {
    pub(crate) config: LeaseConfig,
}

/// The options every store takes.
const LEASE_OPTIONS: [&str; 7] = [
    "prefix",
    "ttl",
    "safetyMargin",
    "connectTimeout",
    "nodeIds",
    "rotateAfterRollback",
    "maxMarkAhead",
];

/// Redis's options besides.
const REDIS_OPTIONS: [&str; 1] = ["waitForReplicas"];

/// PostgreSQL's and MySQL's options besides.
const SQL_OPTIONS: [&str; 2] = ["table", "createTable"];

fn lease(env: &Env, store: LeaseStore, options: Option<Unknown>) -> napi::Result<Lease> {
    let own: &[&'static str] = match store {
        LeaseStore::Redis(_) | LeaseStore::RedisSentinel { .. } => &REDIS_OPTIONS,
        LeaseStore::Postgres(_) | LeaseStore::Mysql(_) => &SQL_OPTIONS,
        _ => &[],
    };
    let known: Vec<&'static str> = LEASE_OPTIONS.iter().chain(own).copied().collect();
    let options = Options::read(env, options.as_ref(), "options", &known)?;
    let mut config = LeaseConfig::new(store);
    config.prefix = args::opt_string(env, options.get("prefix"), "prefix")?;
    config.ttl = args::opt_duration(env, options.get("ttl"), "ttl")?;
    config.safety_margin = args::opt_duration(env, options.get("safetyMargin"), "safetyMargin")?;
    config.connect_timeout =
        args::opt_duration(env, options.get("connectTimeout"), "connectTimeout")?;
    config.rotate_after_rollback = args::opt_duration(
        env,
        options.get("rotateAfterRollback"),
        "rotateAfterRollback",
    )?;
    config.max_mark_ahead = args::opt_duration(env, options.get("maxMarkAhead"), "maxMarkAhead")?;
    config.wait_for_replicas = args::opt_uint(
        env,
        options.get("waitForReplicas"),
        "waitForReplicas",
        u32::MAX.into(),
    )?
    .map(|n| n as u32);
    config.table = args::opt_string(env, options.get("table"), "table")?;
    config.create_table = options
        .get("createTable")
        .map(|v| args::boolean(env, Some(v), "createTable"))
        .transpose()?;
    if let Some(range) = options.get("nodeIds") {
        let pair = (range.get_type()? == ValueType::Object && range.is_array()?)
            // SAFETY: the value is an array (an object).
            .then(|| unsafe { range.cast::<Object>() })
            .transpose()?
            .filter(|a| a.get_array_length().is_ok_and(|n| n == 2))
            .ok_or_else(|| args::wrong_type(env, "nodeIds", "an array [first, last]", range))?;
        let first: Unknown = pair.get_element(0)?;
        let last: Unknown = pair.get_element(1)?;
        config.node_ids = Some((
            args::uint(env, &first, "nodeIds[0]", u64::MAX)?,
            args::uint(env, &last, "nodeIds[1]", u64::MAX)?,
        ));
    }
    Ok(Lease { config })
}

#[napi]
impl Lease {
    /// Leases node ids from the etcd cluster at `endpoints`.
    #[napi(factory)]
    pub fn etcd(env: Env, endpoints: Unknown, options: Option<Unknown>) -> napi::Result<Lease> {
        let store = LeaseStore::Etcd(args::strings(&env, &endpoints, "endpoints")?);
        lease(&env, store, options)
    }

    /// Leases node ids from the Redis server at `url`.
    #[napi(factory)]
    pub fn redis(env: Env, url: Unknown, options: Option<Unknown>) -> napi::Result<Lease> {
        let store = LeaseStore::Redis(args::string(&env, &url, "url")?);
        lease(&env, store, options)
    }

    /// Leases node ids from the Redis primary the sentinels name for
    /// `master`.
    #[napi(factory)]
    pub fn redis_sentinel(
        env: Env,
        sentinels: Unknown,
        master: Unknown,
        options: Option<Unknown>,
    ) -> napi::Result<Lease> {
        let store = LeaseStore::RedisSentinel {
            sentinels: args::strings(&env, &sentinels, "sentinels")?,
            master: args::string(&env, &master, "master")?,
        };
        lease(&env, store, options)
    }

    /// Leases node ids from the PostgreSQL server at `url`
    /// (`postgres://user:password@host:port/db` or the `key=value` form).
    #[napi(factory)]
    pub fn postgres(env: Env, url: Unknown, options: Option<Unknown>) -> napi::Result<Lease> {
        let store = LeaseStore::Postgres(args::string(&env, &url, "url")?);
        lease(&env, store, options)
    }

    /// Leases node ids from the MySQL 8 or MariaDB 10.11 server at `url`
    /// (`mysql://user:password@host:port/db`).
    #[napi(factory)]
    pub fn mysql(env: Env, url: Unknown, options: Option<Unknown>) -> napi::Result<Lease> {
        let store = LeaseStore::Mysql(args::string(&env, &url, "url")?);
        lease(&env, store, options)
    }

    /// `etcd`, `redis`, `redis_sentinel`, `postgres` or `mysql`.
    #[napi(getter)]
    pub fn store(&self) -> &'static str {
        self.config.store.name()
    }
}

/// Restart safety: a high-water mark saved in a file.
#[napi]
#[derive(Clone)]
pub struct Persist {
    pub(crate) config: PersistConfig,
}

#[napi]
impl Persist {
    /// Restart safety in the state file at `path`.
    #[napi(constructor)]
    pub fn new(env: Env, path: Unknown, options: Option<Unknown>) -> napi::Result<Persist> {
        let path = args::string(&env, &path, "path")?;
        if path.is_empty() {
            return Err(raise(
                &env,
                flakeid_bindings::Error::invalid("path must not be empty"),
            ));
        }
        let options = Options::read(
            &env,
            options.as_ref(),
            "options",
            &["window", "restartRule", "replaceIssuedUntilMs"],
        )?;
        let mut config = PersistConfig::new(path);
        config.window = args::opt_duration(&env, options.get("window"), "window")?;
        if let Some(rule) = args::opt_string(&env, options.get("restartRule"), "restartRule")? {
            config.restart_rule = flakeid_bindings::restart_rule(&rule).or_raise(&env)?;
        }
        config.replace_issued_until_ms = args::opt_uint(
            &env,
            options.get("replaceIssuedUntilMs"),
            "replaceIssuedUntilMs",
            u64::MAX,
        )?;
        Ok(Persist { config })
    }

    /// The state file.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.config.path.display().to_string()
    }
}
