//! The server's configuration: flags over environment variables
//! (`FLAKEID_...`) over a TOML file (`--config`) over defaults.
//!
//! Every key has one name, written the same in the file (`max_count`), as a
//! flag (`--max-count`) and as a variable (`FLAKEID_MAX_COUNT`). Server keys
//! sit at the top of the file. Generator keys sit in `[generators.<name>]`
//! tables; written at the top of the file, as flags or as variables, they
//! configure the default generator. Everything is checked before anything
//! starts, and each error names its key, where the value came from, and what
//! is wrong with it; all of them at once.
//!
//! How it is read:
//! - The keys and their types are the serde types [`Config`],
//!   [`GeneratorConfig`] and [`NodeSource`], with `deny_unknown_fields`.
//!   Each value is read from the file's TOML or from a flag's text by its
//!   type (`text`); durations in humantime's grammar, which `flakeid bench`
//!   reads too.
//! - The flags are clap's, each with its variable (clap's `env`) and its
//!   default shown in `--help` from [`defaults`]. Their values stay text
//!   until the types read them: clap would stop at the first bad one.
//! - The file, the variables and the flags are merged into one TOML table in
//!   the types' shape, remembering each value's [`Origin`] (`layers`); the
//!   table is read into the types (`read`): serde stops at the first error,
//!   so each is recorded, its value taken out, and the table read again.
//!   figment layers the same way, but it too stops at the first error, and
//!   its environment provider guesses each variable's type from its text
//!   (`FLAKEID_TOKEN=12345` turns into a number).
//! - A generator's node keys (`node_source`, `node_*`, `lease_*`) sit in its
//!   table beside its other keys; the merge moves them into a `node` table
//!   keyed by the source (`node = { redis = { lease_url = ... } }`), so that
//!   [`NodeSource`] is an enum whose variants carry their own keys and a key
//!   of another source is refused as an unknown field. serde's internally
//!   tagged enums would lose the key of an error (they buffer their
//!   content), and `flatten` does not go with `deny_unknown_fields`.
//! - What types cannot say is checked after (`check`): ranges, node ids
//!   against the layout, generators that could issue the same IDs, lease
//!   terms, listeners, the token.

mod check;
pub mod defaults;
pub mod flags;
mod layers;
mod print;
mod read;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

use clap::ArgMatches;
use clap::parser::ValueSource;
use flakeid::{Layout, Lease, OnClockBehind, OnExhausted};
use serde::{Deserialize, Serialize};

use flags::{GENERATOR, command, env_var, heading};
use layers::Given;
use read::Keys;

