//! What a generator can do right now, for readiness probes.

use std::fmt;
use std::time::Duration;

use crate::persist::StateError;

/// Whether a generator can issue IDs now, from
/// [`Generator::health`](crate::Generator::health): the answer for a
/// readiness probe. Reading it issues nothing and takes no lock the
/// generator's callers take.
///
/// | state | `try_next_id` | `next_id` | ready? |
/// |---|---|---|---|
/// | [`Issuing`](Health::Issuing) | an ID | an ID | yes |
/// | [`StorageFailing`](Health::StorageFailing) | IDs while the saved reservation lasts, then `Err(Storage)` | IDs while it lasts, then waits | degraded: page someone |
/// | [`Fenced`](Health::Fenced) | `Err(Fenced)` | waits for a fresh lease | no |
/// | [`Expired`](Health::Expired) | `Err(Expired)` | panics | no, never again |
///
/// A service that must not hang while fenced calls
/// [`try_next_id`](crate::Generator::try_next_id) (or bounds
/// `next_id_async` with a timeout) and answers 503 on `Err`, and lets its
/// readiness probe take it out of the load balancer while `health()` is not
/// [`is_ready`](Health::is_ready).
///
/// ```
/// use flakeid::{Generator, Health, Layout};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
/// assert_eq!(generator.health(), Health::Issuing);
/// assert!(generator.health().is_ready());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Health {
    /// IDs are issued.
    Issuing,
    /// The node id is leased (the `etcd` and `redis` features) and the lease
    /// is not proven valid now: nothing is issued until a fresh claim.
    Fenced {
        /// How long the lease has been lapsed (since the generator was built
        /// if no node id has been claimed yet).
        closed_for: Duration,
    },
    /// With restart safety on, the last save of the reservation failed (the
    /// writer keeps retrying): IDs are issued while the ticks already
    /// reserved last, then not until a save succeeds.
    StorageFailing(StateError),
    /// The clock is past the last instant the layout can encode: no ID will
    /// be issued again.
    Expired {
        /// The layout's last instant, in Unix milliseconds.
        last_ms: u64,
    },
}

impl Health {
    /// True only for [`Issuing`](Health::Issuing): what a readiness probe
    /// reports.
    ///
    /// ```
    /// use std::time::Duration;
    /// use flakeid::Health;
    ///
    /// assert!(Health::Issuing.is_ready());
    /// assert!(!Health::Fenced { closed_for: Duration::from_secs(3) }.is_ready());
    /// ```
    pub const fn is_ready(&self) -> bool {
        matches!(self, Health::Issuing)
    }
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Health::Issuing => write!(f, "issuing"),
            Health::Fenced { closed_for } => {
                write!(f, "fenced: the node-id lease lapsed {closed_for:?} ago")
            }
            Health::StorageFailing(e) => write!(f, "storage failing: {e}"),
            Health::Expired { last_ms } => {
                write!(f, "expired: the layout ended at {last_ms} ms since 1970")
            }
        }
    }
}
