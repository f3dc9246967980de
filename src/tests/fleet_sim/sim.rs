//! The discrete-event loop that runs a fleet, and the checks it makes as
//! it goes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::clock::{Clock, ManualClock};
use crate::error::GenerateError;
use crate::id::Id;
use crate::tests::memory::{Fault, MemoryBackend, Servers};
use std::time::Duration;

use super::machine::{Freeze, Machine, Process, Profile};
use super::{
    Config, DAY, Draws, EPOCH_MS, HOUR, MINUTE, MS, NODE_BITS, POISONED, Rng, SECOND, T0_MS,
    node_of,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    /// A keeper asked to be woken (valid if it is the machine's `next_wake`).
    Wake(usize),
    /// A generator tries to issue.
    Issue(usize),
    /// A machine's next fault.
    Fault(usize),
    /// A freeze, link fault or clock step of a machine may have ended.
    Heal(usize),
    Restart(usize),
    Outage,
    OutageEnd,
    /// The store's primary is paused, or cut off from the sentinels with a
    /// replica of its own.
    Failover,
    /// The sentinels promote a replica.
    Promote,
    /// The paused old primary resumes, still a primary by its own view.
    OldBack,
    /// The old primary is made a replica of the new one (and a partition
    /// heals).
    Demote,
    Sweep,
}

/// What the checker found wrong, and what it counted.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// IDs issued twice (the exact check).
    pub(super) duplicates: u64,
    /// The same, by grants [`Report::overlaps_lost_mark`] exempts.
    pub(super) duplicates_lost_mark: u64,
    /// Pairs of holders of one node id whose ID ranges overlap.
    pub(super) overlaps: u64,
    /// IDs not above the previous one of the same grant.
    pub(super) not_increasing: u64,
    /// Instants at which two fences were open for one node id.
    pub(super) two_holders: u64,
    /// The same, with a suspended VM's fence (exempt).
    pub(super) two_holders_suspended: u64,
    /// A fence open for a node id the store gives to someone else or nobody.
    pub(super) open_unheld: u64,
    pub(super) open_unheld_suspended: u64,
    /// A fence open a TTL less the margin after its keeper last sent a
    /// request the store applied (on the holder's monotonic clock): past
    /// any deadline a renewal or claim can have given it.
    pub(super) open_past_deadline: u64,
    /// The same, with a suspended VM's fence (exempt).
    pub(super) open_past_deadline_suspended: u64,
    /// The same, for a claim made before the primary changed, within a TTL
    /// of the change (exempt: a failover may lose the claim, and the epoch
    /// rule keeps anyone else from the node id meanwhile).
    pub(super) open_unheld_failover: u64,
    /// Overlapping ranges of a holder whose floor was below a mark a
    /// failover lost and a holder whose clock was off by more than half the
    /// margin (exempt: the lease docs bound the clocks for that case).
    pub(super) overlaps_lost_mark: u64,
    /// Claims of a poisoned node id.
    pub(super) poisoned_claims: u64,
    /// The first few of each, described.
    pub(super) examples: Vec<String>,

    pub(super) ids: u64,
    pub(super) attempts: u64,
    pub(super) grants: u64,
    /// Grants whose claim passed over free node ids for their marks, and how
    /// many ids those were in all.
    pub(super) claims_skipping: u64,
    pub(super) skipped_ids: u64,
    pub(super) restarts: u64,
    pub(super) failed_starts: u64,
    pub(super) faults: [u64; 9],
    pub(super) outages: u64,
    /// Failovers, those by a partition, and those whose promoted replica
    /// lacked node keys or marks the old primary had.
    pub(super) failovers: u64,
    pub(super) partitions: u64,
    pub(super) lossy_failovers: u64,
    /// Node keys and marks the promoted replicas lacked.
    pub(super) lost_claims: u64,
    pub(super) lost_marks: u64,
    /// For machines whose fence closed after a promotion: how long after
    /// it the fence opened again (ns); and how many machines' fences stayed
    /// open through one.
    pub(super) reopened_after: Vec<u64>,
    pub(super) never_fenced: u64,
    /// Sampled node-time (ns) up and not paused, and of it fenced.
    pub(super) up_ns: u128,
    pub(super) fenced_ns: u128,
    /// Each machine's availability (per million), over machines with enough
    /// healthy attempts.
    pub(super) availability: Vec<u64>,
    pub(super) healthy_attempts: u64,
    pub(super) healthy_issued: u64,
    /// The same per machine, not counting attempts that waited for the
    /// grant's floor (a wait `max_mark_ahead` bounds).
    pub(super) availability_lease: Vec<u64>,
    /// Healthy attempts refused, by [`REFUSALS`].
    pub(super) refused: [u64; 6],
    /// The longest a grant's floor was ahead of its holder's clock.
    pub(super) longest_floor_wait_ms: u64,
    /// The least available machines, described.
    pub(super) least_available: Vec<String>,
}

pub(super) const REFUSALS: [&str; 6] = [
    "fenced",
    "reserving",
    "waiting for a floor",
    "exhausted",
    "clock behind",
    "other",
];

impl Report {
    pub(super) fn violations(&self) -> u64 {
        self.duplicates
            + self.overlaps
            + self.not_increasing
            + self.two_holders
            + self.open_unheld
            + self.open_past_deadline
            + self.poisoned_claims
    }

