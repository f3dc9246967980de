//! Fencing: while a node-id lease cannot be proven valid, the generator
//! issues nothing.
//!
//! A lease keeper (the `etcd` and `redis` features) opens the fence when it
//! claims a node id and keeps pushing its deadline forward while renewals
//! succeed. The deadline is on a monotonic clock of its own (the TSC through
//! `quanta`), whatever clock the generator reads, so a wall clock stepped back
//! cannot extend a lease. Every call of a fenced generator checks it before its
//! compare-and-swap.

use crate::primitive::{AtomicU64, Ordering};

#[derive(Debug)]
pub(crate) struct Fence {
    clock: quanta::Clock,
    origin: u64,
    /// Monotonic nanoseconds since `origin` until which the lease is proven
    /// valid; 0 while closed.
    valid_until: AtomicU64,
    /// The leased node id's bits in ID position.
    node_bits: AtomicU64,
    /// The highest timestamp field a previous holder of that node id may
    /// have used: the generator issues only after it.
    floor: AtomicU64,
    /// 1 if the grant rewinds the timestamp to the floor.
    rewind: AtomicU64,
}

/// What an open fence grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grant {
    /// The leased node id's bits in ID position.
    pub(crate) node_bits: u64,
    /// The highest timestamp field any earlier holder of that node id may
    /// have used; the generator issues only after it.
    pub(crate) floor: u64,
    /// Restart the timestamp right after `floor` even if the generator's own
    /// timestamp is later (rotating to a fresh node id after the clock stepped
    /// back: IDs then go back in time under the new node id, still unique).
    /// Otherwise the timestamp never moves back.
    pub(crate) rewind: bool,
}

// Opened, extended and closed by the lease keepers behind the `etcd` and
// `redis` features; the default build only checks it.
#[allow(dead_code)]
impl Fence {
    /// A closed fence on the TSC clock.
    pub(crate) fn new() -> Fence {
        Fence::with_clock(quanta::Clock::new())
    }

    pub(crate) fn with_clock(clock: quanta::Clock) -> Fence {
        let origin = clock.raw();
        Fence {
            clock,
            origin,
            valid_until: AtomicU64::new(0),
            node_bits: AtomicU64::new(0),
            floor: AtomicU64::new(0),
            rewind: AtomicU64::new(0),
        }
    }

    /// Monotonic nanoseconds since the fence was made (at least 1).
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.clock
            .delta_as_nanos(self.origin, self.clock.raw())
            .max(1)
    }

    /// The grant, if the lease is proven valid right now.
    #[inline]
    pub(crate) fn check(&self) -> Option<Grant> {
        let until = self.valid_until.load(Ordering::Acquire);
        if self.now_ns() >= until {
            return None;
        }
        Some(Grant {
            node_bits: self.node_bits.load(Ordering::Relaxed),
            floor: self.floor.load(Ordering::Relaxed),
            rewind: self.rewind.load(Ordering::Relaxed) == 1,
        })
    }

    /// Opens the fence for a fresh claim, valid until `valid_until_ns`.
    pub(crate) fn open(&self, grant: Grant, valid_until_ns: u64) {
        self.close();
        self.node_bits.store(grant.node_bits, Ordering::Relaxed);
        self.floor.store(grant.floor, Ordering::Relaxed);
        self.rewind
            .store(u64::from(grant.rewind), Ordering::Relaxed);
        self.valid_until.store(valid_until_ns, Ordering::Release);
    }

    /// Pushes the deadline of an open fence forward after a renewal; a closed
    /// fence stays closed (only a fresh claim reopens it).
    pub(crate) fn extend(&self, valid_until_ns: u64) {
        let _ = self
            .valid_until
            .fetch_update(Ordering::Release, Ordering::Relaxed, |until| {
                (until != 0 && valid_until_ns > until).then_some(valid_until_ns)
            });
    }

    /// Closes the fence: nothing more is issued until a fresh claim.
    pub(crate) fn close(&self) {
        self.valid_until.store(0, Ordering::Release);
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_fence_opens_expires_extends_and_closes() {
        let (clock, mock) = quanta::Clock::mock();
        let fence = Fence::with_clock(clock);
        assert_eq!(fence.check(), None, "closed at first");
        let grant = Grant {
            node_bits: 5 << 12,
            floor: 99,
            rewind: false,
        };
        fence.open(grant, 1_000_000);
        assert_eq!(fence.check(), Some(grant));
        mock.increment(Duration::from_micros(999));
        assert_eq!(fence.check(), Some(grant));
        fence.extend(2_000_000);
        mock.increment(Duration::from_micros(500));
        assert_eq!(fence.check(), Some(grant), "extended");
        mock.increment(Duration::from_micros(600));
        assert_eq!(fence.check(), None, "expired at the deadline");
        fence.close();
        fence.extend(u64::MAX);
        assert_eq!(
            fence.check(),
            None,
            "a renewal does not reopen a closed fence"
        );
    }
}
