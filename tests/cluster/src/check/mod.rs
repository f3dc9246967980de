//! The checker: reads every ID every worker issued, and every worker's
//! and the nemesis's records, from a run's directory (see
//! [`crate::record`]).
//!
//! - **Safety** ([`safety`]): no ID twice, no (node id, millisecond) from
//!   two processes, each worker's IDs increasing, no ID from a call that
//!   started past its claim's deadline (computed by the checker from the
//!   instants the keeper sent its requests, and where a proxy recorded
//!   them, from when the requests left the worker), no extension whose
//!   reported send came after its request left, no ID without a claim for its
//!   node id, and per node id every holder's IDs above every earlier
//!   holder's.
//! - **Workers** ([`workers`]): every worker exited cleanly, wrote nothing
//!   on stderr, met no error but `Fenced`, and none stayed fenced for its
//!   whole life.
//! - **The run itself**: every fault kind it was to inject was injected
//!   (skipped faults are listed, not counted), and, on Redis, the
//!   failovers the sentinels completed ([`failover`]) with the time until
//!   every node id was issued under again.
//! - **Fenced time per fault** ([`fenced`]).

pub mod failover;
pub mod fenced;
pub mod safety;
pub mod workers;

use std::fmt;
use std::path::Path;

use crate::record::{
    Fault, Issued, Line, Params, What, events_path, faults_path, ids_path, read_requests,
    skipped_path, stderr_path, workers_in,
};
use fenced::{FaultStat, KindStat, ms};

/// What one worker left.
#[derive(Debug, Clone, Default)]
pub struct Worker {
    pub index: usize,
    pub plant: String,
    pub skew_ms: i64,
    pub ttl_ms: u64,
    pub margin_ms: u64,
    pub lines: Vec<Line>,
    /// What it printed on stdout that is not a [`Line`].
    pub unparsed: Vec<String>,
    pub stderr: String,
    /// When its requests left it, sorted, if a proxy in front of its store
    /// recorded them (`w<k>.requests`): the checker then takes each
    /// extension's send instant from there, not from the keeper alone.
    pub requests: Option<Vec<u64>>,
}

/// One completed Sentinel failover, on the monotonic clock.
#[derive(Debug, Clone)]
pub struct Failover {
    /// When the first sentinel logged `+switch-master` (placed on the
    /// monotonic clock through the unskewed workers' wall clocks).
    pub switch_ns: u64,
    pub to: String,
    /// From the switch until every node id had a generator issuing under
    /// it (`None`: not before the next failover or the run's end).
    pub all_issuing_after_ns: Option<u64>,
}

/// What the checker found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub workers: usize,
    pub ids: u64,
    /// What the safety checks found (duplicates, overlaps, order,
    /// deadlines, hand-off order).
    pub safety: safety::Safety,
    /// Why workers failed the run.
    pub worker_failures: Vec<String>,
    /// The first few violations, described.
    pub examples: Vec<String>,
    /// From the first build to the last ID, in seconds.
    pub seconds: f64,
    pub faults: Vec<FaultStat>,
    pub kinds: Vec<KindStat>,
    /// Faults the nemesis could not inject when their turn came: (its
    /// monotonic ns, kind).
    pub skipped: Vec<(u64, String)>,
    /// Kinds the run was to inject and never did.
    pub missing_kinds: Vec<String>,
    pub failovers: Vec<Failover>,
    /// Requested and measured skews of the skewed workers (ms).
    pub skews: Vec<(i64, i64)>,
}

impl Report {
    /// Everything that fails a run: duplicates, overlaps, IDs out of
    /// order, past a deadline, without a claim, or out of hand-off order,
    /// extensions stamped after their request left, and failed workers.
    pub fn violations(&self) -> u64 {
        let s = &self.safety;
        s.duplicates
            + s.overlaps
            + s.out_of_order
            + s.past_deadline
            + s.late_stamps
            + s.unclaimed
            + s.handoff
            + self.worker_failures.len() as u64
    }

    pub fn ids_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ids as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// How many faults of `kind` were injected.
    pub fn injected(&self, kind: &str) -> usize {
        self.faults.iter().filter(|s| s.fault.kind == kind).count()
    }
}

