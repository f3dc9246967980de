//! A running server's clock follows its wall clock forward and never back.
//! The server starts with its wall clock 30 s behind (the clock-back
//! library, its offset in a file this test rewrites while the server
//! runs), and its IDs carry that time. Then the wall clock steps forward
//! to the real time: the IDs after it carry the real time, not 30 s less.
//! Then it steps back again: the IDs keep increasing and keep the real
//! time, 30 s ahead of the wall clock, a gap the server's clock closes by
//! running 0.1% slow. Each ID's issue time must lie between two reads of
//! the database's clock (`clock_timestamp()`, which reads the same wall
//! clock) around the call, and every ID above the one before.
//!
//! The gap between the server's clock and the wall clock is measured to
//! microseconds over 2,000 calls ([`support::gap_us`]).

use flakeid_test_servers::Postgres;

use crate::support::{
    self, CLOCK_BACK_MS, ClockBack, Db, LAG_US, at_the_wall_clock_to_the_us, clock_after_ms,
    clock_before_ms, gap_us,
};

/// One ID, with its issue time (Unix ms) and two reads of the database's
/// clock around the call ([`clock_before_ms`], [`clock_after_ms`]).
struct Issued {
    id: i64,
    issued_ms: i64,
    before_ms: i64,
    after_ms: i64,
}

fn issue(db: &Db) -> Issued {
    let before_ms = clock_before_ms(db);
    let id = db.i64("SELECT flakeid_next_id()", &[]);
    let after_ms = clock_after_ms(db);
    let issued_ms = db.i64(
        "SELECT floor(extract(epoch FROM flakeid_timestamp($1)) * 1000)::bigint",
        &[&id],
    );
    Issued {
        id,
        issued_ms,
        before_ms,
        after_ms,
    }
}

/// Panics unless `now` was issued at the wall clock's time.
fn at_the_wall_clock(now: &Issued, when: &str) {
    assert!(
        (now.before_ms..=now.after_ms).contains(&now.issued_ms),
        "{when}: ID {} was issued at Unix ms {}, not between the wall clock's {} (less \
         {LAG_US} µs) and {}",
        now.id,
        now.issued_ms,
        now.before_ms,
        now.after_ms
    );
}

/// Steps the server's wall clock to `back_ms` behind the real time, then
/// lets the server's monotonic clock reach a later millisecond (a process
/// compares its clock with the wall clock once per millisecond).
fn step(db: &Db, clock: &ClockBack, back_ms: i64) {
    clock.set_back_ms(back_ms);
    db.query("SELECT pg_sleep(0.005)", &[]);
}

#[test]
fn a_running_servers_ids_follow_its_wall_clock_forward_never_back() {
    support::check_installed(None);
    let clock = ClockBack::build();
    clock.set_back_ms(CLOCK_BACK_MS);
    let env = clock.env_adjustable();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let lines = support::conf(None, &[]);
    let server = Postgres::start_with(&support::strs(&lines), &env);
    support::create_extension(&server);
    let db = Db::connect(&server);

    // 30 s behind from the start: the server's clock starts at its wall
    // clock.
    let behind = issue(&db);
    at_the_wall_clock(&behind, "wall clock 30 s behind");
    at_the_wall_clock_to_the_us(&db, 2_000, "wall clock 30 s behind");

    // Stepped forward to the real time: the server's clock follows.
    step(&db, &clock, 0);
    let forward = issue(&db);
    at_the_wall_clock(&forward, "after the wall clock stepped 30 s forward");
    at_the_wall_clock_to_the_us(&db, 2_000, "after the wall clock stepped 30 s forward");
    assert!(
        forward.issued_ms >= behind.issued_ms + CLOCK_BACK_MS * 2 / 3,
        "after the wall clock stepped 30 s forward, IDs were issued at Unix ms {}, \
         only {} ms after the last one before the step",
        forward.issued_ms,
        forward.issued_ms - behind.issued_ms
    );
    assert!(forward.id > behind.id, "{} after {}", forward.id, behind.id);

    // Stepped back 30 s: the server's clock does not go back.
    step(&db, &clock, CLOCK_BACK_MS);
    let back = issue(&db);
    assert!(back.id > forward.id, "{} after {}", back.id, forward.id);
    assert!(
        back.issued_ms >= forward.issued_ms,
        "after the wall clock stepped back, an ID was issued at Unix ms {}, before the \
         last one ({})",
        back.issued_ms,
        forward.issued_ms
    );
    assert!(
        back.issued_ms > back.after_ms + CLOCK_BACK_MS * 2 / 3,
        "after the wall clock stepped back 30 s, ID {} was issued at Unix ms {}: it \
         followed the wall clock ({}) back",
        back.id,
        back.issued_ms,
        back.after_ms
    );
    // And more IDs still increase.
    let more = db.i64s("SELECT flakeid_next_ids(1000)", &[]);
    assert!(support::increasing(&more) && more[0] > back.id);

    // 30 s ahead, the server's clock closes the gap at 1/1024 of the time
    // that passes: at least 2.9 ms over the 3 s slept.
    let (low, high) = gap_us(&db, 2_000);
    db.query("SELECT pg_sleep(3)", &[]);
    let (later_low, later_high) = gap_us(&db, 2_000);
    assert!(
        low - later_high >= 2_500,
        "the server's clock, ahead of the wall clock by {low}..{high} µs, was still \
         {later_low}..{later_high} µs ahead 3 s later: it does not close the gap by \
         running 0.1% slow"
    );
    assert!(
        later_low > (CLOCK_BACK_MS - 1_000) * 1_000,
        "the server's clock, {later_low}..{later_high} µs ahead of the wall clock, closed \
         more of the 30 s gap than running 0.1% slow can"
    );
}
