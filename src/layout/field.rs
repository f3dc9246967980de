//! The fields of a layout: their kinds, widths and positions.

use std::borrow::Cow;

/// What a field of a [`Layout`](crate::Layout) holds.
///
/// ```
/// use flakeid::{FieldKind, Layout};
///
/// let kinds: Vec<FieldKind> = Layout::twitter().fields().iter().map(|f| f.kind()).collect();
/// assert_eq!(kinds, [FieldKind::Timestamp, FieldKind::Node, FieldKind::Node, FieldKind::Sequence]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldKind {
    /// Time units since the layout's epoch. Always the highest field.
    Timestamp,
    /// Part of the node id (datacenter, worker, shard, ...).
    Node,
    /// The counter within one tick.
    Sequence,
    /// The clock id of the multi-clock scheme: bumped when the clock steps back
    /// or (optionally) when a tick's sequence runs out.
    ClockId,
}

/// One field of a [`Layout`](crate::Layout): a name, a kind, a width and a position.
///
/// ```
/// use flakeid::{FieldKind, Layout};
///
/// let layout = Layout::twitter();
/// let worker = layout.field("worker").unwrap();
/// assert_eq!((worker.kind(), worker.bits(), worker.shift()), (FieldKind::Node, 5, 12));
/// assert_eq!(worker.max(), 31);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    pub(super) name: Cow<'static, str>,
    pub(super) kind: FieldKind,
    pub(super) bits: u32,
    pub(super) shift: u32,
}

impl Field {
    /// The field's name: `timestamp`, `sequence`, `clock_id`, or a node field's own.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::discord();
    /// let names: Vec<&str> = layout.fields().iter().map(|f| f.name()).collect();
    /// assert_eq!(names, ["timestamp", "worker", "process", "sequence"]);
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the field holds.
    ///
    /// ```
    /// use flakeid::{FieldKind, Layout};
    ///
    /// assert_eq!(Layout::twitter().fields()[0].kind(), FieldKind::Timestamp);
    /// ```
    pub const fn kind(&self) -> FieldKind {
        self.kind
    }

    /// The field's width in bits.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::twitter().field("sequence").map(|f| f.bits()), Some(12));
    /// ```
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// The position of the field's lowest bit in the ID.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// // Twitter: 12 sequence bits, then 5 worker bits, then the datacenter.
    /// assert_eq!(Layout::twitter().field("datacenter").map(|f| f.shift()), Some(17));
    /// ```
    pub const fn shift(&self) -> u32 {
        self.shift
    }

    /// The largest value the field holds.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::twitter().field("sequence").map(|f| f.max()), Some(4_095));
    /// ```
    pub const fn max(&self) -> u64 {
        mask(self.bits)
    }

    /// The field's value in `id`.
    #[inline]
    pub(super) fn get(&self, id: u64) -> u64 {
        (id >> self.shift) & mask(self.bits)
    }
}

/// All ones in the low `bits` bits.
#[inline]
pub(crate) const fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}
