//! The bit plan of an ID: fields, presets, validation, decode and compose.

use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::id::Id;
use crate::rfc3339;

mod spec;
pub use spec::ParseLayoutError;

/// What a field of a [`Layout`] holds.
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

/// One field of a [`Layout`]: a name, a kind, a width and a position.
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
    name: Cow<'static, str>,
    kind: FieldKind,
    bits: u32,
    shift: u32,
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

    #[inline]
    fn get(&self, id: u64) -> u64 {
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

/// The bit plan of an ID, from the highest bit to the lowest: unused bits (kept
/// zero, usually one so IDs stay positive as `i64`), the timestamp, then node
/// fields, the sequence and an optional clock-id field in the order the layout
/// states.
///
/// Build one with [`Layout::builder`] or take a preset. Every layout can say
/// when it ends ([`last_ms`](Layout::last_ms)), how many IDs one tick holds
/// ([`capacity_per_tick`](Layout::capacity_per_tick)) and its largest node id.
///
/// | preset | bits (high to low) | epoch | unit | ends | below 2^63 until |
/// |---|---|---|---|---|---|
/// | [`twitter`](Layout::twitter) | 1 + 41 time + 5 datacenter + 5 worker + 12 seq | 2010-11-04 | 1 ms | 2080-07 | always |
/// | [`discord`](Layout::discord) | 42 time + 5 worker + 5 process + 12 seq | 2015-01-01 | 1 ms | 2154-05 | 2084-09 |
/// | [`instagram`](Layout::instagram) | 41 time + 13 shard + 10 seq | yours | 1 ms | epoch + 69.7 y | epoch + 34.8 y |
/// | [`sonyflake`](Layout::sonyflake) | 1 + 39 time + 8 seq + 16 machine | 2014-09-01 | 10 ms | 2188-11 | always |
/// | [`js_safe`](Layout::js_safe) | 11 + 41 time + 6 worker + 6 seq | 2024-01-01 | 1 ms | 2093-09 | always (≤ 2^53 − 1) |
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

/// Twitter's epoch, 2010-11-04T01:42:54.657Z.
const TWITTER_EPOCH_MS: u64 = 1_288_834_974_657;
/// Discord's epoch, 2015-01-01T00:00:00Z.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;
/// Sonyflake's epoch, 2014-09-01T00:00:00Z.
const SONYFLAKE_EPOCH_MS: u64 = 1_409_529_600_000;
/// The JavaScript-safe preset's epoch, 2024-01-01T00:00:00Z.
const JS_SAFE_EPOCH_MS: u64 = 1_704_067_200_000;

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

    /// Twitter's original Snowflake: 1 unused + 41 ms + 5 `datacenter` + 5
    /// `worker` + 12 sequence, epoch 1288834974657 (2010-11-04).
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::twitter();
    /// assert_eq!(layout.capacity_per_tick(), 4096);
    /// assert_eq!(layout.max_node_id(), 1023);
    /// ```
    pub fn twitter() -> Layout {
        Layout::preset(
            TWITTER_EPOCH_MS,
            1,
            41,
            &[
                ("datacenter", FieldKind::Node, 5),
                ("worker", FieldKind::Node, 5),
                ("sequence", FieldKind::Sequence, 12),
            ],
        )
    }

    /// Discord's snowflakes: 42 ms + 5 `worker` + 5 `process` + 12 sequence
    /// (Discord calls it the increment), epoch 1420070400000 (2015-01-01).
    /// All 64 bits are used: IDs pass 2^63 in September 2084.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let parts = layout.decode(175928847299117063_u64.into())?;
    /// assert_eq!(parts.unix_ms(), 1_462_015_105_796); // 2016-04-30T11:18:25.796Z
    /// assert_eq!(parts.field("worker"), Some(1));
    /// assert_eq!(parts.field("process"), Some(0));
    /// assert_eq!(parts.sequence(), 7);
    /// # Ok(())
    /// # }
    /// ```
    pub fn discord() -> Layout {
        Layout::preset(
            DISCORD_EPOCH_MS,
            1,
            42,
            &[
                ("worker", FieldKind::Node, 5),
                ("process", FieldKind::Node, 5),
                ("sequence", FieldKind::Sequence, 12),
            ],
        )
    }

    /// Instagram's IDs: 41 ms + 13 `shard` + 10 sequence, from your epoch.
    /// All 64 bits are used: IDs pass 2^63 when the timestamp reaches 2^40 ms,
    /// 34.8 years after the epoch (2046 for Instagram's own 2011 epoch).
    ///
    /// # Errors
    ///
    /// [`LayoutError::EpochInFuture`] if `epoch_ms` is later than now.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::instagram(1_314_220_021_721)?; // 2011-08-24
    /// assert_eq!(layout.max_node_id(), 8191);
    /// assert_eq!(layout.capacity_per_tick(), 1024);
    /// # Ok(())
    /// # }
    /// ```
    pub fn instagram(epoch_ms: u64) -> Result<Layout, LayoutError> {
        Layout::builder()
            .epoch_ms(epoch_ms)
            .timestamp_bits(41)
            .node("shard", 13)
            .sequence(10)
            .build()
    }

    /// Sonyflake: 1 unused + 39 bits of 10 ms + 8 sequence + 16 `machine`,
    /// epoch 2014-09-01T00:00:00Z. The sequence sits above the machine id.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::sonyflake();
    /// assert_eq!(layout.unit_ms(), 10);
    /// assert_eq!(layout.capacity_per_tick(), 256);
    /// assert_eq!(layout.field("machine").unwrap().shift(), 0);
    /// ```
    pub fn sonyflake() -> Layout {
        Layout::preset(
            SONYFLAKE_EPOCH_MS,
            10,
            39,
            &[
                ("sequence", FieldKind::Sequence, 8),
                ("machine", FieldKind::Node, 16),
            ],
        )
    }

    /// IDs that JavaScript numbers hold exactly: 41 ms + 6 `worker` + 6
    /// sequence = 53 bits, epoch 2024-01-01T00:00:00Z. Every ID it can ever
    /// make is at most 2^53 − 1 (`Number.MAX_SAFE_INTEGER`).
    ///
    /// Lifetime: 2^41 ms, until 2093-09-06. Capacity: 64 IDs per ms per node
    /// (64,000 a second) on up to 64 nodes; use `OnExhausted::Borrow` to absorb
    /// bursts above that.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::js_safe();
    /// assert_eq!(layout.total_bits(), 53);
    /// assert_eq!(layout.capacity_per_tick(), 64);
    /// ```
    pub fn js_safe() -> Layout {
        Layout::preset(
            JS_SAFE_EPOCH_MS,
            1,
            41,
            &[
                ("worker", FieldKind::Node, 6),
                ("sequence", FieldKind::Sequence, 6),
            ],
        )
    }

    /// Builds a preset, whose parameters are known to be valid.
    fn preset(
        epoch_ms: u64,
        unit_ms: u64,
        timestamp_bits: u32,
        fields: &[(&'static str, FieldKind, u32)],
    ) -> Layout {
        let mut builder = Layout::builder()
            .epoch_ms(epoch_ms)
            .unit_ms(unit_ms)
            .timestamp_bits(timestamp_bits);
        builder.fields = fields
            .iter()
            .map(|&(name, kind, bits)| (Cow::Borrowed(name), kind, bits))
            .collect();
        match builder.validate() {
            Ok(layout) => layout,
            Err(e) => unreachable!("preset layout is invalid: {e}"),
        }
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

    /// Combines named node field values into one node id. Fields not named are 0.
    ///
    /// # Errors
    ///
    /// [`FieldError::UnknownField`] for a name that is not a node field,
    /// [`FieldError::OutOfRange`] for a value too large for its field.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = Layout::twitter().node_id_from_fields([("datacenter", 1), ("worker", 5)])?;
    /// assert_eq!(node, 1 << 5 | 5);
    /// # Ok(())
    /// # }
    /// ```
    pub fn node_id_from_fields<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, u64)>,
    ) -> Result<u64, FieldError> {
        let mut node = 0;
        for (name, value) in values {
            let mut offset = 0;
            let mut found = None;
            for f in self.node_fields().rev() {
                if f.name == name {
                    found = Some((f, offset));
                    break;
                }
                offset += f.bits;
            }
            let Some((field, offset)) = found else {
                return Err(FieldError::UnknownField { field: name.into() });
            };
            check(name, value, field.max())?;
            node = (node & !(field.max() << offset)) | value << offset;
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

/// The raw field values of an ID. Times are in the layout's ticks; node is
/// all node fields read as one number.
///
/// ```
/// use flakeid::{Layout, Parts};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let layout = Layout::twitter();
/// let parts = Parts { timestamp: 1000, node: 3, sequence: 9, clock_id: 0 };
/// assert_eq!(layout.decode(layout.compose(parts)?)?.parts(), parts);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Parts {
    /// Ticks since the layout's epoch.
    pub timestamp: u64,
    /// The node id (all node fields as one number).
    pub node: u64,
    /// The sequence within the tick.
    pub sequence: u64,
    /// The clock id (0 without a clock-id field).
    pub clock_id: u64,
}

/// An ID read through its [`Layout`]: times, named fields, sequence, clock id.
///
/// `Display` prints the time in RFC 3339 (UTC) and every field:
/// `2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7`.
///
/// ```
/// use flakeid::Layout;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let layout = Layout::discord();
/// let decoded = layout.decode("175928847299117063".parse()?)?;
/// assert_eq!(decoded.unix_ms(), 1_462_015_105_796);
/// assert_eq!(decoded.timestamp(), 1_462_015_105_796 - layout.epoch_ms());
/// assert_eq!(decoded.node_fields().collect::<Vec<_>>(), [("worker", 1), ("process", 0)]);
/// assert_eq!(decoded.node_id(), 1 << 5); // worker 1, process 0
/// assert_eq!(decoded.field("process"), Some(0));
/// assert_eq!((decoded.sequence(), decoded.clock_id()), (7, 0));
/// assert_eq!(layout.compose(decoded.parts())?, decoded.id());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded<'a> {
    layout: &'a Layout,
    id: Id,
    parts: Parts,
}

impl<'a> Decoded<'a> {
    /// The ID that was decoded.
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// assert_eq!(decoded.id().to_u64(), 175_928_847_299_117_063);
    /// # Ok(())
    /// # }
    /// ```
    pub const fn id(&self) -> Id {
        self.id
    }

    /// The raw parts, which [`Layout::compose`] turns back into the same ID.
    ///
    /// ```
    /// use flakeid::{Id, Layout, Parts};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// let parts = decoded.parts();
    /// assert_eq!(parts, Parts { timestamp: 41_944_705_796, node: 32, sequence: 7, clock_id: 0 });
    /// assert_eq!(layout.compose(parts)?, decoded.id());
    /// # Ok(())
    /// # }
    /// ```
    pub const fn parts(&self) -> Parts {
        self.parts
    }

    /// The timestamp field: ticks since the epoch.
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// assert_eq!(decoded.timestamp(), 41_944_705_796); // ms since 2015
    /// # Ok(())
    /// # }
    /// ```
    pub const fn timestamp(&self) -> u64 {
        self.parts.timestamp
    }

    /// When the ID's tick started, in Unix milliseconds.
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// assert_eq!(decoded.unix_ms(), layout.epoch_ms() + 41_944_705_796);
    /// # Ok(())
    /// # }
    /// ```
    pub fn unix_ms(&self) -> u64 {
        self.layout.unix_ms(self.parts.timestamp)
    }

    /// When the ID's tick started.
    ///
    /// ```
    /// use flakeid::Layout;
    /// use std::time::{Duration, UNIX_EPOCH};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(175928847299117063_u64.into())?;
    /// assert_eq!(decoded.system_time(), UNIX_EPOCH + Duration::from_millis(1_462_015_105_796));
    /// # Ok(())
    /// # }
    /// ```
    pub fn system_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.unix_ms())
    }

    /// When the ID's tick started, in RFC 3339 (UTC, milliseconds), without
    /// allocating: the first word of the `Display` output.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode("175928847299117063".parse()?)?;
    /// assert_eq!(decoded.rfc3339().to_string(), "2016-04-30T11:18:25.796Z");
    /// # Ok(())
    /// # }
    /// ```
    pub fn rfc3339(&self) -> impl fmt::Display + use<> {
        Rfc3339(self.unix_ms())
    }

    /// The node id (all node fields as one number).
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// assert_eq!(decoded.node_id(), 1 << 5); // worker 1, process 0
    /// # Ok(())
    /// # }
    /// ```
    pub const fn node_id(&self) -> u64 {
        self.parts.node
    }

    /// A field's value by name (`timestamp`, `sequence`, `clock_id` or a node
    /// field), or `None` if the layout has no such field.
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// assert_eq!(decoded.field("worker"), Some(1));
    /// assert_eq!(decoded.field("sequence"), Some(7));
    /// assert_eq!(decoded.field("shard"), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn field(&self, name: &str) -> Option<u64> {
        self.layout.field(name).map(|f| f.get(self.id.to_u64()))
    }

    /// The node fields with their values, from the highest.
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// let fields: Vec<(&str, u64)> = decoded.node_fields().collect();
    /// assert_eq!(fields, [("worker", 1), ("process", 0)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn node_fields(&self) -> impl Iterator<Item = (&'a str, u64)> {
        self.layout.node_fields_of(self.parts.node)
    }

    /// The sequence within the tick.
    ///
    /// ```
    /// use flakeid::{Id, Layout};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let decoded = layout.decode(Id::from_u64(175_928_847_299_117_063))?;
    /// assert_eq!(decoded.sequence(), 7);
    /// # Ok(())
    /// # }
    /// ```
    pub const fn sequence(&self) -> u64 {
        self.parts.sequence
    }

    /// The clock id (0 without a clock-id field).
    ///
    /// ```
    /// use flakeid::{Layout, Parts};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::builder().epoch_ms(0).timestamp_bits(41).clock_id(3).node("worker", 8).sequence(12).build()?;
    /// let id = layout.compose(Parts { timestamp: 9, node: 4, sequence: 0, clock_id: 5 })?;
    /// assert_eq!(layout.decode(id)?.clock_id(), 5);
    /// # Ok(())
    /// # }
    /// ```
    pub const fn clock_id(&self) -> u64 {
        self.parts.clock_id
    }
}