    pub(super) fn note(&mut self, what: String) {
        if self.examples.len() < 12 {
            self.examples.push(what);
        }
    }

    pub(super) fn availability_at(&self, per: usize) -> f64 {
        percentile(&self.availability, per)
    }
}

/// The `per`-th percentile of sorted parts per million, as a share.
pub(super) fn percentile(sorted: &[u64], per: usize) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[(sorted.len() - 1) * per / 100] as f64 / 1e6
}

pub(super) const FAULTS: [&str; 9] = [
    "crash",
    "clean restart",
    "pause",
    "VM suspend",
    "clock back",
    "clock forward",
    "partition",
    "lost replies",
    "late replies, then cut off",
];

pub(super) struct Sim {
    pub(super) config: Config,
    pub(super) rng: Rng,
    pub(super) now: u64,
    pub(super) store_clock: ManualClock,
    pub(super) backend: MemoryBackend,
    pub(super) machines: Vec<Machine>,
    pub(super) queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    pub(super) pushed: u64,
    pub(super) outage_from: u64,
    pub(super) outage_until: u64,
    pub(super) calm_from: u64,
    /// Per node id: the machines whose fence was last seen open for it.
    pub(super) open_by_node: Vec<Vec<usize>>,
    /// Per node id: the ID ranges of its holders (first, last, grant).
    pub(super) ranges: Vec<Vec<(u64, u64, u64)>>,
    /// Every ID and the grant it was issued under (the exact check).
    pub(super) exact: Option<HashMap<u64, u64>>,
    pub(super) report: Report,
    /// The failover under way: the old primary, the promoted one (once it
    /// is), and whether it is a partition.
    pub(super) failover: Option<Failover>,
    /// When the store's primary last changed (a promotion, a partition's
    /// healing).
    pub(super) changed_at: Option<u64>,
    /// Per node id: the highest mark a failover lost (Unix ms; 0: none).
    pub(super) lost_mark: Vec<u64>,
    /// Per grant (by serial, from 1): whether its holder's clock kept
    /// within half the margin of true time, and whether its floor was
    /// below a lost mark.
    pub(super) grant_info: Vec<GrantInfo>,
}

/// A failover under way.
#[derive(Debug, Clone, Copy)]
pub(super) struct Failover {
    pub(super) old: usize,
    pub(super) new: Option<usize>,
    pub(super) partition: bool,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct GrantInfo {
    /// When its claim was made (true time).
    pub(super) claimed: u64,
    pub(super) clock_ok: bool,
    pub(super) below_lost_mark: bool,
}

/// A holder's clock off from true time by more than this (ms) is outside
/// what the lease docs assume of clocks once a failover lost marks: half
/// the safety margin (2 s at the 10 s TTL) less the lead allowance (5 ms).
const CLOCK_BOUND_MS: i64 = 995;

impl Sim {
    pub(super) fn new(config: Config) -> Sim {
        let mut rng = Rng::new(config.seed);
        let store_clock = ManualClock::new(T0_MS);
        // Redis behind Sentinel: a primary and two replicas, one to
        // acknowledge each claim and renewal. The primary has served the
        // lease data for an hour (its epoch's first TTL is long over).
        let lags = [rng.log_uniform(1, 5_000), rng.log_uniform(1, 5_000)];
        let backend = MemoryBackend::replicated(store_clock.clone(), &lags, 1);
        backend.set_epoch(T0_MS - HOUR / MS);
        for (node, mark) in POISONED {
            backend.set_mark(node, mark);
        }
        let machines = (0..config.machines)
            .map(|_| {
                let boot_skew_ms = match rng.below(100) {
                    // Clocks as NTP keeps them.
                    0..90 => rng.between(0, 100) as i64 - 50,
                    // A minute off.
                    90..98 => rng.between(0, 120_000) as i64 - 60_000,
                    // Up to a day off, either way.
                    _ => {
                        let off = rng.log_uniform(60_000, DAY / MS) as i64;
                        if rng.one_in(2) { off } else { -off }
                    }
                };
                Machine {
                    process: None,
                    profile: Profile::draw(&mut rng),
                    wall: ManualClock::new(T0_MS),
                    boot_skew_ms,
                    skew_ms: boot_skew_ms,
                    drift_ppm: rng.between(0, 400) as i64 - 200,
                    synced: 0,
                    frozen: None,
                    link: None,
                    correct_at: 0,
                    wall_high: 0,
                    calm_from: 0,
                    next_wake: 0,
                    reopen: None,
                    healthy: 0,
                    issued_healthy: 0,
                    refused: [0; 6],
                }
            })
            .collect();
        let ids = 1usize << NODE_BITS;
        let exact = config.exact.then(HashMap::new);
        let mut sim = Sim {
            rng,
            now: 0,
            store_clock,
            backend,
            machines,
            queue: BinaryHeap::new(),
            pushed: 0,
            outage_from: 0,
            outage_until: 0,
            calm_from: 0,
            open_by_node: vec![Vec::new(); ids],
            ranges: vec![Vec::new(); ids],
            exact,
            report: Report::default(),
            failover: None,
            changed_at: None,
            lost_mark: vec![0; ids],
            grant_info: vec![GrantInfo::default()],
            config,
        };
        let ttl = sim.ttl_ns();
        for i in 0..sim.machines.len() {
            // Processes start over the first TTL, then issue and fail.
            let at = sim.rng.below(ttl);
            sim.push(at, Event::Restart(i));
            let at = at + sim.rng.exp(sim.config.issue_every);
            sim.push(at, Event::Issue(i));
            let at = sim.rng.exp(sim.config.fault_every);
            sim.push(at, Event::Fault(i));
        }
        let at = sim.rng.exp(sim.config.outage_every);
        sim.push(at, Event::Outage);
        if sim.config.failover_every > 0 {
            let at = sim.rng.exp(sim.config.failover_every);
            sim.push(at, Event::Failover);
        }
        sim.push(10 * SECOND, Event::Sweep);
        sim
    }

