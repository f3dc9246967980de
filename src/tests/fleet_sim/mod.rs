//! A fleet of leased generators, simulated: deterministic, seeded, and
//! reproducible from the seed it prints.
//!
//! # Why an in-process store behind the keeper's real code path
//!
//! What can go wrong with a lease lives in flakeid's own code: the keeper's
//! renewal, deadline and claim arithmetic (`keeper::Run`), the fence's grant
//! and deadline (`Fence`), and the generator's gate, floor and ceiling. So the
//! simulation runs exactly that code, stepped by hand: each node is a real
//! [`Generator`] behind a real [`Fence`], whose keeper is the real
//! [`Run`] (the same state machine the keeper thread steps), talking through
//! the [`Store`] trait to [`MemoryBackend`], an in-process store with the
//! claim, renew and release rules of the etcd transactions and Redis scripts
//! (lowest free node id, marks raised, ownership checked, keys expiring by
//! the store's clock). Every clock is injected: the fence's monotonic clock
//! is a quanta mock, the generator's and keeper's wall clock a
//! [`ManualClock`], the store's another; nothing sleeps and nothing runs on
//! another thread, so one seed gives one run.
//!
//! A simulation crate was the other choice, and none fits: turmoil and madsim
//! simulate tokio's network and time, but flakeid's stores are blocking
//! clients (Redis' sync API, etcd on a private runtime) and its time is the
//! TSC through quanta plus `SystemTime`, none of which they control (madsim
//! would also need the whole dependency graph rebuilt under its cfg); shuttle
//! and loom explore thread interleavings, which the loom models cover, not
//! hours of clocks and faults. Real etcd and Redis servers cannot be stepped,
//! nor run 10^5 node-hours in minutes. And a new dependency needs a reason the
//! in-process store does not leave. What this does not cover: the wire
//! encodings of the claim (the Lua script, the etcd transaction), which the
//! `lease` tests (`tests/lease.rs`) run against real servers, and
//! interleavings of generator threads with the keeper, which the loom models
//! check.
//!
//! # What is simulated
//!
//! `machines` nodes (1,000 and more) share one store and the node ids of an
//! 11-bit field (2,048), two of which carry planted marks (year 2200 and
//! `u64::MAX`). Each machine has a wall clock skewed from true time (most by
//! milliseconds as NTP leaves them, some by a minute, a few by up to a day
//! either way) and a monotonic clock running up to 200 ppm fast or slow. A
//! discrete-event loop advances true time; at each event it brings the
//! machine's clocks up to it, then steps its keeper when the keeper asked to
//! be woken (or soon after the generator was refused, as the keeper thread
//! is unparked), or lets the generator try to issue (`poll_id`, or a batch
//! by `poll_ids`: the calls that never wait, since a waiting call would wait
//! on the real clock). Faults come at random: a crash (dropped without
//! release) and a restart, a clean restart, a pause (the process stops, its
//! clocks go on: a long GC pause or a stop-the-world, up to five TTLs), a
//! suspended VM (its monotonic clock stops too), the wall clock stepped back
//! (up to an hour) or forward and later corrected, a partition (this node
//! cut off from the store), lost replies (requests applied, answers lost),
//! late replies (requests applied, answers arriving up to a TTL later, for
//! one renewal interval) and then a cut (so the last late renewal's
//! deadline alone must fence the holder before its claim expires), and
//! store outages (every request fails).
//!
//! The store is Redis behind Sentinel (`MemoryBackend::replicated`): a
//! primary and two replicas, each applying the primary's writes up to 5 s
//! behind it, `WAIT 1` after each claim and renewal, and the epoch rule. A
//! failover (every minute or so) either pauses the primary or cuts it off
//! from the sentinels with one replica (its clients still reach it, and it
//! still has a replica to acknowledge); after a down-after of 1 to 12 s the
//! sentinels promote a replica they reach, the freshest or (as when that one
//! is down too) another, which may lack claims and marks the old primary
//! acknowledged. A paused old primary comes back as a primary without
//! replicas and answers for up to 15 s before it is demoted; a cut-off one
//! answers its side until the partition heals, when what it wrote meanwhile
//! is lost. One resolution in three while a deposed primary answers finds it
//! (a sentinel behind the others).
//!
//! # What is checked
//!
//! - **Unique**: under each node id, the IDs of each grant (one claim by one
//!   process) increase, and no two grants' ranges overlap. The mark protocol
//!   promises exactly this, and it implies that no ID is issued twice; it
//!   keeps memory bounded by the number of grants. The short run also keeps
//!   every ID in a `HashMap`.
//! - **Fenced**: at no instant are two fences open for one node id, no
//!   fence is open for a node id the store does not give to its holder,
//!   and none is open a TTL less the safety margin (on its holder's
//!   monotonic clock) after the last request its keeper sent that the
//!   store applied: a deadline counts from a renewal's sending, however
//!   late its answer. Checked whenever a fence opens (an overlap starts at
//!   an opening), at each of its keeper's steps, and at a sweep every ten
//!   simulated seconds. A suspended VM is counted apart:
//!   the lease module docs say fencing may end late when the monotonic clock stops
//!   (uniqueness still holds, and is checked). So is a fence whose claim a
//!   failover lost, within a TTL of the change: the store no longer gives
//!   the node id to anyone, and the epoch rule keeps others from it.
//! - **Unique after lost marks**: a holder whose floor is below a mark a
//!   failover lost relies on clocks agreeing (the lease docs); its overlaps
//!   and duplicates with a holder whose clock was off by more than half the
//!   safety margin are counted apart, all others are violations.
//! - **Back after a failover**: a fence that a promotion found closed, or
//!   that closed after it, opens again within a TTL and a second of it.
//! - **Available**: for each machine, the share of its healthy attempts that
//!   issue, with and without those that wait for a grant's floor (a claim
//!   may take a mark up to `max_mark_ahead` ahead of the claimer's clock).
//!   Healthy: up, not paused, reachable, the store up, a quarter TTL after
//!   the last of those faults ended or the clock was stepped, and the clock
//!   not behind the latest it read (by less than the rotation threshold,
//!   for a machine that rotates; by any amount otherwise, where the
//!   generator's policy decides). No grant's floor is more than
//!   `max_mark_ahead` (and a tick) ahead of its holder's clock, and no claim
//!   takes a poisoned node id.
//!
//! Planted defects show that the checks have teeth: lease bugs planted at
//! their spot in the keeper and the store (`crate::plant`: a claim that
//! ignores the mark, a claim that skips the epoch's wait after a failover,
//! a `WAIT` short of replicas counted, so a deposed primary keeps its
//! holders' fences open), and two faults of the store as the keeper sees
//! it (renewals that never fail, so nobody is fenced; a claim that takes a
//! node id however far ahead of the claimer's clock its mark is): each run
//! must report the violation.

