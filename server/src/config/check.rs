//! What the types cannot say, checked once they are read: ranges, the
//! listeners, the token and TLS files, the log filter, node ids against
//! their layouts, lease terms, and generators that could issue the same
//! IDs.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::time::SystemTime;

use flakeid::{FieldKind, Layout, node_id};

use crate::quote::quote;

use super::defaults::{MAX_CHUNK_SIZE, MAX_COUNT_LIMIT, MAX_WORKERS};
use super::layers::{Origins, is_node_key};
use super::{Config, ConfigError, GeneratorConfig, NodeSource};

/// Records errors with the origin of their key.
struct Checker<'a> {
    origins: &'a Origins,
    errors: &'a mut Vec<ConfigError>,
}

impl Checker<'_> {
    fn fail(&mut self, key: &str, message: impl Into<String>) {
        self.errors.push(ConfigError {
            key: key.to_owned(),
            origin: self.origins.of(key),
            message: message.into(),
        });
    }

    /// Fails `key` if `value` is outside `range`.
    fn within<T: PartialOrd + std::fmt::Display>(
        &mut self,
        key: &str,
        value: T,
        range: RangeInclusive<T>,
        why: &str,
    ) {
        if !range.contains(&value) {
            let (first, last) = range.into_inner();
            self.fail(
                key,
                format!("{value} is out of range ({first}..={last}{why})"),
            );
        }
    }
}

/// Checks `config`, resolving each generator's node id. `failed`: the keys
/// already reported, whose dependents are not checked again.
pub(super) fn check(
    config: &mut Config,
    origins: &Origins,
    failed: &BTreeSet<String>,
    errors: &mut Vec<ConfigError>,
) {
    let mut c = Checker { origins, errors };
    server(config, &mut c);
    for (name, g) in &mut config.generators {
        if !valid_name(name) {
            c.fail(
                &format!("generators.{name}"),
                "a generator name is 1 to 64 letters, digits, `_` or `-`",
            );
            continue;
        }
        let node_failed = failed.iter().any(|key| {
            key.strip_prefix(&format!("generators.{name}."))
                .is_some_and(|k| k == "layout" || is_node_key(k))
        });
        generator(name, g, node_failed, &mut c);
    }
    let default = &config.default_generator;
    if !config.generators.contains_key(default) && !failed.iter().any(|k| k.contains(default)) {
        let names: Vec<&str> = config.generators.keys().map(String::as_str).collect();
        c.fail(
            "default_generator",
            format!(
                "{} is not a generator; the configuration has {}",
                quote(default),
                names.join(", ")
            ),
        );
    }
    collisions(config, &mut c);
}

fn server(config: &mut Config, c: &mut Checker<'_>) {
    c.within(
        "max_count",
        config.max_count,
        1..=MAX_COUNT_LIMIT,
        ": a reply holds the IDs in memory",
    );
    c.within(
        "max_stream_count",
        config.max_stream_count,
        1..=u64::MAX,
        "",
    );
    c.within("chunk_size", config.chunk_size, 1..=MAX_CHUNK_SIZE, "");
    if let Some(workers) = config.workers {
        c.within("workers", workers, 1..=MAX_WORKERS, "");
    }
    if let (Some(http), Some(grpc)) = (config.http_addr, config.grpc_addr)
        && http.port() != 0
        && http.port() == grpc.port()
        && (http.ip() == grpc.ip() || http.ip().is_unspecified() || grpc.ip().is_unspecified())
    {
        c.fail(
            "grpc_addr",
            format!("{grpc} is also http_addr ({http}): give each listener its own port"),
        );
    }
    if config.http_addr.is_none() && config.grpc_addr.is_none() {
        c.fail(
            "http_addr",
            "http_addr and grpc_addr are both off: the server would serve nothing; \
             give at least one an address",
        );
    }
    match (&config.token, &config.token_file) {
        (Some(_), Some(_)) => c.fail("token_file", "token and token_file are both set; set one"),
        (None, Some(path)) => match std::fs::read_to_string(path) {
            Ok(token) => config.token = Some(token.trim().to_owned()),
            Err(e) => c.fail("token_file", format!("cannot read {}: {e}", path.display())),
        },
        _ => {}
    }
    if let Some(token) = &config.token
        && (token.is_empty()
            || token
                .chars()
                .any(|ch| ch.is_whitespace() || ch.is_control()))
    {
        let key = if config.token_file.is_some() {
            "token_file"
        } else {
            "token"
        };
        c.fail(
            key,
            "the token is empty or holds spaces or control characters",
        );
    }
    match (&config.tls_cert, &config.tls_key) {
        (Some(_), None) => c.fail("tls_key", "tls_cert is set but tls_key is not; set both"),
        (None, Some(_)) => c.fail("tls_cert", "tls_key is set but tls_cert is not; set both"),
        _ => {}
    }
    if let Err(e) = log_filter(&config.log_level) {
        c.fail("log_level", e);
    }
}

