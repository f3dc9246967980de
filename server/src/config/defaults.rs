//! Each default of the configuration, once: the types fall back to them
//! and `--help` shows them. Bounds too.

use std::time::Duration;

/// `http_addr`.
pub const HTTP_ADDR: &str = "127.0.0.1:8080";
/// `grpc_addr`.
pub const GRPC_ADDR: &str = "127.0.0.1:50051";
/// `max_count`.
pub const MAX_COUNT: u32 = 10_000;
/// The largest `max_count`: a reply holds its IDs in memory.
pub const MAX_COUNT_LIMIT: u32 = 1_000_000;
/// `max_stream_count`.
pub const MAX_STREAM_COUNT: u64 = 1_000_000_000;
/// `chunk_size`.
pub const CHUNK_SIZE: u32 = 4_096;
/// The largest chunk a stream may have: 512 KiB of IDs, well under gRPC's
/// usual 4 MiB message limit.
pub const MAX_CHUNK_SIZE: u32 = 65_536;
/// `wait_limit`.
pub const WAIT_LIMIT: Duration = Duration::from_millis(500);
/// `log_level`.
pub const LOG_LEVEL: &str = "info";
/// `drain_timeout`.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// The most `workers`.
pub const MAX_WORKERS: u32 = 1_024;
/// `default_generator`, when the configuration does not name its only
/// generator.
pub const DEFAULT_GENERATOR: &str = "default";
/// `layout`.
pub const LAYOUT: &str = "twitter";
/// `lease_ttl`.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// `lease_connect_timeout`.
pub const LEASE_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// `persist_window`.
pub const PERSIST_WINDOW: Duration = Duration::from_secs(1);