mod machine;
mod sim;

use std::time::{Duration, Instant};

use crate::layout::Layout;
use crate::plant::Plant;
use flakeid_test_servers::Rng;

use sim::{FAULTS, REFUSALS, Report, Sim, percentile};

/// True time at the start: 2027-01-15.
const T0_MS: u64 = 1_800_000_000_000;
const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
/// Node-id bits of the simulated layout: 2,048 node ids.
const NODE_BITS: u32 = 11;
const SEQUENCE_BITS: u32 = 11;
/// Marks planted by hand: 2200-01-01 and the largest there is. No claim may
/// take these node ids, and they must not keep anyone from a node id.
const POISONED: [(u64, u64); 2] = [(0, 7_258_118_400_000), (1, u64::MAX)];

/// A flaw planted to show the checker catches real defects: a lease bug
/// planted in the lease code itself ([`Plant`]), or one of the store as
/// the keeper sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Defect {
    None,
    /// A lease bug at its spot in the keeper or the store.
    Plant(Plant),
    /// A renewal that failed or found the claim gone reports success: the
    /// keeper never fences.
    RenewalsNeverFail,
    /// A claim takes a free node id however far ahead its mark (no
    /// `max_mark_ahead` bound).
    ClaimTakesAnyMark,
}

impl Defect {
    /// The plant to attach to each lease.
    fn plant(self) -> Option<Plant> {
        match self {
            Defect::Plant(plant) => Some(plant),
            _ => None,
        }
    }
}

