//! A [`Layout`] as text: the one spec syntax that `FromStr`, `Display`, serde,
//! the `flakeid` command line and the state file's `generator` line share.
//!
//! ```text
//! twitter | discord | sonyflake | js_safe | instagram | instagram:<epoch ms>
//! epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,<name>:<bits>,...
//! ```
//!
//! In the custom form, fields are listed from the highest bit down; the first
//! is `timestamp`, `sequence` and `clock_id` name those kinds of field, and
//! any other name is a node field. `Display` always writes the custom form
//! (`epoch=… unit=… fields=…`), which names every parameter, so reading it
//! back gives an equal layout.

use std::fmt;
use std::str::FromStr;

use super::{FieldKind, Layout, LayoutError};

/// Instagram's own epoch (2011-08-24 21:07:01.721 UTC), from its engineering
/// blog: the epoch the `instagram` preset name stands for.
const INSTAGRAM_EPOCH_MS: u64 = 1_314_220_021_721;

/// The preset names [`Layout`]'s `FromStr` reads, each with its layout.
const PRESETS: &str = "twitter, discord, sonyflake, js_safe, instagram, instagram:<epoch ms>";

impl fmt::Display for Layout {
    /// The custom form, `epoch=<ms> unit=<ms> fields=timestamp:<bits>,...`:
    /// parsing it gives back an equal layout, whatever built it.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let text = Layout::twitter().to_string();
    /// assert_eq!(
    ///     text,
    ///     "epoch=1288834974657 unit=1 fields=timestamp:41,datacenter:5,worker:5,sequence:12"
    /// );
    /// assert_eq!(text.parse::<Layout>()?, Layout::twitter());
    /// # Ok(())
    /// # }
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "epoch={} unit={} fields=", self.epoch_ms, self.unit_ms)?;
        for (i, field) in self.fields.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            write!(f, "{comma}{}:{}", field.name, field.bits)?;
        }
        Ok(())
    }
}

impl FromStr for Layout {
    type Err = ParseLayoutError;

    /// Reads a preset name or the custom form (see [`ParseLayoutError`] for
    /// what is refused).
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// assert_eq!("discord".parse::<Layout>()?, Layout::discord());
    /// let custom: Layout = "epoch=1700000000000 unit=1 fields=timestamp:41,shard:10,sequence:12".parse()?;
    /// assert_eq!(custom.node_bits(), 10);
    /// assert_eq!(custom.field("shard").map(|f| f.bits()), Some(10));
    /// # Ok(())
    /// # }
    /// ```
    fn from_str(s: &str) -> Result<Layout, ParseLayoutError> {
        let s = s.trim();
        match s {
            "twitter" => return Ok(Layout::twitter()),
            "discord" => return Ok(Layout::discord()),
            "sonyflake" => return Ok(Layout::sonyflake()),
            "js_safe" | "js-safe" => return Ok(Layout::js_safe()),
            "instagram" => return Ok(Layout::instagram(INSTAGRAM_EPOCH_MS)?),
            _ => {}
        }
        if let Some(epoch) = s.strip_prefix("instagram:") {
            let epoch = number("instagram", epoch)?;
            return Ok(Layout::instagram(epoch)?);
        }
        if !s.contains('=') {
            return Err(ParseLayoutError::UnknownPreset { name: s.to_owned() });
        }
        custom(s)
    }
}

/// `epoch=<ms> [unit=<ms>] fields=<name>:<bits>,...`.
fn custom(s: &str) -> Result<Layout, ParseLayoutError> {
    let (mut epoch, mut unit, mut fields) = (None, None, None);
    for part in s.split_whitespace() {
        let Some((key, value)) = part.split_once('=') else {
            return Err(ParseLayoutError::NotKeyValue {
                part: part.to_owned(),
            });
        };
        let slot = match key {
            "epoch" => &mut epoch,
            "unit" => &mut unit,
            "fields" => &mut fields,
            _ => {
                return Err(ParseLayoutError::UnknownKey {
                    key: key.to_owned(),
                });
            }
        };
        // A second value would silently win: a typo, never an intent.
        if slot.replace(value).is_some() {
            return Err(ParseLayoutError::RepeatedKey {
                key: key.to_owned(),
            });
        }
    }
    let epoch = number(
        "epoch",
        epoch.ok_or(ParseLayoutError::MissingKey { key: "epoch" })?,
    )?;
    let unit = unit.map_or(Ok(1), |v| number("unit", v))?;
    let fields = fields.ok_or(ParseLayoutError::MissingKey { key: "fields" })?;
    let mut builder = Layout::builder().epoch_ms(epoch).unit_ms(unit);
    for (i, field) in fields.split(',').enumerate() {
        let Some((name, bits)) = field.split_once(':') else {
            return Err(ParseLayoutError::NotNameBits {
                field: field.to_owned(),
            });
        };
        let bits = bits.parse::<u32>().map_err(|_| ParseLayoutError::BadBits {
            field: name.to_owned(),
            bits: bits.to_owned(),
        })?;
        let kind = match name {
            "timestamp" => FieldKind::Timestamp,
            "sequence" => FieldKind::Sequence,
            "clock_id" => FieldKind::ClockId,
            _ => FieldKind::Node,
        };
        if (i == 0) != (kind == FieldKind::Timestamp) {
            return Err(ParseLayoutError::TimestampNotFirst {
                field: field.to_owned(),
                position: i,
            });
        }
        builder = match kind {
            FieldKind::Timestamp => builder.timestamp_bits(bits),
            FieldKind::Sequence => builder.sequence(bits),
            FieldKind::ClockId => builder.clock_id(bits),
            FieldKind::Node => builder.node(name.to_owned(), bits),
        };
    }
    Ok(builder.build()?)
}

