//! Lease bugs planted on purpose (the plant build, `--cfg
//! flakeid_plant`): a tweak that plants one in each lease a scenario
//! builds, and a check that the scenario then fails naming what broke.

use flakeid::Lease;
use flakeid::plant::Plant;

/// Runs a scenario with a bug planted (the plant build) that must make it
/// fail naming what broke: its panic message contains `expected`.
pub fn fails_naming(expected: &str, scenario: impl FnOnce()) {
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(scenario));
    let Err(panic) = caught else {
        panic!("the planted bug went unnoticed");
    };
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default();
    assert!(
        message.contains(expected),
        "the scenario failed, but not naming {expected:?}: {message}"
    );
}

/// `lease` with `plant` planted (the plant build).
pub fn planted(plant: &str) -> impl Fn(Lease) -> Lease {
    let plant = Plant::from_name(plant).expect("a plant's name");
    move |lease| lease.plant(plant)
}