/// A simulation's size and pace.
#[derive(Debug, Clone)]
struct Config {
    seed: u64,
    machines: usize,
    /// Simulated (true) time.
    duration: u64,
    ttl: Duration,
    /// Mean time between a machine's faults.
    fault_every: u64,
    /// Mean time between a store outage and the next.
    outage_every: u64,
    /// Mean time between a failover of the store's primary and the next.
    failover_every: u64,
    /// Mean time between a machine's attempts to issue.
    issue_every: u64,
    /// Keep every ID in a `HashMap` too.
    exact: bool,
    defect: Defect,
}

impl Config {
    /// The short run, in CI: 1,000 machines for 20 simulated minutes, with
    /// a fault per machine every four minutes and a failover of the store
    /// every minute on average.
    fn short(seed: u64) -> Config {
        Config {
            seed,
            machines: 1_000,
            duration: 20 * MINUTE,
            ttl: Duration::from_secs(10),
            fault_every: 4 * MINUTE,
            outage_every: 8 * MINUTE,
            failover_every: MINUTE,
            issue_every: SECOND,
            exact: true,
            defect: Defect::None,
        }
    }

    /// The long run: `node_hours` simulated node-hours over 1,000 machines,
    /// a fault per machine and a failover of the store every hour on average.
    fn long(seed: u64, node_hours: u64) -> Config {
        let machines = 1_000;
        Config {
            seed,
            machines,
            duration: node_hours * HOUR / machines as u64,
            ttl: Duration::from_secs(10),
            fault_every: HOUR,
            outage_every: 2 * HOUR,
            failover_every: HOUR,
            issue_every: 5 * SECOND,
            exact: std::env::var_os("FLAKEID_SIM_EXACT").is_some(),
            defect: Defect::None,
        }
    }

    fn node_hours(&self) -> f64 {
        self.machines as f64 * self.duration as f64 / HOUR as f64
    }
}

/// The simulation's draws beyond the shared test RNG's (SplitMix64,
/// `flakeid_test_servers::Rng`). The exponential and log-uniform draws go
/// through `f64::ln` and `exp`, so a seed reproduces a run on the same
/// platform.
trait Draws {
    /// Exponential with mean `mean` (at least 1).
    fn exp(&mut self, mean: u64) -> u64;
    /// Log-uniform in `lo..=hi`: short ones common, long ones rare.
    fn log_uniform(&mut self, lo: u64, hi: u64) -> u64;
}

impl Draws for Rng {
    fn exp(&mut self, mean: u64) -> u64 {
        ((-(1.0 - self.unit()).ln() * mean as f64) as u64).max(1)
    }

    fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        ((a + (b - a) * self.unit()).exp() as u64).clamp(lo, hi)
    }
}

/// The simulated layout's epoch: 2020-01-01.
const EPOCH_MS: u64 = 1_577_836_800_000;

/// The simulated layout: 41 bits of milliseconds since 2020, the node id,
/// the sequence.
fn layout() -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH_MS)
        .timestamp_bits(41)
        .node("node", NODE_BITS)
        .sequence(SEQUENCE_BITS)
        .build()
        .expect("a valid layout")
}

fn node_of(bits: u64) -> u64 {
    (bits >> SEQUENCE_BITS) & ((1 << NODE_BITS) - 1)
}

/// The least share of its healthy attempts on which each machine issues,
/// not counting those that wait for a claim's floor.
const MIN_AVAILABILITY: f64 = 0.99;

/// The same, counting them: a claim may make a generator wait up to
/// `max_mark_ahead` (one minute by default) for its floor, and the short run
/// gives each machine a fault every four minutes.
const MIN_AVAILABILITY_WITH_FLOOR_WAITS: f64 = 0.5;