    pub(super) fn ttl_ns(&self) -> u64 {
        u64::try_from(self.config.ttl.as_nanos()).unwrap_or(u64::MAX)
    }

    /// How long after a fault ends a machine's attempts count towards its
    /// availability again: a keeper retries every tenth of the TTL.
    pub(super) fn grace(&self) -> u64 {
        self.ttl_ns() / 4
    }

    pub(super) fn push(&mut self, at: u64, event: Event) {
        self.pushed += 1;
        self.queue.push(Reverse((at, self.pushed, event)));
    }

    pub(super) fn run(mut self) -> Report {
        while let Some(Reverse((at, _, event))) = self.queue.pop() {
            if at > self.config.duration {
                break;
            }
            self.now = at;
            self.store_clock.set_ms(T0_MS + at / MS);
            match event {
                Event::Wake(i) => self.wake(i, at),
                Event::Issue(i) => self.issue(i),
                Event::Fault(i) => self.fault(i),
                Event::Heal(i) => self.heal(i),
                Event::Restart(i) => self.restart(i),
                Event::Outage => self.outage(),
                Event::OutageEnd => self.outage_end(),
                Event::Failover => self.fail_over(),
                Event::Promote => self.promote(),
                Event::OldBack => self.old_back(),
                Event::Demote => self.demote(),
                Event::Sweep => self.sweep(),
            }
        }
        self.finish()
    }

    /// Wakes machine `i`'s keeper at `at` (if not stale): one step, then the
    /// next wake-up it asks for.
    pub(super) fn wake(&mut self, i: usize, at: u64) {
        let ttl = self.ttl_ns();
        let m = &mut self.machines[i];
        if at != m.next_wake || !m.is_up() {
            return;
        }
        m.sync(self.now);
        let Some(p) = &mut m.process else { return };
        if p.ahead_ns > 0 {
            // The keeper still waits for a late answer: its clock stands
            // where the answer came, until true time gets there.
            let answered = self.now + p.ahead_ns;
            m.next_wake = answered;
            self.push(answered, Event::Wake(i));
            return;
        }
        let due = p.keeper.step();
        let open = p.fence.check().is_some();
        let next = m.when_mono(self.now, due).max(self.now + MS);
        m.next_wake = next;
        if let Some((since, closed)) = m.reopen {
            if open && closed {
                self.report.reopened_after.push(self.now - since);
                m.reopen = None;
            } else if open && self.now > since + ttl {
                self.report.never_fenced += 1;
                m.reopen = None;
            } else if !open {
                m.reopen = Some((since, true));
            }
        }
        self.push(next, Event::Wake(i));
        // A grant open since before this step must still be the store's
        // (checked at each step, besides openings and sweeps).
        let seen = self.machines[i].process.as_ref().and_then(|p| {
            let (grant, ticket) = p.fence.check()?;
            (ticket == p.ticket).then(|| node_of(grant.node_bits))
        });
        if let Some(node) = seen {
            self.check_held(i, node);
        }
        self.saw_fence(i);
    }

    /// Wakes machine `i`'s keeper soon, as a refused generator unparks it.
    pub(super) fn wake_soon(&mut self, i: usize) {
        let soon = self.now + 100_000;
        let m = &mut self.machines[i];
        if m.next_wake > soon {
            m.next_wake = soon;
            self.push(soon, Event::Wake(i));
        }
    }

