//! The generator process (`fault-worker`): builds a leased generator,
//! calls `try_next_id` in a loop, appends every ID it is handed to its
//! file, and prints [`Line`]s: built, fenced (with when the fence closed,
//! from `health()`), issuing again, the lease keeper's events, progress.
//! It stops when its time is up or its standard input closes (the
//! runner's way to stop it cleanly: the generator is dropped and the node
//! id released).
//!
//! The planted bugs ([`Plant`]) are here, not in the library: the fault
//! test must catch them.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use flakeid::{BuildError, Event, GenerateError, Generator, Health, Id, Lease};

use crate::record::{Line, What};
use crate::{NODE_IDS, layout, mono_ns};

/// A bug the worker plants on purpose, for tests that expect the checker
/// to catch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// An honest worker.
    None,
    /// "A fence that stays open after a failed renewal": after the leased
    /// generator first answers `Fenced`, the worker drops it and keeps
    /// issuing under the node id it held, with an unleased generator (what
    /// a library without fencing would do).
    OpenFence,
    /// "A claim that ignores the predecessor's deadline": as soon as the
    /// leased generator has claimed a node id, the worker issues under it
    /// with an unleased generator, waiting for nothing (the mark, the
    /// previous holder's deadline). The leased generator stays alive, so
    /// the claim is renewed.
    EagerClaim,
}

impl Plant {
    pub fn name(self) -> &'static str {
        match self {
            Plant::None => "none",
            Plant::OpenFence => "open-fence",
            Plant::EagerClaim => "eager-claim",
        }
    }

    pub fn parse(s: &str) -> Option<Plant> {
        [Plant::None, Plant::OpenFence, Plant::EagerClaim]
            .into_iter()
            .find(|p| p.name() == s)
    }
}

/// Where the worker's lease lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// `Lease::etcd` with these endpoints.
    Etcd(Vec<String>),
    /// `Lease::redis` with this URL.
    Redis(String),
    /// Redis behind these sentinels, monitoring this master name. Until
    /// flakeid has a lease that follows Sentinel, the worker asks the
    /// sentinels for the primary once, when it builds, and uses
    /// `Lease::redis` on it: the lease does not follow a failover.
    Sentinel(Vec<String>, String),
}

/// The worker's command line.
#[derive(Debug, Clone)]
pub struct Args {
    pub store: Store,
    pub prefix: String,
    pub ttl: Duration,
    /// The worker stops after this long (and when its stdin closes).
    pub run_for: Duration,
    pub ids: std::path::PathBuf,
    pub plant: Plant,
    /// How its wall clock is skewed (informational: libfaketime does it).
    pub skew_ms: i64,
    /// `try_next_id` calls per millisecond (the loop sleeps 1 ms between
    /// bursts).
    pub burst: u32,
    /// The node ids to lease (default [`NODE_IDS`]).
    pub nodes: RangeInclusive<u64>,
}

