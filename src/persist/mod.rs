//! Restart safety: a durable high-water mark of the timestamps a generator
//! may issue, reserved ahead of use ([`Builder::persist`](crate::Builder::persist)).
//!
//! A monotonic clock protects a generator only while its process lives. If the
//! process crashes and the wall clock is stepped back before it restarts (NTP, a
//! VM migration, a wrong manual setting), a plain generator reissues IDs. With
//! persistence on, flakeid closes that gap exactly:
//!
//! ```rust
//! use flakeid::{Generator, Layout, Persist};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("flakeid-readme-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # let path = dir.join("node-7.state");
//! let generator = Generator::builder(Layout::twitter())
//!     .node_id(7)
//!     .persist(Persist::file(&path).window(Duration::from_secs(1)))
//!     .build()?; // fails here, before any ID, if the state can't be read or written
//! let id = generator.next_id();
//! # drop(generator);
//! # std::fs::remove_dir_all(&dir)?;
//! # let _ = id;
//! # Ok(())
//! # }
//! ```
//!
//! **The guarantee.** No ID with a timestamp after `T` is issued unless `T` was
//! first made durable. A background writer keeps a saved mark about one window
//! ahead of the timestamps in use (it saves when half the window is used, so
//! about twice per window while IDs are made, and not at all while none are); a
//! thread waits for storage only if generation outruns the mark. A restarted
//! generator treats everything up to its predecessor's mark as issued and starts
//! after it. On a clean stop (the generator is dropped) the exact last timestamp
//! is saved instead, so a prompt restart need not wait.
//!
//! **At start, if the clock reads behind the mark** (it was set back, or the
//! crashed process had reserved up to a window ahead), the `OnClockBehind` policy
//! applies as to any clock step: `Continue` waits for the clock to pass the mark
//! (up to the step plus one window; with `OnExhausted::NextClock` it first issues
//! at once in the mark's tick, ahead of the clock, under the clock ids above the
//! one it starts on whose own marks are behind that tick, and waits only when
//! none is left), `Wait { max }` waits at most `max`, `Error` reports,
//! `NextClock` moves to a clock id whose own mark is behind the clock.
//! `OnExhausted::Borrow { max_ahead }` with `max_ahead` above the step continues
//! at once, logically, right after the mark. Alternatively
//! `RestartRule::NextClockId` (the multi-clock scheme, for layouts with a clock-id
//! field) moves to the next clock id at every start and issues at the real time;
//! each clock id keeps its own mark, so one that comes round again is used only
//! after its old mark.
//!
//! **Storage.** A file by default (`FileStore`): written to `<path>.tmp`,
//! fsynced, renamed over `<path>`, and the directory fsynced, so a crash leaves
//! the old state or the new, never a mix. `<path>.lock` is locked while the
//! generator lives; a second generator on the same file is refused
//! (`StateError::Locked`). Implement `StateStore` to keep the state elsewhere.
//!
//! **Bad state never silently resets.** A missing file on first start is normal.
//! A corrupt (`StateError::Corrupt`), truncated (`Truncated`), newer-versioned
//! (`UnsupportedVersion`) or foreign (`Mismatch`: another layout or node id)
//! state fails the build, and so does a mark past the layout's end
//! (`MarkPastEnd`) or more than a day plus the `Borrow` allowance ahead of the
//! clock (`MarkAhead`: the clock or the state is wrong, and starting after it
//! would wait that long; a reserved window, at most an hour, is far less). The
//! override is explicit:
//! `Persist::on_invalid_state(OnInvalidState::Replace { issued_until_ms })`, an
//! operator's word that this node issued nothing after that instant. An
//! unwritable directory or a full disk fails the build too (`StateError::Io`), as
//! does a state path that is not a regular file (`NotAFile`: a FIFO, a device, a
//! directory) or a state over 64 KiB (`TooLarge`); if storage fails later
//! (an error or a panic in `StateStore::save`), IDs continue up to the saved
//! mark, then `try_next_id` returns `GenerateError::Storage` and `next_id` waits
//! for storage to recover.
//!
//! **The file format** (text, one item per line, CRC-32 of all bytes before the
//! last line):
//!
//! ```text
//! flakeid state v1
//! generator epoch=1600000000000 unit=1 fields=timestamp:41,worker:10,sequence:12 node=7
//! clock 0
//! mark 0 123456789012
//! crc32 8005e40f
//! ```
//!
//! `mark C T`: no ID with clock id `C` and a timestamp field above `T` was issued.
//!
//! **Limits.** The guarantee rests on the storage keeping what it acknowledged
//! (`fsync` that means it) and on the state file going wherever the node id goes.
//! Every crash forfeits up to one window of timestamps (the reserved, unused
//! part); a restart that finds the clock behind the mark reserves nothing new
//! until an ID needs a tick past it, so restarts that issue nothing cost
//! nothing. A crash loop whose processes live shorter than the window and do
//! issue IDs pushes the mark ahead of the clock by up to a window per crash;
//! choose a window shorter than the time a process usually lives.
//! It does not protect two live processes that share a node id without sharing
//! the file (see the node-id leases of `flakeid::lease`, features `etcd` and `redis`), nor a
//! state file restored from an old backup. Clock-id fields wider than 10 bits cannot be persisted.
//!
//! **Moving a node to another machine.** Stop the old process (a clean stop saves
//! the exact mark), copy the state file to the new machine, start there. If the
//! old machine is gone and its file with it, start the new one with
//! `OnInvalidState::Replace { issued_until_ms }` set to a time you know is later
//! than anything the old node issued (for example the time of the move plus the
//! largest clock error you believe possible), or give the new process a node id
//! that has never been used.
//!
//! **Tested by** `tests/restart.rs` (crash images, stepped-back clocks, every bad
//! state, locks, read-only and full filesystems, a failing store) and
//! `tests/restart_crash.rs`: a child process streams IDs to the parent, which
//! SIGKILLs it 50 times per scenario and restarts it with its wall clock set
//! back by up to 10 s. It kills at random points, after the child's first ID,
//! and inside a save between the temporary file's write and its rename. The
//! union of all IDs must have no duplicate, and every child started after a
//! crash inside a save must issue. The full run: `FLAKEID_CRASH_KILLS=500 cargo test --release --test
//! restart_crash`.

