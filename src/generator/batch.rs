//! Consecutive IDs reserved by one step: [`IdBatch`].

use std::iter::FusedIterator;

use crate::id::Id;

/// Consecutive IDs reserved by one step, from
/// [`Generator::next_ids`](crate::Generator::next_ids): an iterator in
/// increasing order.
///
/// ```
/// use flakeid::{Generator, Layout};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
/// let batch = generator.next_ids(16);
/// assert!(batch.len() >= 1 && batch.len() <= 16);
/// let first = batch.first_id();
/// let ids: Vec<_> = batch.collect();
/// assert_eq!(ids[0], first);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdBatch {
    next: u64,
    step: u64,
    remaining: u64,
}

impl IdBatch {
    #[inline]
    pub(crate) fn new(first: u64, step: u64, count: u64) -> IdBatch {
        IdBatch {
            next: first,
            step,
            remaining: count,
        }
    }

    #[inline]
    pub(crate) fn empty() -> IdBatch {
        IdBatch::new(0, 0, 0)
    }

    /// The first ID the batch yields (meaningless for an empty batch, which
    /// only `n = 0` produces).
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// let mut batch = generator.next_ids(3);
    /// let first = batch.first_id();
    /// assert_eq!(generator.layout().decode(first)?.sequence(), 0); // the tick's first ID
    /// assert_eq!(batch.next(), Some(first));
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn first_id(&self) -> Id {
        Id::from_u64(self.next)
    }
}

impl Iterator for IdBatch {
    type Item = Id;

    #[inline]
    fn next(&mut self) -> Option<Id> {
        if self.remaining == 0 {
            return None;
        }
        let id = Id::from_u64(self.next);
        self.remaining -= 1;
        self.next = self.next.wrapping_add(self.step);
        Some(id)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for IdBatch {}
impl FusedIterator for IdBatch {}
