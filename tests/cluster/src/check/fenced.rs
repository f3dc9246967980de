//! Fenced time per fault. Each fault's window runs from its start to the
//! next fault's (the fault itself and the recovery after it). A worker is
//! *live* from its build to its end, except while the nemesis holds it
//! stopped; it *issues* under a node id while live and not fenced. In each
//! window the checker measures the time *every* live generator was fenced
//! at once (no ID could be had anywhere), the longest any node id went
//! without a generator issuing under it, and how long after the fault was
//! healed every node id had one again. (Per node id rather than per
//! process: there are more processes than node ids, so a process that lost
//! its node id to another may wait, fenced, until one is free; that is the
//! pool's doing, not the fault's.)

use std::collections::BTreeMap;

use super::Worker;
use crate::record::{Fault, Line, What};

/// The fenced time of one fault's window.
#[derive(Debug, Clone)]
pub struct FaultStat {
    pub fault: Fault,
    /// The window's length (to the next fault's start, or the run's end).
    pub window_ns: u64,
    /// Time every live generator was fenced at once.
    pub all_fenced_ns: u64,
    /// The longest any node id went without a generator issuing under it.
    pub node_gap_ns: u64,
    /// From the fault's end until every node id had a generator issuing
    /// under it; `None` if that did not happen within the window.
    pub recovered_ns: Option<u64>,
    /// Builds that failed in the window (other than for every node id
    /// being held).
    pub build_failures: u64,
    /// The lease keepers' renewal failures in the window.
    pub renewal_failures: u64,
    /// Overlaps in the window, placed on the monotonic clock through the
    /// unskewed workers' wall clocks.
    pub overlaps: u64,
}

/// One fault kind's numbers.
#[derive(Debug, Clone)]
pub struct KindStat {
    pub kind: String,
    pub count: usize,
    pub all_fenced_ms: (f64, f64),
    pub node_gap_ms: (f64, f64),
    /// Median and max of the recoveries that happened, and how many did not.
    pub recovered_ms: (f64, f64),
    pub not_recovered: usize,
    pub build_failures: u64,
    pub renewal_failures: u64,
    pub overlaps: u64,
    /// Distinct reasons (numbers blanked), with counts, most frequent first.
    pub reasons: Vec<(String, u64)>,
}

/// When every node id had a generator issuing under it.
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    /// Stretches of time with a constant number of node ids issued under
    /// (as `live`).
    segments: Vec<Segment>,
    nodes: i64,
}

impl Coverage {
    /// The first moment at or after `at` (and before `until`) when every
    /// node id had a generator issuing under it, as time after `at`.
    pub fn all_issuing_after(&self, at: u64, until: u64) -> Option<u64> {
        self.segments
            .iter()
            .filter(|s| s.until > at && s.from < until && s.live == self.nodes)
            .map(|s| s.from.max(at) - at)
            .next()
    }
}

/// What the fenced-time pass gives the report.
pub struct Stats {
    pub faults: Vec<FaultStat>,
    pub kinds: Vec<KindStat>,
    pub coverage: Coverage,
    /// From the first build to the last ID, in seconds.
    pub seconds: f64,
}

