//! Cluster members on loopback addresses of their own: each server process
//! of an etcd cluster or a Redis deployment gets an address in 127.0.0.0/8
//! no other test run uses, and a group id that marks its packets, so the
//! nemesis can pause, kill, restart and isolate it alone.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

// For sentinel.rs, which names it here (its home is crate::scratch).
pub(crate) use crate::scratch::ScratchDir;

/// Addresses one cluster gets: 127.0.0.0/8 has room for 2^21 blocks of 8.
pub const BLOCK: usize = 8;

/// A block of [`BLOCK`] loopback addresses of this process's own, for one
/// cluster: from the process id (its low 16 bits) and a counter (5 bits),
/// so that test runs at once (other processes) and the clusters of one
/// run (the counter, up to 31 before it repeats) do not share addresses.
/// Never 127.0.0.0/29, where 127.0.0.1 lives. Two live processes whose ids
/// agree in their low 16 bits would share a block.
pub fn loopback_block() -> Vec<Ipv4Addr> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // 1..=31: never 0, so never block 0 (127.0.0.0/29).
    let counter = 1 + NEXT.fetch_add(1, Ordering::Relaxed) % 31;
    let block = ((std::process::id() & 0xffff) << 5) | counter;
    (0..BLOCK as u32)
        .map(|i| Ipv4Addr::from(0x7f00_0000 | (block << 3) | i))
        .collect()
}

/// The group id a member runs as and the connection mark its packets
/// carry: unique per loopback address, above the ids of real groups.
pub fn ident_of(addr: Ipv4Addr) -> u32 {
    let [a, b, c, d] = addr.octets();
    assert_eq!(a, 127, "{addr} is not a loopback address");
    0x4000_0000 | u32::from_be_bytes([0, b, c, d])
}

/// A port nothing listens on right now at `addr`.
pub fn free_port_at(addr: Ipv4Addr) -> u16 {
    TcpListener::bind(SocketAddr::from((addr, 0)))
        .unwrap_or_else(|e| panic!("cannot bind {addr}: {e}"))
        .local_addr()
        .unwrap()
        .port()
}

/// Sends a signal to a process; false if it is gone.
pub fn signal(pid: u32, signal: libc::c_int) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe { libc::kill(pid, signal) == 0 }
}

/// One server process of a cluster, on its own loopback address, run with
/// its own group id (see [`ident_of`]) so a firewall can tell its packets
/// from everyone else's; killed when dropped.
pub struct Member {
    /// For messages: `etcd-1`, `redis-primary`, `sentinel-0`, ...
    pub name: String,
    pub addr: Ipv4Addr,
    pub port: u16,
    program: String,
    args: Vec<OsString>,
    /// Its log (stdout and stderr, appended across restarts).
    log: PathBuf,
    child: Option<Child>,
    paused: bool,
}

impl Member {
    /// A member that is not started yet.
    pub fn new(
        name: impl Into<String>,
        addr: Ipv4Addr,
        port: u16,
        program: &str,
        args: Vec<OsString>,
        log: PathBuf,
    ) -> Member {
        Member {
            name: name.into(),
            addr,
            port,
            program: program.into(),
            args,
            log,
            child: None,
            paused: false,
        }
    }

    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::from((self.addr, self.port))
    }

    pub fn ident(&self) -> u32 {
        ident_of(self.addr)
    }

    /// Starts the process (it is not waited for: the cluster knows what
    /// ready means).
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "{} is already running", self.name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        if crate::is_root() {
            // Only root may; without it isolation by address alone.
            command.gid(self.ident());
        }
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start {} ({}): {e}; install Debian's etcd-server and redis-server \
                 (.ci/test does)",
                self.name, self.program
            )
        });
        self.child = Some(child);
        self.paused = false;
    }

    /// SIGKILL, and reaped: no shutdown, no flush beyond what was durable.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.paused = false;
    }

    /// Kills and starts again on the same address, port and data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// SIGSTOP: the process keeps its sockets and answers nothing.
    pub fn pause(&mut self) {
        if let Some(child) = &self.child {
            signal(child.id(), libc::SIGSTOP);
            self.paused = true;
        }
    }

    /// SIGCONT.
    pub fn resume(&mut self) {
        if let Some(child) = &self.child {
            signal(child.id(), libc::SIGCONT);
        }
        self.paused = false;
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Whether the process exited by itself (it is then reaped and
    /// forgotten, so [`Member::spawn`] can start it again).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last lines of its log, for a panic message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills the cluster members, and removes the scratch directories (and
/// libfaketime's shared memory), that runs killed before they could clean
/// up (SIGKILL, a CI timeout) left:
/// a member is a process running with one of our group ids (see
/// [`ident_of`]) whose command line or working directory names a scratch
/// directory of a process that no longer exists.
pub fn sweep_stale_members() {
    let dead = |owner: &str| !Path::new(&format!("/proc/{owner}")).exists();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let path = entry.path();
        let gid = std::fs::read_to_string(path.join("status"))
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("Gid:"))?;
                line.split_whitespace().nth(1)?.parse::<u32>().ok()
            });
        if gid.is_none_or(|g| g & 0xc000_0000 != 0x4000_0000) {
            continue;
        }
        let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
        let cwd = std::fs::read_link(path.join("cwd")).unwrap_or_default();
        let text = format!(
            "{} {}",
            String::from_utf8_lossy(&cmdline).replace('\0', " "),
            cwd.display()
        );
        if let Some(owner) = scratch_owner(&text)
            && dead(&owner)
        {
            eprintln!("killing process {pid}, a cluster member left by run {owner}");
            signal(pid, libc::SIGKILL);
        }
    }
    // libfaketime's shared memory, left by skewed generators that were
    // killed: `faketime_shm_<pid>`, `sem.faketime_sem_<pid>`.
    if let Ok(entries) = std::fs::read_dir("/dev/shm") {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("faketime_shm_")
                .or_else(|| name.strip_prefix("sem.faketime_sem_"));
            if let Some(pid) = pid
                && pid.bytes().all(|b| b.is_ascii_digit())
                && dead(pid)
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    for base in [PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = name.ends_with("-etcd-cluster") || name.ends_with("-redis-sentinel");
            if let Some(owner) = scratch_owner(&format!("/{name}"))
                && ours
                && dead(&owner)
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// The process id in a scratch directory's name (`/t<pid>-<n>-<name>`)
/// somewhere in `text`.
fn scratch_owner(text: &str) -> Option<String> {
    text.match_indices("/t").find_map(|(at, _)| {
        let rest = &text[at + 2..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (!digits.is_empty() && rest[digits.len()..].starts_with('-')).then_some(digits)
    })
}
