//! `Lease` and `Persist`: a leased node id and restart safety, as values
//! a `Generator` is built with.

use flakeid_bindings::{LeaseConfig, LeaseStore, PersistConfig};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::args;
use crate::errors::raise;

/// A node id leased from etcd, Redis, Redis behind Sentinel, PostgreSQL or
/// MySQL/MariaDB, with fencing.
#[pyclass(frozen, module = "flakeid_rs")]
#[derive(Clone)]
pub(crate) struct Lease {
    pub(crate) config: LeaseConfig,
}

#[allow(clippy::too_many_arguments)]
fn lease(
    store: LeaseStore,
    prefix: Option<&Bound<'_, PyAny>>,
    ttl: Option<&Bound<'_, PyAny>>,
    safety_margin: Option<&Bound<'_, PyAny>>,
    connect_timeout: Option<&Bound<'_, PyAny>>,
    node_ids: Option<&Bound<'_, PyAny>>,
    rotate_after_rollback: Option<&Bound<'_, PyAny>>,
    max_mark_ahead: Option<&Bound<'_, PyAny>>,
    wait_for_replicas: Option<&Bound<'_, PyAny>>,
) -> PyResult<Lease> {
    let mut config = LeaseConfig::new(store);
    config.prefix = args::opt_string(prefix, "prefix")?;
    config.ttl = args::opt_duration(ttl, "ttl")?;
    config.safety_margin = args::opt_duration(safety_margin, "safety_margin")?;
    config.connect_timeout = args::opt_duration(connect_timeout, "connect_timeout")?;
    config.rotate_after_rollback =
        args::opt_duration(rotate_after_rollback, "rotate_after_rollback")?;
    config.max_mark_ahead = args::opt_duration(max_mark_ahead, "max_mark_ahead")?;
    config.wait_for_replicas =
        args::opt_uint(wait_for_replicas, "wait_for_replicas", u32::MAX.into())?.map(|n| n as u32);
    if let Some(range) = node_ids.filter(|v| !v.is_none()) {
        let pair = range
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| {
                raise(flakeid_bindings::Error::new(
                    flakeid_bindings::ErrorKind::InvalidType,
                    "node_ids must be a tuple (first, last)",
                ))
            })?;
        let first = args::uint(&pair.get_item(0)?, "node_ids[0]", u64::MAX)?;
        let last = args::uint(&pair.get_item(1)?, "node_ids[1]", u64::MAX)?;
        config.node_ids = Some((first, last));
    }
    Ok(Lease { config })
}

/// A SQL store's settings: its table and whether to create it.
fn with_table(
    mut lease: Lease,
    table: Option<&Bound<'_, PyAny>>,
    create_table: Option<&Bound<'_, PyAny>>,
) -> PyResult<Lease> {
    lease.config.table = args::opt_string(table, "table")?;
    lease.config.create_table = create_table
        .filter(|v| !v.is_none())
        .map(|v| args::boolean(Some(v), "create_table"))
        .transpose()?;
    Ok(lease)
}

