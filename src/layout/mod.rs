//! The bit plan of an ID: [`Layout`], and in files of their own its
//! presets, its builder and validation, its fields, decoded IDs, its text
//! form, its errors, and whether two generators' IDs can meet.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::id::Id;

mod builder;
mod decoded;
mod error;
mod field;
mod overlap;
mod presets;
mod spec;

pub use builder::LayoutBuilder;
pub use decoded::{Decoded, Parts};
pub use error::{FieldError, LayoutError};
pub(crate) use field::mask;
pub use field::{Field, FieldKind};
pub use spec::ParseLayoutError;

/// The bit plan of an ID, from the highest bit to the lowest: unused bits (kept
/// zero, usually one so IDs stay positive as `i64`), the timestamp, then node
/// fields, the sequence and an optional clock-id field in the order the layout
/// states.
///
/// Build one with [`Layout::builder`] or take a preset. Every layout can say
/// when it ends ([`last_ms`](Layout::last_ms)), how many IDs one tick holds
/// ([`capacity_per_tick`](Layout::capacity_per_tick)) and its largest node id.
///
/// # Presets
///
/// | preset | bits, high to low | epoch | unit | capacity per node | last instant | IDs below 2^63 until |
/// |---|---|---|---|---|---|---|
/// | [`Layout::twitter()`](Layout::twitter) | 1 unused, 41 time, 5 datacenter, 5 worker, 12 sequence | 2010-11-04 | 1 ms | 4,096/ms | 2080-07-10 | always |
/// | [`Layout::discord()`](Layout::discord) | 42 time, 5 worker, 5 process, 12 sequence | 2015-01-01 | 1 ms | 4,096/ms | 2154-05-15 | 2084-09-06 |
/// | [`Layout::instagram(epoch)`](Layout::instagram) | 41 time, 13 shard, 10 sequence | yours | 1 ms | 1,024/ms | epoch + 69.7 y | epoch + 34.8 y |
/// | [`Layout::sonyflake()`](Layout::sonyflake) | 1 unused, 39 time, 8 sequence, 16 machine | 2014-09-01 | 10 ms | 256/10 ms | 2188-11-16 | always |
/// | [`Layout::js_safe()`](Layout::js_safe) | 11 unused, 41 time, 6 worker, 6 sequence | 2024-01-01 | 1 ms | 64/ms | 2093-09-06 | always; every ID ≤ 2^53 − 1 |
///
/// # Custom layouts
///
/// Custom layouts take any field order (Sonyflake's sequence sits above its
/// machine id; the multi-clock scheme puts a clock id above the machine id):
///
/// ```
/// use flakeid::Layout;
///
/// # fn main() -> Result<(), flakeid::LayoutError> {
/// let layout = Layout::builder()
///     .epoch_ms(1_600_000_000_000)
///     .timestamp_bits(41)
///     .clock_id(4)
///     .node("machine", 8)
///     .sequence(10)
///     .build()?;
/// assert_eq!(layout.capacity_per_tick(), 1024);
/// # Ok(())
/// # }
/// ```
///
/// ```
/// use flakeid::Layout;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // The resource-id seed: 38 bits of ms, 15 worker bits, 10 sequence bits.
/// let layout = Layout::builder()
///     .epoch_ms(1_600_000_000_000)
///     .timestamp_bits(38)
///     .node("worker", 15)
///     .sequence(10)
///     .build()?;
/// assert_eq!(layout.capacity_per_tick(), 1024);
/// assert_eq!(layout.max_node_id(), 32_767);
/// assert_eq!(layout.total_bits(), 63);
/// # Ok(())
/// # }
/// ```
///
/// # Decoding
///
/// Decoding works for any layout:
///
/// ```
/// use flakeid::Layout;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let layout = Layout::discord();
/// let decoded = layout.decode("175928847299117063".parse()?)?;
/// assert_eq!(decoded.to_string(), "2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    epoch_ms: u64,
    unit_ms: u64,
    /// High to low; `fields[0]` is the timestamp.
    fields: Vec<Field>,
    sequence: usize,
    clock_id: Option<usize>,
    node_bits: u32,
    total_bits: u32,
}

