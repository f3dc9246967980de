//! serde support (feature `serde`): [`Id`] both ways, [`Layout`] both ways as
//! its spec string, [`IdString`] and [`Decoded`] written.
//!
//! | format kind | `Id` is written as | `Id` is read from |
//! |---|---|---|
//! | human-readable (JSON, YAML, TOML, ...) | a decimal string, `"175928847299117063"` | a decimal string, or a non-negative integer |
//! | binary (CBOR, postcard, bincode, ...) | an unsigned 64-bit integer | an unsigned integer |
//!
//! Human-readable formats get a string because their most common reader,
//! JavaScript, holds integers exactly only up to 2^53 − 1: a Snowflake ID
//! sent as a JSON number comes back rounded (`175928847299117063` parses as
//! `175928847299117060`). Reading also accepts an integer because Rust, Go
//! and Java services often send one; an integer a JavaScript program wrote
//! may already be rounded, so have such producers send strings. Strings are
//! decimal only: hex, base32 and base62 strings are refused rather than
//! guessed at. Use [`as_u64`] (and [`as_u64::option`] for an `Option<Id>`) where a field
//! must be a number in every format.
//!
//! ```
//! use flakeid::Id;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Order {
//!     id: Id,
//!     #[serde(with = "flakeid::serde::as_u64")]
//!     row: Id,
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let order = Order { id: Id::from_u64(175928847299117063), row: Id::from_u64(7) };
//! assert_eq!(serde_json::to_string(&order)?, r#"{"id":"175928847299117063","row":7}"#);
//! let back: Order = serde_json::from_str(r#"{"id":175928847299117063,"row":7}"#)?;
//! assert_eq!(back.id, order.id);
//! # Ok(())
//! # }
//! ```

use std::fmt;

use ::serde::de::{self, Deserialize, Deserializer, Unexpected, Visitor};
use ::serde::ser::{Serialize, Serializer};

use ::serde::ser::{SerializeMap, SerializeStruct};

use crate::id::Id;
use crate::id_string::{IdFormat, IdString};
use crate::layout::{Decoded, Layout};

/// A decimal string in human-readable formats, a `u64` in binary ones.
impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&IdFormat::Decimal.encode(*self))
        } else {
            serializer.serialize_u64(self.to_u64())
        }
    }
}

/// A decimal string or a non-negative integer; see the [module docs](self).
impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(IdVisitor)
        } else {
            deserializer.deserialize_u64(IdVisitor)
        }
    }
}

/// Accepts a non-negative integer or a decimal string.
struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an id: a decimal string or an integer in 0..=18446744073709551615")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(Id::from_u64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        u64::try_from(v)
            .map(Id::from_u64)
            .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Id, E> {
        u64::try_from(v)
            .map(Id::from_u64)
            .map_err(|_| E::custom(format_args!("id {v} is larger than 2^64 - 1")))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Id, E> {
        u64::try_from(v).map(Id::from_u64).map_err(|_| {
            E::custom(format_args!(
                "integer {v} is not an id (0..=18446744073709551615)"
            ))
        })
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
        Id::parse_decimal(v).map_err(|e| E::custom(format_args!("invalid id {v:?}: {e}")))
    }
}

/// The layout's spec string (its `Display`, `epoch=… unit=… fields=…`), in
/// every format.
///
/// ```
/// use flakeid::Layout;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Config {
///     layout: Layout,
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config: Config = serde_json::from_str(r#"{"layout":"discord"}"#)?;
/// assert_eq!(config.layout, Layout::discord());
/// let json = serde_json::to_string(&config)?;
/// assert_eq!(
///     json,
///     r#"{"layout":"epoch=1420070400000 unit=1 fields=timestamp:42,worker:5,process:5,sequence:12"}"#
/// );
/// assert!(serde_json::from_str::<Config>(r#"{"layout":"tweeter"}"#).is_err());
/// # Ok(())
/// # }
/// ```
impl Serialize for Layout {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A preset name or the custom form, as [`Layout`]'s `FromStr` reads them.
impl<'de> Deserialize<'de> for Layout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Layout, D::Error> {
        deserializer.deserialize_str(LayoutVisitor)
    }
}

struct LayoutVisitor;

impl Visitor<'_> for LayoutVisitor {
    type Value = Layout;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a layout: a preset name or `epoch=<ms> [unit=<ms>] fields=...`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Layout, E> {
        v.parse()
            .map_err(|e| E::custom(format_args!("invalid layout {v:?}: {e}")))
    }
}

