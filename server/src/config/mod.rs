//! The server's configuration: flags over environment variables
//! (`FLAKEID_...`) over a TOML file (`--config`) over defaults.
//!
//! Every key has one name, written the same in the file (`max_count`), as a
//! flag (`--max-count`) and as a variable (`FLAKEID_MAX_COUNT`). Server keys
//! sit at the top of the file. Generator keys sit in `[generators.<name>]`
//! tables; written at the top of the file, as flags or as variables, they
//! configure the default generator. Everything is checked before anything
//! starts, and each error names its key, where the value came from, and what
//! is wrong with it.

mod keys;
mod node;
mod print;
mod values;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

use clap::ArgMatches;
use clap::parser::ValueSource;
use flakeid::{Layout, OnClockBehind, OnExhausted};

pub use keys::command;
use keys::{KEYS, Key, Scope, env_var, find_key, flag, suggestion};
use node::check_node;
use values::{
    Raw, Reader, Setting, parse_addr, parse_on_clock_behind, parse_on_exhausted, valid_name,
};
pub use values::{mask_password, parse_duration};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line.
    Json,
}

/// Certificate and key files of the TLS listeners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// The server's whole configuration, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// The HTTP/JSON listener, or none.
    pub http_addr: Option<SocketAddr>,
    /// The gRPC listener, or none.
    pub grpc_addr: Option<SocketAddr>,
    /// Most IDs per HTTP batch or NextIds call.
    pub max_count: u32,
    /// Most IDs per StreamIds call.
    pub max_stream_count: u64,
    /// IDs per StreamIds chunk when the call names none.
    pub chunk_size: u32,
    /// Longest wait for IDs before a call is answered 503/UNAVAILABLE.
    pub wait_limit: Duration,
    /// The bearer token the ID APIs require, if any.
    pub token: Option<String>,
    /// TLS for both listeners, if set.
    pub tls: Option<TlsFiles>,
    /// Log format.
    pub log_format: LogFormat,
    /// Log filter (tracing-subscriber's `EnvFilter` syntax).
    pub log_level: String,
    /// How long requests in flight may finish after SIGTERM.
    pub drain_timeout: Duration,
    /// Runtime worker threads; `None` for one per core.
    pub workers: Option<usize>,
    /// The generator of calls that name none.
    pub default_generator: String,
    /// The generators by name.
    pub generators: BTreeMap<String, GeneratorConfig>,
}

/// The largest chunk a StreamIds call may ask for: 512 KiB of IDs, well
/// under gRPC's usual 4 MiB message limit.
pub const MAX_CHUNK_SIZE: u32 = 65_536;

/// One generator's configuration, checked against its layout.
#[derive(Debug, Clone)]
pub struct GeneratorConfig {
    /// The bit plan.
    pub layout: Layout,
    /// Where its node id comes from.
    pub node: NodeSource,
    /// Restart safety: the state file and its window.
    pub persist: Option<PersistConfig>,
    /// Policy for a used-up tick.
    pub on_exhausted: OnExhausted,
    /// Policy for a clock behind.
    pub on_clock_behind: OnClockBehind,
    /// Random sequence start bound.
    pub random_start: Option<u64>,
}

/// Where a generator's node id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeSource {
    /// A node id given in the configuration, or read from a variable or the
    /// StatefulSet ordinal (resolved while the configuration is read).
    Static {
        /// The node id.
        node_id: u64,
        /// How it was found, for the start-up log.
        from: String,
    },
    /// The layout's node fields, by name.
    Fields(Vec<(String, u64)>),
    /// The only generator of its layout anywhere (`Builder::single_node`).
    Single,
    /// A lease on a coordination store.
    Lease(LeaseConfig),
}

/// A node-id lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The store.
    pub store: LeaseStore,
    /// Key prefix.
    pub prefix: String,
    /// Time to live.
    pub ttl: Option<Duration>,
    /// Safety margin.
    pub margin: Option<Duration>,
    /// Connect timeout of the first claim.
    pub connect_timeout: Option<Duration>,
    /// The node ids it may claim.
    pub node_ids: Option<RangeInclusive<u64>>,
}

/// The coordination store of a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseStore {
    /// etcd endpoints.
    Etcd(Vec<String>),
    /// A Redis URL.
    Redis(String),
    /// Redis behind Sentinel: the sentinels and the master name (or a
    /// `redis://` URL naming it, with the data nodes' credentials).
    Sentinel {
        /// The sentinels' addresses.
        sentinels: Vec<String>,
        /// The master name.
        master: String,
    },
}