impl Layout {
    /// The longest node-field name, in bytes.
    ///
    /// A node field's name is 1 to 32 ASCII letters, digits, `_` or `-`, and
    /// not `timestamp`, `sequence` or `clock_id`, so a state file's text form
    /// of the layout names exactly one layout.
    ///
    /// ```
    /// use flakeid::{Layout, LayoutError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let with_node = |name: &str| {
    ///     Layout::builder()
    ///         .epoch_ms(1_600_000_000_000)
    ///         .timestamp_bits(41)
    ///         .node(name.to_owned(), 10)
    ///         .sequence(12)
    ///         .build()
    /// };
    /// with_node("rack-7_b")?;
    /// assert_eq!(
    ///     with_node("rack:7"),
    ///     Err(LayoutError::BadNameCharacter { field: "rack:7".into(), character: ':' })
    /// );
    /// assert!(matches!(
    ///     with_node(&"x".repeat(Layout::MAX_NAME_LEN + 1)),
    ///     Err(LayoutError::NameTooLong { len: 33, max: 32, .. })
    /// ));
    /// # Ok(())
    /// # }
    /// ```
    pub const MAX_NAME_LEN: usize = 32;

    /// Starts a custom layout. Epoch, timestamp width and a sequence field are
    /// required; the time unit defaults to 1 ms. Fields are placed below the
    /// timestamp in the order they are added.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // The multi-clock seed: 41 ms + 4 clock id + 8 machine + 10 sequence.
    /// let layout = Layout::builder()
    ///     .epoch_ms(1_600_000_000_000)
    ///     .timestamp_bits(41)
    ///     .clock_id(4)
    ///     .node("machine", 8)
    ///     .sequence(10)
    ///     .build()?;
    /// assert_eq!(layout.clock_id_bits(), 4);
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder() -> LayoutBuilder {
        LayoutBuilder::default()
    }

