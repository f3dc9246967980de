//! The gRPC load client of the server bench: one client for flakeid-server
//! and ferroid's server (`ferroid-tonic-server`) alike.
//!
//! Both servers' `StreamIds` take `count` in field 1 and answer chunks whose
//! field 1 holds the IDs as 8-byte little-endian integers (flakeid: a packed
//! `repeated fixed64`; ferroid: `bytes packed_ids`, the same bytes), so the
//! client sends the same request to either and decodes the answers the same
//! way; only the method path differs.
//!
//! ```text
//! cargo run --release -p flakeid-server --example load -- \
//!     --addr 127.0.0.1:50051 --target flakeid --call stream --count 4096 --chunk 4096 \
//!     --concurrency 4 --duration 5s [--server-pid PID] [--check]
//! ```
//!
//! - `--call stream`: each of `--concurrency` tasks calls `StreamIds(count)`
//!   in a loop and counts IDs; `--chunk` is sent as flakeid's `chunk_size`
//!   (ferroid ignores the field: its chunk is the server's `IDS_PER_CHUNK`).
//! - `--call one`: single-ID calls in a loop per task, their latencies
//!   recorded: flakeid's `NextId`; ferroid has no unary call, so for it a
//!   single ID is `StreamIds(count = 1)`.
//! - `--server-pid`: the server's CPU time over the run (from
//!   `/proc/<pid>/stat`), reported per million IDs.
//!
//! Prints one JSON object: IDs/s, calls/s, latency percentiles (µs), CPU.

use std::time::{Duration, Instant};

use bytes::Buf;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};

/// `StreamIdsRequest`, as both servers read it (ferroid reads field 1 only).
#[derive(Clone, PartialEq, prost::Message)]
struct StreamIdsRequest {
    #[prost(uint64, tag = "1")]
    count: u64,
    #[prost(string, tag = "2")]
    generator: String,
    #[prost(uint32, tag = "3")]
    chunk_size: u32,
}

/// A chunk, as both servers write it: field 1, packed little-endian u64s.
#[derive(Clone, PartialEq, prost::Message)]
struct IdChunk {
    #[prost(bytes = "bytes", tag = "1")]
    packed_ids: bytes::Bytes,
}

#[derive(Clone, PartialEq, prost::Message)]
struct NextIdRequest {
    #[prost(string, tag = "1")]
    generator: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct NextIdResponse {
    #[prost(fixed64, tag = "1")]
    id: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Flakeid,
    Ferroid,
}

impl Target {
    fn stream_path(self) -> &'static str {
        match self {
            Target::Flakeid => "/flakeid.v1.IdGenerator/StreamIds",
            Target::Ferroid => "/ferroid.IdGenerator/StreamIds",
        }
    }
}

#[derive(Clone)]
struct Options {
    addr: String,
    target: Target,
    call: String,
    count: u64,
    chunk: u32,
    concurrency: usize,
    duration: Duration,
    server_pid: Option<u32>,
    check: bool,
    connections: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        addr: "127.0.0.1:50051".into(),
        target: Target::Flakeid,
        call: "stream".into(),
        count: 4096,
        chunk: 0,
        concurrency: 4,
        duration: Duration::from_secs(5),
        server_pid: None,
        check: false,
        connections: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--check" {
            o.check = true;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: {v:?} is not a number"))
        };
        match flag.as_str() {
            "--addr" => o.addr = value,
            "--target" => {
                o.target = match value.as_str() {
                    "flakeid" => Target::Flakeid,
                    "ferroid" => Target::Ferroid,
                    _ => return Err("--target is flakeid or ferroid".into()),
                }
            }
            "--call" => o.call = value,
            "--count" => o.count = number(&value)?,
            "--chunk" => o.chunk = number(&value)? as u32,
            "--concurrency" => o.concurrency = number(&value)? as usize,
            "--connections" => o.connections = number(&value)?.max(1) as usize,
            "--duration" => {
                o.duration = Duration::from_secs_f64(
                    value
                        .trim_end_matches('s')
                        .parse::<f64>()
                        .map_err(|_| "--duration is seconds, like 5s".to_string())?,
                )
            }
            "--server-pid" => o.server_pid = Some(number(&value)? as u32),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if o.call != "stream" && o.call != "one" {
        return Err("--call is stream or one".into());
    }
    Ok(o)
}

/// The process's user + system CPU time, from /proc/<pid>/stat.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which is in parentheses and may hold
    // spaces): utime and stime are the 12th and 13th of them.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on Linux for every architecture this runs on.
    Some(Duration::from_millis(ticks * 10))
}

#[derive(Default)]
struct Tally {
    ids: u64,
    calls: u64,
    errors: u64,
    latencies_ns: Vec<u64>,
}