/// Checks the run in `dir`.
///
/// # Panics
///
/// If the directory's files cannot be read.
pub fn check(dir: &Path) -> Report {
    let layout = crate::layout();
    let params = Params::read(dir);
    let workers: Vec<Worker> = workers_in(dir)
        .into_iter()
        .map(|k| read_worker(dir, k))
        .collect();
    let issued: Vec<Vec<Issued>> = workers
        .iter()
        .map(|w| Issued::read_all(&ids_path(dir, w.index)))
        .collect();
    let faults: Vec<Fault> = std::fs::read_to_string(faults_path(dir))
        .unwrap_or_default()
        .lines()
        .filter_map(Fault::parse)
        .collect();
    let mut report = Report {
        workers: workers.len(),
        ids: issued.iter().map(|i| i.len() as u64).sum(),
        ..Report::default()
    };

    report.safety = safety::check(&layout, &workers, &issued);

    let limit_ns = params
        .as_ref()
        .map_or(u64::MAX, |p| p.fenced_life_limit_ms * 1_000_000);
    for (w, ids) in workers.iter().zip(&issued) {
        report
            .worker_failures
            .extend(workers::failures(w, ids.len() as u64, limit_ns));
    }

    // Wall (unskewed) minus monotonic, in ms: places a Unix millisecond
    // (an overlap's, a sentinel's log line's) on the monotonic clock.
    let offset = fenced::reference_offset(&workers);
    let to_mono = |unix_ms: u64| offset.map(|o| (unix_ms as i64 - o).max(0) as u64 * 1_000_000);
    let mut overlap_ns: Vec<u64> = report
        .safety
        .overlap_ms
        .iter()
        .filter_map(|&m| to_mono(m))
        .collect();
    overlap_ns.sort_unstable();
    let stats = fenced::stats(&workers, &faults, &overlap_ns);
    report.seconds = stats.seconds;
    report.faults = stats.faults;
    report.kinds = stats.kinds;
    report.skews = fenced::skews(&workers);

    report.skipped = std::fs::read_to_string(skipped_path(dir))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (at, kind) = l.split_once(' ')?;
            Some((at.parse().ok()?, kind.to_owned()))
        })
        .collect();
    if let Some(p) = &params {
        report.missing_kinds = p
            .kinds
            .iter()
            .filter(|k| report.injected(k) == 0)
            .cloned()
            .collect();
    }

    let switches = failover::switches(dir);
    let end = last_line_ns(&workers);
    let placed: Vec<(u64, String)> = switches
        .iter()
        .filter_map(|s| Some((to_mono(s.unix_ms)?, s.to.clone())))
        .collect();
    for (n, (at, to)) in placed.iter().enumerate() {
        let until = placed.get(n + 1).map_or(end, |next| next.0);
        report.failovers.push(Failover {
            switch_ns: *at,
            to: to.clone(),
            all_issuing_after_ns: stats.coverage.all_issuing_after(*at, until),
        });
    }
    report
}

/// The time of the last line any worker left: the run's end.
fn last_line_ns(workers: &[Worker]) -> u64 {
    workers
        .iter()
        .flat_map(|w| w.lines.last())
        .map(|l| l.mono_ns)
        .max()
        .unwrap_or(0)
}

