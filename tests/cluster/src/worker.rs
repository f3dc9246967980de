//! The generator process (`fault-worker`): builds a leased generator and
//! asks it for IDs with `try_next_id` every millisecond, a few at a time
//! ([`Args::per_ms`]), for as long as it runs: densely enough that no
//! millisecond it could issue in goes unvisited, and bounded (the IDs of
//! a long run fit on disk). Every ID goes to its file as an
//! [`Issued`] record (when the call started and
//! ended, on CLOCK_MONOTONIC); it prints [`Line`]s: built, fenced (with
//! when the fence closed, from `health()`), issuing again, each extension
//! of its lease (when the keeper sent the request and when the answer
//! came, from the lease's own event), the keeper's other events,
//! progress. It stops when its time is up or its standard input closes
//! (the runner's way to stop it cleanly: the generator is dropped and the
//! node id released).
//!
//! Its time is counted from its build, so every worker that gets a node id
//! has its whole lifetime to use it.
//!
//! Planted bugs are the library's (`flakeid::plant`, built only with
//! `--cfg flakeid_plant`): `--plant NAME` puts one into the worker's lease.
//! A worker built without the cfg refuses any plant but `none`.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use flakeid::{BuildError, Event, GenerateError, Generator, Health, Id, Lease};

use crate::record::{Issued, Line, What};
use crate::{NODE_IDS, layout, mono_ns};

/// Where the worker's lease lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// `Lease::etcd` with these endpoints.
    Etcd(Vec<String>),
    /// `Lease::redis` with this URL.
    Redis(String),
    /// `Lease::redis_sentinel` with these sentinels (`host:port`) and this
    /// master name: it follows the primary through failovers.
    Sentinel(Vec<String>, String),
    /// `Lease::postgres` with this URL (a primary and its standby, with
    /// `target_session_attrs=read-write`: it follows a promotion).
    Postgres(String),
    /// `Lease::mysql` with this URL.
    Mysql(String),
}

