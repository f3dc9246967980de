//! The default state store: one file, replaced atomically, guarded by a lock file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::StateStore;
use crate::error::StateError;

/// How long opening waits for a lock that is being released.
const LOCK_GRACE: Duration = Duration::from_millis(250);

/// Keeps the saved state in a file.
///
/// Each save writes `<path>.tmp`, fsyncs it, renames it over `<path>` and
/// fsyncs the directory, so a crash at any point leaves either the old state
/// or the new one, never a mix. The store holds an exclusive lock on
/// `<path>.lock` while it lives, so a second generator (in this process or
/// another) pointed at the same file is refused.
///
/// ```
/// use flakeid::{FileStore, StateError};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("flakeid-doc-file-store-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("node-1.state");
/// let first = FileStore::open(&path)?;
/// assert!(matches!(FileStore::open(&path), Err(StateError::Locked { .. })));
/// drop(first);
/// assert!(FileStore::open(&path).is_ok());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    tmp: PathBuf,
    dir: PathBuf,
    /// Held for the store's lifetime; closing it releases the lock.
    _lock: File,
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

impl FileStore {
    /// Opens the store at `path` and takes its lock. The file need not exist;
    /// its directory must.
    ///
    /// # Errors
    ///
    /// [`StateError::Locked`] if another store holds the lock (after waiting
    /// up to 250 ms for a lock that is being released);
    /// [`StateError::Io`] if the lock file cannot be created (a missing or
    /// unwritable directory).
    pub fn open(path: impl AsRef<Path>) -> Result<FileStore, StateError> {
        let path = path.as_ref().to_path_buf();
        let lock_path = with_suffix(&path, ".lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StateError::from_io(format!("open {}", lock_path.display()), &e))?;
        // A lock released a moment ago can still look held: a process that
        // spawns a command while the old store closes leaves a copy of the
        // descriptor in the child until it execs. Such a copy goes within
        // milliseconds; a live generator's lock does not.
        let deadline = Instant::now() + LOCK_GRACE;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(StateError::Locked {
                        path: lock_path.display().to_string(),
                    });
                }
                Err(fs::TryLockError::Error(e)) => {
                    return Err(StateError::from_io(
                        format!("lock {}", lock_path.display()),
                        &e,
                    ));
                }
            }
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(FileStore {
            tmp: with_suffix(&path, ".tmp"),
            path,
            dir,
            _lock: lock,
        })
    }

    /// The state file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_tmp(&self, state: &[u8]) -> io::Result<()> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&self.tmp)?;
        file.write_all(state)?;
        file.sync_all()
    }
}

impl StateStore for FileStore {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        match fs::read(&self.path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StateError::from_io(
                format!("read {}", self.path.display()),
                &e,
            )),
        }
    }

    fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
        self.write_tmp(state)
            .map_err(|e| StateError::from_io(format!("write {}", self.tmp.display()), &e))?;
        fs::rename(&self.tmp, &self.path).map_err(|e| {
            StateError::from_io(
                format!("rename {} to {}", self.tmp.display(), self.path.display()),
                &e,
            )
        })?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StateError::from_io(format!("sync directory {}", self.dir.display()), &e))
    }
}
