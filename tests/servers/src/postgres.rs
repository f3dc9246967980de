//! Throwaway PostgreSQL servers: Debian's `postgresql` package, a fresh
//! cluster (`initdb`) in a scratch directory, on 127.0.0.1 and a free port,
//! with trust authentication, stopped and removed when dropped (kept after
//! a panic or with `FLAKEID_KEEP_TEST_DIRS`, as every scratch directory).
//!
//! Two kinds: fast ([`Postgres::start`], for the SQL tests: nothing they
//! write has to outlive the server) and durable ([`Postgres::start_durable`],
//! for the lease tests, which kill the server and expect every committed
//! row back). And a primary with an asynchronous streaming standby that
//! replicates through a [`Proxy`] ([`Postgres::primary_with_standby`]), so
//! a failover test can stop replication and lose writes on purpose.
//!
//! The lease tests kill servers ([`Postgres::kill`]) and pause them
//! ([`Postgres::pause`]: SIGSTOP to every process); [`Postgres::sql`] runs SQL as the
//! superuser through `psql`, for what a test sets up or checks behind the
//! lease's back.

use std::ffi::CString;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::{Proxy, ScratchDir, free_port, is_root, scratch_base, signal};

/// Where Debian installs each major version's programs.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// How long a server may take to accept its first connection: initdb and
/// start-up (or crash recovery) on a loaded 2-core CI machine take seconds,
/// not minutes.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long a standby may take to replay what its primary wrote: on
/// loopback it takes milliseconds; a minute means replication is broken.
const CATCH_UP_WITHIN: Duration = Duration::from_secs(60);

/// Lines of the server's log a panic message shows.
const LOG_LINES: usize = 80;

/// A PostgreSQL server with its own cluster, for tests. The superuser is
/// `postgres`, with no password (trust), and the database `postgres` exists.
pub struct Postgres {
    /// For messages: `postgres`, `postgres-primary`, `postgres-standby`.
    name: &'static str,
    /// Owned by the user the server runs as; holds the cluster (`data/`),
    /// the Unix socket and `server.log`. Dropped after the server stopped.
    dir: ScratchDir,
    port: u16,
    /// The postmaster (run as the cluster's owner directly, not through
    /// `runuser`, so its id is the one to signal).
    child: Option<Child>,
    /// The `postgres` system user's uid and gid when the tests run as root
    /// (PostgreSQL refuses to run as root).
    run_as: Option<(u32, u32)>,
    /// The `bin` directory of the version that made the cluster.
    bin: PathBuf,
    /// `name=value` settings the postmaster gets at every start.
    settings: Vec<String>,
    /// Environment variables the postmaster gets at every start (and
    /// restart): the `*_with` constructors', [`Postgres::set_env`].
    env: Vec<(String, String)>,
}

/// What a test adds to a server (the `*_with` constructors): lines for
/// its `postgresql.conf` (written once, when the cluster is made, so
/// `ALTER SYSTEM` can still override them) and environment variables for
/// its postmaster (at every start and restart), e.g. an `LD_PRELOAD`
/// library that sets the clock back. (libfaketime's does not reach every
/// process: PostgreSQL 15's postmaster forks background workers from
/// signal handlers, inside the `select` that libfaketime runs unfaked.)
#[derive(Debug, Clone, Default)]
struct Extra {
    conf: Vec<String>,
    env: Vec<(String, String)>,
}

