//! A state store for the persistence models, and the broken stores they
//! must catch.

use std::sync::{Arc, Mutex};

use crate::error::StateError;
use crate::persist::{SavedState, StateStore};

/// A bug a [`MemoryStore`] plants in its saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistBug {
    /// Each save is acknowledged before it is durable: it becomes durable
    /// only when the next save begins (a write cache that lies about its
    /// flush). To the generator this is a ceiling published before the save
    /// that covers it.
    AcknowledgeBeforeDurable,
    /// The next save (the writer's, for a caller's request) waits for
    /// another wake-up first, which a caller repeating its request never
    /// sends: the request's wake-up is lost.
    SwallowWakeUp,
}

/// A [`StateStore`] in memory, shared by its clones, that tells the highest
/// mark its last durable save holds. Its lock is std's, not loom's: loom
/// runs one thread at a time, so what a model reads from it is what was
/// saved before, in real time.
#[derive(Clone, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<Saves>>,
}

#[derive(Default)]
struct Saves {
    /// What a restart would load.
    durable: Option<Vec<u8>>,
    /// Acknowledged, not yet durable (under `AcknowledgeBeforeDurable`).
    cached: Option<Vec<u8>>,
    bug: Option<PersistBug>,
}

impl MemoryStore {
    /// The highest mark, over every clock id, of the last durable save.
    pub fn max_mark(&self) -> Option<u64> {
        let saved = self.state.lock().unwrap().durable.clone()?;
        let state = SavedState::decode(&saved).expect("a valid saved state");
        state.marks.iter().map(|&(_, mark)| mark).max()
    }

    /// Plants `bug` in this store's saves from the next one on (and in its
    /// clones': a generator's store is a clone).
    pub fn plant(&self, bug: PersistBug) {
        self.state.lock().unwrap().bug = Some(bug);
    }
}

impl StateStore for MemoryStore {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.state.lock().unwrap().durable.clone())
    }

    fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
        let bug = self.state.lock().unwrap().bug;
        let mut saves = match bug {
            Some(PersistBug::AcknowledgeBeforeDurable) => {
                let mut saves = self.state.lock().unwrap();
                if let Some(previous) = saves.cached.replace(state.to_vec()) {
                    saves.durable = Some(previous);
                }
                return Ok(());
            }
            Some(PersistBug::SwallowWakeUp) => {
                // On the writer's thread: parked until something unparks it
                // again. Once: the saves after it (the final one on drop
                // among them) go through.
                self.state.lock().unwrap().bug = None;
                crate::primitive::thread::park();
                self.state.lock().unwrap()
            }
            None => self.state.lock().unwrap(),
        };
        saves.durable = Some(state.to_vec());
        Ok(())
    }
}
