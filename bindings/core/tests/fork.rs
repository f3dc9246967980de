//! Fork safety, in forked children of this test process: a generator with
//! a static node id refuses in the child, one built in the child issues,
//! and with detection turned off the child repeats the parent's IDs (which
//! is what the Python and Node fork tests must catch).
//!
//! One test function, so that no other test thread holds a lock at the
//! fork.

use flakeid_bindings::{Blocked, Config, ErrorKind, Generator, Health, NodeSource, Wait};

/// Runs `f` in a forked child and returns the bytes it wrote.
fn in_child(f: impl FnOnce() -> Vec<u8>) -> Vec<u8> {
    let mut fds = [0; 2];
    // SAFETY: a pipe into a two-int array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: this test is the only thread that allocates or locks while
    // the child runs `f` (the test binary runs one test).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let out = f();
        // SAFETY: writes `out` to the pipe and ends the child without
        // running the parent's exit handlers.
        unsafe {
            libc::write(fds[1], out.as_ptr().cast(), out.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closes the parent's write end, reads to EOF, reaps the child.
    unsafe {
        libc::close(fds[1]);
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            let n = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        libc::close(fds[0]);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert!(libc::WIFEXITED(status), "child status {status}");
        out
    }
}

fn config(node: u64) -> Config {
    let mut config = Config::new("twitter").unwrap();
    config.node = NodeSource::Id(node);
    config
}

#[test]
fn a_forked_child_refuses_an_inherited_static_generator() {
    let generator = Generator::build(config(7)).unwrap();
    let first = generator.id_blocking(Wait::Always).unwrap();
    // Moved into the child's closure, and dropped there.
    let inherited = Generator::build(config(9)).unwrap();

    let out = in_child(|| {
        let now = match generator.id_now(Wait::Always) {
            Err(Blocked::Fail(e)) => e.kind() == ErrorKind::Forked,
            _ => false,
        };
        let blocking = generator.id_blocking(Wait::Always).map_err(|e| e.kind());
        let mut ids = [0u64; 4];
        let fill = generator.fill_now(&mut ids, Wait::Never);
        let filled =
            matches!(fill, (0, Some(Blocked::Fail(ref e))) if e.kind() == ErrorKind::Forked);
        let health = generator.health() == Health::Forked { leased: false };
        // A generator built in the child issues, IDs after the parent's.
        let fresh = Generator::build(config(8)).unwrap();
        let id = fresh.id_blocking(Wait::Always).unwrap();
        drop(inherited); // forgotten in the child, not released
        vec![
            now as u8,
            (blocking == Err(ErrorKind::Forked)) as u8,
            filled as u8,
            health as u8,
            (id > first) as u8,
        ]
    });
    assert_eq!(out, [1, 1, 1, 1, 1]);
    // The parent goes on.
    assert!(generator.id_blocking(Wait::Always).unwrap() > first);

    // Detection off: the child issues from the parent's state, under the
    // parent's node id, so the two repeat each other's next IDs.
    flakeid_bindings::set_fork_detection_for_tests(false);
    let out = in_child(|| match generator.id_now(Wait::Always) {
        Ok(id) => id.to_le_bytes().to_vec(),
        Err(_) => Vec::new(),
    });
    flakeid_bindings::set_fork_detection_for_tests(true);
    assert_eq!(out.len(), 8, "the child was refused with detection off");
}
