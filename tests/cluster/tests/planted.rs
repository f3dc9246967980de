//! The library's planted lease bugs, each caught by the fault test's
//! checker in the scenario where it matters, and each scenario's honest
//! control, which must be clean and must show that the scenario really
//! happened. See `flakeid_fault_tests::scenario`.
//!
//! The planted tests need the plant build, the controls the ordinary one
//! (each is ignored in the other, saying so):
//!
//! ```text
//! cargo test -p flakeid-fault-tests --release --test planted
//! FLAKEID_PLANT=1 cargo test -p flakeid-fault-tests --release --test planted
//! ```
//!
//! (`FLAKEID_PLANT=1`: this crate's and flakeid's build scripts set
//! `cfg(flakeid_plant)`, and only the two crates build again.)
//!
//! Root, etcd, redis-server and libfaketime, as for the short runs.

use std::path::PathBuf;

use flakeid_fault_tests::check::Report;
use flakeid_fault_tests::scenario::{
    FailoverClaim, Late, LateAnswer, SkewedHandoff, failover_claim, late_answer, skewed_handoff,
};
use flakeid_test_servers::ScratchDir;

fn worker() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fault-worker"))
}

/// Runs the late-answer scenario and asserts it happened.
fn late(late: Late, plant: &str) -> LateAnswer {
    let d = ScratchDir::on_disk(plant);
    let o = late_answer(late, plant, &worker(), d.path());
    println!("{o:?}\n{}", o.report);
    assert!(o.happened, "the scenario did not happen: {o:?}");
    o
}

fn clean(report: &Report) {
    assert_eq!(report.violations(), 0, "{report}");
}

fn caught(found: u64, report: &Report) {
    assert!(found > 0, "the planted bug went unnoticed: {report}");
}

// --- the deadline counts from the request ---------------------------------

#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn a_late_answer_extends_from_its_request() {
    let o = late(Late::BeforeDeadline, "none");
    assert!(
        o.late_by_ms.is_some_and(|ms| ms >= 300),
        "the answer taken was not late: {o:?}"
    );
    clean(&o.report);
}

#[test]
#[cfg_attr(not(flakeid_plant), ignore = "needs the plant build: FLAKEID_PLANT=1")]
fn planted_deadline_from_the_answer_is_caught() {
    let o = late(Late::BeforeDeadline, "deadline-from-answer");
    caught(o.report.safety.past_deadline, &o.report);
}

// --- an answer after the deadline reopens nothing ---------------------------

#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn an_answer_after_the_deadline_reopens_nothing() {
    let o = late(Late::AfterDeadline, "none");
    assert!(o.late_by_ms.is_none(), "a late answer was taken: {o:?}");
    clean(&o.report);
}

#[test]
#[cfg_attr(not(flakeid_plant), ignore = "needs the plant build: FLAKEID_PLANT=1")]
fn planted_late_answer_reopening_is_caught() {
    let o = late(Late::AfterDeadline, "late-answer-reopens");
    caught(o.report.safety.past_deadline, &o.report);
}

// --- a claim after a failover waits out the epoch ---------------------------

/// Runs the failover scenario and asserts it happened: the old holder
/// still issued after the new one's claim was answered.
fn failover(plant: &str) -> FailoverClaim {
    let d = ScratchDir::on_disk(plant);
    let o = failover_claim(plant, &worker(), d.path());
    println!("{o:?}\n{}", o.report);
    assert!(
        o.old_issued_after_claim,
        "the old holder was not issuing when the new one claimed: {o:?}"
    );
    o
}

#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn a_claim_after_a_lossy_failover_waits_out_the_epoch() {
    let o = failover("none");
    assert!(o.waited, "the new holder did not wait out the epoch: {o:?}");
    clean(&o.report);
}

#[test]
#[cfg_attr(not(flakeid_plant), ignore = "needs the plant build: FLAKEID_PLANT=1")]
fn planted_epoch_wait_skipped_is_caught() {
    let o = failover("epoch-wait-skipped");
    caught(o.report.safety.handoff, &o.report);
}

// --- a claim starts above the mark -------------------------------------------

/// Runs the skewed hand-off and asserts it happened: the new holder's
/// clock was more than a second behind the old holder's last ID.
fn skewed(plant: &str) -> SkewedHandoff {
    let d = ScratchDir::on_disk(plant);
    let o = skewed_handoff(plant, &worker(), d.path());
    println!("{o:?}\n{}", o.report);
    assert!(
        o.behind_ms > 1_000,
        "the new holder's clock was not behind the old holder's IDs: {o:?}"
    );
    o
}

#[test]
#[cfg_attr(flakeid_plant, ignore = "the plant build runs the planted bugs only")]
fn a_claim_starts_above_the_mark_with_a_clock_behind() {
    let o = skewed("none");
    assert!(o.report.safety.holders >= 2, "{}", o.report);
    clean(&o.report);
}

#[test]
#[cfg_attr(not(flakeid_plant), ignore = "needs the plant build: FLAKEID_PLANT=1")]
fn planted_claim_ignoring_the_mark_is_caught() {
    let o = skewed("claim-ignores-mark");
    caught(o.report.safety.handoff, &o.report);
}