fn number(key: &'static str, value: &str) -> Result<u64, ParseLayoutError> {
    value.parse().map_err(|_| ParseLayoutError::BadNumber {
        key,
        value: value.to_owned(),
    })
}

/// A layout spec could not be read ([`Layout`]'s `FromStr`).
///
/// ```
/// use flakeid::{Layout, LayoutError, ParseLayoutError};
///
/// let err = "tweeter".parse::<Layout>().unwrap_err();
/// assert_eq!(err, ParseLayoutError::UnknownPreset { name: "tweeter".into() });
/// assert_eq!(
///     err.to_string(),
///     "unknown layout \"tweeter\": presets are twitter, discord, sonyflake, js_safe, \
///      instagram, instagram:<epoch ms>; a custom layout reads \
///      `epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,...`"
/// );
/// let err = "epoch=0 fields=timestamp:41,worker:5".parse::<Layout>().unwrap_err();
/// assert_eq!(err, ParseLayoutError::Layout(LayoutError::Missing { what: "sequence" }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseLayoutError {
    /// A name without `=` that is not a preset.
    UnknownPreset {
        /// The name given.
        name: String,
    },
    /// A word of the custom form is not `key=value`.
    NotKeyValue {
        /// The word.
        part: String,
    },
    /// A key other than `epoch`, `unit` and `fields`.
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A key is given twice.
    RepeatedKey {
        /// The key.
        key: String,
    },
    /// `epoch` or `fields` is missing.
    MissingKey {
        /// The key.
        key: &'static str,
    },
    /// `epoch`, `unit` or an Instagram epoch is not a whole number of
    /// milliseconds.
    BadNumber {
        /// `epoch`, `unit` or `instagram`.
        key: &'static str,
        /// The value given.
        value: String,
    },
    /// An entry of `fields` is not `name:bits`.
    NotNameBits {
        /// The entry.
        field: String,
    },
    /// A field's width is not a number.
    BadBits {
        /// The field's name.
        field: String,
        /// The width given.
        bits: String,
    },
    /// The first field is not `timestamp`, or a later one is.
    TimestampNotFirst {
        /// The entry out of place.
        field: String,
        /// Its position in `fields`, from 0.
        position: usize,
    },
    /// The spec reads, but the layout it describes breaks a rule of
    /// [`LayoutBuilder::build`](crate::LayoutBuilder::build).
    Layout(LayoutError),
}

impl From<LayoutError> for ParseLayoutError {
    fn from(e: LayoutError) -> Self {
        ParseLayoutError::Layout(e)
    }
}

