//! Waiting without blocking the executor (feature `tokio`): the pauses
//! `wait::Waiting` decides, slept on tokio's timer instead of the thread,
//! for both generators.

use std::time::Duration;

use tokio::time::sleep;

use super::CellGenerator;
use super::batch::IdBatch;
use super::cell::StateCell;
use super::core::Core;
use super::wait::{LONGEST_SLEEP, Mode, Waiting};
use crate::clock::Clock;
use crate::error::GenerateError;
use crate::id::Id;

/// The shortest sleep: tokio's timer has millisecond resolution, and a zero
/// sleep would poll again without giving other tasks a turn.
const MIN_PAUSE: Duration = Duration::from_millis(1);

/// Reserves up to `n` IDs, sleeping on the runtime's timer through the stalls
/// `mode` waits for: the blocking `Core::wait`, with the runtime's sleep.
async fn reserve_batch<C: Clock, S: StateCell>(
    core: &Core<C, S>,
    n: usize,
    mode: Mode,
) -> Result<IdBatch, GenerateError> {
    if n == 0 {
        return Ok(IdBatch::empty());
    }
    let n = n as u64;
    let mut stall = match core.poll(n) {
        Ok(step) => return Ok(core.batch(step)),
        Err(stall) => stall,
    };
    core.note_stall(stall);
    let mut waiting = Waiting::new(mode);
    let outcome = loop {
        // In slices, as the blocking wait does: a pause worked out from a
        // clock far behind ends soon after the clock is corrected.
        let pause = match waiting.pause(core.plan(), core.telemetry(), stall) {
            Ok(pause) => pause,
            Err(e) => break Err(e),
        };
        sleep(pause.clamp(MIN_PAUSE, LONGEST_SLEEP)).await;
        match core.poll(n) {
            Ok(step) => break Ok(core.batch(step)),
            Err(next) => stall = next,
        }
    };
    waiting.finish(core.telemetry());
    outcome
}

/// Async versions of the waiting calls (feature `tokio`).
///
/// Each has the semantics of its blocking twin: it returns as soon as an ID
/// can be issued, waits for what the policies (and the blocking twin) wait
/// for, and reports or panics on the rest. It waits by sleeping on tokio's
/// timer, so the executor's thread runs other tasks meanwhile. It needs a
/// tokio runtime with the time driver enabled (`#[tokio::main]` has it).
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<C: Clock, S: StateCell> CellGenerator<C, S> {
    /// [`next_id`](Self::next_id) without blocking the executor: waits
    /// for the next tick when this one is used up, for the clock under
    /// `OnClockBehind::Wait`, for a reservation to be saved or storage to
    /// recover, and for a node-id lease to be renewed.
    ///
    /// # Panics
    ///
    /// As [`next_id`](Self::next_id): only where
    /// [`try_next_id_async`](Self::try_next_id_async) would return an
    /// error. Also panics outside a tokio runtime with timers enabled, if it
    /// has to wait.
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let id = generator.next_id_async().await;
    /// assert_eq!(generator.layout().decode(id)?.node_id(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn next_id_async(&self) -> Id {
        self.next_ids_async(1).await.first_id()
    }

    /// [`try_next_id`](Self::try_next_id) without blocking the executor:
    /// waits as the policies say, reports what they report.
    ///
    /// # Errors
    ///
    /// As [`try_next_id`](Self::try_next_id):
    /// [`GenerateError::SequenceExhausted`] under `OnExhausted::Error`,
    /// [`GenerateError::ClockBehind`] under `OnClockBehind::Error` or when
    /// `OnClockBehind::Wait` runs out, [`GenerateError::Expired`],
    /// [`GenerateError::Storage`] and [`GenerateError::Fenced`].
    ///
    /// ```
    /// use flakeid::{GenerateError, Generator, Layout, ManualClock, OnExhausted};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::builder().epoch_ms(0).timestamp_bits(41).sequence(1).build()?;
    /// let generator = Generator::builder(layout)
    ///     .clock(ManualClock::new(1_000))
    ///     .on_exhausted(OnExhausted::Error)
    ///     .build()?;
    /// generator.try_next_id_async().await?;
    /// generator.try_next_id_async().await?;
    /// // Two IDs per millisecond and a clock that stands still: reported, not awaited.
    /// assert!(matches!(
    ///     generator.try_next_id_async().await,
    ///     Err(GenerateError::SequenceExhausted { .. })
    /// ));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_next_id_async(&self) -> Result<Id, GenerateError> {
        self.try_next_ids_async(1)
            .await
            .map(|batch| batch.first_id())
    }

    /// [`next_ids`](Self::next_ids) without blocking the executor: up to
    /// `n` consecutive IDs (at least one, at most the rest of the tick) in
    /// one step (one compare-and-swap for the lock-free generator).
    ///
    /// # Panics
    ///
    /// As [`next_id_async`](Self::next_id_async).
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let mut ids = Vec::with_capacity(10_000);
    /// while ids.len() < 10_000 {
    ///     ids.extend(generator.next_ids_async(10_000 - ids.len()).await);
    /// }
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn next_ids_async(&self, n: usize) -> IdBatch {
        match reserve_batch(&self.core, n, Mode::Wait).await {
            Ok(batch) => batch,
            Err(e) => panic!("flakeid: {e}"),
        }
    }

    /// [`try_next_ids`](Self::try_next_ids) without blocking the executor.
    ///
    /// # Errors
    ///
    /// As [`try_next_id_async`](Self::try_next_id_async).
    ///
    /// ```
    /// use flakeid::{Generator, Layout};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
    /// let batch = generator.try_next_ids_async(100).await?;
    /// assert!((1..=100).contains(&batch.len()));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_next_ids_async(&self, n: usize) -> Result<IdBatch, GenerateError> {
        reserve_batch(&self.core, n, Mode::Report).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::fence::{Fence, Grant};
    use crate::generator::Generator;
    use crate::layout::Layout;

    const T: u64 = 1_700_000_000_000;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn a_fenced_generator_waits_for_the_lease_without_blocking_the_executor() {
        let fence = Arc::new(Fence::new());
        let layout = Layout::twitter();
        let mut builder = Generator::builder(layout.clone())
            .single_node()
            .clock(ManualClock::new(T));
        builder.fence = Some(fence.clone());
        let generator = builder.build().unwrap();
        runtime().block_on(async {
            // Reported at once by the try_ variant, as by try_next_id.
            assert_eq!(
                generator.try_next_id_async().await,
                Err(GenerateError::Fenced)
            );
            let opener = {
                let fence = fence.clone();
                let node_bits = layout.node_mask_bits(9).unwrap();
                tokio::spawn(async move {
                    sleep(Duration::from_millis(20)).await;
                    fence.open(
                        Grant {
                            node_bits,
                            floor: 0,
                            ceiling: u64::MAX,
                            rewind: false,
                        },
                        u64::MAX,
                    );
                })
            };
            // The opener runs on this same thread while the ID waits.
            let id = generator.next_id_async().await;
            assert!(opener.is_finished());
            assert_eq!(layout.decode(id).unwrap().node_id(), 9);
        });
    }
}
