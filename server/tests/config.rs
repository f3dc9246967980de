//! A bad configuration gets a message that names the key and what is wrong,
//! exit code 2 (1 for a generator that cannot be built), and nothing starts:
//! no readiness line, no listener.

mod support;

use std::time::Duration;

use support::{TempDir, run_to_end};

const LIMIT: Duration = Duration::from_secs(20);

#[track_caller]
fn refused(args: &[&str], env: &[(&str, &str)], code: i32, wanted: &[&str]) {
    let ended = run_to_end(args, env, LIMIT);
    assert_eq!(
        ended.status.code(),
        Some(code),
        "{args:?} {env:?}: stderr:\n{}",
        ended.stderr
    );
    for w in wanted {
        assert!(
            ended.stderr.contains(w),
            "{args:?} {env:?}: stderr lacks {w:?}:\n{}",
            ended.stderr
        );
    }
}

#[test]
fn bad_flags_and_variables_name_their_key_and_source() {
    refused(
        &["--node-id", "7", "--max-count", "lots"],
        &[],
        2,
        &[
            "nothing was started",
            "max_count: \"lots\" is not a whole number (from flag --max-count)",
        ],
    );
    refused(
        &["--node-id", "7"],
        &[("FLAKEID_LAYOUT", "twiter")],
        2,
        &[
            "generators.default.layout: invalid layout \"twiter\"",
            "(from environment variable FLAKEID_LAYOUT)",
        ],
    );
    refused(
        &["--node-id", "5000"],
        &[],
        2,
        &["generators.default.node_id: 5000 is out of the layout's node id range (0..=1023)"],
    );
    refused(
        &[],
        &[],
        2,
        &["generators.default.node_source: no node id source"],
    );
    refused(
        &["--node-id", "1", "--http-addr", "localhost:80"],
        &[],
        2,
        &["http_addr: \"localhost:80\" is not IP:port"],
    );
    refused(
        &["--node-source", "env", "--node-env", "NODE"],
        &[("NODE", "x1")],
        2,
        &["generators.default.node_env: environment variable NODE is \"x1\", not a node id"],
    );
    refused(
        &["--node-id", "1", "--tls-cert", "/nonexistent/cert.pem"],
        &[],
        2,
        &["tls_key: tls_cert is set but tls_key is not; set both"],
    );
    // A flag that does not exist: clap's own message, the same exit code.
    refused(&["--node-idd", "1"], &[], 2, &["--node-idd"]);
}

#[test]
fn a_bad_file_names_each_key_with_the_file() {
    let dir = TempDir::new("config");
    let path = dir.write(
        "server.toml",
        r#"
max_cuont = 5
chunk_size = 100000

[generators.orders]
layout = "discord"
node_fields = { worker = 3, shard = 1 }

[generators.events]
layout = "twitter"
node_id = 1
lease_url = "redis://127.0.0.1:1/"
"#,
    );
    let file = path.display().to_string();
    refused(
        &["--config", &file],
        &[],
        2,
        &[
            &format!("max_cuont: unknown key; did you mean `max_count`? (from {file})"),
            "chunk_size: 100000 is out of range (1..=65536)",
            "generators.orders.node_fields: the layout has no node field \"shard\" (its node fields: worker, process)",
            "generators.events.node_id: does not go with node_source = \"redis\"",
            "default_generator: \"default\" is not a generator; the configuration has events, orders",
        ],
    );
    let broken = dir.write("broken.toml", "max_count = [");
    refused(
        &["--config", &broken.display().to_string()],
        &[],
        2,
        &[
            "config: ",
            "broken.toml is not valid TOML",
            "(from flag --config)",
        ],
    );
    refused(
        &["--config", "/nonexistent/flakeid.toml"],
        &[],
        2,
        &["config: cannot read /nonexistent/flakeid.toml"],
    );
}

#[test]
fn flags_override_variables_override_the_file() {
    let dir = TempDir::new("precedence");
    let path = dir.write(
        "server.toml",
        "node_id = 1\nmax_count = 10\nchunk_size = 10\n",
    );
    let file = path.display().to_string();
    let ended = run_to_end(
        &["--config", &file, "--check", "--max-count", "30"],
        &[("FLAKEID_MAX_COUNT", "20"), ("FLAKEID_CHUNK_SIZE", "20")],
        LIMIT,
    );
    assert!(ended.status.success(), "{}", ended.stderr);
    // `--check` prints the configuration it would run, and serves nothing.
    for line in ["max_count = 30", "chunk_size = 20", "node_id = 1"] {
        assert!(
            ended.stdout.lines().any(|l| l == line),
            "{line:?} in:\n{}",
            ended.stdout
        );
    }
}