    /// After machine `i`'s keeper ran: if its fence opened a new grant,
    /// check that no other fence is open for that node id.
    pub(super) fn saw_fence(&mut self, i: usize) {
        let wall_now = self.machines[i].wall.now_ms();
        let Some(p) = &mut self.machines[i].process else {
            return;
        };
        let held = p.keeper.held_claim();
        if let Some((claim, true)) = held
            && p.waiting_wall.is_none_or(|(c, _, _)| c != claim)
        {
            p.waiting_wall = Some((claim, wall_now, self.now));
        }
        let Some((g, ticket)) = p.fence.check() else {
            return;
        };
        if ticket == p.ticket {
            return;
        }
        // A claim that waited made the grant earlier: its floor is bounded
        // against the clock then. Its wait ended late if the VM was
        // suspended meanwhile.
        let held = held.map(|(claim, _)| claim);
        let (claimed_at_wall, claimed, suspended_waiting) = match p.waiting_wall.take() {
            Some((claim, wall, at)) if Some(claim) == held => {
                (wall, at, p.suspended_waiting.take() == Some(claim))
            }
            _ => (wall_now, self.now, false),
        };
        let node = node_of(g.node_bits);
        self.report.grants += 1;
        let grant = self.report.grants;
        // How long this grant makes the generator wait for its floor.
        let wait = (EPOCH_MS + g.floor + 1).saturating_sub(claimed_at_wall);
        self.report.longest_floor_wait_ms = self.report.longest_floor_wait_ms.max(wait);
        let skipped = p.keeper.skipped().count;
        if skipped > 0 {
            self.report.claims_skipping += 1;
            self.report.skipped_ids += skipped;
        }
        if POISONED.iter().any(|&(n, _)| n == node) {
            self.report.poisoned_claims += 1;
            self.report.note(format!(
                "t={} machine {i} claimed poisoned node id {node}",
                self.now
            ));
        }
        let m = &self.machines[i];
        let lost = self.lost_mark[node as usize];
        self.grant_info.push(GrantInfo {
            claimed,
            clock_ok: m.skew_ms.abs() <= CLOCK_BOUND_MS && m.correct_at == 0,
            below_lost_mark: lost != 0 && EPOCH_MS + g.floor < lost,
        });
        self.close_stretch(i);
        let p = self.machines[i].process.as_mut().expect("up");
        p.ticket = ticket;
        p.grant = grant;
        p.suspended_in_grant = suspended_waiting;
        p.floor_high = p.floor_high.max(g.floor);
        let others = std::mem::take(&mut self.open_by_node[node as usize]);
        let mut still = Vec::with_capacity(others.len() + 1);
        for j in others {
            if j == i {
                continue;
            }
            if self.open_for(j) == Some(node) {
                let exempt = [i, j].iter().any(|&k| {
                    self.machines[k]
                        .process
                        .as_ref()
                        .is_some_and(|p| p.suspended_in_grant)
                });
                if exempt {
                    self.report.two_holders_suspended += 1;
                } else {
                    self.report.two_holders += 1;
                    self.report.note(format!(
                        "t={} node id {node}: machine {i} opened while machine {j} was open",
                        self.now
                    ));
                }
                still.push(j);
            }
        }
        still.push(i);
        self.open_by_node[node as usize] = still;
        self.check_held(i, node);
    }

    /// The node id machine `j`'s fence is open for at this instant.
    pub(super) fn open_for(&mut self, j: usize) -> Option<u64> {
        let m = &mut self.machines[j];
        m.process.as_ref()?;
        m.sync(self.now);
        m.process.as_ref()?.open()
    }

    /// An open fence for `node` on machine `i`: the store must give `node`
    /// to this process, and its deadline must not have passed.
    pub(super) fn check_held(&mut self, i: usize, node: u64) {
        self.check_deadline(i, node);
        let Some(p) = &self.machines[i].process else {
            return;
        };
        if self.backend.holds(node, p.holder) {
            return;
        }
        let ttl = self.ttl_ns();
        let after_change = self.changed_at.is_some_and(|at| {
            self.now < at + ttl
                && self
                    .grant_claimed(p.grant)
                    .is_some_and(|claimed| claimed <= at)
        });
        if p.suspended_in_grant {
            self.report.open_unheld_suspended += 1;
        } else if after_change {
            self.report.open_unheld_failover += 1;
        } else {
            self.report.open_unheld += 1;
            self.report.note(format!(
                "t={} machine {i}'s fence is open for node id {node}, which the store gives to {:?}",
                self.now,
                self.backend.holder_of(node)
            ));
        }
    }

    /// An open fence for `node` on machine `i` must close a TTL less the
    /// margin after the last request its keeper sent that the store applied
    /// (the store saw it in the millisecond it was sent), by the machine's
    /// monotonic clock: a renewal's deadline counts from its sending, not
    /// from its answer, however late that came.
    fn check_deadline(&mut self, i: usize, node: u64) {
        let m = &self.machines[i];
        let Some(p) = &m.process else { return };
        let Some(applied_ms) = self.backend.last_applied(p.holder) else {
            return;
        };
        let sent = (applied_ms - T0_MS) * MS;
        let ttl = self.ttl_ns();
        let valid = ttl - ttl / 5;
        // True time for `valid` on the machine's clock, rounded up; and the
        // millisecond the store's clock reads.
        let valid_true = u128::from(valid) * 1_000_000 / (1_000_000 + m.drift_ppm) as u128 + 1;
        let deadline = sent + u64::try_from(valid_true).unwrap_or(u64::MAX) + MS;
        if self.now < deadline {
            return;
        }
        if p.suspended_in_grant {
            self.report.open_past_deadline_suspended += 1;
        } else {
            self.report.open_past_deadline += 1;
            self.report.note(format!(
                "t={} machine {i}'s fence is open for node id {node} {:.3} s after its keeper \
                 last sent a request the store applied",
                self.now,
                (self.now - sent) as f64 / SECOND as f64
            ));
        }
    }

    pub(super) fn healthy(&self, i: usize) -> bool {
        let m = &self.machines[i];
        // The clock behind the latest it read: the generator's policy decides
        // (it waits, or errs), unless the rotation policy takes another node
        // id, which it does from its threshold on.
        let behind = m.wall_high.saturating_sub(m.wall.now_ms());
        let rolled_back = behind > 1
            && m.profile
                .rotate_after
                .is_none_or(|t| u128::from(behind) <= t.as_millis() + 1);
        m.is_up()
            && m.link.is_none()
            && self.outage_until <= self.now
            && self.failover.is_none()
            && self.now >= m.calm_from
            && self.now >= self.calm_from
            && !rolled_back
    }