/// Where a value came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag.
    Flag(String),
    /// An environment variable.
    Env(String),
    /// The configuration file.
    File(PathBuf),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag(name) => write!(f, "flag {name}"),
            Origin::Env(name) => write!(f, "environment variable {name}"),
            Origin::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The key, dotted as in the file: `max_count`, `generators.orders.layout`.
    pub key: String,
    /// Where the value came from, if one was given.
    pub origin: Option<Origin>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)?;
        if let Some(origin) = &self.origin {
            write!(f, " (from {origin})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// All that is wrong with a configuration, one error a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// The log line format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}

impl LogFormat {
    /// The name the configuration uses.
    pub const fn name(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// Certificate and key files of the TLS listeners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// The server's whole configuration: the server keys, and the generators.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The HTTP/JSON listener, or none (`off`).
    #[serde(with = "text")]
    pub http_addr: Option<SocketAddr>,
    /// The gRPC listener, or none (`off`).
    #[serde(with = "text")]
    pub grpc_addr: Option<SocketAddr>,
    /// Most IDs per HTTP batch or NextIds call.
    #[serde(with = "text")]
    pub max_count: u32,
    /// Most IDs per StreamIds call.
    #[serde(with = "text")]
    pub max_stream_count: u64,
    /// IDs per StreamIds chunk when the call names none.
    #[serde(with = "text")]
    pub chunk_size: u32,
    /// Longest wait for IDs before a call is answered 503/UNAVAILABLE.
    #[serde(with = "text")]
    pub wait_limit: Duration,
    /// The bearer token the ID APIs require, if any (from `token_file` once
    /// checked); never printed.
    #[serde(skip_serializing)]
    pub token: Option<String>,
    /// A file holding the token.
    pub token_file: Option<PathBuf>,
    /// TLS: the PEM certificate chain.
    pub tls_cert: Option<PathBuf>,
    /// TLS: the PEM private key.
    pub tls_key: Option<PathBuf>,
    /// Log format.
    pub log_format: LogFormat,
    /// Log filter (tracing-subscriber's `EnvFilter` syntax).
    pub log_level: String,
    /// How long requests in flight may finish after SIGTERM.
    #[serde(with = "text")]
    pub drain_timeout: Duration,
    /// Runtime worker threads; `None` for one per core.
    #[serde(with = "text::option")]
    pub workers: Option<u32>,
    /// The generator of calls that name none.
    pub default_generator: String,
    /// The generators by name.
    pub generators: BTreeMap<String, GeneratorConfig>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            http_addr: Some(defaults::HTTP_ADDR.parse().expect("the default parses")),
            grpc_addr: Some(defaults::GRPC_ADDR.parse().expect("the default parses")),
            max_count: defaults::MAX_COUNT,
            max_stream_count: defaults::MAX_STREAM_COUNT,
            chunk_size: defaults::CHUNK_SIZE,
            wait_limit: defaults::WAIT_LIMIT,
            token: None,
            token_file: None,
            tls_cert: None,
            tls_key: None,
            log_format: LogFormat::default(),
            log_level: defaults::LOG_LEVEL.into(),
            drain_timeout: defaults::DRAIN_TIMEOUT,
            workers: None,
            default_generator: defaults::DEFAULT_GENERATOR.into(),
            generators: BTreeMap::new(),
        }
    }
}

impl Config {
    /// TLS for both listeners, if both files are set.
    pub fn tls(&self) -> Option<TlsFiles> {
        Some(TlsFiles {
            cert: self.tls_cert.clone()?,
            key: self.tls_key.clone()?,
        })
    }
}

/// One generator's configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// The bit plan.
    #[serde(default = "default_layout")]
    pub layout: Layout,
    /// Where its node id comes from (`None` only in a configuration that
    /// the check refuses).
    #[serde(default)]
    pub node: Option<NodeSource>,
    /// Restart safety: the state file.
    #[serde(default)]
    pub state_file: Option<PathBuf>,
    /// How far ahead the saved mark reaches.
    #[serde(default, with = "text::option")]
    pub persist_window: Option<Duration>,
    /// Policy for a used-up tick.
    #[serde(default, with = "text")]
    pub on_exhausted: OnExhausted,
    /// Policy for a clock behind.
    #[serde(default, with = "text")]
    pub on_clock_behind: OnClockBehind,
    /// Random sequence start bound.
    #[serde(default, with = "text::option")]
    pub random_start: Option<u64>,
    /// The node id, once checked, of the sources that give one before the
    /// server starts (all but the leases).
    #[serde(skip)]
    pub node_id: Option<u64>,
}

fn default_layout() -> Layout {
    defaults::LAYOUT.parse().expect("the default layout parses")
}

/// Where a generator's node id comes from: `node_source`, with the keys of
/// that source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum NodeSource {
    /// Given in the configuration: `node_id`, or `node_fields` by name.
    Static {
        /// All node fields as one number.
        #[serde(default, with = "text::option")]
        node_id: Option<u64>,
        /// Each node field by name.
        #[serde(default, with = "text::option")]
        node_fields: Option<BTreeMap<String, u64>>,
    },
    /// Read from the variable `node_env` names (`node_id::from_env`).
    Env {
        /// The variable's name.
        node_env: String,
    },
    /// The StatefulSet ordinal in the host name (`ids-3` is node 3).
    Statefulset {},
    /// The only generator of its layout anywhere: node id 0
    /// (`Builder::single_node`).
    Single {},
    /// A lease on an etcd cluster.
    Etcd {
        /// `http://host:port` of each member.
        #[serde(with = "text")]
        lease_endpoints: Vec<String>,
        /// The terms.
        #[serde(default)]
        terms: LeaseTerms,
    },
    /// A lease on a Redis server.
    Redis {
        /// `redis://[:password@]host:port/[db]`.
        lease_url: String,
        /// The terms.
        #[serde(default)]
        terms: LeaseTerms,
    },
    /// A lease on Redis behind Sentinel.
    Sentinel {
        /// The sentinels: `host:port` or `redis://[user:password@]host:port`.
        #[serde(with = "text")]
        lease_sentinels: Vec<String>,
        /// The master name they monitor, or `redis://[:password@]name/[db]`.
        lease_master: String,
        /// The terms.
        #[serde(default)]
        terms: LeaseTerms,
    },
    /// A lease on a PostgreSQL server.
    Postgres {
        /// `postgres://user:password@host:port/db`, or the `key=value` form.
        lease_url: String,
        /// The table of the leases; `flakeid_leases` if unset.
        #[serde(default)]
        lease_table: Option<String>,
        /// Whether the first claim creates the table if it is missing; yes
        /// if unset.
        #[serde(default, with = "text::option")]
        lease_create_table: Option<bool>,
        /// The terms.
        #[serde(default)]
        terms: LeaseTerms,
    },
    /// A lease on a MySQL 8 or MariaDB 10.11 server.
    Mysql {
        /// `mysql://user:password@host:port/db`.
        lease_url: String,
        /// The table of the leases; `flakeid_leases` if unset.
        #[serde(default)]
        lease_table: Option<String>,
        /// Whether the first claim creates the table if it is missing; yes
        /// if unset.
        #[serde(default, with = "text::option")]
        lease_create_table: Option<bool>,
        /// The terms.
        #[serde(default)]
        terms: LeaseTerms,
    },
}