/// Unix milliseconds, displayed in RFC 3339.
struct Rfc3339(u64);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        rfc3339::write(f, self.0)
    }
}

impl fmt::Display for Decoded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        rfc3339::write(f, self.unix_ms())?;
        let raw = self.id.to_u64();
        for field in &self.layout.fields[1..] {
            write!(f, " {}={}", field.name, field.get(raw))?;
        }
        Ok(())
    }
}

/// Builds a custom [`Layout`]; see [`Layout::builder`].
///
/// ```
/// use flakeid::Layout;
///
/// # fn main() -> Result<(), flakeid::LayoutError> {
/// // 40 bits of 10 ms ticks (348 years), 256 shards, 16 IDs per tick per shard.
/// let layout = Layout::builder()
///     .epoch_ms(1_700_000_000_000)
///     .unit_ms(10)
///     .timestamp_bits(40)
///     .node("shard", 8)
///     .sequence(4)
///     .build()?;
/// assert_eq!(layout.total_bits(), 52);
/// assert_eq!(layout.to_string(), "epoch=1700000000000 unit=10 fields=timestamp:40,shard:8,sequence:4");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct LayoutBuilder {
    epoch_ms: Option<u64>,
    unit_ms: u64,
    timestamp_bits: Option<u32>,
    fields: Vec<(Cow<'static, str>, FieldKind, u32)>,
}

