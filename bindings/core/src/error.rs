//! One error type for both languages: a stable [`ErrorKind`] (its
//! [`code`](ErrorKind::code) is what Python's exception classes and Node's
//! `err.code` are chosen by), a finer [`detail`](Error::detail) code, the
//! library's message, and the numbers a caller may act on.

use std::fmt;
use std::time::Duration;

use flakeid::{
    BuildError, FieldError, GenerateError, LeaseError, NodeIdError, ParseAnyIdError, ParseIdError,
    ParseLayoutError, StateError,
};

/// What went wrong, as a stable code. Each binding maps every kind to one
/// error class; the codes never change meaning.
///
/// | kind | code | raised by |
/// |---|---|---|
/// | `InvalidArgument` | `invalid_argument` | an argument's value: out of range, an unknown name, a bad duration |
/// | `InvalidType` | `invalid_type` | an argument of the wrong type (the bindings' conversions) |
/// | `Layout` | `layout` | a layout spec that does not parse or breaks a rule |
/// | `NodeId` | `node_id` | no node id chosen, node fields with one left out, or a node id that does not fit (a number, fields, the environment, a host name) |
/// | `Config` | `config` | a policy the layout cannot serve, a bad random start, window, clock id or lease setting |
/// | `State` | `state` | restart safety's saved state cannot be read, trusted or written at build |
/// | `Lease` | `lease` | no node id could be leased at build (all held, unreachable, refused, the SQL table unusable, ...) |
/// | `SequenceExhausted` | `sequence_exhausted` | the tick is used up and the call does not wait |
/// | `ClockBehind` | `clock_behind` | the clock reads behind and the policy reports |
/// | `Expired` | `expired` | the clock is past the layout's last instant |
/// | `Reserving` | `reserving` | a non-waiting call needs a reservation or lease ceiling being saved |
/// | `Storage` | `storage` | the reservation cannot be saved |
/// | `Fenced` | `fenced` | the node-id lease cannot be proven valid |
/// | `Forked` | `forked` | the generator was built before this process was forked, and its node id is not leased |
/// | `Closed` | `closed` | the generator was closed |
/// | `ParseId` | `parse_id` | a string that is not an ID in the form asked for |
/// | `Field` | `field` | a value that does not fit a layout field, or an ID not of the layout (decode, compose) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument's value is out of range or not one of the names allowed.
    InvalidArgument,
    /// An argument has the wrong type.
    InvalidType,
    /// A layout spec does not parse, or describes a layout that breaks a rule.
    Layout,
    /// No node id was chosen, or the one chosen does not fit the layout.
    NodeId,
    /// A setting the layout cannot serve, or out of its range.
    Config,
    /// The saved state (restart safety) cannot be used.
    State,
    /// No node id could be leased.
    Lease,
    /// The tick's sequence is used up and the call does not wait for the next.
    SequenceExhausted,
    /// The clock reads behind the last timestamp and the policy reports it.
    ClockBehind,
    /// The clock is past the last instant the layout can encode.
    Expired,
    /// A non-waiting call needs a reservation (or lease ceiling) being saved.
    Reserving,
    /// The reservation cannot be saved.
    Storage,
    /// The node-id lease cannot be proven valid.
    Fenced,
    /// Built before this process was forked; only a leased node id carries
    /// over (see [`Generator`](crate::Generator#fork-safety)).
    Forked,
    /// The generator was closed.
    Closed,
    /// A string is not an ID in the form asked for.
    ParseId,
    /// A value does not fit a layout field, or an ID is not of the layout.
    Field,
}

