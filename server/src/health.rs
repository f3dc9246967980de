//! Readiness from `Generator::health()`: for `/ready`, the gRPC health
//! service (`grpc.health.v1.Health`) and the readiness gauges.
//!
//! gRPC health names: `""` and `flakeid.v1.IdGenerator` for the whole server
//! (SERVING while every generator issues), and
//! `flakeid.v1.IdGenerator/<generator>` for each generator.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::generators::Generators;

/// The gRPC service name the health service reports for.
pub const SERVICE: &str = "flakeid.v1.IdGenerator";

/// One generator's state now.
#[derive(Debug, Clone, Serialize)]
pub struct GeneratorState {
    /// Its name.
    #[serde(skip)]
    pub name: String,
    /// `Health::is_ready`.
    pub ready: bool,
    /// `Health`'s text: issuing, fenced: ..., storage failing: ...
    pub health: String,
    /// The node id it issues under.
    pub node_id: u64,
}

/// Reads the generators' health and keeps the readiness gauges current.
pub struct Readiness {
    generators: Arc<Generators>,
}

impl Readiness {
    /// Readiness of `generators`.
    pub fn new(generators: Arc<Generators>) -> Readiness {
        Readiness { generators }
    }

    /// Every generator's state, sorted by name; sets the gauges.
    pub fn check(&self) -> Vec<GeneratorState> {
        self.generators
            .all()
            .into_iter()
            .map(|entry| {
                let health = entry.generator.health();
                let restarting = entry.restarting();
                let state = GeneratorState {
                    name: entry.name.clone(),
                    ready: health.is_ready() && restarting.is_none(),
                    health: restarting.unwrap_or_else(|| health.to_string()),
                    node_id: entry.generator.node_id(),
                };
                metrics::gauge!("flakeid_server_generator_ready", "generator" => state.name.clone())
                    .set(if state.ready { 1.0 } else { 0.0 });
                metrics::gauge!("flakeid_server_generator_node_id", "generator" => state.name.clone())
                    .set(state.node_id as f64);
                state
            })
            .collect()
    }

    /// Keeps the gRPC health service current: at once after a lease or
    /// storage event, and at least every second (a fence can close by
    /// itself, with no event, when its deadline passes), until shutdown,
    /// when everything turns NOT_SERVING.
    pub async fn watch(self: Arc<Self>, reporter: HealthReporter, shutting_down: Arc<AtomicBool>) {
        let changed = self.generators.changed.clone();
        let mut last: Option<Vec<bool>> = None;
        loop {
            let down = shutting_down.load(Ordering::Relaxed);
            let states = self.check();
            let now: Vec<bool> = states.iter().map(|s| s.ready && !down).collect();
            if last.as_ref() != Some(&now) {
                let all = now.iter().all(|r| *r);
                let status = |ok: bool| {
                    if ok {
                        ServingStatus::Serving
                    } else {
                        ServingStatus::NotServing
                    }
                };
                reporter.set_service_status("", status(all)).await;
                reporter.set_service_status(SERVICE, status(all)).await;
                for (state, ready) in states.iter().zip(&now) {
                    reporter
                        .set_service_status(format!("{SERVICE}/{}", state.name), status(*ready))
                        .await;
                    if last.is_some() && !down {
                        if *ready {
                            tracing::info!(generator = %state.name, "ready: {}", state.health);
                        } else {
                            tracing::warn!(generator = %state.name, "not ready: {}", state.health);
                        }
                    }
                }
                last = Some(now);
            }
            if down {
                return;
            }
            tokio::select! {
                () = changed.notified() => {}
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
}