async fn worker(channel: Channel, o: &Options, until: Instant) -> Result<Tally, String> {
    let mut grpc = tonic::client::Grpc::new(channel);
    let mut t = Tally::default();
    let stream_path = PathAndQuery::from_static(o.target.stream_path());
    let one_path = PathAndQuery::from_static("/flakeid.v1.IdGenerator/NextId");
    while Instant::now() < until {
        grpc.ready().await.map_err(|e| e.to_string())?;
        let start = Instant::now();
        if o.call == "one" && o.target == Target::Flakeid {
            let reply = grpc
                .unary(
                    tonic::Request::new(NextIdRequest::default()),
                    one_path.clone(),
                    tonic_prost::ProstCodec::<NextIdRequest, NextIdResponse>::default(),
                )
                .await;
            match reply {
                Ok(r) => {
                    std::hint::black_box(r.into_inner().id);
                    t.ids += 1;
                }
                Err(_) => t.errors += 1,
            }
        } else {
            let count = if o.call == "one" { 1 } else { o.count };
            let request = StreamIdsRequest {
                count,
                generator: String::new(),
                chunk_size: o.chunk,
            };
            let reply = grpc
                .server_streaming(
                    tonic::Request::new(request),
                    stream_path.clone(),
                    tonic_prost::ProstCodec::<StreamIdsRequest, IdChunk>::default(),
                )
                .await;
            let mut stream = match reply {
                Ok(r) => r.into_inner(),
                Err(_) => {
                    t.errors += 1;
                    continue;
                }
            };
            let mut got = 0;
            let mut last = 0u64;
            loop {
                match stream.message().await {
                    Ok(Some(chunk)) => {
                        let mut bytes = chunk.packed_ids;
                        got += bytes.len() as u64 / 8;
                        if o.check {
                            while bytes.remaining() >= 8 {
                                let id = bytes.get_u64_le();
                                if id <= last {
                                    return Err(format!("{id} after {last} in one stream"));
                                }
                                last = id;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(_) => {
                        t.errors += 1;
                        break;
                    }
                }
            }
            if got != count && t.errors == 0 {
                return Err(format!("asked for {count} IDs, got {got}"));
            }
            t.ids += got;
        }
        t.calls += 1;
        if o.call == "one" {
            t.latencies_ns.push(start.elapsed().as_nanos() as u64);
        }
    }
    Ok(t)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options()?;
    let mut channels = Vec::new();
    for _ in 0..o.connections {
        let channel = Endpoint::from_shared(format!("http://{}", o.addr))?
            .tcp_nodelay(true)
            .initial_stream_window_size(1 << 20)
            .initial_connection_window_size(2 << 20)
            .connect()
            .await?;
        channels.push(channel);
    }
    // A short warm-up, not counted.
    {
        let warm = Options {
            duration: Duration::from_millis(300),
            ..o.clone()
        };
        let until = Instant::now() + warm.duration;
        let _ = worker(channels[0].clone(), &warm, until).await?;
    }
    let cpu_before = o.server_pid.and_then(cpu_time);
    let start = Instant::now();
    let until = start + o.duration;
    let o = std::sync::Arc::new(o);
    let mut tasks = Vec::new();
    for i in 0..o.concurrency {
        let channel = channels[i % channels.len()].clone();
        let o = o.clone();
        tasks.push(tokio::spawn(
            async move { worker(channel, &o, until).await },
        ));
    }
    let mut total = Tally::default();
    for task in tasks {
        let t = task.await??;
        total.ids += t.ids;
        total.calls += t.calls;
        total.errors += t.errors;
        total.latencies_ns.extend(t.latencies_ns);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_after = o.server_pid.and_then(cpu_time);
    total.latencies_ns.sort_unstable();
    let cpu = match (cpu_before, cpu_after) {
        (Some(a), Some(b)) if total.ids > 0 => {
            format!(
                "{:.1}",
                (b - a).as_secs_f64() * 1000.0 / (total.ids as f64 / 1e6)
            )
        }
        _ => "null".into(),
    };
    let target = match o.target {
        Target::Flakeid => "flakeid",
        Target::Ferroid => "ferroid",
    };
    println!(
        "{{\"target\":\"{target}\",\"call\":\"{}\",\"count\":{},\"chunk\":{},\"concurrency\":{},\"seconds\":{elapsed:.2},\"ids_per_s\":{:.0},\"calls_per_s\":{:.0},\"errors\":{},\"p50_us\":{:.1},\"p99_us\":{:.1},\"p999_us\":{:.1},\"server_cpu_ms_per_million_ids\":{cpu}}}",
        o.call,
        o.count,
        o.chunk,
        o.concurrency,
        total.ids as f64 / elapsed,
        total.calls as f64 / elapsed,
        total.errors,
        percentile(&total.latencies_ns, 0.50),
        percentile(&total.latencies_ns, 0.99),
        percentile(&total.latencies_ns, 0.999),
    );
    Ok(())
}
