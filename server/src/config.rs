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

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};
use flakeid::{Layout, OnClockBehind, OnExhausted, node_id};

/// Where a key is read: at the top level only, or per generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Server,
    Generator,
}

/// One configuration key: its name (file), its variable, and its help.
struct Key {
    name: &'static str,
    scope: Scope,
    value: &'static str,
    help: &'static str,
    /// Repeatable as a flag (`--node-field a=1 --node-field b=2`); a
    /// comma-separated list as a variable.
    repeat: bool,
    /// Read from the file and the environment only: a secret that must not
    /// show in the process list.
    no_flag: bool,
}

const fn key(name: &'static str, scope: Scope, value: &'static str, help: &'static str) -> Key {
    Key {
        name,
        scope,
        value,
        help,
        repeat: false,
        no_flag: false,
    }
}

/// Every key the server reads, in the order `--help` lists them.
const KEYS: &[Key] = &[
    key(
        "http_addr",
        Scope::Server,
        "ADDR",
        "HTTP/JSON listener, IP:port, or `off` [default: 127.0.0.1:8080]",
    ),
    key(
        "grpc_addr",
        Scope::Server,
        "ADDR",
        "gRPC listener, IP:port, or `off` [default: 127.0.0.1:50051]",
    ),
    key(
        "max_count",
        Scope::Server,
        "N",
        "most IDs one HTTP batch or gRPC NextIds call may ask for [default: 10000]",
    ),
    key(
        "max_stream_count",
        Scope::Server,
        "N",
        "most IDs one gRPC StreamIds call may ask for [default: 1000000000]",
    ),
    key(
        "chunk_size",
        Scope::Server,
        "N",
        "IDs per StreamIds chunk when the call names none, 1-65536 [default: 4096]",
    ),
    key(
        "wait_limit",
        Scope::Server,
        "DURATION",
        "longest a call waits for IDs (the next tick, a reservation being saved) before 503/UNAVAILABLE [default: 500ms]",
    ),
    key(
        "token_file",
        Scope::Server,
        "PATH",
        "file holding the bearer token the ID APIs require (or FLAKEID_TOKEN / `token` in the file) [default: none]",
    ),
    Key {
        no_flag: true,
        ..key("token", Scope::Server, "TOKEN", "")
    },
    key(
        "tls_cert",
        Scope::Server,
        "PATH",
        "PEM certificate chain: serve both listeners over TLS (with tls_key)",
    ),
    key(
        "tls_key",
        Scope::Server,
        "PATH",
        "PEM private key of tls_cert",
    ),
    key(
        "log_format",
        Scope::Server,
        "FORMAT",
        "`text` or `json` (one object a line) [default: text]",
    ),
    key(
        "log_level",
        Scope::Server,
        "FILTER",
        "level or tracing filter, e.g. `info` or `info,flakeid=debug` [default: info]",
    ),
    key(
        "drain_timeout",
        Scope::Server,
        "DURATION",
        "on SIGTERM, how long requests and streams in flight may finish [default: 10s]",
    ),
    key(
        "default_generator",
        Scope::Server,
        "NAME",
        "the generator of calls that name none [default: `default`, or the only one]",
    ),
    key(
        "layout",
        Scope::Generator,
        "SPEC",
        "layout: a preset (twitter, discord, sonyflake, js_safe, instagram[:<epoch ms>]) or `epoch=<ms> unit=<ms> fields=timestamp:41,...` [default: twitter]",
    ),
    key(
        "node_source",
        Scope::Generator,
        "SOURCE",
        "where the node id comes from: static, env, statefulset, etcd, redis, single [default: from the keys set]",
    ),
    key(
        "node_id",
        Scope::Generator,
        "N",
        "static node id (all node fields as one number)",
    ),
    Key {
        repeat: true,
        ..key(
            "node_fields",
            Scope::Generator,
            "NAME=N",
            "static node id, field by field (repeat, or comma-separated)",
        )
    },
    key(
        "node_env",
        Scope::Generator,
        "VAR",
        "environment variable holding the node id",
    ),
    Key {
        repeat: true,
        ..key(
            "lease_endpoints",
            Scope::Generator,
            "URL",
            "etcd endpoints to lease the node id from, http://host:port (repeat, or comma-separated)",
        )
    },
    key(
        "lease_url",
        Scope::Generator,
        "URL",
        "Redis to lease the node id from, redis://[:password@]host:port/[db]",
    ),
    key(
        "lease_prefix",
        Scope::Generator,
        "PREFIX",
        "key prefix of the leases in the store [default: flakeid/<generator>]",
    ),
    key(
        "lease_ttl",
        Scope::Generator,
        "DURATION",
        "lease time to live [default: 10s]",
    ),
    key(
        "lease_margin",
        Scope::Generator,
        "DURATION",
        "stop issuing this long before the lease could expire [default: a fifth of the TTL]",
    ),
    key(
        "lease_connect_timeout",
        Scope::Generator,
        "DURATION",
        "how long the first claim may take at start [default: 5s]",
    ),
    key(
        "lease_node_ids",
        Scope::Generator,
        "FIRST-LAST",
        "the node ids the lease may claim [default: the layout's whole range]",
    ),
    key(
        "state_file",
        Scope::Generator,
        "PATH",
        "restart safety: the file the high-water mark is saved in [default: none]",
    ),
    key(
        "persist_window",
        Scope::Generator,
        "DURATION",
        "how far ahead the saved mark reaches [default: 1s]",
    ),
    key(
        "on_exhausted",
        Scope::Generator,
        "POLICY",
        "a tick's sequence used up: wait, borrow:<duration>, error, next_clock [default: wait]",
    ),
    key(
        "on_clock_behind",
        Scope::Generator,
        "POLICY",
        "the clock behind the last ID: continue, wait:<duration>, error, next_clock [default: continue]",
    ),
    key(
        "random_start",
        Scope::Generator,
        "N",
        "start each tick's sequence at a random value below N [default: 0, no randomness]",
    ),
];