impl ErrorKind {
    /// The stable code, `snake_case`.
    ///
    /// ```
    /// use flakeid_bindings::ErrorKind;
    ///
    /// assert_eq!(ErrorKind::SequenceExhausted.code(), "sequence_exhausted");
    /// ```
    pub const fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::InvalidType => "invalid_type",
            ErrorKind::Layout => "layout",
            ErrorKind::NodeId => "node_id",
            ErrorKind::Config => "config",
            ErrorKind::State => "state",
            ErrorKind::Lease => "lease",
            ErrorKind::SequenceExhausted => "sequence_exhausted",
            ErrorKind::ClockBehind => "clock_behind",
            ErrorKind::Expired => "expired",
            ErrorKind::Reserving => "reserving",
            ErrorKind::Storage => "storage",
            ErrorKind::Fenced => "fenced",
            ErrorKind::Forked => "forked",
            ErrorKind::Closed => "closed",
            ErrorKind::ParseId => "parse_id",
            ErrorKind::Field => "field",
        }
    }

    /// Every kind, in the order of the table above.
    pub const ALL: [ErrorKind; 17] = [
        ErrorKind::InvalidArgument,
        ErrorKind::InvalidType,
        ErrorKind::Layout,
        ErrorKind::NodeId,
        ErrorKind::Config,
        ErrorKind::State,
        ErrorKind::Lease,
        ErrorKind::SequenceExhausted,
        ErrorKind::ClockBehind,
        ErrorKind::Expired,
        ErrorKind::Reserving,
        ErrorKind::Storage,
        ErrorKind::Fenced,
        ErrorKind::Forked,
        ErrorKind::Closed,
        ErrorKind::ParseId,
        ErrorKind::Field,
    ];
}

/// An error with its stable kind, the library's message, and the numbers a
/// caller may act on.
///
/// ```
/// use flakeid_bindings::{Config, ErrorKind};
///
/// let err = Config::new("tweeter").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Layout);
/// assert_eq!(err.detail(), Some("unknown_preset"));
/// assert!(err.message().starts_with("unknown layout \"tweeter\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    detail: Option<&'static str>,
    message: String,
    retry_after: Option<Duration>,
    behind: Option<Duration>,
    last_ms: Option<u64>,
}

