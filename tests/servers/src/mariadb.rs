//! A throwaway MariaDB server for the MySQL/MariaDB lease tests: Debian's
//! `mariadb-server` package, a fresh data directory (`mariadb-install-db`)
//! in a scratch directory, on 127.0.0.1 and a free port, killed and removed
//! when dropped.
//!
//! Real accounts (no `--skip-grant-tables`): the tests create users with
//! limited grants, and a lease must see MariaDB refuse them. `root` has no
//! password and may connect from 127.0.0.1 over TCP; the database `flakeid`
//! exists. Durable: InnoDB writes its log out at every commit
//! (`innodb_flush_log_at_trx_commit=1`), so a SIGKILL ([`Mariadb::kill`])
//! loses no committed transaction. No configuration file is read
//! (`--no-defaults`): Debian's `/etc/mysql` would move the socket, the
//! port and the character set.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::postgres::log_tail;
use crate::{ScratchDir, free_port, is_root, scratch_base, signal};

/// How long a server may take to answer a query: its first start takes
/// well under a second here; a loaded CI machine gets a minute.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The database the server is made with, and [`Mariadb::sql`] uses.
const DATABASE: &str = "flakeid";

/// A MariaDB server with its own data directory; see the module docs
/// (`src/mariadb.rs`).
pub struct Mariadb {
    /// Holds the data (`data/`), the socket, the pid file and `server.log`.
    /// Dropped after the server is killed.
    dir: ScratchDir,
    port: u16,
    /// `mariadbd` itself (one process: its id is the one to signal).
    child: Option<Child>,
    /// `mariadbd` (or `mysqld`), and the client `mariadb` (or `mysql`).
    server: PathBuf,
    client: PathBuf,
}

impl Mariadb {
    /// Makes a data directory, starts a server on it and creates the
    /// database `flakeid`, returning once the server answers a query.
    ///
    /// # Panics
    ///
    /// If MariaDB is not installed, `mariadb-install-db` fails, or the
    /// server exits or does not answer within 60 s (the message carries
    /// its log).
    pub fn start() -> Mariadb {
        let install = program(&["mariadb-install-db", "mysql_install_db"]);
        let mut server = Mariadb {
            dir: ScratchDir::under(&scratch_base(), "mariadb"),
            port: free_port(),
            child: None,
            server: program(&["mariadbd", "mysqld"]),
            client: program(&["mariadb", "mysql"]),
        };
        let log = server.log_file();
        let mut command = Command::new(&install);
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", server.data().display()))
            // root@localhost, root@127.0.0.1 and root@::1 with no password
            // (the default would let root in by its Unix socket only).
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .arg("--skip-name-resolve")
            // Its temporary tables in our directory: a bootstrapping
            // server removes every temporary table it finds in its tmpdir,
            // another install's in /tmp too.
            .arg(format!("--tmpdir={}", server.dir.path().display()))
            .env("TMPDIR", server.dir.path());
        if is_root() {
            // Not the `mysql` user: the scratch directory stays root's.
            command.arg("--user=root");
        }
        let status = command
            .current_dir(server.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", install.display()));
        if !status.success() {
            panic!(
                "{} failed ({status}); log:\n{}",
                install.display(),
                server.log_tail()
            );
        }
        server.spawn();
        if let Err(e) = server.run_sql(None, &format!("CREATE DATABASE {DATABASE}")) {
            panic!(
                "cannot create the database {DATABASE}: {e}; log:\n{}",
                server.log_tail()
            );
        }
        server
    }

    /// Starts `mariadbd` on the data directory and waits until it answers.
    fn spawn(&mut self) {
        assert!(self.child.is_none(), "mariadb is already running");
        let dir = self.dir.path();
        let log = self.log_file();
        let mut command = Command::new(&self.server);
        // --no-defaults must come first.
        command.arg("--no-defaults");
        if is_root() {
            // mariadbd refuses root unless told.
            command.arg("--user=root");
        }
        command
            .arg(format!("--datadir={}", self.data().display()))
            .arg(format!("--port={}", self.port))
            // TCP on the loopback address only; the socket, pid file and
            // temporary files in our directory, not /run/mysqld.
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.join("mysqld.sock").display()))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .arg(format!("--tmpdir={}", dir.display()))
            // Accounts by address (root@127.0.0.1), no DNS at connect.
            .arg("--skip-name-resolve")
            // Every commit's redo log written out before it is answered; no
            // binary log (nothing replicates from it; were one turned on,
            // sync_binlog keeps it as durable).
            .args([
                "--innodb-flush-log-at-trx-commit=1",
                "--innodb-doublewrite=1",
            ])
            .args(["--skip-log-bin", "--sync-binlog=1"])
            // Small, so it starts fast; no asynchronous I/O, which tmpfs
            // and some containers lack.
            .args([
                "--innodb-buffer-pool-size=16M",
                "--innodb-log-file-size=16M",
            ])
            .arg("--innodb-use-native-aio=0")
            .arg("--character-set-server=utf8mb4")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.server.display()));
        self.child = Some(child);
        self.wait_ready();
    }

    /// Polls with the client until the server answers a query (an open
    /// port is not enough: InnoDB may still be recovering).
    fn wait_ready(&mut self) {
        let begun = Instant::now();
        let mut last = Ok(String::new());
        while begun.elapsed() < READY_WITHIN {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                panic!(
                    "mariadb exited at start ({status}); log:\n{}",
                    self.log_tail()
                );
            }
            last = self.run_sql(None, "SELECT 1");
            if last.is_ok() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "mariadb did not answer in {READY_WITHIN:?} (last: {last:?}); log:\n{}",
            self.log_tail()
        );
    }

    /// `127.0.0.1` and the server's port.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `mysql://root@127.0.0.1:<port>/flakeid`: a URL that sqlx and the
    /// `mysql` crate take.
    pub fn url(&self) -> String {
        format!("mysql://root@{}/{DATABASE}", self.addr())
    }

    /// The server's process id while it runs (SIGSTOP to it pauses the
    /// whole server: it is one process).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGSTOP: the server answers nothing while its sockets stay open, as
    /// a server that hangs. [`Mariadb::kill`] and drop work on a paused
    /// server.
    pub fn pause(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, libc::SIGSTOP);
        }
    }

    /// SIGCONT.
    pub fn resume(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, libc::SIGCONT);
        }
    }

    /// Runs `sql` as root in the database `flakeid` through the client
    /// (over TCP): batch mode, no column names. Returns what it printed,
    /// trimmed (rows one a line, columns split by tabs), or what it said
    /// on stderr. Several statements may be given, split by `;`. Hangs
    /// while the server is stopped (SIGSTOP) once connected.
    pub fn sql(&self, sql: &str) -> Result<String, String> {
        self.run_sql(Some(DATABASE), sql)
    }

    fn run_sql(&self, database: Option<&str>, sql: &str) -> Result<String, String> {
        let mut command = Command::new(&self.client);
        command
            .arg("--no-defaults")
            .args(["--protocol=TCP", "-h", "127.0.0.1"])
            .args(["-P", &self.port.to_string(), "-u", "root"])
            .args(["--batch", "--skip-column-names", "--connect-timeout=10"])
            .arg("-e")
            .arg(sql);
        if let Some(database) = database {
            command.arg(database);
        }
        let output = command
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.client.display()));
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// SIGKILL: no shutdown, nothing written beyond what was (a crash;
    /// InnoDB recovers the committed transactions at the next start).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and data (killing it first
    /// if it runs), returning once it answers: after [`Mariadb::kill`],
    /// once crash recovery is done.
    ///
    /// # Panics
    ///
    /// As [`Mariadb::start`].
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_file(&self) -> std::fs::File {
        let path = self.dir.path().join("server.log");
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()))
    }

    /// The last lines of the log (mariadb-install-db's and every start's).
    fn log_tail(&self) -> String {
        log_tail(&self.dir.path().join("server.log"))
    }
}