impl Extra {
    fn new(conf: &[&str], env: &[(&str, &str)]) -> Extra {
        Extra {
            conf: conf.iter().map(|line| line.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

/// Settings of a server that loses what it has not written out when it
/// is killed: the SQL tests exercise conversions, not the disk.
const FAST: &[&str] = &[
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
];

/// Settings of a server whose committed transactions survive SIGKILL (and
/// would survive a power cut on a real disk): PostgreSQL's defaults, named
/// so that no configuration file changes them behind the tests' back.
const DURABLE: &[&str] = &["fsync=on", "synchronous_commit=on", "full_page_writes=on"];

/// Settings for streaming replication, on both servers of a pair: the
/// standby is asynchronous (no `synchronous_standby_names`), so a commit on
/// the primary never waits for it, and what it has not received is lost
/// when it is promoted. `wal_keep_size` keeps the WAL a standby cut off for
/// a while still needs when it comes back.
const REPLICATION: &[&str] = &[
    "wal_level=replica",
    "max_wal_senders=4",
    "wal_keep_size=128MB",
    "hot_standby=on",
    "synchronous_standby_names=",
];

impl Postgres {
    /// Creates a cluster and starts a fast server on it (`fsync`,
    /// `synchronous_commit` and `full_page_writes` off: a SIGKILL may lose
    /// committed transactions), returning once it accepts a connection.
    ///
    /// # Panics
    ///
    /// If PostgreSQL is not installed, `initdb` fails, or the server exits
    /// or does not answer within 60 s (the message carries its log).
    pub fn start() -> Postgres {
        Postgres::start_with(&[], &[])
    }

    /// As [`Postgres::start`], with `conf`'s lines (`name = value`) appended
    /// to the cluster's `postgresql.conf` and `env` in the postmaster's
    /// environment (at every start: see [`Postgres::set_env`]).
    pub fn start_with(conf: &[&str], env: &[(&str, &str)]) -> Postgres {
        let mut server = Postgres::create("postgres", FAST, &Extra::new(conf, env));
        server.spawn();
        server
    }

    /// As [`Postgres::start`], with PostgreSQL's durable defaults (`fsync`,
    /// `synchronous_commit` and `full_page_writes` on): every transaction
    /// that committed is there after [`Postgres::kill`] and
    /// [`Postgres::restart`]. For the lease tests. (The scratch directory
    /// is on tmpfs where there is one, so fsync costs nothing; what matters
    /// is that a commit waits until its WAL left the server's memory.)
    pub fn start_durable() -> Postgres {
        Postgres::start_durable_with(&[], &[])
    }

    /// As [`Postgres::start_durable`], with `conf`'s lines and `env` as
    /// [`Postgres::start_with`] takes them.
    pub fn start_durable_with(conf: &[&str], env: &[(&str, &str)]) -> Postgres {
        let mut server = Postgres::create("postgres", DURABLE, &Extra::new(conf, env));
        server.spawn();
        server
    }

    /// A durable primary (as [`Postgres::start_durable`]) and an
    /// asynchronous hot standby streaming from it through a [`Proxy`]: the
    /// standby is a `pg_basebackup -R` of the primary, taken through the
    /// proxy, in a directory of its own and on a port of its own. Freezing
    /// or cutting the proxy stops replication (and only replication: clients
    /// reach both servers directly), so what the primary commits then is
    /// missing on the standby when it is [promoted](Postgres::promote).
    ///
    /// # Panics
    ///
    /// As [`Postgres::start`], or if the base backup fails.
    pub fn primary_with_standby() -> PgPair {
        Postgres::primary_with_standby_with(&[], &[], &[])
    }

    /// As [`Postgres::primary_with_standby`], with `conf`'s lines in both
    /// servers' `postgresql.conf` (the base backup copies the primary's to
    /// the standby), `standby_conf`'s after them in the standby's only (so
    /// they win there), and `env` in both postmasters' environment (change
    /// one's with [`Postgres::set_env`] and [`Postgres::restart`]).
    pub fn primary_with_standby_with(
        conf: &[&str],
        standby_conf: &[&str],
        env: &[(&str, &str)],
    ) -> PgPair {
        let primary_options = &Extra::new(conf, env);
        let standby_options = &Extra::new(standby_conf, env);
        let settings: Vec<&str> = DURABLE.iter().chain(REPLICATION).copied().collect();
        let mut primary = Postgres::create("postgres-primary", &settings, primary_options);
        // initdb's pg_hba.conf already lets replication connections from
        // 127.0.0.1 in (trust); said here so that a changed default does
        // not break the pair. The first matching line wins.
        let hba = primary.data().join("pg_hba.conf");
        let text = std::fs::read_to_string(&hba)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", hba.display()));
        std::fs::write(
            &hba,
            format!("host replication postgres 127.0.0.1/32 trust\n{text}"),
        )
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", hba.display()));
        primary.spawn();
        let proxy = Proxy::new(primary.addr());

        let mut standby = Postgres::empty("postgres-standby", &settings, standby_options);
        let log = standby.log_file();
        let status = standby
            .command("pg_basebackup")
            .arg("-D")
            .arg(standby.data())
            // Writes standby.signal, and primary_conninfo naming the host
            // and port it copied from: the proxy's.
            .args(["-R", "-X", "stream", "-c", "fast", "--no-sync"])
            .args(["-h", "127.0.0.1", "-p", &proxy.addr().port().to_string()])
            .args(["-U", "postgres"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .status()
            .unwrap_or_else(|e| panic!("cannot run pg_basebackup: {e}"));
        if !status.success() {
            panic!(
                "pg_basebackup from the primary failed ({status}); standby's log:\n{}\n\
                 primary's log:\n{}",
                standby.log_tail(),
                primary.log_tail()
            );
        }
        standby.append_conf(&standby_options.conf);
        standby.spawn();
        PgPair {
            standby,
            proxy,
            primary,
        }
    }

    /// A scratch directory owned by the user the server runs as, with no
    /// cluster in it yet.
    fn empty(name: &'static str, settings: &[&str], options: &Extra) -> Postgres {
        let dir = ScratchDir::under(&scratch_base(), name);
        let run_as = is_root().then(|| {
            system_user("postgres").unwrap_or_else(|| {
                panic!(
                    "running as root and there is no postgres user; install Debian's \
                     postgresql (.ci/test does)"
                )
            })
        });
        if let Some((uid, gid)) = run_as {
            chown(dir.path(), uid, gid);
        }
        Postgres {
            name,
            dir,
            port: free_port(),
            child: None,
            run_as,
            bin: bin_dir(),
            settings: settings.iter().map(|s| s.to_string()).collect(),
            env: options.env.clone(),
        }
    }

    /// [`Postgres::empty`], and a cluster made by `initdb`.
    fn create(name: &'static str, settings: &[&str], options: &Extra) -> Postgres {
        let server = Postgres::empty(name, settings, options);
        let log = server.log_file();
        let status = server
            .command("initdb")
            .arg("-D")
            .arg(server.data())
            .args(["--username", "postgres", "--auth", "trust"])
            .args(["--encoding", "UTF8", "--no-locale", "--no-sync"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .status()
            .unwrap_or_else(|e| panic!("cannot run initdb: {e}"));
        if !status.success() {
            panic!("initdb failed ({status}); log:\n{}", server.log_tail());
        }
        server.append_conf(&options.conf);
        server
    }

    /// Appends lines to the cluster's `postgresql.conf` (appending keeps
    /// the file's owner).
    fn append_conf(&self, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        let path = self.data().join("postgresql.conf");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
        let mut text = String::from("\n# Added by the test (Postgres::start_with and friends)\n");
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        file.write_all(text.as_bytes())
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }

    /// Sets (`Some`) or removes (`None`) an environment variable of the
    /// postmaster from its next start on ([`Postgres::restart`]); a
    /// running server keeps the environment it started with.
    pub fn set_env(&mut self, key: &str, value: Option<&str>) {
        self.env.retain(|(k, _)| k != key);
        if let Some(value) = value {
            self.env.push((key.to_owned(), value.to_owned()));
        }
    }

    /// The path of a program of the newest installed PostgreSQL (the
    /// version the servers run): `psql`, `pgbench`, `pg_config`, ...
    pub fn program(name: &str) -> PathBuf {
        bin_dir().join(name)
    }

    /// The server's whole log (initdb's, pg_basebackup's and every
    /// start's), e.g. to check that no process crashed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// The last lines of the server's log, for a panic message.
    pub fn log_excerpt(&self) -> String {
        self.log_tail()
    }

    /// Starts the postmaster on the cluster and waits until it accepts a
    /// connection.
    fn spawn(&mut self) {
        assert!(self.child.is_none(), "{} is already running", self.name);
        let log = self.log_file();
        let mut postgres = self.command("postgres");
        postgres
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string()])
            // TCP on the loopback address only; the Unix socket in our
            // directory rather than the system's /var/run/postgresql.
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.dir.path().display()
            ))
            // Parallel queries' shared memory as files in the cluster's
            // directory (pg_dynshmem/), not /dev/shm: what a killed server
            // leaves goes with the directory.
            .args(["-c", "dynamic_shared_memory_type=mmap"]);
        for setting in &self.settings {
            postgres.arg("-c").arg(setting);
        }
        for (key, value) in &self.env {
            postgres.env(key, value);
        }
        let child = postgres
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.name));
        self.child = Some(child);
        self.wait_ready();
    }

    /// `127.0.0.1` and the server's port.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`: a URL that
    /// tokio-postgres, sqlx and psql all take.
    pub fn url(&self) -> String {
        format!("postgres://postgres@{}/postgres", self.addr())
    }

    /// The postmaster's process id while it runs: SIGSTOP to it freezes
    /// the server for new connections (sessions already open go on in
    /// their own backends; stop those with [`Postgres::backend_pids`]).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The processes the postmaster started (one backend per session, and
    /// its helpers: checkpointer, WAL writer, WAL sender or receiver, ...).
    pub fn backend_pids(&self) -> Vec<u32> {
        self.pid().map(children_of).unwrap_or_default()
    }

    /// SIGSTOP to the postmaster and then to every process it started: the
    /// whole server stops answering (open sessions too) while its sockets
    /// stay open, as a server that hangs. [`Postgres::resume`] undoes it;
    /// [`Postgres::kill`], [`Postgres::stop`] and drop work on a paused
    /// server.
    pub fn pause(&self) {
        if let Some(postmaster) = self.pid() {
            // First, so it starts no process that would miss the signal.
            pause_process(postmaster);
            for pid in children_of(postmaster) {
                signal(pid, libc::SIGSTOP);
            }
        }
    }

    /// SIGCONT to every process of the server, the postmaster last.
    pub fn resume(&self) {
        if let Some(postmaster) = self.pid() {
            for pid in children_of(postmaster) {
                signal(pid, libc::SIGCONT);
            }
            signal(postmaster, libc::SIGCONT);
        }
    }

    /// Runs `sql` as the superuser through `psql` (of the cluster's
    /// version, over TCP, database `postgres`): unaligned, tuples only,
    /// stopping at the first error. Returns what it printed, trimmed (the
    /// last statement's rows, one a line, columns split by `|`), or what it
    /// said on stderr. Several statements in one string run in one
    /// transaction. Hangs while the server is stopped (SIGSTOP).
    pub fn sql(&self, sql: &str) -> Result<String, String> {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
            ])
            .arg("-c")
            .arg(sql)
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// Whether the server is a standby (`pg_is_in_recovery()`).
    ///
    /// # Panics
    ///
    /// If the server does not answer.
    pub fn is_in_recovery(&self) -> bool {
        match self.sql("SELECT pg_is_in_recovery()") {
            Ok(answer) => answer == "t",
            Err(e) => panic!(
                "{} did not say whether it is in recovery: {e}; log:\n{}",
                self.name,
                self.log_tail()
            ),
        }
    }

    /// Promotes a standby to a primary, returning once it accepts writes:
    /// what it had not received from its old primary is gone for good.
    ///
    /// # Panics
    ///
    /// If the server is not a standby, or not promoted within 60 s.
    pub fn promote(&self) {
        match self.sql("SELECT pg_promote(true, 60)") {
            Ok(answer) if answer == "t" => {}
            answer => panic!(
                "{} was not promoted: {answer:?}; log:\n{}",
                self.name,
                self.log_tail()
            ),
        }
        assert!(
            !self.is_in_recovery(),
            "{} is still in recovery after its promotion; log:\n{}",
            self.name,
            self.log_tail()
        );
    }

    /// SIGKILL to the postmaster and every process it started: no shutdown
    /// checkpoint, nothing written beyond what was (a crash; a durable
    /// server recovers its committed transactions at the next start).
    /// Returns once they are all gone, so that [`Postgres::restart`] finds
    /// the shared memory free. A server that is not running is left alone.
    ///
    /// # Panics
    ///
    /// If a backend outlives SIGKILL by 30 s.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let postmaster = child.id();
        // Backends are session leaders of their own (PostgreSQL makes each
        // child one), so a process group does not reach them: they are
        // found as the postmaster's children, while it is stopped and
        // cannot start another.
        pause_process(postmaster);
        // Each with its start time: once it is gone, its pid may be reused
        // (pid_max is 32768, and the tests start thousands of threads).
        let backends: Vec<(u32, Option<u64>)> = children_of(postmaster)
            .into_iter()
            .map(|pid| (pid, start_time(pid)))
            .collect();
        for &(pid, _) in &backends {
            signal(pid, libc::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        let begun = Instant::now();
        while let Some(&(pid, _)) = backends
            .iter()
            .find(|&&(pid, started)| is_alive(pid) && start_time(pid) == started)
        {
            if begun.elapsed() > Duration::from_secs(60) {
                panic!(
                    "process {pid} of {} outlived SIGKILL by 60 s (state {:?}, parent {:?}); \
                     log:\n{}",
                    self.name,
                    process_state(pid),
                    stat(pid).map(|(_, parent)| parent),
                    self.log_tail()
                );
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.remove_shared_memory(postmaster);
    }

    /// Removes the small System V segment a killed postmaster leaves (its
    /// id is in `postmaster.pid`): a restart would, but a server killed and
    /// then dropped would leave one behind for every test run. Only a
    /// segment that postmaster created, and that nothing has attached.
    /// (The dynamic shared memory is in the cluster's directory:
    /// `dynamic_shared_memory_type=mmap`.)
    fn remove_shared_memory(&self, postmaster: u32) {
        let Some(id) = self.shared_memory_id() else {
            return;
        };
        // SAFETY: an all-zero shmid_ds is a valid value that IPC_STAT
        // overwrites; shmctl touches nothing else of ours.
        unsafe {
            let mut segment: libc::shmid_ds = std::mem::zeroed();
            if libc::shmctl(id, libc::IPC_STAT, &mut segment) == 0
                && u32::try_from(segment.shm_cpid) == Ok(postmaster)
                && segment.shm_nattch == 0
            {
                libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
            }
        }
    }

    /// Starts the server again on the same port and cluster (killing it
    /// first if it runs), returning once it accepts a connection: after
    /// [`Postgres::kill`], once crash recovery is done.
    ///
    /// # Panics
    ///
    /// As [`Postgres::start`].
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Fast shutdown (SIGINT to the postmaster: sessions are ended, no
    /// waiting for clients, a shutdown checkpoint), then [`Postgres::kill`]
    /// if it has not ended in 30 s. [`Postgres::restart`] starts it again.
    pub fn stop(&mut self) {
        let Some(child) = &mut self.child else {
            return;
        };
        let postmaster = child.id();
        // A paused server (or backend) would not hear SIGINT (SIGTERM).
        signal(postmaster, libc::SIGCONT);
        for pid in children_of(postmaster) {
            signal(pid, libc::SIGCONT);
        }
        signal(postmaster, libc::SIGINT);
        let begun = Instant::now();
        while begun.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = child.try_wait() {
                self.child = None;
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    /// The id of the System V segment the postmaster made, from line 7
    /// (key and id) of `postmaster.pid`.
    fn shared_memory_id(&self) -> Option<libc::c_int> {
        let text = std::fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        let line = text.lines().nth(6)?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// The cluster's directory.
    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A program of the cluster's version run as the cluster's owner, in its
    /// directory (the tests' working directory may be closed to that user).
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.run_as {
            // std drops root's supplementary groups with the uid.
            command.uid(uid).gid(gid);
        }
        command.current_dir(self.dir.path());
        command
    }

    fn log_file(&self) -> std::fs::File {
        let path = self.dir.path().join("server.log");
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()))
    }

    /// The last lines of the server's log (initdb's, pg_basebackup's and
    /// every start's), for a panic message.
    fn log_tail(&self) -> String {
        log_tail(&self.dir.path().join("server.log"))
    }

    /// Polls with a real connection until the server accepts one: a port
    /// that is open is not enough, since a starting server answers "the
    /// database system is starting up".
    fn wait_ready(&mut self) {
        let begun = Instant::now();
        while begun.elapsed() < READY_WITHIN {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                panic!(
                    "{} exited at start ({status}); log:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            if self.accepts_connection() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "{} did not accept a connection in {READY_WITHIN:?}; log:\n{}",
            self.name,
            self.log_tail()
        );
    }

    /// One connection in the frontend/backend protocol (version 3.0), as user
    /// `postgres` to database `postgres`: true once the server says it is
    /// ready for a query. A client library would do, but this crate keeps
    /// to std.
    fn accepts_connection(&self) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&self.addr(), Duration::from_millis(500)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut body = 196_608_u32.to_be_bytes().to_vec(); // protocol 3.0
        for part in ["user", "postgres", "database", "postgres", ""] {
            body.extend_from_slice(part.as_bytes());
            body.push(0);
        }
        let mut startup = (body.len() as u32 + 4).to_be_bytes().to_vec();
        startup.extend_from_slice(&body);
        if s.write_all(&startup).is_err() {
            return false;
        }
        // Each message: a type byte, then its length (itself included).
        loop {
            let mut header = [0u8; 5];
            if s.read_exact(&mut header).is_err() {
                return false;
            }
            let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
            let mut payload = vec![0u8; (length as usize).saturating_sub(4)];
            if s.read_exact(&mut payload).is_err() {
                return false;
            }
            match header[0] {
                b'Z' => {
                    let _ = s.write_all(&[b'X', 0, 0, 0, 4]); // Terminate
                    return true;
                }
                // An error ("starting up"), or a password asked for: not
                // the server this harness configured, or not ready yet.
                b'E' => return false,
                b'R' if payload.get(..4) != Some(&[0, 0, 0, 0]) => return false,
                _ => {}
            }
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        // The directory goes with `dir` (kept after a panic or with
        // FLAKEID_KEEP_TEST_DIRS).
    }
}

/// A primary and its asynchronous streaming standby, which replicates
/// through [`PgPair::proxy`]; made by [`Postgres::primary_with_standby`].
/// Clients connect to each server directly.
///
/// Fields drop in order: the standby first, then the proxy (closing the
/// replication connection, so the primary's WAL sender does not wait for a
/// standby that is gone), then the primary.
pub struct PgPair {
    /// Streams from the primary through the proxy; hot (answers reads).
    pub standby: Postgres,
    /// Between the standby's WAL receiver (and the base backup) and the
    /// primary: [`Proxy::freeze`] or [`Proxy::cut`] it to stop replication.
    pub proxy: Proxy,
    /// Durable, as [`Postgres::start_durable`].
    pub primary: Postgres,
}

impl PgPair {
    /// Returns once the standby has replayed everything the primary had
    /// written when this was called (its `pg_last_wal_replay_lsn()` has
    /// reached the primary's `pg_current_wal_lsn()`).
    ///
    /// # Panics
    ///
    /// If the primary does not answer, or the standby has not caught up
    /// within 60 s (replication frozen, cut, or broken); the message
    /// carries both logs.
    pub fn wait_caught_up(&self) {
        let target = self
            .primary
            .sql("SELECT pg_current_wal_lsn()")
            .unwrap_or_else(|e| {
                panic!(
                    "the primary did not say where its WAL ends: {e}; log:\n{}",
                    self.primary.log_tail()
                )
            });
        let query =
            format!("SELECT coalesce(pg_last_wal_replay_lsn() >= '{target}'::pg_lsn, false)");
        let begun = Instant::now();
        let mut last = Ok(String::new());
        while begun.elapsed() < CATCH_UP_WITHIN {
            last = self.standby.sql(&query);
            if matches!(&last, Ok(answer) if answer == "t") {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the standby did not replay the primary's WAL up to {target} in \
             {CATCH_UP_WITHIN:?} (last answer {last:?}); standby's log:\n{}\n\
             primary's log:\n{}",
            self.standby.log_tail(),
            self.primary.log_tail()
        );
    }
}

/// The `bin` directory of the newest PostgreSQL under /usr/lib/postgresql
/// (Debian keeps each major version in its own directory).
fn bin_dir() -> PathBuf {
    let newest = std::fs::read_dir(DEBIAN_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version);
    match newest {
        Some((_, bin)) => bin,
        None => panic!(
            "no PostgreSQL under {DEBIAN_ROOT}/<version>/bin; install Debian's \
             postgresql (.ci/test does)"
        ),
    }
}

/// The uid and gid of a system user, if there is one.
pub(crate) fn system_user(name: &str) -> Option<(u32, u32)> {
    let name = CString::new(name).ok()?;
    // SAFETY: an all-zero passwd is a valid value (null pointers, zero ids)
    // that getpwnam_r overwrites.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, and `buf` for the length
    // given; getpwnam_r is the thread-safe form (tests run in threads).
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut entry,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    (rc == 0 && !found.is_null()).then_some((entry.pw_uid, entry.pw_gid))
}

/// chown(2), panicking with the path.
fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("cannot chown {} to {uid}:{gid}: {e}", path.display()));
}

/// The last [`LOG_LINES`] lines of a log file.
pub(crate) fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_LINES)..].join("\n")
}

/// A process's state letter (`R`, `S`, `T` stopped, `Z` zombie, ...) and
/// its parent's id, from `/proc/<pid>/stat`; `None` if it is gone.
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: the name may hold spaces and parentheses.
    let mut rest = text[text.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let parent = rest.next()?.parse().ok()?;
    Some((state, parent))
}

/// SIGSTOP, returning once the process has stopped (a signal is delivered
/// when the process next runs: a postmaster may still fork meanwhile), or
/// has exited, or after 10 s.
fn pause_process(pid: u32) {
    signal(pid, libc::SIGSTOP);
    let begun = Instant::now();
    while process_state(pid).is_some_and(|s| s != 'T' && s != 'Z')
        && begun.elapsed() < Duration::from_secs(10)
    {
        thread::sleep(Duration::from_millis(1));
    }
}

fn process_state(pid: u32) -> Option<char> {
    stat(pid).map(|(state, _)| state)
}

/// When a process started (clock ticks after boot, `/proc/<pid>/stat`'s
/// 22nd field): a pid and its start time name one process, a pid alone
/// may be reused.
fn start_time(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after `(comm)` start at the 3rd: the 22nd is the 20th of them.
    text[text.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Whether a process still runs: a zombie holds no memory or sockets.
fn is_alive(pid: u32) -> bool {
    process_state(pid).is_some_and(|s| s != 'Z')
}

/// The processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat(pid).is_some_and(|(_, p)| p == parent))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sql`, panicking with the server's log when it fails.
    fn sql(server: &Postgres, sql: &str) -> String {
        server
            .sql(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}; log:\n{}", server.log_tail()))
    }

    #[test]
    fn a_fast_server_answers_sql_and_reports_errors() {
        let server = Postgres::start();
        assert_eq!(sql(&server, "SELECT 1 + 1, 'a'"), "2|a");
        let error = server.sql("SELECT * FROM nowhere").unwrap_err();
        assert!(error.contains("nowhere"), "{error}");
    }

    #[test]
    fn a_durable_server_keeps_committed_rows_through_kill_and_restart() {
        let mut server = Postgres::start_durable();
        sql(&server, "CREATE TABLE t (v int); INSERT INTO t VALUES (1)");
        // A session of its own: the backend must die with the postmaster.
        let backends = server.backend_pids();
        assert!(!backends.is_empty(), "no backend processes");
        let postmaster = server.pid().unwrap();
        let segment = server
            .shared_memory_id()
            .expect("no segment id in postmaster.pid");
        server.kill();
        assert_eq!(server.pid(), None);
        assert!(!is_alive(postmaster), "the postmaster outlived kill()");
        for pid in backends {
            assert!(!is_alive(pid), "backend {pid} outlived kill()");
        }
        // SAFETY: IPC_STAT writes the shmid_ds it is given.
        let stat = unsafe {
            let mut ds: libc::shmid_ds = std::mem::zeroed();
            libc::shmctl(segment, libc::IPC_STAT, &mut ds)
        };
        assert_eq!(stat, -1, "kill() left the shared memory segment {segment}");
        server.restart();
        assert_eq!(sql(&server, "SELECT v FROM t"), "1");
        // Paused, every process is stopped; resumed, it answers again.
        server.pause();
        let all = [vec![server.pid().unwrap()], server.backend_pids()].concat();
        for &pid in &all {
            let begun = Instant::now();
            // A backend that was ending waits, a zombie, for the postmaster.
            while process_state(pid).is_some_and(|s| s != 'T' && s != 'Z') {
                assert!(begun.elapsed() < READY_WITHIN, "process {pid} not stopped");
                thread::sleep(Duration::from_millis(5));
            }
        }
        server.resume();
        assert_eq!(sql(&server, "SELECT v FROM t"), "1");
        // Killing a paused server on restart, and stopping one cleanly.
        server.pause();
        server.restart();
        server.pause();
        server.stop();
        server.restart();
        assert_eq!(sql(&server, "SELECT v FROM t"), "1");
    }

    /// The failover test's premise: the standby replays what the primary
    /// commits while replication flows, and what the primary commits while
    /// the proxy is frozen is missing on the standby once promoted.
    #[test]
    fn a_standby_loses_the_writes_made_while_replication_is_frozen() {
        let pair = Postgres::primary_with_standby();
        assert!(pair.standby.is_in_recovery());
        assert!(!pair.primary.is_in_recovery());
        sql(
            &pair.primary,
            "CREATE TABLE t (v int); INSERT INTO t VALUES (1)",
        );
        pair.wait_caught_up();
        assert_eq!(sql(&pair.standby, "SELECT v FROM t"), "1");

        pair.proxy.freeze(true);
        sql(&pair.primary, "INSERT INTO t VALUES (2)");
        // The primary sent it (into the proxy): the standby lacks it
        // because of the freeze, not because it was promoted too soon.
        let end = sql(&pair.primary, "SELECT pg_current_wal_lsn()");
        let sent = format!("SELECT bool_and(sent_lsn >= '{end}') FROM pg_stat_replication");
        let begun = Instant::now();
        while sql(&pair.primary, &sent) != "t" {
            assert!(
                begun.elapsed() < CATCH_UP_WITHIN,
                "the primary did not send its WAL up to {end}; log:\n{}",
                pair.primary.log_tail()
            );
            thread::sleep(Duration::from_millis(20));
        }
        assert!(pair.proxy.held() > 0, "the proxy holds nothing back");
        pair.standby.promote();
        assert!(!pair.standby.is_in_recovery());
        assert_eq!(sql(&pair.standby, "SELECT v FROM t ORDER BY v"), "1");
        assert_eq!(sql(&pair.primary, "SELECT v FROM t ORDER BY v"), "1\n2");
        // The promoted standby takes writes of its own.
        sql(&pair.standby, "INSERT INTO t VALUES (3)");
        assert_eq!(sql(&pair.standby, "SELECT v FROM t ORDER BY v"), "1\n3");
    }

    /// As above with the replication connection cut rather than frozen.
    #[test]
    fn a_standby_loses_the_writes_made_after_replication_is_cut() {
        let mut pair = Postgres::primary_with_standby();
        sql(
            &pair.primary,
            "CREATE TABLE t (v int); INSERT INTO t VALUES (1)",
        );
        pair.wait_caught_up();
        pair.proxy.cut();
        sql(&pair.primary, "INSERT INTO t VALUES (2)");
        pair.standby.promote();
        assert_eq!(sql(&pair.standby, "SELECT v FROM t ORDER BY v"), "1");
    }
}