/// `Lease::max_mark_ahead`'s default: a claim may take a mark up to this far
/// ahead of the claimer's clock, whose generator then waits for the tick
/// after it (one more millisecond).
const MAX_MARK_AHEAD_MS: u64 = 60_000;

/// The short run's seed, unless `FLAKEID_SIM_SEED` says otherwise.
const SEED: u64 = 0x5eed_0012_f1ee_7001;

/// `FLAKEID_SIM_SEED` (decimal, or hexadecimal with `0x`), if set.
fn seed_from_env() -> Option<u64> {
    let text = std::env::var("FLAKEID_SIM_SEED").ok()?;
    let text = text.trim();
    let seed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(seed.unwrap_or_else(|e| panic!("FLAKEID_SIM_SEED={text}: {e}")))
}

fn summary(config: &Config, report: &Report, took: Duration) -> String {
    let hours = config.duration as f64 / HOUR as f64;
    let faults: Vec<String> = FAULTS
        .iter()
        .zip(report.faults)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    let mut reopened = report.reopened_after.clone();
    reopened.sort_unstable();
    let refused: Vec<String> = REFUSALS
        .iter()
        .zip(report.refused)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    format!(
        "fleet simulation: seed {seed:#x} (FLAKEID_SIM_SEED={seed:#x} reproduces it)\n\
         \x20 {machines} machines, {hours:.1} h simulated = {node_hours:.0} node-hours, TTL {ttl:?}, \
         defect {defect:?}; took {took:.1?}\n\
         \x20 IDs issued {ids} in {attempts} attempts; grants {grants}; starts {restarts} \
         (failed {failed}); store outages {outages}\n\
         \x20 failovers {failovers} ({partitions} by a partition; {lossy} lost writes: \
         {lost_claims} claims, {lost_marks} marks); fences after a promotion: \
         {never} stayed open, {reopened} reopened after p50 {reopen_p50:.2} s, max \
         {reopen_max:.2} s\n\
         \x20 faults: {faults}\n\
         \x20 claims that skipped marks ahead {skipping} ({skipped} node ids in all); \
         claims of poisoned node ids {poisoned}\n\
         \x20 fenced {fenced:.3}% of up node-time\n\
         \x20 availability (healthy attempts that issued): fleet {fleet:.4}, per machine \
         min {min:.4}, p1 {p1:.4}, median {median:.4} over {counted} machines; \
         not counting waits for a claim's floor (at most {longest} ms ahead): \
         min {lmin:.4}, p1 {lp1:.4}, median {lmedian:.4}\n\
         \x20 healthy attempts refused: {refused}\n\
         \x20 violations: duplicates {dups}, overlapping ranges {overlaps}, not increasing {inc}, \
         two open fences {two}, open fence not the store's holder {unheld}, open past its \
         deadline {past}; exempt (suspended VM): two open {two_s}, not held {unheld_s}, past \
         the deadline {past_s}; exempt (failover): \
         not held within a TTL of it {unheld_f}, below a lost mark with a clock off: \
         overlaps {overlaps_lost}, duplicates {dups_lost}",
        seed = config.seed,
        machines = config.machines,
        node_hours = config.node_hours(),
        ttl = config.ttl,
        defect = config.defect,
        ids = report.ids,
        attempts = report.attempts,
        grants = report.grants,
        restarts = report.restarts,
        failed = report.failed_starts,
        outages = report.outages,
        faults = faults.join(", "),
        skipping = report.claims_skipping,
        skipped = report.skipped_ids,
        poisoned = report.poisoned_claims,
        fenced = 100.0 * report.fenced_ns as f64 / report.up_ns.max(1) as f64,
        fleet = report.healthy_issued as f64 / report.healthy_attempts.max(1) as f64,
        min = report.availability_at(0),
        p1 = report.availability_at(1),
        median = report.availability_at(50),
        counted = report.availability.len(),
        longest = report.longest_floor_wait_ms,
        lmin = percentile(&report.availability_lease, 0),
        lp1 = percentile(&report.availability_lease, 1),
        lmedian = percentile(&report.availability_lease, 50),
        refused = refused.join(", "),
        dups = report.duplicates,
        overlaps = report.overlaps,
        inc = report.not_increasing,
        two = report.two_holders,
        unheld = report.open_unheld,
        two_s = report.two_holders_suspended,
        unheld_s = report.open_unheld_suspended,
        past = report.open_past_deadline,
        past_s = report.open_past_deadline_suspended,
        unheld_f = report.open_unheld_failover,
        overlaps_lost = report.overlaps_lost_mark,
        dups_lost = report.duplicates_lost_mark,
        failovers = report.failovers,
        partitions = report.partitions,
        lossy = report.lossy_failovers,
        lost_claims = report.lost_claims,
        lost_marks = report.lost_marks,
        never = report.never_fenced,
        reopened = reopened.len(),
        reopen_p50 = percentile(&reopened, 50) * 1e6 / SECOND as f64,
        reopen_max = percentile(&reopened, 100) * 1e6 / SECOND as f64,
    )
}

