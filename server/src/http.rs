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
//! Queries and paths are read by axum's `Query` and `Path` into serde
//! types (percent-decoded; an unknown or repeated parameter is refused).
//! Every error is an [`HttpError`]: a status and a JSON body
//! `{"error":"<what is wrong>"}`: 400 for a bad request, 401 without the
//! bearer token (when one is configured), 404 for an unknown path, 405 for
//! another method than GET, 503 with `Retry-After` while a generator cannot
//! issue. Each ID route's metrics are recorded by one wrapper around its
//! handler (`Recorded`), which holds that route's handles (no lookup per
//! request).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequestParts, Path, Query, Request, State};
use axum::handler::Handler;
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use flakeid::{Decoded, Id};
use metrics_exporter_prometheus::PrometheusHandle;
use serde::{Deserialize, Serialize};

use crate::api::{Failure, Service, parse_id};
use crate::auth::Token;
use crate::health::{GeneratorState, Readiness};
use crate::quote::shorten;
use crate::telemetry::RouteMetrics;

/// What the routes take, for the 404 message.
const ROUTE_LIST: &str = "GET /v1/id, /v1/ids?count=N, /v1/decode/{id}, /ready, /live, /metrics";

/// What the HTTP handlers share.
pub struct Http {
    service: Arc<Service>,
    readiness: Arc<Readiness>,
    shutting_down: Arc<AtomicBool>,
    prometheus: PrometheusHandle,
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
    });
    let token = token.map(Arc::new);
    // An ID route: the token checked (when one is configured), then the
    // answer recorded under `label`, 401s included. Wrong methods go to
    // the fallback, outside both.
    let id_route = |label: &'static str| IdRoute {
        token: token.clone(),
        metrics: RouteMetrics::new("http", label, "200"),
    };
    Router::new()
        .route("/v1/id", id_route("/v1/id").get(one_id))
        .route("/v1/ids", id_route("/v1/ids").get(many_ids))
        .route("/v1/decode/{id}", id_route("/v1/decode").get(decode))
        .route("/ready", get(ready))
        .route("/live", get(live))
        .route("/metrics", get(metrics_text))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// An HTTP error: its status, the reason in a JSON body, and the headers
/// it calls for (`Retry-After`, `WWW-Authenticate`).
#[derive(Debug)]
pub struct HttpError {
    status: StatusCode,
    reason: String,
    retry_after_s: Option<u64>,
}

impl HttpError {
    fn new(status: StatusCode, reason: impl Into<String>) -> HttpError {
        HttpError {
            status,
            reason: reason.into(),
            retry_after_s: None,
        }
    }
}

impl From<Failure> for HttpError {
    fn from(failure: Failure) -> HttpError {
        let status = match &failure {
            Failure::Invalid(_) => StatusCode::BAD_REQUEST,
            Failure::Unavailable { .. } | Failure::Expired(_) => StatusCode::SERVICE_UNAVAILABLE,
            Failure::Unauthenticated => StatusCode::UNAUTHORIZED,
        };
        HttpError {
            status,
            reason: failure.message().to_owned(),
            // Whole seconds, rounded up: a hint of 0 would invite a storm.
            retry_after_s: match &failure {
                Failure::Unavailable { retry_after, .. } => {
                    Some(retry_after.as_millis().div_ceil(1000).max(1) as u64)
                }
                _ => None,
            },
        }
    }
}

impl From<QueryRejection> for HttpError {
    fn from(rejection: QueryRejection) -> HttpError {
        HttpError::new(rejection.status(), shorten(&rejection.body_text()))
    }
}