/// The table of a SQL store's leases when `lease_table` is unset (the
/// library's default).
pub const DEFAULT_LEASE_TABLE: &str = "flakeid_leases";

/// A lease's terms, besides its store. In the file they sit beside the
/// store's keys; the merge moves them into a `terms` table of the source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseTerms {
    /// Key prefix; `flakeid/<generator>` if unset.
    #[serde(default)]
    pub lease_prefix: Option<String>,
    /// Time to live.
    #[serde(default, with = "text::option")]
    pub lease_ttl: Option<Duration>,
    /// Safety margin; a fifth of the TTL if unset.
    #[serde(default, with = "text::option")]
    pub lease_margin: Option<Duration>,
    /// Connect timeout of the first claim.
    #[serde(default, with = "text::option")]
    pub lease_connect_timeout: Option<Duration>,
    /// The node ids it may claim; all the layout has if unset.
    #[serde(default, with = "text::option")]
    pub lease_node_ids: Option<RangeInclusive<u64>>,
}

impl LeaseTerms {
    /// The keys of the terms.
    pub(crate) const KEYS: [&str; 5] = [
        "lease_prefix",
        "lease_ttl",
        "lease_margin",
        "lease_connect_timeout",
        "lease_node_ids",
    ];
}

impl NodeSource {
    /// The sources that lease their node id.
    pub(crate) const LEASES: [&str; 5] = ["etcd", "redis", "sentinel", "postgres", "mysql"];

    /// The lease of a leasing source, on the terms configured (the server's
    /// defaults for what is not), for the generator `name`.
    pub fn lease(&self, name: &str) -> Option<Lease> {
        let (lease, terms) = match self {
            NodeSource::Etcd {
                lease_endpoints,
                terms,
            } => (Lease::etcd(lease_endpoints.clone()), terms),
            NodeSource::Redis { lease_url, terms } => (Lease::redis(lease_url.clone()), terms),
            NodeSource::Sentinel {
                lease_sentinels,
                lease_master,
                terms,
            } => (
                Lease::redis_sentinel(lease_sentinels.clone(), lease_master.clone()),
                terms,
            ),
            NodeSource::Postgres {
                lease_url,
                lease_table,
                lease_create_table,
                terms,
            } => (
                sql_table(
                    Lease::postgres(lease_url.clone()),
                    lease_table,
                    *lease_create_table,
                ),
                terms,
            ),
            NodeSource::Mysql {
                lease_url,
                lease_table,
                lease_create_table,
                terms,
            } => (
                sql_table(
                    Lease::mysql(lease_url.clone()),
                    lease_table,
                    *lease_create_table,
                ),
                terms,
            ),
            _ => return None,
        };
        let mut lease = lease
            .prefix(self.prefix(name).unwrap_or_default())
            .ttl(terms.lease_ttl.unwrap_or(defaults::LEASE_TTL))
            .connect_timeout(
                terms
                    .lease_connect_timeout
                    .unwrap_or(defaults::LEASE_CONNECT_TIMEOUT),
            );
        if let Some(margin) = terms.lease_margin {
            lease = lease.safety_margin(margin);
        }
        if let Some(range) = &terms.lease_node_ids {
            lease = lease.node_ids(range.clone());
        }
        Some(lease)
    }

    /// The lease's terms, for a leasing source.
    pub fn terms(&self) -> Option<&LeaseTerms> {
        match self {
            NodeSource::Etcd { terms, .. }
            | NodeSource::Redis { terms, .. }
            | NodeSource::Sentinel { terms, .. }
            | NodeSource::Postgres { terms, .. }
            | NodeSource::Mysql { terms, .. } => Some(terms),
            _ => None,
        }
    }

    fn terms_mut(&mut self) -> Option<&mut LeaseTerms> {
        match self {
            NodeSource::Etcd { terms, .. }
            | NodeSource::Redis { terms, .. }
            | NodeSource::Sentinel { terms, .. }
            | NodeSource::Postgres { terms, .. }
            | NodeSource::Mysql { terms, .. } => Some(terms),
            _ => None,
        }
    }

