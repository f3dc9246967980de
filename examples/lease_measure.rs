//! Measures node-id leases on real servers and prints the figures of
//! `benches/results/lease.md`: claim latency, renewal traffic per node, the
//! server's CPU and statements per renewal, the load of a fleet at the
//! default TTL, and how long a holder is fenced when the server is killed
//! and restarted at once.
//!
//! ```sh
//! cargo run --release --features etcd,redis,postgres,mysql,cli --example lease_measure
//! ```
//!
//! Starts its own etcd (Debian's `etcd-server`) and `redis-server` on
//! 127.0.0.1, with data on disk (the system temp directory, or
//! `FLAKEID_MEASURE_DIR`), and PostgreSQL (Debian's `postgresql`, durable
//! settings) and MariaDB (`mariadb-server`) as the lease tests start them
//! (data under `/dev/shm` where there is one). `FLAKEID_MEASURE_SECONDS`
//! sets each measuring window (default 10), `FLAKEID_MEASURE_RESTARTS` the
//! kill-and-restart trials per server (default 5). Linux only (it reads the
//! servers' CPU time from `/proc`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flakeid::report::{cpu_model, quantile};
use flakeid::{Event, GenerateError, Generator, Layout, Lease};
use flakeid_test_servers::{Kind, Mariadb, Postgres, Proxy, Server, unique_prefix, url_at};

/// The TTL the figures are for (the lease's default).
const TTL: Duration = Duration::from_secs(10);
/// The share of one core a server may spend on renewals in the fleet figure.
const CPU_BUDGET: f64 = 0.5;
const FLEET: f64 = 1024.0;
/// The fleet the statements-per-second figure is given for.
const THOUSAND: f64 = 1000.0;
/// Keepers renewing at once while the server's CPU is measured.
const KEEPERS: usize = 200;

/// Which store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Etcd,
    Redis,
    Postgres,
    Mariadb,
}

/// A running server of each kind.
enum Db {
    Plain(Server),
    Postgres(Postgres),
    Mariadb(Mariadb),
}

impl Db {
    fn which(&self) -> Which {
        match self {
            Db::Plain(s) if s.kind == Kind::Etcd => Which::Etcd,
            Db::Plain(_) => Which::Redis,
            Db::Postgres(_) => Which::Postgres,
            Db::Mariadb(_) => Which::Mariadb,
        }
    }

    fn addr(&self) -> SocketAddr {
        match self {
            Db::Plain(s) => s.addr(),
            Db::Postgres(s) => s.addr(),
            Db::Mariadb(s) => s.addr(),
        }
    }

    fn kill(&mut self) {
        match self {
            Db::Plain(s) => s.kill(),
            Db::Postgres(s) => s.kill(),
            Db::Mariadb(s) => s.kill(),
        }
    }

    fn restart(&mut self) {
        match self {
            Db::Plain(s) => s.restart(),
            Db::Postgres(s) => s.restart(),
            Db::Mariadb(s) => s.restart(),
        }
    }

    /// CPU seconds of the whole server: PostgreSQL's postmaster, the
    /// children it reaped, and every process it runs now (one backend per
    /// session, and its helpers); the one process of the others.
    fn cpu_seconds(&self) -> Result<f64, Box<dyn std::error::Error>> {
        match self {
            Db::Plain(s) => Ok(cpu_of(s.pid().ok_or("server not running")?)?.own),
            Db::Mariadb(s) => Ok(cpu_of(s.pid().ok_or("server not running")?)?.own),
            Db::Postgres(s) => {
                let postmaster = s.pid().ok_or("server not running")?;
                let top = cpu_of(postmaster)?;
                let mut total = top.own + top.reaped;
                for pid in children_of(postmaster) {
                    // A backend that ended since the scan is in `reaped`
                    // (or will be): skip it.
                    if let Ok(child) = cpu_of(pid) {
                        total += child.own;
                    }
                }
                Ok(total)
            }
        }
    }