/// The flag of a key: `max_count` is `--max-count`.
fn flag(name: &str) -> String {
    name.replace('_', "-")
}

/// The variable of a key: `max_count` is `FLAKEID_MAX_COUNT`.
fn env_var(name: &str) -> String {
    format!("FLAKEID_{}", name.to_ascii_uppercase())
}

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
///
/// A Redis Sentinel lease joins here as a third store when the library
/// offers one (`node_source = "sentinel"` is recognised and refused until
/// then; see `generators.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseStore {
    /// etcd endpoints.
    Etcd(Vec<String>),
    /// A Redis URL.
    Redis(String),
}

/// Restart safety for one generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistConfig {
    /// The state file.
    pub path: PathBuf,
    /// How far ahead the saved mark reaches.
    pub window: Option<Duration>,
}

/// A value as given: TOML from the file, text from a flag or variable.
#[derive(Debug, Clone)]
enum Raw {
    Toml(toml::Value),
    Text(String),
    /// A repeated flag.
    Many(Vec<String>),
}

#[derive(Debug, Clone)]
struct Setting {
    raw: Raw,
    origin: Origin,
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

fn find_key(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// The command line: `--config` and one flag per key, each with its variable.
pub fn command() -> Command {
    let mut command = Command::new("flakeid-server")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Time-ordered, unique 64-bit IDs over gRPC and HTTP/JSON")
        .after_help(
            "Precedence: flags, then FLAKEID_* variables, then the --config file, then \
             defaults. Generator keys given as flags or variables configure the default \
             generator; other generators are [generators.<name>] tables in the file. \
             Durations: 500ms, 10s, 2m, 1h.",
        )
        .arg(
            Arg::new("config")
                .long("config")
                .env("FLAKEID_CONFIG")
                .value_name("PATH")
                .help("TOML configuration file"),
        )
        .arg(
            Arg::new("check")
                .long("check")
                .action(ArgAction::SetTrue)
                .help("check the configuration, print it, and exit without serving"),
        );
    for key in KEYS.iter().filter(|k| !k.no_flag) {
        let mut arg = Arg::new(key.name)
            .long(flag(key.name))
            .env(env_var(key.name))
            .value_name(key.value)
            .help(key.help);
        if key.repeat {
            arg = arg.action(ArgAction::Append).value_delimiter(',');
        }
        command = command.arg(arg);
    }
    command
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

/// "; did you mean `x`?" for a key one or two edits from a known one.
fn suggestion(name: &str, scope: Scope) -> String {
    let close = KEYS
        .iter()
        .filter(|k| scope == Scope::Server || k.scope == Scope::Generator)
        .map(|k| (edit_distance(name, k.name), k.name))
        .filter(|(d, _)| *d <= 2)
        .min();
    match close {
        Some((_, known)) => format!("; did you mean `{known}`?"),
        None => String::new(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// Reads typed values out of settings, collecting errors under dotted keys.
struct Reader<'a> {
    /// `""` for server keys, `"generators.<name>."` for generator keys.
    path: String,
    settings: &'a BTreeMap<&'static str, Setting>,
    errors: &'a mut Vec<ConfigError>,
}

impl Reader<'_> {
    fn dotted(&self, name: &str) -> String {
        format!("{}{name}", self.path)
    }

    fn fail(&mut self, name: &str, origin: Option<&Origin>, message: impl Into<String>) {
        let key = self.dotted(name);
        self.errors.push(ConfigError {
            key,
            origin: origin.cloned(),
            message: message.into(),
        });
    }

    fn origin(&self, name: &str) -> Option<&Origin> {
        self.settings.get(name).map(|s| &s.origin)
    }

    fn has(&self, name: &str) -> bool {
        self.settings.contains_key(name)
    }

    /// A value through `parse`, which says what is wrong; `None` if unset or
    /// wrong (the error recorded).
    fn get<T>(&mut self, name: &str, parse: impl FnOnce(&Raw) -> Result<T, String>) -> Option<T> {
        let setting = self.settings.get(name)?;
        match parse(&setting.raw) {
            Ok(value) => Some(value),
            Err(message) => {
                let origin = setting.origin.clone();
                self.fail(name, Some(&origin), message);
                None
            }
        }
    }

    fn text(&mut self, name: &str) -> Option<String> {
        self.get(name, text)
    }

    fn uint(&mut self, name: &str) -> Option<u64> {
        self.get(name, uint)
    }

    fn duration(&mut self, name: &str) -> Option<Duration> {
        self.get(name, |raw| text(raw).and_then(|t| parse_duration(&t)))
    }

    fn parsed<T>(&mut self, name: &str, what: impl FnOnce(&str) -> Result<T, String>) -> Option<T> {
        self.get(name, |raw| text(raw).and_then(|t| what(&t)))
    }
}

fn text(raw: &Raw) -> Result<String, String> {
    match raw {
        Raw::Text(t) => Ok(t.clone()),
        Raw::Toml(toml::Value::String(s)) => Ok(s.clone()),
        Raw::Many(v) => Ok(v.join(",")),
        Raw::Toml(other) => Err(format!("expected a string, found {}", other.type_str())),
    }
}

fn uint(raw: &Raw) -> Result<u64, String> {
    match raw {
        Raw::Toml(toml::Value::Integer(n)) => {
            u64::try_from(*n).map_err(|_| format!("{n} is negative; expected a whole number ≥ 0"))
        }
        Raw::Toml(toml::Value::String(s)) | Raw::Text(s) => parse_uint(s),
        Raw::Many(v) => parse_uint(&v.join(",")),
        Raw::Toml(other) => Err(format!(
            "expected a whole number, found {}",
            other.type_str()
        )),
    }
}

fn parse_uint(s: &str) -> Result<u64, String> {
    let digits: String = s.trim().chars().filter(|c| *c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{s:?} is not a whole number"));
    }
    digits
        .parse()
        .map_err(|_| format!("{s} is too large (at most {})", u64::MAX))
}

fn list(raw: &Raw) -> Result<Vec<String>, String> {
    let items = match raw {
        Raw::Toml(toml::Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(format!("expected strings, found {}", other.type_str())),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Raw::Toml(toml::Value::String(s)) | Raw::Text(s) => {
            s.split(',').map(|s| s.trim().to_owned()).collect()
        }
        Raw::Many(v) => v.iter().map(|s| s.trim().to_owned()).collect(),
        Raw::Toml(other) => {
            return Err(format!(
                "expected a list of strings, found {}",
                other.type_str()
            ));
        }
    };
    if items.iter().any(String::is_empty) {
        return Err("the list has an empty item".into());
    }
    Ok(items)
}

/// `name=value` pairs: a TOML table, or text items.
fn pairs(raw: &Raw) -> Result<Vec<(String, u64)>, String> {
    if let Raw::Toml(toml::Value::Table(table)) = raw {
        return table
            .iter()
            .map(|(name, value)| {
                let value = uint(&Raw::Toml(value.clone())).map_err(|e| format!("{name}: {e}"))?;
                Ok((name.clone(), value))
            })
            .collect();
    }
    list(raw)?
        .iter()
        .map(|item| {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?} is not name=value"))?;
            Ok((
                name.trim().to_owned(),
                parse_uint(value).map_err(|e| format!("{name}: {e}"))?,
            ))
        })
        .collect()
}

/// `500ms`, `10s`, `2m`, `1h`, or a sum of them (`1m30s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (like 500ms, 10s, 2m, 1h)");
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let part = match &rest[..unit_len] {
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.saturating_mul(60)),
            "h" => Duration::from_secs(number.saturating_mul(3600)),
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = total.saturating_add(part);
    }
    Ok(total)
}

/// `IP:port` or `off`.
fn parse_addr(s: &str) -> Result<Option<SocketAddr>, String> {
    if s.trim() == "off" {
        return Ok(None);
    }
    SocketAddr::from_str(s.trim()).map(Some).map_err(|_| {
        format!("{s:?} is not IP:port (for example 127.0.0.1:8080 or [::1]:8080) or `off`")
    })
}

fn parse_on_exhausted(s: &str) -> Result<OnExhausted, String> {
    match s.trim() {
        "wait" => Ok(OnExhausted::Wait),
        "error" => Ok(OnExhausted::Error),
        "next_clock" => Ok(OnExhausted::NextClock),
        other => match other.strip_prefix("borrow:") {
            Some(d) => Ok(OnExhausted::Borrow {
                max_ahead: parse_duration(d)?,
            }),
            None => Err(format!(
                "{other:?} is not a policy: wait, borrow:<duration>, error or next_clock"
            )),
        },
    }
}

fn parse_on_clock_behind(s: &str) -> Result<OnClockBehind, String> {
    match s.trim() {
        "continue" => Ok(OnClockBehind::Continue),
        "error" => Ok(OnClockBehind::Error),
        "next_clock" => Ok(OnClockBehind::NextClock),
        other => match other.strip_prefix("wait:") {
            Some(d) => Ok(OnClockBehind::Wait {
                max: parse_duration(d)?,
            }),
            None => Err(format!(
                "{other:?} is not a policy: continue, wait:<duration>, error or next_clock"
            )),
        },
    }
}

fn parse_range(s: &str) -> Result<RangeInclusive<u64>, String> {
    let (first, last) = s
        .split_once('-')
        .ok_or_else(|| format!("{s:?} is not a range FIRST-LAST (for example 0-31)"))?;
    let (first, last) = (parse_uint(first)?, parse_uint(last)?);
    if first > last {
        return Err(format!("{s:?} is empty: {first} is above {last}"));
    }
    Ok(first..=last)
}

/// Generator names appear in URLs and metric labels.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
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

fn check_node(generator: &str, layout: &Layout, r: &mut Reader<'_>) -> Option<NodeSource> {
    let lease_keys = [
        "lease_prefix",
        "lease_ttl",
        "lease_margin",
        "lease_connect_timeout",
        "lease_node_ids",
    ];
    let source = match r.text("node_source") {
        Some(s) => s,
        None if r.has("lease_url") => "redis".into(),
        None if r.has("lease_endpoints") => "etcd".into(),
        None if r.has("node_env") => "env".into(),
        None if r.has("node_id") || r.has("node_fields") => "static".into(),
        None if r.has("node_source") => return None,
        None => {
            r.fail(
                "node_source",
                None,
                "no node id source: set node_id or node_fields (static), node_env (a variable), \
                 node_source = \"statefulset\", a lease (lease_url for Redis, lease_endpoints \
                 for etcd), or node_source = \"single\" if this is the only generator of its \
                 layout anywhere",
            );
            return None;
        }
    };
    // Keys that belong to another source are mistakes, not leftovers.
    let belongs: &[&str] = match source.as_str() {
        "static" => &["node_id", "node_fields"],
        "env" => &["node_env"],
        "etcd" => &["lease_endpoints"],
        "redis" => &["lease_url"],
        _ => &[],
    };
    let is_lease = matches!(source.as_str(), "etcd" | "redis");
    for key in [
        "node_id",
        "node_fields",
        "node_env",
        "lease_endpoints",
        "lease_url",
    ]
    .into_iter()
    .chain(lease_keys.into_iter().filter(|_| !is_lease))
    {
        if r.has(key) && !belongs.contains(&key) {
            let origin = r.origin(key).cloned();
            r.fail(
                key,
                origin.as_ref(),
                format!("does not go with node_source = {source:?}"),
            );
        }
    }
    let origin = r.origin("node_source").cloned();
    match source.as_str() {
        "static" => {
            if r.has("node_id") && r.has("node_fields") {
                let origin = r.origin("node_fields").cloned();
                r.fail(
                    "node_fields",
                    origin.as_ref(),
                    "node_id and node_fields are both set; set one",
                );
                return None;
            }
            if r.has("node_fields") {
                let fields = r.get("node_fields", pairs)?;
                let origin = r.origin("node_fields").cloned();
                let mut ok = true;
                for (field, value) in &fields {
                    let known = layout
                        .field(field)
                        .filter(|f| f.kind() == flakeid::FieldKind::Node);
                    match known {
                        None => {
                            let names: Vec<_> = layout
                                .fields()
                                .iter()
                                .filter(|f| f.kind() == flakeid::FieldKind::Node)
                                .map(|f| f.name().to_owned())
                                .collect();
                            r.fail(
                                "node_fields",
                                origin.as_ref(),
                                format!(
                                    "the layout has no node field {field:?} (its node fields: {})",
                                    if names.is_empty() {
                                        "none".into()
                                    } else {
                                        names.join(", ")
                                    }
                                ),
                            );
                            ok = false;
                        }
                        Some(f) if *value > f.max() => {
                            r.fail(
                                "node_fields",
                                origin.as_ref(),
                                format!("{field} = {value} is out of range (0..={})", f.max()),
                            );
                            ok = false;
                        }
                        Some(_) => {}
                    }
                }
                return ok.then_some(NodeSource::Fields(fields));
            }
            let node_id = match r.uint("node_id") {
                Some(n) => n,
                None if r.has("node_id") => return None,
                None => {
                    r.fail(
                        "node_id",
                        origin.as_ref(),
                        "node_source = \"static\" needs node_id or node_fields",
                    );
                    return None;
                }
            };
            if node_id > layout.max_node_id() {
                let origin = r.origin("node_id").cloned();
                r.fail(
                    "node_id",
                    origin.as_ref(),
                    format!(
                        "{node_id} is out of the layout's node id range (0..={})",
                        layout.max_node_id()
                    ),
                );
                return None;
            }
            Some(NodeSource::Static {
                node_id,
                from: "configured".into(),
            })
        }
        "env" => {
            let Some(var) = r.text("node_env") else {
                if !r.has("node_env") {
                    r.fail(
                        "node_env",
                        origin.as_ref(),
                        "node_source = \"env\" needs node_env, the variable's name",
                    );
                }
                return None;
            };
            match node_id::from_env(&var, layout) {
                Ok(node_id) => Some(NodeSource::Static {
                    node_id,
                    from: format!("environment variable {var}"),
                }),
                Err(e) => {
                    let origin = r.origin("node_env").cloned();
                    r.fail("node_env", origin.as_ref(), e.to_string());
                    None
                }
            }
        }
        "statefulset" => match node_id::from_statefulset(layout) {
            Ok(node_id) => Some(NodeSource::Static {
                node_id,
                from: "the StatefulSet ordinal in the host name".into(),
            }),
            Err(e) => {
                r.fail("node_source", origin.as_ref(), e.to_string());
                None
            }
        },
        "single" => Some(NodeSource::Single),
        "etcd" | "redis" => {
            let store = if source == "etcd" {
                let Some(endpoints) = r.get("lease_endpoints", list) else {
                    if !r.has("lease_endpoints") {
                        r.fail(
                            "lease_endpoints",
                            origin.as_ref(),
                            "node_source = \"etcd\" needs lease_endpoints (http://host:port, ...)",
                        );
                    }
                    return None;
                };
                LeaseStore::Etcd(endpoints)
            } else {
                let Some(url) = r.text("lease_url") else {
                    if !r.has("lease_url") {
                        r.fail(
                            "lease_url",
                            origin.as_ref(),
                            "node_source = \"redis\" needs lease_url (redis://host:port/)",
                        );
                    }
                    return None;
                };
                if !url.starts_with("redis://") && !url.starts_with("rediss://") {
                    let origin = r.origin("lease_url").cloned();
                    r.fail(
                        "lease_url",
                        origin.as_ref(),
                        format!("{url:?} is not a redis:// URL"),
                    );
                    return None;
                }
                LeaseStore::Redis(url)
            };
            let prefix = r
                .text("lease_prefix")
                .unwrap_or_else(|| format!("flakeid/{generator}"));
            let ttl = r.duration("lease_ttl");
            let margin = r.duration("lease_margin");
            let connect_timeout = r.duration("lease_connect_timeout");
            let node_ids = r.parsed("lease_node_ids", parse_range);
            if let Some(range) = &node_ids
                && *range.end() > layout.max_node_id()
            {
                let origin = r.origin("lease_node_ids").cloned();
                r.fail(
                    "lease_node_ids",
                    origin.as_ref(),
                    format!(
                        "{}-{} reaches past the layout's node id range (0..={})",
                        range.start(),
                        range.end(),
                        layout.max_node_id()
                    ),
                );
            }
            Some(NodeSource::Lease(LeaseConfig {
                store,
                prefix,
                ttl,
                margin,
                connect_timeout,
                node_ids,
            }))
        }
        "sentinel" => {
            r.fail(
                "node_source",
                origin.as_ref(),
                "Redis Sentinel leases are not in this build of flakeid; use redis (the \
                 primary's URL) or etcd",
            );
            None
        }
        other => {
            r.fail(
                "node_source",
                origin.as_ref(),
                format!("{other:?} is not a node id source: static, env, statefulset, etcd, redis or single"),
            );
            None
        }
    }
}

/// The configuration as the file would say it, for `--check` and the
/// start-up log. The token is never printed.
impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = |a: Option<SocketAddr>| a.map_or_else(|| "off".to_owned(), |a| a.to_string());
        writeln!(f, "http_addr = {:?}", addr(self.http_addr))?;
        writeln!(f, "grpc_addr = {:?}", addr(self.grpc_addr))?;
        writeln!(f, "max_count = {}", self.max_count)?;
        writeln!(f, "max_stream_count = {}", self.max_stream_count)?;
        writeln!(f, "chunk_size = {}", self.chunk_size)?;
        writeln!(f, "wait_limit = \"{}ms\"", self.wait_limit.as_millis())?;
        if self.token.is_some() {
            writeln!(f, "# token = (set, not shown)")?;
        }
        if let Some(tls) = &self.tls {
            writeln!(f, "tls_cert = {:?}", tls.cert.display().to_string())?;
            writeln!(f, "tls_key = {:?}", tls.key.display().to_string())?;
        }
        let format = match self.log_format {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        };
        writeln!(f, "log_format = {format:?}")?;
        writeln!(f, "log_level = {:?}", self.log_level)?;
        writeln!(
            f,
            "drain_timeout = \"{}ms\"",
            self.drain_timeout.as_millis()
        )?;
        writeln!(f, "default_generator = {:?}", self.default_generator)?;
        for (name, g) in &self.generators {
            writeln!(f, "\n[generators.{name}]")?;
            writeln!(f, "layout = {:?}", g.layout.to_string())?;
            match &g.node {
                NodeSource::Static { node_id, from } => {
                    writeln!(f, "node_id = {node_id} # {from}")?;
                }
                NodeSource::Fields(fields) => {
                    let list: Vec<_> = fields.iter().map(|(n, v)| format!("{n} = {v}")).collect();
                    writeln!(f, "node_fields = {{ {} }}", list.join(", "))?;
                }
                NodeSource::Single => writeln!(f, "node_source = \"single\"")?,
                NodeSource::Lease(lease) => {
                    match &lease.store {
                        LeaseStore::Etcd(endpoints) => {
                            writeln!(f, "lease_endpoints = {endpoints:?}")?;
                        }
                        LeaseStore::Redis(url) => {
                            writeln!(f, "lease_url = {:?}", mask_password(url))?;
                        }
                    }
                    writeln!(f, "lease_prefix = {:?}", lease.prefix)?;
                    for (key, value) in [
                        ("lease_ttl", lease.ttl),
                        ("lease_margin", lease.margin),
                        ("lease_connect_timeout", lease.connect_timeout),
                    ] {
                        if let Some(d) = value {
                            writeln!(f, "{key} = \"{}ms\"", d.as_millis())?;
                        }
                    }
                    if let Some(range) = &lease.node_ids {
                        writeln!(f, "lease_node_ids = \"{}-{}\"", range.start(), range.end())?;
                    }
                }
            }
            if let Some(p) = &g.persist {
                writeln!(f, "state_file = {:?}", p.path.display().to_string())?;
                if let Some(w) = p.window {
                    writeln!(f, "persist_window = \"{}ms\"", w.as_millis())?;
                }
            }
            writeln!(
                f,
                "on_exhausted = {:?}",
                policy_text_exhausted(g.on_exhausted)
            )?;
            writeln!(
                f,
                "on_clock_behind = {:?}",
                policy_text_behind(g.on_clock_behind)
            )?;
            if let Some(n) = g.random_start {
                writeln!(f, "random_start = {n}")?;
            }
        }
        Ok(())
    }
}

fn policy_text_exhausted(p: OnExhausted) -> String {
    match p {
        OnExhausted::Borrow { max_ahead } => format!("borrow:{}ms", max_ahead.as_millis()),
        OnExhausted::Error => "error".into(),
        OnExhausted::NextClock => "next_clock".into(),
        _ => "wait".into(),
    }
}

fn policy_text_behind(p: OnClockBehind) -> String {
    match p {
        OnClockBehind::Wait { max } => format!("wait:{}ms", max.as_millis()),
        OnClockBehind::Error => "error".into(),
        OnClockBehind::NextClock => "next_clock".into(),
        _ => "continue".into(),
    }
}

/// `redis://:secret@host/` as `redis://:***@host/`.
pub fn mask_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
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
        let e = errors("node_id = 1\nnode_source = \"sentinel\"");
        assert!(e.iter().any(|e| e.contains("Sentinel")), "{e:?}");
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
