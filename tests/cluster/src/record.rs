//! What a run leaves in its directory, and how each piece is read back.
//!
//! - `w<k>.ids`: every ID worker `k` was handed, in order, as [`Issued`]
//!   records: when the `try_next_id` call that returned it started and
//!   ended, and the ID.
//! - `w<k>.events`: worker `k`'s [`Line`]s, one per line: what the worker
//!   printed on its standard output, and what the runner saw of it (its
//!   pauses, its stop, its exit).
//! - `w<k>.stderr`: worker `k`'s standard error (an honest worker writes
//!   nothing there).
//! - `w<k>.requests`: when each of worker `k`'s requests to its store left
//!   it, as a proxy in front of the store saw them (scenarios that put one
//!   there, for that worker alone), one per line: send instants the
//!   checker takes from outside the code under test ([`read_requests`]).
//! - `faults`: the nemesis's [`Fault`]s, one per line; `skipped`: the
//!   faults it could not inject (no member in the role, no generator
//!   issuing), one per line, as `<mono ns> <kind>`.
//! - `params`: the run's [`Params`], which the checker needs.
//! - `<member>.log`: each cluster member's log (the sentinels' tell when
//!   a failover completed: `+switch-master`).
//!
//! Times are CLOCK_MONOTONIC nanoseconds ([`crate::mono_ns`]), shared by
//! every process, with the writer's wall clock in Unix milliseconds beside.

use std::fmt;
use std::path::{Path, PathBuf};

/// One thing a worker did or had done to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub mono_ns: u64,
    pub wall_ms: u64,
    pub what: What,
}

/// The kinds of [`Line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// The worker started: its process id, planted bug, clock skew, and
    /// its lease's TTL and safety margin (the checker computes deadlines
    /// from them).
    Start {
        pid: u32,
        plant: String,
        skew_ms: i64,
        ttl_ms: u64,
        margin_ms: u64,
    },
    /// Building the leased generator failed (it retries).
    BuildFailed { reason: String },
    /// The leased generator was built, holding `node`.
    Built { node: u64 },
    /// `try_next_id` answered `Fenced`; the fence had been closed since
    /// `since_ns` (from `health()`), holding `node` until then.
    Fenced { node: u64, since_ns: u64 },
    /// The first ID after a fence, under `node`.
    Issuing { node: u64 },
    /// The lease keeper extended the lease of `node` (a claim, or a
    /// renewal of the claim before): the request was sent at `sent_ns`
    /// and its answer arrived at `arrived_ns` (the keeper's own instants,
    /// on CLOCK_MONOTONIC). The checker computes the deadline from them.
    Extended {
        node: u64,
        claim: bool,
        sent_ns: u64,
        arrived_ns: u64,
    },
    /// The lease keeper's event (its `Display`).
    Lease { event: String },
    /// Every quarter second: IDs so far, the node id and Unix millisecond
    /// of the last.
    Progress { ids: u64, node: u64, last_ms: u64 },
    /// An error other than `Fenced` (once per kind in a row).
    Error { error: String },
    /// The worker is done: IDs issued in all.
    End { ids: u64 },
    /// Seen by the runner: the nemesis stopped (SIGSTOP) the worker.
    Paused,
    /// Seen by the runner: SIGCONT.
    Resumed,
    /// Done by the runner: the worker was asked to stop (its stdin
    /// closed).
    Stopped,
    /// Done by the runner: the worker had not exited within
    /// [`STOP_WITHIN`](crate::fleet::STOP_WITHIN) of being asked to, or
    /// the run was over, and was killed.
    Killed,
    /// Seen by the runner: the process exited.
    Exit { status: String },
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.mono_ns, self.wall_ms)?;
        match &self.what {
            What::Start {
                pid,
                plant,
                skew_ms,
                ttl_ms,
                margin_ms,
            } => write!(f, "start {pid} {plant} {skew_ms} {ttl_ms} {margin_ms}"),
            What::BuildFailed { reason } => write!(f, "build-failed {}", one_line(reason)),
            What::Built { node } => write!(f, "built {node}"),
            What::Fenced { node, since_ns } => write!(f, "fenced {node} {since_ns}"),
            What::Issuing { node } => write!(f, "issuing {node}"),
            What::Extended {
                node,
                claim,
                sent_ns,
                arrived_ns,
            } => {
                let kind = if *claim { "claim" } else { "renewal" };
                write!(f, "extended {node} {kind} {sent_ns} {arrived_ns}")
            }
            What::Lease { event } => write!(f, "lease {}", one_line(event)),
            What::Progress { ids, node, last_ms } => write!(f, "progress {ids} {node} {last_ms}"),
            What::Error { error } => write!(f, "error {}", one_line(error)),
            What::End { ids } => write!(f, "end {ids}"),
            What::Paused => write!(f, "paused"),
            What::Resumed => write!(f, "resumed"),
            What::Stopped => write!(f, "stopped"),
            What::Killed => write!(f, "killed"),
            What::Exit { status } => write!(f, "exit {}", one_line(status)),
        }
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