/// Runs `config`, prints the summary, returns the report.
fn simulate(config: &Config) -> Report {
    let started = Instant::now();
    let report = Sim::new(config.clone()).run();
    println!("{}", summary(config, &report, started.elapsed()));
    for example in &report.least_available {
        println!("  least available: {example}");
    }
    for example in &report.examples {
        println!("  found: {example}");
    }
    report
}

/// What every run without a planted defect must show.
fn assert_sound(config: &Config, report: &Report) {
    let seed = config.seed;
    assert_eq!(
        report.violations(),
        0,
        "seed {seed:#x}: {:#?}",
        report.examples
    );
    assert!(
        report.claims_skipping > 0,
        "seed {seed:#x}: no claim passed over the poisoned node ids"
    );
    assert!(
        report.longest_floor_wait_ms <= MAX_MARK_AHEAD_MS + 1,
        "seed {seed:#x}: a claim made a generator wait {} ms for its floor",
        report.longest_floor_wait_ms
    );
    assert!(
        report.availability.len() * 10 >= config.machines * 9,
        "seed {seed:#x}: only {} machines had enough healthy attempts",
        report.availability.len()
    );
    let lease = percentile(&report.availability_lease, 0);
    assert!(
        lease >= MIN_AVAILABILITY,
        "seed {seed:#x}: a healthy machine issued on only {lease:.4} of its attempts \
         (not counting waits for a floor)"
    );
    let all = report.availability_at(0);
    assert!(
        all >= MIN_AVAILABILITY_WITH_FLOOR_WAITS,
        "seed {seed:#x}: a healthy machine issued on only {all:.4} of its attempts"
    );
    // A fence closed by a failover opens again within a TTL and a second
    // of the promotion (the epoch's wait, from a primary's first request).
    let longest = report.reopened_after.iter().max().copied().unwrap_or(0);
    let bound = config.ttl + std::time::Duration::from_secs(1);
    assert!(
        u128::from(longest) <= bound.as_nanos(),
        "seed {seed:#x}: a fence opened again {:.2} s after a promotion",
        longest as f64 / SECOND as f64
    );
}

#[test]
#[cfg_attr(miri, ignore = "a fleet for simulated minutes: hours under Miri")]
fn a_fleet_keeps_ids_unique_fences_single_and_generators_available() {
    let config = Config::short(seed_from_env().unwrap_or(SEED));
    let report = simulate(&config);
    assert_sound(&config, &report);
    assert!(report.ids > 100_000, "{} IDs", report.ids);
    assert!(report.faults.iter().all(|&n| n > 0), "{:?}", report.faults);
    assert!(
        report.failovers > 1 && report.lossy_failovers > 0,
        "{} failovers, {} lost writes",
        report.failovers,
        report.lossy_failovers
    );
}

