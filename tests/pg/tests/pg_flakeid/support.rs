//! What every test shares: the check that the extension is installed, its
//! servers (preloaded, a node id, `CREATE EXTENSION`), a client that
//! reports SQLSTATEs, and the check that no server process crashed.

use std::path::{Path, PathBuf};
use std::process::Command;

use flakeid_test_servers::Postgres;
use tokio::runtime::Runtime;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

/// The node id of every test server: under the twitter layout, datacenter
/// 1 and worker 5.
pub const NODE_ID: i64 = 37;

/// The directory of a plant-built `pg_flakeid.so`, for `plants`.
pub const PLANT_VAR: &str = "FLAKEID_PG_PLANT_LIBDIR";

/// How far back [`ClockBack`] sets a server's wall clock.
pub const CLOCK_BACK_MS: i64 = 30_000;

/// A preload library that sets the wall clock (`CLOCK_REALTIME`, and
/// `gettimeofday` and `time` with it) of every process of a server back by
/// `FLAKEID_CLOCK_BACK_MS`, leaving `CLOCK_MONOTONIC` alone, as a clock
/// stepped back does. With `FLAKEID_CLOCK_BACK_FILE` instead, the offset
/// (ms, a native-endian `i64`) is read from that file, mapped shared, at
/// every call: the test steps the server's wall clock while it runs
/// ([`ClockBack::set_back_ms`]).
///
/// Not libfaketime: it turns faking off around the `select` it wraps, and
/// PostgreSQL 15's postmaster, which runs its signal handlers only inside
/// `select`, forks background workers from them (the reservation worker
/// among them). Those children inherit faking off and read the real clock
/// while the backends read the faked one. Built here with `cc`.
const CLOCK_BACK_C: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static long long back_ns;
static const long long *back_ms_file;