impl Error {
    /// An error of `kind` saying `message`.
    ///
    /// ```
    /// use flakeid_bindings::{Error, ErrorKind};
    ///
    /// let err = Error::new(ErrorKind::InvalidType, "n must be an int, not str");
    /// assert_eq!(err.to_string(), "n must be an int, not str");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            detail: None,
            message: message.into(),
            retry_after: None,
            behind: None,
            last_ms: None,
        }
    }

    /// An [`ErrorKind::InvalidArgument`] saying `message`.
    ///
    /// ```
    /// use flakeid_bindings::{Error, ErrorKind};
    ///
    /// assert_eq!(Error::invalid("n must be at least 0").kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    fn with_detail(mut self, detail: &'static str) -> Error {
        self.detail = Some(detail);
        self
    }

    /// The stable kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// A finer stable code within the kind, where the library tells one:
    /// for `Lease` one of `all_held`, `unreachable`, `bad_reply`, `refused`,
    /// `marks_ahead`, `table` (a PostgreSQL or MySQL lease's table is
    /// missing, has another shape, or the user lacks a right on it); for `State` one of `corrupt`, `truncated`,
    /// `unsupported_version`, `mismatch`, `locked`, `mark_past_end`,
    /// `mark_ahead`, `not_a_file`, `too_large`, `io`, `other`; for `Layout`
    /// the spec error (`unknown_preset`, `bad_spec`, `invalid_layout`); for
    /// `NodeId` one of `not_set`, `env_not_set`, `not_a_number`,
    /// `out_of_range`, `no_ordinal`, `hostname`, `unknown_field`,
    /// `field_not_set` (node fields given with one left out).
    pub fn detail(&self) -> Option<&'static str> {
        self.detail
    }

    /// The message: the library's own, lowercase, saying what is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `SequenceExhausted`: about how long until the next tick.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// `ClockBehind`: how far the clock is behind.
    pub fn behind(&self) -> Option<Duration> {
        self.behind
    }

    /// `Expired`: the layout's last instant, in Unix milliseconds.
    pub fn last_ms(&self) -> Option<u64> {
        self.last_ms
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<GenerateError> for Error {
    fn from(e: GenerateError) -> Error {
        let message = e.to_string();
        match e {
            GenerateError::SequenceExhausted { retry_after } => Error {
                retry_after: Some(retry_after),
                ..Error::new(ErrorKind::SequenceExhausted, message)
            },
            GenerateError::ClockBehind { behind } => Error {
                behind: Some(behind),
                ..Error::new(ErrorKind::ClockBehind, message)
            },
            GenerateError::Expired { last_ms } => Error {
                last_ms: Some(last_ms),
                ..Error::new(ErrorKind::Expired, message)
            },
            GenerateError::Reserving => Error::new(ErrorKind::Reserving, message),
            GenerateError::Storage(_) => Error::new(ErrorKind::Storage, message),
            GenerateError::Fenced => Error::new(ErrorKind::Fenced, message),
            _ => Error::new(ErrorKind::Storage, message),
        }
    }
}

impl From<BuildError> for Error {
    fn from(e: BuildError) -> Error {
        let message = e.to_string();
        match e {
            // The library's message names its Rust methods.
            BuildError::NodeIdNotSet => Error::new(
                ErrorKind::NodeId,
                "no node id set: two generators that both leave it out issue the same IDs; \
                 give a node id, node fields, an environment variable, a StatefulSet ordinal \
                 or a lease, or declare this the only generator of its layout (single node)",
            )
            .with_detail("not_set"),
            BuildError::Field(field) => field_error(field, message),
            BuildError::State(state) => {
                Error::new(ErrorKind::State, message).with_detail(state_detail(&state))
            }
            BuildError::Lease(lease) => lease_error(&lease, message),
            // NeedsClockIdField, ClockIdBelowSequence, BorrowTooShort,
            // RandomStartOutOfRange, WindowTooLong, and any later one.
            _ => Error::new(ErrorKind::Config, message),
        }
    }
}

/// A field error at build: a node id or node field (`NodeId`), or the
/// clock id (`Config`).
fn field_error(field: FieldError, message: String) -> Error {
    let clock_id = match &field {
        FieldError::OutOfRange { field, .. } => field == "clock_id",
        FieldError::NoSuchField { field } => *field == "clock_id",
        _ => false,
    };
    if clock_id {
        return Error::new(ErrorKind::Config, message);
    }
    let detail = match field {
        FieldError::UnknownField { .. } => "unknown_field",
        FieldError::NodeFieldNotSet { .. } => "field_not_set",
        _ => "out_of_range",
    };
    Error::new(ErrorKind::NodeId, message).with_detail(detail)
}

fn lease_error(lease: &LeaseError, message: String) -> Error {
    let detail = match lease {
        LeaseError::Config { .. } => return Error::new(ErrorKind::Config, message),
        LeaseError::AllHeld { .. } => "all_held",
        LeaseError::Unreachable { .. } => "unreachable",
        LeaseError::BadReply { .. } => "bad_reply",
        LeaseError::Refused { .. } => "refused",
        LeaseError::MarksAhead { .. } => "marks_ahead",
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        LeaseError::Table { .. } => "table",
        _ => "other",
    };
    Error::new(ErrorKind::Lease, message).with_detail(detail)
}

fn state_detail(state: &StateError) -> &'static str {
    match state {
        StateError::Corrupt { .. } => "corrupt",
        StateError::Truncated => "truncated",
        StateError::UnsupportedVersion { .. } => "unsupported_version",
        StateError::Mismatch { .. } => "mismatch",
        StateError::Locked { .. } => "locked",
        StateError::MarkPastEnd { .. } => "mark_past_end",
        StateError::MarkAhead { .. } => "mark_ahead",
        StateError::NotAFile { .. } => "not_a_file",
        StateError::TooLarge { .. } => "too_large",
        StateError::Io { .. } => "io",
        _ => "other",
    }
}

impl From<ParseLayoutError> for Error {
    fn from(e: ParseLayoutError) -> Error {
        let detail = match e {
            ParseLayoutError::UnknownPreset { .. } => "unknown_preset",
            ParseLayoutError::Layout(_) => "invalid_layout",
            _ => "bad_spec",
        };
        Error::new(ErrorKind::Layout, e.to_string()).with_detail(detail)
    }
}

