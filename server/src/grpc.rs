//! The gRPC API (tonic): `flakeid.v1.IdGenerator`, from
//! `proto/flakeid/v1/flakeid.proto`.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use futures_util::Stream;
use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Response, Status};

use crate::api::{Failure, Service, parse_id};
use crate::auth::Token;
use crate::generators::Entry;
use crate::proto::id_generator_server::{IdGenerator, IdGeneratorServer};
use crate::proto::{
    DecodeRequest, DecodeResponse, IdChunk, NextIdRequest, NextIdResponse, NextIdsRequest,
    NextIdsResponse, StreamIdsRequest,
};
use crate::telemetry::RouteMetrics;

impl From<Failure> for Status {
    fn from(failure: Failure) -> Status {
        match failure {
            Failure::Invalid(m) => Status::invalid_argument(m),
            Failure::Unavailable {
                message,
                retry_after,
            } => {
                let mut status = Status::unavailable(message);
                // gRPC's retry hint (the A6 retry design), read by clients'
                // retry policies; milliseconds.
                status.metadata_mut().insert(
                    "grpc-retry-pushback-ms",
                    MetadataValue::from(retry_after.as_millis().max(1) as u64),
                );
                status
            }
            Failure::Expired(m) => Status::failed_precondition(m),
            Failure::Unauthenticated => Status::unauthenticated(
                "a bearer token is required: metadata authorization: Bearer <token>",
            ),
        }
    }
}

/// A gRPC code as a metric label.
fn code_label(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::Unavailable => "UNAVAILABLE",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Unauthenticated => "UNAUTHENTICATED",
        Code::Cancelled => "CANCELLED",
        _ => "OTHER",
    }
}

/// The service implementation.
pub struct Grpc {
    service: Arc<Service>,
    next_id: RouteMetrics,
    next_ids: RouteMetrics,
    stream_ids: Arc<RouteMetrics>,
    decode: RouteMetrics,
}

/// The tonic services: `flakeid.v1.IdGenerator` behind the bearer token if
/// one is set, and server reflection.
pub fn service(service: Arc<Service>, token: Option<Token>) -> tonic::service::Routes {
    let grpc = Grpc {
        service,
        next_id: RouteMetrics::new("grpc", "NextId", "OK"),
        next_ids: RouteMetrics::new("grpc", "NextIds", "OK"),
        stream_ids: Arc::new(RouteMetrics::new("grpc", "StreamIds", "OK")),
        decode: RouteMetrics::new("grpc", "Decode", "OK"),
    };
    let check = move |request: Request<()>| -> Result<Request<()>, Status> {
        match &token {
            None => Ok(request),
            Some(token) => {
                let given = request
                    .metadata()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok());
                if token.accepts(given) {
                    Ok(request)
                } else {
                    Err(Failure::Unauthenticated.into())
                }
            }
        }
    };
    // Reflection (both versions: grpcurl asks v1, then v1alpha; Python's
    // grpcio-reflection asks v1alpha) stays open, as health does: it tells
    // the schema, no IDs.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .include_reflection_service(false)
            .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let valid = "the embedded descriptors are valid";
    tonic::service::Routes::new(IdGeneratorServer::with_interceptor(grpc, check))
        .add_service(reflection().build_v1().expect(valid))
        .add_service(reflection().build_v1alpha().expect(valid))
}

