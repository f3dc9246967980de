//! [`Served`], the cached reading a refresh thread keeps fresh, and the
//! handshake by which that thread rests while nobody reads the precise clock
//! and is woken when someone does.
//!
//! Under load a generator reads the precise clock at least once per tick (to
//! enter it), so a precise reading is the sign that the cached one is in use.
//! Readers note it; the thread, finding none noted over
//! [`rest_after_ms`](Served::new) of the clock, rests. While it rests the
//! cached reading is [`RESTING`], which names no tick, so every call goes to
//! the precise clock instead of continuing a tick on a reading that is
//! growing old. Once precise readings come in two milliseconds in a row (the
//! calls go on), the first reader of the second serves its own reading in
//! place of [`RESTING`] and wakes the thread.
//!
//! # The handshake
//!
//! The rule that keeps an ID's timestamp from lagging: *the cached reading is
//! a real reading only while the thread refreshes it, or has been woken to*.
//!
//! - Only the thread sets [`RESTING`], and it parks after
//!   ([`refreshed`](Served::refreshed)).
//! - A reading turns from [`RESTING`] into a real one in two ways only: the
//!   thread's own refresh, while it runs; and a reader's (or a new clock's)
//!   compare-and-swap from [`RESTING`], whose winner then wakes the thread.
//! - Every other write raises the reading with `fetch_max`, which leaves
//!   [`RESTING`] (`u64::MAX`) as it is: a reader that saw a real reading and
//!   raises it just as the thread rests changes nothing. Every write is a
//!   read-modify-write, so the raises and the rest fall in one order.
//!
//! A lost wake-up comes in two kinds, and neither makes a wrong ID:
//!
//! - The thread rests while calls go on and nobody wakes it: the reading
//!   stays [`RESTING`], and every call reads the precise clock. That costs
//!   speed only. The wake-up rule makes it last a millisecond at most.
//! - A real reading left with the thread parked: IDs would carry that
//!   millisecond until its tick's sequence ran out, as when the thread
//!   stalls (unique and ordered still, but lagging). The rule above
//!   excludes it; `loom-tests/tests/idle_refresh.rs` explores the
//!   interleavings, and catches a raise by load and store that would make
//!   one.
//!
//! The notes of demand are hints, not part of the rule: a note that comes
//! too late only lets the thread rest a refresh early, or wakes it a call
//! early or late.

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::primitive::{AtomicU64, Ordering};

/// The cached reading while the refresh thread rests: past the end of every
/// layout (a layout's timestamps end within `u64` milliseconds, so no
/// tick's start is this high), so it names no tick and a generator reads the
/// precise clock.
pub const RESTING: u64 = u64::MAX;

/// The cached reading one refresh thread serves, and when that thread rests.
///
/// Shared by the readers (the clocks' precise readings, through
/// [`read`](Served::read)) and the thread ([`refreshed`](Served::refreshed),
/// [`is_resting`](Served::is_resting)). Every method takes `&self`; the
/// atomics are relaxed: the handshake rests on the order of the writes to
/// one word, the reading, and on the park and unpark of the thread.
pub struct Served {
    /// The cached reading a clock's fast path loads: the highest precise
    /// reading served, or [`RESTING`]. On a line of its own: every fast path
    /// reads it, and it is written about once per millisecond.
    reading: Arc<CachePadded<AtomicU64>>,
    /// 0 if no reader took a precise reading since the thread last looked;
    /// else the millisecond of one that did. Written at most once per
    /// refresh by the readers, cleared once per refresh by the thread.
    asked: CachePadded<AtomicU64>,
    /// Milliseconds of the clock with no precise reading asked for, after
    /// which the thread rests.
    rest_after_ms: u64,
}

impl Served {
    /// A thread not started yet: the reading is [`RESTING`] until a clock
    /// wakes it ([`wake_now`](Served::wake_now)). The thread rests once
    /// `rest_after_ms` of the clock pass with no precise reading asked for
    /// (0: at the first refresh without one).
    pub fn new(rest_after_ms: u64) -> Served {
        Served {
            reading: Arc::new(CachePadded::new(AtomicU64::new(RESTING))),
            asked: CachePadded::new(AtomicU64::new(0)),
            rest_after_ms,
        }
    }