impl Line {
    pub fn now(what: What) -> Line {
        Line {
            mono_ns: crate::mono_ns(),
            wall_ms: crate::wall_ms(),
            what,
        }
    }

    /// Reads a line [`Display`](fmt::Display) wrote; `None` for anything else
    /// (a panic message on the worker's stdout, say).
    pub fn parse(line: &str) -> Option<Line> {
        let mut words = line.splitn(4, ' ');
        let mono_ns = words.next()?.parse().ok()?;
        let wall_ms = words.next()?.parse().ok()?;
        let kind = words.next()?;
        let rest = words.next().unwrap_or("");
        let mut fields = rest.split(' ');
        let mut num = || fields.next()?.parse::<u64>().ok();
        let what = match kind {
            "start" => {
                let mut f = rest.split(' ');
                What::Start {
                    pid: f.next()?.parse().ok()?,
                    plant: f.next()?.into(),
                    skew_ms: f.next()?.parse().ok()?,
                    ttl_ms: f.next()?.parse().ok()?,
                    margin_ms: f.next()?.parse().ok()?,
                }
            }
            "build-failed" => What::BuildFailed {
                reason: rest.into(),
            },
            "built" => What::Built { node: num()? },
            "fenced" => What::Fenced {
                node: num()?,
                since_ns: num()?,
            },
            "issuing" => What::Issuing { node: num()? },
            "extended" => {
                let mut f = rest.split(' ');
                let node = f.next()?.parse().ok()?;
                let claim = match f.next()? {
                    "claim" => true,
                    "renewal" => false,
                    _ => return None,
                };
                What::Extended {
                    node,
                    claim,
                    sent_ns: f.next()?.parse().ok()?,
                    arrived_ns: f.next()?.parse().ok()?,
                }
            }
            "lease" => What::Lease { event: rest.into() },
            "progress" => What::Progress {
                ids: num()?,
                node: num()?,
                last_ms: num()?,
            },
            "error" => What::Error { error: rest.into() },
            "end" => What::End { ids: num()? },
            "paused" => What::Paused,
            "resumed" => What::Resumed,
            "stopped" => What::Stopped,
            "killed" => What::Killed,
            "exit" => What::Exit {
                status: rest.into(),
            },
            _ => return None,
        };
        Some(Line {
            mono_ns,
            wall_ms,
            what,
        })
    }
}

/// One fault the nemesis injected: what, on whom, from when to when (the
/// end is when it was healed; the time until the next fault is the
/// recovery the checker attributes to it too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// `pause leader`, `isolate primary`, `pause generator`, ... (two
    /// words: the action and the role).
    pub kind: String,
    /// The member (`etcd-1`, `redis-0`, ...) or worker (`w7`).
    pub target: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {}",
            self.start_ns, self.end_ns, self.target, self.kind
        )
    }
}

impl Fault {
    pub fn parse(line: &str) -> Option<Fault> {
        let mut words = line.splitn(4, ' ');
        Some(Fault {
            start_ns: words.next()?.parse().ok()?,
            end_ns: words.next()?.parse().ok()?,
            target: words.next()?.into(),
            kind: words.next()?.into(),
        })
    }
}

/// One ID a worker was handed: its `try_next_id` call started at
/// `start_ns` and returned at `end_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Issued {
    pub start_ns: u64,
    pub end_ns: u64,
    pub id: u64,
}

impl Issued {
    pub const BYTES: usize = 24;

    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[..8].copy_from_slice(&self.start_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.end_ns.to_le_bytes());
        b[16..].copy_from_slice(&self.id.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8]) -> Issued {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Issued {
            start_ns: word(0),
            end_ns: word(8),
            id: word(16),
        }
    }

    /// Every record in a worker's IDs file (a torn last record, from a
    /// worker killed mid-write, is left out).
    pub fn read_all(path: &Path) -> Vec<Issued> {
        std::fs::read(path)
            .unwrap_or_default()
            .chunks_exact(Self::BYTES)
            .map(Issued::from_bytes)
            .collect()
    }
}

