//! Storage that only root can make: a read-only filesystem and a full one,
//! each a small tmpfs mounted for the test. Root ignores permission bits, so
//! no directory is unwritable to it short of a read-only mount.
//!
//! Ignored by a plain `cargo test` (a container's root often may not
//! mount); CI runs them on their own, so a missing capability fails it
//! instead of passing unseen:
//!
//! ```sh
//! cargo test -p flakeid --test restart -- --ignored needs_root::
//! ```
//!
//! As another user they mount through `sudo -n`.

use std::path::{Path, PathBuf};
use std::process::Command;

use flakeid::{BuildError, Generator, ManualClock, Persist, StateError};

use crate::{T, TempDir, layout};

/// A tmpfs mounted on a directory, unmounted when dropped (also when the
/// test fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs with `options` on `dir`; panics, saying why, if it
    /// cannot.
    fn mount(dir: &Path, options: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let dir_arg = dir.to_str().unwrap();
        let mut mount = as_root("mount");
        mount.args(["-t", "tmpfs", "-o", options, "tmpfs", dir_arg]);
        let out = mount
            .output()
            .unwrap_or_else(|e| panic!("cannot run {mount:?}: {e}"));
        assert!(
            out.status.success(),
            "{mount:?} failed ({}): {}this test needs root (or sudo -n) allowed to \
             mount a tmpfs",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = as_root("umount").arg(&self.0).status();
    }
}

/// `program` as root: directly if this process is, else through `sudo -n`.
fn as_root(program: &str) -> Command {
    if flakeid_test_servers::is_root() {
        Command::new(program)
    } else {
        let mut command = Command::new("sudo");
        command.args(["-n", program]);
        command
    }
}

fn build_on(path: PathBuf) -> Result<Generator<ManualClock>, BuildError> {
    Generator::builder(layout())
        .single_node()
        .clock(ManualClock::new(T))
        .persist(Persist::file(path))
        .build()
}

#[test]
#[ignore = "needs root and mount: a read-only tmpfs (CI runs it)"]
fn a_read_only_filesystem_fails_the_build() {
    let dir = TempDir::starting_processes("readonly");
    let ro = Tmpfs::mount(&dir.path().join("ro"), "ro,size=64k");
    match build_on(ro.0.join("node.state")) {
        Err(BuildError::State(StateError::Io { op, kind, .. })) => {
            assert!(op.contains("node.state"), "{op}");
            assert_eq!(kind, std::io::ErrorKind::ReadOnlyFilesystem);
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("a generator was built on a read-only filesystem"),
    }
}

#[test]
#[ignore = "needs root and mount: a full 64 KiB tmpfs (CI runs it)"]
fn a_full_disk_fails_the_build() {
    let dir = TempDir::starting_processes("full");
    let small = Tmpfs::mount(&dir.path().join("small"), "size=64k");
    // Fill it: a write larger than the filesystem stops where it is full.
    let filler = small.0.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let _ = std::io::Write::write_all(&mut f, &vec![0u8; 1 << 20]);
    drop(f);
    match build_on(small.0.join("node.state")) {
        Err(BuildError::State(StateError::Io { kind, .. })) => {
            assert_eq!(kind, std::io::ErrorKind::StorageFull);
        }
        other => panic!("expected a storage-full error, got {other:?}"),
    }
}