/// `FLAKEID_SIM_NODE_HOURS` (default 100,000) simulated node-hours over
/// 1,000 machines, a fault per machine and a failover of the store an hour
/// on average; seed from `FLAKEID_SIM_SEED`, or from the time (printed either
/// way). Every ID is also kept in a `HashMap` if `FLAKEID_SIM_EXACT` is set
/// (about 40 bytes an ID;
/// 10^5 node-hours issue about 1.9 * 10^8).
#[test]
#[ignore = "long: run with --ignored in release (FLAKEID_SIM_NODE_HOURS, FLAKEID_SIM_SEED)"]
fn a_long_fleet_run() {
    let node_hours = std::env::var("FLAKEID_SIM_NODE_HOURS")
        .ok()
        .map_or(100_000, |v| {
            v.trim()
                .parse()
                .unwrap_or_else(|e| panic!("FLAKEID_SIM_NODE_HOURS={v}: {e}"))
        });
    let seed = seed_from_env().unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Rng::new(nanos as u64).next_u64()
    });
    let config = Config::long(seed, node_hours);
    let report = simulate(&config);
    assert_sound(&config, &report);
}

/// A smaller, faultier fleet with a planted defect.
fn planted(defect: Defect) -> (Config, Report) {
    let config = Config {
        machines: 300,
        duration: 10 * MINUTE,
        fault_every: MINUTE,
        failover_every: 30 * SECOND,
        exact: true,
        defect,
        ..Config::short(seed_from_env().unwrap_or(SEED))
    };
    let report = simulate(&config);
    (config, report)
}

#[test]
#[cfg_attr(miri, ignore = "a fleet for simulated minutes: hours under Miri")]
fn the_checker_catches_a_claim_that_ignores_the_mark() {
    let (config, report) = planted(Defect::Plant(Plant::ClaimIgnoresMark));
    assert!(
        report.overlaps > 0,
        "seed {:#x}: holders whose floor is 0 went unnoticed",
        config.seed
    );
}

#[test]
#[cfg_attr(miri, ignore = "a fleet for simulated minutes: hours under Miri")]
fn the_checker_catches_a_deadline_counted_from_the_answer() {
    let (config, report) = planted(Defect::Plant(Plant::DeadlineFromAnswer));
    assert!(
        report.faults[8] > 0 && report.open_past_deadline > 0 && report.open_unheld > 0,
        "seed {:#x}: fences open past their deadlines after late answers went unnoticed",
        config.seed
    );
}

#[test]
#[cfg_attr(miri, ignore = "a fleet for simulated minutes: hours under Miri")]
fn the_checker_catches_a_keeper_that_never_fences() {
    let (config, report) = planted(Defect::RenewalsNeverFail);
    assert!(
        report.two_holders > 0 && report.open_unheld > 0,
        "seed {:#x}: fences open past their lease went unnoticed",
        config.seed
    );
}

#[test]
#[cfg_attr(miri, ignore = "a fleet for simulated minutes: hours under Miri")]
fn the_checker_catches_a_claim_that_skips_the_wait_after_a_failover() {
    let (config, report) = planted(Defect::Plant(Plant::EpochWaitSkipped));
    assert!(
        report.lossy_failovers > 0 && report.two_holders > 0,
        "seed {:#x}: holders opened beside the holder whose claim a failover lost",
        config.seed
    );
}

#[test]
#[cfg_attr(miri, ignore = "a fleet for simulated minutes: hours under Miri")]
fn the_checker_catches_a_fence_a_deposed_primary_keeps_open() {
    let (config, report) = planted(Defect::Plant(Plant::WaitShortCounted));
    assert!(
        report.two_holders > 0,
        "seed {:#x}: fences kept open by renewals no replica acknowledged went unnoticed",
        config.seed
    );
}

#[test]
#[cfg_attr(miri, ignore = "a fleet for simulated minutes: hours under Miri")]
fn the_checker_catches_a_claim_that_takes_a_poisoned_node_id() {
    let (config, report) = planted(Defect::ClaimTakesAnyMark);
    assert!(
        report.poisoned_claims > 0 && report.availability_at(0) < MIN_AVAILABILITY_WITH_FLOOR_WAITS,
        "seed {:#x}: claims of the poisoned node ids went unnoticed",
        config.seed
    );
}
