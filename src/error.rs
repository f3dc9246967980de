//! Error types. Each one names what was wrong and the limit it broke.

use std::fmt;
use std::time::Duration;

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

/// A generator could not be built from the given configuration.
///
/// ```
/// use flakeid::{BuildError, Generator, Layout, OnExhausted};
///
/// // Twitter's layout has no clock-id field to move to.
/// let err = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .on_exhausted(OnExhausted::NextClock)
///     .build()
///     .unwrap_err();
/// assert_eq!(err, BuildError::NeedsClockIdField { policy: "OnExhausted::NextClock" });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// A node or clock id does not fit the layout.
    Field(FieldError),
    /// A `NextClock` policy was chosen for a layout without a clock-id field.
    NeedsClockIdField {
        /// The policy, for example `"OnClockBehind::NextClock"`.
        policy: &'static str,
    },
    /// `OnExhausted::NextClock` keeps IDs ordered only when the clock-id field
    /// sits above the sequence field.
    ClockIdBelowSequence,
    /// `OnExhausted::Borrow { max_ahead }` is shorter than one time unit, so it
    /// could never borrow.
    BorrowTooShort {
        /// The allowance given.
        max_ahead: Duration,
        /// The layout's time unit in milliseconds.
        unit_ms: u64,
    },
    /// The random sequence start bound is 0 or larger than a tick's capacity.
    RandomStartOutOfRange {
        /// The bound given.
        bound: u64,
        /// The sequence values in one tick.
        capacity: u64,
    },
    /// [`Persist::window`](crate::Persist::window) is longer than the
    /// longest window, one hour: a crash forfeits up to a window of
    /// timestamps, and a restart may wait that long.
    WindowTooLong {
        /// The window given.
        window: Duration,
        /// The longest accepted.
        max: Duration,
    },
    /// The saved state could not be read, checked or written (see
    /// [`Persist`](crate::Persist)); no ID was issued.
    State(StateError),
    /// No node id could be leased (the `etcd` and `redis` features); no ID
    /// was issued.
    Lease(LeaseError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Field(e) => e.fmt(f),
            BuildError::NeedsClockIdField { policy } => {
                write!(f, "{policy} needs a layout with a clock-id field")
            }
            BuildError::ClockIdBelowSequence => write!(
                f,
                "OnExhausted::NextClock needs the clock-id field above the sequence field"
            ),
            BuildError::BorrowTooShort { max_ahead, unit_ms } => write!(
                f,
                "OnExhausted::Borrow max_ahead of {max_ahead:?} is shorter than the {unit_ms} ms time unit"
            ),
            BuildError::RandomStartOutOfRange { bound, capacity } => write!(
                f,
                "random sequence start bound {bound} is out of range (1..={capacity})"
            ),
            BuildError::WindowTooLong { window, max } => write!(
                f,
                "the persistence window of {window:?} is longer than the longest, {max:?}"
            ),
            BuildError::State(e) => e.fmt(f),
            BuildError::Lease(e) => e.fmt(f),
        }
    }
}

/// `Field`, `State` and `Lease` are transparent: their `Display` is the inner
/// error's, so `source` skips to the inner error's source. Returning the inner
/// error itself would make error reporters (anyhow, eyre, `{:#}`) print its
/// message twice.
impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Field(e) => e.source(),
            BuildError::State(e) => e.source(),
            BuildError::Lease(e) => e.source(),
            _ => None,
        }
    }
}

impl From<FieldError> for BuildError {
    fn from(e: FieldError) -> Self {
        BuildError::Field(e)
    }
}

impl From<StateError> for BuildError {
    fn from(e: StateError) -> Self {
        BuildError::State(e)
    }
}

impl From<LeaseError> for BuildError {
    fn from(e: LeaseError) -> Self {
        BuildError::Lease(e)
    }
}