    /// The table of a SQL store's leases (`lease_table`), for PostgreSQL
    /// and MySQL.
    fn table_mut(&mut self) -> Option<&mut Option<String>> {
        match self {
            NodeSource::Postgres { lease_table, .. } | NodeSource::Mysql { lease_table, .. } => {
                Some(lease_table)
            }
            _ => None,
        }
    }

    /// The lease's key prefix, for a leasing source of the generator `name`.
    pub fn prefix(&self, name: &str) -> Option<String> {
        let terms = self.terms()?;
        Some(
            terms
                .lease_prefix
                .clone()
                .unwrap_or_else(|| format!("flakeid/{name}")),
        )
    }

    /// Where the node id comes from, for the start-up log (passwords
    /// masked).
    pub fn describe(&self, name: &str) -> String {
        let prefix = self.prefix(name).unwrap_or_default();
        match self {
            NodeSource::Static { .. } => "configured".into(),
            NodeSource::Env { node_env } => format!("environment variable {node_env}"),
            NodeSource::Statefulset {} => "the StatefulSet ordinal in the host name".into(),
            NodeSource::Single {} => "single node".into(),
            NodeSource::Etcd {
                lease_endpoints, ..
            } => format!(
                "etcd lease at {}, prefix {prefix}",
                lease_endpoints.join(",")
            ),
            NodeSource::Redis { lease_url, .. } => {
                format!(
                    "Redis lease at {}, prefix {prefix}",
                    mask_password(lease_url)
                )
            }
            NodeSource::Sentinel {
                lease_sentinels,
                lease_master,
                ..
            } => {
                let sentinels: Vec<String> =
                    lease_sentinels.iter().map(|s| mask_password(s)).collect();
                format!(
                    "Redis lease, master {} via sentinels {}, prefix {prefix}",
                    mask_password(lease_master),
                    sentinels.join(",")
                )
            }
            NodeSource::Postgres {
                lease_url,
                lease_table,
                ..
            } => format!(
                "PostgreSQL lease at {}, table {}, prefix {prefix}",
                mask_password(lease_url),
                lease_table.as_deref().unwrap_or(DEFAULT_LEASE_TABLE)
            ),
            NodeSource::Mysql {
                lease_url,
                lease_table,
                ..
            } => format!(
                "MySQL lease at {}, table {}, prefix {prefix}",
                mask_password(lease_url),
                lease_table.as_deref().unwrap_or(DEFAULT_LEASE_TABLE)
            ),
        }
    }
}

/// A SQL store's lease with its table settings, where set.
fn sql_table(mut lease: Lease, table: &Option<String>, create: Option<bool>) -> Lease {
    if let Some(table) = table {
        lease = lease.table(table.clone());
    }
    if let Some(create) = create {
        lease = lease.create_table(create);
    }
    lease
}

/// `redis://:secret@host/` as `redis://:***@host/`; a `password=secret`
/// setting (PostgreSQL's `key=value` form, or a URL's query) as
/// `password=***`.
pub fn mask_password(url: &str) -> String {
    let url = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    };
    mask_password_setting(&url)
}

/// Each `password=<value>` as `password=***`: the value ends at a space or
/// `&`, or is quoted (`'...'`, with `\'` and `\\` escapes).
fn mask_password_setting(text: &str) -> String {
    const KEY: &str = "password";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find(KEY) {
        let (before, from) = rest.split_at(found);
        out.push_str(before);
        let starts_key = before
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || c == '?' || c == '&');
        let after = &from[KEY.len()..];
        let value = after.trim_start();
        let Some(value) = value.strip_prefix('=').filter(|_| starts_key) else {
            out.push_str(KEY);
            rest = after;
            continue;
        };
        let value = value.trim_start();
        let len = if let Some(quoted) = value.strip_prefix('\'') {
            let mut escaped = false;
            quoted
                .char_indices()
                .find(|&(_, c)| {
                    let end = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    end
                })
                .map_or(value.len(), |(i, _)| i + 2)
        } else {
            value
                .find(|c: char| c.is_whitespace() || c == '&')
                .unwrap_or(value.len())
        };
        out.push_str(KEY);
        out.push_str("=***");
        rest = &value[len..];
    }
    out.push_str(rest);
    out
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The checked configuration.
    pub config: Config,
    /// `--check`: print it and exit.
    pub check_only: bool,
}