mod file;
mod format;
mod reservation;
mod writer;

use std::any::Any;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use crate::error::{SharedIoError, StateError};
pub use file::FileStore;
pub(crate) use format::SavedState;
pub(crate) use reservation::Reservation;
pub(crate) use writer::Persister;

use crate::error::BuildError;
use crate::events::Events;
use crate::layout::{Layout, mask};
use crate::primitive::{AtomicBool, AtomicU64, Mutex};
use writer::{SaveTimer, Writer};

/// The widest clock-id field whose marks are kept (one per clock id).
const MAX_CLOCK_ID_BITS: u32 = 10;

/// The largest state accepted, in bytes. A state with a mark for each of the
/// 1,024 clock ids of the widest clock-id field takes under 32 KiB.
pub(crate) const MAX_STATE_BYTES: u64 = 64 * 1024;

/// The longest [`Persist::window`]: a crash forfeits up to one window of
/// timestamps, and a restart may have to wait that long for the clock.
const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// How far ahead of the clock (beyond the `Borrow` allowance) a saved mark is
/// believed at build. A mark is legitimately ahead by the reserved window (at
/// most an hour) plus however far the clock was set back since it was saved;
/// a day covers a wrong time zone or a date off by one. Further ahead, the
/// clock or the state is wrong, and starting after the mark would wait that
/// long: the build refuses instead ([`StateError::MarkAhead`]).
const MAX_MARK_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Where a generator keeps its saved state. [`FileStore`] is the default; put
/// it elsewhere (a database row, a replicated key) by implementing this.
///
/// `save` must be durable when it returns `Ok`: the generator relies on a
/// saved mark surviving a crash of the process and of the machine. A `save`
/// that panics counts as one that failed ([`StateError::StorePanicked`]): the
/// generator retries it, and meanwhile issues nothing past the previous mark.
/// A `load` that panics fails the build the same way. (Not with
/// `panic = "abort"`, where a panic ends the process.)
///
/// ```
/// use flakeid::{StateError, StateStore};
///
/// /// Keeps the state in memory: survives nothing, so only for tests.
/// #[derive(Default)]
/// struct InMemory(Option<Vec<u8>>);
///
/// impl StateStore for InMemory {
///     fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
///         Ok(self.0.clone())
///     }
///     fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
///         self.0 = Some(state.to_vec());
///         Ok(())
///     }
/// }
///
/// let mut store = InMemory::default();
/// store.save(b"state")?;
/// assert_eq!(store.load()?, Some(b"state".to_vec()));
/// # Ok::<(), StateError>(())
/// ```
pub trait StateStore: Send + 'static {
    /// The last saved state, or `None` if nothing was ever saved.
    ///
    /// # Errors
    ///
    /// A [`StateError`] if the state exists but cannot be read.
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError>;

    /// Replaces the saved state, durably and atomically (all or nothing).
    ///
    /// # Errors
    ///
    /// A [`StateError`] if the state cannot be saved; the previous one must
    /// then still be in place.
    fn save(&mut self, state: &[u8]) -> Result<(), StateError>;
}