impl From<NodeIdError> for Error {
    fn from(e: NodeIdError) -> Error {
        let detail = match e {
            NodeIdError::NotSet { .. } => "env_not_set",
            NodeIdError::NotANumber { .. } => "not_a_number",
            NodeIdError::OutOfRange { .. } => "out_of_range",
            NodeIdError::NoOrdinal { .. } => "no_ordinal",
            _ => "hostname",
        };
        Error::new(ErrorKind::NodeId, e.to_string()).with_detail(detail)
    }
}

impl From<FieldError> for Error {
    fn from(e: FieldError) -> Error {
        Error::new(ErrorKind::Field, e.to_string())
    }
}

impl From<ParseIdError> for Error {
    fn from(e: ParseIdError) -> Error {
        Error::new(ErrorKind::ParseId, e.to_string())
    }
}

impl From<ParseAnyIdError> for Error {
    fn from(e: ParseAnyIdError) -> Error {
        Error::new(ErrorKind::ParseId, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_snake_case() {
        let codes: std::collections::HashSet<_> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes.len(), ErrorKind::ALL.len());
        assert!(
            codes
                .iter()
                .all(|c| c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        );
    }

    #[test]
    fn generate_errors_keep_their_numbers() {
        let ms = Duration::from_millis;
        let e = Error::from(GenerateError::SequenceExhausted { retry_after: ms(1) });
        assert_eq!(
            (e.kind(), e.retry_after()),
            (ErrorKind::SequenceExhausted, Some(ms(1)))
        );
        let e = Error::from(GenerateError::ClockBehind { behind: ms(7) });
        assert_eq!(
            (e.kind(), e.behind()),
            (ErrorKind::ClockBehind, Some(ms(7)))
        );
        let e = Error::from(GenerateError::Expired { last_ms: 9 });
        assert_eq!((e.kind(), e.last_ms()), (ErrorKind::Expired, Some(9)));
        assert_eq!(Error::from(GenerateError::Fenced).kind(), ErrorKind::Fenced);
    }

    #[test]
    fn a_clock_id_that_does_not_fit_is_a_config_error() {
        let e = Error::from(BuildError::Field(FieldError::NoSuchField {
            field: "clock_id",
        }));
        assert_eq!(e.kind(), ErrorKind::Config);
        let e = Error::from(BuildError::Field(FieldError::OutOfRange {
            field: "node".into(),
            value: 5000,
            max: 1023,
        }));
        assert_eq!(
            (e.kind(), e.detail()),
            (ErrorKind::NodeId, Some("out_of_range"))
        );
    }

    #[cfg(any(feature = "postgres", feature = "mysql"))]
    #[test]
    fn an_unusable_lease_table_is_a_lease_error_detailed_table() {
        let e = Error::from(BuildError::Lease(LeaseError::Table {
            table: "flakeid_leases".into(),
            reason: "permission denied".into(),
        }));
        assert_eq!((e.kind(), e.detail()), (ErrorKind::Lease, Some("table")));
        assert!(e.message().contains("flakeid_leases"), "{e}");
    }

    #[test]
    fn node_fields_with_one_left_out_are_refused_naming_it() {
        let fields = |fields: &[(&str, u64)]| {
            let mut config = crate::Config::new("twitter").unwrap();
            config.node =
                crate::NodeSource::Fields(fields.iter().map(|&(n, v)| (n.to_owned(), v)).collect());
            crate::Generator::build(config)
        };
        let e = fields(&[("datacenter", 1)]).err().unwrap();
        assert_eq!(
            (e.kind(), e.detail()),
            (ErrorKind::NodeId, Some("field_not_set"))
        );
        assert!(
            e.message().starts_with("node field `worker` is not set"),
            "{e}"
        );
        let built = fields(&[("datacenter", 1), ("worker", 0)]).unwrap();
        assert_eq!(built.node_id(), Ok(1 << 5));
    }
}