/// A node id could not be leased from etcd or Redis (the `etcd` and `redis`
/// features), or a lease is configured wrongly.
///
/// Building a generator with a lease fails with one of these (inside
/// [`BuildError::Lease`]); a running generator's keeper retries instead, and
/// the generator is fenced ([`GenerateError::Fenced`]) until a claim succeeds.
///
/// ```
/// use flakeid::LeaseError;
///
/// let e = LeaseError::AllHeld { first: 0, last: 1023 };
/// assert_eq!(e.to_string(), "every node id in 0..=1023 is held by another generator");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseError {
    /// Every node id in the range is leased by another generator.
    AllHeld {
        /// The first node id of the range.
        first: u64,
        /// The last node id of the range.
        last: u64,
    },
    /// The server did not answer within the time allowed (refused the
    /// connection, timed out, or the connection broke).
    Unreachable {
        /// The server, as configured.
        server: String,
        /// How long flakeid tried.
        waited: Duration,
        /// The last error seen.
        reason: String,
    },
    /// The server answered something flakeid cannot use: a malformed reply,
    /// or a value under the key prefix that flakeid did not write.
    BadReply {
        /// What was wrong.
        reason: String,
    },
    /// The server refused a request (authentication, permissions, a
    /// read-only replica, out of memory, ...).
    Refused {
        /// The server's error.
        reason: String,
    },
    /// The lease is configured wrongly (a TTL shorter than its safety margin,
    /// a node-id range outside the layout, lease with persistence, ...).
    Config {
        /// What is wrong.
        reason: String,
    },
    /// Every node id in the range that no generator holds has a mark (the
    /// last time its earlier holders may have used) too far past this
    /// generator's clock to issue under it soon: left by a holder whose clock
    /// ran ahead, or written by hand. See
    /// [`Lease::max_mark_ahead`](crate::Lease::max_mark_ahead).
    MarksAhead {
        /// The first node id of the range.
        first: u64,
        /// The last node id of the range.
        last: u64,
        /// How many free node ids were skipped for their marks.
        skipped: u64,
        /// The lowest of them (up to 8), each with its mark in Unix milliseconds.
        lowest: Vec<(u64, u64)>,
        /// The latest mark a claim would take: this generator's clock plus the
        /// bound, in Unix milliseconds.
        usable_until_ms: u64,
    },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::AllHeld { first, last } => write!(
                f,
                "every node id in {first}..={last} is held by another generator"
            ),
            LeaseError::Unreachable {
                server,
                waited,
                reason,
            } => write!(f, "no answer from {server} within {waited:?}: {reason}"),
            LeaseError::BadReply { reason } => {
                write!(f, "unexpected reply from the lease store: {reason}")
            }
            LeaseError::Refused { reason } => {
                write!(f, "the lease store refused the request: {reason}")
            }
            LeaseError::Config { reason } => write!(f, "invalid lease configuration: {reason}"),
            LeaseError::MarksAhead {
                first,
                last,
                skipped,
                lowest,
                usable_until_ms,
            } => {
                write!(
                    f,
                    "every free node id in {first}..={last} ({skipped}) has a mark later than \
                     {usable_until_ms} ms since 1970, the latest this generator's clock can use \
                     soon; the lowest (node id: mark):"
                )?;
                for (node, mark) in lowest {
                    write!(f, " {node}: {mark}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LeaseError {}

/// A node id could not be read from the environment or the host name, or it
/// does not fit the layout (see [`node_id`](crate::node_id)).
///
/// ```
/// use flakeid::{Layout, NodeIdError, node_id};
///
/// let err = node_id::from_hostname("web", &Layout::twitter()).unwrap_err();
/// assert_eq!(err, NodeIdError::NoOrdinal { hostname: "web".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeIdError {
    /// The environment variable is not set.
    NotSet {
        /// The variable's name.
        var: String,
    },
    /// The value is not a non-negative decimal integer.
    NotANumber {
        /// Where it came from, for example `environment variable FLAKEID_NODE_ID`.
        source: String,
        /// The value found.
        value: String,
    },
    /// The host name does not end in `-<ordinal>`, as a StatefulSet pod's
    /// (`web-3`) does.
    NoOrdinal {
        /// The host name.
        hostname: String,
    },
    /// The node id is larger than the layout's largest.
    OutOfRange {
        /// Where it came from.
        source: String,
        /// The node id found.
        value: u64,
        /// The layout's largest node id.
        max: u64,
    },
    /// The host name could not be read.
    Hostname {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for NodeIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeIdError::NotSet { var } => {
                write!(f, "environment variable {var} is not set")
            }
            NodeIdError::NotANumber { source, value } => {
                write!(
                    f,
                    "{source} is {value:?}, not a node id (a decimal integer)"
                )
            }
            NodeIdError::NoOrdinal { hostname } => write!(
                f,
                "host name {hostname:?} does not end in -<ordinal> like a StatefulSet pod's"
            ),
            NodeIdError::OutOfRange { source, value, max } => write!(
                f,
                "node id {value} from {source} is out of the layout's range (0..={max})"
            ),
            NodeIdError::Hostname { reason } => write!(f, "cannot read the host name: {reason}"),
        }
    }
}

impl std::error::Error for NodeIdError {}

/// The saved generator state (the restart-safety high-water marks) is missing
/// a part, damaged, from elsewhere, or cannot be stored.
///
/// A damaged state never silently resets: building fails with one of these
/// until someone decides, with [`Persist::on_invalid_state`](crate::Persist::on_invalid_state),
/// where the new generator may safely start.
///
/// ```
/// use flakeid::{BuildError, Generator, Layout, Persist, StateError};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("flakeid-doc-state-error-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("node-7.state");
/// std::fs::write(&path, "flakeid state v1\ngarbage\ncrc32 00000000\n")?;
/// let err = Generator::builder(Layout::twitter())
///     .node_id(7)
///     .persist(Persist::file(&path))
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, BuildError::State(StateError::Corrupt { .. })));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// The state does not pass its checksum, or a line is malformed.
    Corrupt {
        /// What is wrong.
        reason: String,
    },
    /// The state ends early (a partial write from something other than
    /// flakeid, or a truncated copy).
    Truncated,
    /// The state was written by a newer version of flakeid.
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The state belongs to another layout or node id.
    Mismatch {
        /// What differs, for example `node id 3 (state) vs 7 (generator)`.
        what: String,
    },
    /// Another generator (in this or another process) holds the state.
    Locked {
        /// The lock file.
        path: String,
    },
    /// The state store was already used by a generator built from this builder.
    StoreInUse,
    /// The layout's clock-id field is too wide to keep a mark per clock id.
    ClockIdTooWide {
        /// The field's width.
        bits: u32,
        /// The widest supported.
        max: u32,
    },
    /// A saved mark lies past the layout's last timestamp: no generator
    /// could have issued there, and none could start after it.
    MarkPastEnd {
        /// The clock id whose mark it is.
        clock_id: u64,
        /// The mark, a timestamp-field value as in the state's `mark` line.
        mark: u64,
        /// The layout's last timestamp-field value.
        last: u64,
    },
    /// A saved mark lies further ahead of the clock than a restart accepts:
    /// one day plus the `OnExhausted::Borrow` allowance (see
    /// [`Persist`](crate::Persist)). Either the clock is far behind (fix it)
    /// or the state is not to be trusted (override it with
    /// [`OnInvalidState::Replace`](crate::OnInvalidState::Replace)).
    MarkAhead {
        /// The clock id whose mark it is.
        clock_id: u64,
        /// The mark, a timestamp-field value as in the state's `mark` line.
        mark: u64,
        /// The highest mark accepted with the clock where it is now.
        limit: u64,
    },
    /// The state path does not name a regular file (or a link to one): it is
    /// empty, ends in a directory separator, or names a directory, a FIFO, a
    /// device or a socket.
    NotAFile {
        /// The path as given (with `.lock` appended for the lock file).
        path: String,
        /// What it names instead, for example `a FIFO`.
        what: String,
    },
    /// The saved state is larger than any state flakeid writes.
    TooLarge {
        /// The most a state may take, in bytes.
        limit: u64,
    },
    /// The state store panicked while loading or saving. A save that
    /// panicked counts as a failed save: the previous state stands, and the
    /// save is retried.
    StorePanicked {
        /// The panic's message, if it had one.
        message: String,
    },
    /// Reading or writing the state failed (an unwritable directory, a full
    /// disk, ...).
    Io {
        /// What was being done, for example `write /var/lib/app/node.state.tmp`.
        op: String,
        /// The OS error's kind, for matching.
        kind: std::io::ErrorKind,
        /// The OS error itself: the end of this error's `source()` chain.
        error: SharedIoError,
    },
}