/// The worker's command line.
#[derive(Debug, Clone)]
pub struct Args {
    pub store: Store,
    pub prefix: String,
    pub ttl: Duration,
    /// The lease's safety margin (`None`: the library's default).
    pub margin: Option<Duration>,
    /// The worker stops this long after its generator is built (and when
    /// its stdin closes).
    pub run_for: Duration,
    pub ids: std::path::PathBuf,
    /// A planted bug's name (`flakeid::plant::Plant::from_name`), or
    /// `none`.
    pub plant: String,
    /// How its wall clock is skewed (informational: libfaketime does it).
    pub skew_ms: i64,
    /// `try_next_id` calls in each millisecond.
    pub per_ms: u32,
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
            Store::Postgres(url) => v.extend(["--postgres".into(), url.clone()]),
            Store::Mysql(url) => v.extend(["--mysql".into(), url.clone()]),
        }
        v.extend(["--prefix".into(), self.prefix.clone()]);
        v.extend(["--ttl-ms".into(), self.ttl.as_millis().to_string()]);
        if let Some(margin) = self.margin {
            v.extend(["--margin-ms".into(), margin.as_millis().to_string()]);
        }
        v.extend(["--run-ms".into(), self.run_for.as_millis().to_string()]);
        v.extend(["--ids".into(), self.ids.display().to_string()]);
        v.extend(["--plant".into(), self.plant.clone()]);
        v.extend(["--skew-ms".into(), self.skew_ms.to_string()]);
        v.extend(["--per-ms".into(), self.per_ms.to_string()]);
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
        let (mut plant, mut skew_ms, mut per_ms) = ("none".to_owned(), 0i64, 2u32);
        let mut margin = None;
        let mut nodes = NODE_IDS;
        let (mut postgres, mut mysql) = (None, None);
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
                "--postgres" => postgres = Some(value),
                "--mysql" => mysql = Some(value),
                "--prefix" => prefix = Some(value),
                "--ttl-ms" => ttl_ms = value.parse().map_err(|e| bad(&e))?,
                "--margin-ms" => {
                    margin = Some(Duration::from_millis(value.parse().map_err(|e| bad(&e))?))
                }
                "--run-ms" => run_ms = value.parse().map_err(|e| bad(&e))?,
                "--ids" => ids = Some(value.into()),
                "--plant" => plant = value,
                "--skew-ms" => skew_ms = value.parse().map_err(|e| bad(&e))?,
                "--per-ms" => per_ms = value.parse().map_err(|e| bad(&e))?,
                "--nodes" => {
                    let (a, b) = value.split_once("..=").ok_or_else(|| bad(&"not a..=b"))?;
                    nodes = a.parse().map_err(|e| bad(&e))?..=b.parse().map_err(|e| bad(&e))?;
                }
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        let store = match (etcd, redis, sentinels, postgres, mysql) {
            (Some(e), None, None, None, None) => Store::Etcd(e),
            (None, Some(r), None, None, None) => Store::Redis(r),
            (None, None, Some(s), None, None) => {
                Store::Sentinel(s, master.unwrap_or("flakeid".into()))
            }
            (None, None, None, Some(url), None) => Store::Postgres(url),
            (None, None, None, None, Some(url)) => Store::Mysql(url),
            _ => return Err("one of --etcd, --redis, --sentinels, --postgres, --mysql".into()),
        };
        let args = Args {
            store,
            prefix: prefix.ok_or("--prefix")?,
            ttl: Duration::from_millis(ttl_ms),
            margin,
            run_for: Duration::from_millis(run_ms),
            ids: ids.ok_or("--ids")?,
            plant,
            skew_ms,
            per_ms,
            nodes,
        };
        // Refused here, before anything starts.
        let _ = args.lease()?;
        Ok(args)
    }

    /// The lease the worker's generator is built with, its plant in.
    fn lease(&self) -> Result<Lease, String> {
        let lease = match &self.store {
            Store::Etcd(endpoints) => Lease::etcd(endpoints.clone()),
            Store::Redis(url) => Lease::redis(url.clone()),
            Store::Sentinel(sentinels, master) => Lease::redis_sentinel(sentinels.clone(), master),
            Store::Postgres(url) => Lease::postgres(url.clone()),
            Store::Mysql(url) => Lease::mysql(url.clone()),
        };
        let mut lease = lease
            .prefix(&self.prefix)
            .ttl(self.ttl)
            .node_ids(self.nodes.clone());
        if let Some(margin) = self.margin {
            lease = lease.safety_margin(margin);
        }
        plant(lease, &self.plant)
    }

    /// The safety margin the lease runs with.
    fn margin(&self) -> Duration {
        self.margin.unwrap_or(self.ttl / 5)
    }
}

/// Puts the planted bug `name` into `lease` (`none`: none).
#[cfg(flakeid_plant)]
fn plant(lease: Lease, name: &str) -> Result<Lease, String> {
    if name == "none" {
        return Ok(lease);
    }
    let plant = flakeid::plant::Plant::from_name(name)
        .ok_or_else(|| format!("--plant {name}: no such planted bug"))?;
    Ok(lease.plant(plant))
}

/// Without `--cfg flakeid_plant` there is nothing to plant.
#[cfg(not(flakeid_plant))]
fn plant(lease: Lease, name: &str) -> Result<Lease, String> {
    if name == "none" {
        Ok(lease)
    } else {
        Err(format!(
            "--plant {name}: this worker was built without --cfg flakeid_plant"
        ))
    }
}

