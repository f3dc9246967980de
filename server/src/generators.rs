//! The server's generators: built from the configuration, looked up by name
//! on each call.

use std::collections::HashMap;
use std::sync::Arc;

use flakeid::events::{Metrics, Tracing};
use flakeid::{BuildError, Event, EventHook, Generator, Lease, OnExhausted, Persist};
use tokio::sync::Notify;

use crate::config::{Config, GeneratorConfig, LeaseStore, NodeSource, mask_password};

/// One named generator and what the server keeps beside it.
pub struct Entry {
    /// Its name (`[generators.<name>]`).
    pub name: String,
    /// The generator.
    pub generator: Generator,
    /// `OnExhausted::Error`: a used-up tick is reported (503 with the time
    /// to the next tick), not waited for.
    pub reports_exhaustion: bool,
    /// IDs handed out, for the `flakeid_server_ids_issued_total` counter.
    pub issued: metrics::Counter,
}

/// The generators by name, and the default one.
pub struct Generators {
    by_name: HashMap<String, Arc<Entry>>,
    default: Arc<Entry>,
    /// Woken by lease and storage events, so health is re-read at once.
    pub changed: Arc<Notify>,
}

/// A generator that could not be built.
#[derive(Debug)]
pub struct BuildFailure {
    /// The generator's name.
    pub name: String,
    /// Why.
    pub error: BuildError,
}

impl std::fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "generator {}: {}", self.name, self.error)
    }
}

impl std::error::Error for BuildFailure {}

/// The event hook of each generator: the library's `tracing` hook inside a
/// span naming the generator, its `metrics` hook, and a wake-up for the
/// health watcher on events that change health.
fn hook(name: String, changed: Arc<Notify>) -> impl EventHook {
    move |event: &Event| {
        tracing::info_span!("generator", name = %name).in_scope(|| Tracing.on_event(event));
        Metrics.on_event(event);
        if matches!(
            event,
            Event::Fenced { .. }
                | Event::LeaseReopened { .. }
                | Event::LeaseClaimed { .. }
                | Event::SaveFailed { .. }
                | Event::SaveRecovered
        ) {
            changed.notify_one();
        }
    }
}

/// Builds one generator (blocking: a lease's first claim, a state file's
/// first save).
fn build(
    name: &str,
    config: &GeneratorConfig,
    changed: Arc<Notify>,
) -> Result<Generator, BuildError> {
    let mut builder = Generator::builder(config.layout.clone())
        .on_exhausted(config.on_exhausted)
        .on_clock_behind(config.on_clock_behind)
        .on_event(hook(name.to_owned(), changed));
    if let Some(bound) = config.random_start {
        builder = builder.random_start(bound);
    }
    builder = match &config.node {
        NodeSource::Static { node_id, .. } => builder.node_id(*node_id),
        NodeSource::Fields(fields) => fields
            .iter()
            .fold(builder, |b, (field, value)| b.node_field(field, *value)),
        NodeSource::Single => builder.single_node(),
        NodeSource::Lease(lease) => {
            let mut l = match &lease.store {
                LeaseStore::Etcd(endpoints) => Lease::etcd(endpoints.clone()),
                LeaseStore::Redis(url) => Lease::redis(url.clone()),
                LeaseStore::Sentinel { sentinels, master } => {
                    Lease::redis_sentinel(sentinels.clone(), master.clone())
                }
            };
            l = l.prefix(lease.prefix.clone());
            if let Some(ttl) = lease.ttl {
                l = l.ttl(ttl);
            }
            if let Some(margin) = lease.margin {
                l = l.safety_margin(margin);
            }
            if let Some(timeout) = lease.connect_timeout {
                l = l.connect_timeout(timeout);
            }
            if let Some(range) = &lease.node_ids {
                l = l.node_ids(range.clone());
            }
            builder.lease(l)
        }
    };
    if let Some(p) = &config.persist {
        let mut persist = Persist::file(&p.path);
        if let Some(window) = p.window {
            persist = persist.window(window);
        }
        builder = builder.persist(persist);
    }
    builder.build()
}

impl Generators {
    /// Builds every generator of `config`, one after another (each may block
    /// for its lease's first claim, at most its connect timeout).
    ///
    /// # Errors
    ///
    /// The first generator that cannot be built; those built before it are
    /// dropped (their leases released).
    pub fn build(config: &Config) -> Result<Generators, BuildFailure> {
        let changed = Arc::new(Notify::new());
        let mut by_name = HashMap::new();
        for (name, g) in &config.generators {
            let source = match &g.node {
                NodeSource::Static { from, .. } => from.clone(),
                NodeSource::Fields(_) => "configured fields".into(),
                NodeSource::Single => "single node".into(),
                NodeSource::Lease(l) => match &l.store {
                    LeaseStore::Etcd(endpoints) => {
                        format!("etcd lease at {}, prefix {}", endpoints.join(","), l.prefix)
                    }
                    LeaseStore::Redis(url) => {
                        format!("Redis lease at {}, prefix {}", mask_password(url), l.prefix)
                    }
                    LeaseStore::Sentinel { sentinels, master } => {
                        let sentinels: Vec<_> =
                            sentinels.iter().map(|s| mask_password(s)).collect();
                        format!(
                            "Redis lease, master {} via sentinels {}, prefix {}",
                            mask_password(master),
                            sentinels.join(","),
                            l.prefix
                        )
                    }
                },
            };
            if let NodeSource::Lease(_) = &g.node {
                tracing::info!(generator = %name, "claiming a node id: {source}");
            }
            let generator = build(name, g, changed.clone()).map_err(|error| BuildFailure {
                name: name.clone(),
                error,
            })?;
            tracing::info!(
                generator = %name,
                layout = %g.layout,
                node_id = generator.node_id(),
                node_from = %source,
                persist = g.persist.as_ref().map(|p| p.path.display().to_string()),
                "generator built"
            );
            let issued =
                metrics::counter!("flakeid_server_ids_issued_total", "generator" => name.clone());
            by_name.insert(
                name.clone(),
                Arc::new(Entry {
                    name: name.clone(),
                    generator,
                    reports_exhaustion: g.on_exhausted == OnExhausted::Error,
                    issued,
                }),
            );
        }
        let default = by_name
            .get(&config.default_generator)
            .cloned()
            .expect("the configuration checked that the default generator exists");
        Ok(Generators {
            by_name,
            default,
            changed,
        })
    }

    /// The generator `name` names (the default one for `""`).
    pub fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        if name.is_empty() {
            Some(&self.default)
        } else {
            self.by_name.get(name)
        }
    }

    /// Every generator, sorted by name.
    pub fn all(&self) -> Vec<&Arc<Entry>> {
        let mut all: Vec<_> = self.by_name.values().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The names, sorted, for error messages.
    pub fn names(&self) -> String {
        self.all()
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The default generator's name.
    pub fn default_name(&self) -> &str {
        &self.default.name
    }
}
