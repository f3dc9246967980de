//! Layouts and IDs without a generator: parsing a layout, decoding and
//! composing IDs, and their string forms, with the errors mapped to
//! [`ErrorKind`](crate::ErrorKind)s.

use flakeid::{Id, IdFormat, Layout, Parts};

use crate::error::Error;

/// A layout from a preset name (`twitter`, `discord`, `sonyflake`,
/// `js_safe`, `instagram`, `instagram:<epoch ms>`) or the library's spec
/// text (`epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,<name>:<bits>,...`).
///
/// # Errors
///
/// [`ErrorKind::Layout`](crate::ErrorKind::Layout), with the library's
/// reason.
///
/// ```
/// use flakeid_bindings::parse_layout;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// assert_eq!(parse_layout("discord")?, flakeid::Layout::discord());
/// assert!(parse_layout("epoch=0 fields=timestamp:41,worker:5").is_err()); // no sequence
/// # Ok(())
/// # }
/// ```
pub fn parse_layout(text: &str) -> Result<Layout, Error> {
    Ok(text.parse::<Layout>()?)
}

/// An ID read back through its layout, as plain owned data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decoded {
    /// The ID.
    pub id: u64,
    /// Ticks since the layout's epoch.
    pub timestamp: u64,
    /// The time, in Unix milliseconds.
    pub unix_ms: u64,
    /// The time in RFC 3339, UTC (`2016-04-30T11:18:25.796Z`).
    pub rfc3339: String,
    /// All node fields as one number.
    pub node_id: u64,
    /// Each node field, high to low.
    pub fields: Vec<(String, u64)>,
    /// The sequence within the tick.
    pub sequence: u64,
    /// The clock id (0 without a clock-id field).
    pub clock_id: u64,
    /// The library's one-line form: the time, then every field.
    pub text: String,
}

/// Reads `id` through `layout`.
///
/// # Errors
///
/// [`ErrorKind::Field`](crate::ErrorKind::Field) if `id` sets bits above
/// the layout's fields (this layout did not make it).
///
/// ```
/// use flakeid_bindings::decode;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let decoded = decode(&flakeid::Layout::discord(), 175928847299117063)?;
/// assert_eq!(decoded.unix_ms, 1_462_015_105_796);
/// assert_eq!(decoded.fields, [("worker".to_string(), 1), ("process".to_string(), 0)]);
/// assert_eq!(decoded.text, "2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7");
/// # Ok(())
/// # }
/// ```
pub fn decode(layout: &Layout, id: u64) -> Result<Decoded, Error> {
    let d = layout.decode(Id::from_u64(id))?;
    Ok(Decoded {
        id,
        timestamp: d.timestamp(),
        unix_ms: d.unix_ms(),
        rfc3339: d.rfc3339().to_string(),
        node_id: d.node_id(),
        fields: d.node_fields().map(|(n, v)| (n.to_owned(), v)).collect(),
        sequence: d.sequence(),
        clock_id: d.clock_id(),
        text: d.to_string(),
    })
}

/// Composes an ID from its raw field values (`timestamp` in the layout's
/// ticks since its epoch; `node` all node fields as one number).
///
/// # Errors
///
/// [`ErrorKind::Field`](crate::ErrorKind::Field) if a value does not fit
/// its field (or a clock id is given to a layout without one).
///
/// ```
/// use flakeid::Parts;
/// use flakeid_bindings::{compose, decode};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let layout = flakeid::Layout::twitter();
/// let id = compose(&layout, Parts { timestamp: 1000, node: 3, sequence: 9, clock_id: 0 })?;
/// assert_eq!(decode(&layout, id)?.sequence, 9);
/// # Ok(())
/// # }
/// ```
pub fn compose(layout: &Layout, parts: Parts) -> Result<u64, Error> {
    Ok(layout.compose(parts)?.to_u64())
}

/// A layout's node id from named node fields, every one of the layout's.
///
/// # Errors
///
/// [`ErrorKind::Field`](crate::ErrorKind::Field) for a field the layout
/// does not have, a value that does not fit, or a node field left out.
///
/// ```
/// use flakeid_bindings::{ErrorKind, node_id_from_fields};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let twitter = flakeid::Layout::twitter();
/// let node = node_id_from_fields(&twitter, &[("datacenter".into(), 1), ("worker".into(), 0)])?;
/// assert_eq!(node, 1 << 5);
/// let err = node_id_from_fields(&twitter, &[("datacenter".into(), 1)]).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Field);
/// assert!(err.message().starts_with("node field `worker` is not set"));
/// # Ok(())
/// # }
/// ```
pub fn node_id_from_fields(layout: &Layout, fields: &[(String, u64)]) -> Result<u64, Error> {
    Ok(layout.node_id_from_fields(fields.iter().map(|(n, v)| (n.as_str(), *v)))?)
}

/// A string form by name: `decimal`, `hex`, `base32` (Crockford) or
/// `base62`.
///
/// # Errors
///
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for
/// another name.
///
/// ```
/// use flakeid::IdFormat;
/// use flakeid_bindings::id_format;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// assert_eq!(id_format("base62")?, IdFormat::Base62);
/// assert!(id_format("base64").is_err());
/// # Ok(())
/// # }
/// ```
pub fn id_format(name: &str) -> Result<IdFormat, Error> {
    IdFormat::ALL
        .into_iter()
        .find(|f| f.name() == name)
        .ok_or_else(|| {
            Error::invalid(format!(
                "unknown id format {name:?}: expected decimal, hex, base32 or base62"
            ))
        })
}

/// `id` in the string form `format`.
///
/// ```
/// use flakeid::IdFormat;
/// use flakeid_bindings::encode;
///
/// assert_eq!(encode(175928847299117063, IdFormat::Base62), "0Czks0tP37X");
/// ```
pub fn encode(id: u64, format: IdFormat) -> String {
    format.encode(Id::from_u64(id)).to_string()
}

/// Parses `text` in the form `format`, or (with `None`) in whichever form
/// its shape says (the library's `Id::parse_any`); returns the ID and the
/// form read.
///
/// # Errors
///
/// [`ErrorKind::ParseId`](crate::ErrorKind::ParseId), saying what is wrong.
///
/// ```
/// use flakeid::IdFormat;
/// use flakeid_bindings::parse_id;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// assert_eq!(parse_id("0Czks0tP37X", None)?, (175928847299117063, IdFormat::Base62));
/// assert!(parse_id("order-17", None).is_err());
/// # Ok(())
/// # }
/// ```
pub fn parse_id(text: &str, format: Option<IdFormat>) -> Result<(u64, IdFormat), Error> {
    match format {
        Some(format) => Ok((format.parse(text)?.to_u64(), format)),
        None => {
            let (id, format) = Id::parse_any(text)?;
            Ok((id.to_u64(), format))
        }
    }
}
