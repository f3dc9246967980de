//! A clock for the crate's tests that serves queued readings.

use crate::clock::Clock;

/// A clock that serves queued readings (ms after a base), then repeats
/// the last: a thread preempted between its clock read and its use of
/// it, while others moved on, is a reading that comes out stale.
pub(crate) struct Readings(std::sync::Mutex<Vec<u64>>);

impl Readings {
    pub(crate) fn new(base: u64, readings: &[u64]) -> Readings {
        let r = Readings(std::sync::Mutex::new(Vec::new()));
        r.set(base, readings);
        r
    }

    pub(crate) fn set(&self, base: u64, readings: &[u64]) {
        *self.0.lock().unwrap() = readings.iter().map(|ms| base + ms).collect();
    }
}

impl Clock for Readings {
    fn now_ms(&self) -> u64 {
        let mut queue = self.0.lock().unwrap();
        if queue.len() > 1 {
            queue.remove(0)
        } else {
            queue[0]
        }
    }
}
