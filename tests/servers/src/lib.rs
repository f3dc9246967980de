//! Real servers for flakeid's lease and database tests and the
//! `lease_measure` example: Debian's `etcd` (package `etcd-server`) and
//! `redis-server`, started on 127.0.0.1 on free ports in temporary data
//! directories and killed when dropped; a TCP proxy ([`Proxy`]) that can
//! cut or freeze a client's connections, hold the server's answers or the
//! client's requests (frame by frame for HTTP/2), and records when requests
//! left their client; an impostor that answers nonsense; PostgreSQL servers
//! ([`Postgres`], package `postgresql`) with clusters of their own, fast
//! for the SQL tests or durable for the lease tests, and a primary with an
//! asynchronous standby that replicates through a [`Proxy`] ([`PgPair`]),
//! so the failover test can lose writes on purpose; and a MariaDB server
//! ([`Mariadb`], package `mariadb-server`) with real accounts for the
//! MySQL/MariaDB lease tests. The database servers can be killed, paused
//! (every process of theirs stopped) and restarted on the same data, and
//! run SQL as their superuser through their own command-line clients.
//!
//! Test support that every test crate shares lives here too: scratch
//! directories ([`ScratchDir`]) and a seeded random number generator
//! ([`Rng`]).
//!
//! For the fault test (`tests/cluster/`): a 3-member etcd cluster
//! ([`EtcdCluster`]) and Redis behind Sentinel ([`RedisSentinel`]), each
//! member on a loopback address of its own ([`loopback_block`]) so it can
//! be paused, killed and restarted ([`Member`]) and cut off by iptables
//! ([`Firewall`]).
//!
//! Nothing here knows flakeid: the scenarios that drive leases through these
//! servers are in `tests/lease_support/`, the SQL ones in `tests/sql/`. A
//! crate of its own (not a module included by path) so the tests and the
//! examples use one copy the ordinary way; a dev-dependency only, so it is
//! never published.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

mod etcd_cluster;
mod firewall;
mod mariadb;
mod member;
mod postgres;
mod proxy;
mod rng;
mod scratch;
mod sentinel;

pub use etcd_cluster::EtcdCluster;
pub use firewall::{Firewall, sweep_stale};
pub use mariadb::Mariadb;
pub use member::{
    BLOCK, Member, free_port_at, ident_of, loopback_block, signal, sweep_stale_members,
};
pub use postgres::{PgPair, Postgres};
pub use proxy::Proxy;
pub use rng::Rng;
pub use scratch::{KEEP_VAR, ScratchDir, scratch_base};
pub use sentinel::{
    DOWN_AFTER_MS, MASTER_NAME, RedisSentinel, Resp, Role, command as redis_command,
};

/// Whether this process runs as root (iptables and group ids need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Etcd,
    Redis,
}

impl Kind {
    /// `etcd` or `redis`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Etcd => "etcd",
            Kind::Redis => "redis",
        }
    }

    /// The kind [`Kind::name`] names.
    pub fn parse(s: &str) -> Kind {
        match s {
            "etcd" => Kind::Etcd,
            "redis" => Kind::Redis,
            other => panic!("unknown backend {other}"),
        }
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A prefix no other test (or earlier run) uses.
pub fn unique_prefix(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "t{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A server process with its data directory, killed and removed on drop.
pub struct Server {
    pub kind: Kind,
    port: u16,
    peer_port: u16,
    child: Option<Child>,
    /// Dropped after the process is killed.
    dir: ScratchDir,
}

impl Server {
    /// A server with its data under [`scratch_base`].
    pub fn start(kind: Kind) -> Server {
        Server::start_in(kind, scratch_base())
    }

    /// A server with its data under `base`.
    pub fn start_in(kind: Kind, base: PathBuf) -> Server {
        let mut server = Server {
            kind,
            dir: ScratchDir::under(&base, kind.name()),
            port: free_port(),
            peer_port: free_port(),
            child: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.0.join("server.log"))
            .unwrap();
        let mut command = match self.kind {
            Kind::Etcd => {
                let client = format!("http://127.0.0.1:{}", self.port);
                let peer = format!("http://127.0.0.1:{}", self.peer_port);
                let mut c = Command::new("etcd");
                c.args(["--name", "flakeid-test", "--data-dir"])
                    .arg(self.dir.0.join("data"))
                    .args(["--listen-client-urls", &client])
                    .args(["--advertise-client-urls", &client])
                    .args(["--listen-peer-urls", &peer])
                    .args(["--initial-advertise-peer-urls", &peer])
                    .args(["--initial-cluster", &format!("flakeid-test={peer}")])
                    // Short ticks, so etcd accepts 1 s leases (its minimum
                    // TTL is 1.5 election timeouts).
                    .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
                c
            }
            Kind::Redis => {
                let mut c = Command::new("redis-server");
                c.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
                    .arg("--dir")
                    .arg(&self.dir.0)
                    // Marks must survive a crash of Redis itself.
                    .args(["--appendonly", "yes", "--appendfsync", "always"])
                    .args(["--save", "", "--protected-mode", "no"]);
                c
            }
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; install Debian's etcd-server and redis-server \
                     (.ci/test does)",
                    self.kind.name()
                )
            });
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let begun = Instant::now();
        while begun.elapsed() < Duration::from_secs(20) {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "{} exited at start ({status}); log: {}",
                    self.kind.name(),
                    std::fs::read_to_string(self.dir.0.join("server.log")).unwrap_or_default()
                );
            }
            if self.answers() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        panic!("{} did not become ready in 20 s", self.kind.name());
    }

    /// One health request over a plain socket.
    fn answers(&self) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&self.addr(), Duration::from_millis(200)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let (request, expect): (&[u8], &str) = match self.kind {
            Kind::Etcd => (b"GET /health HTTP/1.0\r\n\r\n", "\"health\":\"true\""),
            Kind::Redis => (b"PING\r\n", "+PONG"),
        };
        if s.write_all(request).is_err() {
            return false;
        }
        let mut reply = Vec::new();
        let mut buf = [0u8; 512];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&reply).contains(expect) {
                return true;
            }
        }
        false
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self) -> String {
        url_at(self.kind, self.addr())
    }

    /// SIGKILL: no shutdown, no flush beyond what was already durable.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts again on the same port and data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The URL a client of `kind` connects to at `addr`.
pub fn url_at(kind: Kind, addr: SocketAddr) -> String {
    match kind {
        Kind::Etcd => format!("http://{addr}"),
        Kind::Redis => format!("redis://{addr}/"),
    }
}

/// A server that answers every connection with `reply` and then keeps
/// reading until the client goes: what a misconfigured port (another
/// service, a proxy's error page) looks like to a lease.
pub struct Impostor {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Impostor {
    pub fn new(reply: &'static [u8]) -> Impostor {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((mut client, _)) = listener.accept() else {
                    thread::sleep(Duration::from_millis(2));
                    continue;
                };
                thread::spawn(move || {
                    let _ = client.set_nonblocking(false);
                    let mut buf = [0u8; 4096];
                    // Answer each request with the same nonsense.
                    while let Ok(n) = client.read(&mut buf) {
                        if n == 0 || client.write_all(reply).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Impostor { addr, stop }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Impostor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
