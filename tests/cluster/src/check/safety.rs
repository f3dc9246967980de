//! The safety checks over every ID of a run.
//!
//! - **Duplicates**: an ID issued more than once.
//! - **Overlaps**: a (node id, millisecond) issued in by two processes,
//!   even without a duplicate: both held the node id at once.
//! - **Order**: each worker's IDs increase.
//! - **Deadlines.** Each worker reports every extension of its lease
//!   (the claim, and each renewal of it) with the instants its keeper sent
//!   the request and received the answer, on CLOCK_MONOTONIC. From those
//!   alone the checker computes each claim's deadline, as the lease docs
//!   state the rule: the claim's *sent* + TTL − margin, and each renewal
//!   whose answer arrived before the deadline then in force moves it to
//!   that renewal's *sent* + TTL − margin (never back). A renewal answered
//!   after the deadline extends nothing, and nothing after it either: the
//!   claim is over. An ID is **past its deadline** if the `try_next_id`
//!   call that returned it started after its claim's deadline, plus a
//!   tolerance of 1 ms and 300 ppm of TTL − margin (the library's own
//!   clock, the TSC, may run at a rate that far from CLOCK_MONOTONIC
//!   before it falls back to it, and the instants are read a few
//!   microseconds from the keeper's own). An ID is counted against the
//!   one claim of its worker whose span (from its answer to the next
//!   claim's request) its call overlaps; a call that overlaps two spans (a
//!   worker paused by the nemesis across a fresh claim) cannot be
//!   attributed and is left out of this check and the next, and counted.
//!   An ID under a node id its claim was not for, or with no claim in
//!   force, is **unclaimed**.
//! - **Send instants from outside.** The deadlines above trust the
//!   keeper's own *sent*: a keeper that stamped it late (after its request
//!   left) would move its fence's deadline and the checker's together.
//!   Where a proxy in front of the store recorded when the worker's
//!   requests left it (`w<k>.requests`), the checker takes each
//!   extension's request from there: the first request that left after
//!   the worker's last keeper line (an extension or another lease event,
//!   each printed after the request it reports was answered) and before
//!   the answer arrived. The deadline counts from the earlier of that and
//!   the keeper's *sent*, and a *sent* more than [`READ_SLACK_NS`] after
//!   it is **stamped late**.
//! - **Hand-off order**: per node id, the claims of every worker in the
//!   order their answers arrived are its holders, one after another; every
//!   ID a later holder issued must be above every ID each earlier one
//!   issued, by the IDs' timestamps (strictly: a new holder starts after
//!   its floor, the last millisecond its predecessors may have used).

use std::collections::BTreeMap;

use flakeid::Layout;

use super::Worker;
use crate::record::{Issued, What};

/// How far the fence's clock may run from CLOCK_MONOTONIC, in parts per
/// million (the library checks its TSC against the OS clock and uses the
/// OS clock when they differ by more).
pub const RATE_PPM: u64 = 300;
/// Between the keeper's own reading of the time and the instants it
/// reports.
pub const READ_SLACK_NS: u64 = 1_000_000;

/// One claim of a worker and what its renewals made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub worker: usize,
    pub node: u64,
    pub sent_ns: u64,
    pub arrived_ns: u64,
    /// The deadline as the checker computes it.
    pub deadline_ns: u64,
    /// The first renewal answered after the deadline in force (the keeper
    /// must not have taken it), if any.
    pub late_answer_ns: Option<u64>,
    /// When the worker's next claim was sent (`u64::MAX`: none).
    pub until_ns: u64,
    /// Extensions of this claim whose reported send came after their first
    /// request left the worker (by a proxy's record): (reported, seen).
    pub late_stamps: Vec<(u64, u64)>,
    /// Extensions checked against a proxy's record.
    pub stamps_checked: u64,
}