/// Prints one line on stdout, at once (the runner waits on them).
fn say(what: What) {
    let line = Line::now(what);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// CLOCK_MONOTONIC nanoseconds of an `Instant` (which reads that clock on
/// Linux), through one pair read together.
#[derive(Debug, Clone, Copy)]
struct MonoOf {
    instant: Instant,
    mono_ns: u64,
}

impl MonoOf {
    fn now() -> MonoOf {
        MonoOf {
            instant: Instant::now(),
            mono_ns: mono_ns(),
        }
    }

    fn of(&self, at: Instant) -> u64 {
        match at.checked_duration_since(self.instant) {
            Some(after) => self.mono_ns + after.as_nanos() as u64,
            None => self
                .mono_ns
                .saturating_sub(self.instant.duration_since(at).as_nanos() as u64),
        }
    }
}

/// Reports the lease keeper's events: each extension with its instants,
/// and the others as their text (renewal failures say which request
/// failed and why).
fn on_event(event: &Event, mono: MonoOf) {
    if let Some(what) = extension(event, mono) {
        say(what);
        return;
    }
    match event {
        Event::LeaseClaimed { .. }
        | Event::LeaseRenewalFailed { .. }
        | Event::LeaseWaiting { .. }
        | Event::Fenced { .. }
        | Event::LeaseReopened { .. }
        | Event::LeaseRotated { .. }
        | Event::IdsDropped { .. } => say(What::Lease {
            event: event.to_string(),
        }),
        _ => {}
    }
}

/// The lease's extension event, as an [`What::Extended`] line.
fn extension(event: &Event, mono: MonoOf) -> Option<What> {
    match *event {
        Event::LeaseExtended {
            node_id,
            claim,
            sent,
            answered,
        } => Some(What::Extended {
            node: node_id,
            claim,
            sent_ns: mono.of(sent),
            arrived_ns: mono.of(answered),
        }),
        _ => None,
    }
}

/// Sleeps until the next whole millisecond of CLOCK_MONOTONIC. (A
/// relative sleep: libfaketime, which skews some workers' clocks, refuses
/// absolute ones with EINVAL.)
fn next_millisecond() {
    let now = mono_ns();
    let next = (now / 1_000_000 + 1) * 1_000_000;
    thread::sleep(Duration::from_nanos(next - now));
}

/// The worker's main: runs until its time is up or stdin closes.
pub fn main(args: Args) {
    say(What::Start {
        pid: std::process::id(),
        plant: args.plant.clone(),
        skew_ms: args.skew_ms,
        ttl_ms: args.ttl.as_millis() as u64,
        margin_ms: args.margin().as_millis() as u64,
    });
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            stop.store(true, Ordering::Relaxed);
        });
    }
    let stopped = || stop.load(Ordering::Relaxed);
    let mut file =
        BufWriter::with_capacity(1 << 20, File::create(&args.ids).expect("the ids file"));
    let layout = layout();
    let node_of = |id: Id| layout.decode(id).map_or(u64::MAX, |d| d.node_id());
    let mono = MonoOf::now();

    // Build, retrying while it fails (all node ids held, store unreachable).
    let generator = loop {
        if stopped() {
            say(What::End { ids: 0 });
            return;
        }
        let built = args.lease().and_then(|lease| {
            Generator::builder(layout.clone())
                .lease(lease)
                .on_event(move |e: &Event| on_event(e, mono))
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
    let end_at = Instant::now() + args.run_for;

    let mut count = 0u64;
    let mut last_ms = 0u64;
    let mut fenced = false;
    let mut last_error: Option<String> = None;
    let mut next_progress = Instant::now();
    while !stopped() && Instant::now() < end_at {
        for _ in 0..args.per_ms {
            let start_ns = mono_ns();
            let answer = generator.try_next_id();
            let end_ns = mono_ns();
            match answer {
                Ok(id) => {
                    let issued = Issued {
                        start_ns,
                        end_ns,
                        id: id.to_u64(),
                    };
                    file.write_all(&issued.to_bytes())
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
                        let now = mono_ns();
                        let since_ns = match generator.health() {
                            Health::Fenced { closed_for } => now.saturating_sub(
                                u64::try_from(closed_for.as_nanos()).unwrap_or(u64::MAX),
                            ),
                            _ => now,
                        };
                        say(What::Fenced { node, since_ns });
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
        next_millisecond();
    }
    file.flush().expect("writing the ids file");
    // Dropped here: the node id is released (within one request timeout).
    drop(generator);
    say(What::End { ids: count });
}
