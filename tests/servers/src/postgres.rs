//! A throwaway PostgreSQL server: Debian's `postgresql` package, a fresh
//! cluster (`initdb`) in a temporary directory, on 127.0.0.1 and a free port,
//! with trust authentication, stopped and removed when dropped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::{free_port, scratch_base, unique_prefix};

/// Where Debian installs each major version's programs.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// How long a server may take to accept its first connection: initdb and
/// start-up on a loaded 2-core CI machine take seconds, not minutes.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// A PostgreSQL server with its own cluster, for tests. The superuser is
/// `postgres`, with no password (trust), and the database `postgres` exists.
pub struct Postgres {
    /// Owned by the user the server runs as; holds the cluster (`data/`),
    /// the Unix socket and `server.log`.
    dir: PathBuf,
    port: u16,
    /// `runuser` when the tests run as root (PostgreSQL refuses to), else
    /// the postmaster itself.
    child: Option<Child>,
    /// `Some("postgres")` when the programs run as that system user.
    run_as: Option<&'static str>,
}

impl Postgres {
    /// Creates a cluster and starts a server on it, returning once it
    /// accepts a connection.
    ///
    /// # Panics
    ///
    /// If PostgreSQL is not installed, `initdb` fails, or the server exits
    /// or does not answer within 60 s (the message carries its log).
    pub fn start() -> Postgres {
        let bin = bin_dir();
        // The tests exercise conversions, not the disk.
        let dir = scratch_base().join(unique_prefix("postgres"));
        std::fs::create_dir_all(&dir).unwrap();
        // PostgreSQL refuses to run as root: the cluster then belongs to the
        // `postgres` user the Debian package creates.
        let run_as = is_root().then_some("postgres");
        if let Some(user) = run_as {
            run(Command::new("chown").arg(format!("{user}:")).arg(&dir));
        }
        let mut server = Postgres {
            dir,
            port: free_port(),
            child: None,
            run_as,
        };
        let data = server.dir.join("data");
        let log = server.log_file();
        let mut initdb = server.command(&bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["--username", "postgres", "--auth", "trust"])
            .args(["--encoding", "UTF8", "--no-locale", "--no-sync"])
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let status = initdb
            .status()
            .unwrap_or_else(|e| panic!("cannot run initdb: {e}"));
        if !status.success() {
            panic!("initdb failed ({status}); log:\n{}", server.log());
        }

        let log = server.log_file();
        let mut postgres = server.command(&bin.join("postgres"));
        postgres
            .arg("-D")
            .arg(&data)
            .args(["-p", &server.port.to_string()])
            // TCP on the loopback address only; the Unix socket in our
            // directory rather than the system's /var/run/postgresql.
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", server.dir.display()))
            // Nothing here needs to survive a crash.
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        server.child = Some(
            postgres
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start postgres: {e}")),
        );
        server.wait_ready();
        server
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

    /// A program of the cluster's version run as the cluster's owner, in its
    /// directory (the tests' working directory may be closed to that user).
    fn command(&self, program: &Path) -> Command {
        let mut command = match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(program);
                c
            }
            None => Command::new(program),
        };
        command.current_dir(&self.dir);
        command
    }

    fn log_file(&self) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
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
                panic!("postgres exited at start ({status}); log:\n{}", self.log());
            }
            if self.accepts_connection() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "postgres did not accept a connection in {READY_WITHIN:?}; log:\n{}",
            self.log()
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

    /// Fast shutdown (SIGINT to the postmaster: sessions are ended, no
    /// waiting for clients), then SIGKILL if it has not ended in 30 s.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid_file = self.dir.join("data").join("postmaster.pid");
        let postmaster = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.lines().next().map(str::to_owned));
        if let Some(pid) = &postmaster {
            signal("INT", pid);
        }
        let begun = Instant::now();
        while begun.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        if let Some(pid) = &postmaster {
            signal("KILL", pid);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
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

fn is_root() -> bool {
    let output = Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8_lossy(&output.stdout).trim() == "0"
}

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(status.success(), "{command:?} failed: {status}");
}

/// `kill -<name> <pid>`: std sends only SIGKILL, and to its own children.
fn signal(name: &str, pid: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
