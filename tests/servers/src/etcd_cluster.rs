//! A 3-member (or n-member) etcd cluster, each member on a loopback address
//! of its own, data in a scratch directory, killed when dropped.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use crate::ScratchDir;
use crate::member::{Member, free_port_at};

/// etcd's defaults, as production runs it: a heartbeat every 100 ms, an
/// election after 1 s without one.
const HEARTBEAT_MS: u32 = 100;
const ELECTION_MS: u32 = 1_000;

pub struct EtcdCluster {
    pub members: Vec<Member>,
    /// Each member's id as etcd reports it (learned once it answers).
    ids: Vec<Option<u64>>,
    /// Dropped after the members (field order), which write into it.
    dir: ScratchDir,
}

impl EtcdCluster {
    /// Starts `n` members on the first `n` of `addrs` and returns once
    /// every one of them reports itself healthy (a leader elected).
    ///
    /// # Panics
    ///
    /// If etcd is missing or the cluster is not healthy within two minutes.
    pub fn start(addrs: &[Ipv4Addr], n: usize) -> EtcdCluster {
        EtcdCluster::start_with(addrs, n, &[])
    }

    /// [`EtcdCluster::start`] with more flags for every member (say
    /// `--pre-vote`).
    pub fn start_with(addrs: &[Ipv4Addr], n: usize, extra: &[&str]) -> EtcdCluster {
        assert!(addrs.len() >= n, "{n} members need {n} addresses");
        let dir = ScratchDir::new("etcd-cluster");
        let token = dir.0.file_name().unwrap().to_string_lossy().into_owned();
        let ports: Vec<(u16, u16)> = addrs[..n]
            .iter()
            .map(|&a| (free_port_at(a), free_port_at(a)))
            .collect();
        let name = |i: usize| format!("etcd-{i}");
        let peer_url = |i: usize| format!("http://{}:{}", addrs[i], ports[i].1);
        let initial = (0..n)
            .map(|i| format!("{}={}", name(i), peer_url(i)))
            .collect::<Vec<_>>()
            .join(",");
        let members = (0..n)
            .map(|i| {
                let client = format!("http://{}:{}", addrs[i], ports[i].0);
                let peer = peer_url(i);
                let data = dir.0.join(name(i));
                let args: Vec<OsString> = [
                    "--name",
                    &name(i),
                    "--data-dir",
                    &data.to_string_lossy(),
                    "--listen-client-urls",
                    &client,
                    "--advertise-client-urls",
                    &client,
                    "--listen-peer-urls",
                    &peer,
                    "--initial-advertise-peer-urls",
                    &peer,
                    "--initial-cluster",
                    &initial,
                    "--initial-cluster-state",
                    "new",
                    "--initial-cluster-token",
                    &token,
                    "--heartbeat-interval",
                    &HEARTBEAT_MS.to_string(),
                    "--election-timeout",
                    &ELECTION_MS.to_string(),
                ]
                .iter()
                .chain(extra)
                .map(OsString::from)
                .collect();
                let log = dir.0.join(format!("{}.log", name(i)));
                Member::new(name(i), addrs[i], ports[i].0, "etcd", args, log)
            })
            .collect();
        let mut cluster = EtcdCluster {
            members,
            ids: vec![None; n],
            dir,
        };
        for m in &mut cluster.members {
            m.spawn();
        }
        if !cluster.wait_healthy(Duration::from_secs(120)) {
            let logs: Vec<String> = cluster
                .members
                .iter()
                .map(|m| format!("--- {}\n{}", m.name, m.log_tail()))
                .collect();
            panic!(
                "the etcd cluster is not healthy after 120 s:\n{}",
                logs.join("\n")
            );
        }
        cluster
    }

