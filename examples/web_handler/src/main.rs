//! A web service handing out IDs: axum handlers sharing one generator.
//!
//! ```text
//! cargo run -p flakeid-web-handler
//! curl -X POST localhost:3000/events          # {"id":"2124401418084446208"}
//! curl -X POST localhost:3000/orders          # {"id":"2WvmQI3TZzc","created":"2026-11-22T07:15:42.198Z"}
//! curl localhost:3000/orders/2WvmQI3TZzc      # {"id":"2WvmQI3TZzc","created":"2026-11-22T07:15:42.198Z"}
//! curl localhost:3000/ready                    # issuing
//! ```
//!
//! - `/events` is an internal API: the ID goes out as is, and serde writes it
//!   as a decimal string so JavaScript clients do not round it.
//! - `/orders` is public: the ID goes out as a volume-hiding public id in
//!   base62, so customers cannot count orders by subtracting two of them.
//! - The handlers await `try_next_id_async`: a used-up millisecond is waited
//!   out on tokio's timer (the executor keeps serving others), but what
//!   cannot be waited out in a request's time (a lapsed node-id lease, failing
//!   storage, a layout past its end) is answered at once with 503 and
//!   `Retry-After`, instead of a request that hangs.
//! - `/ready` is the readiness probe: 200 while the generator issues, 503
//!   (with the reason) while it cannot, so the load balancer sends requests
//!   elsewhere.
//!
//! The public-id key comes from `FLAKEID_PUBLIC_KEY` (32 hex digits); the
//! port from `PORT` (default 3000).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use flakeid::{GenerateError, Generator, Id, Layout, PublicIds};
use serde::Serialize;

struct App {
    generator: Generator,
    public_ids: PublicIds,
}

#[derive(Serialize)]
struct Event {
    id: Id,
}

#[derive(Serialize)]
struct Order {
    id: String,
    created: String,
}

/// An error answer: its status, whether to ask the client to retry, and
/// what went wrong.
struct Failure {
    status: StatusCode,
    retry: bool,
    message: String,
}

impl Failure {
    fn new(status: StatusCode, message: impl std::fmt::Display) -> Failure {
        Failure {
            status,
            retry: false,
            message: message.to_string(),
        }
    }

    /// 503 with `Retry-After`: the generator cannot issue now.
    fn unavailable(e: &GenerateError) -> Failure {
        Failure {
            retry: true,
            ..Failure::new(StatusCode::SERVICE_UNAVAILABLE, format!("no id now: {e}"))
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        if self.retry {
            (self.status, [(header::RETRY_AFTER, "1")], self.message).into_response()
        } else {
            (self.status, self.message).into_response()
        }
    }
}

async fn create_event(State(app): State<Arc<App>>) -> Result<Json<Event>, Failure> {
    match app.generator.try_next_id_async().await {
        Ok(id) => Ok(Json(Event { id })),
        Err(e) => Err(Failure::unavailable(&e)),
    }
}

async fn create_order(State(app): State<Arc<App>>) -> Result<Json<Order>, Failure> {
    let id = app
        .generator
        .try_next_id_async()
        .await
        .map_err(|e| Failure::unavailable(&e))?;
    order(&app, id)
}

async fn ready(State(app): State<Arc<App>>) -> (StatusCode, String) {
    let health = app.generator.health();
    let code = if health.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, health.to_string())
}

async fn show_order(
    State(app): State<Arc<App>>,
    Path(public): Path<String>,
) -> Result<Json<Order>, Failure> {
    let bad = |e: &dyn std::fmt::Display| {
        Failure::new(StatusCode::NOT_FOUND, format!("no order {public:?}: {e}"))
    };
    let public_id = Id::parse_base62(&public).map_err(|e| bad(&e))?;
    let id = app.public_ids.from_public(public_id).map_err(|e| bad(&e))?;
    // Any 63-bit number maps back to some ID; a real service now looks it
    // up. Here, an ID from the future was certainly never issued.
    if id > app.generator.last_id() {
        return Err(bad(&"never issued"));
    }
    order(&app, id)
}

fn order(app: &App, id: Id) -> Result<Json<Order>, Failure> {
    let internal = |e: &dyn std::fmt::Display| Failure::new(StatusCode::INTERNAL_SERVER_ERROR, e);
    let public_id = app.public_ids.to_public(id).map_err(|e| internal(&e))?;
    let decoded = app
        .generator
        .layout()
        .decode(id)
        .map_err(|e| internal(&e))?;
    Ok(Json(Order {
        id: public_id.to_base62().to_string(),
        created: decoded.rfc3339().to_string(),
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let key = match std::env::var("FLAKEID_PUBLIC_KEY") {
        Ok(hex) if hex.len() == 32 => u128::from_str_radix(&hex, 16)?.to_be_bytes(),
        Ok(_) => return Err("FLAKEID_PUBLIC_KEY must be 32 hex digits".into()),
        Err(_) => {
            eprintln!("FLAKEID_PUBLIC_KEY is not set: using a demo key that is not secret");
            *b"not a secret key"
        }
    };
    let app = Arc::new(App {
        generator: Generator::builder(Layout::twitter())
            .node_field("datacenter", 1)
            .node_field("worker", 7)
            .build()?,
        public_ids: PublicIds::new(key),
    });
    let router = Router::new()
        .route("/events", post(create_event))
        .route("/orders", post(create_order))
        .route("/orders/{id}", get(show_order))
        .route("/ready", get(ready))
        .with_state(app);
    let port: u16 = std::env::var("PORT").map_or(Ok(3000), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router).await?;
    Ok(())
}
