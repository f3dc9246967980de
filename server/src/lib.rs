//! flakeid-server: flakeid's generators behind gRPC (tonic) and HTTP/JSON
//! (axum), with node ids that are configured, read from the environment or
//! a StatefulSet ordinal, or leased with fencing from etcd, Redis, Redis
//! behind Sentinel, PostgreSQL or MySQL/MariaDB;
//! readiness from `Generator::health`, Prometheus metrics, structured logs,
//! and a graceful SIGTERM. See the crate's README for the configuration,
//! the APIs and what the server guarantees.
//!
//! The library part is what the binary, the tests and the load client
//! share: the generated gRPC code ([`proto`]) and the server itself
//! ([`run`]).

pub mod api;
pub mod auth;
pub mod config;
pub mod generators;
pub mod grpc;
pub mod health;
pub mod http;
pub mod quote;
pub mod serve;
pub mod telemetry;

/// The messages, service trait and client of `proto/flakeid/v1/flakeid.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("flakeid.v1");

    /// The encoded file descriptor set of the .proto, for gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("flakeid");
}

mod run;
pub use run::{Exit, run};