    /// Every member's client URL: what a lease is given.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| self.url(m)).collect()
    }

    pub fn endpoint(&self, i: usize) -> String {
        self.url(&self.members[i])
    }

    fn url(&self, m: &Member) -> String {
        format!("http://{}", m.socket_addr())
    }

    /// Each member's (own id, leader id) as it reports them, `None` for a
    /// member that does not answer within 500 ms.
    pub fn statuses(&mut self) -> Vec<Option<(u64, u64)>> {
        let statuses: Vec<Option<(u64, u64)>> = self
            .members
            .iter()
            .map(|m| {
                if !m.is_running() || m.is_paused() {
                    return None;
                }
                status(m.socket_addr())
            })
            .collect();
        for (i, s) in statuses.iter().enumerate() {
            if let Some((id, _)) = s {
                self.ids[i] = Some(*id);
            }
        }
        statuses
    }

    /// The member a majority of the members that answer name as leader,
    /// by index; `None` if none answer or they disagree.
    pub fn leader(&mut self) -> Option<usize> {
        let statuses = self.statuses();
        let leaders: Vec<u64> = statuses
            .iter()
            .flatten()
            .map(|(_, leader)| *leader)
            .filter(|&l| l != 0)
            .collect();
        let quorum = self.members.len() / 2 + 1;
        let &leader = leaders.first()?;
        if leaders.iter().filter(|&&l| l == leader).count() < quorum {
            return None;
        }
        self.ids.iter().position(|id| *id == Some(leader))
    }

    /// Waits until every running member answers `/health` with true and
    /// they agree on a leader; false after `within` (a zero `within`
    /// checks once).
    pub fn wait_healthy(&mut self, within: Duration) -> bool {
        let begun = Instant::now();
        loop {
            for m in &mut self.members {
                if let Some(status) = m.exited() {
                    panic!("{} exited ({status}):\n{}", m.name, m.log_tail());
                }
            }
            let all = self
                .members
                .iter()
                .filter(|m| m.is_running())
                .all(|m| healthy(m.socket_addr()));
            if all && self.leader().is_some() {
                return true;
            }
            if begun.elapsed() >= within {
                return false;
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Restarts a killed member and waits (up to `within`) until it is
    /// healthy again.
    pub fn restart(&mut self, i: usize, within: Duration) -> bool {
        self.members[i].restart();
        self.wait_healthy(within)
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir.0
    }

    /// Every change to every key since the cluster started, as etcd's JSON
    /// gateway streams a watch from revision 1 (one JSON object per
    /// batch; keys and values in base64; a lease revoked shows as the
    /// DELETE events of its keys): for the post-mortem of a violation.
    /// Asks the first member that answers; `None` if none does.
    pub fn history(&self) -> Option<String> {
        let body = r#"{"create_request":{"key":"AA==","range_end":"AA==","start_revision":1}}"#;
        let request = format!(
            "POST /v3/watch HTTP/1.0\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.members
            .iter()
            .filter(|m| m.is_running() && !m.is_paused())
            .find_map(|m| {
                let mut s =
                    TcpStream::connect_timeout(&m.socket_addr(), Duration::from_millis(500))
                        .ok()?;
                s.set_write_timeout(Some(Duration::from_millis(500))).ok()?;
                // The watch never ends: read until it has been quiet for a
                // second (the history comes at once), or 30 s in all.
                s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
                s.write_all(request.as_bytes()).ok()?;
                let begun = Instant::now();
                let mut reply = Vec::new();
                let mut buf = [0u8; 64 * 1024];
                while begun.elapsed() < Duration::from_secs(30) {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => reply.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&reply).into_owned();
                text.contains("\"created\":true").then_some(text)
            })
    }
}

/// One HTTP/1.0 request on a plain socket, the whole answer back.
fn http(addr: SocketAddr, request: &str) -> Option<String> {
    let timeout = Duration::from_millis(500);
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    s.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    Some(reply)
}

fn healthy(addr: SocketAddr) -> bool {
    http(addr, "GET /health HTTP/1.0\r\n\r\n").is_some_and(|r| r.contains("\"health\":\"true\""))
}

/// `/v3/maintenance/status` (etcd's JSON gateway): the member's own id
/// and its leader's.
fn status(addr: SocketAddr) -> Option<(u64, u64)> {
    let body = "{}";
    let reply = http(
        addr,
        &format!(
            "POST /v3/maintenance/status HTTP/1.0\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )?;
    // 64-bit ids are JSON strings: "member_id":"123", "leader":"456".
    let field = |name: &str| -> Option<u64> {
        let at = reply.find(&format!("\"{name}\":\""))? + name.len() + 4;
        let rest = &reply[at..];
        rest[..rest.find('"')?].parse().ok()
    };
    Some((field("member_id")?, field("leader").unwrap_or(0)))
}
