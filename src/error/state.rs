//! Why the saved state cannot be used or stored.

use std::fmt;

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
    ///
    /// ```
    /// use flakeid::{FileStore, StateError};
    /// use std::io;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let missing = std::env::temp_dir().join(format!("flakeid-doc-missing-{}", std::process::id()));
    /// let Err(StateError::Io { error, .. }) = FileStore::open(missing.join("node.state")) else {
    ///     return Err("expected an I/O error".into());
    /// };
    /// assert_eq!(error.get().kind(), io::ErrorKind::NotFound); // no such directory
    /// # Ok(())
    /// # }
    /// ```
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