impl Drop for Mariadb {
    fn drop(&mut self) {
        self.kill();
        // The directory goes with `dir` (kept after a panic or with
        // FLAKEID_KEEP_TEST_DIRS).
    }
}

/// The first of `names` found on PATH or in /usr/sbin or /usr/bin (Debian
/// puts `mariadbd` in /usr/sbin, which a user's PATH may lack).
fn program(names: &[&str]) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .collect();
    names
        .iter()
        .flat_map(|name| dirs.iter().map(move |dir| dir.join(name)))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| {
            panic!(
                "none of {names:?} on PATH, in /usr/sbin or /usr/bin; install Debian's \
                 mariadb-server (.ci/test does)"
            )
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sql`, panicking with the server's log when it fails.
    fn sql(server: &Mariadb, sql: &str) -> String {
        server
            .sql(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}; log:\n{}", server.log_tail()))
    }

    #[test]
    fn a_server_keeps_committed_rows_through_kill_and_restart() {
        let mut server = Mariadb::start();
        assert_eq!(sql(&server, "SELECT DATABASE(), 1 + 1"), "flakeid\t2");
        let error = server.sql("SELECT * FROM nowhere").unwrap_err();
        assert!(error.contains("nowhere"), "{error}");
        // Real accounts: a server without grant tables refuses this.
        sql(
            &server,
            "CREATE USER 'limited'@'127.0.0.1'; \
             GRANT SELECT ON flakeid.* TO 'limited'@'127.0.0.1'",
        );
        sql(
            &server,
            "CREATE TABLE t (v INT) ENGINE=InnoDB; INSERT INTO t VALUES (1)",
        );
        server.pause();
        server.resume();
        assert_eq!(sql(&server, "SELECT v FROM t"), "1");
        let pid = server.pid().unwrap();
        server.pause();
        server.kill();
        assert_eq!(server.pid(), None);
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
        server.restart();
        assert_eq!(sql(&server, "SELECT v FROM t"), "1");
        assert_eq!(
            sql(
                &server,
                "SELECT COUNT(*) FROM mysql.user WHERE user = 'limited'"
            ),
            "1"
        );
        server.restart();
        assert_eq!(sql(&server, "SELECT v FROM t"), "1");
    }
}
