//! Measures node-id leases on real servers and prints the figures of
//! `benches/results/lease.md`: claim latency, renewal traffic per node, the
//! server's CPU per renewal and the largest fleet one server carries at the
//! chosen TTL, and a worked example for 1,024 nodes.
//!
//! ```sh
//! cargo run --release --features etcd,redis,cli --example lease_measure
//! ```
//!
//! Starts its own etcd (Debian's `etcd-server`) and `redis-server` on
//! 127.0.0.1, with data on disk (the system temp directory, or
//! `FLAKEID_MEASURE_DIR`). `FLAKEID_MEASURE_SECONDS` sets each measuring
//! window (default 10). Linux only (it reads the servers' CPU time from
//! `/proc`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use flakeid::report::{cpu_model, quantile};
use flakeid::{Generator, Layout, Lease};
use flakeid_test_servers::{Kind, Proxy, Server, unique_prefix, url_at};

/// The TTL the figures are for.
const TTL: Duration = Duration::from_secs(10);
/// The share of one core a server may spend on renewals in the fleet figure.
const CPU_BUDGET: f64 = 0.5;
const FLEET: f64 = 1024.0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base =
        std::env::var_os("FLAKEID_MEASURE_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let window = Duration::from_secs(
        std::env::var("FLAKEID_MEASURE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10),
    );
    println!(
        "machine: {} cores, {}; data in {}; windows of {window:?}\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model(),
        base.display()
    );
    let mut rows = Vec::new();
    for kind in [Kind::Etcd, Kind::Redis] {
        let server = Server::start_in(kind, base.clone());
        rows.push(measure(&server, window)?);
    }
    let renewals_per_node = 3.0 / TTL.as_secs_f64();
    println!("| | etcd 3.4 | Redis 7.0 |");
    println!("|---|---|---|");
    let row = |name: &str, f: &dyn Fn(&Measured) -> String| {
        println!("| {name} | {} | {} |", f(&rows[0]), f(&rows[1]));
    };
    row("claim (build), median", &|m| ms(m.claim_median));
    row("claim (build), 99th percentile", &|m| ms(m.claim_p99));
    row("release (drop), median", &|m| ms(m.release_median));
    row("requests per renewal", &|m| {
        m.requests_per_renewal.to_string()
    });
    row("bytes per renewal (both ways, TCP payload)", &|m| {
        format!("{:.0}", m.bytes_per_renewal)
    });
    row(&format!("per node at TTL {TTL:?}: requests/s"), &|m| {
        format!("{:.2}", m.requests_per_renewal as f64 * renewals_per_node)
    });
    row(&format!("per node at TTL {TTL:?}: bytes/s"), &|m| {
        format!("{:.0}", m.bytes_per_renewal * renewals_per_node)
    });
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
    row("1,024 nodes: renewals/s", &|_| {
        format!("{:.0}", FLEET * renewals_per_node)
    });
    row("1,024 nodes: requests/s", &|m| {
        format!(
            "{:.0}",
            FLEET * renewals_per_node * m.requests_per_renewal as f64
        )
    });
    row("1,024 nodes: traffic", &|m| {
        format!(
            "{:.1} KB/s",
            FLEET * renewals_per_node * m.bytes_per_renewal / 1000.0
        )
    });
    row("1,024 nodes: server CPU", &|m| {
        format!(
            "{:.1}% of a core",
            FLEET * renewals_per_node * m.cpu_per_renewal * 100.0
        )
    });
    for m in &rows {
        if !m.note.is_empty() {
            println!("\n{}", m.note);
        }
    }
    Ok(())
}

struct Measured {
    claim_median: Duration,
    claim_p99: Duration,
    release_median: Duration,
    requests_per_renewal: u32,
    bytes_per_renewal: f64,
    /// Server CPU seconds per renewal.
    cpu_per_renewal: f64,
    note: String,
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// A lease on the server of `kind` at `addr`; callers choose its TTL.
fn lease_at(kind: Kind, addr: SocketAddr, prefix: &str) -> Lease {
    match kind {
        Kind::Etcd => Lease::etcd([url_at(kind, addr)]),
        Kind::Redis => Lease::redis(url_at(kind, addr)),
    }
    .prefix(prefix)
    .connect_timeout(Duration::from_secs(5))
}

fn lease(server: &Server, prefix: &str) -> Lease {
    lease_at(server.kind, server.addr(), prefix)
        .ttl(TTL)
        .safety_margin(TTL / 5)
}

fn measure(server: &Server, window: Duration) -> Result<Measured, Box<dyn std::error::Error>> {
    let name = format!("{:?}", server.kind);
    eprintln!("{name}: claim latency");
    // Claim latency: build (connect, claim, record the first ceiling) and
    // drop (record the exact mark, delete), one generator at a time.
    let prefix = unique_prefix("claims");
    let (mut claim, mut release) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let begun = Instant::now();
        let generator = Generator::builder(Layout::twitter())
            .lease(lease(server, &prefix))
            .build()?;
        claim.push(begun.elapsed());
        generator.next_id();
        let begun = Instant::now();
        drop(generator);
        release.push(begun.elapsed());
    }