/// How a restarted generator picks its clock id.
///
/// ```
/// use flakeid::{Generator, Layout, ManualClock, Persist, RestartRule};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("flakeid-doc-restart-rule-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let path = dir.join("node-0.state");
/// # let layout = Layout::builder()
/// #     .epoch_ms(1_600_000_000_000)
/// #     .timestamp_bits(41)
/// #     .clock_id(2)
/// #     .node("worker", 8)
/// #     .sequence(12)
/// #     .build()?;
/// // `layout` has a 2-bit clock-id field.
/// let clock = ManualClock::new(1_700_000_000_000);
/// let builder = Generator::builder(layout.clone()).node_id(1).clock(clock.clone());
/// let rule = RestartRule::NextClockId;
/// let start = || builder.clone().persist(Persist::file(&path).restart_rule(rule)).build();
/// let before = layout.decode(start()?.next_id())?;
/// clock.set_ms(1_699_999_940_000); // set back a minute while it was down
/// let after = layout.decode(start()?.next_id())?;
/// assert_eq!(after.clock_id(), before.clock_id() + 1); // a fresh clock id...
/// assert_eq!(after.unix_ms(), 1_699_999_940_000); // ...at the real time
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum RestartRule {
    /// Continue with the clock id in use when the state was last saved (that
    /// of the latest tick the generator entered), after its saved mark. If
    /// the clock reads behind the mark, the
    /// [`OnClockBehind`](crate::OnClockBehind) policy applies as it would to a
    /// clock stepping back; under [`OnExhausted::NextClock`](crate::OnExhausted::NextClock)
    /// the generator then issues at once in the mark's tick under the lowest
    /// clock id above it that no predecessor used there, and waits for the
    /// clock only when none is left.
    #[default]
    HighWaterMark,
    /// The multi-clock scheme: move to the next clock id at every start and
    /// issue at the real time. Each clock id keeps its own mark, so a clock id
    /// that comes round again is used only after its old mark. Needs a
    /// clock-id field.
    NextClockId,
}