/// The string, in every format.
///
/// ```
/// use flakeid::Id;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let short = Id::from_u64(175_928_847_299_117_063).to_base62();
/// assert_eq!(serde_json::to_string(&short)?, r#""0Czks0tP37X""#);
/// # Ok(())
/// # }
/// ```
impl Serialize for IdString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A struct of the ID (as [`Id`] writes itself), its time (RFC 3339, UTC)
/// and Unix milliseconds, and its raw fields, the node fields by name: what
/// `flakeid decode --json` prints.
///
/// ```
/// use flakeid::{Id, Layout};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let layout = Layout::twitter();
/// let decoded = layout.decode(Id::from_u64(1_541_815_603_606_036_480))?;
/// let json = serde_json::to_value(&decoded)?;
/// assert_eq!(json["id"], "1541815603606036480");
/// assert_eq!(json["time"], "2022-06-28T16:07:40.105Z");
/// assert_eq!(json["node_fields"]["worker"], 26);
/// assert_eq!(json["sequence"], 0);
/// # Ok(())
/// # }
/// ```
impl Serialize for Decoded<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Decoded", 8)?;
        s.serialize_field("id", &self.id())?;
        s.serialize_field("time", &format_args!("{}", self.rfc3339()))?;
        s.serialize_field("unix_ms", &self.unix_ms())?;
        s.serialize_field("timestamp", &self.timestamp())?;
        s.serialize_field("node_id", &self.node_id())?;
        s.serialize_field("node_fields", &NodeFields(self))?;
        s.serialize_field("sequence", &self.sequence())?;
        s.serialize_field("clock_id", &self.clock_id())?;
        s.end()
    }
}

/// A decoded ID's node fields as a map from name to value.
struct NodeFields<'a, 'b>(&'a Decoded<'b>);

impl Serialize for NodeFields<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (name, value) in self.0.node_fields() {
            map.serialize_entry(name, &value)?;
        }
        map.end()
    }
}

/// Writes an [`Id`] as an unsigned 64-bit integer in every format, JSON
/// included; for `#[serde(with = "flakeid::serde::as_u64")]`.
///
/// Reading takes an unsigned integer. Only for readers that hold 64-bit integers exactly:
/// not JavaScript, unless the layout keeps IDs below 2^53
/// ([`Layout::js_safe`](crate::Layout::js_safe)).
///
/// ```
/// use flakeid::Id;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, PartialEq, Serialize, Deserialize)]
/// struct Row {
///     #[serde(with = "flakeid::serde::as_u64")]
///     id: Id,
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let row = Row { id: Id::from_u64(175928847299117063) };
/// let json = serde_json::to_string(&row)?;
/// assert_eq!(json, r#"{"id":175928847299117063}"#);
/// assert_eq!(serde_json::from_str::<Row>(&json)?, row);
/// # Ok(())
/// # }
/// ```
pub mod as_u64 {
    use super::{Deserializer, Id, IdVisitor, Serializer};

    /// Writes `id` as a `u64`.
    ///
    /// # Errors
    ///
    /// Whatever the serializer reports.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// # fn main() -> Result<(), serde_json::Error> {
    /// let mut out = Vec::new();
    /// flakeid::serde::as_u64::serialize(&Id::from_u64(42), &mut serde_json::Serializer::new(&mut out))?;
    /// assert_eq!(out, b"42");
    /// # Ok(())
    /// # }
    /// ```
    pub fn serialize<S: Serializer>(id: &Id, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(id.to_u64())
    }

