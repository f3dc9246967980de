//! The lease fence: a generator's reading of the grant (a seqlock over
//! several words) against the keeper's replace, renewal and close, and the
//! deadline that closes the fence by itself.
//!
//! The fence's deadline is on a mocked monotonic clock that moves only when
//! a model moves it (`Fence::advance_ns`), so "the deadline passed" is an
//! event in the interleaving, not a race with real time.
#![cfg(flakeid_loom)]

use flakeid::loom_hooks::{Fence, Grant};
use flakeid_loom_tests::{Reached, model};
use loom::thread;

/// Grant `i`: every word differs from every other grant's, so a grant mixed
/// from two is recognisable.
fn grant(i: u64) -> Grant {
    Grant {
        node_bits: i << 12,
        floor: i * 1000,
        ceiling: i * 1000 + 7,
        rewind: i % 2 == 1,
    }
}

/// Checks twice while the keeper replaces grant 1 with grant 2 (through
/// `replace`): every grant seen is whole, and once grant 2 is in place a
/// ticket of grant 1 no longer confirms.
pub fn a_checker_races_a_replacement(replace: fn(&Fence, Grant, u64)) {
    let reached = Reached::new(&["saw grant 1", "saw grant 2"]);
    let seen_by = reached.clone();
    model("a_checker_races_a_replacement", move || {
        let fence = Fence::new();
        fence.open(grant(1), u64::MAX);
        let keeper = {
            let fence = fence.clone();
            thread::spawn(move || replace(&fence, grant(2), u64::MAX))
        };
        let mut seen = Vec::new();
        for _ in 0..2 {
            if let Some((g, ticket)) = fence.check() {
                assert_eq!(g, grant(g.node_bits >> 12), "torn grant {g:?}");
                seen.push((g, ticket));
            }
        }
        keeper.join().unwrap();
        let (now, current) = fence.check().expect("open after the replacement");
        assert_eq!(now, grant(2));
        assert!(fence.confirm(current));
        for (g, ticket) in seen {
            if g.node_bits == grant(1).node_bits {
                seen_by.saw("saw grant 1");
                assert!(
                    !fence.confirm(ticket),
                    "a replaced grant's ticket confirmed"
                );
            } else {
                seen_by.saw("saw grant 2");
                assert_eq!(ticket, current);
            }
        }
    });
    reached.assert_all();
}

#[test]
fn a_checker_never_sees_one_grants_words_with_anothers() {
    a_checker_races_a_replacement(|fence, grant, until| fence.open(grant, until));
}

/// The seqlock has teeth: a keeper that writes the words in place, without
/// the odd generation around them, lets a checker see a torn grant.
#[test]
#[should_panic(expected = "torn grant")]
fn the_replacement_model_catches_a_write_without_the_seqlock() {
    a_checker_races_a_replacement(|fence, grant, until| fence.broken_open_in_place(grant, until));
}

/// A renewal racing the deadline: the fence is open until 100 ns; the
/// keeper's renewal (to 1,000 ns) is answered before or after the clock
/// passes 100 ns. A renewal answered after the deadline (the fence's clock
/// already past it when the keeper got the answer) leaves the fence closed,
/// and a ticket taken before the deadline never confirms again: only a fresh
/// claim (`open`) reopens it.
pub fn a_late_renewal_races_the_deadline(extend: fn(&Fence, u64, u64)) {
    let reached = Reached::new(&["renewed in time", "renewed too late"]);
    let seen_by = reached.clone();
    model("a_late_renewal_races_the_deadline", move || {
        let fence = Fence::new();
        fence.open(grant(1), 100);
        let (_, ticket) = fence.check().expect("open before the deadline");
        let keeper = {
            let fence = fence.clone();
            thread::spawn(move || {
                let answered_at = fence.now_ns();
                extend(&fence, 1_000, grant(1).ceiling + 1);
                answered_at
            })
        };
        fence.advance_ns(200);
        let answered_at = keeper.join().unwrap();
        if answered_at >= 100 {
            seen_by.saw("renewed too late");
            assert_eq!(
                fence.check(),
                None,
                "a late renewal reopened an expired fence"
            );
            assert!(
                !fence.confirm(ticket),
                "a ticket from before the expiry confirmed after it"
            );
        } else if fence.check().is_some() {
            seen_by.saw("renewed in time");
            assert!(fence.confirm(ticket));
        }
        // Past every deadline: closed, whatever the order was.
        fence.advance_ns(1_000);
        assert_eq!(fence.check(), None);
        assert!(!fence.confirm(ticket));
        // A fresh claim reopens it.
        fence.open(grant(2), u64::MAX);
        assert_eq!(fence.check().map(|(g, _)| g), Some(grant(2)));
    });
    reached.assert_all();
}