/// What to do when the saved state is damaged, from a newer version, or
/// belongs to another layout or node id.
///
/// ```
/// use flakeid::{BuildError, Generator, Layout, ManualClock, OnInvalidState, Persist, StateError};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("flakeid-doc-on-invalid-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let path = dir.join("node-7.state");
/// let builder = Generator::builder(Layout::twitter()).node_id(1).clock(ManualClock::new(1_700_000_000_000));
/// drop(builder.clone().node_id(7).persist(Persist::file(&path)).build()?);
/// // Node 8 started on node 7's file by mistake: refused, never silently reset.
/// let persist = Persist::file(&path).on_invalid_state(OnInvalidState::Refuse);
/// let err = builder.node_id(8).persist(persist).build().unwrap_err();
/// assert!(matches!(err, BuildError::State(StateError::Mismatch { .. })));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum OnInvalidState {
    /// Refuse to build (the default): never silently reset.
    #[default]
    Refuse,
    /// Replace the saved state, trusting the operator's word that no ID with
    /// a time after `issued_until_ms` (Unix ms) was ever issued by this node.
    /// The new generator starts after that instant, on every clock id.
    Replace {
        /// The last instant any ID of this node may carry.
        issued_until_ms: u64,
    },
}

/// Turns on restart safety for a generator; see
/// [`Builder::persist`](crate::Builder::persist).
///
/// Building checks the saved state before any ID is issued: besides damage
/// and foreign states, it refuses a mark past the layout's last timestamp
/// ([`StateError::MarkPastEnd`]) and a mark more than one day plus the
/// `OnExhausted::Borrow` allowance ahead of the clock
/// ([`StateError::MarkAhead`]): a generator started after such a mark could
/// issue nothing until the clock reached it. A legitimately reserved window
/// (at most an hour) ahead of a clock set back by most of a day passes.
/// [`OnInvalidState::Replace`] overrides both.
///
/// Building blocks for the store's first load and save; the writer then
/// saves on its own thread. Dropping the generator stops the writer and
/// waits for its final save (the exact last timestamp issued): at most the
/// save in progress plus that one, for a [`FileStore`] a write, an fsync and
/// a rename each, usually a few milliseconds. Inside an async runtime that
/// is how long a drop holds its executor thread; with a store that can be
/// slow, drop the generator in `spawn_blocking`.
///
/// ```
/// use flakeid::{Generator, Layout, Persist};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("flakeid-doc-persist-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("node-7.state");
/// let first = {
///     let generator = Generator::builder(Layout::twitter())
///         .node_id(7)
///         .persist(Persist::file(&path).window(Duration::from_secs(1)))
///         .build()?;
///     generator.next_id()
/// }; // dropped: the exact last timestamp is saved
/// let generator = Generator::builder(Layout::twitter())
///     .node_id(7)
///     .persist(Persist::file(&path))
///     .build()?;
/// assert!(generator.next_id() > first);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
#[must_use]
pub struct Persist {
    source: Source,
    window: Duration,
    restart: RestartRule,
    on_invalid: OnInvalidState,
}

#[derive(Clone)]
enum Source {
    File(PathBuf),
    /// Taken by the first build; a builder clone cannot share a store.
    Store(Arc<std::sync::Mutex<Option<Box<dyn StateStore>>>>),
}

