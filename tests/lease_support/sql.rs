//! What only the PostgreSQL and MySQL stores face: claimers racing in one
//! process, hostile names, tables missing or of another shape, users
//! without rights, read-only servers and wrong passwords, a row locked by
//! another session, a row taken from its holder, a claimant whose clock
//! runs ahead, and (PostgreSQL) a promotion that lost writes.

use super::*;

/// Quotes a name as one identifier of `kind`'s SQL (as an operator's
/// script would), for the tests' own statements.
fn ident(kind: Kind, name: &str) -> String {
    let q = if kind == Kind::Mysql { '`' } else { '"' };
    let doubled = name.replace(q, &format!("{q}{q}"));
    format!("{q}{doubled}{q}")
}

/// A string literal, quotes doubled (and backslashes, for MySQL).
fn literal(kind: Kind, value: &str) -> String {
    let mut v = value.replace('\'', "''");
    if kind == Kind::Mysql {
        v = v.replace('\\', "\\\\");
    }
    format!("'{v}'")
}

/// The URL of `user` (no password) on the server's test database.
fn url_as(server: &Server, user: &str) -> String {
    let addr = server.addr();
    match server.kind {
        Kind::Mysql => format!("mysql://{user}@{addr}/flakeid"),
        _ => format!("postgres://{user}@{addr}/postgres"),
    }
}

/// A lease on `url` of the server's kind with the tests' terms.
fn lease_on(kind: Kind, url: String, prefix: &str) -> Lease {
    let lease = match kind {
        #[cfg(feature = "postgres")]
        Kind::Postgres => Lease::postgres(url),
        #[cfg(feature = "mysql")]
        Kind::Mysql => Lease::mysql(url),
        other => panic!("{other:?} is not a SQL store built in"),
    };
    lease
        .prefix(prefix)
        .ttl(TTL)
        .safety_margin(MARGIN)
        .connect_timeout(Duration::from_secs(5))
}

fn table_error(result: Result<Generator, BuildError>) -> (String, String) {
    match result {
        Err(BuildError::Lease(LeaseError::Table { table, reason })) => (table, reason),
        other => panic!("expected LeaseError::Table, got {other:?}"),
    }
}

