//! What a generator does when a tick's sequence runs out or the clock reads behind.

use std::time::Duration;

/// What to do when every sequence value of the current tick has been issued.
///
/// | policy | does | like |
/// |---|---|---|
/// | `Wait` (default) | waits for the next tick: spins briefly, yields, then sleeps | Twitter, most generators |
/// | `Borrow { max_ahead }` | moves the timestamp ahead of the clock, up to `max_ahead`, then waits | yitter, Baidu uid-generator |
/// | `Error` | `try_next_id` returns `SequenceExhausted` | the Go seed generator |
/// | `NextClock` | moves to the next clock id within the tick | the multi-clock seed |
///
/// ```
/// use flakeid::{Generator, Layout, OnExhausted};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter())
///     .node_id(7)
///     .on_exhausted(OnExhausted::Borrow { max_ahead: Duration::from_millis(50) })
///     .build()?;
/// // Bursts above 4,096 IDs/ms borrow up to 50 ms of future timestamps.
/// let ids: Vec<_> = generator.next_ids(10_000).collect();
/// assert!(!ids.is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum OnExhausted {
    /// Wait until the clock reaches the next tick: spin briefly, then yield,
    /// then sleep, so a waiting thread does not burn a core for a whole tick.
    #[default]
    Wait,
    /// Move the timestamp logically ahead of the clock, one tick at a time, up
    /// to `max_ahead` ahead of it; past that, wait. When load falls, the clock
    /// catches up (yitter's and Baidu's "borrowing future time").
    Borrow {
        /// How far the timestamp may lead the clock: the lead allowance.
        max_ahead: Duration,
    },
    /// Report [`GenerateError::SequenceExhausted`](crate::GenerateError::SequenceExhausted)
    /// instead of waiting (the seed Go generator's behaviour).
    Error,
    /// Move to the next clock id within the same tick instead of waiting (the
    /// multi-clock scheme). Needs a clock-id field above the sequence field.
    /// Each clock id is used at most once in a generator's life, and it only
    /// moves up to higher clock ids, so IDs keep increasing. With
    /// [persistence](crate::Persist) it skips the clock ids a predecessor may
    /// have used in the tick (their saved mark is at or past it): it moves to
    /// the lowest clock id above the current one that is free in the tick.
    /// It waits as with [`Wait`](OnExhausted::Wait) exactly when none is
    /// left, and in a tick a previous holder of a leased node id may have
    /// used (up to the lease's floor), where every clock id may be taken.
    NextClock,
}

impl OnExhausted {
    /// How far ahead of the clock the timestamp may run: `Borrow`'s
    /// `max_ahead`, otherwise zero.
    pub(crate) fn lead(self) -> Duration {
        match self {
            OnExhausted::Borrow { max_ahead } => max_ahead,
            _ => Duration::ZERO,
        }
    }
}

/// What to do when the clock reads earlier than the last issued timestamp (a
/// wall clock stepped back).
///
/// | policy | does | like |
/// |---|---|---|
/// | `Continue` (default) | keeps issuing on the last timestamp (a logical clock) | Sonyflake, TSID |
/// | `Wait { max }` | waits up to `max` for the clock to catch up, then reports | Meituan Leaf (5 ms) |
/// | `Error` | `try_next_id` returns `ClockBehind` | Twitter's original |
/// | `NextClock` | bumps the clock id and issues at the real, earlier time | the multi-clock seed |
///
/// A reading that lags the last timestamp by no more than the `Borrow`
/// allowance is not "behind": that lead is the generator's own.
///
/// ```
/// use flakeid::{Generator, Layout, OnClockBehind, SystemClock};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Follow the wall clock; on a step back wait up to 5 ms (as Meituan Leaf does).
/// let generator = Generator::builder(Layout::twitter())
///     .node_id(7)
///     .clock(SystemClock)
///     .on_clock_behind(OnClockBehind::Wait { max: Duration::from_millis(5) })
///     .build()?;
/// let id = generator.try_next_id()?;
/// # let _ = id;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum OnClockBehind {
    /// Keep issuing on the last timestamp, a logical clock (Sonyflake, TSID).
    /// When that tick's sequence runs out, the exhaustion policy applies.
    #[default]
    Continue,
    /// Wait up to `max` for the clock to catch up, then report
    /// [`GenerateError::ClockBehind`](crate::GenerateError::ClockBehind). A clock
    /// already further behind than `max` is reported at once, since waiting
    /// cannot help.
    Wait {
        /// The longest wait.
        max: Duration,
    },
    /// Report [`GenerateError::ClockBehind`](crate::GenerateError::ClockBehind)
    /// at once (the original Twitter code).
    Error,
    /// Bump the clock id and issue at the real, earlier time (the multi-clock
    /// scheme). IDs stay unique because the new clock id was never used with
    /// those times; they are **not** ordered across the step, since the ID after
    /// it carries an earlier time. Each clock id is used at most once in a
    /// generator's life, in order: from the starting one
    /// ([`Builder::clock_id`](crate::Builder::clock_id)) up, wrapping past
    /// the highest to 0 and on to the one below the start (with
    /// [persistence](crate::Persist),
    /// skipping those a predecessor may have used at the clock's time); once
    /// none is left, or when the clock reads a tick a previous holder of a
    /// leased node id may have used (up to the lease's floor), the generator
    /// continues on the last timestamp as with
    /// [`Continue`](OnClockBehind::Continue).
    NextClock,
}