impl Persist {
    /// Keeps the state in a [`FileStore`] at `path` (opened when the generator
    /// is built).
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock, Persist};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("flakeid-doc-persist-file-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("node-3.state");
    /// let generator = Generator::builder(Layout::twitter())
    ///     .node_id(3)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .persist(Persist::file(&path))
    ///     .build()?;
    /// assert!(path.exists()); // the first reservation is saved before any ID
    /// # drop(generator);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn file(path: impl Into<PathBuf>) -> Persist {
        Persist::from_source(Source::File(path.into()))
    }

    /// Keeps the state in your own store.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, ManualClock, Persist, StateError};
    /// # use flakeid::StateStore;
    /// # #[derive(Default)]
    /// # struct InMemory(Option<Vec<u8>>);
    /// # impl StateStore for InMemory {
    /// #     fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> { Ok(self.0.clone()) }
    /// #     fn save(&mut self, s: &[u8]) -> Result<(), StateError> { self.0 = Some(s.to_vec()); Ok(()) }
    /// # }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // `InMemory`: the store of the `StateStore` example.
    /// let builder = Generator::builder(Layout::twitter())
    ///     .node_id(1)
    ///     .clock(ManualClock::new(1_700_000_000_000))
    ///     .persist(Persist::store(InMemory::default()));
    /// let generator = builder.clone().build()?;
    /// // The store went to the first generator built; a clone has none to share.
    /// let err = builder.build().unwrap_err();
    /// assert!(matches!(err, BuildError::State(StateError::StoreInUse)));
    /// # drop(generator);
    /// # Ok(())
    /// # }
    /// ```
    pub fn store(store: impl StateStore) -> Persist {
        Persist::from_source(Source::Store(Arc::new(std::sync::Mutex::new(Some(
            Box::new(store),
        )))))
    }

    fn from_source(source: Source) -> Persist {
        Persist {
            source,
            window: Duration::from_secs(1),
            restart: RestartRule::default(),
            on_invalid: OnInvalidState::default(),
        }
    }

    /// How far ahead of the timestamps in use the mark is saved (default 1 s,
    /// at least one tick, at most one hour: building fails with
    /// [`BuildError::WindowTooLong`] past that). A window shorter than twice
    /// the time the store takes to save is lengthened to that (measured at
    /// each save, at most to one second), so generation keeps up with a slow
    /// store instead of chasing the clock. The writer saves about twice
    /// per window while IDs are being made, and not at all while none are.
    /// After a crash, a restart within the window starts after the saved
    /// mark, which may be up to one window ahead of the clock.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, ManualClock, Persist};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("flakeid-doc-persist-window-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("node-0.state");
    /// let builder = Generator::builder(Layout::twitter()).node_id(1).clock(ManualClock::new(1_700_000_000_000));
    /// let five = Persist::file(&path).window(Duration::from_secs(5)); // a crash forfeits up to 5 s
    /// let generator = builder.clone().persist(five).build()?;
    /// # drop(generator);
    /// let two_hours = Persist::file(&path).window(Duration::from_secs(2 * 3600));
    /// let err = builder.persist(two_hours).build().unwrap_err();
    /// assert!(matches!(err, BuildError::WindowTooLong { .. }));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// How a restarted generator picks its clock id.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, Persist, RestartRule};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("flakeid-doc-restart-rule-twitter-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let persist = Persist::file(dir.join("node-0.state")).restart_rule(RestartRule::NextClockId);
    /// // Twitter's layout has no clock-id field to move along.
    /// let err = Generator::builder(Layout::twitter()).node_id(1).persist(persist).build().unwrap_err();
    /// assert!(matches!(err, BuildError::NeedsClockIdField { .. }));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn restart_rule(mut self, rule: RestartRule) -> Self {
        self.restart = rule;
        self
    }

    /// What to do with a saved state that cannot be trusted.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, ManualClock, OnInvalidState, Persist};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("flakeid-doc-on-invalid-state-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("node-0.state");
    /// std::fs::write(&path, "flakeid state v1\ngarbage\ncrc32 00000000\n")?;
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// // The operator's word: this node issued nothing after 1_700_000_000_000.
    /// let replace = OnInvalidState::Replace { issued_until_ms: 1_700_000_000_000 };
    /// let persist = Persist::file(&path).on_invalid_state(replace);
    /// let generator = Generator::builder(Layout::twitter()).node_id(1).clock(clock.clone()).persist(persist).build()?;
    /// assert!(generator.poll_id().is_err()); // nothing at or before that instant
    /// clock.advance(Duration::from_millis(1));
    /// assert_eq!(generator.layout().decode(generator.next_id())?.unix_ms(), 1_700_000_000_001);
    /// # drop(generator);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_invalid_state(mut self, what: OnInvalidState) -> Self {
        self.on_invalid = what;
        self
    }

    pub(crate) fn needs_clock_id_field(&self) -> bool {
        self.restart == RestartRule::NextClockId
    }

    fn open(&self) -> Result<Box<dyn StateStore>, StateError> {
        match &self.source {
            Source::File(path) => Ok(Box::new(FileStore::open(path)?)),
            Source::Store(slot) => slot
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .ok_or(StateError::StoreInUse),
        }
    }
}

