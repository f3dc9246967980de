//! The generator's planted bugs: deliberately broken variants of its calls,
//! which the loom models must catch (a model that passes on these has no
//! teeth). Written against the generator's crate-private parts, so the real
//! calls carry no trace of them.

use crate::clock::Clock;
use crate::error::GenerateError;
use crate::generator::Generator;
use crate::id::Id;
use crate::primitive::Ordering;

/// Broken variants of the lock-free generator's calls, for
/// `loom-tests/tests/teeth.rs` and `cached_clock.rs`.
pub trait Broken {
    /// `next_id` with the compare-and-swap replaced by a load and a store:
    /// two racing threads can both install the same successor.
    fn broken_next_id_load_store(&self) -> Id;

    /// `try_next_id` that decides on the clock's cached reading where it
    /// must read the precise clock (a new tick, a used-up sequence, a clock
    /// behind): a cached reading that lags a tick another thread entered is
    /// taken for the clock stepping back.
    fn broken_try_next_id_on_cached(&self) -> Result<Id, GenerateError>;

    /// `next_id` that, after losing a race, retries the successor it
    /// computed before instead of computing a new one: a lost sequence
    /// increment. If the winner installed that same successor, the retry
    /// succeeds without changing the state and hands out the winner's ID
    /// again.
    fn broken_next_id_stale_retry(&self) -> Id;
}

impl<C: Clock> Broken for Generator<C> {
    fn broken_next_id_load_store(&self) -> Id {
        let core = self.core();
        let (word, plan) = (core.word(), core.plan());
        let cur = word.load(Ordering::Relaxed);
        match plan.advance(cur, self.clock().now_ms(), 1) {
            Ok(step) => {
                word.store(step.next, Ordering::Relaxed);
                Id::from_u64(step.first)
            }
            Err(stall) => panic!("flakeid: {}", plan.error(stall)),
        }
    }

    fn broken_try_next_id_on_cached(&self) -> Result<Id, GenerateError> {
        let core = self.core();
        // Where the short path does not apply, the loop decides on the
        // cached reading as if it were a precise one taken after the load: a
        // cached reading older than the state then passes for the clock
        // stepping back.
        let recent = self.clock().recent_ms().expect("a cached reading");
        core.settle_on(recent, 1)
            .map(|step| Id::from_u64(step.first))
            .map_err(|stall| core.plan().error(stall))
    }

    fn broken_next_id_stale_retry(&self) -> Id {
        let core = self.core();
        let (word, plan) = (core.word(), core.plan());
        let mut cur = word.load(Ordering::Acquire);
        let step = match plan.advance(cur, self.clock().now_ms(), 1) {
            Ok(step) => step,
            Err(stall) => panic!("flakeid: {}", plan.error(stall)),
        };
        loop {
            match word.compare_exchange(cur, step.next, Ordering::Release, Ordering::Acquire) {
                Ok(_) => return Id::from_u64(step.first),
                Err(actual) => cur = actual,
            }
        }
    }
}
