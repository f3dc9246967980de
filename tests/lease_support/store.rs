//! Reading and writing flakeid's keys in the store itself, as an
//! operator (or a damaged store) would.

use super::*;

/// What the scenarios ask of a running server: a lease on it, and the keys
/// flakeid keeps there.
pub trait LeaseStore {
    /// A lease on this server with the tests' short TTL.
    fn lease(&self, prefix: &str) -> Lease;
    /// The mark of a node id, as stored.
    fn mark(&self, prefix: &str, node: u64) -> Option<String>;
    /// The holder's token of a node id, if it is held.
    fn holder(&self, prefix: &str, node: u64) -> Option<String>;
    /// Overwrites the mark of a node id, as a damaged store would.
    fn set_mark(&self, prefix: &str, node: u64, value: &str);
}

impl LeaseStore for Server {
    fn lease(&self, prefix: &str) -> Lease {
        lease_at(self.kind, self.addr(), prefix)
    }

    fn mark(&self, prefix: &str, node: u64) -> Option<String> {
        match self.kind {
            Kind::Etcd => etcd_get(&self.url(), &format!("{prefix}/marks/{node}")),
            Kind::Redis => redis_get(&self.url(), &format!("{prefix}:mark:{node}")),
            Kind::Postgres | Kind::Mysql => self.column(prefix, node, "mark_ms"),
        }
    }

    fn holder(&self, prefix: &str, node: u64) -> Option<String> {
        match self.kind {
            Kind::Etcd => etcd_get(&self.url(), &format!("{prefix}/nodes/{node}")),
            Kind::Redis => redis_get(&self.url(), &format!("{prefix}:node:{node}")),
            // A row with its token cleared (released) has no holder; one
            // whose expiry passed still names it until the next claim.
            Kind::Postgres | Kind::Mysql => self.column(prefix, node, "token"),
        }
    }

    fn set_mark(&self, prefix: &str, node: u64, value: &str) {
        match self.kind {
            Kind::Etcd => etcd_put(&self.url(), &format!("{prefix}/marks/{node}"), value),
            Kind::Redis => redis_set(&self.url(), &format!("{prefix}:mark:{node}"), value),
            Kind::Postgres | Kind::Mysql => {
                // BIGINT: what does not fit is written as the largest value.
                let mark = value
                    .parse::<i64>()
                    .or_else(|_| value.parse::<u64>().map(|_| i64::MAX))
                    .unwrap_or_else(|_| panic!("{value:?} is no mark a SQL table can hold"));
                // The table, made by a lease as a user's first one would.
                drop(build(self.lease("table-setup")).expect("a lease makes its table"));
                let table = table_of(self.kind);
                let upsert = match self.kind {
                    Kind::Mysql => "ON DUPLICATE KEY UPDATE mark_ms = VALUES(mark_ms)",
                    _ => "ON CONFLICT (prefix, node) DO UPDATE SET mark_ms = EXCLUDED.mark_ms",
                };
                self.sql(&format!(
                    "INSERT INTO {table} (prefix, node, token, expires, ttl_ms, mark_ms) \
                     VALUES ('{prefix}', {node}, NULL, {now}, 0, {mark}) {upsert}",
                    now = now_of(self.kind)
                ));
            }
        }
    }
}

/// The default table, as SQL names it on `kind`.
fn table_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Mysql => "`flakeid_leases`",
        _ => "\"flakeid_leases\"",
    }
}

fn now_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Mysql => "UTC_TIMESTAMP(6)",
        _ => "now()",
    }
}

impl Server {
    /// One column of a row of the default table (prefixes in tests are
    /// plain: letters, digits and dashes); `None` for no row or NULL.
    fn column(&self, prefix: &str, node: u64, column: &str) -> Option<String> {
        let table = table_of(self.kind);
        let text = match self.kind {
            Kind::Mysql => "CHAR",
            _ => "TEXT",
        };
        let out = self.sql(&format!(
            "SELECT COALESCE(CAST({column} AS {text}), 'NULL') FROM {table} \
             WHERE prefix = '{prefix}' AND node = {node}"
        ));
        let value = out.trim();
        (!value.is_empty() && value != "NULL").then(|| value.to_owned())
    }
}

#[cfg(feature = "etcd")]
fn etcd_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[cfg(feature = "etcd")]
fn etcd_get(url: &str, key: &str) -> Option<String> {
    etcd_runtime().block_on(async {
        let mut c = etcd_client::Client::connect([url], None).await.unwrap();
        let reply = c.get(key, None).await.unwrap();
        reply
            .kvs()
            .first()
            .map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
    })
}

#[cfg(feature = "etcd")]
fn etcd_put(url: &str, key: &str, value: &str) {
    etcd_runtime().block_on(async {
        let mut c = etcd_client::Client::connect([url], None).await.unwrap();
        c.put(key, value, None).await.unwrap();
    });
}

#[cfg(not(feature = "etcd"))]
fn etcd_get(_: &str, _: &str) -> Option<String> {
    unreachable!("etcd is not built in")
}

#[cfg(not(feature = "etcd"))]
fn etcd_put(_: &str, _: &str, _: &str) {
    unreachable!("etcd is not built in")
}

#[cfg(feature = "redis")]
fn redis_get(url: &str, key: &str) -> Option<String> {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("GET").arg(key).query(&mut c).unwrap()
}

#[cfg(feature = "redis")]
fn redis_set(url: &str, key: &str, value: &str) {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let () = redis::cmd("SET").arg(key).arg(value).query(&mut c).unwrap();
}

#[cfg(not(feature = "redis"))]
fn redis_get(_: &str, _: &str) -> Option<String> {
    unreachable!("redis is not built in")
}

#[cfg(not(feature = "redis"))]
fn redis_set(_: &str, _: &str, _: &str) {
    unreachable!("redis is not built in")
}