/// A log filter: levels and `target=level` directives, as tracing's
/// `EnvFilter` reads them. A bare word that is no level is refused, though
/// `EnvFilter` would read it as a target at every level and so silence
/// everything else: it is far likelier a misspelled level.
fn log_filter(filter: &str) -> Result<(), String> {
    const LEVELS: [&str; 6] = ["error", "warn", "info", "debug", "trace", "off"];
    for directive in filter.split(',').map(str::trim) {
        if !directive.contains(['=', '['])
            && !LEVELS.contains(&directive.to_ascii_lowercase().as_str())
        {
            return Err(format!(
                "{} is not a level ({}) nor a directive like `flakeid=debug`",
                quote(directive),
                LEVELS.join(", ")
            ));
        }
    }
    tracing_subscriber::EnvFilter::builder()
        .parse(filter)
        .map(drop)
        .map_err(|e| format!("{} is not a log filter: {e}", quote(filter)))
}

/// Generator names appear in URLs and metric labels.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn generator(name: &str, g: &mut GeneratorConfig, node_failed: bool, c: &mut Checker<'_>) {
    let key = |k: &str| format!("generators.{name}.{k}");
    if g.persist_window.is_some() && g.state_file.is_none() {
        c.fail(
            &key("persist_window"),
            "persist_window is set but state_file is not",
        );
    }
    if node_failed {
        return;
    }
    let Some(node) = &g.node else {
        c.fail(
            &key("node_source"),
            "no node id source: set node_id or node_fields (static), node_env (a variable), \
             node_source = \"statefulset\", a lease (lease_url for Redis, PostgreSQL \
             (postgres://) or MySQL (mysql://), lease_sentinels and lease_master for Redis \
             behind Sentinel, lease_endpoints for etcd), or node_source = \"single\" if this \
             is the only generator of its layout anywhere",
        );
        return;
    };
    if g.state_file.is_some() && node.lease(name).is_some() {
        c.fail(
            &key("state_file"),
            "a leased node id keeps its high-water mark in the lease store; drop state_file",
        );
    }
    let layout = &g.layout;
    let max = layout.max_node_id();
    g.node_id = match node {
        NodeSource::Static {
            node_id: Some(_),
            node_fields: Some(_),
        } => {
            c.fail(
                &key("node_fields"),
                "node_id and node_fields are both set; set one",
            );
            None
        }
        NodeSource::Static {
            node_id: Some(id), ..
        } if *id > max => {
            c.fail(
                &key("node_id"),
                format!("{id} is out of the layout's node id range (0..={max})"),
            );
            None
        }
        NodeSource::Static {
            node_id: Some(id), ..
        } => Some(*id),
        NodeSource::Static {
            node_fields: Some(fields),
            ..
        } => node_fields(layout, fields)
            .map_err(|e| c.fail(&key("node_fields"), e))
            .ok(),
        NodeSource::Static { .. } => {
            c.fail(
                &key("node_source"),
                "node_source = \"static\" needs node_id or node_fields",
            );
            None
        }
        NodeSource::Env { node_env } => node_id::from_env(node_env, layout)
            .map_err(|e| c.fail(&key("node_env"), e.to_string()))
            .ok(),
        NodeSource::Statefulset {} => node_id::from_statefulset(layout)
            .map_err(|e| c.fail(&key("node_source"), e.to_string()))
            .ok(),
        NodeSource::Single {} => Some(0),
        NodeSource::Etcd { .. }
        | NodeSource::Redis { .. }
        | NodeSource::Sentinel { .. }
        | NodeSource::Postgres { .. }
        | NodeSource::Mysql { .. } => {
            lease(name, node, layout, c);
            None
        }
    };
}