/// An [`std::io::Error`] that clones share, so a [`StateError::Io`] stays
/// `Clone` and keeps the real cause. Two are equal when their kinds and
/// messages are.
///
/// ```
/// use flakeid::{SharedIoError, StateError};
/// use std::error::Error as _;
/// use std::io;
///
/// let e = StateError::from_io("write node.state", io::Error::new(io::ErrorKind::StorageFull, "disk full"));
/// let StateError::Io { error, .. } = &e else { unreachable!() };
/// assert_eq!(error.get().kind(), io::ErrorKind::StorageFull);
/// // The chain ends in the I/O error itself.
/// let cause = e.source().and_then(|s| s.downcast_ref::<io::Error>());
/// assert_eq!(cause.map(|c| c.to_string()), Some("disk full".to_string()));
/// # let _: &SharedIoError = error;
/// ```
#[derive(Debug, Clone)]
pub struct SharedIoError(std::sync::Arc<std::io::Error>);

impl SharedIoError {
    /// The I/O error.
    pub fn get(&self) -> &std::io::Error {
        &self.0
    }
}

impl From<std::io::Error> for SharedIoError {
    fn from(e: std::io::Error) -> Self {
        SharedIoError(std::sync::Arc::new(e))
    }
}

impl PartialEq for SharedIoError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for SharedIoError {}