    /// Milliseconds of the clock with no precise reading asked for, after
    /// which the thread rests.
    pub fn rest_after_ms(&self) -> u64 {
        self.rest_after_ms
    }

    /// The word a clock serves as its cached reading (one load).
    pub fn reading(&self) -> &Arc<CachePadded<AtomicU64>> {
        &self.reading
    }

    /// The cached reading as it stands ([`RESTING`] while the thread rests).
    pub fn load(&self) -> u64 {
        self.reading.load(Ordering::Relaxed)
    }

    /// A reader's side, after a precise reading of `ms`: notes that the
    /// reading was asked for and raises the cached reading to it. If the
    /// thread rests, and this is the first precise reading in the
    /// millisecond after one that was noted (the calls go on), it serves
    /// `ms` in place of [`RESTING`] and calls `wake` (which unparks the
    /// thread), once for all the readers that find it so.
    ///
    /// Returns the reading to use: `ms`, or the cached reading if that is
    /// higher. The caller may have seen the cached reading just before (a
    /// generator's fast path does), and the cached reading is a word of its
    /// own, apart from the clock's highest reading; this keeps a precise
    /// reading from falling below it however the two words' writes reach
    /// this thread.
    ///
    /// On the slow path only, never on the fast one. Inline, two relaxed
    /// loads and three compares: the case of a thread that is awake, has
    /// been told since it last looked, and serves this millisecond already
    /// (under load, every precise reading but about one per millisecond).
    #[inline]
    pub fn read(&self, ms: u64, wake: impl FnOnce()) -> u64 {
        let asked = self.asked.load(Ordering::Relaxed);
        let served = self.reading.load(Ordering::Relaxed);
        if asked != 0 && ms <= served && served != RESTING {
            return served;
        }
        self.note(ms, asked, served, wake);
        if served == RESTING {
            ms
        } else {
            ms.max(served)
        }
    }

    /// The rest of [`read`](Served::read), out of line: the note, the
    /// raise, or the thread resting.
    #[cold]
    #[inline(never)]
    fn note(&self, ms: u64, asked: u64, served: u64, wake: impl FnOnce()) {
        if asked == 0 {
            self.asked.store(ms.max(1), Ordering::Relaxed);
        }
        if ms > served {
            // A new millisecond; `fetch_max` leaves RESTING alone, should
            // the thread rest in between.
            self.reading.fetch_max(ms, Ordering::Relaxed);
        } else if served == RESTING && asked != 0 {
            self.read_while_resting(ms, asked, wake);
        }
    }

    /// A precise reading of `ms` while the thread rests, after one of
    /// `asked` was noted. Unparking costs the caller a system call (several
    /// microseconds in a virtual machine), so the thread is woken only for
    /// calls that go on into a second millisecond: a lone call, or a few in
    /// one millisecond, take the precise reading they take anyway and leave
    /// it resting. The cached reading could not have served them either: a
    /// call in a new tick reads the precise clock whether the thread runs or
    /// not.
    fn read_while_resting(&self, ms: u64, asked: u64, wake: impl FnOnce()) {
        if ms == asked.saturating_add(1) {
            match self
                .reading
                .compare_exchange(RESTING, ms, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => wake(),
                Err(_) => {
                    self.reading.fetch_max(ms, Ordering::Relaxed);
                }
            }
        } else if ms > asked {
            // The noted call was an older, lone one: this one is the first.
            self.asked.store(ms, Ordering::Relaxed);
        }
    }

    /// A new clock's side: serves `ms` (a precise reading just taken) at
    /// once, so the new clock's cached reading is a real one, and says
    /// whether the thread rested, in which case the caller must unpark it.
    pub fn wake_now(&self, ms: u64) -> bool {
        if self
            .reading
            .compare_exchange(RESTING, ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return true;
        }
        self.reading.fetch_max(ms, Ordering::Relaxed);
        false
    }

