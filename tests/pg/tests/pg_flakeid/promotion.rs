//! A promoted standby goes on above its old primary: a primary issues IDs,
//! a streaming standby whose wall clock runs 30 s in the past (a preload
//! library, `support::ClockBack`) replays them and refuses to issue IDs itself while in recovery (an
//! error, not a crash); the primary is killed, the standby promoted, and
//! every ID it issues is above every ID of the primary, none repeated.

use flakeid_test_servers::Postgres;

use crate::support::{self, ClockBack, Db};

const ROUNDS: usize = 5;
const PER_ROUND: usize = 200;

fn insert(server: &Postgres, side: &str) {
    for _ in 0..ROUNDS {
        support::sql(
            server,
            &format!("INSERT INTO p (side) SELECT '{side}' FROM generate_series(1, {PER_ROUND})"),
        );
    }
}

#[test]
fn a_promoted_standby_issues_above_its_old_primary() {
    support::check_installed(None);
    let lines = support::conf(None, &[]);
    let mut pair = Postgres::primary_with_standby_with(&support::strs(&lines), &[], &[]);
    // The standby's clock 30 s behind the primary's: only the reservation
    // it replayed keeps it above the primary's IDs once promoted.
    let clock_back = ClockBack::build();
    for (key, value) in clock_back.env() {
        pair.standby.set_env(key, Some(&value));
    }
    pair.standby.restart();
    support::create_extension(&pair.primary);
    support::sql(
        &pair.primary,
        "CREATE TABLE p (id bigint DEFAULT flakeid_next_id() UNIQUE, side text NOT NULL)",
    );
    insert(&pair.primary, "primary");
    let old_max = support::sql_i64(&pair.primary, "SELECT max(id) FROM p");
    pair.wait_caught_up();

    // In recovery: an error, and the session (and server) go on.
    let standby = Db::connect(&pair.standby);
    let error = standby.expect_error("SELECT flakeid_next_id()", "25006", "recovery");
    assert!(error.hint.is_some(), "{error:?}");
    assert_eq!(
        standby.i64("SELECT count(*) FROM p", &[]),
        (ROUNDS * PER_ROUND) as i64,
        "the standby did not replay the primary's rows"
    );
    let behind = standby.i64(
        "SELECT (flakeid_timestamp(max(id)) - now() > interval '20 s')::int::bigint FROM p",
        &[],
    );
    assert_eq!(behind, 1, "the standby's clock was not set back");
    drop(standby);

    pair.primary.kill();
    pair.standby.promote();
    insert(&pair.standby, "standby");
    let answer = support::sql(
        &pair.standby,
        &format!(
            "SELECT count(*) FILTER (WHERE side = 'standby' AND id <= {old_max}), \
                    count(*) - count(DISTINCT id), count(*) \
             FROM p"
        ),
    );
    assert_eq!(
        answer,
        format!("0|0|{}", 2 * ROUNDS * PER_ROUND),
        "(IDs at or below the primary's last {old_max}, repeats, rows) after the promotion"
    );
    support::assert_no_crash(&pair.standby);
}