/// What the checker needs to know of the run beyond the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// `etcd`, `redis`, `postgres` or `mysql`.
    pub store: String,
    /// A worker that built its generator and then lived this long (not
    /// counting nemesis pauses) without issuing one ID was fenced for its
    /// whole life: a failure.
    pub fenced_life_limit_ms: u64,
    /// The fault kinds the run was to inject (the names in [`Fault::kind`]).
    pub kinds: Vec<String>,
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "store {}", self.store)?;
        writeln!(f, "fenced-life-limit-ms {}", self.fenced_life_limit_ms)?;
        writeln!(f, "kinds {}", self.kinds.join(","))
    }
}

impl Params {
    pub fn parse(text: &str) -> Option<Params> {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .map(str::to_owned)
        };
        Some(Params {
            store: field("store")?,
            fenced_life_limit_ms: field("fenced-life-limit-ms")?.parse().ok()?,
            kinds: field("kinds")?
                .split(',')
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect(),
        })
    }

    /// The run's parameters in `dir`, if it has them.
    pub fn read(dir: &Path) -> Option<Params> {
        Params::parse(&std::fs::read_to_string(params_path(dir)).ok()?)
    }
}

pub fn params_path(dir: &Path) -> PathBuf {
    dir.join("params")
}

pub fn skipped_path(dir: &Path) -> PathBuf {
    dir.join("skipped")
}

pub fn stderr_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("w{worker}.stderr"))
}

pub fn ids_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("w{worker}.ids"))
}

pub fn requests_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("w{worker}.requests"))
}

/// Writes worker `worker`'s request instants (CLOCK_MONOTONIC ns) to
/// `w<k>.requests`.
pub fn write_requests(dir: &Path, worker: usize, instants: &[u64]) {
    let text: String = instants.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(requests_path(dir, worker), text).expect("the requests file");
}

/// Worker `worker`'s request instants, sorted, if a proxy recorded them.
pub fn read_requests(dir: &Path, worker: usize) -> Option<Vec<u64>> {
    let text = std::fs::read_to_string(requests_path(dir, worker)).ok()?;
    let mut instants: Vec<u64> = text.lines().filter_map(|l| l.parse().ok()).collect();
    instants.sort_unstable();
    Some(instants)
}

pub fn events_path(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("w{worker}.events"))
}

pub fn faults_path(dir: &Path) -> PathBuf {
    dir.join("faults")
}

/// The workers with files in `dir`, by index.
pub fn workers_in(dir: &Path) -> Vec<usize> {
    let mut found: Vec<usize> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| {
                    let name = e.ok()?.file_name().into_string().ok()?;
                    name.strip_prefix('w')?
                        .strip_suffix(".events")?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort_unstable();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back() {
        for what in [
            What::Start {
                pid: 7,
                plant: "none".into(),
                skew_ms: -1500,
                ttl_ms: 3000,
                margin_ms: 600,
            },
            What::Extended {
                node: 2,
                claim: true,
                sent_ns: 11,
                arrived_ns: 12,
            },
            What::Extended {
                node: 2,
                claim: false,
                sent_ns: 13,
                arrived_ns: 14,
            },
            What::Stopped,
            What::Killed,
            What::BuildFailed {
                reason: "no answer from etcd\nwithin 2s".into(),
            },
            What::Built { node: 3 },
            What::Fenced {
                node: 1,
                since_ns: 99,
            },
            What::Lease {
                event: "lease renewal failed".into(),
            },
            What::Progress {
                ids: 10,
                node: 2,
                last_ms: 1_700_000_000_000,
            },
            What::End { ids: 10 },
            What::Paused,
            What::Exit {
                status: "exit status: 0".into(),
            },
        ] {
            let line = Line {
                mono_ns: 5,
                wall_ms: 6,
                what,
            };
            let mut expect = line.clone();
            if let What::BuildFailed { reason } = &mut expect.what {
                *reason = one_line(reason);
            }
            assert_eq!(Line::parse(&line.to_string()), Some(expect));
        }
        let fault = Fault {
            kind: "pause leader".into(),
            target: "etcd-1".into(),
            start_ns: 1,
            end_ns: 2,
        };
        assert_eq!(Fault::parse(&fault.to_string()), Some(fault));
        let params = Params {
            store: "redis".into(),
            fenced_life_limit_ms: 30_000,
            kinds: vec!["pause primary".into(), "skewed generator".into()],
        };
        assert_eq!(Params::parse(&params.to_string()), Some(params));
        let issued = Issued {
            start_ns: 1,
            end_ns: u64::MAX,
            id: 1 << 40,
        };
        assert_eq!(Issued::from_bytes(&issued.to_bytes()), issued);
    }
}
