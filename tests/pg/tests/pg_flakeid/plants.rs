//! The bugs planted in pg_flakeid on purpose (its cargo features
//! `plant-*`), each caught by a scenario of these tests: with
//! `FLAKEID_PG_PLANT_LIBDIR` naming the directory of a plant-built
//! `pg_flakeid.so`, the servers load it instead of the installed one, and
//! the test passes only if the scenario fails.

use std::path::Path;

use crate::support::plant_dir;
use crate::{concurrent, crash, lease};

/// Runs `scenario` on the plant build and passes only if it names a
/// violation; `unnoticed` says what the scenario saw instead.
fn caught(plant: &str, unnoticed: &str, scenario: fn(Option<&Path>) -> Result<(), String>) {
    let dir = plant_dir();
    match scenario(Some(&dir)) {
        Ok(()) => panic!(
            "the plant build in {} went unnoticed: {unnoticed}",
            dir.display()
        ),
        Err(violation) => eprintln!("caught {plant}: {violation}"),
    }
}

/// `plant-unlogged-reservation`: the worker publishes its reservation
/// without logging it, so after a crash and a clock set back the server
/// issues IDs below (or equal to) those from before the crash.
#[test]
#[ignore = "needs a plant build: see .ci/test"]
fn unlogged_reservation() {
    caught(
        "the unlogged reservation",
        "IDs after the crash all above the old ones",
        crash::crash_restart_with_the_clock_back,
    );
}

/// `plant-per-backend-word`: each backend advances a word of its own, so
/// two clients issue the same IDs.
#[test]
#[ignore = "needs a plant build: see .ci/test"]
fn per_backend_word() {
    caught(
        "the per-backend word",
        "16 clients issued no duplicate",
        concurrent::sixteen_clients_share_one_generator,
    );
}

/// `plant-lease-unfenced`: backends never look at the leased node id's
/// deadline, so a server cut off from the lease store goes on issuing
/// after another server may have claimed its node id.
#[test]
#[ignore = "needs a plant build: see .ci/test"]
fn lease_unfenced() {
    caught(
        "the unfenced lease",
        "the cut-off server was fenced",
        lease::a_server_cut_off_from_the_store_stops_issuing,
    );
}