/// Reads flags (from `matches`), the environment and the file, and checks
/// the result.
///
/// # Errors
///
/// Everything wrong, each error naming its key.
pub fn from_matches(matches: &ArgMatches) -> Result<Invocation, ConfigErrors> {
    let mut errors = Vec::new();
    let file = matches.get_one::<String>("config").and_then(|path| {
        let origin = match matches.value_source("config") {
            Some(ValueSource::EnvVariable) => Origin::Env("FLAKEID_CONFIG".into()),
            _ => Origin::Flag("--config".into()),
        };
        let path = PathBuf::from(path);
        let fail = |message: String| ConfigError {
            key: "config".into(),
            origin: Some(origin.clone()),
            message,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => match text.parse::<toml::Table>() {
                Ok(table) => Some((table, path)),
                Err(e) => {
                    errors.push(fail(format!(
                        "{} is not valid TOML: {}",
                        path.display(),
                        e.to_string().trim()
                    )));
                    None
                }
            },
            Err(e) => {
                errors.push(fail(format!("cannot read {}: {e}", path.display())));
                None
            }
        }
    });
    let mut given = Vec::new();
    // The token has no flag: a secret on the command line shows in `ps`.
    if let Ok(token) = std::env::var("FLAKEID_TOKEN") {
        given.push(Given {
            key: "token".into(),
            generator: false,
            text: token,
            origin: Origin::Env("FLAKEID_TOKEN".into()),
        });
    }
    let command = command();
    for arg in command.get_arguments() {
        let Some(heading) = heading(arg) else {
            continue;
        };
        let key = arg.get_id().as_str();
        let origin = match matches.value_source(key) {
            Some(ValueSource::CommandLine) => Origin::Flag(format!("--{}", key.replace('_', "-"))),
            Some(ValueSource::EnvVariable) => Origin::Env(env_var(key)),
            _ => continue,
        };
        let values: Vec<String> = matches
            .get_raw(key)
            .into_iter()
            .flatten()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        given.push(Given {
            key: key.to_owned(),
            generator: heading == GENERATOR,
            text: values.join(","),
            origin,
        });
    }
    let config = load(file, given, errors)?;
    Ok(Invocation {
        config,
        check_only: matches.get_flag("check"),
    })
}

/// Reads a configuration from TOML text alone, as if from `path` (the
/// tests' way in; the server itself goes through [`from_matches`]).
///
/// # Errors
///
/// As [`from_matches`].
pub fn from_toml(text: &str, path: &str) -> Result<Config, ConfigErrors> {
    let table = text.parse::<toml::Table>().map_err(|e| {
        ConfigErrors(vec![ConfigError {
            key: "config".into(),
            origin: Some(Origin::File(path.into())),
            message: format!("not valid TOML: {}", e.to_string().trim()),
        }])
    })?;
    load(Some((table, path.into())), Vec::new(), Vec::new())
}