/// Fenced time per fault (`overlap_ns`: the overlaps' times on the
/// monotonic clock, sorted).
pub fn stats(workers: &[Worker], faults: &[Fault], overlap_ns: &[u64]) -> Stats {
    let timelines: Vec<Timeline> = workers.iter().map(timeline).collect();
    let first = timelines
        .iter()
        .filter_map(|t| t.live.first())
        .map(|l| l.0)
        .min();
    let end = super::last_line_ns(workers);
    let last_id_ns = workers
        .iter()
        .flat_map(|w| w.lines.iter())
        .filter(|l| matches!(l.what, What::Progress { .. } | What::End { .. }))
        .map(|l| l.mono_ns)
        .max()
        .unwrap_or(0);
    let seconds = first.map_or(0.0, |first| last_id_ns.saturating_sub(first) as f64 / 1e9);
    let segments = sweep(&timelines);
    // Per node id, when some generator issued under it (merged); and how
    // many node ids had one, over time (as `live` of a sweep).
    let coverage: Vec<Vec<(u64, u64)>> = crate::NODE_IDS
        .map(|node| {
            let mut spans: Vec<(u64, u64)> = timelines
                .iter()
                .flat_map(|t| t.issuing.iter())
                .filter(|&&(_, _, n)| n == node)
                .map(|&(a, b, _)| (a, b))
                .collect();
            spans.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::new();
            for (a, b) in spans {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            merged
        })
        .collect();
    let coverage_of = Coverage {
        nodes: coverage.len() as i64,
        segments: sweep(
            &coverage
                .iter()
                .map(|c| Timeline {
                    live: c.clone(),
                    ..Timeline::default()
                })
                .collect::<Vec<_>>(),
        ),
    };
    let mut windows: Vec<Fault> = Vec::new();
    if let (Some(first), Some(f)) = (first, faults.first())
        && first < f.start_ns
    {
        windows.push(Fault {
            kind: "none".into(),
            target: "-".into(),
            start_ns: first,
            end_ns: first,
        });
    }
    windows.extend(faults.iter().cloned());
    let mut stats = Vec::new();
    let overlaps_in = |from: u64, until: u64| {
        (overlap_ns.partition_point(|&t| t < until) - overlap_ns.partition_point(|&t| t < from))
            as u64
    };
    for (n, fault) in windows.iter().enumerate() {
        let until = windows.get(n + 1).map_or(end, |next| next.start_ns);
        let from = fault.start_ns;
        let all_fenced_ns = segments
            .iter()
            .filter(|s| s.live > 0 && s.fenced == s.live)
            .map(|s| overlap(s.from, s.until, from, until))
            .sum();
        let node_gap_ns = coverage
            .iter()
            .map(|covered| {
                let issued: u64 = covered
                    .iter()
                    .map(|&(a, b)| overlap(a, b, from, until))
                    .sum();
                until.saturating_sub(from).saturating_sub(issued)
            })
            .max()
            .unwrap_or(0);
        let recovered_ns = coverage_of.all_issuing_after(fault.end_ns.max(from), until);
        let in_window = |l: &&Line| l.mono_ns >= from && l.mono_ns < until;
        let lines = || {
            workers
                .iter()
                .flat_map(|w| w.lines.iter())
                .filter(in_window)
        };
        let build_failures = lines()
            .filter(|l| matches!(&l.what, What::BuildFailed { reason } if !all_held(reason)))
            .count() as u64;
        let renewal_failures = lines()
            .filter(|l| matches!(&l.what, What::Lease { event } if event.contains("renew")))
            .count() as u64;
        stats.push(FaultStat {
            fault: fault.clone(),
            window_ns: until.saturating_sub(from),
            all_fenced_ns,
            node_gap_ns,
            recovered_ns,
            build_failures,
            renewal_failures,
            overlaps: overlaps_in(from, until),
        });
    }
    let kinds = kinds(&stats, workers, &windows, end);
    Stats {
        faults: stats,
        kinds,
        coverage: coverage_of,
        seconds,
    }
}

/// A worker's live and fenced intervals (fenced within live), and the
/// rest of its live time, when it issued, with the node id.
#[derive(Debug, Default)]
struct Timeline {
    live: Vec<(u64, u64)>,
    fenced: Vec<(u64, u64)>,
    issuing: Vec<(u64, u64, u64)>,
}

fn timeline(w: &Worker) -> Timeline {
    let mut t = Timeline::default();
    let mut live_from: Option<u64> = None;
    let mut fenced_from: Option<u64> = None;
    let mut over = false;
    let close_live = |t: &mut Timeline, from: &mut Option<u64>, at: u64| {
        if let Some(a) = from.take()
            && at > a
        {
            t.live.push((a, at));
        }
    };
    let close_fenced = |t: &mut Timeline, from: &mut Option<u64>, at: u64| {
        if let Some(a) = from.take()
            && at > a
        {
            t.fenced.push((a, at));
        }
    };
    for l in &w.lines {
        if over {
            break;
        }
        let at = l.mono_ns;
        match &l.what {
            What::Built { .. } => live_from = Some(at),
            What::Fenced { since_ns, .. } if live_from.is_some() => {
                fenced_from = Some((*since_ns).max(live_from.unwrap_or(0)));
            }
            What::Issuing { .. } => close_fenced(&mut t, &mut fenced_from, at),
            What::Paused => {
                let f = fenced_from;
                close_fenced(&mut t, &mut fenced_from, at);
                close_live(&mut t, &mut live_from, at);
                // Resumed later: live again, still fenced if it was.
                fenced_from = f.map(|_| u64::MAX);
                live_from = live_from.or(Some(u64::MAX));
            }
            What::Resumed => {
                if live_from == Some(u64::MAX) {
                    live_from = Some(at);
                }
                if fenced_from == Some(u64::MAX) {
                    fenced_from = Some(at);
                }
            }
            What::End { .. } | What::Exit { .. } | What::Killed => {
                close_fenced(&mut t, &mut fenced_from, at);
                close_live(&mut t, &mut live_from, at);
                over = true;
            }
            _ => {}
        }
    }
    // A worker whose records stop (killed): live until its last line.
    if let Some(last) = w.lines.last() {
        let at = last.mono_ns;
        if fenced_from != Some(u64::MAX) {
            close_fenced(&mut t, &mut fenced_from, at);
        }
        if live_from != Some(u64::MAX) {
            close_live(&mut t, &mut live_from, at);
        }
    }
    // A fence that closed before a pause (or build) starts counting at the
    // live interval's start.
    let live = t.live.clone();
    t.fenced = t
        .fenced
        .iter()
        .flat_map(|&(a, b)| {
            live.iter()
                .filter_map(move |&(la, lb)| {
                    let (x, y) = (a.max(la), b.min(lb));
                    (y > x).then_some((x, y))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Issuing: live less fenced, under the node id last named by then,
    // split where a line names another (a lease that lost its node id while
    // the worker was paused can reopen with another before the worker's next
    // call: the worker then says `issuing` with no `fenced` before it).
    let mut nodes: Vec<(u64, u64)> = w
        .lines
        .iter()
        .filter_map(|l| match l.what {
            What::Built { node } | What::Issuing { node } => Some((l.mono_ns, node)),
            _ => None,
        })
        .collect();
    nodes.sort_unstable();
    let node_at = |at: u64| {
        let i = nodes.partition_point(|&(t, _)| t <= at);
        nodes[..i].last().map(|&(_, n)| n)
    };
    let issue = |issuing: &mut Vec<(u64, u64, u64)>, from: u64, until: u64| {
        let mut cuts: Vec<u64> = nodes
            .iter()
            .map(|&(t, _)| t)
            .filter(|&t| t > from && t < until)
            .collect();
        cuts.push(until);
        let mut at = from;
        for cut in cuts {
            if let Some(node) = node_at(at) {
                issuing.push((at, cut, node));
            }
            at = cut;
        }
    };
    for &(la, lb) in &t.live {
        let mut at = la;
        for &(fa, fb) in t.fenced.iter().filter(|&&(fa, fb)| fb > la && fa < lb) {
            if fa > at {
                issue(&mut t.issuing, at, fa);
            }
            at = at.max(fb);
        }
        if lb > at {
            issue(&mut t.issuing, at, lb);
        }
    }
    t
}

/// "Every node id is held": a worker waiting for one, not a failure.
fn all_held(reason: &str) -> bool {
    reason.starts_with("every node id in")
}

/// A stretch of time with a constant number of live and of fenced
/// generators.
#[derive(Debug, Clone, Copy)]
struct Segment {
    from: u64,
    until: u64,
    live: i64,
    fenced: i64,
}

fn sweep(timelines: &[Timeline]) -> Vec<Segment> {
    let mut changes: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
    for t in timelines {
        for &(a, b) in &t.live {
            changes.entry(a).or_default().0 += 1;
            changes.entry(b).or_default().0 -= 1;
        }
        for &(a, b) in &t.fenced {
            changes.entry(a).or_default().1 += 1;
            changes.entry(b).or_default().1 -= 1;
        }
    }
    let mut segments = Vec::new();
    let (mut live, mut fenced) = (0, 0);
    let mut at = None;
    for (&time, &(dl, df)) in &changes {
        if let Some(from) = at
            && time > from
        {
            segments.push(Segment {
                from,
                until: time,
                live,
                fenced,
            });
        }
        live += dl;
        fenced += df;
        at = Some(time);
    }
    segments
}

fn overlap(a: u64, b: u64, from: u64, until: u64) -> u64 {
    b.min(until).saturating_sub(a.max(from))
}

fn median_max(mut values: Vec<f64>) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[n - 1])
}

pub(super) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Blanks the numbers of a reason, so reasons group by kind.
fn shape(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut in_number = false;
    for c in reason.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            // "1.5s", "127.0.0.1": one blank.
            if !(in_number && c == '.') {
                in_number = false;
            }
            if !in_number {
                out.push(c);
            }
        }
    }
    out
}

fn kinds(stats: &[FaultStat], workers: &[Worker], windows: &[Fault], end: u64) -> Vec<KindStat> {
    let mut order: Vec<String> = Vec::new();
    for s in stats {
        if !order.contains(&s.fault.kind) {
            order.push(s.fault.kind.clone());
        }
    }
    order
        .into_iter()
        .map(|kind| {
            let of: Vec<&FaultStat> = stats.iter().filter(|s| s.fault.kind == kind).collect();
            let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
            for (n, w) in windows.iter().enumerate() {
                if w.kind != kind {
                    continue;
                }
                let until = windows.get(n + 1).map_or(end, |next| next.start_ns);
                for l in workers.iter().flat_map(|w| w.lines.iter()) {
                    if l.mono_ns < w.start_ns || l.mono_ns >= until {
                        continue;
                    }
                    let reason = match &l.what {
                        What::BuildFailed { reason } if !all_held(reason) => {
                            format!("build: {}", shape(reason))
                        }
                        What::Lease { event } if event.contains("renew") => shape(event),
                        _ => continue,
                    };
                    *reasons.entry(reason).or_default() += 1;
                }
            }
            let mut reasons: Vec<(String, u64)> = reasons.into_iter().collect();
            reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
            reasons.truncate(6);
            KindStat {
                count: of.len(),
                all_fenced_ms: median_max(of.iter().map(|s| ms(s.all_fenced_ns)).collect()),
                node_gap_ms: median_max(of.iter().map(|s| ms(s.node_gap_ns)).collect()),
                recovered_ms: median_max(
                    of.iter().filter_map(|s| s.recovered_ns.map(ms)).collect(),
                ),
                not_recovered: of.iter().filter(|s| s.recovered_ns.is_none()).count(),
                build_failures: of.iter().map(|s| s.build_failures).sum(),
                renewal_failures: of.iter().map(|s| s.renewal_failures).sum(),
                overlaps: of.iter().map(|s| s.overlaps).sum(),
                reasons,
                kind,
            }
        })
        .collect()
}

/// Each skewed worker's requested skew and the one its lines show against
/// the unskewed workers' (wall minus monotonic, medians).
pub(super) fn skews(workers: &[Worker]) -> Vec<(i64, i64)> {
    let Some(reference) = reference_offset(workers) else {
        return Vec::new();
    };
    workers
        .iter()
        .filter(|w| w.skew_ms != 0)
        .filter_map(|w| Some((w.skew_ms, offset_of(w)? - reference)))
        .collect()
}

/// A worker's wall clock minus the monotonic one, in ms (the median of its
/// lines).
fn offset_of(w: &Worker) -> Option<i64> {
    let mut o: Vec<i64> = w
        .lines
        .iter()
        .filter(|l| matches!(l.what, What::Start { .. } | What::Progress { .. }))
        .map(|l| l.wall_ms as i64 - (l.mono_ns / 1_000_000) as i64)
        .collect();
    o.sort_unstable();
    o.get(o.len() / 2).copied()
}

/// The unskewed workers' [`offset_of`], their median.
pub(super) fn reference_offset(workers: &[Worker]) -> Option<i64> {
    let mut reference: Vec<i64> = workers
        .iter()
        .filter(|w| w.skew_ms == 0)
        .filter_map(offset_of)
        .collect();
    reference.sort_unstable();
    reference.get(reference.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(mono_ns: u64, what: What) -> Line {
        Line {
            mono_ns,
            wall_ms: 0,
            what,
        }
    }

    #[test]
    fn fenced_time_is_clipped_to_live_time() {
        let w = Worker {
            index: 0,
            plant: "none".into(),
            lines: vec![
                line(10, What::Built { node: 0 }),
                line(
                    30,
                    What::Fenced {
                        node: 0,
                        since_ns: 20,
                    },
                ),
                line(40, What::Paused),
                line(60, What::Resumed),
                line(70, What::Issuing { node: 1 }),
                line(100, What::End { ids: 5 }),
            ],
            ..Worker::default()
        };
        let t = timeline(&w);
        assert_eq!(t.live, vec![(10, 40), (60, 100)]);
        assert_eq!(t.fenced, vec![(20, 40), (60, 70)]);
        assert_eq!(t.issuing, vec![(10, 20, 0), (70, 100, 1)]);
    }

    #[test]
    fn a_node_id_named_without_a_fence_splits_the_issuing() {
        // Paused holding node 2; on resume the lease had reopened with
        // node 3 and the worker's first ID was under it (no `fenced`).
        let w = Worker {
            index: 0,
            plant: "none".into(),
            lines: vec![
                line(10, What::Built { node: 2 }),
                line(40, What::Paused),
                line(60, What::Resumed),
                line(62, What::Issuing { node: 3 }),
                line(100, What::End { ids: 5 }),
            ],
            ..Worker::default()
        };
        let t = timeline(&w);
        assert_eq!(t.issuing, vec![(10, 40, 2), (60, 62, 2), (62, 100, 3)]);
    }

    #[test]
    fn all_fenced_needs_every_live_generator_fenced() {
        let a = Timeline {
            live: vec![(0, 100)],
            fenced: vec![(10, 50)],
            ..Timeline::default()
        };
        let b = Timeline {
            live: vec![(0, 100)],
            fenced: vec![(30, 80)],
            ..Timeline::default()
        };
        let all: u64 = sweep(&[a, b])
            .iter()
            .filter(|s| s.live > 0 && s.fenced == s.live)
            .map(|s| s.until - s.from)
            .sum();
        assert_eq!(all, 20);
    }

    #[test]
    fn reasons_group_without_numbers() {
        assert_eq!(
            shape("no answer from etcd http://127.1.2.3:2379 within 1.5s"),
            "no answer from etcd http://#:# within #s"
        );
    }
}
