//! Lease bugs planted on purpose, for the tests that must catch them.
//!
//! Compiled for the crate's own tests and under `--cfg flakeid_plant`
//! (never in a default or feature build; hidden from the docs). A plant is
//! attached to one lease (`Lease::plant` under the cfg; the crate's tests
//! set it in the keeper's settings) and changes the lease code at one spot,
//! the real code path otherwise: each spot is a `cfg(any(test,
//! flakeid_plant))` line next to the rule it breaks.
//!
//! | plant | spot | the rule it breaks |
//! |---|---|---|
//! | [`DeadlineFromAnswer`](Plant::DeadlineFromAnswer) | the keeper's renewal (`lease/keeper/rules.rs`) | a renewal's deadline counts from when its request was sent |
//! | [`LateAnswerReopens`](Plant::LateAnswerReopens) | the keeper's renewal, extending the fence (`lease/keeper/rules.rs`) | a renewal answered after the deadline extends nothing |
//! | [`EpochWaitSkipped`](Plant::EpochWaitSkipped) | the keeper's claim, on a `NodeAfter` answer (`lease/keeper/rules.rs`) | a claim in an epoch's first TTL waits out the rest of it |
//! | [`ClaimIgnoresMark`](Plant::ClaimIgnoresMark) | the keeper's claim, its floor (`lease/keeper/rules.rs`) | a new holder issues only after the previous holder's mark |
//! | [`WaitShortCounted`](Plant::WaitShortCounted) | the Redis store's `WAIT` count (and the memory store's) | a claim or renewal counts only once enough replicas acknowledged it |
//! | [`EtcdMarkUnguarded`](Plant::EtcdMarkUnguarded) | the etcd store's renewal, raising the mark | a renewal raises the mark only if it is still at this holder's last write |
//! | [`EpochOwnTtl`](Plant::EpochOwnTtl) | the Redis store's record of TTLs in use (and the memory store's) | a new epoch waits out the longest TTL in use under the prefix, not only the claimer's |
//! | [`SqlExpiryByClaimant`](Plant::SqlExpiryByClaimant) | the PostgreSQL and MySQL stores' claim statements (`lease/sql/`) | a row's expiry is judged by the database's clock, never the claimant's |
//! | [`SqlRenewalUnchecked`](Plant::SqlRenewalUnchecked) | the PostgreSQL and MySQL stores' renewal statement | a renewal extends only the row that holds this holder's token |
//! | [`SqlClaimDropsMark`](Plant::SqlClaimDropsMark) | the PostgreSQL and MySQL stores' claim statement | a claim keeps the row's mark (raising it only) and starts the holder above it |
//!
//! The lease protocol's model (`src/tests/model`) makes its decisions with
//! the same rules, plants included, and has a counterpart of each
//! store-side plant; every plant gives it a counterexample.
//!
//! The crate's keeper rig and fleet simulation (`src/tests/`), the lease
//! integration tests (`tests/lease_*.rs`, in the plant build) and the fault
//! test's workers (`tests/cluster`) attach them; each plant has a test in
//! CI that fails with it and passes without it.

use std::fmt;

