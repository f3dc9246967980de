//! A restart-safety store whose saves fail on a switch, shared by the tests
//! of what a failing store does to the event hook (`tests/events.rs`) and to
//! the readiness probe (`tests/health.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use flakeid::{StateError, StateStore};

/// Loads nothing; saves succeed until `failing` is set, then fail with
/// "write (injected)" (`StorageFull`) and are counted in `failed`.
#[derive(Clone, Default)]
pub struct Switch {
    pub failing: Arc<AtomicBool>,
    pub failed: Arc<AtomicUsize>,
}

impl StateStore for Switch {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        Ok(None)
    }

    fn save(&mut self, _: &[u8]) -> Result<(), StateError> {
        if self.failing.load(Ordering::SeqCst) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            return Err(StateError::from_io(
                "write (injected)",
                std::io::Error::from(std::io::ErrorKind::StorageFull),
            ));
        }
        Ok(())
    }
}
