//! The HTTP/JSON API (axum): IDs as decimal strings, so JavaScript keeps
//! every bit.
//!
//! | route | answer |
//! |---|---|
//! | `GET /v1/id[?generator=NAME]` | `{"id":"<decimal>"}` |
//! | `GET /v1/ids?count=N[&generator=NAME]` | `{"ids":["<decimal>", ...]}`, increasing |
//! | `GET /v1/decode/{id}[?generator=NAME]` | the decoded ID (time, node fields, sequence, ...) |
//! | `GET /ready` | 200 while every generator issues, else 503; JSON per generator |
//! | `GET /live` | 200 while the process serves |
//! | `GET /metrics` | Prometheus text |
//!
//! Errors are JSON, `{"error":"<what is wrong>"}`: 400 for a bad request,
//! 401 without the bearer token (when one is configured), 503 with
//! `Retry-After` while a generator cannot issue.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use serde::Serialize;

use crate::api::{Failure, Service, parse_id};
use crate::auth::Token;
use crate::health::Readiness;
use crate::telemetry::RouteMetrics;

/// What the HTTP handlers share.
pub struct Http {
    service: Arc<Service>,
    readiness: Arc<Readiness>,
    shutting_down: Arc<AtomicBool>,
    prometheus: PrometheusHandle,
    id: Arc<RouteMetrics>,
    ids: Arc<RouteMetrics>,
    decode: Arc<RouteMetrics>,
}

/// The HTTP router.
pub fn router(
    service: Arc<Service>,
    readiness: Arc<Readiness>,
    shutting_down: Arc<AtomicBool>,
    prometheus: PrometheusHandle,
    token: Option<Token>,
) -> Router {
    let state = Arc::new(Http {
        service,
        readiness,
        shutting_down,
        prometheus,
        id: RouteMetrics::new("http", "/v1/id", "200"),
        ids: RouteMetrics::new("http", "/v1/ids", "200"),
        decode: RouteMetrics::new("http", "/v1/decode", "200"),
    });
    let mut ids = Router::new()
        .route("/v1/id", get(one_id))
        .route("/v1/ids", get(many_ids))
        .route("/v1/decode/{id}", get(decode));
    if let Some(token) = token {
        ids = ids.layer(middleware::from_fn_with_state(
            Arc::new(token),
            require_token,
        ));
    }
    ids.route("/ready", get(ready))
        .route("/live", get(live))
        .route("/metrics", get(metrics_text))
        .fallback(not_found)
        .with_state(state)
}

/// A JSON body with its status, ended by a newline (for terminals and
/// line-oriented tools; JSON parsers skip it).
fn json(status: StatusCode, mut body: String) -> Response {
    body.push('\n');
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl Failure {
    fn status(&self) -> StatusCode {
        match self {
            Failure::Invalid(_) => StatusCode::BAD_REQUEST,
            Failure::Unavailable { .. } | Failure::Expired(_) => StatusCode::SERVICE_UNAVAILABLE,
            Failure::Unauthenticated => StatusCode::UNAUTHORIZED,
        }
    }

    /// The status code as a metric label.
    fn status_label(&self) -> &'static str {
        match self {
            Failure::Invalid(_) => "400",
            Failure::Unavailable { .. } | Failure::Expired(_) => "503",
            Failure::Unauthenticated => "401",
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let mut response = json(
            self.status(),
            format!("{{\"error\":{}}}", quoted(self.message())),
        );
        match &self {
            Failure::Unavailable { retry_after, .. } => {
                // Whole seconds, rounded up: a hint of 0 would invite a storm.
                let seconds = retry_after.as_millis().div_ceil(1000).max(1);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds as u64));
            }
            Failure::Unauthenticated => {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}

/// The query parameters a route takes, read strictly: an unknown or
/// repeated parameter is a 400, not a silent default.
#[derive(Default)]
struct Params<'a> {
    generator: &'a str,
    count: Option<&'a str>,
}

fn params<'a>(query: &'a Option<String>, allowed: &[&str]) -> Result<Params<'a>, Failure> {
    let mut params = Params::default();
    let Some(query) = query.as_deref() else {
        return Ok(params);
    };
    let mut seen_generator = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !allowed.contains(&name) {
            return Err(Failure::Invalid(format!(
                "unknown query parameter {name:?}; this route takes: {}",
                allowed.join(", ")
            )));
        }
        let repeated = match name {
            "generator" => std::mem::replace(&mut seen_generator, true),
            _ => params.count.replace(value).is_some(),
        };
        if repeated {
            return Err(Failure::Invalid(format!(
                "query parameter {name:?} is given twice"
            )));
        }
        if name == "generator" {
            params.generator = value;
        }
    }
    Ok(params)
}

