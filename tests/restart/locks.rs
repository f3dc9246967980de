//! One state file, one generator: the file's lock, its short grace for a
//! lock being released, and a store that serves one generator only.

use std::time::{Duration, Instant};

use flakeid::{BuildError, FileStore, Generator, ManualClock, Persist, StateError};

use crate::{T, TempDir, layout};

/// How long `FileStore::open` waits for a lock that is being released.
const LOCK_GRACE: Duration = Duration::from_millis(250);

#[test]
fn a_lock_released_a_moment_later_is_taken() {
    let dir = TempDir::new("lock-grace");
    // A thread releases the lock 50 ms into the 250 ms grace: opening waits
    // and takes it. A loaded machine may run that thread later than the
    // grace, so only what the clock shows is asserted: a release before the
    // deadline must be taken. A round whose release came too late proves
    // nothing and is repeated.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let first = FileStore::open(dir.file()).unwrap();
        let opening_at = Instant::now();
        let (opened, released_at) = std::thread::scope(|s| {
            let releaser = s.spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                drop(first);
                Instant::now()
            });
            (FileStore::open(dir.file()), releaser.join().unwrap())
        });
        match opened {
            Ok(_) => return,
            Err(StateError::Locked { .. }) => assert!(
                released_at > opening_at + LOCK_GRACE,
                "released {:?} after opening began, yet not taken",
                released_at - opening_at
            ),
            Err(e) => panic!("{e}"),
        }
        assert!(
            Instant::now() < deadline,
            "for a minute, no release came within the grace: the machine is stuck"
        );
    }
}

#[test]
fn a_second_generator_on_the_same_file_is_refused() {
    let dir = TempDir::new("locked");
    let build = || {
        Generator::builder(layout())
            .node_id(1)
            .clock(ManualClock::new(T))
            .persist(Persist::file(dir.file()))
            .build()
    };
    let first = build().unwrap();
    match build() {
        Err(BuildError::State(StateError::Locked { path })) => {
            assert!(path.ends_with("node.state.lock"))
        }
        other => panic!("expected a lock error, got {other:?}"),
    }
    drop(first);
    assert!(build().is_ok());
}

#[test]
fn a_store_cannot_serve_two_generators() {
    let dir = TempDir::new("store-in-use");
    let builder = Generator::builder(layout())
        .single_node()
        .clock(ManualClock::new(T))
        .persist(Persist::store(FileStore::open(dir.file()).unwrap()));
    let first = builder.clone().build().unwrap();
    assert_eq!(
        builder.build().unwrap_err(),
        BuildError::State(StateError::StoreInUse)
    );
    drop(first);
}
