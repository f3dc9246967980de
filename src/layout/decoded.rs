//! An ID read through its layout: [`Parts`], the raw field values, and
//! [`Decoded`], which names them and prints the time.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Layout;
use crate::id::Id;
use crate::rfc3339;

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
    pub(super) layout: &'a Layout,
    pub(super) id: Id,
    pub(super) parts: Parts,
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