/// A worker's claims, from its `Extended` lines, with their deadlines.
pub fn claims(w: &Worker) -> Vec<Claim> {
    let valid_ns = w.ttl_ms.saturating_sub(w.margin_ms) * 1_000_000;
    let tolerance = tolerance_ns(valid_ns);
    let mut extensions: Vec<(u64, u64, bool, u64)> = w
        .lines
        .iter()
        .filter_map(|l| match l.what {
            crate::record::What::Extended {
                node,
                claim,
                sent_ns,
                arrived_ns,
            } => Some((arrived_ns, sent_ns, claim, node)),
            _ => None,
        })
        .collect();
    extensions.sort_unstable();
    // Printed by the keeper's hook after the request each reports was
    // answered: a later extension's requests left after them.
    let mut boundaries: Vec<u64> = w
        .lines
        .iter()
        .filter(|l| matches!(l.what, What::Extended { .. } | What::Lease { .. }))
        .map(|l| l.mono_ns)
        .collect();
    boundaries.sort_unstable();
    let mut claims: Vec<Claim> = Vec::new();
    for (arrived_ns, reported_ns, claim, node) in extensions {
        let seen = w
            .requests
            .as_deref()
            .and_then(|r| first_request(r, &boundaries, arrived_ns));
        let sent_ns = seen.map_or(reported_ns, |seen| seen.min(reported_ns));
        let stamp = seen.map(|seen| (reported_ns, seen));
        if claim {
            if let Some(last) = claims.last_mut() {
                last.until_ns = sent_ns;
            }
            claims.push(Claim {
                worker: w.index,
                node,
                sent_ns,
                arrived_ns,
                deadline_ns: sent_ns + valid_ns,
                late_answer_ns: None,
                until_ns: u64::MAX,
                late_stamps: Vec::new(),
                stamps_checked: 0,
            });
            if let (Some(c), Some(stamp)) = (claims.last_mut(), stamp) {
                c.note_stamp(stamp);
            }
            continue;
        }
        let Some(c) = claims.last_mut() else { continue };
        if let Some(stamp) = stamp {
            c.note_stamp(stamp);
        }
        if c.late_answer_ns.is_some() || node != c.node {
            continue;
        }
        if arrived_ns > c.deadline_ns + tolerance {
            c.late_answer_ns = Some(arrived_ns);
        } else {
            c.deadline_ns = c.deadline_ns.max(sent_ns + valid_ns);
        }
    }
    claims
}

impl Claim {
    /// Counts an extension's reported send against the one a proxy saw.
    fn note_stamp(&mut self, (reported, seen): (u64, u64)) {
        self.stamps_checked += 1;
        if reported > seen + READ_SLACK_NS {
            self.late_stamps.push((reported, seen));
        }
    }
}

/// The first of `requests` (sorted) that left after the last of
/// `boundaries` (sorted) before `arrived_ns`, and at or before it.
fn first_request(requests: &[u64], boundaries: &[u64], arrived_ns: u64) -> Option<u64> {
    let after = boundaries
        .partition_point(|&b| b < arrived_ns)
        .checked_sub(1)
        .map_or(0, |k| boundaries[k]);
    let k = requests.partition_point(|&r| r <= after);
    requests.get(k).copied().filter(|&r| r <= arrived_ns)
}

/// The tolerance of the deadline check for a claim valid `valid_ns`.
pub fn tolerance_ns(valid_ns: u64) -> u64 {
    READ_SLACK_NS + valid_ns / 1_000_000 * RATE_PPM
}

/// What the safety checks found.
#[derive(Debug, Clone, Default)]
pub struct Safety {
    pub duplicates: u64,
    pub overlaps: u64,
    pub out_of_order: u64,
    pub past_deadline: u64,
    /// Extensions whose reported send came after their request left (by a
    /// proxy's record), and extensions checked so.
    pub late_stamps: u64,
    pub stamps_checked: u64,
    pub unclaimed: u64,
    pub handoff: u64,
    /// IDs whose call overlapped two claims' spans (left out of the
    /// deadline and hand-off checks).
    pub unattributed: u64,
    /// IDs checked against a deadline.
    pub attributed: u64,
    /// Holders (claims that issued IDs) compared for hand-off order.
    pub holders: u64,
    /// Milliseconds between consecutive IDs of one worker under one claim
    /// (gaps of less than 100 ms: longer ones are fences and pauses), and
    /// how many of them the worker issued in: how densely it issued.
    pub ms_spanned: u64,
    pub ms_visited: u64,
    /// The Unix millisecond of each overlap (to tell which fault it
    /// followed).
    pub overlap_ms: Vec<u64>,
    pub examples: Vec<String>,
}