/// Merges, reads and checks the layers.
fn load(
    file: Option<(toml::Table, PathBuf)>,
    given: Vec<Given>,
    mut errors: Vec<ConfigError>,
) -> Result<Config, ConfigErrors> {
    let command = command();
    let mut keys = Keys {
        server: vec!["token".into()],
        generator: Vec::new(),
    };
    for arg in command.get_arguments() {
        match heading(arg) {
            Some(GENERATOR) => keys.generator.push(arg.get_id().to_string()),
            Some(_) => keys.server.push(arg.get_id().to_string()),
            None => {}
        }
    }
    // A file that could not be read leaves its keys unknown: the checks
    // would report what is missing for want of them.
    let file_failed = !errors.is_empty();
    let layers = layers::merge(file, given, |key| keys.generator.iter().any(|k| k == key));
    errors.extend(layers.errors);
    let mut failed = BTreeSet::new();
    let config = read::read(
        layers.table,
        &layers.origins,
        &keys,
        &mut errors,
        &mut failed,
    );
    match config {
        Some(mut config) => {
            if !file_failed {
                check::check(&mut config, &layers.origins, &failed, &mut errors);
            }
            if errors.is_empty() {
                Ok(config)
            } else {
                Err(ConfigErrors(errors))
            }
        }
        None => Err(ConfigErrors(errors)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        match from_toml(text, "test.toml") {
            Ok(_) => Vec::new(),
            Err(e) => e.0.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_minimal_file_configures_the_default_generator() {
        let config = from_toml("node_id = 7", "test.toml").unwrap();
        assert_eq!(config.default_generator, "default");
        let g = &config.generators["default"];
        assert_eq!(g.layout, Layout::twitter());
        assert_eq!(g.node_id, Some(7));
        assert_eq!(
            config.http_addr,
            Some(SocketAddr::from(([127, 0, 0, 1], 8080)))
        );
        assert_eq!(config.wait_limit, defaults::WAIT_LIMIT);
    }

    #[test]
    fn the_only_named_generator_is_the_default() {
        let config = from_toml(
            "[generators.orders]\nlayout = \"discord\"\nnode_fields = { worker = 3, process = 1 }",
            "test.toml",
        )
        .unwrap();
        assert_eq!(config.default_generator, "orders");
        assert_eq!(config.generators["orders"].node_id, Some(3 << 5 | 1));
    }

    #[test]
    fn each_error_names_its_key_and_what_is_wrong() {
        let e = errors("max_count = \"lots\"\nnode_id = 7");
        assert_eq!(
            e,
            ["max_count: \"lots\" is not a whole number (from test.toml)"]
        );
        let e = errors("node_id = 5000");
        assert_eq!(
            e,
            [
                "generators.default.node_id: 5000 is out of the layout's node id range (0..=1023) (from test.toml)"
            ]
        );
        let e = errors("[generators.a]\nlayout = \"twiter\"\nnode_id = 1");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("generators.a.layout: "), "{e:?}");
        assert!(e[0].contains("twiter"), "{e:?}");
        let e = errors("max_cuont = 5\nnode_id = 1");
        assert_eq!(
            e,
            ["max_cuont: unknown key; did you mean `max_count`? (from test.toml)"]
        );
        let e = errors("[generators.a]\nnode_id = 1\nmax_count = 5");
        assert_eq!(
            e,
            [
                "generators.a.max_count: max_count is a server key: write it at the top of the file (from test.toml)"
            ]
        );
        let e = errors("");
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("generators.default.node_source: no node id source"),
            "{e:?}"
        );
        let e = errors("node_id = 1\nlease_url = \"redis://x/\"");
        assert_eq!(
            e,
            [
                "generators.default.node_id: does not go with node_source = \"redis\" (from test.toml)"
            ]
        );
        let e = errors("node_id = 1\nwait_limit = \"5 parsecs\"");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("wait_limit: \"5 parsecs\" is not a duration"),
            "{e:?}"
        );
        let e = errors("default_generator = \"nope\"\n[generators.a]\nnode_id = 1");
        assert_eq!(
            e,
            [
                "default_generator: \"nope\" is not a generator; the configuration has a (from test.toml)"
            ]
        );
        let e = errors("node_source = \"sentinel\"\nlease_sentinels = [\"s0:26379\"]");
        assert_eq!(
            e,
            ["generators.default.lease_master: node_source = \"sentinel\" needs lease_master"]
        );
        let e = errors("node_source = \"bogus\"");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("generators.default.node_source: unknown variant `bogus`"),
            "{e:?}"
        );
        let e = errors("lease_master = \"orders\"\nlease_url = \"redis://x/\"");
        assert!(
            e.iter()
                .any(|e| e.contains("lease_master: does not go with node_source = \"redis\"")),
            "{e:?}"
        );
        let e = errors("node_id = 1\ndefault_generator = 5");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("default_generator: invalid type"), "{e:?}");
        let e = errors("node_id = 1\n[generators.default]\nnode_id = 2");
        assert_eq!(
            e,
            [
                "node_id: also set as generators.default.node_id; set it in one place (from test.toml)"
            ]
        );
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let e = errors(
            "max_count = \"lots\"\nchunk_size = 0\nwait_limit = 5\nlog_level = \"debgu\"\n\
             [generators.a]\nnode_id = 1\nlease_ttl = \"9\"\nrandom_start = -1\n\
             [generators.b]\nnode_source = \"redis\"\nlease_ttl = \"1s\"\nlease_margin = \"2s\"",
        );
        let mut keys: Vec<&str> = e.iter().map(|e| e.split(':').next().unwrap()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "chunk_size",
                "default_generator",
                "generators.a.lease_ttl",
                "generators.a.random_start",
                "generators.b.lease_url",
                "log_level",
                "max_count",
                "wait_limit",
            ],
            "{e:#?}"
        );
    }

    #[test]
    fn a_sentinel_lease_takes_its_sentinels_and_master() {
        let c = from_toml(
            "lease_sentinels = [\"s0:26379\", \"redis://u:pw@s1:26379\"]\n\
             lease_master = \"redis://:s3cret@orders/2\"\nlease_ttl = \"5s\"",
            "test.toml",
        )
        .unwrap();
        let g = &c.generators["default"];
        let Some(NodeSource::Sentinel {
            lease_sentinels,
            lease_master,
            terms,
        }) = &g.node
        else {
            panic!("{:?}", g.node);
        };
        assert_eq!(lease_sentinels, &["s0:26379", "redis://u:pw@s1:26379"]);
        assert_eq!(lease_master, "redis://:s3cret@orders/2");
        assert_eq!(terms.lease_ttl, Some(Duration::from_secs(5)));
        // The printed configuration shows no password.
        let shown = c.to_string();
        assert!(
            shown.contains("lease_master = \"redis://:***@orders/2\""),
            "{shown}"
        );
        assert!(
            !shown.contains("s3cret") && !shown.contains(":pw@"),
            "{shown}"
        );
        // And reads back as the same configuration.
        let again = from_toml(&shown, "printed.toml").unwrap();
        assert_eq!(
            again.generators["default"]
                .node
                .as_ref()
                .map(NodeSource::terms),
            Some(Some(terms))
        );
    }

    #[test]
    fn the_printed_configuration_reads_back() {
        let c = from_toml(
            "max_count = 30\nwait_limit = \"1m30s\"\ndefault_generator = \"b\"\n\
             [generators.a]\nnode_fields = { datacenter = 1, worker = 2 }\non_exhausted = \"borrow:5ms\"\n\
             [generators.b]\nlayout = \"sonyflake\"\nnode_id = 9\nstate_file = \"/tmp/b.state\"\npersist_window = \"2s\"",
            "test.toml",
        )
        .unwrap();
        let shown = c.to_string();
        let again = from_toml(&shown, "printed.toml").unwrap();
        assert_eq!(again.to_string(), shown);
        assert_eq!(again.wait_limit, Duration::from_secs(90));
        assert_eq!(again.generators["a"].node_id, Some(1 << 5 | 2));
        assert!(shown.contains("wait_limit = \"1m 30s\""), "{shown}");
    }

    #[test]
    fn passwords_stay_out_of_printed_configuration() {
        assert_eq!(
            mask_password("redis://:s3cret@h:6379/0"),
            "redis://:***@h:6379/0"
        );
        assert_eq!(mask_password("redis://h:6379/"), "redis://h:6379/");
        assert_eq!(
            mask_password("postgres://ids:pw@db-0:5432,db-1:5432/app?sslmode=require"),
            "postgres://ids:***@db-0:5432,db-1:5432/app?sslmode=require"
        );
        assert_eq!(
            mask_password("host=db user=ids password=s3cret dbname=app"),
            "host=db user=ids password=*** dbname=app"
        );
        assert_eq!(
            mask_password("host=db password = 'a b\\' c' dbname=app"),
            "host=db password=*** dbname=app"
        );
        assert_eq!(
            mask_password("password='a \\' b' user=ids"),
            "password=*** user=ids"
        );
        assert_eq!(
            mask_password("postgres://db/app?user=ids&password=s3cret&sslmode=require"),
            "postgres://db/app?user=ids&password=***&sslmode=require"
        );
        assert_eq!(
            mask_password("host=db passwordless=1 mypassword=x"),
            "host=db passwordless=1 mypassword=x"
        );
    }

    #[test]
    fn a_sql_lease_is_named_by_its_scheme_or_node_source() {
        let source = |text: &str| {
            from_toml(text, "test.toml").unwrap().generators["default"]
                .node
                .clone()
                .unwrap()
        };
        for url in ["postgres://ids@db/app", "PostgreSQL://ids@db/app"] {
            let node = source(&format!("lease_url = \"{url}\""));
            assert!(matches!(node, NodeSource::Postgres { .. }), "{node:?}");
        }
        let node = source(
            "lease_url = \"mysql://ids:pw@db:3306/app\"\nlease_table = \"ids\"\n\
             lease_create_table = false\nlease_ttl = \"5s\"",
        );
        let NodeSource::Mysql {
            lease_url,
            lease_table,
            lease_create_table,
            terms,
        } = &node
        else {
            panic!("{node:?}");
        };
        assert_eq!(
            (
                lease_url.as_str(),
                lease_table.as_deref(),
                *lease_create_table
            ),
            ("mysql://ids:pw@db:3306/app", Some("ids"), Some(false))
        );
        assert_eq!(terms.lease_ttl, Some(Duration::from_secs(5)));
        assert_eq!(
            node.describe("orders"),
            "MySQL lease at mysql://ids:***@db:3306/app, table ids, prefix flakeid/orders"
        );
        // The key=value form needs node_source; the table has its default.
        let node = source(
            "node_source = \"postgres\"\nlease_url = \"host=db user=ids password=pw dbname=app\"",
        );
        assert_eq!(
            node.describe("default"),
            "PostgreSQL lease at host=db user=ids password=*** dbname=app, \
             table flakeid_leases, prefix flakeid/default"
        );
        // Printed without the password, and read back as the same source.
        let c = from_toml(
            "lease_url = \"postgres://ids:s3cret@db/app\"\nlease_create_table = \"true\"",
            "test.toml",
        )
        .unwrap();
        let shown = c.to_string();
        assert!(shown.contains("node_source = \"postgres\""), "{shown}");
        assert!(shown.contains("lease_create_table = true"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
        let again = from_toml(&shown, "printed.toml").unwrap();
        assert!(matches!(
            again.generators["default"].node,
            Some(NodeSource::Postgres {
                lease_create_table: Some(true),
                ..
            })
        ));
    }

    #[test]
    fn sql_lease_keys_are_checked_naming_each() {
        let e = errors("lease_url = \"redis://h/\"\nlease_table = \"ids\"");
        assert_eq!(
            e,
            [
                "generators.default.lease_table: does not go with node_source = \"redis\" (from test.toml)"
            ]
        );
        let e = errors("lease_url = \"postgres://h/app\"\nlease_create_table = \"maybe\"");
        assert_eq!(
            e,
            [
                "generators.default.lease_create_table: \"maybe\" is not true or false (from test.toml)"
            ]
        );
        let e = errors("lease_url = \"host=db user=ids password=pw\"");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(
                "generators.default.lease_url: \"host=db user=ids password=***\" is not a redis:// URL"
            ) && e[0].contains("node_source = \"postgres\""),
            "{e:?}"
        );
        let e = errors("node_source = \"mysql\"\nlease_url = \"postgres://ids:pw@h/app\"");
        assert_eq!(
            e,
            [
                "generators.default.lease_url: \"postgres://ids:***@h/app\" is not a mysql:// URL (from test.toml)"
            ]
        );
        let e = errors("node_source = \"postgres\"\nlease_url = \"db.example.com\"");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("is not a postgres:// URL nor key=value"),
            "{e:?}"
        );
        // The library's rule for the name; the key blamed is the table's.
        let long = "t".repeat(64);
        let e = errors(&format!(
            "lease_url = \"mysql://h/app\"\nlease_table = \"{long}\"\nlease_ttl = \"5s\""
        ));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(&format!(
                "generators.default.lease_table: table name \"{long}\""
            )),
            "{e:?}"
        );
        let e = errors("node_source = \"postgres\"\nlease_table = \"ids\"");
        assert_eq!(
            e,
            ["generators.default.lease_url: node_source = \"postgres\" needs lease_url"]
        );
    }

    /// Leases on one SQL store (one URL, one table, one prefix) never hold
    /// one node id twice; another table or prefix is another store.
    #[test]
    fn sql_leases_collide_unless_on_one_url_table_and_prefix() {
        let two = |b: &str| {
            errors(&format!(
                "default_generator = \"a\"\n[generators.a]\n\
                 lease_url = \"postgres://ids@db/app\"\nlease_prefix = \"ids\"\n\
                 [generators.b]\n{b}"
            ))
        };
        let same = "lease_url = \"postgres://ids@db/app\"\nlease_prefix = \"ids\"";
        assert_eq!(two(same), Vec::<String>::new());
        // The default table named: still the same store.
        assert_eq!(
            two(&format!("{same}\nlease_table = \"flakeid_leases\"")),
            Vec::<String>::new()
        );
        for other in [
            format!("{same}\nlease_table = \"other\""),
            "lease_url = \"postgres://ids@db/app\"\nlease_prefix = \"other\"".to_owned(),
            "lease_url = \"postgres://ids@db-2/app\"\nlease_prefix = \"ids\"".to_owned(),
            "lease_url = \"mysql://ids@db/app\"\nlease_prefix = \"ids\"".to_owned(),
        ] {
            let e = two(&other);
            assert_eq!(e.len(), 1, "{other}: {e:?}");
            assert!(
                e[0].starts_with("generators.b: can issue the same IDs as generators.a"),
                "{other}: {e:?}"
            );
        }
    }

    #[test]
    fn the_help_names_every_node_source() {
        let help = command().render_long_help().to_string();
        let e = errors("node_source = \"?\"");
        let sources: Vec<&str> = e[0].split('`').skip(3).step_by(2).collect();
        assert_eq!(sources.len(), 9, "{e:?}");
        for source in sources {
            assert!(help.contains(source), "{source} in:\n{help}");
        }
        assert!(help.contains("[default: 10000]"), "{help}");
        assert!(help.contains("[env: FLAKEID_MAX_COUNT=]"), "{help}");
    }

    #[test]
    fn lease_terms_are_known_to_the_merge() {
        for key in LeaseTerms::KEYS {
            let text = format!("lease_url = \"redis://h/\"\n{key} = \"1\"");
            let e = errors(&text);
            assert!(
                e.iter().all(|e| !e.contains("does not go with")),
                "{key}: {e:?}"
            );
        }
    }
}
