//! Why a generator cannot be built, or cannot issue an ID now.

use std::fmt;
use std::time::Duration;

use crate::{FieldError, LeaseError, StateError};

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

/// An ID could not be issued.
///
/// `try_next_id` returns these; `next_id` waits through the ones a policy says to
/// wait for and panics on the rest (see [`Generator::next_id`](crate::Generator::next_id)).
///
/// ```
/// use flakeid::{GenerateError, Generator, Layout, ManualClock, OnExhausted};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let clock = ManualClock::new(1_700_000_000_000);
/// let layout = Layout::builder()
///     .epoch_ms(1_600_000_000_000)
///     .timestamp_bits(41)
///     .node("worker", 10)
///     .sequence(1)
///     .build()?;
/// let generator = Generator::builder(layout)
///     .node_id(1)
///     .clock(clock)
///     .on_exhausted(OnExhausted::Error)
///     .build()?;
/// generator.try_next_id()?;
/// generator.try_next_id()?;
/// // Two sequence values per millisecond, and the clock stands still.
/// assert!(matches!(
///     generator.try_next_id(),
///     Err(GenerateError::SequenceExhausted { .. })
/// ));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GenerateError {
    /// The current tick's sequence is used up and the policy says not to wait
    /// (`OnExhausted::Error`), or (from `poll_id`) an ID needs a later tick.
    SequenceExhausted {
        /// About how long until the next tick can be used.
        retry_after: Duration,
    },
    /// The clock reads earlier than the last issued timestamp and the policy
    /// says to refuse (`OnClockBehind::Error`), or the wait it allowed
    /// (`OnClockBehind::Wait`) ran out, or (from `poll_id`) it says to wait.
    ClockBehind {
        /// How far the clock is behind.
        behind: Duration,
    },
    /// The clock is past the last instant the layout can encode.
    Expired {
        /// The layout's last instant, in Unix milliseconds.
        last_ms: u64,
    },
    /// (from `poll_id`) The next ID needs a later tick than the saved
    /// reservation covers, or than a leased node id's store has recorded for
    /// this holder; the reservation (or the lease's ceiling) is being extended.
    Reserving,
    /// The reservation cannot be saved (the store returned an error or
    /// panicked), so no ID past the saved one may be issued. `try_next_id`
    /// (and `poll_id`) report it; `next_id` waits for storage to recover.
    Storage(StateError),
    /// The node id is leased and the lease cannot be proven valid right now
    /// (renewals failing, or no node id claimed yet). `try_next_id` reports
    /// it; `next_id` waits for a fresh claim.
    Fenced,
}

impl GenerateError {
    /// True if trying again later may succeed: every error but
    /// [`Expired`](GenerateError::Expired), after which the layout can encode
    /// no more time.
    ///
    /// ```
    /// use flakeid::GenerateError;
    /// use std::time::Duration;
    ///
    /// assert!(GenerateError::SequenceExhausted { retry_after: Duration::from_millis(1) }.is_transient());
    /// assert!(!GenerateError::Expired { last_ms: 0 }.is_transient());
    /// ```
    pub const fn is_transient(&self) -> bool {
        !matches!(self, GenerateError::Expired { .. })
    }
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenerateError::SequenceExhausted { retry_after } => write!(
                f,
                "the sequence of the current tick is used up (next tick in about {retry_after:?})"
            ),
            GenerateError::ClockBehind { behind } => {
                write!(
                    f,
                    "the clock is {behind:?} behind the last issued timestamp"
                )
            }
            GenerateError::Expired { last_ms } => write!(
                f,
                "the clock is past the layout's last instant ({last_ms} ms since 1970)"
            ),
            GenerateError::Reserving => {
                write!(f, "the reservation of later timestamps is being saved")
            }
            GenerateError::Storage(e) => write!(f, "cannot save the reservation: {e}"),
            GenerateError::Fenced => write!(
                f,
                "the node-id lease cannot be proven valid; no id is issued until it is renewed"
            ),
        }
    }
}

/// `Storage`'s `Display` already ends with the storage error, so `source`
/// skips to that error's own source (see [`BuildError`]'s).
impl std::error::Error for GenerateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GenerateError::Storage(e) => e.source(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;
    #[cfg(feature = "public-ids")]
    use crate::PublicIdError;
    use crate::{ConvertIdError, LayoutError, NodeIdError, ParseIdError};

    /// What an error reporter prints: the messages of `e` and its sources.
    fn report(e: &(dyn Error + 'static)) -> String {
        let mut text = e.to_string();
        let mut next = e.source();
        while let Some(inner) = next {
            text = format!("{text}: {inner}");
            next = inner.source();
        }
        text
    }

    #[test]
    fn a_wrapped_error_is_reported_once() {
        let state = StateError::from_io(
            "write /data/node.state.tmp",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device"),
        );
        let field = FieldError::OutOfRange {
            field: "node".into(),
            value: 5000,
            max: 1023,
        };
        let lease = LeaseError::AllHeld { first: 0, last: 7 };
        let cases: [(Box<dyn Error>, String); 4] = [
            (
                Box::new(BuildError::Field(field.clone())),
                field.to_string(),
            ),
            (
                Box::new(BuildError::State(state.clone())),
                state.to_string(),
            ),
            (
                Box::new(BuildError::Lease(lease.clone())),
                lease.to_string(),
            ),
            (
                Box::new(GenerateError::Storage(state.clone())),
                state.to_string(),
            ),
        ];
        for (error, inner) in cases {
            let text = report(&*error);
            assert_eq!(text.matches(&inner).count(), 1, "{text}");
            assert_eq!(
                text.matches("no space left on device").count(),
                text.contains("node.state") as usize,
                "{text}"
            );
        }
        // The chain of a storage failure ends in the I/O error itself.
        let error = GenerateError::Storage(state);
        let mut last: &(dyn Error + 'static) = &error;
        while let Some(next) = last.source() {
            last = next;
        }
        let io = last.downcast_ref::<std::io::Error>().expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(
            report(&error),
            "cannot save the reservation: write /data/node.state.tmp failed: \
             no space left on device"
        );
    }

    #[test]
    fn every_error_can_cross_threads() {
        fn assert_error<E: Error + Send + Sync + 'static>() {}
        assert_error::<LayoutError>();
        assert_error::<FieldError>();
        assert_error::<BuildError>();
        assert_error::<LeaseError>();
        assert_error::<NodeIdError>();
        assert_error::<StateError>();
        assert_error::<GenerateError>();
        assert_error::<ParseIdError>();
        assert_error::<ConvertIdError>();
        #[cfg(feature = "public-ids")]
        assert_error::<PublicIdError>();
    }
}