__attribute__((constructor)) static void init(void) {
    real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    const char *ms = getenv("FLAKEID_CLOCK_BACK_MS");
    back_ns = ms ? atoll(ms) * 1000000LL : 0;
    const char *file = getenv("FLAKEID_CLOCK_BACK_FILE");
    if (file) {
        int fd = open(file, O_RDONLY);
        if (fd < 0) {
            abort();
        }
        void *map = mmap(NULL, sizeof(long long), PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (map == MAP_FAILED) {
            abort();
        }
        back_ms_file = map;
    }
}

static int realtime(struct timespec *ts) {
    int rc = real_clock_gettime(CLOCK_REALTIME, ts);
    if (rc == 0) {
        long long back = back_ms_file
            ? __atomic_load_n(back_ms_file, __ATOMIC_RELAXED) * 1000000LL
            : back_ns;
        long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec - back;
        ts->tv_sec = ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
    }
    return rc;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
        return realtime(ts);
    }
    return real_clock_gettime(id, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    int rc = realtime(&ts);
    if (rc == 0 && tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    realtime(&ts);
    if (out) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
"#;

/// The clock-back preload library, built into a scratch directory that
/// lives as long as this value.
pub struct ClockBack {
    dir: flakeid_test_servers::ScratchDir,
}

impl ClockBack {
    /// Builds it (`cc`), panicking with the compiler's output if it cannot.
    pub fn build() -> ClockBack {
        use std::os::unix::fs::PermissionsExt;
        let dir = flakeid_test_servers::ScratchDir::under(
            &flakeid_test_servers::scratch_base(),
            "clock-back",
        );
        // The server's user reads the library.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod the clock-back directory");
        let source = dir.path().join("clock_back.c");
        std::fs::write(&source, CLOCK_BACK_C).expect("write clock_back.c");
        let output = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(dir.path().join("clock_back.so"))
            .arg(&source)
            .arg("-ldl")
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run cc (a C compiler builds the clock-back library): {e}")
            });
        assert!(
            output.status.success(),
            "cc could not build the clock-back library:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        ClockBack { dir }
    }

    /// The environment that sets a postmaster's wall clock back by
    /// [`CLOCK_BACK_MS`].
    pub fn env(&self) -> [(&'static str, String); 2] {
        [
            self.preload(),
            ("FLAKEID_CLOCK_BACK_MS", CLOCK_BACK_MS.to_string()),
        ]
    }

    /// The environment that sets a postmaster's wall clock back by what
    /// [`ClockBack::set_back_ms`] last wrote (0 until it is called).
    pub fn env_adjustable(&self) -> [(&'static str, String); 2] {
        let file = self.back_file();
        if !file.exists() {
            self.set_back_ms(0);
        }
        [
            self.preload(),
            ("FLAKEID_CLOCK_BACK_FILE", file.display().to_string()),
        ]
    }

    /// Sets the wall clock of every server started with
    /// [`ClockBack::env_adjustable`] back by `ms` (forward, if negative),
    /// from its processes' next reading on: the file they map is written
    /// in place.
    pub fn set_back_ms(&self, ms: i64) {
        use std::os::unix::fs::{FileExt, PermissionsExt};
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.back_file())
            .expect("open the clock-back file");
        file.write_all_at(&ms.to_ne_bytes(), 0)
            .expect("write the clock-back file");
        file.set_permissions(std::fs::Permissions::from_mode(0o644))
            .expect("chmod the clock-back file");
    }

    fn preload(&self) -> (&'static str, String) {
        let library = self.dir.path().join("clock_back.so");
        ("LD_PRELOAD", library.display().to_string())
    }

    fn back_file(&self) -> PathBuf {
        self.dir.path().join("back_ms")
    }
}

const INSTALL: &str =
    "cd pg && cargo pgrx install --release --pg-config /usr/lib/postgresql/15/bin/pg_config";

/// What `pg_config` of the servers' PostgreSQL says for `flag`.
fn pg_config(flag: &str) -> PathBuf {
    let program = Postgres::program("pg_config");
    let output = Command::new(&program)
        .arg(flag)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(
        output.status.success(),
        "{} {flag} failed: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// Panics, saying how to install it, unless pg_flakeid is installed into
/// the PostgreSQL the servers run (and, for a plant, unless `plant` holds
/// a `pg_flakeid.so`).
pub fn check_installed(plant: Option<&Path>) {
    let library = pg_config("--pkglibdir").join("pg_flakeid.so");
    let control = pg_config("--sharedir").join("extension/pg_flakeid.control");
    for file in [&library, &control] {
        assert!(
            file.is_file(),
            "pg_flakeid is not installed ({} is missing): install it with `{INSTALL}`",
            file.display()
        );
    }
    if let Some(dir) = plant {
        let plant = dir.join("pg_flakeid.so");
        assert!(
            plant.is_file(),
            "{PLANT_VAR}={}: there is no pg_flakeid.so in it; build one with \
             `cd pg && cargo build --release --features plant-... --target-dir /tmp/pgplant` \
             and copy target's release/libpg_flakeid.so there as pg_flakeid.so",
            dir.display()
        );
    }
}

/// The plant build's directory, from [`PLANT_VAR`].
///
/// # Panics
///
/// If it is not set: a plant test has nothing to test without it.
pub fn plant_dir() -> PathBuf {
    match std::env::var_os(PLANT_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => panic!(
            "set {PLANT_VAR} to a directory holding a plant-built pg_flakeid.so (see .ci/test)"
        ),
    }
}

/// The `postgresql.conf` lines of a test server: the library preloaded,
/// the node id, and with a plant the plant's directory first in
/// `dynamic_library_path`, then `extra`.
pub fn conf(plant: Option<&Path>, extra: &[&str]) -> Vec<String> {
    let node = format!("flakeid.node_id = {NODE_ID}");
    conf_with_node(&node, plant, extra)
}

/// [`conf`], with `node` (a `flakeid.node_id` or `flakeid.node_lease`
/// line) for where the node id comes from.
pub fn conf_with_node(node: &str, plant: Option<&Path>, extra: &[&str]) -> Vec<String> {
    let mut lines = vec![
        "shared_preload_libraries = 'pg_flakeid'".to_string(),
        node.to_string(),
    ];
    if let Some(dir) = plant {
        lines.push(format!(
            "dynamic_library_path = '{}:$libdir'",
            dir.display()
        ));
    }
    lines.extend(extra.iter().map(|line| line.to_string()));
    lines
}

/// `lines` as the harness takes them.
pub fn strs(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

/// A fast (or `durable`) server with [`conf`]'s lines and the extension
/// created in its database `postgres`.
pub fn start(durable: bool, plant: Option<&Path>, extra: &[&str]) -> Postgres {
    start_with_lines(durable, plant, conf(plant, extra))
}

/// [`start`] with `lines` (from [`conf`] or [`conf_with_node`]).
pub fn start_with_lines(durable: bool, plant: Option<&Path>, lines: Vec<String>) -> Postgres {
    check_installed(plant);
    let server = if durable {
        Postgres::start_durable_with(&strs(&lines), &[])
    } else {
        Postgres::start_with(&strs(&lines), &[])
    };
    create_extension(&server);
    if let Some(dir) = plant {
        check_plant_loaded(&server, dir);
    }
    server
}

/// `CREATE EXTENSION pg_flakeid`, panicking with the log if it fails.
pub fn create_extension(server: &Postgres) {
    sql(server, "CREATE EXTENSION pg_flakeid");
}

/// Panics unless the postmaster mapped the plant's library, not the
/// installed one: a plant test that ran the real extension proves nothing.
pub fn check_plant_loaded(server: &Postgres, dir: &Path) {
    let pid = server.pid().expect("the server is not running");
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let plant = dir.join("pg_flakeid.so");
    assert!(
        maps.contains(&*plant.to_string_lossy()),
        "the postmaster did not load {} (dynamic_library_path); log:\n{}",
        plant.display(),
        server.log_excerpt()
    );
}

/// [`Postgres::sql`], panicking with the log when it fails.
pub fn sql(server: &Postgres, sql: &str) -> String {
    server
        .sql(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}; log:\n{}", server.log_excerpt()))
}

/// [`sql`]'s answer as an integer.
pub fn sql_i64(server: &Postgres, query: &str) -> i64 {
    let answer = sql(server, query);
    answer
        .parse()
        .unwrap_or_else(|e| panic!("{query}: {answer:?} is not an integer: {e}"))
}

/// Panics if the log says a server process crashed (a signal, a PANIC, or
/// the postmaster's reinitialisation after one).
pub fn assert_no_crash(server: &Postgres) {
    let log = server.log();
    for sign in [
        "terminated by signal",
        "PANIC:",
        "terminating any other active server processes",
        "all server processes terminated",
    ] {
        assert!(
            !log.contains(sign),
            "the server log says a process crashed ({sign:?}):\n{}",
            server.log_excerpt()
        );
    }
    assert!(server.pid().is_some(), "the server is not running");
}

/// An error the server sent: its SQLSTATE, message and hint.
#[derive(Debug)]
pub struct SqlError {
    pub code: String,
    pub message: String,
    pub hint: Option<String>,
}

/// One session (one backend), through tokio-postgres on a runtime of its
/// own.
pub struct Db {
    runtime: Runtime,
    client: tokio_postgres::Client,
}

/// How far the server's clock may lag the wall clock, in µs. It lags by
/// the time between the wall clock's and the monotonic clock's reads in
/// its best comparison (nanoseconds) plus its 0.1% slow pace since the
/// last (about 1 µs per ms): an ID issued just after a millisecond of the
/// wall clock began can carry the millisecond before.
pub const LAG_US: i64 = 100;

/// The database's clock (the wall clock) in Unix ms, less [`LAG_US`],
/// rounded down: no ID issued after this read has an earlier timestamp.
pub fn clock_before_ms(db: &Db) -> i64 {
    db.i64(
        &format!(
            "SELECT floor((extract(epoch FROM clock_timestamp()) * 1000000 - {LAG_US}) / 1000)::bigint"
        ),
        &[],
    )
}

/// The database's clock (the wall clock) in Unix ms, rounded up: no ID
/// issued before this read has a later timestamp.
pub fn clock_after_ms(db: &Db) -> i64 {
    db.i64(
        "SELECT ceil(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
        &[],
    )
}

/// Bounds on the server's clock less the wall clock, in µs, from `calls`
/// calls in one PL/pgSQL loop: `(low, high)`. Each call's ID gives the
/// server's clock to the millisecond, and the database's clock read just
/// before and after it gives the wall clock's; the gap lies in every
/// call's interval, so in their intersection. (The gap moves by about
/// 1 µs per ms while the loop runs, so `low` can exceed `high` by a few.)
pub fn gap_us(db: &Db, calls: i32) -> (i64, i64) {
    db.query(
        "CREATE OR REPLACE FUNCTION pg_temp.gap(n int) RETURNS bigint[] LANGUAGE plpgsql AS $$ \
         DECLARE before bigint; after bigint; issued bigint; \
                 low bigint := -9223372036854775807; high bigint := 9223372036854775807; \
         BEGIN \
           FOR i IN 1..n LOOP \
             before := floor(extract(epoch FROM clock_timestamp()) * 1000000); \
             issued := floor(extract(epoch FROM flakeid_timestamp(flakeid_next_id())) * 1000) \
                       * 1000; \
             after := ceil(extract(epoch FROM clock_timestamp()) * 1000000); \
             /* the server's clock at the call: in [issued, issued + 1000) µs; \
                the wall clock's: in [before, after] */ \
             low := greatest(low, issued - after); \
             high := least(high, issued + 1000 - before); \
           END LOOP; \
           RETURN ARRAY[low, high]; \
         END $$",
        &[],
    );
    let bounds: Vec<i64> = db.query("SELECT pg_temp.gap($1)", &[&calls])[0].get(0);
    (bounds[0], bounds[1])
}

/// Panics unless, over `calls` calls ([`gap_us`]), the server's clock is
/// never ahead of the wall clock and never more than [`LAG_US`] behind it:
/// every ID's millisecond holds a time between the wall clock's reads
/// around its call, less [`LAG_US`].
pub fn at_the_wall_clock_to_the_us(db: &Db, calls: i32, when: &str) {
    let (low, high) = gap_us(db, calls);
    assert!(
        low <= 0 && high >= -LAG_US,
        "{when}: over {calls} calls, the server's clock is {low}..{high} µs ahead of the \
         wall clock, not within {LAG_US} µs behind it"
    );
}

impl Db {
    /// A session on the server's database `postgres`.
    pub fn connect(server: &Postgres) -> Db {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let config = format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres connect_timeout=10",
            server.port()
        );
        let (client, connection) = runtime
            .block_on(tokio_postgres::connect(&config, NoTls))
            .unwrap_or_else(|e| panic!("cannot connect: {e}; log:\n{}", server.log_excerpt()));
        runtime.spawn(async move {
            let _ = connection.await;
        });
        Db { runtime, client }
    }

    /// The rows, or the server's error.
    pub fn try_query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, SqlError> {
        self.runtime
            .block_on(self.client.query(sql, params))
            .map_err(|e| match e.as_db_error() {
                Some(db) => SqlError {
                    code: db.code().code().to_owned(),
                    message: db.message().to_owned(),
                    hint: db.hint().map(str::to_owned),
                },
                None => panic!("{sql}: not an error from the server: {e}"),
            })
    }

    /// The rows, panicking on an error.
    pub fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Vec<Row> {
        self.try_query(sql, params)
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }

    /// The first column of every row, as integers.
    pub fn i64s(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Vec<i64> {
        self.query(sql, params).iter().map(|r| r.get(0)).collect()
    }

    /// The first column of the one row, as an integer.
    pub fn i64(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> i64 {
        let rows = self.i64s(sql, params);
        assert_eq!(rows.len(), 1, "{sql}: {} rows, not one", rows.len());
        rows[0]
    }

    /// The error `sql` must raise, panicking if it succeeds.
    pub fn error(&self, sql: &str) -> SqlError {
        match self.try_query(sql, &[]) {
            Ok(rows) => panic!("{sql}: succeeded ({} rows), expected an error", rows.len()),
            Err(e) => e,
        }
    }

    /// Panics unless `sql` raises SQLSTATE `code` with a message holding
    /// `words`, and the session then still answers; returns the error.
    pub fn expect_error(&self, sql: &str, code: &str, words: &str) -> SqlError {
        let error = self.error(sql);
        assert_eq!(error.code, code, "{sql}: {error:?}");
        assert!(
            error.message.contains(words),
            "{sql}: the message does not say {words:?}: {error:?}"
        );
        assert_eq!(
            self.i64("SELECT 1::bigint", &[]),
            1,
            "the session did not survive {sql}"
        );
        error
    }
}

/// Whether the integers strictly increase.
pub fn increasing(ids: &[i64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}