fn read_worker(dir: &Path, index: usize) -> Worker {
    let text = std::fs::read_to_string(events_path(dir, index)).unwrap_or_default();
    let mut lines = Vec::new();
    let mut unparsed = Vec::new();
    for l in text.lines() {
        match Line::parse(l) {
            Some(line) => lines.push(line),
            None => unparsed.push(l.to_owned()),
        }
    }
    let mut w = Worker {
        index,
        plant: "none".into(),
        unparsed,
        stderr: std::fs::read_to_string(stderr_path(dir, index)).unwrap_or_default(),
        requests: read_requests(dir, index),
        ..Worker::default()
    };
    if let Some(What::Start {
        plant,
        skew_ms,
        ttl_ms,
        margin_ms,
        ..
    }) = lines
        .iter()
        .map(|l| &l.what)
        .find(|w| matches!(w, What::Start { .. }))
    {
        w.plant = plant.clone();
        w.skew_ms = *skew_ms;
        w.ttl_ms = *ttl_ms;
        w.margin_ms = *margin_ms;
    }
    w.lines = lines;
    w
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.safety;
        writeln!(
            f,
            "{} IDs from {} processes in {:.0} s ({:.0} IDs/s): {} duplicates, {} overlaps \
             (node id and millisecond in two processes), {} out of order, {} past a deadline \
             ({} checked, {} left out), {} extensions stamped after their request left ({} \
             checked against a proxy's instants), {} without a claim, {} out of hand-off \
             order ({} holders), {} worker failures",
            self.ids,
            self.workers,
            self.seconds,
            self.ids_per_second(),
            s.duplicates,
            s.overlaps,
            s.out_of_order,
            s.past_deadline,
            s.attributed,
            s.unattributed,
            s.late_stamps,
            s.stamps_checked,
            s.unclaimed,
            s.handoff,
            s.holders,
            self.worker_failures.len()
        )?;
        writeln!(
            f,
            "the workers issued in {:.1}% of the milliseconds they spanned while issuing",
            s.ms_visited as f64 * 100.0 / s.ms_spanned.max(1) as f64
        )?;
        for e in &s.examples {
            writeln!(f, "  violation: {e}")?;
        }
        for e in &self.worker_failures {
            writeln!(f, "  worker failure: {e}")?;
        }
        if !self.missing_kinds.is_empty() {
            writeln!(f, "never injected: {}", self.missing_kinds.join(", "))?;
        }
        if !self.skipped.is_empty() {
            let kinds: Vec<&str> = self.skipped.iter().map(|(_, k)| k.as_str()).collect();
            writeln!(f, "skipped (not counted): {}", kinds.join(", "))?;
        }
        if !self.failovers.is_empty() {
            let shown: Vec<String> = self
                .failovers
                .iter()
                .map(|s| {
                    s.all_issuing_after_ns
                        .map_or("never".into(), |n| format!("{:.0} ms", ms(n)))
                })
                .collect();
            writeln!(
                f,
                "{} Sentinel failovers (+switch-master); every node id issued again after: {}",
                self.failovers.len(),
                shown.join(", ")
            )?;
        }
        if !self.skews.is_empty() {
            let shown: Vec<String> = self
                .skews
                .iter()
                .map(|(asked, seen)| format!("{asked:+}→{seen:+}"))
                .collect();
            writeln!(f, "skewed workers (ms asked → seen): {}", shown.join(", "))?;
        }
        writeln!(
            f,
            "\n| fault | n | all fenced, median / max (ms) | longest node id unissued, median / max (ms) | \
             every node id issued again after heal, median / max (ms) | not again in window | \
             build failures | renewal failures | overlaps |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|")?;
        for k in &self.kinds {
            writeln!(
                f,
                "| {} | {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {} | {} |",
                k.kind,
                k.count,
                k.all_fenced_ms.0,
                k.all_fenced_ms.1,
                k.node_gap_ms.0,
                k.node_gap_ms.1,
                k.recovered_ms.0,
                k.recovered_ms.1,
                k.not_recovered,
                k.build_failures,
                k.renewal_failures,
                k.overlaps
            )?;
        }
        writeln!(f)?;
        for k in &self.kinds {
            for (reason, n) in &k.reasons {
                writeln!(f, "  {}: {n}× {reason}", k.kind)?;
            }
        }
        Ok(())
    }
}

/// One line per fault, for the run's log.
pub fn fault_lines(report: &Report) -> String {
    let mut out = String::new();
    let t0 = report.faults.first().map_or(0, |s| s.fault.start_ns);
    for s in &report.faults {
        out.push_str(&format!(
            "{:>8.1}s {:<20} {:<10} held {:>6.0} ms, all fenced {:>6.0} ms, node id gap {:>6.0} ms, \
             again after {}, builds failed {}, renewals failed {}, overlaps {}\n",
            s.fault.start_ns.saturating_sub(t0) as f64 / 1e9,
            s.fault.kind,
            s.fault.target,
            ms(s.fault.end_ns.saturating_sub(s.fault.start_ns)),
            ms(s.all_fenced_ns),
            ms(s.node_gap_ns),
            s.recovered_ns
                .map_or("never".into(), |r| format!("{:.0} ms", ms(r))),
            s.build_failures,
            s.renewal_failures,
            s.overlaps
        ));
    }
    out
}