    /// Reads an [`Id`] from a `u64`.
    ///
    /// # Errors
    ///
    /// The deserializer's error for anything but a non-negative integer
    /// below 2^64.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// # fn main() -> Result<(), serde_json::Error> {
    /// let id = flakeid::serde::as_u64::deserialize(&mut serde_json::Deserializer::from_str("42"))?;
    /// assert_eq!(id, Id::from_u64(42));
    /// assert!(flakeid::serde::as_u64::deserialize(&mut serde_json::Deserializer::from_str("-1")).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_u64(IdVisitor)
    }

    /// The same for an `Option<Id>`: `None` is the format's null, `Some(id)`
    /// a `u64`; for `#[serde(with = "flakeid::serde::as_u64::option")]`.
    ///
    /// ```
    /// use flakeid::Id;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize)]
    /// struct Row {
    ///     #[serde(with = "flakeid::serde::as_u64::option")]
    ///     parent: Option<Id>,
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let row = Row { parent: Some(Id::from_u64(175928847299117063)) };
    /// assert_eq!(serde_json::to_string(&row)?, r#"{"parent":175928847299117063}"#);
    /// let orphan: Row = serde_json::from_str(r#"{"parent":null}"#)?;
    /// assert_eq!(orphan.parent, None);
    /// # Ok(())
    /// # }
    /// ```
    pub mod option {
        use std::fmt;

        use ::serde::de::{self, Deserializer, Visitor};
        use ::serde::ser::Serializer;

        use super::{Id, IdVisitor};

        /// Writes `Some(id)` as a `u64`, `None` as the format's null.
        ///
        /// # Errors
        ///
        /// Whatever the serializer reports.
        ///
        /// ```
        /// use flakeid::Id;
        ///
        /// # fn main() -> Result<(), serde_json::Error> {
        /// let mut out = Vec::new();
        /// flakeid::serde::as_u64::option::serialize(&None, &mut serde_json::Serializer::new(&mut out))?;
        /// assert_eq!(out, b"null");
        /// # Ok(())
        /// # }
        /// ```
        pub fn serialize<S: Serializer>(id: &Option<Id>, serializer: S) -> Result<S::Ok, S::Error> {
            match id {
                Some(id) => serializer.serialize_some(&id.to_u64()),
                None => serializer.serialize_none(),
            }
        }

        /// Reads an `Option<Id>`: null, or a `u64`.
        ///
        /// # Errors
        ///
        /// The deserializer's error for anything but null or a non-negative
        /// integer below 2^64.
        ///
        /// ```
        /// use flakeid::Id;
        ///
        /// # fn main() -> Result<(), serde_json::Error> {
        /// let id = flakeid::serde::as_u64::option::deserialize(&mut serde_json::Deserializer::from_str("42"))?;
        /// assert_eq!(id, Some(Id::from_u64(42)));
        /// let none = flakeid::serde::as_u64::option::deserialize(&mut serde_json::Deserializer::from_str("null"))?;
        /// assert_eq!(none, None);
        /// # Ok(())
        /// # }
        /// ```
        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<Id>, D::Error> {
            deserializer.deserialize_option(OptionVisitor)
        }

        /// Null, or an id through [`IdVisitor`]'s `u64` path.
        struct OptionVisitor;

        impl<'de> Visitor<'de> for OptionVisitor {
            type Value = Option<Id>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null or an integer in 0..=18446744073709551615")
            }

            fn visit_none<E: de::Error>(self) -> Result<Option<Id>, E> {
                Ok(None)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Option<Id>, E> {
                Ok(None)
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<Id>, D::Error> {
                d.deserialize_u64(IdVisitor).map(Some)
            }
        }
    }
}
