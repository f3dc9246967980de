//! The keys: names, flags, variables, help.

use clap::{Arg, ArgAction, Command};

/// Where a key is read: at the top level only, or per generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    Server,
    Generator,
}

/// One configuration key: its name (file), its variable, and its help.
pub(super) struct Key {
    pub(super) name: &'static str,
    pub(super) scope: Scope,
    pub(super) value: &'static str,
    pub(super) help: &'static str,
    /// Repeatable as a flag (`--node-field a=1 --node-field b=2`); a
    /// comma-separated list as a variable.
    pub(super) repeat: bool,
    /// Read from the file and the environment only: a secret that must not
    /// show in the process list.
    pub(super) no_flag: bool,
}

pub(super) const fn key(
    name: &'static str,
    scope: Scope,
    value: &'static str,
    help: &'static str,
) -> Key {
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
pub(super) const KEYS: &[Key] = &[
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
        "workers",
        Scope::Server,
        "N",
        "threads serving requests [default: one per core]",
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
    Key {
        repeat: true,
        ..key(
            "lease_sentinels",
            Scope::Generator,
            "ADDR",
            "Redis Sentinels to find the primary through, host:port or redis://[user:password@]host:port (repeat, or comma-separated)",
        )
    },
    key(
        "lease_master",
        Scope::Generator,
        "NAME",
        "with lease_sentinels: the master name they monitor, or redis://[:password@]name/[db] with the data nodes' password",
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
pub(super) fn flag(name: &str) -> String {
    name.replace('_', "-")
}

/// The variable of a key: `max_count` is `FLAKEID_MAX_COUNT`.
pub(super) fn env_var(name: &str) -> String {
    format!("FLAKEID_{}", name.to_ascii_uppercase())
}

pub(super) fn find_key(name: &str) -> Option<&'static Key> {
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

/// "; did you mean `x`?" for a key one or two edits from a known one.
pub(super) fn suggestion(name: &str, scope: Scope) -> String {
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

pub(super) fn edit_distance(a: &str, b: &str) -> usize {
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
