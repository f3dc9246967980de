//! The fault test's long run, by hand:
//!
//! ```text
//! cargo build -p flakeid-fault-tests --release
//! sudo target/release/fault-run --store etcd --minutes 30 --faults 200
//! sudo target/release/fault-run --store postgres --minutes 10
//! ```
//!
//! Starts the cluster, keeps worker processes issuing, injects faults of
//! every kind in turn until the minutes or the faults run out, checks, and
//! prints the report (exit status 1 on any violation the checker finds).

use std::path::PathBuf;
use std::time::Duration;

use std::sync::atomic::Ordering;

use flakeid_fault_tests::cluster::{RedisUrl, StoreKind};
use flakeid_fault_tests::nemesis::{Config, FaultKind, INTERRUPTED, run, sibling_worker};

/// SIGINT, SIGTERM, SIGHUP: the runner stops at its next step and cleans
/// up (workers, members, firewall rules) instead of leaving them behind.
extern "C" fn interrupted(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

fn catch_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            libc::signal(
                signal,
                interrupted as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

const USAGE: &str = "usage: fault-run --store etcd|redis|postgres|mysql [--minutes 30] [--faults 200] \
    [--seed 1] [--workers 5] [--ttl-ms 3000] [--redis-url initial|at-spawn|sentinel] \
    [--etcd-pre-vote] [--kinds 'pause leader,kill leader'] [--dir DIR]\n\
    \n\
    Runs until at least --faults faults were injected and at least --minutes passed (each \
    fault is bounded in time; the run stops after twice the minutes, or an hour if that is \
    longer, regardless). Exit status 1 if the checker finds a violation or a failed worker, \
    or a kind was never injected.\n\
    --redis-url: Lease::redis on the primary when the run started, for every worker \
    (default), or on the primary the sentinels name when each worker starts; sentinel: \
    Lease::redis_sentinel, which follows the primary through failovers\n\
    --etcd-pre-vote: start etcd with --pre-vote (off by default in etcd 3.4)\n\
    --store postgres: a primary and a streaming standby (workers get both, with \
    target_session_attrs=read-write); the database paused, killed, cut off, and once a run \
    the standby promoted with writes lost; mysql: one MariaDB server, paused, killed, cut off\n\
    --kinds: only these faults (default: every kind; names as the report prints them)\n\
    --dir: where the IDs and records go (default: a new directory under the temp dir; kept)";

fn main() {
    catch_signals();
    let mut args = std::env::args().skip(1);
    let mut store = None;
    let (mut minutes, mut faults, mut seed, mut workers, mut ttl_ms) =
        (30u64, 200usize, 1u64, 5usize, 3_000u64);
    let (mut redis_url, mut dir, mut kinds) = (RedisUrl::Initial, None, None::<String>);
    let mut pre_vote = false;
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            println!("{USAGE}");
            return;
        }
        if flag == "--etcd-pre-vote" {
            pre_vote = true;
            continue;
        }
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
                    "postgres" => StoreKind::Postgres,
                    "mysql" => StoreKind::Mysql,
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
                    "sentinel" => RedisUrl::Sentinel,
                    _ => fail(&format!("unknown --redis-url {value}")),
                }
            }
            "--dir" => dir = Some(PathBuf::from(value)),
            "--kinds" => kinds = Some(value),
            _ => fail(&format!("unknown flag {flag}")),
        }
    }
    let store = store.unwrap_or_else(|| fail("--store is required"));
    // Kept: the run's records are its evidence.
    let dir = dir.unwrap_or_else(|| {
        flakeid_test_servers::ScratchDir::on_disk(&format!("fault-run-{}", store.name())).keep()
    });
    let mut config = Config::long(store, sibling_worker(), dir.clone());
    config.duration = Duration::from_secs(minutes * 60);
    config.max_duration = Some((config.duration * 2).max(Duration::from_secs(60 * 60)));
    config.etcd_pre_vote = pre_vote;
    if let Some(kinds) = kinds {
        let all = FaultKind::all(store);
        config.kinds = kinds
            .split(',')
            .map(|name| {
                let name = name.trim();
                *all.iter()
                    .find(|k| k.name(store) == name)
                    .unwrap_or_else(|| fail(&format!("unknown fault kind {name:?}")))
            })
            .collect();
    }
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
    if report.violations() > 0 || !report.missing_kinds.is_empty() {
        std::process::exit(1);
    }
}

fn fail(message: &str) -> ! {
    eprintln!("fault-run: {message}\n{USAGE}");
    std::process::exit(2);
}