    /// The epoch, in Unix milliseconds.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::discord().epoch_ms(), 1_420_070_400_000); // 2015-01-01
    /// ```
    pub const fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }

    /// The time unit (one tick), in milliseconds.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::sonyflake().unit_ms(), 10);
    /// assert_eq!(Layout::twitter().unit_ms(), 1);
    /// ```
    pub const fn unit_ms(&self) -> u64 {
        self.unit_ms
    }

    /// The fields from the highest to the lowest; the first is the timestamp.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::sonyflake();
    /// let names: Vec<&str> = layout.fields().iter().map(|f| f.name()).collect();
    /// assert_eq!(names, ["timestamp", "sequence", "machine"]);
    /// ```
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field with this name, if any.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::twitter();
    /// assert_eq!(layout.field("worker").map(|f| f.bits()), Some(5));
    /// assert!(layout.field("shard").is_none());
    /// ```
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    pub(crate) fn timestamp_field(&self) -> &Field {
        &self.fields[0]
    }

    pub(crate) fn sequence_field(&self) -> &Field {
        &self.fields[self.sequence]
    }

    pub(crate) fn clock_id_field(&self) -> Option<&Field> {
        self.clock_id.map(|i| &self.fields[i])
    }

    fn node_fields(&self) -> impl DoubleEndedIterator<Item = &Field> {
        self.fields.iter().filter(|f| f.kind == FieldKind::Node)
    }

    /// The timestamp width in bits.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::twitter().timestamp_bits(), 41);
    /// ```
    pub fn timestamp_bits(&self) -> u32 {
        self.fields[0].bits
    }

    /// The sequence width in bits.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::sonyflake().sequence_bits(), 8);
    /// ```
    pub fn sequence_bits(&self) -> u32 {
        self.sequence_field().bits
    }

    /// The clock-id width in bits, 0 if the layout has no clock-id field.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), flakeid::LayoutError> {
    /// let multi = Layout::builder().epoch_ms(0).timestamp_bits(41).clock_id(3).node("worker", 8).sequence(12).build()?;
    /// assert_eq!(multi.clock_id_bits(), 3);
    /// assert_eq!(Layout::twitter().clock_id_bits(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock_id_bits(&self) -> u32 {
        self.clock_id_field().map_or(0, |f| f.bits)
    }

    /// The bits of all node fields together.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::twitter().node_bits(), 10); // datacenter 5 + worker 5
    /// ```
    pub const fn node_bits(&self) -> u32 {
        self.node_bits
    }

    /// The bits all fields take; the remaining high bits of an ID stay zero.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::twitter().total_bits(), 63); // the sign bit stays 0
    /// assert_eq!(Layout::js_safe().total_bits(), 53);
    /// ```
    pub const fn total_bits(&self) -> u32 {
        self.total_bits
    }

    /// How many sequence values one tick holds: IDs per tick per node.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::twitter().capacity_per_tick(), 4_096); // per ms per node
    /// ```
    pub fn capacity_per_tick(&self) -> u64 {
        1 << self.sequence_bits()
    }

    /// The largest node id: all node fields read as one number, the first
    /// field highest (Twitter: `datacenter << 5 | worker`).
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// assert_eq!(Layout::twitter().max_node_id(), 1_023);
    /// assert_eq!(Layout::sonyflake().max_node_id(), 65_535);
    /// ```
    pub const fn max_node_id(&self) -> u64 {
        mask(self.node_bits)
    }

    /// The largest clock id (0 without a clock-id field).
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), flakeid::LayoutError> {
    /// let multi = Layout::builder().epoch_ms(0).timestamp_bits(41).clock_id(3).node("worker", 8).sequence(12).build()?;
    /// assert_eq!(multi.max_clock_id(), 7);
    /// assert_eq!(Layout::twitter().max_clock_id(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_clock_id(&self) -> u64 {
        mask(self.clock_id_bits())
    }

    /// The last Unix millisecond the timestamp field can encode.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// // Twitter's 41 bits of ms run out in 2080.
    /// assert_eq!(Layout::twitter().last_ms(), 1_288_834_974_657 + (1 << 41) - 1);
    /// ```
    pub fn last_ms(&self) -> u64 {
        self.unix_ms(self.timestamp_field().max()) + (self.unit_ms - 1)
    }

    /// The last instant the timestamp field can encode.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::twitter();
    /// assert_eq!(layout.last_instant(), UNIX_EPOCH + Duration::from_millis(layout.last_ms()));
    /// ```
    pub fn last_instant(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.last_ms())
    }

    /// The last Unix millisecond whose IDs are below 2^63 and so fit a signed
    /// `BIGINT`. It equals [`last_ms`](Layout::last_ms) when the top bit is unused.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let instagram = Layout::instagram(1_314_220_021_721)?;
    /// assert_eq!(instagram.last_signed_ms(), 1_314_220_021_721 + (1 << 40) - 1); // 2046
    /// let twitter = Layout::twitter();
    /// assert_eq!(twitter.last_signed_ms(), twitter.last_ms());
    /// # Ok(())
    /// # }
    /// ```
    pub fn last_signed_ms(&self) -> u64 {
        if self.total_bits < 64 {
            self.last_ms()
        } else {
            self.unix_ms(mask(self.timestamp_bits() - 1)) + (self.unit_ms - 1)
        }
    }

    /// The Unix millisecond at which a timestamp field value starts.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let sonyflake = Layout::sonyflake(); // 10 ms ticks
    /// assert_eq!(sonyflake.unix_ms(2), sonyflake.epoch_ms() + 20);
    /// ```
    pub fn unix_ms(&self, timestamp: u64) -> u64 {
        // Cannot overflow for values within the field: the builder checked
        // that the whole range ends below u64::MAX.
        self.epoch_ms
            .saturating_add(timestamp.saturating_mul(self.unit_ms))
    }

    /// The timestamp field value for a Unix millisecond.
    ///
    /// # Errors
    ///
    /// [`FieldError::BeforeEpoch`] or [`FieldError::AfterLifetime`] if the layout
    /// cannot encode the time.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::sonyflake();
    /// assert_eq!(layout.timestamp_at(1_409_529_600_000 + 25)?, 2); // 10 ms units
    /// assert!(layout.timestamp_at(0).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn timestamp_at(&self, unix_ms: u64) -> Result<u64, FieldError> {
        if unix_ms < self.epoch_ms {
            return Err(FieldError::BeforeEpoch {
                unix_ms,
                epoch_ms: self.epoch_ms,
            });
        }
        if unix_ms > self.last_ms() {
            return Err(FieldError::AfterLifetime {
                unix_ms,
                last_ms: self.last_ms(),
            });
        }
        Ok((unix_ms - self.epoch_ms) / self.unit_ms)
    }

    /// The smallest ID any node issues in the tick that holds `time`: for
    /// time-range queries on an ID column, `WHERE id BETWEEN first AND last`
    /// with [`last_id_at`](Layout::last_id_at), which an index on the ID
    /// answers without a time column.
    ///
    /// # Errors
    ///
    /// [`FieldError::BeforeEpoch`] or [`FieldError::AfterLifetime`] if the
    /// layout cannot encode the time.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use flakeid::{Generator, Layout, ManualClock};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::twitter();
    /// let noon = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    /// let generator = Generator::builder(layout.clone())
    ///     .node_id(37)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .build()?;
    /// let id = generator.try_next_id()?;
    /// let (first, last) = (layout.first_id_at(noon)?, layout.last_id_at(noon)?);
    /// assert!(first <= id && id <= last);
    /// // The next millisecond starts right after.
    /// let next = layout.first_id_at(noon + Duration::from_millis(1))?;
    /// assert_eq!(next.to_u64(), last.to_u64() + 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn first_id_at(&self, time: SystemTime) -> Result<Id, FieldError> {
        let timestamp = self.timestamp_at(unix_ms_of(time, self.epoch_ms)?)?;
        Ok(Id::from_u64(timestamp << self.timestamp_field().shift))
    }

    /// The largest ID any node issues in the tick that holds `time` (every
    /// field below the timestamp at its largest value). See
    /// [`first_id_at`](Layout::first_id_at).
    ///
    /// # Errors
    ///
    /// As [`first_id_at`](Layout::first_id_at).
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::sonyflake(); // 10 ms ticks
    /// let t = UNIX_EPOCH + Duration::from_millis(1_409_529_600_000 + 25);
    /// let last = layout.decode(layout.last_id_at(t)?)?;
    /// assert_eq!((last.timestamp(), last.sequence(), last.node_id()), (2, 255, 65_535));
    /// assert!(layout.last_id_at(UNIX_EPOCH).is_err()); // before the epoch
    /// # Ok(())
    /// # }
    /// ```
    pub fn last_id_at(&self, time: SystemTime) -> Result<Id, FieldError> {
        let first = self.first_id_at(time)?.to_u64();
        Ok(Id::from_u64(first | mask(self.timestamp_field().shift)))
    }

    /// [`timestamp_at`](Layout::timestamp_at), clamped to the timestamp
    /// field: 0 before the epoch, the last tick after the lifetime.
    pub(crate) fn timestamp_at_clamped(&self, unix_ms: u64) -> u64 {
        (unix_ms.saturating_sub(self.epoch_ms) / self.unit_ms).min(self.timestamp_field().max())
    }

    /// Combines named node field values into one node id. Every node field
    /// must be named: a field left out is an error, not 0, since two hosts
    /// that both forget it would share a node id. A field meant to be 0 is
    /// given as 0. A name given twice takes its last value.
    ///
    /// # Errors
    ///
    /// [`FieldError::UnknownField`] for a name that is not a node field,
    /// [`FieldError::OutOfRange`] for a value too large for its field,
    /// [`FieldError::NodeFieldNotSet`] naming the first node field left out.
    ///
    /// ```
    /// use flakeid::{FieldError, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Layout::twitter().node_id_from_fields([("datacenter", 1), ("worker", 5)])?;
    /// assert_eq!(node, 1 << 5 | 5);
    /// let forgot = Layout::twitter().node_id_from_fields([("datacenter", 1)]);
    /// assert_eq!(forgot, Err(FieldError::NodeFieldNotSet { field: "worker".into() }));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node_id_from_fields<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, u64)>,
    ) -> Result<u64, FieldError> {
        let mut node = 0;
        // Bit i: the i-th node field from the lowest was named.
        let mut named = 0u64;
        for (name, value) in values {
            let mut offset = 0;
            let mut found = None;
            for (i, f) in self.node_fields().rev().enumerate() {
                if f.name == name {
                    found = Some((f, offset, i));
                    break;
                }
                offset += f.bits;
            }
            let Some((field, offset, i)) = found else {
                return Err(FieldError::UnknownField { field: name.into() });
            };
            check(name, value, field.max())?;
            node = (node & !(field.max() << offset)) | value << offset;
            named |= 1 << i;
        }
        if let Some((_, missing)) = self
            .node_fields()
            .rev()
            .enumerate()
            .filter(|(i, _)| named & (1 << i) == 0)
            .last()
        {
            return Err(FieldError::NodeFieldNotSet {
                field: missing.name.to_string(),
            });
        }
        Ok(node)
    }

    /// The named node field values of a node id, from the highest field.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::twitter();
    /// let fields: Vec<_> = layout.node_fields_of(37).collect();
    /// assert_eq!(fields, [("datacenter", 1), ("worker", 5)]);
    /// ```
    pub fn node_fields_of(&self, node: u64) -> impl Iterator<Item = (&str, u64)> {
        let mut below = self.node_bits;
        self.node_fields().map(move |f| {
            below -= f.bits;
            (f.name(), (node >> below) & f.max())
        })
    }

    /// The bits a node id sets in every ID, or an error if it does not fit.
    pub(crate) fn node_mask_bits(&self, node: u64) -> Result<u64, FieldError> {
        check("node", node, self.max_node_id())?;
        let mut rest = node;
        let mut bits = 0;
        for f in self.node_fields().rev() {
            bits |= (rest & f.max()) << f.shift;
            rest >>= f.bits;
        }
        Ok(bits)
    }

    /// Builds an ID from its parts.
    ///
    /// # Errors
    ///
    /// [`FieldError::OutOfRange`] naming the first part too large for its field;
    /// [`FieldError::NoSuchField`] for a non-zero clock id without a clock-id field.
    ///
    /// ```
    /// use flakeid::{Layout, Parts};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let parts = Parts { timestamp: 41_944_705_796, node: 1 << 5, sequence: 7, clock_id: 0 };
    /// let id = layout.compose(parts)?;
    /// assert_eq!(id.to_u64(), 175928847299117063);
    /// assert_eq!(layout.decode(id)?.parts(), parts);
    /// # Ok(())
    /// # }
    /// ```
    pub fn compose(&self, parts: Parts) -> Result<Id, FieldError> {
        let ts = self.timestamp_field();
        check("timestamp", parts.timestamp, ts.max())?;
        let node = self.node_mask_bits(parts.node)?;
        let seq = self.sequence_field();
        check("sequence", parts.sequence, seq.max())?;
        let clock = match self.clock_id_field() {
            Some(f) => {
                check("clock_id", parts.clock_id, f.max())?;
                parts.clock_id << f.shift
            }
            None if parts.clock_id == 0 => 0,
            None => return Err(FieldError::NoSuchField { field: "clock_id" }),
        };
        Ok(Id::from_u64(
            parts.timestamp << ts.shift | node | parts.sequence << seq.shift | clock,
        ))
    }

    /// Splits an ID into its parts.
    ///
    /// # Errors
    ///
    /// [`FieldError::UnusedBitsSet`] if the ID sets bits above the layout's fields.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::twitter();
    /// let decoded = layout.decode(1_541_815_603_606_036_480_u64.into())?;
    /// assert_eq!(decoded.to_string(), "2022-06-28T16:07:40.105Z datacenter=11 worker=26 sequence=0");
    /// assert!(layout.decode(u64::MAX.into()).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn decode(&self, id: Id) -> Result<Decoded<'_>, FieldError> {
        let raw = id.to_u64();
        if raw & !mask(self.total_bits) != 0 {
            return Err(FieldError::UnusedBitsSet {
                id: raw,
                layout_bits: self.total_bits,
            });
        }
        let node = self
            .node_fields()
            .fold(0, |node, f| (node << f.bits) | f.get(raw));
        let parts = Parts {
            timestamp: self.timestamp_field().get(raw),
            node,
            sequence: self.sequence_field().get(raw),
            clock_id: self.clock_id_field().map_or(0, |f| f.get(raw)),
        };
        Ok(Decoded {
            layout: self,
            id,
            parts,
        })
    }
}