impl Default for LayoutBuilder {
    fn default() -> Self {
        LayoutBuilder {
            epoch_ms: None,
            unit_ms: 1,
            timestamp_bits: None,
            fields: Vec::new(),
        }
    }
}

impl LayoutBuilder {
    /// The epoch (timestamp 0), in Unix milliseconds. Required; must not be in
    /// the future.
    ///
    /// ```
    /// use flakeid::{Layout, LayoutError};
    ///
    /// # fn main() -> Result<(), LayoutError> {
    /// let layout = Layout::builder().epoch_ms(1_700_000_000_000).timestamp_bits(41).sequence(12).build()?;
    /// assert_eq!(layout.epoch_ms(), 1_700_000_000_000);
    /// let err = Layout::builder().timestamp_bits(41).sequence(12).build().unwrap_err();
    /// assert_eq!(err, LayoutError::Missing { what: "epoch" });
    /// # Ok(())
    /// # }
    /// ```
    pub fn epoch_ms(mut self, epoch_ms: u64) -> Self {
        self.epoch_ms = Some(epoch_ms);
        self
    }

    /// The epoch as a `SystemTime` (a time before 1970 counts as 1970).
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), flakeid::LayoutError> {
    /// let epoch = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// let layout = Layout::builder().epoch(epoch).timestamp_bits(41).sequence(12).build()?;
    /// assert_eq!(layout.epoch_ms(), 1_700_000_000_000);
    /// # Ok(())
    /// # }
    /// ```
    pub fn epoch(self, epoch: SystemTime) -> Self {
        self.epoch_ms(crate::clock::unix_ms(epoch).unwrap_or(0))
    }

    /// The time unit in whole milliseconds (default 1; Sonyflake uses 10).
    ///
    /// ```
    /// use flakeid::{Layout, LayoutError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::builder().epoch_ms(0).unit_ms(10).timestamp_bits(39).sequence(8).build()?;
    /// assert_eq!(layout.timestamp_at(25)?, 2); // the third 10 ms tick
    /// let zero = Layout::builder().epoch_ms(0).unit_ms(0).timestamp_bits(39).sequence(8).build();
    /// assert_eq!(zero, Err(LayoutError::ZeroUnit));
    /// # Ok(())
    /// # }
    /// ```
    pub fn unit_ms(mut self, unit_ms: u64) -> Self {
        self.unit_ms = unit_ms;
        self
    }

    /// The timestamp width in bits. Required.
    ///
    /// ```
    /// use flakeid::{Layout, LayoutError};
    ///
    /// # fn main() -> Result<(), LayoutError> {
    /// let layout = Layout::builder().epoch_ms(0).timestamp_bits(41).sequence(12).build()?;
    /// assert_eq!(layout.timestamp_bits(), 41);
    /// let none = Layout::builder().epoch_ms(0).sequence(12).build();
    /// assert_eq!(none, Err(LayoutError::Missing { what: "timestamp" }));
    /// # Ok(())
    /// # }
    /// ```
    pub fn timestamp_bits(mut self, bits: u32) -> Self {
        self.timestamp_bits = Some(bits);
        self
    }

    /// Adds a named node field (datacenter, worker, shard, ...) below the fields
    /// added before it.
    ///
    /// A name is 1 to [`Layout::MAX_NAME_LEN`] (32) ASCII letters, digits, `_`
    /// or `-`, and not `timestamp`, `sequence` or `clock_id`: a state file
    /// records the layout as text, and these rules keep two different layouts
    /// from reading the same there. [`build`](LayoutBuilder::build) checks them.
    ///
    /// ```
    /// use flakeid::{Layout, LayoutError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::builder()
    ///     .epoch_ms(0)
    ///     .timestamp_bits(41)
    ///     .node("region", 3)
    ///     .node("host", 7)
    ///     .sequence(12)
    ///     .build()?;
    /// assert_eq!(layout.node_id_from_fields([("region", 2), ("host", 9)])?, 2 << 7 | 9);
    /// let bad = Layout::builder().epoch_ms(0).timestamp_bits(41).node("rack.1", 3).sequence(12).build();
    /// assert!(matches!(bad, Err(LayoutError::BadNameCharacter { character: '.', .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node(mut self, name: impl Into<Cow<'static, str>>, bits: u32) -> Self {
        self.fields.push((name.into(), FieldKind::Node, bits));
        self
    }

    /// Adds the sequence field below the fields added before it. Required.
    ///
    /// ```
    /// use flakeid::{Layout, LayoutError};
    ///
    /// # fn main() -> Result<(), LayoutError> {
    /// // Sonyflake's order: the sequence above the node field.
    /// let layout = Layout::builder().epoch_ms(0).timestamp_bits(39).sequence(8).node("machine", 16).build()?;
    /// assert_eq!(layout.field("sequence").map(|f| f.shift()), Some(16));
    /// # Ok(())
    /// # }
    /// ```
    pub fn sequence(mut self, bits: u32) -> Self {
        self.fields
            .push((Cow::Borrowed("sequence"), FieldKind::Sequence, bits));
        self
    }

    /// Adds a clock-id field below the fields added before it.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), flakeid::LayoutError> {
    /// let layout = Layout::builder().epoch_ms(0).timestamp_bits(41).clock_id(2).node("worker", 8).sequence(12).build()?;
    /// assert_eq!(layout.max_clock_id(), 3); // clock ids 0 to 3
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock_id(mut self, bits: u32) -> Self {
        self.fields
            .push((Cow::Borrowed("clock_id"), FieldKind::ClockId, bits));
        self
    }

    /// Checks the parameters and builds the layout.
    ///
    /// # Errors
    ///
    /// A [`LayoutError`] naming the first problem: a missing epoch, timestamp
    /// or sequence; a zero width; a duplicate, empty, too long or reserved
    /// name, or one with a character not allowed; more than 64 bits;
    /// a zero time unit; an epoch in the future; a timestamp range past u64 ms.
    ///
    /// ```
    /// use flakeid::{Layout, LayoutError};
    ///
    /// let err = Layout::builder().epoch_ms(0).timestamp_bits(41).node("worker", 30).sequence(12).build();
    /// assert_eq!(err, Err(LayoutError::TooWide { bits: 83 }));
    /// ```
    pub fn build(self) -> Result<Layout, LayoutError> {
        let layout = self.validate()?;
        let now_ms = crate::clock::unix_ms(SystemTime::now()).unwrap_or(0);
        if layout.epoch_ms > now_ms {
            return Err(LayoutError::EpochInFuture {
                epoch_ms: layout.epoch_ms,
                now_ms,
            });
        }
        Ok(layout)
    }

    /// Everything but the epoch-in-the-future check, which reads the wall clock.
    fn validate(self) -> Result<Layout, LayoutError> {
        let epoch_ms = self
            .epoch_ms
            .ok_or(LayoutError::Missing { what: "epoch" })?;
        let timestamp_bits = self
            .timestamp_bits
            .ok_or(LayoutError::Missing { what: "timestamp" })?;
        let mut fields = Vec::with_capacity(self.fields.len() + 1);
        fields.push(Field {
            name: Cow::Borrowed("timestamp"),
            kind: FieldKind::Timestamp,
            bits: timestamp_bits,
            shift: 0,
        });
        fields.extend(self.fields.into_iter().map(|(name, kind, bits)| Field {
            name,
            kind,
            bits,
            shift: 0,
        }));
        let sequence = fields
            .iter()
            .position(|f| f.kind == FieldKind::Sequence)
            .ok_or(LayoutError::Missing { what: "sequence" })?;
        for (i, f) in fields.iter().enumerate() {
            check_name(f)?;
            if f.bits == 0 {
                return Err(LayoutError::ZeroWidth {
                    field: f.name.to_string(),
                });
            }
            if fields[..i].iter().any(|g| g.name == f.name) {
                return Err(LayoutError::DuplicateField {
                    field: f.name.to_string(),
                });
            }
        }
        let total_bits = fields
            .iter()
            .fold(0u32, |sum, f| sum.saturating_add(f.bits));
        if total_bits > 64 {
            return Err(LayoutError::TooWide { bits: total_bits });
        }
        if self.unit_ms == 0 {
            return Err(LayoutError::ZeroUnit);
        }
        // The whole timestamp range must end within u64 milliseconds, so time
        // arithmetic on valid values never overflows.
        let end = (1u128 << timestamp_bits) * u128::from(self.unit_ms) + u128::from(epoch_ms);
        if end > u128::from(u64::MAX) {
            return Err(LayoutError::TimestampTooLong {
                bits: timestamp_bits,
                unit_ms: self.unit_ms,
            });
        }
        let mut below = total_bits;
        for f in &mut fields {
            below -= f.bits;
            f.shift = below;
        }
        let clock_id = fields.iter().position(|f| f.kind == FieldKind::ClockId);
        let node_bits = fields
            .iter()
            .filter(|f| f.kind == FieldKind::Node)
            .map(|f| f.bits)
            .sum();
        Ok(Layout {
            epoch_ms,
            unit_ms: self.unit_ms,
            fields,
            sequence,
            clock_id,
            node_bits,
            total_bits,
        })
    }
}

