//! The default clock after `fork`: a generator built in a forked child (and
//! in that child's child) issues IDs that carry the current time, after a
//! pause long enough that a cached reading nothing refreshes would be far
//! behind. `fork` copies only the calling thread, so the parent's refresh
//! thread does not run in the child; the child's clock needs its own.
//!
//! One test function, so that no other test thread holds a lock (the
//! allocator's, stdout's) when the test forks.

#![cfg(unix)]

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use flakeid::{Clock, Generator, Layout, MonotonicClock, SystemClock};

/// How long a child lets its clock's cached reading age before the call
/// that is checked.
const PAUSE: Duration = Duration::from_millis(50);

/// How far an ID's time may fall behind the wall clock read just before its
/// call: the clock runs up to 3 ms behind the wall clock (see
/// `MonotonicClock`) and a Twitter tick is 1 ms; 5 ms leaves room and stays
/// far below the [`PAUSE`] a reading nothing refreshes would lag by.
const SLACK_MS: u64 = 5;

/// A bound on waiting for what needs only a thread to be scheduled.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn a_generator_built_after_a_fork_issues_at_the_current_time() {
    // The parent's refresh thread runs when it forks.
    let parent = generator(1).0;
    let first = parent.next_id();
    assert_eq!(current_time_after_a_pause(2), Ok(()));
    let verdict = in_child(|| {
        current_time_after_a_pause(3)?;
        // A child of the child, whose refresh thread runs too.
        in_child(|| current_time_after_a_pause(4)).map_err(|e| format!("grandchild: {e}"))
    });
    assert_eq!(verdict, Ok(()));
    // The parent's clock is left as it was.
    assert!(parent.next_id() > first);
    assert_eq!(current_time_after_a_pause(5), Ok(()));
}

/// A generator on the default clock with the node id `node`, and its clock.
fn generator(node: u64) -> (Generator, MonotonicClock) {
    let clock = MonotonicClock::new();
    let generator = Generator::builder(Layout::twitter())
        .node_id(node)
        .clock(clock.clone())
        .build()
        .expect("a valid configuration");
    (generator, clock)
}

/// Builds a generator on the default clock with the node id `node`, issues
/// an ID, pauses for [`PAUSE`], waits until the clock's refresh thread has
/// served a later reading, and checks that the next ID is not older than
/// its call.
fn current_time_after_a_pause(node: u64) -> Result<(), String> {
    let (generator, clock) = generator(node);
    let layout = generator.layout();
    let unix_ms = |id| layout.decode(id).map(|d| d.unix_ms());
    let first = unix_ms(generator.next_id()).map_err(|e| e.to_string())?;
    std::thread::sleep(PAUSE);
    // The event, not a time: the cached reading moves past the first ID's
    // millisecond (or rests, at `u64::MAX`). Only the refresh thread moves
    // it here, as nothing else reads the clock.
    let deadline = Instant::now() + PATIENCE;
    while clock.recent_ms().is_some_and(|recent| recent <= first) {
        if Instant::now() > deadline {
            return Err(format!(
                "the cached reading stayed at {:?} for {PATIENCE:?} after an ID at {first}: \
                 no refresh thread runs for this clock",
                clock.recent_ms()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let wall = SystemClock.now_ms();
    let id = unix_ms(generator.next_id()).map_err(|e| e.to_string())?;
    if id + SLACK_MS < wall {
        return Err(format!(
            "an ID at {id} (Unix ms) from a call made after {wall} (the wall clock)"
        ));
    }
    Ok(())
}

/// Runs `check` in a forked child of this process and returns its verdict.
fn in_child(check: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let (mut reader, mut writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the test binary runs one test, so no other thread of this
    // process holds a lock the child could need (the refresh thread holds
    // none while it runs or parks).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        drop(reader);
        let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check))
            .unwrap_or_else(|panic| Err(panic_message(&panic)));
        let code = match verdict {
            Ok(()) => 0,
            Err(message) => {
                let _ = writer.write_all(message.as_bytes());
                1
            }
        };
        // SAFETY: ends the child here, without running the harness or the
        // parent's exit handlers in it.
        unsafe { libc::_exit(code) };
    }
    drop(writer);
    let code = wait_for(pid)?;
    let mut message = String::new();
    reader
        .read_to_string(&mut message)
        .map_err(|e| format!("reading the child's verdict: {e}"))?;
    match code {
        0 => Ok(()),
        1 => Err(message),
        _ => Err(format!("the child exited with {code}: {message}")),
    }
}

/// Waits for the child `pid` to end and returns its exit code; kills it if
/// it has not ended after twice [`PATIENCE`] (it hangs).
fn wait_for(pid: libc::pid_t) -> Result<i32, String> {
    let deadline = Instant::now() + 2 * PATIENCE;
    let mut status = 0;
    loop {
        // SAFETY: reaps this process's own child into a local.
        let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if reaped == pid {
            break;
        }
        if reaped < 0 {
            return Err(format!("waitpid: {}", std::io::Error::last_os_error()));
        }
        if Instant::now() > deadline {
            // SAFETY: kills and reaps this process's own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!("the child ran for over {:?}: killed", 2 * PATIENCE));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(format!("the child ended with status {status:#x}"))
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
    format!("panicked: {}", message.unwrap_or("(not a string)"))
}