impl fmt::Debug for Persist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            Source::File(path) => format!("file {}", path.display()),
            Source::Store(_) => "custom store".to_string(),
        };
        f.debug_struct("Persist")
            .field("source", &source)
            .field("window", &self.window)
            .field("restart", &self.restart)
            .field("on_invalid", &self.on_invalid)
            .finish()
    }
}

/// What a persistent generator starts from.
pub(crate) struct Started {
    pub(crate) reservation: Arc<Reservation>,
    pub(crate) persister: Persister,
    /// The clock id to start on.
    pub(crate) clock_id: u64,
    /// The saved mark of that clock id: its ticks up to here count as used.
    pub(crate) floor: Option<u64>,
}

/// Opens the store, checks the saved state, saves the first reservation and
/// starts the writer, all before any ID can be issued.
pub(crate) fn start(
    persist: &Persist,
    layout: &Layout,
    node_id: u64,
    configured_clock_id: u64,
    now_tick: u64,
    lead: Duration,
    events: &Events,
) -> Result<Started, BuildError> {
    if persist.window > MAX_WINDOW {
        return Err(BuildError::WindowTooLong {
            window: persist.window,
            max: MAX_WINDOW,
        });
    }
    let clock_bits = layout.clock_id_bits();
    if clock_bits > MAX_CLOCK_ID_BITS {
        return Err(StateError::ClockIdTooWide {
            bits: clock_bits,
            max: MAX_CLOCK_ID_BITS,
        }
        .into());
    }
    if persist.needs_clock_id_field() && clock_bits == 0 {
        return Err(BuildError::NeedsClockIdField {
            policy: "RestartRule::NextClockId",
        });
    }
    let clocks = 1usize << clock_bits;
    let generator = format::describe(layout, node_id);
    let unit = layout.unit_ms();
    let last = layout.timestamp_field().max();
    let ticks = |d: Duration| u64::try_from(d.as_millis() / u128::from(unit)).unwrap_or(u64::MAX);
    let limits = Limits {
        last,
        ahead: now_tick.saturating_add(ticks(MAX_MARK_AHEAD.saturating_add(lead))),
    };
    let mut store = persist.open()?;
    let saved = match guarded(|| store.load())? {
        None => None,
        Some(bytes) => match check(&bytes, &generator, clocks, &limits) {
            Ok(saved) => Some(saved),
            Err(e) => match persist.on_invalid {
                OnInvalidState::Refuse => return Err(e.into()),
                OnInvalidState::Replace { issued_until_ms } => {
                    let tick = layout.timestamp_at_clamped(issued_until_ms);
                    let marks: Vec<(u64, u64)> = (0..clocks as u64).map(|c| (c, tick)).collect();
                    // The operator's word is held to the same limits.
                    limits.check(&marks)?;
                    Some(SavedState {
                        generator: generator.clone(),
                        clock_id: configured_clock_id,
                        marks,
                    })
                }
            },
        },
    };
    let mut floors = vec![0u64; clocks];
    if let Some(saved) = &saved {
        for &(c, tick) in &saved.marks {
            floors[c as usize] = tick;
        }
    }
    let clock_id = match (&saved, persist.restart) {
        (None, _) => configured_clock_id,
        (Some(s), RestartRule::HighWaterMark) => s.clock_id,
        (Some(s), RestartRule::NextClockId) => (s.clock_id + 1) & mask(clock_bits),
    };
    // At most an hour (checked above), so no product below overflows.
    let window = (persist.window.as_millis() as u64).div_ceil(unit).max(1);

    // The first reservation, saved before the generator exists: a store that
    // cannot be written fails the build, not a later call. It covers one
    // window from the clock, and never lowers the predecessor's mark. When
    // the clock reads behind that mark, nothing new is reserved until an ID
    // needs a tick past it: otherwise every restart of a crash loop would push
    // the mark another window ahead of the clock, even if it issued nothing.
    let floor = floors[clock_id as usize];
    // No mark past the layout's end: no ID can need it, and a restart would
    // refuse it.
    let first_mark = floor.max(now_tick.saturating_add(window).min(last));
    let mut marks = floors.clone();
    marks[clock_id as usize] = first_mark;
    let mut template = SavedState {
        generator,
        clock_id,
        marks: Vec::new(),
    };
    template.marks = nonzero(&marks);
    let timer = SaveTimer::start();
    guarded(|| store.save(&template.encode()))?;
    let slack = timer.slack(unit, window);

    let reservation = Arc::new(Reservation {
        ceilings: marks.iter().map(|&m| AtomicU64::new(m)).collect(),
        floors: floors.clone().into_boxed_slice(),
        wanted: (0..clocks).map(|_| AtomicU64::new(0)).collect(),
        // Renewal is driven by ticks in use; none is yet, so the clock is the
        // hint (a mark ahead of it is not renewed until IDs approach it).
        latest: AtomicU64::new(now_tick),
        active: AtomicU64::new(clock_id),
        window,
        last,
        failing: AtomicBool::new(false),
        error: Mutex::new(None),
        writer: OnceLock::new(),
        stop: AtomicBool::new(false),
    });
    let poll = Duration::from_millis((window * unit / 4).clamp(1, 250));
    let writer = Writer {
        reservation: reservation.clone(),
        store,
        template,
        marks,
        poll,
        unit,
        slack,
        events: events.clone(),
    };
    Ok(Started {
        persister: writer.spawn()?,
        reservation,
        clock_id,
        floor: saved.map(|_| floor),
    })
}

