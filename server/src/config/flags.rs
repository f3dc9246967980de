//! The command line (clap): `--config`, `--check`, and one flag per key,
//! each with its variable `FLAKEID_<KEY>` and its default from
//! [`defaults`](super::defaults). Values stay text here: the key's type
//! reads them (`text`), so a bad flag is reported with every other problem.

use clap::{Arg, Args, Command, CommandFactory, Parser};
use flakeid::{OnClockBehind, OnExhausted};

use super::defaults::*;
use super::text::Text;

const AFTER_HELP: &str = "Precedence: flags, then FLAKEID_* variables, then the --config file, \
then defaults. Generator keys given as flags or variables configure the default generator; \
other generators are [generators.<name>] tables in the file. Durations: 500ms, 10s, 2m, 1h, \
1m30s. The bearer token is read from FLAKEID_TOKEN, the file's `token`, or token_file, never \
from a flag (it would show in the process list).";

/// The help heading of the server keys.
pub(super) const SERVER: &str = "Server keys";
/// The help heading of the generator keys.
pub(super) const GENERATOR: &str = "Generator keys (of the default generator)";

fn duration(d: std::time::Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn policy(p: &impl Text) -> String {
    match p.to_toml() {
        toml::Value::String(s) => s,
        other => other.to_string(),
    }
}

// The fields are declarations only: values are read from the matches by
// key, with where each came from (`ArgMatches::value_source`).
/// Time-ordered, unique 64-bit IDs over gRPC and HTTP/JSON.
#[derive(Parser)]
#[command(name = "flakeid-server", version, after_help = AFTER_HELP)]
#[allow(dead_code)]
struct Flags {
    /// TOML configuration file
    #[arg(long, env = "FLAKEID_CONFIG", value_name = "PATH")]
    config: Option<String>,
    /// Check the configuration, print it, and exit without serving
    #[arg(long)]
    check: bool,
    #[command(flatten)]
    server: ServerKeys,
    #[command(flatten)]
    generator: GeneratorKeys,
}

#[derive(Args)]
#[command(next_help_heading = SERVER)]
#[allow(dead_code)]
struct ServerKeys {
    /// HTTP/JSON listener, IP:port, or `off`
    #[arg(long, value_name = "ADDR", default_value = HTTP_ADDR)]
    http_addr: String,
    /// gRPC listener, IP:port, or `off`
    #[arg(long, value_name = "ADDR", default_value = GRPC_ADDR)]
    grpc_addr: String,
    /// Most IDs one HTTP batch or gRPC NextIds call may ask for
    #[arg(long, value_name = "N", default_value = MAX_COUNT.to_string())]
    max_count: String,
    /// Most IDs one gRPC StreamIds call may ask for
    #[arg(long, value_name = "N", default_value = MAX_STREAM_COUNT.to_string())]
    max_stream_count: String,
    /// IDs per StreamIds chunk when the call names none
    #[arg(long, value_name = "N", default_value = CHUNK_SIZE.to_string())]
    chunk_size: String,
    /// Longest a call waits for IDs (the next tick, a reservation being
    /// saved) before 503/UNAVAILABLE
    #[arg(long, value_name = "DURATION", default_value = duration(WAIT_LIMIT))]
    wait_limit: String,
    /// File holding the bearer token the ID APIs require [default: none]
    #[arg(long, value_name = "PATH")]
    token_file: Option<String>,
    /// PEM certificate chain: both listeners serve TLS (with tls_key)
    #[arg(long, value_name = "PATH")]
    tls_cert: Option<String>,
    /// PEM private key of tls_cert
    #[arg(long, value_name = "PATH")]
    tls_key: Option<String>,
    /// `text` or `json` (one object a line)
    #[arg(long, value_name = "FORMAT", default_value = super::LogFormat::default().name())]
    log_format: String,
    /// A level (error, warn, info, debug, trace, off) or a tracing filter
    /// (`info,flakeid=debug`)
    #[arg(long, value_name = "FILTER", default_value = LOG_LEVEL)]
    log_level: String,
    /// On SIGTERM, how long requests and streams in flight may finish
    #[arg(long, value_name = "DURATION", default_value = duration(DRAIN_TIMEOUT))]
    drain_timeout: String,
    /// Threads serving requests [default: one per core]
    #[arg(long, value_name = "N")]
    workers: Option<String>,
    /// The generator of calls that name none [default: `default`, or the
    /// only one]
    #[arg(long, value_name = "NAME")]
    default_generator: Option<String>,
}

#[derive(Args)]
#[command(next_help_heading = GENERATOR)]
#[allow(dead_code)]
struct GeneratorKeys {
    /// A preset (twitter, discord, sonyflake, js_safe, instagram[:<epoch
    /// ms>]) or `epoch=<ms> unit=<ms> fields=timestamp:41,...`
    #[arg(long, value_name = "SPEC", default_value = LAYOUT)]
    layout: String,
    /// Where the node id comes from: static, env, statefulset, etcd, redis,
    /// sentinel, postgres, mysql or single [default: from the keys set]
    #[arg(long, value_name = "SOURCE")]
    node_source: Option<String>,
    /// Static node id (all node fields as one number)
    #[arg(long, value_name = "N")]
    node_id: Option<String>,
    /// Static node id, field by field (repeat, or comma-separated)
    #[arg(long, value_name = "NAME=N")]
    node_fields: Vec<String>,
    /// Environment variable holding the node id
    #[arg(long, value_name = "VAR")]
    node_env: Option<String>,
    /// etcd endpoints to lease the node id from, http://host:port (repeat,
    /// or comma-separated)
    #[arg(long, value_name = "URL")]
    lease_endpoints: Vec<String>,
    /// Redis, PostgreSQL or MySQL to lease the node id from:
    /// redis://[:password@]host:port/[db],
    /// postgres://user:password@host:port/db (or node_source = postgres
    /// with key=value settings), mysql://user:password@host:port/db
    #[arg(long, value_name = "URL")]
    lease_url: Option<String>,
    /// Redis Sentinels to find the primary through, host:port or
    /// redis://[user:password@]host:port (repeat, or comma-separated)
    #[arg(long, value_name = "ADDR")]
    lease_sentinels: Vec<String>,
    /// With lease_sentinels: the master name they monitor, or
    /// redis://[:password@]name/[db] with the data nodes' password
    #[arg(long, value_name = "NAME")]
    lease_master: Option<String>,
    /// PostgreSQL and MySQL: the table of the leases [default:
    /// flakeid_leases]
    #[arg(long, value_name = "NAME")]
    lease_table: Option<String>,
    /// PostgreSQL and MySQL: whether the first claim creates the table if
    /// it is missing (true or false) [default: true]
    #[arg(long, value_name = "BOOL")]
    lease_create_table: Option<String>,
    /// Key prefix of the leases in the store [default: flakeid/<generator>]
    #[arg(long, value_name = "PREFIX")]
    lease_prefix: Option<String>,
    /// Lease time to live
    #[arg(long, value_name = "DURATION", default_value = duration(LEASE_TTL))]
    lease_ttl: String,
    /// Stop issuing this long before the lease could expire [default: a
    /// fifth of the TTL]
    #[arg(long, value_name = "DURATION")]
    lease_margin: Option<String>,
    /// How long the first claim may take at start
    #[arg(long, value_name = "DURATION", default_value = duration(LEASE_CONNECT_TIMEOUT))]
    lease_connect_timeout: String,
    /// The node ids the lease may claim [default: the layout's whole range]
    #[arg(long, value_name = "FIRST-LAST")]
    lease_node_ids: Option<String>,
    /// Restart safety: the file the high-water mark is saved in [default:
    /// none]
    #[arg(long, value_name = "PATH")]
    state_file: Option<String>,
    /// How far ahead the saved mark reaches
    #[arg(long, value_name = "DURATION", default_value = duration(PERSIST_WINDOW))]
    persist_window: String,
    /// A tick's sequence used up: wait, borrow:<duration>, error, next_clock
    #[arg(long, value_name = "POLICY", default_value = policy(&OnExhausted::default()))]
    on_exhausted: String,
    /// The clock behind the last ID: continue, wait:<duration>, error,
    /// next_clock
    #[arg(long, value_name = "POLICY", default_value = policy(&OnClockBehind::default()))]
    on_clock_behind: String,
    /// Start each tick's sequence at a random value below N [default: none]
    #[arg(long, value_name = "N")]
    random_start: Option<String>,
}

/// Whether an argument is a key, and of which scope: its help heading.
pub(super) fn heading(arg: &Arg) -> Option<&str> {
    arg.get_help_heading()
        .filter(|h| *h == SERVER || *h == GENERATOR)
}

/// The variable of a key: `max_count` is `FLAKEID_MAX_COUNT`.
pub(super) fn env_var(key: &str) -> String {
    format!("FLAKEID_{}", key.to_ascii_uppercase())
}

/// The command line: `--config`, `--check`, and one flag per key, each with
/// its variable.
pub fn command() -> Command {
    Flags::command().mut_args(|arg| match heading(&arg) {
        Some(_) => {
            let var = env_var(arg.get_id().as_str());
            arg.env(var)
        }
        None => arg,
    })
}