/// Restart safety for one generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistConfig {
    /// The state file.
    pub path: PathBuf,
    /// How far ahead the saved mark reaches.
    pub window: Option<Duration>,
}

/// The layered values before checking: server keys, and per generator name
/// its keys. `None` as generator means the default one, whose name is known
/// only once every layer is in.
#[derive(Debug, Default)]
struct Layers {
    server: BTreeMap<&'static str, Setting>,
    generators: BTreeMap<Option<String>, BTreeMap<&'static str, Setting>>,
    errors: Vec<ConfigError>,
}

impl Layers {
    fn set(&mut self, generator: Option<String>, key: &'static Key, setting: Setting) {
        match key.scope {
            Scope::Server => {
                self.server.insert(key.name, setting);
            }
            Scope::Generator => {
                self.generators
                    .entry(generator)
                    .or_default()
                    .insert(key.name, setting);
            }
        }
    }

    fn error(
        &mut self,
        key: impl Into<String>,
        origin: Option<Origin>,
        message: impl Into<String>,
    ) {
        self.errors.push(ConfigError {
            key: key.into(),
            origin,
            message: message.into(),
        });
    }
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
    let mut layers = Layers::default();
    if let Some(path) = matches.get_one::<String>("config") {
        let origin = match matches.value_source("config") {
            Some(ValueSource::EnvVariable) => Origin::Env("FLAKEID_CONFIG".into()),
            _ => Origin::Flag("--config".into()),
        };
        read_file(&mut layers, PathBuf::from(path), origin);
    }
    // The token has no flag: a secret on the command line shows in `ps`.
    if let Ok(token) = std::env::var("FLAKEID_TOKEN") {
        layers.set(
            None,
            find_key("token").expect("token is a key"),
            Setting {
                raw: Raw::Text(token),
                origin: Origin::Env("FLAKEID_TOKEN".into()),
            },
        );
    }
    for key in KEYS.iter().filter(|k| !k.no_flag) {
        let origin = match matches.value_source(key.name) {
            Some(ValueSource::CommandLine) => Origin::Flag(format!("--{}", flag(key.name))),
            Some(ValueSource::EnvVariable) => Origin::Env(env_var(key.name)),
            _ => continue,
        };
        let values: Vec<String> = matches
            .get_many::<String>(key.name)
            .map(|v| v.cloned().collect())
            .unwrap_or_default();
        let raw = if key.repeat {
            Raw::Many(values)
        } else {
            Raw::Text(values.into_iter().next().unwrap_or_default())
        };
        layers.set(None, key, Setting { raw, origin });
    }
    let config = check(layers)?;
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
    let mut layers = Layers::default();
    read_toml(&mut layers, text, PathBuf::from(path));
    check(layers)
}

fn read_file(layers: &mut Layers, path: PathBuf, origin: Origin) {
    match std::fs::read_to_string(&path) {
        Ok(text) => read_toml(layers, &text, path),
        Err(e) => layers.error(
            "config",
            Some(origin),
            format!("cannot read {}: {e}", path.display()),
        ),
    }
}

fn read_toml(layers: &mut Layers, text: &str, path: PathBuf) {
    let origin = Origin::File(path.clone());
    let table: toml::Table = match text.parse() {
        Ok(table) => table,
        Err(e) => {
            let message = e.to_string();
            layers.error(
                "config",
                Some(origin),
                format!("not valid TOML: {}", message.trim()),
            );
            return;
        }
    };
    for (name, value) in table {
        if name == "generators" {
            let toml::Value::Table(generators) = value else {
                layers.error(
                    "generators",
                    Some(origin.clone()),
                    "must be a table of [generators.<name>] tables",
                );
                continue;
            };
            for (generator, keys) in generators {
                let toml::Value::Table(keys) = keys else {
                    layers.error(
                        format!("generators.{generator}"),
                        Some(origin.clone()),
                        "must be a table",
                    );
                    continue;
                };
                layers
                    .generators
                    .entry(Some(generator.clone()))
                    .or_default();
                for (name, value) in keys {
                    let dotted = format!("generators.{generator}.{name}");
                    match find_key(&name) {
                        Some(key) if key.scope == Scope::Generator => layers.set(
                            Some(generator.clone()),
                            key,
                            Setting {
                                raw: Raw::Toml(value),
                                origin: origin.clone(),
                            },
                        ),
                        Some(_) => layers.error(
                            dotted,
                            Some(origin.clone()),
                            format!("{name} is a server key: write it at the top of the file"),
                        ),
                        None => layers.error(
                            dotted,
                            Some(origin.clone()),
                            format!("unknown key{}", suggestion(&name, Scope::Generator)),
                        ),
                    }
                }
            }
            continue;
        }
        match find_key(&name) {
            Some(key) => layers.set(
                None,
                key,
                Setting {
                    raw: Raw::Toml(value),
                    origin: origin.clone(),
                },
            ),
            None => layers.error(
                name.clone(),
                Some(origin.clone()),
                format!("unknown key{}", suggestion(&name, Scope::Server)),
            ),
        }
    }
}