    /// The server's own counts: renewal requests (etcd: transactions and
    /// keep-alive messages; Redis: script calls; PostgreSQL: rows updated
    /// in the lease table; MariaDB: `UPDATE` statements), and statements
    /// (PostgreSQL: transactions, each statement being autocommitted;
    /// MariaDB: `Questions`; etcd and Redis: the requests).
    fn counts(&self) -> Result<Counts, Box<dyn std::error::Error>> {
        match self {
            Db::Plain(s) => {
                let n = renewal_requests(s)?;
                Ok(Counts {
                    renewals: n,
                    statements: n,
                })
            }
            Db::Postgres(s) => {
                let answer = s.sql(
                    "SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database \
                     WHERE datname = 'postgres'), (SELECT COALESCE(sum(n_tup_upd), 0) \
                     FROM pg_stat_user_tables WHERE relname = 'flakeid_leases')",
                )?;
                let (statements, renewals) = answer.split_once('|').ok_or("malformed counts")?;
                Ok(Counts {
                    renewals: renewals.trim().parse()?,
                    statements: statements.trim().parse()?,
                })
            }
            Db::Mariadb(s) => {
                let answer =
                    s.sql("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_update')")?;
                let mut counts = Counts {
                    renewals: 0,
                    statements: 0,
                };
                for line in answer.lines() {
                    let (name, value) = line.split_once('\t').ok_or("malformed status")?;
                    match name {
                        "Com_update" => counts.renewals = value.trim().parse()?,
                        "Questions" => counts.statements = value.trim().parse()?,
                        _ => {}
                    }
                }
                Ok(counts)
            }
        }
    }

