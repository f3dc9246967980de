//! The fault test's long run, by hand:
//!
//! ```text
//! cargo build -p flakeid-fault-tests --release
//! sudo target/release/fault-run --store etcd --minutes 30 --faults 200
//! ```
//!
//! Starts the cluster, keeps worker processes issuing, injects faults of
//! every kind in turn until the minutes or the faults run out, checks, and
//! prints the report (exit status 1 on a duplicate or an overlap).

use std::path::PathBuf;
use std::time::Duration;

use flakeid_fault_tests::run::{Config, RedisUrl, StoreKind, run, sibling_worker};

const USAGE: &str = "usage: fault-run --store etcd|redis [--minutes 30] [--faults 200] \
    [--seed 1] [--workers 5] [--ttl-ms 3000] [--redis-url initial|at-spawn] [--dir DIR]\n\
    \n\
    --redis-url: the primary when the run started, for every worker (default), or the \
    primary the sentinels name when each worker starts\n\
    --dir: where the IDs and records go (default: a new directory under the temp dir; kept)";

fn main() {
    let mut args = std::env::args().skip(1);
    let mut store = None;
    let (mut minutes, mut faults, mut seed, mut workers, mut ttl_ms) =
        (30u64, 200usize, 1u64, 5usize, 3_000u64);
    let (mut redis_url, mut dir) = (RedisUrl::Initial, None);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| fail(&format!("{flag} needs a value")));
        let number = || {
            value
                .parse::<u64>()
                .unwrap_or_else(|_| fail(&format!("{flag} {value}")))
        };
        match flag.as_str() {
            "--store" => {
                store = Some(match value.as_str() {
                    "etcd" => StoreKind::Etcd,
                    "redis" => StoreKind::Redis,
                    _ => fail(&format!("unknown store {value}")),
                })
            }
            "--minutes" => minutes = number(),
            "--faults" => faults = number() as usize,
            "--seed" => seed = number(),
            "--workers" => workers = number() as usize,
            "--ttl-ms" => ttl_ms = number(),
            "--redis-url" => {
                redis_url = match value.as_str() {
                    "initial" => RedisUrl::Initial,
                    "at-spawn" => RedisUrl::AtSpawn,
                    _ => fail(&format!("unknown --redis-url {value}")),
                }
            }
            "--dir" => dir = Some(PathBuf::from(value)),
            _ => fail(&format!("unknown flag {flag}")),
        }
    }
    let store = store.unwrap_or_else(|| fail("--store is required"));
    let dir = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(flakeid_test_servers::unique_prefix(&format!(
            "fault-run-{}",
            store.name()
        )))
    });
    let mut config = Config::long(store, sibling_worker(), dir.clone());
    config.duration = Duration::from_secs(minutes * 60);
    config.faults = faults;
    config.seed = seed;
    config.workers = workers;
    config.ttl = Duration::from_millis(ttl_ms);
    config.redis_url = redis_url;
    eprintln!(
        "fault-run: {store:?}, {minutes} min, up to {faults} faults, seed {seed}; records in {}",
        dir.display()
    );
    let report = run(config);
    println!("{report}");
    println!("records: {}", dir.display());
    if report.violations() > 0 {
        std::process::exit(1);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("fault-run: {message}\n{USAGE}");
    std::process::exit(2);
}
