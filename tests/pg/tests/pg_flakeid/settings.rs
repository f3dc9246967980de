//! Bad settings: the library not preloaded (a server of its own), then on
//! one server changed by `ALTER SYSTEM` and a restart, the node id unset
//! or out of the layout's range, a node id and a lease at once, the layout
//! changed in a session, an
//! unknown preset and a spec that does not parse. Each is an error (at `SET` or at first use) with
//! a SQLSTATE and a message that says what is wrong; the session and the
//! server go on (a new connection works), and no process crashes.

use flakeid_test_servers::Postgres;

use crate::support::{self, Db, NODE_ID};

/// Applies `ALTER SYSTEM` statements and restarts cleanly (fast shutdown).
fn reconfigure(server: &mut Postgres, statements: &[&str]) {
    for statement in statements {
        support::sql(server, statement);
    }
    server.stop();
    server.restart();
}

/// The server still runs: a new session answers, nothing crashed.
fn still_up(server: &Postgres) {
    assert_eq!(support::sql(server, "SELECT 1"), "1");
    support::assert_no_crash(server);
}

#[test]
fn without_the_preload_issuing_is_an_error_and_decoding_works() {
    support::check_installed(None);
    let server = Postgres::start_with(&[], &[]);
    if let Err(e) = server.sql("CREATE EXTENSION pg_flakeid") {
        panic!(
            "CREATE EXTENSION pg_flakeid failed on a server that does not preload it: {e}\n\
             (it must work there; only issuing IDs needs the preload); log:\n{}",
            server.log_excerpt()
        );
    }
    let db = Db::connect(&server);
    let error = db.expect_error(
        "SELECT flakeid_next_id()",
        "55000",
        "shared_preload_libraries",
    );
    assert!(
        error
            .hint
            .as_deref()
            .unwrap_or("")
            .contains("shared_preload_libraries"),
        "{error:?}"
    );
    db.expect_error(
        "SELECT flakeid_next_ids(3)",
        "55000",
        "shared_preload_libraries",
    );
    let node = db.i64(
        "SELECT node_id FROM flakeid_decode((37::bigint << 12) | (1::bigint << 22))",
        &[],
    );
    assert_eq!(node, 37, "decode without the preload");
    drop(db);
    still_up(&server);
}

#[test]
fn bad_settings_are_errors_and_never_crashes() {
    support::check_installed(None);
    let mut server = Postgres::start_with(&["shared_preload_libraries = 'pg_flakeid'"], &[]);
    support::create_extension(&server);

    // Preloaded, no node id: the error says how to set one.
    {
        let db = Db::connect(&server);
        let error = db.expect_error("SELECT flakeid_next_id()", "55000", "flakeid.node_id");
        let hint = error.hint.clone().unwrap_or_default();
        assert!(
            hint.contains("set flakeid.node_id") && hint.contains("0 to 1023"),
            "the hint does not say how to set the node id: {error:?}"
        );
    }
    still_up(&server);

    // A node id twitter cannot hold.
    reconfigure(&mut server, &["ALTER SYSTEM SET flakeid.node_id = 5000"]);
    {
        let db = Db::connect(&server);
        db.expect_error("SELECT flakeid_next_id()", "22023", "5000");
    }
    still_up(&server);

    // A node id and a lease at once: which one is meant?
    reconfigure(
        &mut server,
        &[
            &format!("ALTER SYSTEM SET flakeid.node_id = {NODE_ID}"),
            "ALTER SYSTEM SET flakeid.node_lease = 'postgres://postgres@127.0.0.1:1/none'",
        ],
    );
    {
        let db = Db::connect(&server);
        db.expect_error("SELECT flakeid_next_id()", "22023", "both flakeid.node_id");
    }
    still_up(&server);

    // A good node id: IDs are issued; the layout cannot change in a session.
    reconfigure(
        &mut server,
        &[
            &format!("ALTER SYSTEM SET flakeid.node_id = {NODE_ID}"),
            "ALTER SYSTEM RESET flakeid.node_lease",
        ],
    );
    {
        let db = Db::connect(&server);
        let first = db.i64("SELECT flakeid_next_id()", &[]);
        db.expect_error("SET flakeid.layout = 'discord'", "55P02", "flakeid.layout");
        let error = db.error("ALTER SYSTEM SET flakeid.node_id = 'many'");
        assert_eq!(error.code, "22023", "{error:?}");
        let second = db.i64("SELECT flakeid_next_id()", &[]);
        assert!(second > first, "{second} <= {first} after the refused SET");
        let node = db.i64("SELECT node_id FROM flakeid_decode($1)", &[&second]);
        assert_eq!(
            node, NODE_ID,
            "the layout or node id changed in the session"
        );
    }
    still_up(&server);

    // An unknown preset, then a spec that does not parse: errors at first
    // use, for issuing and decoding alike.
    for layout in [
        "nope",
        "epoch=soon unit=1 fields=timestamp:41,worker:10,sequence:12",
    ] {
        reconfigure(
            &mut server,
            &[&format!("ALTER SYSTEM SET flakeid.layout = '{layout}'")],
        );
        let db = Db::connect(&server);
        let error = db.expect_error("SELECT flakeid_next_id()", "22023", "not a layout");
        assert!(error.message.contains(layout), "{error:?}");
        db.expect_error("SELECT * FROM flakeid_decode(1)", "22023", "not a layout");
        drop(db);
        still_up(&server);
    }

    // A spec that parses works as the layout.
    reconfigure(
        &mut server,
        &["ALTER SYSTEM SET flakeid.layout = \
           'epoch=1288834974657 unit=1 fields=timestamp:41,worker:10,sequence:12'"],
    );
    let db = Db::connect(&server);
    let id = db.i64("SELECT flakeid_next_id()", &[]);
    let fields = db.query(
        "SELECT node_fields = '{\"worker\": 37}'::jsonb FROM flakeid_decode($1)",
        &[&id],
    );
    assert!(fields[0].get::<_, bool>(0), "the spec's node field");
    still_up(&server);
}