/// A planted lease bug; see the [module docs](self).
///
/// ```
/// # #[cfg(flakeid_plant)]
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use flakeid::plant::Plant;
///
/// let plant = Plant::from_name("deadline-from-answer").ok_or("no such plant")?;
/// assert_eq!(plant, Plant::DeadlineFromAnswer);
/// assert_eq!(plant.name(), "deadline-from-answer");
/// # Ok(())
/// # }
/// # #[cfg(not(flakeid_plant))]
/// # fn main() {}
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Plant {
    /// A renewal's deadline counts from when its answer arrived instead of
    /// when its request was sent: an answer that comes late keeps the fence
    /// open past the moment the store may let the claim expire.
    DeadlineFromAnswer,
    /// A renewal answered after the fence's deadline extends it anyway,
    /// reopening a fence that closed (under the same grant).
    LateAnswerReopens,
    /// A claim the store says must wait (the epoch's first TTL, after a
    /// Redis failover) opens the fence at once.
    EpochWaitSkipped,
    /// A claim's floor is 0 instead of the mark it found: the new holder
    /// may issue below IDs of the node id's previous holder.
    ClaimIgnoresMark,
    /// A claim or renewal fewer replicas acknowledged than `WAIT` asked for
    /// counts: a deposed primary keeps its holders' fences open.
    WaitShortCounted,
    /// An etcd renewal raises the mark without checking that it is still
    /// at this holder's last write: a renewal etcd applies late (a hedged
    /// copy, a retried attempt) lowers it.
    EtcdMarkUnguarded,
    /// A new epoch (after a Redis failover) waits out the claimer's own TTL
    /// only: the TTLs in use under the prefix are neither recorded nor
    /// read, so a holder with a longer TTL, whose claim the failover lost,
    /// may still issue when the claim's wait is over.
    EpochOwnTtl,
    /// A PostgreSQL or MySQL claim judges a row free by the claimant's
    /// wall clock instead of the database's: a claimant whose clock runs
    /// ahead takes a node id whose holder is alive.
    SqlExpiryByClaimant,
    /// A PostgreSQL or MySQL renewal updates the row without checking that
    /// it holds this holder's token: a holder whose node id was taken keeps
    /// renewing it, and issuing.
    SqlRenewalUnchecked,
    /// A PostgreSQL or MySQL claim overwrites the row's mark with its own
    /// ceiling and reports no mark found: the new holder may issue below
    /// IDs of the node id's previous holder.
    SqlClaimDropsMark,
}

impl Plant {
    /// Every plant.
    pub const ALL: [Plant; 10] = [
        Plant::DeadlineFromAnswer,
        Plant::LateAnswerReopens,
        Plant::EpochWaitSkipped,
        Plant::ClaimIgnoresMark,
        Plant::WaitShortCounted,
        Plant::EtcdMarkUnguarded,
        Plant::EpochOwnTtl,
        Plant::SqlExpiryByClaimant,
        Plant::SqlRenewalUnchecked,
        Plant::SqlClaimDropsMark,
    ];

    /// The plant's kebab-case name (`deadline-from-answer`).
    ///
    /// ```
    /// # #[cfg(flakeid_plant)]
    /// # {
    /// use flakeid::plant::Plant;
    /// assert_eq!(Plant::EpochWaitSkipped.name(), "epoch-wait-skipped");
    /// # }
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Plant::DeadlineFromAnswer => "deadline-from-answer",
            Plant::LateAnswerReopens => "late-answer-reopens",
            Plant::EpochWaitSkipped => "epoch-wait-skipped",
            Plant::ClaimIgnoresMark => "claim-ignores-mark",
            Plant::WaitShortCounted => "wait-short-counted",
            Plant::EtcdMarkUnguarded => "etcd-mark-unguarded",
            Plant::EpochOwnTtl => "epoch-own-ttl",
            Plant::SqlExpiryByClaimant => "sql-expiry-by-claimant",
            Plant::SqlRenewalUnchecked => "sql-renewal-unchecked",
            Plant::SqlClaimDropsMark => "sql-claim-drops-mark",
        }
    }

    /// The plant [`name`](Plant::name) names, if any.
    ///
    /// ```
    /// # #[cfg(flakeid_plant)]
    /// # {
    /// use flakeid::plant::Plant;
    /// assert_eq!(Plant::from_name("wait-short-counted"), Some(Plant::WaitShortCounted));
    /// assert_eq!(Plant::from_name("none"), None);
    /// # }
    /// ```
    pub fn from_name(name: &str) -> Option<Plant> {
        Plant::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Plant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_both_ways() {
        for plant in Plant::ALL {
            assert_eq!(Plant::from_name(plant.name()), Some(plant));
            assert_eq!(plant.to_string(), plant.name());
        }
        assert_eq!(Plant::from_name("Deadline-From-Answer"), None);
    }
}
