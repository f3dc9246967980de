//! [`LayoutBuilder`]: a custom layout's parameters, and the checks that make
//! them a [`Layout`].

use std::borrow::Cow;
use std::time::SystemTime;

use super::field::{Field, FieldKind};
use super::{Layout, LayoutError};

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
    /// The fields below the timestamp, high to low.
    pub(super) fields: Vec<(Cow<'static, str>, FieldKind, u32)>,
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
    pub(super) fn validate(self) -> Result<Layout, LayoutError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> LayoutBuilder {
        Layout::builder()
            .epoch_ms(1_600_000_000_000)
            .timestamp_bits(41)
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
}
