//! Redis behind Sentinel: a primary, two replicas and three sentinels
//! (the deployment the lease docs ask for), each on a loopback address of
//! its own, with config files Sentinel may rewrite (as in production),
//! killed when dropped.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use crate::member::{Member, ScratchDir, free_port_at};

/// The name the sentinels monitor the primary under.
pub const MASTER_NAME: &str = "flakeid";
/// A primary that answers nothing for this long is down (subjectively,
/// then objectively with two sentinels agreeing) and fails over.
pub const DOWN_AFTER_MS: u32 = 2_000;
/// Data nodes: a primary and two replicas, so that a promoted replica has
/// a replica of its own to acknowledge writes (`WAIT 1`) at once.
pub const DATA_NODES: usize = 3;
const FAILOVER_TIMEOUT_MS: u32 = 4_000;

pub struct RedisSentinel {
    /// The data nodes: 0 started as the primary, 1 and 2 as its replicas.
    /// Which is the primary now is [`RedisSentinel::primary`]'s to say.
    pub nodes: Vec<Member>,
    pub sentinels: Vec<Member>,
    dir: ScratchDir,
}

/// A RESP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<String>),
    Array(Option<Vec<Resp>>),
}

impl Resp {
    pub fn text(&self) -> Option<&str> {
        match self {
            Resp::Simple(s) | Resp::Bulk(Some(s)) => Some(s),
            _ => None,
        }
    }
}

