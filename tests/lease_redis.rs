//! Node-id leases against a real Redis (Debian's `redis-server`), started on
//! 127.0.0.1 by the tests themselves.

mod lease_support;

use lease_support::{Kind, Server};

#[test]
fn claim_renew_release() {
    let _serial = lease_support::one_at_a_time();
    lease_support::claim_renew_release(&Server::start(Kind::Redis));
}

#[test]
fn all_held_bad_marks_and_unreachable_servers_are_typed_errors() {
    let _serial = lease_support::one_at_a_time();
    lease_support::errors(&Server::start(Kind::Redis));
}

#[test]
fn two_processes_of_32_generators_race_for_node_ids() {
    let _serial = lease_support::one_at_a_time();
    lease_support::two_processes_race(&Server::start(Kind::Redis), "race_child");
}

#[test]
#[ignore = "entry point of the child processes of the race test"]
fn race_child() {
    lease_support::race_child();
}

#[test]
fn killed_server_fences_every_generator_and_restarted_server_resumes_them() {
    let _serial = lease_support::one_at_a_time();
    lease_support::killed_then_restarted(&mut Server::start(Kind::Redis));
}

#[test]
fn churn_of_1000_nodes_reuses_node_ids_only_after_release_or_expiry() {
    let _serial = lease_support::one_at_a_time();
    lease_support::churn(&Server::start(Kind::Redis));
}

#[test]
fn a_long_clock_rollback_rotates_to_a_fresh_node_id() {
    let _serial = lease_support::one_at_a_time();
    lease_support::rotation_after_rollback(&Server::start(Kind::Redis));
}

#[test]
fn a_server_answering_nonsense_is_a_typed_error() {
    let _serial = lease_support::one_at_a_time();
    lease_support::nonsense_replies(Kind::Redis);
}

#[test]
fn a_store_that_stops_answering_fences_every_generator_at_the_deadline() {
    let _serial = lease_support::one_at_a_time();
    lease_support::frozen_store(&Server::start(Kind::Redis));
}

#[tokio::test(flavor = "current_thread")]
async fn builds_uses_and_drops_inside_a_current_thread_runtime() {
    let _serial = lease_support::one_at_a_time();
    lease_support::inside_a_runtime(&Server::start(Kind::Redis));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builds_uses_and_drops_inside_a_multi_thread_runtime() {
    let _serial = lease_support::one_at_a_time();
    lease_support::inside_a_runtime(&Server::start(Kind::Redis));
}

#[test]
fn marks_far_ahead_of_the_clock_are_skipped_counted_and_named() {
    let _serial = lease_support::one_at_a_time();
    lease_support::poisoned_marks(&Server::start(Kind::Redis));
}

#[test]
fn a_renewal_answered_after_the_deadline_fences_and_does_not_reopen() {
    let _serial = lease_support::one_at_a_time();
    lease_support::late_renewal(&Server::start(Kind::Redis));
}