impl Args {
    /// The command line for [`Args::parse`].
    pub fn to_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        match &self.store {
            Store::Etcd(endpoints) => {
                v.extend(["--etcd".into(), endpoints.join(",")]);
            }
            Store::Redis(url) => v.extend(["--redis".into(), url.clone()]),
            Store::Sentinel(sentinels, master) => {
                v.extend(["--sentinels".into(), sentinels.join(",")]);
                v.extend(["--master".into(), master.clone()]);
            }
        }
        v.extend(["--prefix".into(), self.prefix.clone()]);
        v.extend(["--ttl-ms".into(), self.ttl.as_millis().to_string()]);
        v.extend(["--run-ms".into(), self.run_for.as_millis().to_string()]);
        v.extend(["--ids".into(), self.ids.display().to_string()]);
        v.extend(["--plant".into(), self.plant.name().into()]);
        v.extend(["--skew-ms".into(), self.skew_ms.to_string()]);
        v.extend(["--burst".into(), self.burst.to_string()]);
        v.extend([
            "--nodes".into(),
            format!("{}..={}", self.nodes.start(), self.nodes.end()),
        ]);
        v
    }

    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
        let mut args = args.into_iter();
        let (mut etcd, mut redis, mut sentinels, mut master) = (None, None, None, None);
        let (mut prefix, mut ttl_ms, mut run_ms, mut ids) = (None, 3_000u64, 30_000u64, None);
        let (mut plant, mut skew_ms, mut burst) = (Plant::None, 0i64, 4u32);
        let mut nodes = NODE_IDS;
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--etcd" => etcd = Some(value.split(',').map(str::to_owned).collect()),
                "--redis" => redis = Some(value),
                "--sentinels" => {
                    sentinels = Some(value.split(',').map(str::to_owned).collect::<Vec<_>>())
                }
                "--master" => master = Some(value),
                "--prefix" => prefix = Some(value),
                "--ttl-ms" => ttl_ms = value.parse().map_err(|e| bad(&e))?,
                "--run-ms" => run_ms = value.parse().map_err(|e| bad(&e))?,
                "--ids" => ids = Some(value.into()),
                "--plant" => plant = Plant::parse(&value).ok_or_else(|| bad(&"unknown"))?,
                "--skew-ms" => skew_ms = value.parse().map_err(|e| bad(&e))?,
                "--burst" => burst = value.parse().map_err(|e| bad(&e))?,
                "--nodes" => {
                    let (a, b) = value.split_once("..=").ok_or_else(|| bad(&"not a..=b"))?;
                    nodes = a.parse().map_err(|e| bad(&e))?..=b.parse().map_err(|e| bad(&e))?;
                }
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        let store = match (etcd, redis, sentinels) {
            (Some(e), None, None) => Store::Etcd(e),
            (None, Some(r), None) => Store::Redis(r),
            (None, None, Some(s)) => Store::Sentinel(s, master.unwrap_or("flakeid".into())),
            _ => return Err("one of --etcd, --redis, --sentinels".into()),
        };
        Ok(Args {
            store,
            prefix: prefix.ok_or("--prefix")?,
            ttl: Duration::from_millis(ttl_ms),
            run_for: Duration::from_millis(run_ms),
            ids: ids.ok_or("--ids")?,
            plant,
            skew_ms,
            burst,
            nodes,
        })
    }
}