impl fmt::Display for SharedIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl StateError {
    /// A [`StateError::Io`] for an I/O error that happened while doing `op`
    /// (for [`StateStore`](crate::StateStore) implementations).
    ///
    /// ```
    /// use flakeid::StateError;
    /// use std::io;
    ///
    /// let e = StateError::from_io("write /data/node.state", io::Error::from(io::ErrorKind::StorageFull));
    /// assert_eq!(e.to_string(), "write /data/node.state failed");
    /// assert!(matches!(e, StateError::Io { kind: io::ErrorKind::StorageFull, .. }));
    /// ```
    pub fn from_io(op: impl Into<String>, e: std::io::Error) -> StateError {
        StateError::Io {
            op: op.into(),
            kind: e.kind(),
            error: e.into(),
        }
    }
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::Corrupt { reason } => write!(f, "the saved state is corrupt: {reason}"),
            StateError::Truncated => write!(f, "the saved state is truncated"),
            StateError::UnsupportedVersion { found, supported } => write!(
                f,
                "the saved state has format version {found}; this build reads up to {supported}"
            ),
            StateError::Mismatch { what } => {
                write!(f, "the saved state belongs to another generator: {what}")
            }
            StateError::Locked { path } => write!(
                f,
                "another generator holds the state (lock file {path} is locked)"
            ),
            StateError::StoreInUse => {
                write!(f, "the state store is already used by another generator")
            }
            StateError::ClockIdTooWide { bits, max } => write!(
                f,
                "a {bits}-bit clock-id field is too wide to persist (at most {max} bits)"
            ),
            StateError::MarkPastEnd {
                clock_id,
                mark,
                last,
            } => write!(
                f,
                "the saved mark {mark} of clock id {clock_id} is past the layout's last \
                 timestamp {last}"
            ),
            StateError::MarkAhead {
                clock_id,
                mark,
                limit,
            } => write!(
                f,
                "the saved mark {mark} of clock id {clock_id} is too far ahead of the clock \
                 (at most {limit} is accepted now: the clock plus one day and the borrow \
                 allowance); fix the clock or replace the state"
            ),
            StateError::NotAFile { path, what } => {
                write!(f, "the state path `{path}` is not a regular file: {what}")
            }
            StateError::TooLarge { limit } => write!(
                f,
                "the saved state is larger than {limit} bytes, more than any state takes"
            ),
            StateError::StorePanicked { message } => {
                write!(f, "the state store panicked: {message}")
            }
            // The I/O error is the source, which reporters print after this.
            StateError::Io { op, .. } => write!(f, "{op} failed"),
        }
    }
}

impl std::error::Error for StateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StateError::Io { error, .. } => Some(error.get()),
            _ => None,
        }
    }
}