impl From<PathRejection> for HttpError {
    fn from(rejection: PathRejection) -> HttpError {
        HttpError::new(rejection.status(), shorten(&rejection.body_text()))
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut response = json(
            self.status,
            &ErrorBody {
                error: &self.reason,
            },
        );
        let headers = response.headers_mut();
        if let Some(seconds) = self.retry_after_s {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A JSON body with its status, ended by a newline (for terminals and
/// line-oriented tools; JSON parsers skip it).
fn json(status: StatusCode, body: &impl Serialize) -> Response {
    let mut bytes = serde_json::to_vec(body).expect("the bodies serialize");
    bytes.push(b'\n');
    // Built directly: `(status, headers, bytes).into_response()` sets
    // `application/octet-stream` first and then replaces it.
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `?generator=NAME`, for the routes that take only that.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct GeneratorQuery {
    #[serde(default)]
    generator: String,
}

impl<S: Send + Sync> FromRequestParts<S> for GeneratorQuery {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        // No query at all, the usual `GET /v1/id`: the default generator,
        // without running the deserializer.
        if parts.uri.query().is_none() {
            return Ok(GeneratorQuery::default());
        }
        let Query(query) = Query::from_request_parts(parts, state).await?;
        Ok(query)
    }
}

/// `?count=N[&generator=NAME]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CountQuery {
    count: u64,
    #[serde(default)]
    generator: String,
}

#[derive(Serialize)]
struct OneId {
    id: Id,
}

#[derive(Serialize)]
struct ManyIds {
    ids: Vec<Id>,
}

#[derive(Serialize)]
struct DecodedId<'a> {
    generator: &'a str,
    form: &'static str,
    #[serde(flatten)]
    decoded: Decoded<'a>,
}

type Answer = Result<Response, HttpError>;

async fn one_id(State(http): State<Arc<Http>>, query: Result<GeneratorQuery, HttpError>) -> Answer {
    let query = query?;
    let entry = http.service.generator(&query.generator)?;
    let batch = http.service.reserve(entry, 1).await?;
    Ok(json(
        StatusCode::OK,
        &OneId {
            id: batch.first_id(),
        },
    ))
}

async fn many_ids(
    State(http): State<Arc<Http>>,
    query: Result<Query<CountQuery>, QueryRejection>,
) -> Answer {
    let Query(query) = query?;
    let n = http.service.batch_count(query.count)?;
    let entry = http.service.generator(&query.generator)?;
    let ids = http.service.ids(entry, n).await?;
    Ok(json(StatusCode::OK, &ManyIds { ids }))
}

async fn decode(
    State(http): State<Arc<Http>>,
    id: Result<Path<String>, PathRejection>,
    query: Result<GeneratorQuery, HttpError>,
) -> Answer {
    let (Path(id), query) = (id?, query?);
    let entry = http.service.generator(&query.generator)?;
    let (id, form) = parse_id(&id)?;
    let decoded = http.service.decode(entry, id)?;
    Ok(json(
        StatusCode::OK,
        &DecodedId {
            generator: &entry.name,
            form: form.name(),
            decoded,
        },
    ))
}

/// What an ID route is wrapped in: the token check (when one is
/// configured) inside the metrics.
struct IdRoute {
    token: Option<Arc<Token>>,
    metrics: RouteMetrics,
}

impl IdRoute {
    /// `GET` to `handler`, wrapped.
    fn get<H, T>(self, handler: H) -> MethodRouter<Arc<Http>>
    where
        H: Handler<T, Arc<Http>>,
        H::Future: Unpin,
        T: 'static,
    {
        let metrics = Arc::new(self.metrics);
        match self.token {
            Some(token) => get(Recorded {
                handler: handler.layer(middleware::from_fn_with_state(token, require_token)),
                metrics,
            }),
            None => get(Recorded { handler, metrics }),
        }
    }
}

/// The metrics layer: `handler` with each answer counted in `metrics` by
/// status, and its latency.
///
/// A handler around a handler, where a `tower` layer (on the route or on
/// the handler) would put a service, its `oneshot` and a second future
/// around every request: this one adds the start time to the handler's
/// future, nothing else.
#[derive(Clone)]
struct Recorded<H> {
    handler: H,
    metrics: Arc<RouteMetrics>,
}

impl<H, T, S> Handler<T, S> for Recorded<H>
where
    H: Handler<T, S>,
    H::Future: Unpin,
    T: 'static,
    S: Send + 'static,
{
    type Future = RecordedAnswer<H::Future>;

    fn call(self, request: Request, state: S) -> Self::Future {
        RecordedAnswer {
            start: Instant::now(),
            answer: self.handler.call(request, state),
            metrics: self.metrics,
        }
    }
}

/// A handler's answer, recorded when it is ready.
struct RecordedAnswer<F> {
    start: Instant,
    answer: F,
    metrics: Arc<RouteMetrics>,
}

impl<F: Future<Output = Response> + Unpin> Future for RecordedAnswer<F> {
    type Output = Response;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let response = ready!(Pin::new(&mut self.answer).poll(cx));
        self.metrics.record(self.start, response.status().as_str());
        Poll::Ready(response)
    }
}

#[derive(Serialize)]
struct ReadyBody {
    ready: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    shutting_down: bool,
    generators: BTreeMap<String, GeneratorState>,
}

async fn ready(State(http): State<Arc<Http>>) -> Response {
    let shutting_down = http.shutting_down.load(Ordering::Relaxed);
    let generators: BTreeMap<String, GeneratorState> = http
        .readiness
        .check()
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect();
    let ready = !shutting_down && generators.values().all(|s| s.ready);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json(
        status,
        &ReadyBody {
            ready,
            shutting_down,
            generators,
        },
    )
}

async fn live() -> &'static str {
    "live\n"
}

async fn metrics_text(State(http): State<Arc<Http>>) -> Response {
    http.readiness.check();
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        )],
        http.prometheus.render(),
    )
        .into_response()
}

async fn not_found(method: Method, uri: Uri) -> HttpError {
    HttpError::new(
        StatusCode::NOT_FOUND,
        format!(
            "no route {method} {}; routes: {ROUTE_LIST}",
            crate::quote::quote(uri.path())
        ),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> HttpError {
    HttpError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{method} is not allowed on {}: the API answers GET (and HEAD)",
            crate::quote::quote(uri.path())
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
        HttpError::from(Failure::Unauthenticated).into_response()
    }
}