async fn one_id(State(http): State<Arc<Http>>, RawQuery(query): RawQuery) -> Response {
    let start = Instant::now();
    let result = async {
        let p = params(&query, &["generator"])?;
        let entry = http.service.generator(p.generator)?;
        let batch = http.service.reserve(entry, 1).await?;
        Ok::<_, Failure>(format!("{{\"id\":\"{}\"}}", batch.first_id()))
    }
    .await;
    respond(&http.id, start, result)
}

async fn many_ids(State(http): State<Arc<Http>>, RawQuery(query): RawQuery) -> Response {
    let start = Instant::now();
    let result = async {
        let p = params(&query, &["count", "generator"])?;
        let count = match p.count {
            None => return Err(Failure::Invalid("count is missing: /v1/ids?count=N".into())),
            Some(text) => text
                .parse::<u64>()
                .map_err(|_| Failure::Invalid(format!("count {text:?} is not a whole number")))?,
        };
        let n = http.service.batch_count(count)?;
        let entry = http.service.generator(p.generator)?;
        let ids = http.service.ids(entry, n).await?;
        // 20 digits and 3 characters of punctuation per ID at most.
        let mut body = String::with_capacity(10 + 23 * ids.len());
        body.push_str("{\"ids\":[");
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            let _ = write!(body, "\"{id}\"");
        }
        body.push_str("]}");
        Ok(body)
    }
    .await;
    respond(&http.ids, start, result)
}

#[derive(Serialize)]
struct DecodedOut<'a> {
    generator: &'a str,
    form: &'static str,
    #[serde(flatten)]
    decoded: flakeid::Decoded<'a>,
}

async fn decode(
    State(http): State<Arc<Http>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let start = Instant::now();
    let result = (|| {
        let p = params(&query, &["generator"])?;
        let entry = http.service.generator(p.generator)?;
        let (id, form) = parse_id(&id)?;
        let decoded = entry.generator.layout().decode(id).map_err(|e| {
            Failure::Invalid(format!(
                "{id} is not an ID of generator {}: {e}",
                entry.name
            ))
        })?;
        let out = DecodedOut {
            generator: &entry.name,
            form: form.name(),
            decoded,
        };
        serde_json::to_string(&out).map_err(|e| Failure::Invalid(e.to_string()))
    })();
    respond(&http.decode, start, result)
}

fn respond(metrics: &RouteMetrics, start: Instant, result: Result<String, Failure>) -> Response {
    match result {
        Ok(body) => {
            metrics.record(start, "200");
            json(StatusCode::OK, body)
        }
        Err(failure) => {
            metrics.record(start, failure.status_label());
            failure.into_response()
        }
    }
}

async fn ready(State(http): State<Arc<Http>>) -> Response {
    let shutting_down = http.shutting_down.load(Ordering::Relaxed);
    let states = http.readiness.check();
    let ready = !shutting_down && states.iter().all(|s| s.ready);
    let mut body = format!("{{\"ready\":{ready}");
    if shutting_down {
        body.push_str(",\"shutting_down\":true");
    }
    body.push_str(",\"generators\":{");
    for (i, s) in states.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        let _ = write!(
            body,
            "{}:{{\"ready\":{},\"health\":{},\"node_id\":{}}}",
            quoted(&s.name),
            s.ready,
            quoted(&s.health),
            s.node_id
        );
    }
    body.push_str("}}");
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json(status, body)
}

async fn live() -> &'static str {
    "live\n"
}

async fn metrics_text(State(http): State<Arc<Http>>) -> Response {
    http.readiness.check();
    let mut response = http.prometheus.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}

async fn not_found(request: Request) -> Response {
    json(
        StatusCode::NOT_FOUND,
        format!(
            "{{\"error\":{}}}",
            quoted(&format!(
                "no route {} {}; routes: GET /v1/id, /v1/ids?count=N, /v1/decode/{{id}}, /ready, /live, /metrics",
                request.method(),
                request.uri().path()
            ))
        ),
    )
}

async fn require_token(State(token): State<Arc<Token>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if token.accepts(given) {
        next.run(request).await
    } else {
        Failure::Unauthenticated.into_response()
    }
}