    fn version(&self) -> String {
        match self {
            Db::Plain(s) if s.kind == Kind::Etcd => first_line("etcd", &["--version"]),
            Db::Plain(_) => first_line("redis-server", &["--version"]),
            Db::Postgres(s) => s
                .sql("SELECT version()")
                .unwrap_or_else(|e| format!("? ({e})")),
            Db::Mariadb(s) => s
                .sql("SELECT VERSION()")
                .unwrap_or_else(|e| format!("? ({e})")),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Counts {
    renewals: u64,
    statements: u64,
}

fn first_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_else(|e| format!("? ({e})"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base =
        std::env::var_os("FLAKEID_MEASURE_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let window = Duration::from_secs(
        std::env::var("FLAKEID_MEASURE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10),
    );
    let restarts: usize = std::env::var("FLAKEID_MEASURE_RESTARTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    println!(
        "machine: {} cores, {}; etcd and Redis data in {}; windows of {window:?}\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model(),
        base.display()
    );
    let mut rows = Vec::new();
    for which in [Which::Etcd, Which::Redis, Which::Postgres, Which::Mariadb] {
        let mut db = match which {
            Which::Etcd => Db::Plain(Server::start_in(Kind::Etcd, base.clone())),
            Which::Redis => Db::Plain(Server::start_in(Kind::Redis, base.clone())),
            Which::Postgres => {
                let mut server = Postgres::start_durable();
                // One connection per keeper: the default (100) is too few
                // for the CPU window's keepers.
                server.sql("ALTER SYSTEM SET max_connections = 400")?;
                server.stop();
                server.restart();
                Db::Postgres(server)
            }
            Which::Mariadb => {
                let server = Mariadb::start();
                server.sql("SET GLOBAL max_connections = 400")?;
                Db::Mariadb(server)
            }
        };
        println!("{which:?}: {}", db.version());
        rows.push(measure(&mut db, window, restarts)?);
    }
    let renewals_per_node = 3.0 / TTL.as_secs_f64();
    println!("\n| | etcd | Redis | PostgreSQL | MariaDB |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, f: &dyn Fn(&Measured) -> String| {
        let cells: Vec<String> = rows.iter().map(f).collect();
        println!("| {name} | {} |", cells.join(" | "));
    };
    row("claim (build), median", &|m| ms(m.claim_median));
    row("claim (build), 99th percentile", &|m| ms(m.claim_p99));
    row("release (drop), median", &|m| ms(m.release_median));
    row("round trips per renewal (by the code)", &|m| {
        m.trips_per_renewal.to_string()
    });
    row("statements (requests) per renewal, server-counted", &|m| {
        format!("{:.2}", m.statements_per_renewal)
    });
    row(
        "statements (requests) per scheduled renewal, server-counted",
        &|m| format!("{:.2}", m.statements_per_scheduled),
    );
    row(
        "statements (requests) per build and drop, server-counted",
        &|m| match m.statements_per_claim {
            Some(n) => format!("{n:.1}"),
            None => "—".into(),
        },
    );
    row("bytes per renewal (both ways, TCP payload)", &|m| {
        format!("{:.0}", m.bytes_per_renewal)
    });
    row(&format!("per node at TTL {TTL:?}: bytes/s"), &|m| {
        format!("{:.0}", m.bytes_per_renewal * renewals_per_node)
    });
    row(
        &format!("1,000 holders at TTL {TTL:?}: statements (requests)/s"),
        &|m| {
            format!(
                "{:.0}",
                THOUSAND * renewals_per_node * m.statements_per_renewal
            )
        },
    );
    row("server CPU per renewal (measured)", &|m| {
        format!("{:.0} µs", m.cpu_per_renewal * 1e6)
    });
    row("renewals/s one server core sustains", &|m| {
        format!("{:.0}", 1.0 / m.cpu_per_renewal)
    });
    row(
        &format!(
            "largest fleet at TTL {TTL:?}, {:.0}% of a core",
            CPU_BUDGET * 100.0
        ),
        &|m| {
            format!(
                "{:.0}",
                CPU_BUDGET / (m.cpu_per_renewal * renewals_per_node)
            )
        },
    );
    row("1,024 nodes: server CPU", &|m| {
        format!(
            "{:.1}% of a core",
            FLEET * renewals_per_node * m.cpu_per_renewal * 100.0
        )
    });
    row("kill -9 and restart: restart took, median / max", &|m| {
        median_max(&m.restart_took)
    });
    row("kill -9 and restart: holder fenced, median / max", &|m| {
        median_max(&m.fenced)
    });
    for m in &rows {
        println!("\n{}", m.note);
    }
    Ok(())
}

struct Measured {
    claim_median: Duration,
    claim_p99: Duration,
    release_median: Duration,
    trips_per_renewal: u32,
    statements_per_renewal: f64,
    /// Against the renewals the keepers' schedule makes (etcd's and
    /// Redis' renewals are their requests divided by the requests a
    /// renewal makes, so only this is a check there).
    statements_per_scheduled: f64,
    statements_per_claim: Option<f64>,
    bytes_per_renewal: f64,
    /// Server CPU seconds per renewal.
    cpu_per_renewal: f64,
    restart_took: Vec<Duration>,
    fenced: Vec<Duration>,
    note: String,
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn median_max(values: &[Duration]) -> String {
    let mut sorted = values.to_vec();
    sorted.sort();
    match (sorted.get(sorted.len() / 2), sorted.last()) {
        (Some(median), Some(max)) => format!(
            "{:.0} / {:.0} ms",
            median.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3
        ),
        _ => "—".into(),
    }
}

fn median_min(values: &[Duration]) -> String {
    let mut sorted = values.to_vec();
    sorted.sort();
    match (sorted.get(sorted.len() / 2), sorted.first()) {
        (Some(median), Some(min)) => format!(
            "{:.0} / {:.0} ms",
            median.as_secs_f64() * 1e3,
            min.as_secs_f64() * 1e3
        ),
        _ => "—".into(),
    }
}

/// A lease on the server of `which` at `addr`; callers choose its TTL.
fn lease_at(which: Which, addr: SocketAddr, prefix: &str) -> Lease {
    match which {
        Which::Etcd => Lease::etcd([url_at(Kind::Etcd, addr)]),
        Which::Redis => Lease::redis(url_at(Kind::Redis, addr)),
        Which::Postgres => Lease::postgres(format!("postgres://postgres@{addr}/postgres")),
        Which::Mariadb => Lease::mysql(format!("mysql://root@{addr}/flakeid")),
    }
    .prefix(prefix)
    .connect_timeout(Duration::from_secs(5))
}

fn lease(db: &Db, prefix: &str) -> Lease {
    lease_at(db.which(), db.addr(), prefix)
        .ttl(TTL)
        .safety_margin(TTL / 5)
}

/// How often a keeper renews at `ttl` with a margin of a fifth of it: a
/// third of the TTL, and for etcd no later than the deadline less 2 s (an
/// election), but at least every twelfth of the TTL (as
/// `src/lease/etcd/mod.rs` says).
fn renew_every(which: Which, ttl: Duration) -> Duration {
    let third = ttl / 3;
    match which {
        Which::Etcd => {
            let outlasting = (ttl - ttl / 5).saturating_sub(Duration::from_secs(2));
            third.min(outlasting.max(ttl / 12))
        }
        _ => third,
    }
}

/// A generator whose fence is open (a claim in a new epoch waits for it).
fn open(lease: Lease) -> Result<Generator, Box<dyn std::error::Error>> {
    let generator = Generator::builder(Layout::twitter()).lease(lease).build()?;
    generator.next_id();
    Ok(generator)
}

fn measure(
    db: &mut Db,
    window: Duration,
    restarts: usize,
) -> Result<Measured, Box<dyn std::error::Error>> {
    let which = db.which();
    eprintln!("{which:?}: claim latency");
    // What is done once per server or per prefix (the SQL table, the
    // first epoch) is done before the clock starts.
    let prefix = unique_prefix("claims");
    drop(open(lease(db, &prefix))?);
    // Claim latency: build (connect, claim, record the first ceiling) and
    // drop (record the exact mark, release), one generator at a time.
    let (mut claim, mut release) = (Vec::new(), Vec::new());
    let before = db.counts()?;
    let claims = 200;
    for _ in 0..claims {
        let begun = Instant::now();
        let generator = Generator::builder(Layout::twitter())
            .lease(lease(db, &prefix))
            .build()?;
        claim.push(begun.elapsed());
        generator.next_id();
        let begun = Instant::now();
        drop(generator);
        release.push(begun.elapsed());
    }
    let statements_per_claim = match which {
        Which::Postgres | Which::Mariadb => {
            // PostgreSQL's counts reach its statistics when a session ends.
            std::thread::sleep(Duration::from_millis(1500));
            let after = db.counts()?;
            // Less the one statement of the count itself.
            Some((after.statements - before.statements).saturating_sub(1) as f64 / claims as f64)
        }
        _ => None,
    };

    eprintln!("{which:?}: renewal traffic");
    // Traffic per renewal: one generator behind a counting proxy, with a
    // short TTL so that a window holds many renewals.
    let short = Duration::from_secs(3);
    let proxy = Proxy::new(db.addr());
    let generator = open(
        lease_at(which, proxy.addr(), &unique_prefix("traffic"))
            .ttl(short)
            .safety_margin(short / 5),
    )?;
    let bytes = || proxy.sent.load(Ordering::Relaxed) + proxy.received.load(Ordering::Relaxed);
    // Let the first renewal open what it opens (etcd's keep-alive stream),
    // and start half-way between two renewals.
    let every = renew_every(which, short);
    std::thread::sleep(every * 3 + every / 2);
    let before = bytes();
    let traffic_window = window.max(short * 2);
    std::thread::sleep(traffic_window);
    let renewals = (traffic_window.as_secs_f64() / every.as_secs_f64()).round();
    let bytes_per_renewal = (bytes() - before) as f64 / renewals;
    drop(generator);
    drop(proxy);

    eprintln!("{which:?}: server CPU per renewal");
    // Server CPU per renewal: many keepers renewing at a known rate while
    // the server's CPU time is read from /proc; renewals counted by the
    // server itself. etcd renews every twelfth of a short TTL, so its
    // keepers get a longer one, for a like rate.
    let fast = match which {
        Which::Etcd => Duration::from_secs(3),
        _ => Duration::from_secs(1),
    };
    let prefix = unique_prefix("cpu");
    let generators: Vec<Generator> = (0..KEEPERS)
        .map(|_| {
            Generator::builder(Layout::twitter())
                .lease(
                    lease_at(which, db.addr(), &prefix)
                        .ttl(fast)
                        .safety_margin(fast / 5),
                )
                .build()
        })
        .collect::<Result<_, _>>()?;
    // The claims' epoch waits, and PostgreSQL's sessions' first reports.
    std::thread::sleep(fast.max(Duration::from_secs(2)));
    // The count before the CPU at the start and after it at the end, so
    // that what the count costs the server falls outside the CPU window.
    let count0 = db.counts()?;
    let cpu0 = db.cpu_seconds()?;
    let begun = Instant::now();
    std::thread::sleep(window);
    let cpu1 = db.cpu_seconds()?;
    let spanned = begun.elapsed();
    let count1 = db.counts()?;
    drop(generators);
    let trips_per_renewal = match which {
        Which::Etcd => 2, // a transaction (the mark) and a keep-alive
        _ => 1,           // one script, one UPDATE
    };
    let renewals = match which {
        Which::Etcd | Which::Redis => {
            (count1.renewals - count0.renewals) as f64 / f64::from(trips_per_renewal)
        }
        _ => (count1.renewals - count0.renewals) as f64,
    };
    // Less the count's own statement.
    let statements = (count1.statements - count0.statements).saturating_sub(1) as f64;
    let statements_per_renewal = statements / renewals;
    let expected = KEEPERS as f64 * spanned.as_secs_f64() / renew_every(which, fast).as_secs_f64();
    let cpu_per_renewal = (cpu1 - cpu0) / renewals;
    let mut note = format!(
        "{which:?}: {renewals:.0} renewals counted by the server ({expected:.0} scheduled) by \
         {KEEPERS} keepers at TTL {fast:?} in {spanned:.1?}, {statements:.0} statements \
         (requests); server CPU {:.2} s",
        cpu1 - cpu0
    );
    match which {
        Which::Etcd => {
            note += &format!(
                "; mean WAL fsync {:.2} ms over the run (each mark is a Raft write)",
                etcd_mean_fsync_ms(db).unwrap_or(f64::NAN)
            )
        }
        Which::Redis => {
            note += &format!(
                "; Redis' own count: {:.1} µs per script call (appendfsync always)",
                redis_usec_per_call(db).unwrap_or(f64::NAN)
            )
        }
        _ => {}
    }
    note += &format!("; claims' statements also measured: {statements_per_claim:?} per build+drop");

    eprintln!("{which:?}: fenced while the server restarts");
    let (restart_took, fenced, lines) = restart_fencing(db, restarts)?;
    note += &lines;

    let quantile = |values: &mut [Duration], q| quantile(values, q).expect("200 of them");
    Ok(Measured {
        claim_median: quantile(&mut claim, 0.5),
        claim_p99: quantile(&mut claim, 0.99),
        release_median: quantile(&mut release, 0.5),
        trips_per_renewal,
        statements_per_renewal,
        statements_per_scheduled: statements / expected,
        statements_per_claim,
        bytes_per_renewal,
        cpu_per_renewal,
        restart_took,
        fenced,
        note,
    })
}

/// Per trial: a generator holding a lease at the default TTL and asking
/// for an ID every millisecond (`try_next_id`), the server killed (SIGKILL)
/// at a point spread over the renewal interval and restarted at once. Returns how long
/// the restart took (until the server answered), how long `try_next_id`
/// said `Fenced` in all (0 if never), and a line per trial.
#[allow(clippy::type_complexity)]
fn restart_fencing(
    db: &mut Db,
    trials: usize,
) -> Result<(Vec<Duration>, Vec<Duration>, String), Box<dyn std::error::Error>> {
    let which = db.which();
    let (mut took, mut fenced, mut lines) = (Vec::new(), Vec::new(), String::new());
    let mut left = Vec::new();
    let every = renew_every(which, TTL);
    for trial in 0..trials {
        // The keeper's renewals (sent, answered) and failures, as its
        // events report them.
        let extended = Arc::new(Mutex::new(Vec::<(Instant, Instant)>::new()));
        let failed = Arc::new(AtomicU64::new(0));
        let hook = {
            let (extended, failed) = (extended.clone(), failed.clone());
            move |event: &Event| match event {
                Event::LeaseExtended { sent, answered, .. } => {
                    extended.lock().unwrap().push((*sent, *answered))
                }
                Event::LeaseRenewalFailed { .. } => {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        };
        let generator = Generator::builder(Layout::twitter())
            .lease(lease(db, &unique_prefix("restart")))
            .on_event(hook)
            .build()?;
        generator.next_id();
        // The fence opened at most a few ms ago: kill at a point of the
        // renewal interval that moves with each trial.
        let offset = every.mul_f64((trial as f64 + 0.5) / trials.max(1) as f64);
        let stop = AtomicBool::new(false);
        let killed_at = Mutex::new(None::<Instant>);
        let (restart, outcome) = std::thread::scope(|scope| {
            let sampler = scope.spawn(|| {
                let mut total = Duration::ZERO;
                let mut longest = Duration::ZERO;
                let mut since: Option<Instant> = None;
                let mut other = 0u64;
                let mut first_fenced: Option<Instant> = None;
                loop {
                    let now = Instant::now();
                    match generator.try_next_id() {
                        Ok(_) => {
                            if let Some(start) = since.take() {
                                total += now - start;
                                longest = longest.max(now - start);
                            }
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                        Err(GenerateError::Fenced) => {
                            if since.is_none() {
                                since = Some(now);
                                first_fenced.get_or_insert(now);
                            }
                            // Gives up on a holder fenced for a minute.
                            let killed = *killed_at.lock().unwrap();
                            if killed.is_some_and(|k| now - k > Duration::from_secs(60)) {
                                total += now - since.take().unwrap_or(now);
                                break;
                            }
                        }
                        Err(_) => other += 1,
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                (total, longest, first_fenced, other)
            });
            std::thread::sleep(offset);
            let begun = Instant::now();
            *killed_at.lock().unwrap() = Some(begun);
            db.kill();
            db.restart();
            let restart = begun.elapsed();
            // Watch one TTL and 2 s past the kill: a renewal that failed
            // closes the fence by the deadline (TTL less the margin after
            // the last one that succeeded).
            std::thread::sleep(
                (begun + TTL + Duration::from_secs(2)).duration_since(Instant::now()),
            );
            stop.store(true, Ordering::Relaxed);
            let outcome = sampler.join().expect("the sampler does not panic");
            (restart, outcome)
        });
        let (total, longest, first_fenced, other) = outcome;
        let killed = killed_at.lock().unwrap().expect("set");
        // The deadline in force at the kill (the last renewal sent before
        // it, plus the TTL less the margin), and the first renewal answered
        // after it: how much of the deadline the restart left.
        let renewals = extended.lock().unwrap().clone();
        let deadline = renewals
            .iter()
            .filter(|(sent, _)| *sent < killed)
            .map(|(sent, _)| *sent + TTL - TTL / 5)
            .max();
        let again = renewals
            .iter()
            .filter(|(sent, _)| *sent > killed)
            .map(|(_, answered)| *answered)
            .min();
        let resumed = match (deadline, again) {
            (Some(deadline), Some(again)) => {
                let after = (again - killed).as_secs_f64() * 1e3;
                left.push(deadline.saturating_duration_since(again));
                format!(
                    "renewed again {after:.0} ms after the kill, {:.0} ms before the deadline",
                    (deadline.saturating_duration_since(again)).as_secs_f64() * 1e3
                )
            }
            _ => "no renewal after the kill".into(),
        };
        let line = format!(
            "\n  {which:?} restart {}: killed {:.0} ms into the renewal interval; restart took \
             {:.0} ms; fenced {:.0} ms in all (longest {:.0} ms), first {}; {resumed}; {} renewals failed; other errors: {other}",
            trial + 1,
            offset.as_secs_f64() * 1e3,
            restart.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3,
            longest.as_secs_f64() * 1e3,
            match first_fenced {
                Some(t) if t >= killed =>
                    format!("{:.0} ms after the kill", (t - killed).as_secs_f64() * 1e3),
                Some(t) => format!("{:.0} ms before the kill", (killed - t).as_secs_f64() * 1e3),
                None => "never".into(),
            },
            failed.load(Ordering::Relaxed),
        );
        eprint!("{line}");
        lines += &line;
        took.push(restart);
        fenced.push(total);
        drop(generator);
    }
    eprintln!();
    lines += &format!(
        "\n  {which:?}: deadline left when a renewal went through again, median / min: {}",
        median_min(&left)
    );
    Ok((took, fenced, lines))
}

/// User and system CPU time of a process (`own`), and of its children it
/// has waited for (`reaped`), from /proc/<pid>/stat, in seconds.
struct Cpu {
    own: f64,
    reaped: f64,
}

fn cpu_of(pid: u32) -> Result<Cpu, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').ok_or("malformed stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime, stime, cutime and cstime are fields 14 to 17 of the whole line.
    let tick = |i: usize| -> Result<f64, Box<dyn std::error::Error>> {
        Ok(fields.get(i).ok_or("short stat")?.parse::<u64>()? as f64)
    };
    let per_second = clock_ticks()?;
    Ok(Cpu {
        own: (tick(11)? + tick(12)?) / per_second,
        reaped: (tick(13)? + tick(14)?) / per_second,
    })
}

fn clock_ticks() -> Result<f64, Box<dyn std::error::Error>> {
    Ok(String::from_utf8(
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()?
            .stdout,
    )?
    .trim()
    .parse()?)
}

/// The processes whose parent is `parent` (PostgreSQL's backends and
/// helpers are the postmaster's children).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

/// One plain request over a socket, the whole reply.
fn ask(addr: SocketAddr, request: &[u8]) -> Result<String, Box<dyn std::error::Error>> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_millis(500)))?;
    s.write_all(request)?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
        }
    }
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// Renewal requests the server has handled: etcd's gRPC counters for
/// transactions and keep-alive messages, Redis' script calls.
fn renewal_requests(server: &Server) -> Result<u64, Box<dyn std::error::Error>> {
    match server.kind {
        Kind::Etcd => {
            let metrics = ask(server.addr(), b"GET /metrics HTTP/1.0\r\n\r\n")?;
            let mut total = 0.0;
            for line in metrics.lines() {
                let counted = (line.starts_with("grpc_server_handled_total{")
                    && line.contains("grpc_method=\"Txn\""))
                    || (line.starts_with("grpc_server_msg_received_total{")
                        && line.contains("grpc_method=\"LeaseKeepAlive\""));
                if counted {
                    total += line.rsplit(' ').next().unwrap_or("0").parse::<f64>()?;
                }
            }
            Ok(total as u64)
        }
        Kind::Redis => {
            let info = ask(server.addr(), b"INFO commandstats\r\n")?;
            let calls = info
                .lines()
                .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
                .filter_map(|l| {
                    l.split("calls=")
                        .nth(1)?
                        .split(',')
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .sum();
            Ok(calls)
        }
    }
}

fn etcd_mean_fsync_ms(db: &Db) -> Option<f64> {
    let metrics = ask(db.addr(), b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
    let value = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
    };
    let sum = value("etcd_disk_wal_fsync_duration_seconds_sum ")?;
    let count = value("etcd_disk_wal_fsync_duration_seconds_count ")?;
    Some(sum / count * 1e3)
}

fn redis_usec_per_call(db: &Db) -> Option<f64> {
    let info = ask(db.addr(), b"INFO commandstats\r\n").ok()?;
    let line = info.lines().find(|l| l.starts_with("cmdstat_evalsha:"))?;
    line.split("usec_per_call=")
        .nth(1)?
        .split(',')
        .next()?
        .parse()
        .ok()
}
