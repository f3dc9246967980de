//! The keeper's decisions about time, as pure functions of integers: when
//! a claim or renewal proves the lease valid until, whether an answer may
//! extend the fence, a claim's floor and how long it waits to open.
//!
//! [`Run`](super::Run) calls them with fence nanoseconds and ticks; the
//! lease protocol's model (`src/tests/model`) calls the same functions with
//! its integer ticks, so that what the model checks is the keeper's rules,
//! not a second copy of them. Each planted bug that breaks one of these
//! rules (`crate::plant`) is planted here, next to the rule.

#[cfg(any(test, flakeid_plant))]
use crate::plant::Plant;

/// The rules of one lease, in one clock's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    /// How long after its request was sent a claim or renewal proves the
    /// lease valid: the TTL less the safety margin, in the holder's own
    /// clock. The store counts the TTL from when the request reached it,
    /// which is no earlier than the sending; the margin absorbs the holder's
    /// clock running slower than the store's.
    pub(crate) valid_for: u64,
    /// A bug planted on purpose, for the tests that must catch it.
    #[cfg(any(test, flakeid_plant))]
    pub(crate) plant: Option<Plant>,
}

impl Rules {
    #[cfg(any(test, flakeid_plant))]
    fn planted(&self, plant: Plant) -> bool {
        self.plant == Some(plant)
    }

    /// Until when a claim or renewal whose request was sent at `sent`
    /// proves the lease valid.
    pub(crate) fn valid_until(&self, sent: u64) -> u64 {
        sent.saturating_add(self.valid_for)
    }

    /// The time a renewal counts its deadline and the next renewal from:
    /// when its request was `sent`, however late its answer came
    /// (`answered`), since the store may have renewed the claim as soon as
    /// the request arrived.
    pub(crate) fn renewal_counts_from(&self, sent: u64, answered: u64) -> u64 {
        #[cfg(any(test, flakeid_plant))]
        if self.planted(Plant::DeadlineFromAnswer) {
            return answered;
        }
        let _ = answered;
        sent
    }

    /// Whether a renewal answered at `now` extends a fence whose deadline is
    /// `until` (0: closed): only while the fence is open. An answer after
    /// the deadline extends nothing, even under the same grant: the store
    /// may have let the claim expire, and a generator may have seen the
    /// fence closed. [`Fence::extend`](crate::fence::Fence::extend) makes
    /// this check atomically with the extension; the keeper calls it, and
    /// a test here holds the two to the same answers.
    // The keeper calls `reopens` and the fence; the model calls this.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn extends(&self, until: u64, now: u64) -> bool {
        self.reopens() || (until != 0 && now < until)
    }

    /// Whether an answer after the deadline reopens the fence: never, but
    /// for the plant.
    pub(crate) fn reopens(&self) -> bool {
        #[cfg(any(test, flakeid_plant))]
        if self.planted(Plant::LateAnswerReopens) {
            return true;
        }
        false
    }

    /// A claim's floor, from the tick of the mark it found: the new holder
    /// issues only after every earlier holder of the node id.
    pub(crate) fn floor(&self, mark_tick: u64) -> u64 {
        #[cfg(any(test, flakeid_plant))]
        if self.planted(Plant::ClaimIgnoresMark) {
            return 0;
        }
        mark_tick
    }

    /// How long after its answer a claim's fence waits to open, when the
    /// store said `wait` (the rest of a new epoch's first TTL: an earlier
    /// holder's claim may have been lost in a failover, and that holder may
    /// issue until its own deadline).
    pub(crate) fn opening_wait(&self, wait: u64) -> u64 {
        #[cfg(any(test, flakeid_plant))]
        if self.planted(Plant::EpochWaitSkipped) {
            return 0;
        }
        wait
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::fence::{Fence, Grant};

    /// The fence's atomic check and the rule the model calls agree, on
    /// a closed fence and around an open one's deadline.
    #[test]
    fn the_fence_extends_as_the_rule_says() {
        let rules = Rules {
            valid_for: 800,
            plant: None,
        };
        for (open_for, late) in [
            (None, 0),
            (Some(500), 0),
            (Some(500), 499),
            (Some(500), 500),
            (Some(500), 900),
        ] {
            let (clock, mock) = quanta::Clock::mock();
            mock.increment(Duration::from_secs(1));
            let fence = Fence::with_clock(clock);
            let start = fence.now_ns();
            let until = match open_for {
                Some(ns) => {
                    let grant = Grant {
                        node_bits: 0,
                        floor: 0,
                        ceiling: 10,
                        rewind: false,
                    };
                    fence.open(grant, start + ns);
                    start + ns
                }
                None => 0,
            };
            mock.increment(Duration::from_nanos(late));
            let now = fence.now_ns();
            assert_eq!(
                fence.extend(now + 800, 11),
                rules.extends(until, now),
                "open for {open_for:?}, answered {late} ns in"
            );
        }
    }
}