    /// The thread's side, after each refresh's precise reading of `ms`:
    /// serves it and decides whether to rest. `quiet_since` is the thread's
    /// own: the millisecond since which no precise reading was asked for
    /// (`None` when the thread has just woken: it counts from `ms`).
    /// Once `rest_after_ms` have passed since, it sets the reading to
    /// [`RESTING`] and returns true: the thread then parks until
    /// [`is_resting`](Served::is_resting) turns false.
    pub fn refreshed(&self, ms: u64, quiet_since: &mut Option<u64>) -> bool {
        self.serve(ms);
        let asked = self.asked.load(Ordering::Relaxed);
        if asked != 0 {
            self.asked.store(0, Ordering::Relaxed);
            *quiet_since = Some(asked);
            return false;
        }
        let since = *quiet_since.get_or_insert(ms);
        if ms.saturating_sub(since) < self.rest_after_ms {
            return false;
        }
        *quiet_since = None;
        // A swap, not a store: with every write to the reading a
        // read-modify-write, a reader's raise falls wholly before the rest
        // (and is overwritten) or after it (and leaves RESTING alone). loom
        // orders a plain store against a concurrent one less strictly.
        self.reading.swap(RESTING, Ordering::Relaxed);
        // Notes from readers that saw a real reading are spent.
        self.asked.store(0, Ordering::Relaxed);
        true
    }

    /// Serves the thread's own reading: raises the cached one, or replaces
    /// [`RESTING`] (the thread runs, so the reading is kept fresh from here).
    fn serve(&self, ms: u64) {
        let _ = self
            .reading
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |served| {
                (served == RESTING || served < ms).then_some(ms)
            });
    }

    /// Whether the thread rests: the reading is [`RESTING`] and no reader
    /// has woken it.
    pub fn is_resting(&self) -> bool {
        self.load() == RESTING
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn the_thread_rests_after_a_quiet_spell_and_the_first_reader_wakes_it_once() {
        let served = Served::new(10);
        assert!(served.is_resting());
        // A new clock serves its reading at once and wakes the thread.
        assert!(served.wake_now(100));
        assert!(!served.wake_now(101));
        assert_eq!(served.load(), 101);
        // A precise reading asked for keeps the thread awake for 10 ms of
        // the clock from that reading on.
        let mut quiet_since = None;
        served.read(101, || panic!("the thread is awake"));
        assert!(!served.refreshed(105, &mut quiet_since));
        assert!(!served.refreshed(110, &mut quiet_since));
        assert_eq!(served.load(), 110);
        assert!(served.refreshed(111, &mut quiet_since));
        assert!(served.is_resting());
        // The readers that find it resting: a lone call, or calls within one
        // millisecond, leave it resting...
        let woken = Cell::new(0);
        let wake = || woken.set(woken.get() + 1);
        served.read(118, wake);
        served.read(120, wake);
        served.read(120, wake);
        assert_eq!(woken.get(), 0);
        assert!(served.is_resting());
        // ...the first in the millisecond after serves its reading and
        // wakes the thread; the others raise the reading.
        served.read(121, wake);
        served.read(121, wake);
        served.read(122, wake);
        assert_eq!(woken.get(), 1);
        assert_eq!(served.load(), 122);
        // Woken, the thread counts its quiet spell from the first reading
        // noted.
        assert!(!served.refreshed(122, &mut quiet_since));
        assert!(!served.refreshed(129, &mut quiet_since));
        assert!(served.refreshed(130, &mut quiet_since));
    }

    #[test]
    fn resting_names_no_tick_of_any_layout() {
        let layout = |bits, unit_ms| {
            crate::layout::Layout::builder()
                .epoch_ms(0)
                .unit_ms(unit_ms)
                .timestamp_bits(bits)
                .sequence(1)
                .build()
        };
        // The builder refuses timestamps that would end past u64::MAX ms...
        assert!(layout(63, 2).is_err());
        assert!(layout(62, 5).is_err());
        // ...so the widest it takes ends below RESTING, however coarse.
        for (bits, unit_ms) in [(63, 1), (62, 3), (53, 1 << 10)] {
            let layout = layout(bits, unit_ms).unwrap();
            assert!(layout.last_ms() < RESTING, "{layout:?}");
        }
    }
}
