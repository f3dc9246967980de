//! Why a generator cannot issue an ID now.

use std::fmt;
use std::time::Duration;

use super::StateError;

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
/// skips to that error's own source (see [`BuildError`](super::BuildError)'s).
impl std::error::Error for GenerateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GenerateError::Storage(e) => e.source(),
            _ => None,
        }
    }
}