/// An ID could not be issued.
///
/// `try_next_id` returns these; `next_id` waits through the ones a policy says to
/// wait for and panics on the rest (see [`Generator::next_id`](crate::Generator::next_id)).
///
/// ```
/// use flakeid::{GenerateError, Generator, Layout, ManualClock, OnExhausted};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let clock = ManualClock::new(1_700_000_000_000);
/// let layout = Layout::builder()
///     .epoch_ms(1_600_000_000_000)
///     .timestamp_bits(41)
///     .node("worker", 10)
///     .sequence(1)
///     .build()?;
/// let generator = Generator::builder(layout)
///     .clock(clock)
///     .on_exhausted(OnExhausted::Error)
///     .build()?;
/// generator.try_next_id()?;
/// generator.try_next_id()?;
/// // Two sequence values per millisecond, and the clock stands still.
/// assert!(matches!(
///     generator.try_next_id(),
///     Err(GenerateError::SequenceExhausted { .. })
/// ));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GenerateError {
    /// The current tick's sequence is used up and the policy says not to wait
    /// (`OnExhausted::Error`), or (from `poll_id`) an ID needs a later tick.
    SequenceExhausted {
        /// About how long until the next tick can be used.
        retry_after: Duration,
    },
    /// The clock reads earlier than the last issued timestamp and the policy
    /// says to refuse (`OnClockBehind::Error`), or the wait it allowed
    /// (`OnClockBehind::Wait`) ran out, or (from `poll_id`) it says to wait.
    ClockBehind {
        /// How far the clock is behind.
        behind: Duration,
    },
    /// The clock is past the last instant the layout can encode.
    Expired {
        /// The layout's last instant, in Unix milliseconds.
        last_ms: u64,
    },
    /// (from `poll_id`) The next ID needs a later tick than the saved
    /// reservation covers, or than a leased node id's store has recorded for
    /// this holder; the reservation (or the lease's ceiling) is being extended.
    Reserving,
    /// The reservation cannot be saved (the store returned an error or
    /// panicked), so no ID past the saved one may be issued. `try_next_id`
    /// (and `poll_id`) report it; `next_id` waits for storage to recover.
    Storage(StateError),
    /// The node id is leased and the lease cannot be proven valid right now
    /// (renewals failing, or no node id claimed yet). `try_next_id` reports
    /// it; `next_id` waits for a fresh claim.
    Fenced,
}

impl GenerateError {
    /// True if trying again later may succeed: every error but
    /// [`Expired`](GenerateError::Expired), after which the layout can encode
    /// no more time.
    ///
    /// ```
    /// use flakeid::GenerateError;
    /// use std::time::Duration;
    ///
    /// assert!(GenerateError::SequenceExhausted { retry_after: Duration::from_millis(1) }.is_transient());
    /// assert!(!GenerateError::Expired { last_ms: 0 }.is_transient());
    /// ```
    pub const fn is_transient(&self) -> bool {
        !matches!(self, GenerateError::Expired { .. })
    }
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenerateError::SequenceExhausted { retry_after } => write!(
                f,
                "the sequence of the current tick is used up (next tick in about {retry_after:?})"
            ),
            GenerateError::ClockBehind { behind } => {
                write!(
                    f,
                    "the clock is {behind:?} behind the last issued timestamp"
                )
            }
            GenerateError::Expired { last_ms } => write!(
                f,
                "the clock is past the layout's last instant ({last_ms} ms since 1970)"
            ),
            GenerateError::Reserving => {
                write!(f, "the reservation of later timestamps is being saved")
            }
            GenerateError::Storage(e) => write!(f, "cannot save the reservation: {e}"),
            GenerateError::Fenced => write!(
                f,
                "the node-id lease cannot be proven valid; no id is issued until it is renewed"
            ),
        }
    }
}

/// `Storage`'s `Display` already ends with the storage error, so `source`
/// skips to that error's own source (see [`BuildError`]'s).
impl std::error::Error for GenerateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GenerateError::Storage(e) => e.source(),
            _ => None,
        }
    }
}

/// A string is not a valid string form of an [`Id`](crate::Id) (decimal,
/// or one of the [`IdFormat`](crate::IdFormat)s).
///
/// ```
/// use flakeid::{Id, ParseIdError};
///
/// assert_eq!("".parse::<Id>(), Err(ParseIdError::Empty));
/// assert_eq!(
///     "12a4".parse::<Id>(),
///     Err(ParseIdError::InvalidCharacter { position: 2, character: 'a' })
/// );
/// assert_eq!("18446744073709551616".parse::<Id>(), Err(ParseIdError::Overflow));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseIdError {
    /// The string is empty.
    Empty,
    /// A character is not a digit of the form being parsed.
    InvalidCharacter {
        /// Its byte offset in the string.
        position: usize,
        /// The character.
        character: char,
    },
    /// The number is larger than 2^64 - 1.
    Overflow,
    /// The string has more characters than the form ever takes.
    TooLong {
        /// Its length in characters.
        length: usize,
        /// The most the form takes.
        max: usize,
    },
}

impl fmt::Display for ParseIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseIdError::Empty => write!(f, "cannot parse an id from an empty string"),
            ParseIdError::InvalidCharacter {
                position,
                character,
            } => write!(f, "invalid character {character:?} at position {position}"),
            ParseIdError::Overflow => write!(f, "the number is larger than 2^64 - 1"),
            ParseIdError::TooLong { length, max } => write!(
                f,
                "the string is {length} characters long; the form takes at most {max}"
            ),
        }
    }
}