/// `time` in Unix milliseconds; a time before 1970 is before every epoch.
fn unix_ms_of(time: SystemTime, epoch_ms: u64) -> Result<u64, FieldError> {
    crate::clock::unix_ms(time).ok_or(FieldError::BeforeEpoch {
        unix_ms: 0,
        epoch_ms,
    })
}

fn check(field: &str, value: u64, max: u64) -> Result<(), FieldError> {
    if value > max {
        Err(FieldError::OutOfRange {
            field: field.into(),
            value,
            max,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> LayoutBuilder {
        Layout::builder()
            .epoch_ms(1_600_000_000_000)
            .timestamp_bits(41)
    }

    #[test]
    fn fields_are_placed_high_to_low() {
        let layout = Layout::twitter();
        let placed: Vec<_> = layout
            .fields()
            .iter()
            .map(|f| (f.name(), f.bits(), f.shift()))
            .collect();
        assert_eq!(
            placed,
            [
                ("timestamp", 41, 22),
                ("datacenter", 5, 17),
                ("worker", 5, 12),
                ("sequence", 12, 0)
            ]
        );
        assert_eq!(layout.total_bits(), 63);
    }

    #[test]
    fn a_layout_may_use_all_64_bits() {
        let layout = base().node("w", 10).sequence(13).build().unwrap();
        assert_eq!(layout.total_bits(), 64);
        let parts = Parts {
            timestamp: layout.timestamp_field().max(),
            node: 1023,
            sequence: 8191,
            clock_id: 0,
        };
        let id = layout.compose(parts).unwrap();
        assert_eq!(id.to_u64(), u64::MAX);
        assert_eq!(layout.decode(id).unwrap().parts(), parts);
    }

    #[test]
    fn compose_rejects_values_that_do_not_fit() {
        let layout = Layout::twitter();
        let err = |parts| layout.compose(parts).unwrap_err();
        assert_eq!(
            err(Parts {
                timestamp: 1 << 41,
                ..Parts::default()
            }),
            FieldError::OutOfRange {
                field: "timestamp".into(),
                value: 1 << 41,
                max: (1 << 41) - 1
            }
        );
        assert_eq!(
            err(Parts {
                node: 1024,
                ..Parts::default()
            }),
            FieldError::OutOfRange {
                field: "node".into(),
                value: 1024,
                max: 1023
            }
        );
        assert_eq!(
            err(Parts {
                sequence: 4096,
                ..Parts::default()
            }),
            FieldError::OutOfRange {
                field: "sequence".into(),
                value: 4096,
                max: 4095
            }
        );
        assert_eq!(
            err(Parts {
                clock_id: 1,
                ..Parts::default()
            }),
            FieldError::NoSuchField { field: "clock_id" }
        );
    }

    #[test]
    fn node_ids_spread_over_split_node_fields() {
        // Node fields separated by the sequence still read as one number.
        let layout = base()
            .node("region", 3)
            .sequence(4)
            .node("machine", 2)
            .build()
            .unwrap();
        let node = layout
            .node_id_from_fields([("region", 5), ("machine", 2)])
            .unwrap();
        assert_eq!(node, 5 << 2 | 2);
        let id = layout
            .compose(Parts {
                timestamp: 1,
                node,
                sequence: 3,
                clock_id: 0,
            })
            .unwrap();
        assert_eq!(id.to_u64(), 1 << 9 | 5 << 6 | 3 << 2 | 2);
        let decoded = layout.decode(id).unwrap();
        assert_eq!(decoded.node_id(), node);
        assert_eq!(decoded.field("region"), Some(5));
        assert_eq!(decoded.field("machine"), Some(2));
        assert_eq!(
            decoded.node_fields().collect::<Vec<_>>(),
            [("region", 5), ("machine", 2)]
        );
        assert_eq!(
            layout.node_id_from_fields([("rack", 1)]),
            Err(FieldError::UnknownField {
                field: "rack".into()
            })
        );
        assert_eq!(
            layout.node_id_from_fields([("sequence", 1)]),
            Err(FieldError::UnknownField {
                field: "sequence".into()
            })
        );
    }

    #[test]
    fn decode_refuses_ids_with_unused_bits_set() {
        let layout = Layout::js_safe();
        assert_eq!(
            layout.decode(Id::from_u64(1 << 53)).unwrap_err(),
            FieldError::UnusedBitsSet {
                id: 1 << 53,
                layout_bits: 53
            }
        );
        assert!(layout.decode(Id::from_u64((1 << 53) - 1)).is_ok());
    }

    #[test]
    fn timestamp_at_handles_units_and_range() {
        let s = Layout::sonyflake();
        assert_eq!(s.timestamp_at(s.epoch_ms()), Ok(0));
        assert_eq!(s.timestamp_at(s.epoch_ms() + 9), Ok(0));
        assert_eq!(s.timestamp_at(s.epoch_ms() + 10), Ok(1));
        assert_eq!(s.timestamp_at(s.last_ms()), Ok((1 << 39) - 1));
        assert_eq!(
            s.timestamp_at(s.last_ms() + 1),
            Err(FieldError::AfterLifetime {
                unix_ms: s.last_ms() + 1,
                last_ms: s.last_ms()
            })
        );
        assert_eq!(s.unix_ms((1 << 39) - 1) + 9, s.last_ms());
    }
}