/// Prints one line on stdout, at once (the runner waits on them).
fn say(what: What) {
    let line = Line::now(what);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The lease the worker's generator is built with.
fn lease(args: &Args) -> Result<Lease, String> {
    let lease = match &args.store {
        Store::Etcd(endpoints) => Lease::etcd(endpoints.clone()),
        Store::Redis(url) => Lease::redis(url.clone()),
        Store::Sentinel(sentinels, master) => {
            let primary = sentinels
                .iter()
                .filter_map(|s| s.parse().ok())
                .find_map(|s| primary_of(s, master))
                .ok_or("no sentinel named a primary")?;
            Lease::redis(format!("redis://{primary}/"))
        }
    };
    Ok(lease
        .prefix(&args.prefix)
        .ttl(args.ttl)
        .node_ids(args.nodes.clone()))
}

fn primary_of(sentinel: std::net::SocketAddr, master: &str) -> Option<String> {
    use flakeid_test_servers::{Resp, redis_command};
    let reply = redis_command(sentinel, &["SENTINEL", "get-master-addr-by-name", master])?;
    let Resp::Array(Some(items)) = reply else {
        return None;
    };
    Some(format!(
        "{}:{}",
        items.first()?.text()?,
        items.get(1)?.text()?
    ))
}

/// Reports the lease keeper's events (renewal failures say which request
/// failed and why).
fn on_event(event: &Event) {
    match event {
        Event::LeaseClaimed { .. }
        | Event::LeaseRenewalFailed { .. }
        | Event::Fenced { .. }
        | Event::LeaseReopened { .. }
        | Event::LeaseRotated { .. }
        | Event::IdsDropped { .. } => say(What::Lease {
            event: event.to_string(),
        }),
        _ => {}
    }
}

/// Where IDs come from now.
enum Source {
    Leased(Box<Generator>),
    /// A planted bug's generator, and the leased one, kept alive (or not)
    /// for its claim alone.
    Unleased(Box<Generator>, #[allow(dead_code)] Option<Box<Generator>>),
}

fn unleased(node: u64) -> Generator {
    Generator::builder(layout())
        .node_id(node)
        .build()
        .expect("an unleased generator")
}

/// The worker's main: runs until its time is up or stdin closes.
pub fn main(args: Args) {
    say(What::Start {
        pid: std::process::id(),
        plant: args.plant.name().into(),
        skew_ms: args.skew_ms,
    });
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            stop.store(true, Ordering::Relaxed);
        });
    }
    let end_at = Instant::now() + args.run_for;
    let running = || !stop.load(Ordering::Relaxed) && Instant::now() < end_at;
    let mut file =
        BufWriter::with_capacity(1 << 20, File::create(&args.ids).expect("the ids file"));
    let layout = layout();
    let node_of = |id: Id| layout.decode(id).map_or(u64::MAX, |d| d.node_id());

    // Build, retrying while it fails (all node ids held, store unreachable).
    let generator = loop {
        if !running() {
            say(What::End { ids: 0 });
            return;
        }
        let built = lease(&args).map_err(|e| e.to_string()).and_then(|lease| {
            Generator::builder(layout.clone())
                .lease(lease)
                .on_event(on_event)
                .build()
                .map_err(|e: BuildError| e.to_string())
        });
        match built {
            Ok(g) => break g,
            Err(reason) => {
                say(What::BuildFailed { reason });
                thread::sleep(Duration::from_millis(250));
            }
        }
    };
    let mut node = generator.node_id();
    say(What::Built { node });
    let mut source = if args.plant == Plant::EagerClaim {
        say(What::Unleased { node });
        Source::Unleased(Box::new(unleased(node)), Some(Box::new(generator)))
    } else {
        Source::Leased(Box::new(generator))
    };

    let mut count = 0u64;
    let mut last_ms = 0u64;
    let mut fenced = false;
    let mut last_error: Option<String> = None;
    let mut next_progress = Instant::now();
    while running() {
        for _ in 0..args.burst {
            let answer = match &source {
                Source::Leased(g) | Source::Unleased(g, _) => g.try_next_id(),
            };
            match answer {
                Ok(id) => {
                    file.write_all(&id.to_u64().to_le_bytes())
                        .expect("writing the ids file");
                    count += 1;
                    let n = node_of(id);
                    if fenced || n != node {
                        say(What::Issuing { node: n });
                        fenced = false;
                    }
                    node = n;
                    last_ms = layout.decode(id).map_or(0, |d| d.unix_ms());
                    last_error = None;
                }
                Err(GenerateError::Fenced) => {
                    if !fenced {
                        fenced = true;
                        let Source::Leased(g) = &source else {
                            unreachable!("an unleased generator is never fenced")
                        };
                        let now = mono_ns();
                        let since_ns = match g.health() {
                            Health::Fenced { closed_for } => now.saturating_sub(
                                u64::try_from(closed_for.as_nanos()).unwrap_or(u64::MAX),
                            ),
                            _ => now,
                        };
                        say(What::Fenced { node, since_ns });
                        if args.plant == Plant::OpenFence {
                            // The planted bug: carry on under the node id
                            // without the lease.
                            source = Source::Unleased(Box::new(unleased(node)), None);
                            say(What::Unleased { node });
                            fenced = false;
                        }
                    }
                    break;
                }
                Err(e) => {
                    let error = e.to_string();
                    if last_error.as_ref() != Some(&error) {
                        say(What::Error {
                            error: error.clone(),
                        });
                        last_error = Some(error);
                    }
                    break;
                }
            }
        }
        if Instant::now() >= next_progress {
            file.flush().expect("writing the ids file");
            say(What::Progress {
                ids: count,
                node,
                last_ms,
            });
            next_progress = Instant::now() + Duration::from_millis(250);
        }
        thread::sleep(Duration::from_millis(1));
    }
    file.flush().expect("writing the ids file");
    // Dropped here: the node id is released (within one request timeout).
    drop(source);
    say(What::End { ids: count });
}