impl Safety {
    fn example(&mut self, e: String) {
        if self.examples.len() < 12 {
            self.examples.push(e);
        }
    }
}

/// Checks the IDs of `workers` (each worker's [`Issued`] records in
/// `issued`, by position).
pub fn check(layout: &Layout, workers: &[Worker], issued: &[Vec<Issued>]) -> Safety {
    let mut s = Safety::default();
    let node_bits = layout.node_bits();
    let decode = |id: u64| {
        let d = layout
            .decode(flakeid::Id::from_u64(id))
            .expect("an ID of the fault test's layout");
        (d.timestamp(), d.node_id())
    };

    // Duplicates, overlaps, order.
    let mut all: Vec<u64> = Vec::new();
    let mut keys: Vec<(u64, u32)> = Vec::new();
    for (w, ids) in workers.iter().zip(issued) {
        let bad = ids.windows(2).filter(|p| p[1].id <= p[0].id).count() as u64;
        if bad > 0 {
            s.example(format!("w{}: {bad} IDs not above the one before", w.index));
        }
        s.out_of_order += bad;
        let start = keys.len();
        let mut last = None;
        for i in ids {
            let (ts, node) = decode(i.id);
            let key = (ts << node_bits) | node;
            if last != Some(key) {
                keys.push((key, w.index as u32));
                last = Some(key);
            }
        }
        // A worker's own keys once each, even if its IDs went back.
        keys[start..].sort_unstable();
        let mut kept = start;
        for i in start..keys.len() {
            if i == start || keys[i] != keys[kept - 1] {
                keys[kept] = keys[i];
                kept += 1;
            }
        }
        keys.truncate(kept);
        all.extend(ids.iter().map(|i| i.id));
    }
    all.sort_unstable();
    for run in all.chunk_by(|a, b| a == b).filter(|r| r.len() > 1) {
        s.duplicates += run.len() as u64 - 1;
        s.example(format!("ID {} issued {} times", run[0], run.len()));
    }
    drop(all);
    keys.sort_unstable();
    for run in keys.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
        s.overlaps += 1;
        let key = run[0].0;
        let node = key & ((1 << node_bits) - 1);
        let unix_ms = layout.unix_ms(key >> node_bits);
        s.overlap_ms.push(unix_ms);
        let who: Vec<String> = run.iter().map(|(_, w)| format!("w{w}")).collect();
        s.example(format!(
            "node {node} at {unix_ms} ms issued by {}",
            who.join(" and ")
        ));
    }
    drop(keys);

    // Deadlines, and each holder's lowest and highest timestamp.
    // (node) -> [(claim answered, worker, lowest, highest)]
    let mut holders: BTreeMap<u64, Vec<(u64, usize, u64, u64)>> = BTreeMap::new();
    for (w, ids) in workers.iter().zip(issued) {
        let claims = claims(w);
        let valid_ns = w.ttl_ms.saturating_sub(w.margin_ms) * 1_000_000;
        let tolerance = tolerance_ns(valid_ns);
        // Per claim: lowest and highest timestamp, IDs past the deadline.
        let mut spans: Vec<Option<(u64, u64)>> = vec![None; claims.len()];
        let mut past = vec![0u64; claims.len()];
        let mut first = 0;
        for i in ids {
            // Claims whose span [answer, next claim's request) the call
            // [start, end] overlaps.
            while first < claims.len() && claims[first].until_ns <= i.start_ns {
                first += 1;
            }
            let overlapping = claims[first..]
                .iter()
                .take_while(|c| c.arrived_ns <= i.end_ns)
                .count();
            let (ts, node) = decode(i.id);
            match overlapping {
                0 => {
                    s.unclaimed += 1;
                    if s.unclaimed <= 3 {
                        s.example(format!(
                            "w{}: ID {} (node {node}) issued with no claim in force (call at {} ns)",
                            w.index, i.id, i.start_ns
                        ));
                    }
                }
                1 => {
                    let c = &claims[first];
                    s.attributed += 1;
                    if node != c.node {
                        s.unclaimed += 1;
                        s.example(format!(
                            "w{}: ID {} under node {node}, its claim was for node {}",
                            w.index, i.id, c.node
                        ));
                        continue;
                    }
                    if i.start_ns > c.deadline_ns + tolerance {
                        past[first] += 1;
                    }
                    if let Some((_, hi)) = spans[first]
                        && ts > hi
                        && ts - hi < 100
                    {
                        s.ms_spanned += ts - hi;
                        s.ms_visited += 1;
                    }
                    let span = spans[first].get_or_insert((ts, ts));
                    span.0 = span.0.min(ts);
                    span.1 = span.1.max(ts);
                }
                _ => s.unattributed += 1,
            }
        }
        for (k, c) in claims.iter().enumerate() {
            s.stamps_checked += c.stamps_checked;
            s.late_stamps += c.late_stamps.len() as u64;
            if let Some((reported, seen)) = c.late_stamps.first() {
                s.example(format!(
                    "w{}: {} extensions of node {} reported sent after their request left: \
                     at {reported} ns, the request at {seen} ns",
                    w.index,
                    c.late_stamps.len(),
                    c.node
                ));
            }
            if past[k] > 0 {
                s.past_deadline += past[k];
                let late = c
                    .late_answer_ns
                    .map_or(String::new(), |a| format!(", a renewal answered at {a} ns"));
                s.example(format!(
                    "w{}: {} IDs under node {} from calls that started past the deadline \
                     {} ns (claim sent {} ns{late})",
                    w.index, past[k], c.node, c.deadline_ns, c.sent_ns
                ));
            }
            if let Some((lo, hi)) = spans[k] {
                holders
                    .entry(c.node)
                    .or_default()
                    .push((c.arrived_ns, w.index, lo, hi));
            }
        }
    }

    // Hand-off order.
    for (node, mut list) in holders {
        list.sort_unstable();
        s.holders += list.len() as u64;
        // The highest timestamp of the holders so far, and whose.
        let mut highest: Option<(u64, usize)> = None;
        for (answered, worker, lo, hi) in list {
            if let Some((top, by)) = highest
                && lo <= top
            {
                s.handoff += 1;
                s.example(format!(
                    "node {node}: w{worker} (claim answered at {answered} ns) issued at \
                     {} ms, not above w{by}'s {} ms before it",
                    layout.unix_ms(lo),
                    layout.unix_ms(top)
                ));
            }
            if highest.is_none_or(|(top, _)| hi > top) {
                highest = Some((hi, worker));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Line, What};

    const MS: u64 = 1_000_000;

    fn layout() -> Layout {
        crate::layout()
    }

    /// An ID of node `node` at Unix millisecond `unix_ms`, sequence `seq`.
    fn id(node: u64, unix_ms: u64, seq: u64) -> u64 {
        let l = layout();
        let ts = l.timestamp_at(unix_ms).unwrap();
        (ts << (l.node_bits() + 8)) | (node << 8) | seq
    }

    fn issued(at_ns: u64, id: u64) -> Issued {
        Issued {
            start_ns: at_ns,
            end_ns: at_ns + 10_000,
            id,
        }
    }

    /// A worker with TTL 3 s and margin 600 ms (valid 2.4 s), and these
    /// extensions: (node, claim, sent, arrived).
    fn worker(index: usize, extensions: &[(u64, bool, u64, u64)]) -> Worker {
        let lines = extensions
            .iter()
            .map(|&(node, claim, sent_ns, arrived_ns)| Line {
                mono_ns: arrived_ns,
                wall_ms: 0,
                what: What::Extended {
                    node,
                    claim,
                    sent_ns,
                    arrived_ns,
                },
            })
            .collect();
        Worker {
            index,
            plant: "none".into(),
            ttl_ms: 3_000,
            margin_ms: 600,
            lines,
            ..Worker::default()
        }
    }

    const T0: u64 = 1_700_000_000_000;

    #[test]
    fn deadlines_count_from_the_request_and_stop_at_a_late_answer() {
        // Claim sent at 1 s (answered 1.001 s): deadline 3.4 s. A renewal
        // sent at 2 s and answered at 2.5 s: 4.4 s (from its request, not
        // its answer). A renewal sent at 3 s answered at 4.5 s: too late,
        // extends nothing, and neither does the one after it.
        let w = worker(
            0,
            &[
                (1, true, 1_000 * MS, 1_001 * MS),
                (1, false, 2_000 * MS, 2_500 * MS),
                (1, false, 3_000 * MS, 4_500 * MS),
                (1, false, 4_000 * MS, 4_501 * MS),
            ],
        );
        let c = claims(&w);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].deadline_ns, 4_400 * MS);
        assert_eq!(c[0].late_answer_ns, Some(4_500 * MS));

        let tolerance = tolerance_ns(2_400 * MS);
        let ids = vec![
            issued(1_002 * MS, id(1, T0, 0)),
            issued(4_400 * MS + tolerance, id(1, T0 + 1, 0)),
            // Past it: the planted "deadline from the answer" would issue
            // until 4.9 s.
            issued(4_400 * MS + tolerance + 1, id(1, T0 + 2, 0)),
            issued(4_800 * MS, id(1, T0 + 3, 0)),
        ];
        let s = check(&layout(), &[w], &[ids]);
        assert_eq!(s.past_deadline, 2, "{:?}", s.examples);
        assert_eq!((s.attributed, s.unclaimed, s.unattributed), (4, 0, 0));
    }

    #[test]
    fn a_send_stamped_after_its_request_left_is_caught_by_the_proxys_instants() {
        // As above, but the renewal's request left at 1.9 s (a proxy saw
        // it) and the keeper reported it sent at 2 s: the deadline counts
        // from 1.9 s, and the stamp is late. The claim's request left at
        // 0.999 s, before its reported send: on time.
        let mut w = worker(
            0,
            &[
                (1, true, 1_000 * MS, 1_001 * MS),
                (1, false, 2_000 * MS, 2_500 * MS),
            ],
        );
        // Another keeper line (a renewal failure) at 1.5 s: requests
        // before it belong to earlier extensions.
        w.lines.push(Line {
            mono_ns: 1_500 * MS,
            wall_ms: 0,
            what: What::Lease {
                event: "lease renewal failed".into(),
            },
        });
        w.requests = Some(vec![999 * MS, 1_200 * MS, 1_900 * MS, 1_950 * MS]);
        let c = claims(&w);
        assert_eq!(c[0].deadline_ns, 4_300 * MS);
        assert_eq!(c[0].late_stamps, [(2_000 * MS, 1_900 * MS)]);
        assert_eq!(c[0].stamps_checked, 2);
        let tolerance = tolerance_ns(2_400 * MS);
        let ids = vec![
            issued(4_300 * MS + tolerance, id(1, T0, 0)),
            issued(4_350 * MS, id(1, T0 + 1, 0)),
        ];
        let s = check(&layout(), &[w.clone()], std::slice::from_ref(&ids));
        assert_eq!((s.past_deadline, s.late_stamps), (1, 1), "{:?}", s.examples);
        // Without the proxy's record, the keeper's stamps alone: nothing.
        w.requests = None;
        let s = check(&layout(), &[w], &[ids]);
        assert_eq!((s.past_deadline, s.late_stamps), (0, 0), "{:?}", s.examples);
    }

    #[test]
    fn every_id_needs_a_claim_for_its_node() {
        let w = worker(0, &[(1, true, 1_000 * MS, 1_010 * MS)]);
        let ids = vec![
            // Before the claim was answered.
            issued(1_000 * MS, id(1, T0, 0)),
            issued(1_020 * MS, id(1, T0 + 1, 0)),
            // Under another node id.
            issued(1_030 * MS, id(2, T0 + 2, 0)),
        ];
        let s = check(&layout(), &[w], &[ids]);
        assert_eq!(s.unclaimed, 2, "{:?}", s.examples);
        assert_eq!(s.past_deadline, 0);
    }

    #[test]
    fn a_call_across_two_claims_is_left_out() {
        let w = worker(
            0,
            &[
                (1, true, 1_000 * MS, 1_001 * MS),
                (1, true, 5_000 * MS, 5_001 * MS),
            ],
        );
        let ids = vec![
            issued(1_100 * MS, id(1, T0, 0)),
            // Paused from 2 s to 6 s inside the call.
            Issued {
                start_ns: 2_000 * MS,
                end_ns: 6_000 * MS,
                id: id(1, T0 + 5_000, 0),
            },
            issued(6_100 * MS, id(1, T0 + 5_100, 0)),
        ];
        let s = check(&layout(), &[w], &[ids]);
        assert_eq!((s.attributed, s.unattributed), (2, 1));
        assert_eq!(
            s.past_deadline + s.unclaimed + s.handoff,
            0,
            "{:?}",
            s.examples
        );
    }

    #[test]
    fn a_later_holder_must_issue_above_every_earlier_one() {
        // w0 holds node 3 from 1 s, w1 from 5 s, w0 again from 9 s.
        let w0 = worker(
            0,
            &[
                (3, true, 1_000 * MS, 1_001 * MS),
                (3, true, 9_000 * MS, 9_001 * MS),
            ],
        );
        let w1 = worker(1, &[(3, true, 5_000 * MS, 5_001 * MS)]);
        let honest = |w1_first_ms: u64| {
            (
                vec![
                    issued(1_100 * MS, id(3, T0 + 100, 0)),
                    issued(2_000 * MS, id(3, T0 + 1_000, 0)),
                    issued(9_100 * MS, id(3, T0 + 8_100, 0)),
                ],
                vec![
                    issued(5_100 * MS, id(3, w1_first_ms, 0)),
                    issued(6_000 * MS, id(3, T0 + 5_000, 0)),
                ],
            )
        };
        let (a, b) = honest(T0 + 4_100);
        let s = check(&layout(), &[w0.clone(), w1.clone()], &[a, b]);
        assert_eq!(s.handoff, 0, "{:?}", s.examples);
        assert_eq!(s.holders, 3);
        // w1 starts in the millisecond w0 ended in: not above it.
        let (a, b) = honest(T0 + 1_000);
        let s = check(&layout(), &[w0.clone(), w1.clone()], &[a, b]);
        assert_eq!(s.handoff, 1, "{:?}", s.examples);
        assert_eq!(s.overlaps, 1);
        // w1 below w0's last, in no millisecond w0 used: no overlap, but
        // out of hand-off order all the same.
        let (a, b) = honest(T0 + 500);
        let s = check(&layout(), &[w0, w1], &[a, b]);
        assert_eq!(
            (s.handoff, s.overlaps, s.duplicates),
            (1, 0, 0),
            "{:?}",
            s.examples
        );
    }

    #[test]
    fn duplicates_overlaps_and_order() {
        let w0 = worker(0, &[(1, true, 0, 1)]);
        let w1 = worker(1, &[(2, true, 0, 1)]);
        let a = vec![
            issued(MS, id(1, T0, 0)),
            issued(2 * MS, id(1, T0, 1)),
            issued(3 * MS, id(1, T0, 1)),
        ];
        let b = vec![issued(MS, id(1, T0, 1)), issued(2 * MS, id(2, T0, 0))];
        let s = check(&layout(), &[w0, w1], &[a, b]);
        // id(1, T0, 1) three times; (node 1, T0) from w0 and w1; w0's
        // third ID not above its second.
        assert_eq!((s.duplicates, s.overlaps, s.out_of_order), (2, 1, 1));
    }
}