/// A generator that finds the deadline passed closes the fence for good: a
/// renewal answered any time later (whatever its own reading of the clock)
/// does not reopen it.
#[test]
fn a_fence_found_expired_stays_closed() {
    model("a_fence_found_expired_stays_closed", || {
        let fence = Fence::new();
        fence.open(grant(1), 100);
        let keeper = {
            let fence = fence.clone();
            thread::spawn(move || fence.extend(1_000, 2_000))
        };
        fence.advance_ns(200);
        let found_expired = fence.check().is_none();
        keeper.join().unwrap();
        if found_expired {
            assert_eq!(fence.check(), None, "reopened after it was found expired");
        }
    });
}

#[test]
fn a_renewal_after_the_deadline_does_not_reopen_the_fence() {
    a_late_renewal_races_the_deadline(|fence, until, ceiling| fence.extend(until, ceiling));
}

/// The deadline has teeth: a renewal that pushes any non-zero deadline
/// forward, not only one still ahead of the clock, reopens an expired fence.
#[test]
#[should_panic(expected = "reopened an expired fence")]
fn the_deadline_model_catches_a_renewal_that_reopens() {
    a_late_renewal_races_the_deadline(|fence, until, ceiling| {
        fence.broken_extend_any_open(until, ceiling)
    });
}

/// A close racing a renewal: whichever lands first, the fence ends closed.
#[test]
fn a_renewal_racing_a_close_leaves_it_closed() {
    model("a_renewal_racing_a_close", || {
        let fence = Fence::new();
        fence.open(grant(1), 100);
        let keeper = {
            let fence = fence.clone();
            thread::spawn(move || fence.extend(1_000, 2_000))
        };
        fence.close();
        keeper.join().unwrap();
        assert_eq!(fence.check(), None);
    });
}

/// The ceiling a generator reads between `check` and `confirm` belongs to
/// the checked grant whenever the ticket confirms: the keeper raises grant
/// 1's ceiling to 1,100 and then replaces it with grant 2 (ceiling 2,007).
#[test]
fn a_confirmed_ticket_read_its_own_grants_ceiling() {
    let reached = Reached::new(&["confirmed", "dropped"]);
    let seen_by = reached.clone();
    model(
        "a_confirmed_ticket_read_its_own_grants_ceiling",
        move || {
            let fence = Fence::new();
            fence.open(grant(1), u64::MAX);
            let keeper = {
                let fence = fence.clone();
                thread::spawn(move || {
                    fence.extend(u64::MAX, 1_100);
                    fence.open(grant(2), u64::MAX);
                })
            };
            if let Some((g, ticket)) = fence.check() {
                let ceiling = fence.ceiling();
                if fence.confirm(ticket) {
                    seen_by.saw("confirmed");
                    let own = if g.node_bits == grant(1).node_bits {
                        [grant(1).ceiling, 1_100]
                    } else {
                        [grant(2).ceiling; 2]
                    };
                    assert!(
                        own.contains(&ceiling),
                        "read ceiling {ceiling} under {g:?}'s ticket"
                    );
                } else {
                    seen_by.saw("dropped");
                }
            }
            keeper.join().unwrap();
        },
    );
    reached.assert_all();
}