/// The node id of node fields given by name: every node field of the
/// layout, each within its width.
fn node_fields(
    layout: &Layout,
    fields: &std::collections::BTreeMap<String, u64>,
) -> Result<u64, String> {
    let names: Vec<&str> = layout
        .fields()
        .iter()
        .filter(|f| f.kind() == FieldKind::Node)
        .map(|f| f.name())
        .collect();
    let list = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    };
    if let Some(unknown) = fields.keys().find(|f| !names.contains(&f.as_str())) {
        return Err(format!(
            "the layout has no node field {} (its node fields: {list})",
            quote(unknown)
        ));
    }
    if let Some(unset) = names.iter().find(|n| !fields.contains_key(**n)) {
        return Err(format!(
            "{unset} is not set: set every node field of the layout ({list})"
        ));
    }
    layout
        .node_id_from_fields(fields.iter().map(|(name, value)| (name.as_str(), *value)))
        .map_err(|e| e.to_string())
}

/// Sets a lease setting back to its default; whether it was set.
type Reset = fn(&mut NodeSource) -> bool;

/// What is wrong with a lease's `lease_url` for its source, if the scheme
/// tells (the store's client reads the rest).
fn url_error(node: &NodeSource) -> Option<String> {
    let (url, schemes, what): (&str, &[&str], &str) = match node {
        NodeSource::Redis { lease_url, .. } => (
            lease_url,
            &["redis://", "rediss://"],
            "a redis:// URL (for PostgreSQL or MySQL, a postgres:// or mysql:// URL, or \
             node_source = \"postgres\" with key=value settings)",
        ),
        // The key=value form: `host=db user=ids dbname=app`.
        NodeSource::Postgres { lease_url, .. }
            if lease_url.contains('=') && !lease_url.contains("://") =>
        {
            return None;
        }
        NodeSource::Postgres { lease_url, .. } => (
            lease_url,
            &["postgres://", "postgresql://"],
            "a postgres:// URL nor key=value settings (host=... user=... dbname=...)",
        ),
        NodeSource::Mysql { lease_url, .. } => (lease_url, &["mysql://"], "a mysql:// URL"),
        _ => return None,
    };
    let lower = url.trim_start().to_ascii_lowercase();
    (!schemes.iter().any(|s| lower.starts_with(s)))
        .then(|| format!("{} is not {what}", quote(&super::mask_password(url))))
}

/// A lease's store keys, and its terms as the library checks them (before
/// it would contact the store); a term at fault is the one whose default
/// passes.
fn lease(name: &str, node: &NodeSource, layout: &Layout, c: &mut Checker<'_>) {
    let key = |k: &str| format!("generators.{name}.{k}");
    if let Some(message) = url_error(node) {
        return c.fail(&key("lease_url"), message);
    }
    let check = |node: &NodeSource| node.lease(name).map(|l| l.check(layout));
    let Some(Err(error)) = check(node) else {
        return;
    };
    let defaults: [(&str, Reset); 4] = [
        ("lease_table", |n| {
            n.table_mut().is_some_and(|t| t.take().is_some())
        }),
        ("lease_margin", |n| {
            n.terms_mut()
                .is_some_and(|t| t.lease_margin.take().is_some())
        }),
        ("lease_node_ids", |n| {
            n.terms_mut()
                .is_some_and(|t| t.lease_node_ids.take().is_some())
        }),
        ("lease_prefix", |n| {
            n.terms_mut()
                .is_some_and(|t| t.lease_prefix.take().is_some())
        }),
    ];
    let at_fault = defaults
        .into_iter()
        .find(|(_, reset)| {
            let mut other = node.clone();
            reset(&mut other) && matches!(check(&other), Some(Ok(())))
        })
        .map_or("lease_ttl", |(key, _)| key);
    let message = match error {
        flakeid::LeaseError::Config { reason } => reason,
        other => other.to_string(),
    };
    c.fail(&key(at_fault), message);
}

