//! The model's properties, named as sentences: what must always hold,
//! and what must sometimes happen (so that a model that never reaches a
//! takeover, a failover or a rotation does not pass by checking nothing).

use stateright::Property;

use super::state::{Lease, State};

pub(crate) const SINGLE_FENCE: &str = "no two holders' fences are open on one node id at one tick";
pub(crate) const WITHIN_EXPIRY: &str =
    "no fence is open at or past the tick its claim expires in the store";
pub(crate) const HAND_OFF_ORDER: &str =
    "every holder's IDs on a node id are above its predecessors'";
pub(crate) const CLOSED_STAYS_CLOSED: &str =
    "a fence that closed opens again only for a fresh claim";
pub(crate) const TAKEOVER: &str = "a holder takes over a node id another held";
pub(crate) const FAILOVER: &str = "a fence opens after a failover";
pub(crate) const ROTATION: &str = "a holder rotates to a fresh node id after a rollback";

/// The always properties, by the name each plant's counterexample breaks.
pub(crate) const ALWAYS: [&str; 4] = [
    SINGLE_FENCE,
    WITHIN_EXPIRY,
    HAND_OFF_ORDER,
    CLOSED_STAYS_CLOSED,
];
pub(crate) const SOMETIMES: [&str; 3] = [TAKEOVER, FAILOVER, ROTATION];

pub(crate) fn all() -> Vec<Property<Lease>> {
    vec![
        Property::always(SINGLE_FENCE, |_, state: &State| !state.double_open),
        Property::always(WITHIN_EXPIRY, |_, state: &State| !state.past_expiry),
        Property::always(HAND_OFF_ORDER, |_, state: &State| !state.order_broken),
        Property::always(CLOSED_STAYS_CLOSED, |_, state: &State| !state.reopened),
        Property::sometimes(TAKEOVER, |_, state: &State| state.took_over),
        Property::sometimes(FAILOVER, |_, state: &State| state.opened_after_failover),
        Property::sometimes(ROTATION, |_, state: &State| state.rotated),
    ]
}