#[pymethods]
impl Lease {
    /// Leases node ids from the etcd cluster at `endpoints`.
    #[staticmethod]
    #[pyo3(signature = (endpoints, *, prefix=None, ttl=None, safety_margin=None,
        connect_timeout=None, node_ids=None, rotate_after_rollback=None, max_mark_ahead=None))]
    #[allow(clippy::too_many_arguments)]
    fn etcd(
        endpoints: &Bound<'_, PyAny>,
        prefix: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        safety_margin: Option<&Bound<'_, PyAny>>,
        connect_timeout: Option<&Bound<'_, PyAny>>,
        node_ids: Option<&Bound<'_, PyAny>>,
        rotate_after_rollback: Option<&Bound<'_, PyAny>>,
        max_mark_ahead: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let store = LeaseStore::Etcd(args::strings(endpoints, "endpoints")?);
        lease(
            store,
            prefix,
            ttl,
            safety_margin,
            connect_timeout,
            node_ids,
            rotate_after_rollback,
            max_mark_ahead,
            None,
        )
    }

    /// Leases node ids from the Redis server at `url`.
    #[staticmethod]
    #[pyo3(signature = (url, *, prefix=None, ttl=None, safety_margin=None,
        connect_timeout=None, node_ids=None, rotate_after_rollback=None, max_mark_ahead=None,
        wait_for_replicas=None))]
    #[allow(clippy::too_many_arguments)]
    fn redis(
        url: &Bound<'_, PyAny>,
        prefix: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        safety_margin: Option<&Bound<'_, PyAny>>,
        connect_timeout: Option<&Bound<'_, PyAny>>,
        node_ids: Option<&Bound<'_, PyAny>>,
        rotate_after_rollback: Option<&Bound<'_, PyAny>>,
        max_mark_ahead: Option<&Bound<'_, PyAny>>,
        wait_for_replicas: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let store = LeaseStore::Redis(args::string(url, "url")?);
        lease(
            store,
            prefix,
            ttl,
            safety_margin,
            connect_timeout,
            node_ids,
            rotate_after_rollback,
            max_mark_ahead,
            wait_for_replicas,
        )
    }

    /// Leases node ids from the Redis primary the sentinels name for `master`.
    #[staticmethod]
    #[pyo3(signature = (sentinels, master, *, prefix=None, ttl=None, safety_margin=None,
        connect_timeout=None, node_ids=None, rotate_after_rollback=None, max_mark_ahead=None,
        wait_for_replicas=None))]
    #[allow(clippy::too_many_arguments)]
    fn redis_sentinel(
        sentinels: &Bound<'_, PyAny>,
        master: &Bound<'_, PyAny>,
        prefix: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        safety_margin: Option<&Bound<'_, PyAny>>,
        connect_timeout: Option<&Bound<'_, PyAny>>,
        node_ids: Option<&Bound<'_, PyAny>>,
        rotate_after_rollback: Option<&Bound<'_, PyAny>>,
        max_mark_ahead: Option<&Bound<'_, PyAny>>,
        wait_for_replicas: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let store = LeaseStore::RedisSentinel {
            sentinels: args::strings(sentinels, "sentinels")?,
            master: args::string(master, "master")?,
        };
        lease(
            store,
            prefix,
            ttl,
            safety_margin,
            connect_timeout,
            node_ids,
            rotate_after_rollback,
            max_mark_ahead,
            wait_for_replicas,
        )
    }

    /// Leases node ids from the PostgreSQL server at `url`
    /// (`postgres://user:password@host:port/db` or the `key=value` form),
    /// in the table `table` (default `flakeid_leases`), created on the
    /// first claim unless `create_table` is false.
    #[staticmethod]
    #[pyo3(signature = (url, *, table=None, create_table=None, prefix=None, ttl=None,
        safety_margin=None, connect_timeout=None, node_ids=None, rotate_after_rollback=None,
        max_mark_ahead=None))]
    #[allow(clippy::too_many_arguments)]
    fn postgres(
        url: &Bound<'_, PyAny>,
        table: Option<&Bound<'_, PyAny>>,
        create_table: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        safety_margin: Option<&Bound<'_, PyAny>>,
        connect_timeout: Option<&Bound<'_, PyAny>>,
        node_ids: Option<&Bound<'_, PyAny>>,
        rotate_after_rollback: Option<&Bound<'_, PyAny>>,
        max_mark_ahead: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let store = LeaseStore::Postgres(args::string(url, "url")?);
        let lease = lease(
            store,
            prefix,
            ttl,
            safety_margin,
            connect_timeout,
            node_ids,
            rotate_after_rollback,
            max_mark_ahead,
            None,
        )?;
        with_table(lease, table, create_table)
    }

    /// Leases node ids from the MySQL 8 or MariaDB 10.11 server at `url`
    /// (`mysql://user:password@host:port/db`), in the table `table`
    /// (default `flakeid_leases`), created on the first claim unless
    /// `create_table` is false.
    #[staticmethod]
    #[pyo3(signature = (url, *, table=None, create_table=None, prefix=None, ttl=None,
        safety_margin=None, connect_timeout=None, node_ids=None, rotate_after_rollback=None,
        max_mark_ahead=None))]
    #[allow(clippy::too_many_arguments)]
    fn mysql(
        url: &Bound<'_, PyAny>,
        table: Option<&Bound<'_, PyAny>>,
        create_table: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        safety_margin: Option<&Bound<'_, PyAny>>,
        connect_timeout: Option<&Bound<'_, PyAny>>,
        node_ids: Option<&Bound<'_, PyAny>>,
        rotate_after_rollback: Option<&Bound<'_, PyAny>>,
        max_mark_ahead: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let store = LeaseStore::Mysql(args::string(url, "url")?);
        let lease = lease(
            store,
            prefix,
            ttl,
            safety_margin,
            connect_timeout,
            node_ids,
            rotate_after_rollback,
            max_mark_ahead,
            None,
        )?;
        with_table(lease, table, create_table)
    }

    /// `etcd`, `redis`, `redis_sentinel`, `postgres` or `mysql`.
    #[getter]
    fn store(&self) -> &'static str {
        self.config.store.name()
    }

    fn __repr__(&self) -> String {
        format!("Lease.{}(...)", self.config.store.name())
    }
}

/// Restart safety: a high-water mark saved in a file.
#[pyclass(frozen, module = "flakeid_rs")]
#[derive(Clone)]
pub(crate) struct Persist {
    pub(crate) config: PersistConfig,
}

#[pymethods]
impl Persist {
    #[new]
    #[pyo3(signature = (path, *, window=None, restart_rule=None, replace_issued_until_ms=None))]
    fn new(
        path: &Bound<'_, PyAny>,
        window: Option<&Bound<'_, PyAny>>,
        restart_rule: Option<&Bound<'_, PyAny>>,
        replace_issued_until_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Persist> {
        // A str or an os.PathLike.
        let fspath = path.py().import("os")?.getattr("fspath")?;
        let path = fspath.call1((path,)).map_err(|_| {
            raise(flakeid_bindings::Error::new(
                flakeid_bindings::ErrorKind::InvalidType,
                "path must be a str or an os.PathLike",
            ))
        })?;
        let mut config = PersistConfig::new(args::string(&path, "path")?);
        config.window = args::opt_duration(window, "window")?;
        if let Some(rule) = args::opt_string(restart_rule, "restart_rule")? {
            config.restart_rule = flakeid_bindings::restart_rule(&rule).map_err(raise)?;
        }
        config.replace_issued_until_ms =
            args::opt_uint(replace_issued_until_ms, "replace_issued_until_ms", u64::MAX)?;
        Ok(Persist { config })
    }

    /// The state file.
    #[getter]
    fn path(&self) -> String {
        self.config.path.display().to_string()
    }

    fn __repr__(&self) -> String {
        format!("Persist({:?})", self.config.path.display().to_string())
    }
}