/// What a generator can issue, as far as the configuration tells: its
/// layout and its node id or lease.
struct Reach<'a> {
    layout: &'a Layout,
    node: Node,
}

enum Node {
    /// Known now: the node id.
    Known(u64),
    /// Leased at start, from these node ids, under this store and prefix.
    Leased(RangeInclusive<u64>, String),
}

impl Node {
    fn ids(&self) -> RangeInclusive<u64> {
        match self {
            Node::Known(id) => *id..=*id,
            Node::Leased(range, _) => range.clone(),
        }
    }
}

fn reach<'a>(name: &str, g: &'a GeneratorConfig) -> Option<Reach<'a>> {
    let layout = &g.layout;
    let source = g.node.as_ref()?;
    let node = match (g.node_id, source.terms()) {
        (Some(id), _) => Node::Known(id),
        (None, Some(terms)) => Node::Leased(
            terms
                .lease_node_ids
                .clone()
                .unwrap_or(0..=layout.max_node_id()),
            // The store and the prefix.
            source.describe(name),
        ),
        (None, None) => return None,
    };
    Some(Reach { layout, node })
}

/// The node fields' bits, and how they make up the node id.
fn node_plan(layout: &Layout) -> Vec<(u32, u32)> {
    layout
        .fields()
        .iter()
        .filter(|f| f.kind() == FieldKind::Node)
        .map(|f| (f.shift(), f.bits()))
        .collect()
}

/// Why `a` and `b` can issue one same ID from `now` on, if they can: an ID
/// both layouts can make, with node ids each has or may lease, decided from
/// the bits (`Layout::first_shared_id`), whatever the fields are called.
/// Two leases on one store under one prefix never hold the same node id,
/// which rules them out only where their node ids take the same bits.
fn meet(a: &Reach<'_>, b: &Reach<'_>, now: SystemTime) -> Option<String> {
    if let (Node::Leased(_, k1), Node::Leased(_, k2)) = (&a.node, &b.node)
        && k1 == k2
        && node_plan(a.layout) == node_plan(b.layout)
    {
        return None;
    }
    let shared = a
        .layout
        .first_shared_id(a.node.ids(), b.layout, b.node.ids(), now)?;
    let (Ok(there), Ok(here)) = (a.layout.decode(shared), b.layout.decode(shared)) else {
        return Some(format!("both can issue ID {shared}"));
    };
    let (x, y) = (there.node_id(), here.node_id());
    let how = match (&a.node, &b.node) {
        (Node::Known(_), Node::Known(_)) if x == y && a.layout == b.layout => {
            format!("node id {x} on both")
        }
        (Node::Known(_), Node::Known(_)) => {
            format!("node id {x} there and {y} here set the same bits")
        }
        (Node::Leased(..), Node::Leased(..)) => {
            format!("leases that may claim node id {x} there and {y} here, which set the same bits")
        }
        (Node::Known(_), Node::Leased(..)) => {
            format!("the lease may claim node id {y}, which shares the bits of node id {x} there")
        }
        (Node::Leased(..), Node::Known(_)) => {
            format!("node id {y} shares the bits of node id {x}, which the lease there may claim")
        }
    };
    // When each would issue it: IDs of two layouts may meet decades apart,
    // which still repeats an ID wherever both are kept.
    Some(format!(
        "{how}: both can issue ID {shared}, there at {} and here at {}",
        there.rfc3339(),
        here.rfc3339()
    ))
}

fn collisions(config: &Config, c: &mut Checker<'_>) {
    let now = SystemTime::now();
    let reached: Vec<(&String, Reach<'_>)> = config
        .generators
        .iter()
        .filter_map(|(name, g)| reach(name, g).map(|r| (name, r)))
        .collect();
    for (i, (name_b, b)) in reached.iter().enumerate() {
        for (name_a, a) in &reached[..i] {
            if let Some(why) = meet(a, b, now) {
                c.fail(
                    &format!("generators.{name_b}"),
                    format!(
                        "can issue the same IDs as generators.{name_a} ({why}); give each its \
                         own node id, or its own lease_node_ids"
                    ),
                );
            }
        }
    }
}