/// 64 generators in one process build at once over 16 node ids: 16 get
/// one each, distinct, and the other 48 are told every node id is held;
/// the 16 issue unique IDs under their own node ids, and the table names
/// 16 holders.
pub fn racing_claimers(server: &Server) {
    const CLAIMERS: usize = 64;
    let prefix = unique_prefix("racing");
    let barrier = Barrier::new(CLAIMERS);
    let built: Vec<Result<Generator, BuildError>> = thread::scope(|s| {
        let handles: Vec<_> = (0..CLAIMERS)
            .map(|_| {
                let (barrier, prefix) = (&barrier, &prefix);
                s.spawn(move || {
                    barrier.wait();
                    // A longer TTL: 64 keepers on two cores.
                    build(
                        server
                            .lease(prefix)
                            .node_ids(0..=15)
                            .ttl(Duration::from_secs(5))
                            .safety_margin(Duration::from_secs(1)),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut generators = Vec::new();
    for result in built {
        match result {
            Ok(g) => generators.push(g),
            Err(BuildError::Lease(LeaseError::AllHeld { first: 0, last: 15 })) => {}
            Err(other) => panic!("a claimer failed otherwise than AllHeld: {other}"),
        }
    }
    let mut nodes: Vec<u64> = generators.iter().map(Generator::node_id).collect();
    nodes.sort_unstable();
    assert_eq!(nodes, (0..16).collect::<Vec<_>>(), "one node id each");
    let holders = server.sql(&format!(
        "SELECT COUNT(DISTINCT token) FROM flakeid_leases WHERE prefix = {} AND token IS NOT NULL",
        literal(server.kind, &prefix)
    ));
    assert_eq!(holders.trim(), "16", "the table names 16 holders");
    let mut ids = Vec::new();
    for g in &generators {
        for _ in 0..1_000 {
            let id = g.next_id();
            assert_eq!(node_of(id), g.node_id());
            ids.push(id.to_u64());
        }
    }
    assert_unique(&mut ids);
}

/// A table name and a prefix written to break out of their quotes stay
/// one identifier and one value: the leases work, the table by that exact
/// name holds their rows, and the table they aim at survives.
pub fn hostile_names(server: &Server) {
    let kind = server.kind;
    server.sql("CREATE TABLE canary (x INT)");
    server.sql("INSERT INTO canary VALUES (1)");
    let table = match kind {
        Kind::Mysql => "ids`; DROP TABLE canary; -- \\",
        _ => "ids\"; DROP TABLE canary; --",
    };
    let prefix = "'; DELETE FROM canary; -- \\ \"ünï\"";
    let lease = || lease_on(kind, server.url(), prefix).table(table);
    let a = build(lease()).unwrap();
    let b = build(lease()).unwrap();
    assert_eq!((a.node_id(), b.node_id()), (0, 1));
    let mut ids: Vec<u64> = (0..1_000)
        .flat_map(|_| [a.next_id().to_u64(), b.next_id().to_u64()])
        .collect();
    assert_unique(&mut ids);
    assert_eq!(server.sql("SELECT COUNT(*) FROM canary").trim(), "1");
    let held = server.sql(&format!(
        "SELECT COUNT(*) FROM {} WHERE prefix = {} AND token IS NOT NULL",
        ident(kind, table),
        literal(kind, prefix)
    ));
    assert_eq!(held.trim(), "2", "both rows under the exact prefix");
}

/// A table that is missing (and may not be created), of another shape, or
/// without a key, or a user without a right on it, or one that may not
/// create it: each a `LeaseError::Table` naming the table and what is
/// wrong, and nothing in the table is changed.
pub fn bad_tables(server: &Server) {
    let kind = server.kind;
    let lease = |table: &str| lease_on(kind, server.url(), "bad-tables").table(table);

    let (table, reason) = table_error(build(lease("absent").create_table(false)));
    assert_eq!(table, "absent");
    assert!(reason.contains("missing"), "{reason}");

    let (node_type, expires_type) = match kind {
        Kind::Mysql => ("INT", "DATETIME(6)"),
        _ => ("integer", "timestamptz"),
    };
    let text = if kind == Kind::Mysql {
        "VARCHAR(255)"
    } else {
        "text"
    };
    server.sql(&format!(
        "CREATE TABLE misshapen (prefix {text} NOT NULL, node {node_type} NOT NULL, \
         token {text}, expires {expires_type} NOT NULL, ttl_ms BIGINT NOT NULL, \
         mark_ms BIGINT NOT NULL, PRIMARY KEY (prefix, node))"
    ));
    server.sql(&format!(
        "INSERT INTO misshapen VALUES ('bad-tables', 0, 'someone', {now}, 1000, 42)",
        now = if kind == Kind::Mysql {
            "UTC_TIMESTAMP(6)"
        } else {
            "now()"
        }
    ));
    let (table, reason) = table_error(build(lease("misshapen")));
    assert_eq!(table, "misshapen");
    assert!(reason.contains("column node is"), "{reason}");
    assert_eq!(
        server
            .sql("SELECT token, mark_ms FROM misshapen")
            .split(|c: char| c.is_whitespace() || c == '|')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>(),
        ["someone", "42"],
        "the row is untouched"
    );

    server.sql(&format!(
        "CREATE TABLE keyless (prefix {text} NOT NULL, node BIGINT NOT NULL, token {text}, \
         expires {expires_type} NOT NULL, ttl_ms BIGINT NOT NULL, mark_ms BIGINT NOT NULL)"
    ));
    let (_, reason) = table_error(build(lease("keyless")));
    assert!(reason.contains("no primary key"), "{reason}");

    // The table made by a lease, then a user that may only read it.
    drop(build(lease_on(kind, server.url(), "setup")).unwrap());
    let reader = match kind {
        Kind::Mysql => {
            server.sql("CREATE USER 'reader'@'%'");
            server.sql("GRANT SELECT ON flakeid.flakeid_leases TO 'reader'@'%'");
            "reader"
        }
        _ => {
            server.sql("CREATE ROLE reader LOGIN");
            server.sql("GRANT SELECT ON flakeid_leases TO reader");
            "reader"
        }
    };
    let (table, reason) = table_error(build(lease_on(kind, url_as(server, reader), "reader")));
    assert_eq!(table, "flakeid_leases");
    assert!(reason.contains("INSERT"), "{reason}");

    // A user who may use tables but not create one, given a missing one.
    match kind {
        Kind::Mysql => {
            server.sql("CREATE USER 'noddl'@'%'");
            server.sql("GRANT SELECT, INSERT, UPDATE ON flakeid.* TO 'noddl'@'%'");
        }
        _ => server
            .sql("CREATE ROLE noddl LOGIN")
            .clone_from(&String::new()),
    }
    let (table, reason) = table_error(build(
        lease_on(kind, url_as(server, "noddl"), "noddl").table("never_made"),
    ));
    assert_eq!(table, "never_made");
    assert!(reason.contains("cannot create it"), "{reason}");

    // What the docs ship for such a user: the administrator runs the
    // lease's SQL and grants the rights; the user's lease then works.
    let shipped = lease_on(kind, server.url(), "noddl").table("made_by_admin");
    for statement in shipped.table_sql().unwrap().split(";\n") {
        let statement = statement.trim().trim_end_matches(';');
        if !statement.is_empty() {
            server.sql(statement);
        }
    }
    match kind {
        Kind::Mysql => {
            server.sql("GRANT SELECT, INSERT, UPDATE ON flakeid.made_by_admin TO 'noddl'@'%'")
        }
        _ => server.sql("GRANT SELECT, INSERT, UPDATE ON made_by_admin TO noddl"),
    };
    let g = build(
        lease_on(kind, url_as(server, "noddl"), "noddl")
            .table("made_by_admin")
            .create_table(false),
    )
    .expect("the shipped SQL and grants are enough");
    assert_eq!(g.node_id(), 0);
    g.next_id();
}

/// A read-only server or session, a wrong password, a database that does
/// not exist and TLS required of a server without it are refused
/// (`LeaseError::Refused`), naming why, within the connect timeout.
pub fn refusals(server: &Server) {
    let kind = server.kind;
    let refused = |result: Result<Generator, BuildError>| match result {
        Err(BuildError::Lease(LeaseError::Refused { reason })) => reason,
        other => panic!("expected LeaseError::Refused, got {other:?}"),
    };
    drop(build(lease_on(kind, server.url(), "setup")).unwrap());
    let addr = server.addr();
    match kind {
        Kind::Mysql => {
            server.sql("SET GLOBAL read_only = 1");
            let reason = refused(build(lease_on(kind, server.url(), "ro")));
            server.sql("SET GLOBAL read_only = 0");
            assert!(reason.contains("read-only"), "{reason}");
            server.sql("CREATE USER 'pw'@'%' IDENTIFIED BY 'right'");
            let reason = refused(build(lease_on(
                kind,
                format!("mysql://pw:wrong@{addr}/flakeid"),
                "pw",
            )));
            assert!(reason.contains("Access denied"), "{reason}");
            assert!(
                !reason.contains("wrong"),
                "no password in messages: {reason}"
            );
            let reason = refused(build(lease_on(
                kind,
                format!("mysql://root@{addr}/no_such_db"),
                "db",
            )));
            assert!(reason.contains("no_such_db"), "{reason}");
            // TLS asked for, from a server that offers none.
            let reason = refused(build(lease_on(
                kind,
                format!("mysql://root@{addr}/flakeid?require_ssl=true"),
                "tls",
            )));
            assert!(reason.contains("TLS"), "{reason}");
        }
        _ => {
            server.sql("CREATE ROLE ro LOGIN");
            server.sql("ALTER ROLE ro SET default_transaction_read_only = on");
            server.sql("GRANT SELECT, INSERT, UPDATE ON flakeid_leases TO ro");
            let reason = refused(build(lease_on(kind, url_as(server, "ro"), "ro")));
            assert!(reason.contains("read-only"), "{reason}");
            let reason = refused(build(lease_on(
                kind,
                format!("postgres://postgres@{addr}/no_such_db"),
                "db",
            )));
            assert!(reason.contains("no_such_db"), "{reason}");
            // TLS required, from a server that offers none.
            let reason = refused(build(lease_on(
                kind,
                format!("postgres://postgres@{addr}/postgres?sslmode=require"),
                "tls",
            )));
            assert!(reason.contains("TLS"), "{reason}");
        }
    }
}

/// Another session holds a lock on the holder's row: its renewals wait,
/// are given up at the request timeout, and the generator fences by its
/// deadline (not later); once the lock goes, it claims and issues again.
pub fn locked_row(server: &Server) {
    let kind = server.kind;
    let prefix = unique_prefix("locked");
    let g = build(server.lease(&prefix).node_ids(0..=0)).unwrap();
    g.next_id();
    let client = match kind {
        Kind::Mysql => {
            let mut c = Command::new("mariadb");
            c.args(["-h", "127.0.0.1", "-P", &server.addr().port().to_string()])
                .args(["-u", "root", "flakeid"]);
            c
        }
        _ => {
            let mut c = Command::new("psql");
            c.args([
                "-X",
                "-q",
                "-h",
                "127.0.0.1",
                "-p",
                &server.addr().port().to_string(),
            ])
            .args(["-U", "postgres", "-d", "postgres"]);
            c
        }
    };
    let mut session = { client }
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the database's command-line client");
    let mut input = session.stdin.take().unwrap();
    writeln!(
        input,
        "BEGIN; SELECT node FROM flakeid_leases WHERE prefix = {} AND node = 0 FOR UPDATE;",
        literal(kind, &prefix)
    )
    .unwrap();
    input.flush().unwrap();
    wait_until(
        Duration::from_secs(20),
        "fenced while the row is locked",
        || matches!(g.try_next_id(), Err(GenerateError::Fenced)),
    );
    writeln!(input, "ROLLBACK;").unwrap();
    drop(input);
    let _ = session.wait();
    wait_until(
        Duration::from_secs(20),
        "issuing again after the lock went",
        || g.try_next_id().is_ok(),
    );
    assert_eq!(g.node_id(), 0);
}

/// Another holder takes the generator's row (as a claimer would after the
/// generator's process was paused past its expiry): its next renewal finds
/// the row is not its own, and it stops issuing. `Err` names the failure.
pub fn taken_row_fences(server: &Server, tweak: Tweak) -> Result<(), String> {
    let kind = server.kind;
    let prefix = unique_prefix("taken");
    let g = build(tweak(server.lease(&prefix).node_ids(0..=0))).unwrap();
    g.next_id();
    let later = match kind {
        Kind::Mysql => "UTC_TIMESTAMP(6) + INTERVAL 1 HOUR",
        _ => "now() + interval '1 hour'",
    };
    server.sql(&format!(
        "UPDATE flakeid_leases SET token = 'another-holder', expires = {later} \
         WHERE prefix = {} AND node = 0",
        literal(kind, &prefix)
    ));
    // Renewals come every third of the TTL: five TTLs is far more than
    // the honest store needs.
    let begun = Instant::now();
    while begun.elapsed() < 5 * TTL {
        if let Err(GenerateError::Fenced) = g.try_next_id() {
            let holder = server.holder(&prefix, 0);
            if holder.as_deref() != Some("another-holder") {
                return Err(format!("the row's holder is now {holder:?}"));
            }
            return Ok(());
        }
        thread::sleep(Duration::from_millis(5));
    }
    Err(format!(
        "the generator kept issuing for {:?} under node id 0 after another holder took its row",
        begun.elapsed()
    ))
}

const CLOCK_CHILD_ENV: &str = "FLAKEID_TEST_CLOCK_AHEAD_CHILD";

/// A holder keeps node id 0 alive; a claimant in another process whose
/// wall clock runs 10 minutes ahead (libfaketime) asks for node ids 0..=1:
/// it must get 1, since expiry is the database's to judge. `plant` is
/// planted in the claimant (the plant build). `Err` names the failure.
pub fn clock_ahead(server: &Server, child: &str, plant: Option<&str>) -> Result<(), String> {
    let prefix = unique_prefix("clock-ahead");
    // A long TTL: the holder's row must stay unexpired by the database's
    // clock however long a loaded machine keeps its keeper from renewing;
    // the claimant's clock, 10 minutes ahead, still passes its expiry.
    let holder = build(
        server
            .lease(&prefix)
            .node_ids(0..=1)
            .ttl(Duration::from_secs(30))
            .safety_margin(Duration::from_secs(6)),
    )
    .unwrap();
    assert_eq!(holder.node_id(), 0);
    holder.next_id();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            child,
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CLOCK_CHILD_ENV,
            format!(
                "{} {} {prefix} {}",
                server.kind.name(),
                server.addr(),
                plant.unwrap_or("-")
            ),
        )
        .env(
            "LD_PRELOAD",
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        )
        .env("FAKETIME", "+10m")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("FAKETIME_DONT_RESET", "1")
        .stderr(Stdio::inherit())
        .output()
        .expect("run the test binary as the claimant");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the claimant failed ({}): {stdout}",
        output.status
    );
    let node: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("claimed node "))
        .unwrap_or_else(|| panic!("the claimant said no node id: {stdout}"))
        .trim()
        .parse()
        .unwrap();
    let ahead: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("clock ahead ms "))
        .unwrap_or_else(|| panic!("the claimant said nothing of its clock: {stdout}"))
        .trim()
        .parse()
        .unwrap();
    assert!(
        ahead >= 9 * 60_000,
        "libfaketime moved the claimant's clock: {ahead} ms"
    );
    if node == 0 {
        return Err(
            "the claimant whose clock runs 10 minutes ahead took node id 0 from its live holder"
                .into(),
        );
    }
    assert_eq!(node, 1);
    assert!(holder.try_next_id().is_ok(), "the holder still issues");
    Ok(())
}

/// The claimant of [`clock_ahead`]: run by the test binary itself.
pub fn clock_ahead_child() {
    let Ok(config) = std::env::var(CLOCK_CHILD_ENV) else {
        return;
    };
    let mut words = config.split(' ');
    let kind = Kind::parse(words.next().unwrap());
    let addr: SocketAddr = words.next().unwrap().parse().unwrap();
    let prefix = words.next().unwrap().to_owned();
    let plant = words.next().unwrap();
    let mut lease = lease_at(kind, addr, &prefix).node_ids(0..=1);
    #[cfg(flakeid_plant)]
    if plant != "-" {
        lease = super::planted(plant)(lease);
    }
    #[cfg(not(flakeid_plant))]
    assert_eq!(plant, "-", "plants need the plant build");
    let _ = &mut lease;
    let g = build(lease).expect("the claimant builds");
    // The database's clock, as this process's (faked) clock compares.
    let db_ms: u64 = server_now_ms(kind, addr);
    println!();
    println!("clock ahead ms {}", wall_ms().saturating_sub(db_ms));
    println!("claimed node {}", g.node_id());
}

/// The server's clock in Unix milliseconds, through its command-line
/// client (which this process runs under the same libfaketime, but the
/// server does not).
fn server_now_ms(kind: Kind, addr: SocketAddr) -> u64 {
    let port = addr.port().to_string();
    let output = match kind {
        Kind::Mysql => Command::new("mariadb")
            .args([
                "-h",
                "127.0.0.1",
                "-P",
                &port,
                "-u",
                "root",
                "-N",
                "-B",
                "flakeid",
            ])
            .args(["-e", "SELECT ROUND(UNIX_TIMESTAMP(NOW(6)) * 1000)"])
            .env_remove("LD_PRELOAD")
            .output(),
        _ => Command::new("psql")
            .args([
                "-X",
                "-A",
                "-t",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
            ])
            .args(["-c", "SELECT round(extract(epoch FROM now()) * 1000)"])
            .env_remove("LD_PRELOAD")
            .output(),
    }
    .expect("the database's command-line client");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("the server's clock: {e}: {output:?}"))
}

/// PostgreSQL: a primary and an asynchronous standby; replication is
/// frozen, so the claim of holder A on the primary is lost; the primary is
/// killed (A, which knows only the primary, issues until its deadline) and
/// the standby promoted. Holder B then claims the same node id on the new
/// primary: the epoch rule makes it wait out the longest TTL, so that A
/// and B never issue under node id 0 at once. `Err` names the failure.
#[cfg(feature = "postgres")]
pub fn promotion(tweak: Tweak) -> Result<(), String> {
    // Long enough that A's deadline is well past the promotion.
    const LONG_TTL: Duration = Duration::from_secs(6);
    let mut pair = flakeid_test_servers::Postgres::primary_with_standby();
    let primary = pair.primary.url();
    let standby = pair.standby.url();
    let lease = |url: String, prefix: &str| {
        tweak(
            Lease::postgres(url)
                .prefix(prefix)
                .node_ids(0..=0)
                .ttl(LONG_TTL)
                .safety_margin(LONG_TTL / 5)
                .connect_timeout(Duration::from_secs(5)),
        )
    };
    // The table and its epoch row reach the standby; a standby is refused.
    drop(build(lease(primary.clone(), "setup")).unwrap());
    pair.wait_caught_up();
    match build(lease(standby.clone(), "setup")) {
        Err(BuildError::Lease(LeaseError::Refused { reason })) => {
            assert!(reason.contains("standby"), "{reason}");
        }
        other => panic!("a standby must be refused, got {other:?}"),
    }

    pair.proxy.freeze(true);
    let a = build(lease(primary, "promoted")).unwrap();
    assert_eq!(a.node_id(), 0);
    let a_last = Mutex::new(None::<Instant>);
    let stop = AtomicBool::new(false);
    let mut ids = Vec::new();
    let (b_first, b_ids) = thread::scope(|s| {
        let issuing = s.spawn(|| {
            let mut ids = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(id) = a.try_next_id() {
                    *a_last.lock().unwrap() = Some(Instant::now());
                    ids.push(id.to_u64());
                }
                thread::sleep(Duration::from_micros(200));
            }
            ids
        });
        // A issues; its claim and renewals never reach the standby.
        wait_until(Duration::from_secs(10), "A issues", || {
            a_last.lock().unwrap().is_some()
        });
        pair.primary.kill();
        pair.standby.promote();
        let b = build(lease(standby, "promoted")).unwrap();
        let first = b.next_id();
        let b_first = Instant::now();
        let mut b_ids = vec![first.to_u64()];
        // Past A's latest deadline: its last renewal before the kill plus
        // the TTL.
        let until = b_first + LONG_TTL;
        while Instant::now() < until {
            b_ids.push(b.next_id().to_u64());
            thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        ids = issuing.join().unwrap();
        (b_first, b_ids)
    });
    let a_last = a_last.lock().unwrap().expect("A issued");
    if a_last > b_first {
        return Err(format!(
            "A and B both issued under node id 0: A until {:?} after B's first ID",
            a_last - b_first
        ));
    }
    ids.extend(b_ids);
    assert_unique(&mut ids);
    Ok(())
}