/// The names of the fields that are not node fields.
const RESERVED_NAMES: [&str; 3] = ["timestamp", "sequence", "clock_id"];

/// A field's name must be written in a state file's `generator` line and read
/// back as exactly this name: it cannot hold the line's separators (space,
/// `,`, `:`, `=`, a line break) nor pass for a field of another kind.
fn check_name(f: &Field) -> Result<(), LayoutError> {
    let name = &*f.name;
    if name.is_empty() {
        return Err(LayoutError::EmptyName);
    }
    if name.len() > Layout::MAX_NAME_LEN {
        return Err(LayoutError::NameTooLong {
            field: name.to_owned(),
            len: name.len(),
            max: Layout::MAX_NAME_LEN,
        });
    }
    if let Some(character) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    {
        return Err(LayoutError::BadNameCharacter {
            field: name.to_owned(),
            character,
        });
    }
    if f.kind == FieldKind::Node && RESERVED_NAMES.contains(&name) {
        return Err(LayoutError::ReservedName {
            field: name.to_owned(),
        });
    }
    Ok(())
}

/// A [`Layout`](crate::Layout) could not be built from the given parameters.
///
/// ```
/// use flakeid::{Layout, LayoutError};
///
/// let err = Layout::builder()
///     .epoch_ms(1_288_834_974_657)
///     .timestamp_bits(41)
///     .node("worker", 20)
///     .sequence(12)
///     .build()
///     .unwrap_err();
/// assert_eq!(err, LayoutError::TooWide { bits: 73 });
/// assert_eq!(err.to_string(), "the fields take 73 bits, more than the 64 of an ID");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// A required parameter was not given (`"epoch"`, `"timestamp"` or `"sequence"`).
    Missing {
        /// The parameter that is missing.
        what: &'static str,
    },
    /// A field was given a width of zero bits.
    ZeroWidth {
        /// The field's name.
        field: String,
    },
    /// All fields together take more than 64 bits.
    TooWide {
        /// The bits the fields take together.
        bits: u32,
    },
    /// Two fields share a name, or a second sequence or clock-id field was added.
    /// The timestamp, sequence and clock-id fields are named `timestamp`,
    /// `sequence` and `clock_id`.
    DuplicateField {
        /// The repeated name.
        field: String,
    },
    /// A node field was given an empty name.
    EmptyName,
    /// A node field's name is longer than [`Layout::MAX_NAME_LEN`](crate::Layout::MAX_NAME_LEN)
    /// bytes.
    NameTooLong {
        /// The name given.
        field: String,
        /// Its length in bytes.
        len: usize,
        /// The longest name allowed.
        max: usize,
    },
    /// A node field's name has a character other than an ASCII letter, digit, `_`
    /// or `-` (a state file could not tell such a name from the text around it).
    BadNameCharacter {
        /// The name given.
        field: String,
        /// The first character not allowed.
        character: char,
    },
    /// A node field is named `timestamp`, `sequence` or `clock_id`, the names
    /// of the other kinds of field.
    ReservedName {
        /// The name given.
        field: String,
    },
    /// The time unit is zero milliseconds.
    ZeroUnit,
    /// The epoch lies after the current wall-clock time.
    EpochInFuture {
        /// The epoch, in Unix milliseconds.
        epoch_ms: u64,
        /// The wall clock when the layout was built, in Unix milliseconds.
        now_ms: u64,
    },
    /// The timestamp field reaches past the largest Unix millisecond a `u64` holds.
    TimestampTooLong {
        /// The timestamp width in bits.
        bits: u32,
        /// The time unit in milliseconds.
        unit_ms: u64,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::Missing { what } => write!(f, "the layout has no {what}"),
            LayoutError::ZeroWidth { field } => write!(f, "field `{field}` has a width of 0 bits"),
            LayoutError::TooWide { bits } => {
                write!(f, "the fields take {bits} bits, more than the 64 of an ID")
            }
            LayoutError::DuplicateField { field } => {
                write!(f, "field `{field}` appears more than once")
            }
            LayoutError::EmptyName => write!(f, "a node field has an empty name"),
            LayoutError::NameTooLong { field, len, max } => write!(
                f,
                "node field {field:?} has a name of {len} bytes, more than the {max} allowed"
            ),
            LayoutError::BadNameCharacter { field, character } => write!(
                f,
                "node field {field:?} has {character:?} in its name: \
                 names are ASCII letters, digits, `_` and `-`"
            ),
            LayoutError::ReservedName { field } => write!(
                f,
                "a node field cannot be named {field:?}: \
                 timestamp, sequence and clock_id name the other kinds of field"
            ),
            LayoutError::ZeroUnit => write!(f, "the time unit is 0 ms"),
            LayoutError::EpochInFuture { epoch_ms, now_ms } => write!(
                f,
                "the epoch ({epoch_ms} ms) is in the future (now: {now_ms} ms since 1970)"
            ),
            LayoutError::TimestampTooLong { bits, unit_ms } => write!(
                f,
                "a {bits}-bit timestamp of {unit_ms} ms units reaches past the year 584 million"
            ),
        }
    }
}