fn check(mut layers: Layers) -> Result<Config, ConfigErrors> {
    let mut errors = std::mem::take(&mut layers.errors);
    let server = std::mem::take(&mut layers.server);
    let mut r = Reader {
        path: String::new(),
        settings: &server,
        errors: &mut errors,
    };
    let http_addr = r
        .parsed("http_addr", parse_addr)
        .unwrap_or(Some(SocketAddr::from(([127, 0, 0, 1], 8080))));
    let grpc_addr = r
        .parsed("grpc_addr", parse_addr)
        .unwrap_or(Some(SocketAddr::from(([127, 0, 0, 1], 50051))));
    if http_addr.is_none() && grpc_addr.is_none() && r.has("http_addr") && r.has("grpc_addr") {
        let origin = r.origin("grpc_addr").cloned();
        r.fail(
            "grpc_addr",
            origin.as_ref(),
            "http_addr and grpc_addr are both off: nothing would be served",
        );
    }
    let max_count = match r.uint("max_count") {
        None => 10_000,
        Some(n) if (1..=1_000_000).contains(&n) => n as u32,
        Some(n) => {
            let origin = r.origin("max_count").cloned();
            r.fail(
                "max_count",
                origin.as_ref(),
                format!("{n} is out of range (1..=1000000: a reply holds the IDs in memory)"),
            );
            10_000
        }
    };
    let max_stream_count = match r.uint("max_stream_count") {
        None => 1_000_000_000,
        Some(0) => {
            let origin = r.origin("max_stream_count").cloned();
            r.fail("max_stream_count", origin.as_ref(), "must be at least 1");
            1
        }
        Some(n) => n,
    };
    let chunk_size = match r.uint("chunk_size") {
        None => 4096,
        Some(n) if (1..=u64::from(MAX_CHUNK_SIZE)).contains(&n) => n as u32,
        Some(n) => {
            let origin = r.origin("chunk_size").cloned();
            r.fail(
                "chunk_size",
                origin.as_ref(),
                format!("{n} is out of range (1..={MAX_CHUNK_SIZE})"),
            );
            4096
        }
    };
    let wait_limit = r
        .duration("wait_limit")
        .unwrap_or(Duration::from_millis(500));
    let token = match (r.text("token"), r.text("token_file")) {
        (Some(_), Some(_)) => {
            let origin = r.origin("token_file").cloned();
            r.fail(
                "token_file",
                origin.as_ref(),
                "token and token_file are both set; set one",
            );
            None
        }
        (Some(token), None) => Some(token),
        (None, Some(path)) => match std::fs::read_to_string(&path) {
            Ok(token) => Some(token.trim().to_owned()),
            Err(e) => {
                let origin = r.origin("token_file").cloned();
                r.fail(
                    "token_file",
                    origin.as_ref(),
                    format!("cannot read {path}: {e}"),
                );
                None
            }
        },
        (None, None) => None,
    };
    let token = match token {
        Some(t)
            if t.trim().is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) =>
        {
            let name = if r.has("token") {
                "token"
            } else {
                "token_file"
            };
            let origin = r.origin(name).cloned();
            r.fail(
                name,
                origin.as_ref(),
                "the token is empty or holds spaces or control characters",
            );
            None
        }
        other => other,
    };
    let tls = match (r.text("tls_cert"), r.text("tls_key")) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.into(),
            key: key.into(),
        }),
        (None, None) => None,
        (Some(_), None) => {
            let origin = r.origin("tls_cert").cloned();
            r.fail(
                "tls_key",
                origin.as_ref(),
                "tls_cert is set but tls_key is not; set both",
            );
            None
        }
        (None, Some(_)) => {
            let origin = r.origin("tls_key").cloned();
            r.fail(
                "tls_cert",
                origin.as_ref(),
                "tls_key is set but tls_cert is not; set both",
            );
            None
        }
    };
    let log_format = r
        .parsed("log_format", |s| match s.trim() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("{other:?} is not a log format: text or json")),
        })
        .unwrap_or(LogFormat::Text);
    let log_level = r
        .parsed("log_level", |s| {
            tracing_subscriber::EnvFilter::try_new(s)
                .map(|_| s.to_owned())
                .map_err(|e| format!("{s:?} is not a log filter: {e}"))
        })
        .unwrap_or_else(|| "info".into());
    let drain_timeout = r
        .duration("drain_timeout")
        .unwrap_or(Duration::from_secs(10));
    let workers = match r.uint("workers") {
        Some(n) if (1..=1024).contains(&n) => Some(n as usize),
        Some(n) => {
            let origin = r.origin("workers").cloned();
            r.fail(
                "workers",
                origin.as_ref(),
                format!("{n} is out of range (1..=1024)"),
            );
            None
        }
        None => None,
    };
    let named_default = r.text("default_generator");
    let default_origin = r.origin("default_generator").cloned();

    // The default generator's name: as set, else `default`, else the only
    // generator the file names (when nothing else configures a default one).
    let mut generators = std::mem::take(&mut layers.generators);
    let default_keys = generators.remove(&None);
    let named: Vec<String> = generators.keys().flatten().cloned().collect();
    let default_name = match (&named_default, &default_keys, named.as_slice()) {
        (Some(name), _, _) => name.clone(),
        (None, None, [only]) => only.clone(),
        _ => "default".to_owned(),
    };
    let mut all: BTreeMap<String, BTreeMap<&'static str, Setting>> = generators
        .into_iter()
        .filter_map(|(name, keys)| name.map(|n| (n, keys)))
        .collect();
    if let Some(keys) = default_keys {
        let slot = all.entry(default_name.clone()).or_default();
        for (name, setting) in keys {
            // A flag or variable overrides the file's [generators.<default>]
            // table; a top-level file key must not repeat one there.
            if let (Some(existing), Origin::File(_)) = (slot.get(name), &setting.origin)
                && matches!(existing.origin, Origin::File(_))
            {
                errors.push(ConfigError {
                    key: name.into(),
                    origin: Some(setting.origin.clone()),
                    message: format!(
                        "also set as generators.{default_name}.{name}; set it in one place"
                    ),
                });
                continue;
            }
            slot.insert(name, setting);
        }
    }
    if all.is_empty() {
        all.insert(default_name.clone(), BTreeMap::new());
    }
    if !all.contains_key(&default_name) {
        errors.push(ConfigError {
            key: "default_generator".into(),
            origin: default_origin,
            message: format!(
                "{default_name:?} is not a generator; the configuration has {}",
                all.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let mut checked = BTreeMap::new();
    for (name, keys) in &all {
        if !valid_name(name) {
            errors.push(ConfigError {
                key: format!("generators.{name}"),
                origin: keys.values().next().map(|s| s.origin.clone()),
                message: "a generator name is 1 to 64 letters, digits, `_` or `-`".into(),
            });
            continue;
        }
        let mut r = Reader {
            path: format!("generators.{name}."),
            settings: keys,
            errors: &mut errors,
        };
        if let Some(generator) = check_generator(name, &mut r) {
            checked.insert(name.clone(), generator);
        }
    }
    if !errors.is_empty() {
        return Err(ConfigErrors(errors));
    }
    Ok(Config {
        http_addr,
        grpc_addr,
        max_count,
        max_stream_count,
        chunk_size,
        wait_limit,
        token,
        tls,
        log_format,
        log_level,
        drain_timeout,
        workers,
        default_generator: default_name,
        generators: checked,
    })
}

fn check_generator(name: &str, r: &mut Reader<'_>) -> Option<GeneratorConfig> {
    let layout = match r.has("layout") {
        false => Layout::twitter(),
        true => r.parsed("layout", |s| {
            s.parse::<Layout>()
                .map_err(|e| format!("{s:?} is not a layout: {e}"))
        })?,
    };
    let node = check_node(name, &layout, r);
    let persist = r.text("state_file").map(|path| PersistConfig {
        path: path.into(),
        window: None,
    });
    let window = r.duration("persist_window");
    let persist = match (persist, window) {
        (Some(p), window) => Some(PersistConfig { window, ..p }),
        (None, Some(_)) => {
            let origin = r.origin("persist_window").cloned();
            r.fail(
                "persist_window",
                origin.as_ref(),
                "persist_window is set but state_file is not",
            );
            None
        }
        (None, None) => None,
    };
    if let (Some(_), Some(NodeSource::Lease(_))) = (&persist, &node) {
        let origin = r.origin("state_file").cloned();
        r.fail(
            "state_file",
            origin.as_ref(),
            "a leased node id keeps its high-water mark in the lease store; drop state_file",
        );
    }
    let on_exhausted = r
        .parsed("on_exhausted", parse_on_exhausted)
        .unwrap_or_default();
    let on_clock_behind = r
        .parsed("on_clock_behind", parse_on_clock_behind)
        .unwrap_or_default();
    let random_start = r.uint("random_start");
    Some(GeneratorConfig {
        layout,
        node: node?,
        persist,
        on_exhausted,
        on_clock_behind,
        random_start,
    })
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
        assert!(matches!(g.node, NodeSource::Static { node_id: 7, .. }));
        assert_eq!(
            config.http_addr,
            Some(SocketAddr::from(([127, 0, 0, 1], 8080)))
        );
    }

    #[test]
    fn the_only_named_generator_is_the_default() {
        let config = from_toml(
            "[generators.orders]\nlayout = \"discord\"\nnode_fields = { worker = 3, process = 1 }",
            "test.toml",
        )
        .unwrap();
        assert_eq!(config.default_generator, "orders");
        assert_eq!(
            config.generators["orders"].node,
            NodeSource::Fields(vec![("process".into(), 1), ("worker".into(), 3)])
        );
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
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("generators.a.layout: \"twiter\" is not a layout"),
            "{e:?}"
        );
        let e = errors("max_cuont = 5\nnode_id = 1");
        assert_eq!(
            e,
            ["max_cuont: unknown key; did you mean `max_count`? (from test.toml)"]
        );
        let e = errors("");
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("generators.default.node_source: no node id source"),
            "{e:?}"
        );
        let e = errors("node_id = 1\nlease_url = \"redis://x/\"");
        assert!(
            e.iter()
                .any(|e| e.contains("node_id: does not go with node_source = \"redis\"")),
            "{e:?}"
        );
        let e = errors("node_id = 1\nwait_limit = \"5 parsecs\"");
        assert_eq!(
            e,
            [
                "wait_limit: \"5 parsecs\" is not a duration (like 500ms, 10s, 2m, 1h) (from test.toml)"
            ]
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
            [
                "generators.default.lease_master: node_source = \"sentinel\" needs lease_master, the master name the sentinels monitor (from test.toml)"
            ]
        );
        let e = errors("lease_master = \"orders\"\nlease_url = \"redis://x/\"");
        assert!(
            e.iter()
                .any(|e| e.contains("lease_master: does not go with node_source = \"redis\"")),
            "{e:?}"
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
        let NodeSource::Lease(lease) = &g.node else {
            panic!("{:?}", g.node);
        };
        assert_eq!(
            lease.store,
            LeaseStore::Sentinel {
                sentinels: vec!["s0:26379".into(), "redis://u:pw@s1:26379".into()],
                master: "redis://:s3cret@orders/2".into(),
            }
        );
        assert_eq!(lease.ttl, Some(Duration::from_secs(5)));
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
    }

    #[test]
    fn durations_and_policies_parse() {
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("10").is_err());
        assert_eq!(
            parse_on_exhausted("borrow:5ms"),
            Ok(OnExhausted::Borrow {
                max_ahead: Duration::from_millis(5)
            })
        );
        assert_eq!(
            parse_on_clock_behind("wait:5ms"),
            Ok(OnClockBehind::Wait {
                max: Duration::from_millis(5)
            })
        );
    }

    #[test]
    fn passwords_stay_out_of_printed_configuration() {
        assert_eq!(
            mask_password("redis://:s3cret@h:6379/0"),
            "redis://:***@h:6379/0"
        );
        assert_eq!(mask_password("redis://h:6379/"), "redis://h:6379/");
    }
}