impl fmt::Display for ParseLayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseLayoutError::UnknownPreset { name } => write!(
                f,
                "unknown layout {name:?}: presets are {PRESETS}; \
                 a custom layout reads `epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,...`"
            ),
            ParseLayoutError::NotKeyValue { part } => write!(f, "{part:?} is not key=value"),
            ParseLayoutError::UnknownKey { key } => {
                write!(f, "unknown key {key:?} (expected epoch, unit, fields)")
            }
            ParseLayoutError::RepeatedKey { key } => write!(f, "`{key}` is given twice"),
            ParseLayoutError::MissingKey { key: "epoch" } => {
                write!(f, "the layout needs epoch=<ms>")
            }
            ParseLayoutError::MissingKey { key } => {
                write!(f, "the layout needs {key}=timestamp:<bits>,...")
            }
            ParseLayoutError::BadNumber { key, value } => {
                write!(f, "{key}={value:?} is not a number of milliseconds")
            }
            ParseLayoutError::NotNameBits { field } => {
                write!(f, "field {field:?} is not name:bits")
            }
            ParseLayoutError::BadBits { field, bits } => {
                write!(f, "field {field:?} has {bits:?} bits, not a number")
            }
            ParseLayoutError::TimestampNotFirst { field, position: 0 } => {
                write!(f, "the first field must be timestamp, not {field:?}")
            }
            ParseLayoutError::TimestampNotFirst { field, position } => write!(
                f,
                "only the first field is timestamp, not field {} ({field:?})",
                position + 1
            ),
            ParseLayoutError::Layout(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ParseLayoutError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ParseLayoutError::Layout(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_their_custom_forms_read_as_the_same_layout() {
        let instagram = Layout::instagram(INSTAGRAM_EPOCH_MS).unwrap();
        for (name, layout) in [
            ("twitter", Layout::twitter()),
            ("discord", Layout::discord()),
            ("sonyflake", Layout::sonyflake()),
            ("js_safe", Layout::js_safe()),
            ("js-safe", Layout::js_safe()),
            ("instagram", instagram.clone()),
            ("instagram:1314220021721", instagram),
        ] {
            assert_eq!(name.parse::<Layout>(), Ok(layout.clone()), "{name}");
            let text = layout.to_string();
            assert_eq!(text.parse::<Layout>(), Ok(layout), "{text}");
        }
        let sonyflake: Layout =
            "epoch=1409529600000 unit=10 fields=timestamp:39,sequence:8,machine:16"
                .parse()
                .unwrap();
        assert_eq!(sonyflake, Layout::sonyflake());
        // Spaces around and between the parts are not part of the spec.
        let spaced: Layout = "  epoch=0   fields=timestamp:41,clock_id:4,machine:8,sequence:10 "
            .parse()
            .unwrap();
        assert_eq!(spaced.clock_id_bits(), 4);
        assert_eq!(spaced.unit_ms(), 1);
    }

    #[test]
    fn each_mistake_gets_its_own_error() {
        use ParseLayoutError as E;
        let s = |v: &str| v.to_owned();
        for (bad, expected) in [
            ("tweeter", E::UnknownPreset { name: s("tweeter") }),
            ("", E::UnknownPreset { name: s("") }),
            (
                "fields=timestamp:41,sequence:12",
                E::MissingKey { key: "epoch" },
            ),
            ("epoch=0", E::MissingKey { key: "fields" }),
            (
                "epoch=x fields=timestamp:41,sequence:12",
                E::BadNumber {
                    key: "epoch",
                    value: s("x"),
                },
            ),
            (
                "epoch=0 unit=-1 fields=timestamp:41,sequence:12",
                E::BadNumber {
                    key: "unit",
                    value: s("-1"),
                },
            ),
            (
                "instagram:soon",
                E::BadNumber {
                    key: "instagram",
                    value: s("soon"),
                },
            ),
            (
                "epoch=0 epoch=0 fields=timestamp:41,sequence:12",
                E::RepeatedKey { key: s("epoch") },
            ),
            (
                "epoch=0 colour=red fields=timestamp:41,sequence:1",
                E::UnknownKey { key: s("colour") },
            ),
            ("epoch=0 twitter", E::NotKeyValue { part: s("twitter") }),
            (
                "epoch=0 fields=timestamp:41,worker,sequence:12",
                E::NotNameBits { field: s("worker") },
            ),
            (
                "epoch=0 fields=timestamp:41,worker:five,sequence:12",
                E::BadBits {
                    field: s("worker"),
                    bits: s("five"),
                },
            ),
            (
                "epoch=0 fields=worker:5,sequence:12",
                E::TimestampNotFirst {
                    field: s("worker:5"),
                    position: 0,
                },
            ),
            (
                "epoch=0 fields=timestamp:41,timestamp:5,sequence:12",
                E::TimestampNotFirst {
                    field: s("timestamp:5"),
                    position: 1,
                },
            ),
            (
                "epoch=0 fields=timestamp:41,worker:5",
                E::Layout(LayoutError::Missing { what: "sequence" }),
            ),
            (
                "epoch=0 fields=timestamp:41,worker:30,sequence:12",
                E::Layout(LayoutError::TooWide { bits: 83 }),
            ),
            (
                "epoch=0 fields=timestamp:41,a=b:3,sequence:12",
                E::Layout(LayoutError::BadNameCharacter {
                    field: s("a=b"),
                    character: '=',
                }),
            ),
        ] {
            assert_eq!(bad.parse::<Layout>(), Err(expected), "{bad:?}");
        }
        let err = "epoch=0 fields=timestamp:41,worker:5"
            .parse::<Layout>()
            .unwrap_err();
        assert_eq!(err.to_string(), "the layout has no sequence");
        assert!(std::error::Error::source(&err).is_some());
    }
}
