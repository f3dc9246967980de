//! Restart safety within one test process: saved marks, restarts from the
//! state a crash would leave, stepped-back clocks, bad state files, locks,
//! failing stores, state paths that are not files, and (as root) read-only
//! and full filesystems.
//!
//! "The state a crash would leave" is a copy of the state file taken while
//! the generator runs: whatever moment a crash hits, the file holds one of
//! the states written so far (writes are atomic renames).
//!
//! One test binary; each module one kind of case. This file holds what they
//! share: the layout, the clock times, the test directories and the readers
//! of a saved state.

mod bad_state;
mod locks;
mod needs_root;
mod paths;
mod restarts;
mod storage;

use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use flakeid::{BuildError, Generator, Id, Layout, ManualClock, Persist};
use flakeid_test_servers::ScratchDir;

pub(crate) const EPOCH: u64 = 1_600_000_000_000;
pub(crate) const T: u64 = 1_700_000_000_000;

pub(crate) fn layout() -> Layout {
    Layout::builder()
        .epoch_ms(EPOCH)
        .timestamp_bits(41)
        .node("worker", 10)
        .sequence(12)
        .build()
        .unwrap()
}

/// Taken shared by every test with a state directory, and exclusively by the
/// tests that start processes.
///
/// The tests run as threads of one process. A child process holds a copy of
/// each file this process has open, each store's lock included, from its
/// fork until its exec. A test that drops a generator and builds another on
/// the same file would meanwhile find its own lock held. `FileStore` waits
/// 250 ms for such a copy to go, which would make the test depend on the child
/// being scheduled within that real-time window.
static PROCESSES: RwLock<()> = RwLock::new(());

/// A test's turn with respect to [`PROCESSES`], held as long as its directory.
#[expect(dead_code, reason = "held for its drop")]
enum Turn {
    Shared(RwLockReadGuard<'static, ()>),
    Exclusive(RwLockWriteGuard<'static, ()>),
}

/// A fresh directory for one test, removed when dropped.
pub(crate) struct TempDir(
    ScratchDir,
    #[expect(dead_code, reason = "held for its drop")] Turn,
);

impl TempDir {
    /// For a test that starts no process.
    pub(crate) fn new(name: &str) -> TempDir {
        TempDir::with(
            name,
            Turn::Shared(PROCESSES.read().unwrap_or_else(PoisonError::into_inner)),
        )
    }

    /// For a test that starts processes: none of the others runs meanwhile.
    pub(crate) fn starting_processes(name: &str) -> TempDir {
        TempDir::with(
            name,
            Turn::Exclusive(PROCESSES.write().unwrap_or_else(PoisonError::into_inner)),
        )
    }

    fn with(name: &str, turn: Turn) -> TempDir {
        TempDir(ScratchDir::on_disk(&format!("restart-{name}")), turn)
    }

    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }

    pub(crate) fn file(&self) -> PathBuf {
        self.path().join("node.state")
    }
}

/// Node 7 on `layout()` and `clock`, persisted as `persist` says.
pub(crate) fn node_7(
    clock: &ManualClock,
    persist: Persist,
) -> Result<Generator<ManualClock>, BuildError> {
    Generator::builder(layout())
        .node_id(7)
        .clock(clock.clone())
        .persist(persist)
        .build()
}

/// The `mark C T` lines of a saved state.
pub(crate) fn marks(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("mark "))
        .map(|m| {
            let (c, t) = m.split_once(' ').unwrap();
            (c.parse().unwrap(), t.parse().unwrap())
        })
        .collect()
}

pub(crate) fn file_marks(path: &Path) -> Vec<(u64, u64)> {
    marks(&std::fs::read_to_string(path).unwrap())
}

pub(crate) fn ts(layout: &Layout, id: Id) -> u64 {
    layout.decode(id).unwrap().timestamp()
}

pub(crate) fn tick(ms: u64) -> u64 {
    ms - EPOCH
}
