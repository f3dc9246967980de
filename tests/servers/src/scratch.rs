//! Scratch directories: a server's data, a cluster's data and logs, a
//! fault run's records. Each is named by [`crate::unique_prefix`] (so
//! [`crate::sweep_stale_members`] can tell whose it is), and removed when
//! dropped, unless the thread is panicking (a failed test keeps what it
//! left, and says where) or `FLAKEID_KEEP_TEST_DIRS` is set.

use std::path::{Path, PathBuf};

/// What keeps every scratch directory after its test.
pub const KEEP_VAR: &str = "FLAKEID_KEEP_TEST_DIRS";

/// tmpfs (`/dev/shm`) where there is one, else the temp dir: fsync is then
/// cheap, and the tests time the lease logic, not the disk.
pub fn scratch_base() -> PathBuf {
    if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    }
}

/// A directory removed when dropped; see the module docs (`src/scratch.rs`).
pub struct ScratchDir(pub PathBuf);

impl ScratchDir {
    /// A new directory under [`scratch_base`] (memory: small data).
    pub fn new(name: &str) -> ScratchDir {
        ScratchDir::under(&scratch_base(), name)
    }

    /// A new directory under the temp dir (disk: a long run's records).
    pub fn on_disk(name: &str) -> ScratchDir {
        ScratchDir::under(&std::env::temp_dir(), name)
    }

    /// A new directory under `base`.
    pub fn under(base: &Path, name: &str) -> ScratchDir {
        let dir = base.join(crate::unique_prefix(name));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        ScratchDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The directory, no longer removed when this is dropped.
    pub fn keep(self) -> PathBuf {
        let this = std::mem::ManuallyDrop::new(self);
        this.0.clone()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os(KEEP_VAR).is_some() {
            eprintln!("kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