    pub(super) fn issue(&mut self, i: usize) {
        let next = self.now + self.rng.exp(self.config.issue_every);
        self.push(next, Event::Issue(i));
        let batch = if self.rng.one_in(5) {
            self.rng.between(2, 16) as usize
        } else {
            1
        };
        self.report.attempts += 1;
        let m = &mut self.machines[i];
        if !m.is_up() {
            return;
        }
        m.sync(self.now);
        let healthy = self.healthy(i);
        let m = &mut self.machines[i];
        m.wall_high = m.wall_high.max(m.wall.now_ms());
        let p = m.process.as_mut().expect("up");
        let issued = if batch == 1 {
            p.generator.poll_id().map(|id| vec![id])
        } else {
            p.generator.poll_ids(batch).map(Iterator::collect)
        };
        if healthy {
            m.healthy += 1;
        }
        match issued {
            Ok(ids) => {
                if healthy {
                    m.issued_healthy += 1;
                }
                for id in ids {
                    self.record(i, id);
                }
            }
            Err(e) => {
                if healthy {
                    // Waiting for the clock to pass a grant's floor: the
                    // wait a claim may impose, bounded by `max_mark_ahead`.
                    let below_floor = m.wall.now_ms().saturating_sub(EPOCH_MS) <= p.floor_high;
                    let kind = match e {
                        GenerateError::Fenced => 0,
                        GenerateError::Reserving => 1,
                        GenerateError::SequenceExhausted { .. }
                        | GenerateError::ClockBehind { .. }
                            if below_floor =>
                        {
                            2
                        }
                        GenerateError::SequenceExhausted { .. } => 3,
                        GenerateError::ClockBehind { .. } => 4,
                        _ => 5,
                    };
                    m.refused[kind] += 1;
                }
                self.wake_soon(i);
            }
        }
    }

    /// One ID from machine `i`.
    pub(super) fn record(&mut self, i: usize, id: Id) {
        let id = id.to_u64();
        self.report.ids += 1;
        let grant = self.machines[i].process.as_ref().map_or(0, |p| p.grant);
        if let Some(exact) = &mut self.exact
            && let Some(before) = exact.insert(id, grant)
        {
            if self.lost_mark_exempt(grant, before) {
                self.report.duplicates_lost_mark += 1;
            } else {
                self.report.duplicates += 1;
                self.report
                    .note(format!("t={} machine {i} issued {id} again", self.now));
            }
        }
        let node = node_of(id);
        let p = self.machines[i].process.as_mut().expect("up");
        match &mut p.stretch {
            Some((n, _, last)) if *n == node => {
                if id <= *last {
                    self.report.not_increasing += 1;
                    self.report.note(format!(
                        "t={} machine {i}: {id} after {last} under node id {node}",
                        self.now
                    ));
                }
                *last = (*last).max(id);
            }
            _ => {
                self.close_stretch(i);
                let p = self.machines[i].process.as_mut().expect("up");
                p.stretch = Some((node, id, id));
            }
        }
    }

    /// Files machine `i`'s current ID range under its node id.
    pub(super) fn close_stretch(&mut self, i: usize) {
        let Some(p) = self.machines[i].process.as_mut() else {
            return;
        };
        if let Some((node, first, last)) = p.stretch.take() {
            self.ranges[node as usize].push((first, last, p.grant));
        }
    }

    pub(super) fn fault(&mut self, i: usize) {
        let next = self.now + self.rng.exp(self.config.fault_every);
        self.push(next, Event::Fault(i));
        if !self.machines[i].is_up() {
            return;
        }
        let (ttl, grace) = (self.ttl_ns(), self.grace());
        let kind = match self.rng.below(100) {
            0..20 => 0,
            20..30 => 1,
            30..45 => 2,
            45..50 => 3,
            50..65 => 4,
            65..70 => 5,
            70..83 => 6,
            83..93 => 7,
            _ => 8,
        };
        self.report.faults[kind] += 1;
        let now = self.now;
        if kind != 4 && kind != 5 {
            self.machines[i].reopen = None;
        }
        match kind {
            0 | 1 => {
                self.machines[i].sync(now);
                self.close_stretch(i);
                let m = &mut self.machines[i];
                let p = m.process.take().expect("up");
                if kind == 0 {
                    // Dropped: the generator tells a keeper nobody runs.
                    drop(p);
                } else {
                    p.shutdown();
                }
                let after = if kind == 0 {
                    self.rng.log_uniform(100 * MS, MINUTE)
                } else {
                    self.rng.log_uniform(10 * MS, 10 * SECOND)
                };
                self.push(now + after, Event::Restart(i));
            }
            2 | 3 => {
                let freeze = if kind == 2 {
                    (Freeze::Pause, self.rng.log_uniform(ttl / 10, 5 * ttl))
                } else {
                    (Freeze::Suspend, self.rng.log_uniform(ttl / 2, 10 * ttl))
                };
                let m = &mut self.machines[i];
                m.sync(now);
                m.frozen = Some((freeze.0, now + freeze.1));
                if freeze.0 == Freeze::Suspend
                    && let Some(p) = &mut m.process
                {
                    p.suspended_in_grant = true;
                    p.suspended_waiting = match p.keeper.held_claim() {
                        Some((claim, true)) => Some(claim),
                        _ => None,
                    };
                }
                self.push(now + freeze.1, Event::Heal(i));
            }
            4 | 5 => {
                let step = if kind == 4 {
                    -(self.rng.log_uniform(1, HOUR / MS) as i64)
                } else {
                    self.rng.log_uniform(1, 10 * MINUTE / MS) as i64
                };
                let correct = self.rng.log_uniform(SECOND, 30 * MINUTE);
                let m = &mut self.machines[i];
                m.skew_ms += step;
                m.correct_at = now + correct;
                m.calm_from = m.calm_from.max(now + grace);
                m.sync(now);
                if m.skew_ms.abs() > CLOCK_BOUND_MS
                    && let Some(p) = &m.process
                {
                    self.grant_info[p.grant as usize].clock_ok = false;
                }
                self.push(now + correct, Event::Heal(i));
            }
            _ => {
                let (fault, length) = match kind {
                    6 => (Fault::Cut, self.rng.log_uniform(SECOND, 6 * ttl)),
                    7 => (Fault::RepliesLost, self.rng.log_uniform(100 * MS, 3 * ttl)),
                    // A link going bad: the next answer (a renewal's,
                    // within a third of the TTL) late by up to the TTL,
                    // then none. The deadline of that renewal (counted from
                    // its sending) alone fences the holder in time.
                    _ => {
                        let late = Duration::from_nanos(self.rng.log_uniform(100 * MS, ttl));
                        let cut = self.rng.log_uniform(SECOND, 2 * ttl);
                        (Fault::LateThenCut(late), ttl / 3 + 100 * MS + cut)
                    }
                };
                let m = &mut self.machines[i];
                if m.link.is_some() {
                    return;
                }
                m.link = Some((fault, now + length));
                if let Some(p) = &m.process {
                    self.backend.set_fault(p.holder, Some(fault));
                }
                self.push(now + length, Event::Heal(i));
            }
        }
    }

