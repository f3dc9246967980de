//! The server's generators: built from the configuration, looked up by name
//! on each call.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use flakeid::events::{Metrics, Tracing};
use flakeid::{BuildError, Event, EventHook, GenerateError, Generator, OnExhausted, Persist};
use tokio::sync::Notify;

use crate::config::{Config, GeneratorConfig, defaults};

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
    /// After a restart inside the IDs a crashed predecessor reserved (its
    /// state file's mark ahead of the clock): when the generator issues
    /// again, and the instant it reserved to, for messages.
    pub reserved_until: Option<(Instant, SystemTime)>,
}

impl Entry {
    /// Why the generator cannot issue yet, while a restart waits out its
    /// predecessor's reservation.
    pub fn restarting(&self) -> Option<String> {
        let (at, until) = self.reserved_until?;
        let left = at.checked_duration_since(Instant::now())?;
        Some(format!(
            "waiting out the IDs the previous run reserved, until {} (in {})",
            rfc3339(until),
            humantime::format_duration(Duration::from_millis(left.as_millis() as u64))
        ))
    }
}

fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// Takes the generator's first ID (dropped) to learn whether it issues now:
/// a generator restarted from a state file whose mark is ahead of the
/// clock (the predecessor's reservation, up to `persist_window`) issues only
/// after it, and says how long that is.
fn first_issue(generator: &Generator) -> Option<(Instant, SystemTime)> {
    match generator.poll_id() {
        Err(GenerateError::SequenceExhausted { retry_after }) => Some((
            Instant::now() + retry_after,
            SystemTime::now() + retry_after,
        )),
        _ => None,
    }
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
    // The check resolved every node id but a leased one.
    if let Some(node_id) = config.node_id {
        builder = builder.node_id(node_id);
    }
    if let Some(lease) = config.node.as_ref().and_then(|n| n.lease(name)) {
        builder = builder.lease(lease);
    }
    if let Some(path) = &config.state_file {
        let window = config.persist_window.unwrap_or(defaults::PERSIST_WINDOW);
        builder = builder.persist(Persist::file(path).window(window));
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
            let node = g.node.as_ref();
            let source = node.map(|n| n.describe(name)).unwrap_or_default();
            if node.and_then(|n| n.lease(name)).is_some() {
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
                persist = g.state_file.as_ref().map(|p| p.display().to_string()),
                "generator built"
            );
            let reserved_until = first_issue(&generator);
            if let Some((_, until)) = reserved_until {
                tracing::info!(
                    generator = %name,
                    "the previous run reserved IDs until {}: issuing from then",
                    rfc3339(until)
                );
            }
            let issued =
                metrics::counter!("flakeid_server_ids_issued_total", "generator" => name.clone());
            by_name.insert(
                name.clone(),
                Arc::new(Entry {
                    name: name.clone(),
                    generator,
                    reports_exhaustion: g.on_exhausted == OnExhausted::Error,
                    issued,
                    reserved_until,
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

    /// When every generator issues: after the latest restart reservation.
    pub fn issuing_from(&self) -> Option<Instant> {
        self.by_name
            .values()
            .filter_map(|e| e.reserved_until.map(|(at, _)| at))
            .max()
    }

    /// The default generator's name.
    pub fn default_name(&self) -> &str {
        &self.default.name
    }
}
