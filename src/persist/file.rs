//! The default state store: one file, replaced atomically, guarded by a lock file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{MAX_STATE_BYTES, StateStore};
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
/// The state must be a regular file (or a link to one) of at most 64 KiB; a
/// state takes well under that. Anything else at the path (a directory, a
/// FIFO, a device, a dangling link) is refused rather than opened: reading a
/// FIFO would block, and a device could be read without end.
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

/// Refuses a path that names no file: empty, `/`, `..`, or ending in a
/// separator (`dir/` would put the lock file inside `dir`).
fn names_a_file(path: &Path) -> Result<(), StateError> {
    let ends_in_separator = path
        .as_os_str()
        .to_string_lossy()
        .ends_with(std::path::is_separator);
    if path.file_name().is_none() || ends_in_separator {
        return Err(StateError::NotAFile {
            path: path.display().to_string(),
            what: "it names no file".into(),
        });
    }
    Ok(())
}

/// Whether `path` exists as a regular file (following links); an error if
/// it exists as anything else. Reading metadata never blocks, unlike
/// opening a FIFO.
fn regular_or_missing(path: &Path) -> Result<bool, StateError> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(meta) => Err(not_a_file(path, &meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // A dangling link is "missing" to `metadata`, but the path is
            // taken: creating through it would write wherever it points.
            match fs::symlink_metadata(path) {
                Ok(_) => Err(StateError::NotAFile {
                    path: path.display().to_string(),
                    what: "a link to nothing".into(),
                }),
                Err(_) => Ok(false),
            }
        }
        Err(e) => Err(StateError::from_io(
            format!("inspect {}", path.display()),
            e,
        )),
    }
}

fn not_a_file(path: &Path, meta: &fs::Metadata) -> StateError {
    let kind = meta.file_type();
    let what = if kind.is_dir() {
        "a directory"
    } else {
        kind_name(&kind)
    };
    StateError::NotAFile {
        path: path.display().to_string(),
        what: what.into(),
    }
}

#[cfg(unix)]
fn kind_name(kind: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn kind_name(_: &fs::FileType) -> &'static str {
    "not a regular file"
}

impl FileStore {
    /// Opens the store at `path` and takes its lock. The file need not exist;
    /// its directory must.
    ///
    /// # Errors
    ///
    /// [`StateError::NotAFile`] if `path` names no file (it is empty or ends
    /// in a separator) or names something other than a regular file (a
    /// directory, a FIFO, a device, or a link to one), or if `<path>.lock`
    /// does; nothing is created then.
    /// [`StateError::Locked`] if another store holds the lock (after waiting
    /// up to 250 ms for a lock that is being released);
    /// [`StateError::Io`] if the lock file cannot be created (a missing or
    /// unwritable directory).
    ///
    /// ```
    /// use flakeid::{FileStore, StateError, StateStore};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = std::env::temp_dir().join(format!("flakeid-doc-file-open-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let mut store = FileStore::open(dir.join("node-1.state"))?; // the file need not exist
    /// assert_eq!(store.load()?, None);
    /// assert!(matches!(FileStore::open(&dir), Err(StateError::NotAFile { .. })));
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<FileStore, StateError> {
        let path = path.as_ref().to_path_buf();
        // Checked before anything is created: an empty path would put
        // `.lock` and `.tmp` in the working directory.
        names_a_file(&path)?;
        let lock_path = with_suffix(&path, ".lock");
        regular_or_missing(&path)?;
        regular_or_missing(&lock_path)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StateError::from_io(format!("open {}", lock_path.display()), e))?;
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
                        e,
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
    ///
    /// ```
    /// use flakeid::{FileStore, StateStore};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = std::env::temp_dir().join(format!("flakeid-doc-file-path-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("node-1.state");
    /// let mut store = FileStore::open(&path)?;
    /// assert_eq!(store.path(), path);
    /// store.save(b"state")?;
    /// assert_eq!(std::fs::read(store.path())?, b"state");
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_tmp(&self, state: &[u8]) -> io::Result<()> {
        // A new file every time: whatever a crash (or anyone) left at the
        // temporary path, a FIFO or a link included, is replaced, never
        // opened.
        match fs::remove_file(&self.tmp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&self.tmp)?;
        file.write_all(state)?;
        file.sync_all()
    }
}

impl StateStore for FileStore {
    /// Reads at most 64 KiB, and only from a regular file: opening a FIFO
    /// would block until a writer came, and a link to a device could be read
    /// without end.
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        let read_error =
            |e: io::Error| StateError::from_io(format!("read {}", self.path.display()), e);
        if !regular_or_missing(&self.path)? {
            return Ok(None);
        }
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read_error(e)),
        };
        // What was opened, in case the path changed since it was checked.
        let meta = file.metadata().map_err(read_error)?;
        if !meta.is_file() {
            return Err(not_a_file(&self.path, &meta));
        }
        let mut bytes = Vec::new();
        file.take(MAX_STATE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if bytes.len() as u64 > MAX_STATE_BYTES {
            return Err(StateError::TooLarge {
                limit: MAX_STATE_BYTES,
            });
        }
        Ok(Some(bytes))
    }

    fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
        self.write_tmp(state)
            .map_err(|e| StateError::from_io(format!("write {}", self.tmp.display()), e))?;
        fs::rename(&self.tmp, &self.path).map_err(|e| {
            StateError::from_io(
                format!("rename {} to {}", self.tmp.display(), self.path.display()),
                e,
            )
        })?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StateError::from_io(format!("sync directory {}", self.dir.display()), e))
    }
}