    pub(super) fn heal(&mut self, i: usize) {
        let now = self.now;
        let grace = self.grace();
        let m = &mut self.machines[i];
        if let Some((_, until)) = m.frozen
            && until <= now
        {
            m.sync(now);
            m.frozen = None;
            m.calm_from = m.calm_from.max(now + grace);
            m.next_wake = now;
            self.push(now, Event::Wake(i));
        }
        let m = &mut self.machines[i];
        if let Some((_, until)) = m.link
            && until <= now
        {
            m.link = None;
            m.sync(now);
            // A keeper still waiting for a late answer claims again only
            // once it has it.
            let waiting = m.process.as_ref().map_or(0, |p| p.ahead_ns);
            m.calm_from = m.calm_from.max(now + waiting + grace);
            if let Some(p) = &m.process {
                self.backend.set_fault(p.holder, None);
            }
        }
        if m.correct_at != 0 && m.correct_at <= now {
            m.correct_at = 0;
            m.skew_ms = m.boot_skew_ms;
            m.calm_from = m.calm_from.max(now + grace);
            m.sync(now);
        }
    }

    pub(super) fn restart(&mut self, i: usize) {
        let now = self.now;
        let grace = self.grace();
        let config = (self.config.ttl, self.config.defect);
        let m = &mut self.machines[i];
        if m.process.is_some() {
            return;
        }
        m.frozen = None;
        m.synced = now;
        m.wall.set_ms(m.wall_ms(now));
        let link = m.link.map(|(fault, _)| fault);
        match Process::start(&m.profile, &m.wall, &self.backend, config.0, link, config.1) {
            Ok(p) => {
                m.process = Some(p);
                m.calm_from = m.calm_from.max(now + grace);
                self.report.restarts += 1;
                // The first renewal is due a third of the TTL on.
                m.next_wake = now;
                self.push(now, Event::Wake(i));
                self.saw_fence(i);
            }
            Err(_) => {
                // A supervisor tries again.
                self.report.failed_starts += 1;
                let after = self.rng.between(SECOND, 2 * SECOND);
                self.push(now + after, Event::Restart(i));
            }
        }
    }

    pub(super) fn outage(&mut self) {
        let length = self.rng.log_uniform(SECOND, 4 * self.ttl_ns());
        self.report.outages += 1;
        self.backend.set_down(true);
        self.outage_from = self.now;
        self.outage_until = self.now + length;
        // Fences reopen after the outage, not the failover.
        for m in &mut self.machines {
            m.reopen = None;
        }
        self.push(self.outage_until, Event::OutageEnd);
        let next = self.outage_until + self.rng.exp(self.config.outage_every);
        self.push(next, Event::Outage);
    }

    pub(super) fn outage_end(&mut self) {
        self.backend.set_down(false);
        // A primary promoted shortly before or during the outage may start
        // its epoch only now: claims wait a TTL more.
        let ttl = self.ttl_ns();
        let epoch_pending = self
            .changed_at
            .is_some_and(|at| at + ttl + SECOND > self.outage_from);
        let calm = if epoch_pending { ttl + SECOND } else { 0 };
        self.calm_from = self.calm_from.max(self.now + calm + self.grace());
    }

    fn lost_mark_exempt(&self, a: u64, b: u64) -> bool {
        lost_mark_exempt(&self.grant_info, a, b)
    }

    /// When the claim of grant `grant` was made.
    pub(super) fn grant_claimed(&self, grant: u64) -> Option<u64> {
        self.grant_info.get(grant as usize).map(|g| g.claimed)
    }