impl std::error::Error for LayoutError {}

/// A value does not fit a field of a [`Layout`](crate::Layout), or an ID does not
/// belong to the layout.
///
/// ```
/// use flakeid::{FieldError, Layout};
///
/// let err = Layout::twitter().node_id_from_fields([("datacenter", 40)]).unwrap_err();
/// assert_eq!(
///     err,
///     FieldError::OutOfRange { field: "datacenter".into(), value: 40, max: 31 }
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldError {
    /// A value is larger than its field can hold.
    OutOfRange {
        /// The field's name (`node` for a whole node id).
        field: String,
        /// The value given.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// The layout has no field of that name.
    UnknownField {
        /// The name given.
        field: String,
    },
    /// The layout has no field of that kind (for example no clock-id field).
    NoSuchField {
        /// `"clock_id"` or `"node"`.
        field: &'static str,
    },
    /// The ID sets bits above the layout's fields, so this layout did not make it.
    UnusedBitsSet {
        /// The ID.
        id: u64,
        /// The bits the layout's fields take.
        layout_bits: u32,
    },
    /// A time lies before the layout's epoch.
    BeforeEpoch {
        /// The time, in Unix milliseconds.
        unix_ms: u64,
        /// The epoch, in Unix milliseconds.
        epoch_ms: u64,
    },
    /// A time lies after the last instant the layout can encode.
    AfterLifetime {
        /// The time, in Unix milliseconds.
        unix_ms: u64,
        /// The last encodable instant, in Unix milliseconds.
        last_ms: u64,
    },
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldError::OutOfRange { field, value, max } => {
                write!(f, "{field} {value} is out of range (0..={max})")
            }
            FieldError::UnknownField { field } => write!(f, "the layout has no field `{field}`"),
            FieldError::NoSuchField { field } => write!(f, "the layout has no {field} field"),
            FieldError::UnusedBitsSet { id, layout_bits } => write!(
                f,
                "id {id} sets bits above the layout's {layout_bits}; it was not made with this layout"
            ),
            FieldError::BeforeEpoch { unix_ms, epoch_ms } => {
                write!(f, "time {unix_ms} ms is before the epoch ({epoch_ms} ms)")
            }
            FieldError::AfterLifetime { unix_ms, last_ms } => write!(
                f,
                "time {unix_ms} ms is after the layout's last instant ({last_ms} ms)"
            ),
        }
    }
}