impl std::error::Error for ParseIdError {}

/// An [`Id`](crate::Id) does not fit an `i64`, or an `i64` is negative.
///
/// ```
/// use flakeid::Id;
///
/// assert!(i64::try_from(Id::from(u64::MAX)).is_err());
/// assert!(Id::try_from(-1_i64).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertIdError {
    pub(crate) negative: bool,
}

impl fmt::Display for ConvertIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            write!(f, "a negative integer is not an id")
        } else {
            write!(f, "the id is larger than i64::MAX")
        }
    }
}

impl std::error::Error for ConvertIdError {}

/// An ID or a width does not fit a [`PublicIds`](crate::PublicIds) permutation.
///
/// ```
/// use flakeid::{Id, PublicIdError, PublicIds};
///
/// let public_ids = PublicIds::new([1; 16]);
/// let err = public_ids.to_public(Id::MAX).unwrap_err();
/// assert_eq!(err, PublicIdError::OutOfRange { id: u64::MAX, bits: 63 });
/// assert_eq!(err.to_string(), "id 18446744073709551615 is outside the 63-bit public-id domain");
/// ```
#[cfg(feature = "public-ids")]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublicIdError {
    /// The value is 2^`bits` or more.
    OutOfRange {
        /// The value given.
        id: u64,
        /// The permutation's width.
        bits: u32,
    },
    /// The width is outside 32..=64 bits.
    UnsupportedWidth {
        /// The width given.
        bits: u32,
    },
}

#[cfg(feature = "public-ids")]
impl fmt::Display for PublicIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublicIdError::OutOfRange { id, bits } => {
                write!(f, "id {id} is outside the {bits}-bit public-id domain")
            }
            PublicIdError::UnsupportedWidth { bits } => write!(
                f,
                "a {bits}-bit public-id domain is not supported (32 to 64 bits)"
            ),
        }
    }
}

#[cfg(feature = "public-ids")]
impl std::error::Error for PublicIdError {}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    /// What an error reporter prints: the messages of `e` and its sources.
    fn report(e: &(dyn Error + 'static)) -> String {
        let mut text = e.to_string();
        let mut next = e.source();
        while let Some(inner) = next {
            text = format!("{text}: {inner}");
            next = inner.source();
        }
        text
    }

    #[test]
    fn a_wrapped_error_is_reported_once() {
        let state = StateError::from_io(
            "write /data/node.state.tmp",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device"),
        );
        let field = FieldError::OutOfRange {
            field: "node".into(),
            value: 5000,
            max: 1023,
        };
        let lease = LeaseError::AllHeld { first: 0, last: 7 };
        let cases: [(Box<dyn Error>, String); 4] = [
            (
                Box::new(BuildError::Field(field.clone())),
                field.to_string(),
            ),
            (
                Box::new(BuildError::State(state.clone())),
                state.to_string(),
            ),
            (
                Box::new(BuildError::Lease(lease.clone())),
                lease.to_string(),
            ),
            (
                Box::new(GenerateError::Storage(state.clone())),
                state.to_string(),
            ),
        ];
        for (error, inner) in cases {
            let text = report(&*error);
            assert_eq!(text.matches(&inner).count(), 1, "{text}");
            assert_eq!(
                text.matches("no space left on device").count(),
                text.contains("node.state") as usize,
                "{text}"
            );
        }
        // The chain of a storage failure ends in the I/O error itself.
        let error = GenerateError::Storage(state);
        let mut last: &(dyn Error + 'static) = &error;
        while let Some(next) = last.source() {
            last = next;
        }
        let io = last.downcast_ref::<std::io::Error>().expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(
            report(&error),
            "cannot save the reservation: write /data/node.state.tmp failed: \
             no space left on device"
        );
    }

    #[test]
    fn every_error_can_cross_threads() {
        fn assert_error<E: Error + Send + Sync + 'static>() {}
        assert_error::<LayoutError>();
        assert_error::<FieldError>();
        assert_error::<BuildError>();
        assert_error::<LeaseError>();
        assert_error::<NodeIdError>();
        assert_error::<StateError>();
        assert_error::<GenerateError>();
        assert_error::<ParseIdError>();
        assert_error::<ConvertIdError>();
        #[cfg(feature = "public-ids")]
        assert_error::<PublicIdError>();
    }
}