    /// The store's primary stops answering (paused), or is cut off from
    /// the sentinels and the other replica with a replica of its own (a
    /// partition: its clients still reach it, and it still has a replica to
    /// acknowledge). The sentinels promote a replica after their down-after.
    pub(super) fn fail_over(&mut self) {
        let partition = self.rng.one_in(4);
        let mate = self.rng.below(2) as usize;
        let old = self.backend.servers(|servers, _| {
            let old = servers.named;
            if partition {
                let replicas: Vec<usize> = (0..servers.all.len())
                    .filter(|&r| servers.all[r].follows == Some(old))
                    .collect();
                servers.all[old].side = 1;
                servers.all[replicas[mate % replicas.len()]].side = 1;
            } else {
                servers.all[old].paused = true;
            }
            old
        });
        self.report.failovers += 1;
        self.report.partitions += u64::from(partition);
        self.failover = Some(Failover {
            old,
            new: None,
            partition,
        });
        for m in &mut self.machines {
            m.reopen = None;
        }
        let down_after = self.rng.log_uniform(SECOND, 12 * SECOND);
        self.push(self.now + down_after, Event::Promote);
    }

    /// The sentinels promote a replica that they can reach: the one that has
    /// the most of the old primary's writes, or (as when that one is down
    /// too) another, which may lack writes the old primary acknowledged.
    pub(super) fn promote(&mut self) {
        let Some(failover) = self.failover else {
            return;
        };
        let freshest = self.rng.one_in(2);
        let pick = self.rng.next_u64();
        let (new, lost_claims, lost_marks) = self.backend.servers(|servers, now| {
            let candidates: Vec<usize> = (0..servers.all.len())
                .filter(|&r| {
                    let s = &servers.all[r];
                    s.follows == Some(failover.old) && s.side == 0 && !s.paused
                })
                .collect();
            let new = match servers.freshest_replica(failover.old) {
                Some(r) if freshest && candidates.contains(&r) => r,
                _ => candidates[(pick % candidates.len() as u64) as usize],
            };
            let (claims, marks) = lost(servers, failover.old, new, now, &mut self.lost_mark);
            servers.promote(new);
            servers.stale = Some(failover.old);
            (new, claims, marks)
        });
        self.note_lost(lost_claims, lost_marks);
        self.changed_at = Some(self.now);
        self.failover = Some(Failover {
            new: Some(new),
            ..failover
        });
        let ttl = self.ttl_ns();
        if failover.partition {
            let heal = self.rng.log_uniform(SECOND, 20 * SECOND);
            self.push(self.now + heal, Event::Demote);
        } else {
            // The clients see a primary again: count how long each fenced
            // machine takes to issue (unless the store is down too).
            for m in &mut self.machines {
                if m.is_up() && m.link.is_none() && self.outage_until <= self.now {
                    m.reopen = Some((self.now, false));
                }
            }
            self.calm_from = self.calm_from.max(self.now + ttl + SECOND + self.grace());
            let back = self.rng.below(10 * SECOND);
            self.push(self.now + back, Event::OldBack);
        }
        // The next failover loses what lags like these leave behind.
        let lags = [
            self.rng.log_uniform(1, 5_000),
            self.rng.log_uniform(1, 5_000),
        ];
        self.backend.servers(|servers, _| {
            let replicas = (0..servers.all.len()).filter(|&r| r != new);
            for (r, lag) in replicas.zip(lags) {
                servers.all[r].lag_ms = lag;
            }
        });
    }

    fn note_lost(&mut self, claims: u64, marks: u64) {
        self.report.lost_claims += claims;
        self.report.lost_marks += marks;
        if claims + marks > 0 {
            self.report.lossy_failovers += 1;
        }
    }

    /// The paused old primary resumes: a primary by its own view, without
    /// replicas, until the sentinels demote it (after up to 15 s, as they
    /// notice it).
    pub(super) fn old_back(&mut self) {
        let Some(failover) = self.failover else {
            return;
        };
        self.backend
            .servers(|servers, _| servers.all[failover.old].paused = false);
        let window = self.rng.between(SECOND, 15 * SECOND);
        self.push(self.now + window, Event::Demote);
    }

    /// The old primary becomes a replica of the new one (a partition heals:
    /// what its side wrote meanwhile is lost); the next failover comes.
    pub(super) fn demote(&mut self) {
        let Some(Failover {
            old,
            new: Some(new),
            partition,
        }) = self.failover.take()
        else {
            return;
        };
        let (claims, marks) = self.backend.servers(|servers, now| {
            let lost = if partition {
                lost(servers, old, new, now, &mut self.lost_mark)
            } else {
                (0, 0)
            };
            for s in 0..servers.all.len() {
                if s != new && servers.all[s].side != 0 {
                    servers.all[s].side = 0;
                    servers.resync(s, new);
                }
            }
            servers.resync(old, new);
            lost
        });
        if partition {
            self.note_lost(claims, marks);
            self.changed_at = Some(self.now);
        }
        self.calm_from = self
            .calm_from
            .max(self.now + self.ttl_ns() + SECOND + self.grace());
        let next = self.now + self.rng.exp(self.config.failover_every);
        self.push(next, Event::Failover);
    }

