//! What goes wrong building a layout ([`LayoutError`]) and fitting values
//! or IDs to one ([`FieldError`]).

use std::fmt;

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
    /// A node field was left out when a node id was given by its fields:
    /// each is required, so that two hosts that both forget one do not share
    /// a node id.
    NodeFieldNotSet {
        /// The field's name.
        field: String,
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
            FieldError::NodeFieldNotSet { field } => write!(
                f,
                "node field `{field}` is not set: give every node field a value \
                 (0 if that is meant), or the whole node id"
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
