//! Logs (`tracing`, text or JSON) and metrics (the `metrics` facade,
//! rendered as Prometheus text at `/metrics`).
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `flakeid_server_requests_total` | counter | `api` (http, grpc), `route`, `status` (HTTP code or gRPC code name) |
//! | `flakeid_server_request_duration_seconds` | histogram | `api`, `route` |
//! | `flakeid_server_ids_issued_total` | counter | `generator` |
//! | `flakeid_server_streams_active` | gauge | |
//! | `flakeid_server_generator_ready` | gauge | `generator` (1 issuing, 0 not) |
//! | `flakeid_server_generator_node_id` | gauge | `generator` |
//! | `flakeid_events_total` and the rest of `flakeid::events::Metrics` | | the library's events, all generators together |

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::prelude::*;

use crate::config::LogFormat;

/// Sets up logging to standard error.
///
/// # Errors
///
/// If a subscriber is already installed, or the filter does not parse.
pub fn init_logs(format: LogFormat, filter: &str) -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_new(filter)?;
    let ansi = std::io::stderr().is_terminal();
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(ansi)
                    .with_writer(std::io::stderr),
            )
            .try_init()?,
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            )
            .try_init()?,
    }
    Ok(())
}

/// Latency buckets: 50 µs to 10 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 10.0,
];

/// Installs the Prometheus recorder as the process's `metrics` recorder and
/// keeps its histograms drained every 5 s (the exporter holds samples until
/// upkeep, so a server nobody scrapes stays bounded).
///
/// # Errors
///
/// If a recorder is already installed.
pub fn init_metrics() -> Result<PrometheusHandle, Box<dyn std::error::Error>> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)?
        .install_recorder()?;
    metrics::describe_counter!(
        "flakeid_server_requests_total",
        "Requests answered, by API, route and status."
    );
    metrics::describe_histogram!(
        "flakeid_server_request_duration_seconds",
        metrics::Unit::Seconds,
        "Time from a request's arrival to its answer (for a stream: its last chunk)."
    );
    metrics::describe_counter!(
        "flakeid_server_ids_issued_total",
        "IDs handed out, by generator."
    );
    metrics::describe_gauge!(
        "flakeid_server_streams_active",
        "StreamIds calls in progress."
    );
    // Every series from the start: a dashboard sees 0, not "no data".
    metrics::gauge!("flakeid_server_streams_active").set(0.0);
    metrics::describe_gauge!(
        "flakeid_server_generator_ready",
        "1 while the generator issues IDs, 0 while it cannot (fenced, storage failing, expired)."
    );
    metrics::describe_gauge!(
        "flakeid_server_generator_node_id",
        "The node id the generator issues under (a leased one changes after a fence)."
    );
    Ok(handle)
}

/// Runs the exporter's upkeep every 5 s, for as long as the runtime lives.
pub fn spawn_upkeep(handle: PrometheusHandle) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            handle.run_upkeep();
        }
    });
}

/// One route's metric handles, made once: counting a success takes no
/// registry lookup.
pub struct RouteMetrics {
    api: &'static str,
    route: &'static str,
    ok_status: &'static str,
    ok: Counter,
    latency: Histogram,
}

impl RouteMetrics {
    /// Handles for `route` of `api`, whose success status is `ok_status`.
    pub fn new(api: &'static str, route: &'static str, ok_status: &'static str) -> RouteMetrics {
        RouteMetrics {
            api,
            route,
            ok_status,
            ok: metrics::counter!(
                "flakeid_server_requests_total",
                "api" => api, "route" => route, "status" => ok_status
            ),
            latency: metrics::histogram!(
                "flakeid_server_request_duration_seconds",
                "api" => api, "route" => route
            ),
        }
    }

    /// Records one answer with `status`, begun at `start`.
    pub fn record(&self, start: Instant, status: &str) {
        self.latency.record(start.elapsed().as_secs_f64());
        if status == self.ok_status {
            self.ok.increment(1);
        } else {
            metrics::counter!(
                "flakeid_server_requests_total",
                "api" => self.api, "route" => self.route, "status" => status.to_owned()
            )
            .increment(1);
        }
    }
}
