//! Why a generator cannot be built.

use std::fmt;
use std::time::Duration;

use super::{LeaseError, StateError};
use crate::layout::FieldError;

/// A generator could not be built from the given configuration.
///
/// ```
/// use flakeid::{BuildError, Generator, Layout, OnExhausted};
///
/// // Twitter's layout has no clock-id field to move to.
/// let err = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .on_exhausted(OnExhausted::NextClock)
///     .build()
///     .unwrap_err();
/// assert_eq!(err, BuildError::NeedsClockIdField { policy: "OnExhausted::NextClock" });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The layout has node fields and no node id was chosen: call
    /// [`Builder::node_id`](crate::Builder::node_id),
    /// [`node_field`](crate::Builder::node_field), `lease`, or
    /// [`single_node`](crate::Builder::single_node). Two replicas that both
    /// left it out would issue the same IDs.
    NodeIdNotSet,
    /// A node or clock id does not fit the layout.
    Field(FieldError),
    /// A `NextClock` policy was chosen for a layout without a clock-id field.
    NeedsClockIdField {
        /// The policy, for example `"OnClockBehind::NextClock"`.
        policy: &'static str,
    },
    /// `OnExhausted::NextClock` keeps IDs ordered only when the clock-id field
    /// sits above the sequence field.
    ClockIdBelowSequence,
    /// `OnExhausted::Borrow { max_ahead }` is shorter than one time unit, so it
    /// could never borrow.
    BorrowTooShort {
        /// The allowance given.
        max_ahead: Duration,
        /// The layout's time unit in milliseconds.
        unit_ms: u64,
    },
    /// The random sequence start bound is 0 or larger than a tick's capacity.
    RandomStartOutOfRange {
        /// The bound given.
        bound: u64,
        /// The sequence values in one tick.
        capacity: u64,
    },
    /// [`Persist::window`](crate::Persist::window) is longer than the
    /// longest window, one hour: a crash forfeits up to a window of
    /// timestamps, and a restart may wait that long.
    WindowTooLong {
        /// The window given.
        window: Duration,
        /// The longest accepted.
        max: Duration,
    },
    /// The saved state could not be read, checked or written (see
    /// [`Persist`](crate::Persist)); no ID was issued.
    State(StateError),
    /// No node id could be leased (the `etcd` and `redis` features); no ID
    /// was issued.
    Lease(LeaseError),
    /// [`Builder::build_shared`](crate::Builder::build_shared): the shared
    /// word holds the state of a generator with another node id. Two node
    /// ids on one word would give one of them the other's sequence.
    SharedWordNodeId {
        /// The node id in the word.
        found: u64,
        /// The node id of the generator being built.
        node_id: u64,
    },
    /// [`Builder::build_shared`](crate::Builder::build_shared) with an
    /// option that belongs to one generator, not to a word many share:
    /// restart safety (`persist`) or a lease. The word's owner keeps it
    /// safe across restarts (the PostgreSQL extension in the WAL).
    SharedWordUnsupported {
        /// The option, for example `"Builder::persist"`.
        option: &'static str,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::NodeIdNotSet => write!(
                f,
                "no node id set: two generators that both leave it out issue the same IDs; \
                 set one with Builder::node_id, Builder::node_field or Builder::lease, or \
                 call Builder::single_node if this is the only generator of its layout"
            ),
            BuildError::Field(e) => e.fmt(f),
            BuildError::NeedsClockIdField { policy } => {
                write!(f, "{policy} needs a layout with a clock-id field")
            }
            BuildError::ClockIdBelowSequence => write!(
                f,
                "OnExhausted::NextClock needs the clock-id field above the sequence field"
            ),
            BuildError::BorrowTooShort { max_ahead, unit_ms } => write!(
                f,
                "OnExhausted::Borrow max_ahead of {max_ahead:?} is shorter than the {unit_ms} ms time unit"
            ),
            BuildError::RandomStartOutOfRange { bound, capacity } => write!(
                f,
                "random sequence start bound {bound} is out of range (1..={capacity})"
            ),
            BuildError::WindowTooLong { window, max } => write!(
                f,
                "the persistence window of {window:?} is longer than the longest, {max:?}"
            ),
            BuildError::State(e) => e.fmt(f),
            BuildError::Lease(e) => e.fmt(f),
            BuildError::SharedWordNodeId { found, node_id } => write!(
                f,
                "the shared state word holds node id {found}'s state, not node id {node_id}'s"
            ),
            BuildError::SharedWordUnsupported { option } => write!(
                f,
                "{option} belongs to one generator and cannot be used on a shared state word"
            ),
        }
    }
}

/// `Field`, `State` and `Lease` are transparent: their `Display` is the inner
/// error's, so `source` skips to the inner error's source. Returning the inner
/// error itself would make error reporters (anyhow, eyre, `{:#}`) print its
/// message twice.
impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Field(e) => e.source(),
            BuildError::State(e) => e.source(),
            BuildError::Lease(e) => e.source(),
            _ => None,
        }
    }
}

impl From<FieldError> for BuildError {
    fn from(e: FieldError) -> Self {
        BuildError::Field(e)
    }
}

impl From<StateError> for BuildError {
    fn from(e: StateError) -> Self {
        BuildError::State(e)
    }
}

impl From<LeaseError> for BuildError {
    fn from(e: LeaseError) -> Self {
        BuildError::Lease(e)
    }
}
