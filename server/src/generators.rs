//! The server's generators: built from the configuration, looked up by name
//! on each call.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

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
    /// state file's mark ahead of the clock): until when, while the
    /// generator does not issue yet.
    pub reserved_until: Option<SystemTime>,
    /// Whether the generator has issued since it was built: false only
    /// while a restart waits out its predecessor's reservation.
    issuing: AtomicBool,
}

impl Entry {
    /// Why the generator cannot issue yet, while a restart waits out its
    /// predecessor's reservation.
    pub fn restarting(&self) -> Option<String> {
        if self.issuing.load(Ordering::Relaxed) {
            return None;
        }
        let until = self.reserved_until?;
        let left = until.duration_since(SystemTime::now()).unwrap_or_default();
        Some(format!(
            "waiting out the IDs the previous run reserved, until {} (in {})",
            rfc3339(until),
            humantime::format_duration(Duration::from_millis(left.as_millis() as u64))
        ))
    }

    /// Takes one ID (dropped) to learn whether the generator issues: how
    /// long until it may, if it says. A generator restarted from a state
    /// file whose mark is ahead of the clock (its predecessor's
    /// reservation, up to `persist_window`) issues only after it.
    fn probe(&self) -> Option<Duration> {
        match self.generator.poll_id() {
            // Under the default policies the mark's tick is used up; under
            // `on_clock_behind = "wait:..."` or `"error"` the clock is
            // behind it.
            Err(
                GenerateError::SequenceExhausted { retry_after }
                | GenerateError::ClockBehind {
                    behind: retry_after,
                },
            ) => Some(retry_after),
            _ => {
                self.issuing.store(true, Ordering::Relaxed);
                None
            }
        }
    }
}

fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
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
            let issued =
                metrics::counter!("flakeid_server_ids_issued_total", "generator" => name.clone());
            let mut entry = Entry {
                name: name.clone(),
                generator,
                reports_exhaustion: g.on_exhausted == OnExhausted::Error,
                issued,
                reserved_until: None,
                issuing: AtomicBool::new(false),
            };
            if let Some(wait) = entry.probe() {
                let until = SystemTime::now() + wait;
                entry.reserved_until = Some(until);
                tracing::info!(
                    generator = %name,
                    "the previous run reserved IDs until {}: issuing from then",
                    rfc3339(until)
                );
            }
            by_name.insert(name.clone(), Arc::new(entry));
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

    /// Returns once every generator issues: a restart waits out its
    /// predecessor's reservation, probing until the generator issues (its
    /// clock, not this one, says when).
    pub async fn issuing(&self) {
        for entry in self.by_name.values() {
            while let Some(wait) = entry.probe() {
                tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
            }
        }
    }

    /// The default generator's name.
    pub fn default_name(&self) -> &str {
        &self.default.name
    }
}