/// Decodes a saved state and checks it belongs to this generator and that a
/// generator can start after its marks.
fn check(
    bytes: &[u8],
    generator: &str,
    clocks: usize,
    limits: &Limits,
) -> Result<SavedState, StateError> {
    let saved = SavedState::decode(bytes)?;
    if saved.generator != generator {
        return Err(StateError::Mismatch {
            what: format!("saved for `{}`, not `{generator}`", saved.generator),
        });
    }
    if saved.clock_id as usize >= clocks || saved.marks.iter().any(|&(c, _)| c as usize >= clocks) {
        return Err(StateError::Corrupt {
            reason: "a clock id is out of the layout's range".into(),
        });
    }
    limits.check(&saved.marks)?;
    Ok(saved)
}

/// The highest marks a generator starts after.
struct Limits {
    /// The layout's last timestamp.
    last: u64,
    /// The clock's tick plus [`MAX_MARK_AHEAD`] and the `Borrow` allowance.
    ahead: u64,
}

impl Limits {
    fn check(&self, marks: &[(u64, u64)]) -> Result<(), StateError> {
        for &(clock_id, mark) in marks {
            if mark > self.last {
                return Err(StateError::MarkPastEnd {
                    clock_id,
                    mark,
                    last: self.last,
                });
            }
            if mark > self.ahead {
                return Err(StateError::MarkAhead {
                    clock_id,
                    mark,
                    limit: self.ahead,
                });
            }
        }
        Ok(())
    }
}

/// Runs a call into the store, turning a panic into an error: a panic must
/// not end the writer thread, which would leave callers waiting for saves
/// that never come.
fn guarded<T>(call: impl FnOnce() -> Result<T, StateError>) -> Result<T, StateError> {
    panic::catch_unwind(AssertUnwindSafe(call)).unwrap_or_else(|payload| {
        Err(StateError::StorePanicked {
            message: panic_message(&*payload),
        })
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn nonzero(marks: &[u64]) -> Vec<(u64, u64)> {
    marks
        .iter()
        .enumerate()
        .filter(|&(_, &m)| m > 0)
        .map(|(c, &m)| (c as u64, m))
        .collect()
}