impl std::error::Error for FieldError {}

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
    fn validation_names_each_problem() {
        assert_eq!(
            Layout::builder().timestamp_bits(41).sequence(12).build(),
            Err(LayoutError::Missing { what: "epoch" })
        );
        assert_eq!(
            Layout::builder().epoch_ms(0).sequence(12).build(),
            Err(LayoutError::Missing { what: "timestamp" })
        );
        assert_eq!(
            base().node("w", 5).build(),
            Err(LayoutError::Missing { what: "sequence" })
        );
        assert_eq!(
            base().node("w", 0).sequence(12).build(),
            Err(LayoutError::ZeroWidth { field: "w".into() })
        );
        assert_eq!(
            Layout::builder()
                .epoch_ms(0)
                .timestamp_bits(0)
                .sequence(1)
                .build(),
            Err(LayoutError::ZeroWidth {
                field: "timestamp".into()
            })
        );
        assert_eq!(
            base().node("", 5).sequence(12).build(),
            Err(LayoutError::EmptyName)
        );
        assert_eq!(
            base().node("w", 5).node("w", 5).sequence(12).build(),
            Err(LayoutError::DuplicateField { field: "w".into() })
        );
        assert_eq!(
            base().node("sequence", 5).sequence(12).build(),
            Err(LayoutError::ReservedName {
                field: "sequence".into()
            })
        );
        assert_eq!(
            base().node("w,x", 5).sequence(12).build(),
            Err(LayoutError::BadNameCharacter {
                field: "w,x".into(),
                character: ','
            })
        );
        assert_eq!(
            base().sequence(12).sequence(1).build(),
            Err(LayoutError::DuplicateField {
                field: "sequence".into()
            })
        );
        assert_eq!(
            base().node("w", 11).sequence(13).build(),
            Err(LayoutError::TooWide { bits: 65 })
        );
        assert_eq!(
            base().node("w", u32::MAX).sequence(13).build(),
            Err(LayoutError::TooWide { bits: u32::MAX })
        );
        assert_eq!(
            base().unit_ms(0).sequence(12).build(),
            Err(LayoutError::ZeroUnit)
        );
        assert_eq!(
            Layout::builder()
                .epoch_ms(0)
                .timestamp_bits(60)
                .unit_ms(1000)
                .sequence(4)
                .build(),
            Err(LayoutError::TimestampTooLong {
                bits: 60,
                unit_ms: 1000
            })
        );
        let future = u64::MAX / 4;
        assert!(matches!(
            Layout::builder()
                .epoch_ms(future)
                .timestamp_bits(10)
                .sequence(4)
                .build(),
            Err(LayoutError::EpochInFuture { epoch_ms, .. }) if epoch_ms == future
        ));
        assert!(matches!(
            Layout::instagram(future),
            Err(LayoutError::EpochInFuture { .. })
        ));
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
    fn presets_have_their_published_parameters() {
        let t = Layout::twitter();
        assert_eq!(
            (
                t.epoch_ms(),
                t.timestamp_bits(),
                t.node_bits(),
                t.sequence_bits()
            ),
            (1_288_834_974_657, 41, 10, 12)
        );
        let d = Layout::discord();
        assert_eq!(
            (
                d.epoch_ms(),
                d.timestamp_bits(),
                d.node_bits(),
                d.total_bits()
            ),
            (1_420_070_400_000, 42, 10, 64)
        );
        let s = Layout::sonyflake();
        assert_eq!(
            (
                s.epoch_ms(),
                s.unit_ms(),
                s.timestamp_bits(),
                s.total_bits()
            ),
            (1_409_529_600_000, 10, 39, 63)
        );
        assert!(s.field("sequence").unwrap().shift() > s.field("machine").unwrap().shift());
        let j = Layout::js_safe();
        assert_eq!(j.total_bits(), 53);
    }

    #[test]
    fn lifetimes_match_the_documented_dates() {
        // Years are checked through the RFC 3339 form of the last instant.
        let year = |ms: u64| {
            let mut s = String::new();
            rfc3339::push(&mut s, ms);
            s[..7].to_string()
        };
        assert_eq!(year(Layout::twitter().last_ms()), "2080-07");
        assert_eq!(year(Layout::discord().last_ms()), "2154-05");
        assert_eq!(year(Layout::discord().last_signed_ms()), "2084-09");
        assert_eq!(year(Layout::sonyflake().last_ms()), "2188-11");
        assert_eq!(year(Layout::js_safe().last_ms()), "2093-09");
        let insta = Layout::instagram(1_314_220_021_721).unwrap();
        assert_eq!(year(insta.last_signed_ms()), "2046-06");
    }

    #[test]
    fn js_safe_ids_never_pass_2_pow_53() {
        let layout = Layout::js_safe();
        let last = layout
            .compose(Parts {
                timestamp: layout.timestamp_field().max(),
                node: layout.max_node_id(),
                sequence: layout.capacity_per_tick() - 1,
                clock_id: 0,
            })
            .unwrap();
        assert_eq!(last.to_u64(), (1 << 53) - 1);
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