fn finish<T>(
    metrics: &RouteMetrics,
    start: Instant,
    result: Result<T, Failure>,
) -> Result<Response<T>, Status> {
    match result {
        Ok(reply) => {
            metrics.record(start, "OK");
            Ok(Response::new(reply))
        }
        Err(failure) => {
            let status = Status::from(failure);
            metrics.record(start, code_label(status.code()));
            Err(status)
        }
    }
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<IdChunk, Status>> + Send>>;

#[tonic::async_trait]
impl IdGenerator for Grpc {
    async fn next_id(
        &self,
        request: Request<NextIdRequest>,
    ) -> Result<Response<NextIdResponse>, Status> {
        let start = Instant::now();
        let result = async {
            let entry = self.service.generator(&request.get_ref().generator)?;
            let batch = self.service.reserve(entry, 1).await?;
            Ok(NextIdResponse {
                id: batch.first_id().to_u64(),
            })
        }
        .await;
        finish(&self.next_id, start, result)
    }

    async fn next_ids(
        &self,
        request: Request<NextIdsRequest>,
    ) -> Result<Response<NextIdsResponse>, Status> {
        let start = Instant::now();
        let result = async {
            let request = request.get_ref();
            let n = self.service.batch_count(u64::from(request.count))?;
            let entry = self.service.generator(&request.generator)?;
            let ids = self.service.ids(entry, n).await?;
            Ok(NextIdsResponse {
                ids: ids.into_iter().map(flakeid::Id::to_u64).collect(),
            })
        }
        .await;
        finish(&self.next_ids, start, result)
    }

    type StreamIdsStream = ChunkStream;

    async fn stream_ids(
        &self,
        request: Request<StreamIdsRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        let start = Instant::now();
        let request = request.get_ref();
        let checked = self
            .service
            .stream_shape(request.count, request.chunk_size)
            .and_then(|shape| Ok((shape, self.service.generator(&request.generator)?.clone())));
        let ((count, chunk), entry) = match checked {
            Ok(ok) => ok,
            Err(failure) => return finish(&self.stream_ids, start, Err(failure)),
        };
        let state = StreamState {
            service: self.service.clone(),
            entry,
            remaining: count,
            chunk,
            guard: StreamGuard::new(self.stream_ids.clone(), start),
        };
        let stream = futures_util::stream::unfold(state, |mut state| async move {
            if state.remaining == 0 {
                return None;
            }
            if let Some(failure) = state.service.stream_cut(state.remaining) {
                state.remaining = 0;
                let status = Status::from(failure);
                state.guard.status = code_label(status.code());
                return Some((Err(status), state));
            }
            let want = state.remaining.min(state.chunk as u64) as usize;
            let mut ids = Vec::with_capacity(want);
            while ids.len() < want {
                match state.service.reserve(&state.entry, want - ids.len()).await {
                    Ok(batch) => ids.extend(batch.map(flakeid::Id::to_u64)),
                    Err(failure) => {
                        // The stream ends with the error; IDs reserved for
                        // this chunk are dropped (never handed out).
                        state.remaining = 0;
                        let status = Status::from(failure);
                        state.guard.status = code_label(status.code());
                        return Some((Err(status), state));
                    }
                }
            }
            state.remaining -= want as u64;
            if state.remaining == 0 {
                state.guard.status = "OK";
            }
            Some((Ok(IdChunk { ids }), state))
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn decode(
        &self,
        request: Request<DecodeRequest>,
    ) -> Result<Response<DecodeResponse>, Status> {
        let start = Instant::now();
        let result = (|| {
            let request = request.get_ref();
            let entry = self.service.generator(&request.generator)?;
            let (id, form) = parse_id(&request.id)?;
            let decoded = self.service.decode(entry, id)?;
            Ok(DecodeResponse {
                id: id.to_u64(),
                time: decoded.rfc3339().to_string(),
                unix_ms: decoded.unix_ms(),
                timestamp: decoded.timestamp(),
                node_id: decoded.node_id(),
                node_fields: decoded
                    .node_fields()
                    .map(|(name, value)| (name.to_owned(), value))
                    .collect(),
                sequence: decoded.sequence(),
                clock_id: decoded.clock_id(),
                form: form.name().to_owned(),
            })
        })();
        finish(&self.decode, start, result)
    }
}

struct StreamState {
    service: Arc<Service>,
    entry: Arc<Entry>,
    remaining: u64,
    chunk: usize,
    guard: StreamGuard,
}

/// Counts a stream as active while it lives, and records it when it ends:
/// OK after the last chunk, the error's code, or CANCELLED if the client
/// went away first.
struct StreamGuard {
    metrics: Arc<RouteMetrics>,
    start: Instant,
    status: &'static str,
}

impl StreamGuard {
    fn new(metrics: Arc<RouteMetrics>, start: Instant) -> StreamGuard {
        metrics::gauge!("flakeid_server_streams_active").increment(1.0);
        StreamGuard {
            metrics,
            start,
            status: "CANCELLED",
        }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        metrics::gauge!("flakeid_server_streams_active").decrement(1.0);
        self.metrics.record(self.start, self.status);
    }
}