    eprintln!("{name}: renewal traffic");
    // Traffic per renewal: one generator behind a counting proxy, with a
    // short TTL so that a window holds many renewals.
    let short = Duration::from_secs(3);
    let proxy = Proxy::new(server.addr());
    let generator = Generator::builder(Layout::twitter())
        .lease(
            lease_at(server.kind, proxy.addr(), &unique_prefix("traffic"))
                .ttl(short)
                .safety_margin(short / 5),
        )
        .build()?;
    let bytes = || proxy.sent.load(Ordering::Relaxed) + proxy.received.load(Ordering::Relaxed);
    // Let the first renewal open what it opens (etcd's keep-alive stream).
    std::thread::sleep(short / 3 + short / 6);
    let before = bytes();
    std::thread::sleep(window.max(short * 2));
    let renewals = (window.max(short * 2).as_secs_f64() / (short.as_secs_f64() / 3.0)).round();
    let bytes_per_renewal = (bytes() - before) as f64 / renewals;
    drop(generator);
    drop(proxy);

    eprintln!("{name}: server CPU per renewal");
    // Server CPU per renewal: many keepers renewing at a known rate while
    // the server's CPU time is read from /proc; renewals counted by the
    // server itself.
    let keepers = 200;
    let prefix = unique_prefix("cpu");
    let fast = Duration::from_secs(1);
    let generators: Vec<Generator> = (0..keepers)
        .map(|_| {
            Generator::builder(Layout::twitter())
                .lease(
                    lease_at(server.kind, server.addr(), &prefix)
                        .ttl(fast)
                        .safety_margin(fast / 5),
                )
                .build()
        })
        .collect::<Result<_, _>>()?;
    std::thread::sleep(fast);
    let pid = server.pid().ok_or("server not running")?;
    let (cpu0, count0) = (cpu_seconds(pid)?, renewal_requests(server)?);
    std::thread::sleep(window);
    let (cpu1, count1) = (cpu_seconds(pid)?, renewal_requests(server)?);
    drop(generators);
    let requests_per_renewal = match server.kind {
        Kind::Etcd => 2,  // a transaction (the mark) and a keep-alive
        Kind::Redis => 1, // one script
    };
    let renewals = (count1 - count0) as f64 / f64::from(requests_per_renewal);
    let cpu_per_renewal = (cpu1 - cpu0) / renewals;
    let note = match server.kind {
        Kind::Etcd => format!(
            "etcd: {renewals:.0} renewals by {keepers} keepers in {window:?}; \
             mean WAL fsync {:.2} ms over the run (each mark is a Raft write)",
            etcd_mean_fsync_ms(server).unwrap_or(f64::NAN)
        ),
        Kind::Redis => format!(
            "redis: {renewals:.0} renewals by {keepers} keepers in {window:?}; \
             Redis' own count: {:.1} µs per script call (appendfsync always)",
            redis_usec_per_call(server).unwrap_or(f64::NAN)
        ),
    };
    let quantile = |values: &mut [Duration], q| quantile(values, q).expect("200 of them");
    Ok(Measured {
        claim_median: quantile(&mut claim, 0.5),
        claim_p99: quantile(&mut claim, 0.99),
        release_median: quantile(&mut release, 0.5),
        requests_per_renewal,
        bytes_per_renewal,
        cpu_per_renewal,
        note,
    })
}

/// User plus system CPU time of a process, from /proc/<pid>/stat.
fn cpu_seconds(pid: u32) -> Result<f64, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').ok_or("malformed stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line.
    let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    let per_second: f64 = String::from_utf8(
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()?
            .stdout,
    )?
    .trim()
    .parse()?;
    Ok(ticks as f64 / per_second)
}

/// One plain request over a socket, the whole reply.
fn ask(server: &Server, request: &[u8]) -> Result<String, Box<dyn std::error::Error>> {
    let mut s = TcpStream::connect(server.addr())?;
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
            let metrics = ask(server, b"GET /metrics HTTP/1.0\r\n\r\n")?;
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
            let info = ask(server, b"INFO commandstats\r\n")?;
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

fn etcd_mean_fsync_ms(server: &Server) -> Option<f64> {
    let metrics = ask(server, b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
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

fn redis_usec_per_call(server: &Server) -> Option<f64> {
    let info = ask(server, b"INFO commandstats\r\n").ok()?;
    let line = info.lines().find(|l| l.starts_with("cmdstat_evalsha:"))?;
    line.split("usec_per_call=")
        .nth(1)?
        .split(',')
        .next()?
        .parse()
        .ok()
}