impl RedisSentinel {
    /// Starts the primary on `addrs[0]`, its replicas on `addrs[1..3]` and
    /// sentinels on `addrs[3..6]` (quorum 2); returns once both replicas
    /// are in sync and the sentinels know each other and can authorize a
    /// failover.
    ///
    /// # Panics
    ///
    /// If redis-server is missing or the deployment is not ready within
    /// two minutes.
    pub fn start(addrs: &[Ipv4Addr]) -> RedisSentinel {
        assert!(
            addrs.len() >= DATA_NODES + 3,
            "a primary, {} replicas and 3 sentinels",
            DATA_NODES - 1
        );
        let dir = ScratchDir::new("redis-sentinel");
        let ports: Vec<u16> = addrs[..DATA_NODES + 3]
            .iter()
            .map(|&a| free_port_at(a))
            .collect();
        let (primary, primary_port) = (addrs[0], ports[0]);
        let mut nodes = Vec::new();
        for i in 0..DATA_NODES {
            let name = format!("redis-{i}");
            let data = dir.0.join(&name);
            std::fs::create_dir_all(&data).unwrap();
            // Dialing the primary from its own address (not 127.0.0.1),
            // so that isolating it by address cuts that link too. A full
            // resync starts at once (`repl-diskless-sync-delay 0`, as the
            // lease docs advise): a promoted primary's epoch starts only
            // once it has a replica online.
            let mut conf = format!(
                "port {port}\nbind {addr}\nbind-source-addr {addr}\nreplica-announce-ip {addr}\n\
                 dir {}\nappendonly yes\nappendfsync always\nsave \"\"\nprotected-mode no\n\
                 repl-diskless-sync-delay 0\n",
                data.display(),
                port = ports[i],
                addr = addrs[i],
            );
            if i > 0 {
                conf.push_str(&format!("replicaof {primary} {primary_port}\n"));
            }
            let path = dir.0.join(format!("{name}.conf"));
            std::fs::write(&path, conf).unwrap();
            let log = dir.0.join(format!("{name}.log"));
            nodes.push(Member::new(
                name,
                addrs[i],
                ports[i],
                "redis-server",
                vec![OsString::from(path)],
                log,
            ));
        }
        let mut sentinels = Vec::new();
        for i in 0..3 {
            let name = format!("sentinel-{i}");
            let (addr, port) = (addrs[DATA_NODES + i], ports[DATA_NODES + i]);
            let data = dir.0.join(&name);
            std::fs::create_dir_all(&data).unwrap();
            let conf = format!(
                "port {port}\nbind {addr}\nbind-source-addr {addr}\ndir {}\nprotected-mode no\n\
                 sentinel announce-ip {addr}\n\
                 sentinel monitor {MASTER_NAME} {primary} {primary_port} 2\n\
                 sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n\
                 sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n\
                 sentinel parallel-syncs {MASTER_NAME} 1\n",
                data.display()
            );
            let path = dir.0.join(format!("{name}.conf"));
            std::fs::write(&path, conf).unwrap();
            let log = dir.0.join(format!("{name}.log"));
            sentinels.push(Member::new(
                name,
                addr,
                port,
                "redis-server",
                vec![OsString::from(path), OsString::from("--sentinel")],
                log,
            ));
        }
        let mut deployment = RedisSentinel {
            nodes,
            sentinels,
            dir,
        };
        for m in deployment.nodes.iter_mut().chain(&mut deployment.sentinels) {
            m.spawn();
        }
        let begun = Instant::now();
        loop {
            deployment.check_alive();
            let quorum = deployment.sentinels.iter().all(|s| {
                command(s.socket_addr(), &["SENTINEL", "CKQUORUM", MASTER_NAME])
                    .is_some_and(|r| matches!(r, Resp::Simple(_)))
            });
            if quorum && deployment.wait_healthy(Duration::ZERO) {
                break;
            }
            if begun.elapsed() > Duration::from_secs(120) {
                panic!(
                    "Redis with Sentinel is not ready after 120 s:\n{}",
                    deployment.logs()
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
        deployment
    }

    /// Panics with the logs if a process exited by itself.
    fn check_alive(&mut self) {
        for m in self.nodes.iter_mut().chain(&mut self.sentinels) {
            if let Some(status) = m.exited() {
                panic!("{} exited ({status}):\n{}", m.name, m.log_tail());
            }
        }
    }

    fn logs(&self) -> String {
        self.nodes
            .iter()
            .chain(&self.sentinels)
            .map(|m| format!("--- {}\n{}", m.name, m.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The primary as a majority of the answering sentinels name it, by
    /// index into `nodes`; `None` if they do not agree or name another
    /// address.
    pub fn primary(&self) -> Option<usize> {
        let named: Vec<SocketAddr> = self
            .sentinels
            .iter()
            .filter(|s| s.is_running() && !s.is_paused())
            .filter_map(|s| master_addr(s.socket_addr()))
            .collect();
        let &first = named.first()?;
        if named.iter().filter(|&&a| a == first).count() < 2 {
            return None;
        }
        self.nodes.iter().position(|n| n.socket_addr() == first)
    }

    /// The URL of a data node, for `Lease::redis`.
    pub fn url(&self, node: usize) -> String {
        format!("redis://{}/", self.nodes[node].socket_addr())
    }

    /// The sentinels' addresses (`host:port`).
    pub fn sentinel_addrs(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|s| s.socket_addr().to_string())
            .collect()
    }

    /// What a data node says it is (`INFO replication`'s fields), `None`
    /// if it does not answer.
    pub fn role(&self, node: usize) -> Option<Role> {
        let n = &self.nodes[node];
        if !n.is_running() || n.is_paused() {
            return None;
        }
        let info = command(n.socket_addr(), &["INFO", "replication"])?;
        let text = info.text()?.to_owned();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .map(|v| v.trim().to_owned())
        };
        Some(match field("role")?.as_str() {
            "master" => Role::Primary {
                replicas: field("connected_slaves")?.parse().ok()?,
            },
            _ => Role::Replica {
                of: format!("{}:{}", field("master_host")?, field("master_port")?),
                link_up: field("master_link_status").as_deref() == Some("up"),
            },
        })
    }

    /// Waits until the sentinels agree on a primary that says it is one
    /// with both other nodes as its replicas, in sync, and every sentinel
    /// knows those replicas; false after `within` (a zero `within` checks
    /// once).
    pub fn wait_healthy(&mut self, within: Duration) -> bool {
        let begun = Instant::now();
        loop {
            self.check_alive();
            if self.healthy() {
                return true;
            }
            if begun.elapsed() >= within {
                return false;
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn healthy(&self) -> bool {
        let Some(p) = self.primary() else {
            return false;
        };
        let primary_addr = self.nodes[p].socket_addr().to_string();
        let replicas = self.replicas_of(p);
        matches!(self.role(p), Some(Role::Primary { replicas: n }) if n as usize >= replicas.len())
            && replicas.iter().all(|&r| {
                matches!(self.role(r), Some(Role::Replica { of, link_up: true }) if of == primary_addr)
                    && self.sentinels_know(r)
            })
    }

    /// The data nodes other than `primary`: its replicas when the
    /// deployment is whole.
    pub fn replicas_of(&self, primary: usize) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| i != primary).collect()
    }

    /// Whether every sentinel running lists data node `r` as a replica in
    /// good standing. Sentinels learn of replicas from the primary's
    /// `INFO`, every 10 s: until then a failover finds no replica to
    /// promote.
    fn sentinels_know(&self, r: usize) -> bool {
        let name = self.nodes[r].socket_addr().to_string();
        self.sentinels
            .iter()
            .filter(|s| s.is_running() && !s.is_paused())
            .all(|s| {
                let Some(Resp::Array(Some(replicas))) =
                    command(s.socket_addr(), &["SENTINEL", "REPLICAS", MASTER_NAME])
                else {
                    return false;
                };
                replicas.iter().any(|replica| {
                    let Resp::Array(Some(fields)) = replica else {
                        return false;
                    };
                    let field = |key: &str| {
                        fields
                            .chunks(2)
                            .find(|kv| kv[0].text() == Some(key))
                            .and_then(|kv| kv.get(1)?.text())
                    };
                    field("name") == Some(name.as_str()) && field("flags") == Some("slave")
                })
            })
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir.0
    }
}

/// What `INFO replication` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Primary { replicas: u32 },
    Replica { of: String, link_up: bool },
}

/// `SENTINEL get-master-addr-by-name`.
fn master_addr(sentinel: SocketAddr) -> Option<SocketAddr> {
    let reply = command(
        sentinel,
        &["SENTINEL", "get-master-addr-by-name", MASTER_NAME],
    )?;
    let Resp::Array(Some(items)) = reply else {
        return None;
    };
    let [host, port] = items.as_slice() else {
        return None;
    };
    format!("{}:{}", host.text()?, port.text()?).parse().ok()
}

/// One command on a fresh connection, with 500 ms timeouts; `None` if it
/// does not answer.
pub fn command(addr: SocketAddr, args: &[&str]) -> Option<Resp> {
    let timeout = Duration::from_millis(500);
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    let mut request = format!("*{}\r\n", args.len());
    for a in args {
        request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(request.as_bytes()).ok()?;
    read_resp(&mut BufReader::new(s))
}

fn read_resp(r: &mut impl BufRead) -> Option<Resp> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let line = line.strip_suffix("\r\n")?;
    let (kind, rest) = line.split_at(1);
    Some(match kind {
        "+" => Resp::Simple(rest.into()),
        "-" => Resp::Error(rest.into()),
        ":" => Resp::Int(rest.parse().ok()?),
        "$" => {
            let len: i64 = rest.parse().ok()?;
            if len < 0 {
                Resp::Bulk(None)
            } else {
                let mut buf = vec![0u8; usize::try_from(len).ok()? + 2];
                r.read_exact(&mut buf).ok()?;
                buf.truncate(buf.len() - 2);
                Resp::Bulk(Some(String::from_utf8_lossy(&buf).into_owned()))
            }
        }
        "*" => {
            let len: i64 = rest.parse().ok()?;
            if len < 0 {
                Resp::Array(None)
            } else {
                let items = (0..len).map(|_| read_resp(r)).collect::<Option<Vec<_>>>()?;
                Resp::Array(Some(items))
            }
        }
        _ => return None,
    })
}