#[test]
fn a_generator_that_cannot_be_built_stops_the_start() {
    // No Redis listens on this port: the lease's first claim fails within
    // its connect timeout, and the server exits without serving.
    let port = flakeid_test_servers::free_port();
    let url = format!("redis://127.0.0.1:{port}/");
    refused(
        &["--lease-url", &url, "--lease-connect-timeout", "1s"],
        &[],
        1,
        &["cannot start: generator default:"],
    );
    // A state file in a directory that does not exist.
    refused(
        &[
            "--node-id",
            "1",
            "--state-file",
            "/nonexistent/dir/node.state",
        ],
        &[],
        1,
        &[
            "cannot start: generator default:",
            "/nonexistent/dir/node.state",
        ],
    );
}

#[test]
fn generators_that_could_issue_the_same_id_are_refused_naming_both() {
    let dir = TempDir::new("collide");
    // One layout, one node id: their IDs collide.
    let same = dir.write(
        "same.toml",
        "default_generator = \"a\"\n[generators.a]\nnode_id = 1\n[generators.b]\nnode_id = 1\n",
    );
    refused(
        &["--config", &same.display().to_string()],
        &[],
        2,
        &["generators.b: can issue the same IDs as generators.a"],
    );
    // The node id given field by field, and a layout whose node bits sit
    // where Twitter's do: the same bits, the same IDs.
    let fields = dir.write(
        "fields.toml",
        r#"default_generator = "a"
[generators.a]
node_id = 33
[generators.b]
layout = "epoch=1288834974657 unit=1 fields=timestamp:41,node:10,sequence:12"
node_id = 33
[generators.c]
node_fields = { datacenter = 1, worker = 1 }
"#,
    );
    refused(
        &["--config", &fields.display().to_string()],
        &[],
        2,
        &[
            "generators.b: can issue the same IDs as generators.a",
            "generators.c: can issue the same IDs as generators.a",
        ],
    );
    // Node fields in other places: Twitter's node 4 and node 1 of a layout
    // with 8 node bits above a 14-bit sequence both set bit 14 alone, in
    // the same millisecond (one epoch).
    let moved = dir.write(
        "moved.toml",
        r#"default_generator = "a"
[generators.a]
node_id = 4
[generators.b]
layout = "epoch=1288834974657 unit=1 fields=timestamp:41,node:8,sequence:14"
node_id = 1
"#,
    );
    refused(
        &["--config", &moved.display().to_string()],
        &[],
        2,
        &[
            "generators.b: can issue the same IDs as generators.a (node id 4 there and 1 here \
           set the same bits: both can issue ID ",
        ],
    );
    // Two leases under their own prefixes may hold the same node id.
    let leases = dir.write(
        "leases.toml",
        "default_generator = \"a\"\n[generators.a]\nlease_url = \"redis://127.0.0.1:1/\"\n\
         [generators.b]\nlease_url = \"redis://127.0.0.1:1/\"\n",
    );
    refused(
        &["--config", &leases.display().to_string()],
        &[],
        2,
        &["generators.b: can issue the same IDs as generators.a"],
    );
    // Distinct node ids, or layouts whose IDs cannot meet: accepted.
    let apart = dir.write(
        "apart.toml",
        r#"default_generator = "a"
[generators.a]
node_id = 1
[generators.b]
node_id = 2
[generators.c]
layout = "js_safe"
node_id = 1
[generators.d]
lease_url = "redis://127.0.0.1:1/"
lease_prefix = "shared"
lease_node_ids = "10-19"
[generators.e]
lease_url = "redis://127.0.0.1:1/"
lease_prefix = "shared"
lease_node_ids = "10-29"
"#,
    );
    let ended = run_to_end(
        &["--config", &apart.display().to_string(), "--check"],
        &[],
        LIMIT,
    );
    assert!(ended.status.success(), "{}", ended.stderr);
}