    /// Every ten simulated seconds: at most one open fence per node id, each
    /// for a node id the store gives its holder; and the time fenced.
    pub(super) fn sweep(&mut self) {
        const EVERY: u64 = 10 * SECOND;
        self.push(self.now + EVERY, Event::Sweep);
        let mut open: Vec<(u64, usize)> = Vec::new();
        for i in 0..self.machines.len() {
            if !self.machines[i].is_up() {
                continue;
            }
            self.report.up_ns += u128::from(EVERY);
            match self.open_for(i) {
                Some(node) => open.push((node, i)),
                None => self.report.fenced_ns += u128::from(EVERY),
            }
        }
        open.sort_unstable();
        for pair in open.windows(2) {
            let ((a, i), (b, j)) = (pair[0], pair[1]);
            if a != b {
                continue;
            }
            let exempt = [i, j].iter().any(|&k| {
                self.machines[k]
                    .process
                    .as_ref()
                    .is_some_and(|p| p.suspended_in_grant)
            });
            if exempt {
                self.report.two_holders_suspended += 1;
            } else {
                self.report.two_holders += 1;
                self.report.note(format!(
                    "t={} sweep: node id {a} open on machines {i} and {j}",
                    self.now
                ));
            }
        }
        for (node, i) in open {
            self.check_held(i, node);
        }
    }

    /// Files the open ranges and checks that no two holders' ranges of a
    /// node id overlap; availability per machine.
    pub(super) fn finish(mut self) -> Report {
        for i in 0..self.machines.len() {
            self.close_stretch(i);
        }
        for (node, ranges) in self.ranges.iter_mut().enumerate() {
            ranges.sort_unstable();
            let mut reach: Option<(u64, u64)> = None;
            for &(first, last, grant) in ranges.iter() {
                if let Some((high, by)) = reach
                    && first <= high
                {
                    if lost_mark_exempt(&self.grant_info, grant, by) {
                        self.report.overlaps_lost_mark += 1;
                        continue;
                    }
                    self.report.overlaps += 1;
                    if self.report.examples.len() < 12 {
                        self.report.examples.push(format!(
                            "node id {node}: grant {grant} issued {first}..={last}, \
                             grant {by} up to {high}"
                        ));
                    }
                }
                if reach.is_none_or(|(high, _)| last > high) {
                    reach = Some((last, grant));
                }
            }
        }
        let (mut all, mut lease) = (Vec::new(), Vec::new());
        for m in &self.machines {
            self.report.healthy_attempts += m.healthy;
            self.report.healthy_issued += m.issued_healthy;
            for (total, n) in self.report.refused.iter_mut().zip(m.refused) {
                *total += n;
            }
            if m.healthy >= 20 {
                all.push(m.issued_healthy * 1_000_000 / m.healthy);
                let counted = m.healthy - m.refused[2];
                lease.push(m.issued_healthy * 1_000_000 / counted.max(1));
            }
        }
        all.sort_unstable();
        lease.sort_unstable();
        self.report.availability = all;
        self.report.availability_lease = lease;
        let mut worst: Vec<(u64, usize)> = self
            .machines
            .iter()
            .enumerate()
            .filter(|(_, m)| m.healthy >= 20)
            .map(|(i, m)| (m.issued_healthy * 1_000_000 / m.healthy, i))
            .collect();
        worst.sort_unstable();
        worst.truncate(3);
        let by_lease = self
            .machines
            .iter()
            .enumerate()
            .filter(|(_, m)| m.healthy >= 20)
            .map(|(i, m)| {
                (
                    m.issued_healthy * 1_000_000 / (m.healthy - m.refused[2]).max(1),
                    i,
                )
            })
            .min();
        worst.extend(by_lease);
        for &(share, i) in &worst {
            let m = &self.machines[i];
            let refused: Vec<String> = REFUSALS
                .iter()
                .zip(m.refused)
                .filter(|(_, n)| *n > 0)
                .map(|(name, n)| format!("{name} {n}"))
                .collect();
            self.report.least_available.push(format!(
                "machine {i}: {:.4} of {} healthy attempts (refused: {}); clock {:+} ms; {:?}",
                share as f64 / 1e6,
                m.healthy,
                refused.join(", "),
                m.boot_skew_ms,
                m.profile
            ));
        }
        self.report
    }
}

/// What primary `new` lacks of primary `old`'s data: node keys live on
/// `old` that `new` does not have (the same claim), and marks lower on
/// `new`, whose `old` values raise `lost_mark`.
fn lost(
    servers: &Servers,
    old: usize,
    new: usize,
    now_ms: u64,
    lost_mark: &mut [u64],
) -> (u64, u64) {
    let (old, new) = (&servers.all[old].data, &servers.all[new].data);
    let claims = old
        .nodes
        .iter()
        .filter(|&(&node, key)| key.expires_ms > now_ms && new.live(node, now_ms) != Some(*key))
        .count() as u64;
    let mut marks = 0;
    for (&node, &mark) in &old.marks {
        if new.marks.get(&node).is_none_or(|&m| m < mark) {
            marks += 1;
            let lost = &mut lost_mark[node as usize];
            *lost = (*lost).max(mark);
        }
    }
    (claims, marks)
}

/// Whether two grants' IDs may meet because a failover lost the mark one of
/// them started from while a clock was off by more than the lease docs
/// allow for that case.
fn lost_mark_exempt(info: &[GrantInfo], a: u64, b: u64) -> bool {
    let (a, b) = (info[a as usize], info[b as usize]);
    (a.below_lost_mark || b.below_lost_mark) && !(a.clock_ok && b.clock_ok)
}