#[test]
fn a_node_must_set_every_node_field() {
    refused(
        &["--node-fields", "datacenter=1"],
        &[],
        2,
        &["generators.default.node_fields: worker is not set"],
    );
}

#[test]
fn lease_terms_and_listeners_are_checked_before_anything_starts() {
    // No store listens on port 1: a check that waited for the claim would
    // end with exit 1 after the connect timeout.
    refused(
        &[
            "--lease-url",
            "redis://127.0.0.1:1/",
            "--lease-ttl",
            "2s",
            "--lease-margin",
            "3s",
        ],
        &[],
        2,
        &[
            "generators.default.lease_margin: ",
            "(from flag --lease-margin)",
        ],
    );
    refused(
        &[
            "--lease-endpoints",
            "http://127.0.0.1:1",
            "--lease-ttl",
            "50ms",
        ],
        &[],
        2,
        &["generators.default.lease_ttl: "],
    );
    let port = flakeid_test_servers::free_port();
    let addr = format!("127.0.0.1:{port}");
    refused(
        &["--node-id", "1", "--http-addr", &addr, "--grpc-addr", &addr],
        &[],
        2,
        &[&format!("grpc_addr: {addr} is also http_addr")],
    );
    refused(
        &["--node-id", "1", "--http-addr", "off", "--grpc-addr", "off"],
        &[],
        2,
        &["http_addr: http_addr and grpc_addr are both off"],
    );
}

#[test]
fn a_misspelled_log_level_is_refused() {
    refused(
        &["--node-id", "1", "--log-level", "debgu"],
        &[],
        2,
        &["log_level: \"debgu\" is not a level"],
    );
    refused(
        &["--node-id", "1"],
        &[("FLAKEID_LOG_LEVEL", "info,flakeid=lots")],
        2,
        &[
            "log_level: ",
            "(from environment variable FLAKEID_LOG_LEVEL)",
        ],
    );
}

/// Every key the README's tables document is a flag with its variable in
/// `--help` (the token: a variable only), and a key of the file where the
/// table says (a wrong value for it is refused by its name, not as an
/// unknown key).
#[test]
fn every_documented_key_is_a_flag_a_variable_and_a_file_key() {
    let readme = include_str!("../README.md");
    let help = run_to_end(&["--help"], &[], LIMIT).stdout;
    let dir = TempDir::new("keys");
    let mut count = 0;
    for (table, scope) in [
        ("### Server keys", ""),
        ("### Generator keys", "[generators.g]\n"),
    ] {
        let rows = readme[readme.find(table).expect("the table")..]
            .lines()
            .skip_while(|l| !l.starts_with("|---"))
            .skip(1)
            .take_while(|l| l.starts_with('|'));
        for row in rows {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let (cell, default) = (cells[1], cells[2].trim_matches('`'));
            for key in cell.split(',').map(|k| k.trim().trim_matches('`')) {
                count += 1;
                let var = format!("FLAKEID_{}", key.to_uppercase());
                let flag = format!("--{} ", key.replace('_', "-"));
                if key == "token" {
                    assert!(!help.contains(&flag), "no {flag} in --help");
                } else {
                    assert!(help.contains(&format!("[env: {var}=]")), "{var} in --help");
                    let at = help
                        .find(&flag)
                        .unwrap_or_else(|| panic!("{flag} in --help"));
                    // The README's default is --help's, where --help has one.
                    let block = &help[at..help[at + 1..]
                        .find("\n      --")
                        .map_or(help.len(), |e| at + 1 + e)];
                    if let Some(shown) = block.split("[default: ").nth(1) {
                        let shown = shown.split(']').next().unwrap().trim_matches('`');
                        assert_eq!(default, shown, "{key}: the README's default, --help's");
                    }
                }
                let path = dir.write("k.toml", &format!("{scope}{key} = {{ wrong = [] }}\n"));
                let ended = run_to_end(&["--config", &path.display().to_string()], &[], LIMIT);
                assert_eq!(ended.status.code(), Some(2), "{key}: {}", ended.stderr);
                assert!(
                    ended.stderr.contains(&format!("{key}: "))
                        && !ended.stderr.contains("unknown key"),
                    "{key}: {}",
                    ended.stderr
                );
            }
        }
    }
    assert!(count > 30, "{count} keys documented");
}
