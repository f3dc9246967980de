//! Isolating one cluster member with iptables, on loopback addresses only.
//!
//! Each [`Firewall`] has two chains of its own, named after the process
//! and a counter: `FLAKEID_<pid>_<n>` (jumped to from INPUT and OUTPUT)
//! holds the drops, `FLAKEID_<pid>_<n>_M` (from OUTPUT) marks connections.
//! Dropping a member's address cuts every connection made *to* it, but
//! not the ones it makes: etcd dials its peers from whatever source
//! address the kernel picks (127.0.0.1), not from its own. So each member
//! runs with a group id of its own ([`crate::ident_of`]), every packet its
//! sockets send on loopback marks its connection with that id, and
//! isolating it also drops every packet of a connection with its mark,
//! both ways. Redis dials from its bind address, and is marked the same
//! way anyway.
//!
//! Every rule names 127.0.0.0/8 or an address in it; nothing else is
//! touched. Dropping a `Firewall` removes its rules and chains (also on a
//! panic); chains left by a process that died without (SIGKILL) are
//! removed by the next [`Firewall::install`].

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The chains every run's names start with.
const PREFIX: &str = "FLAKEID_";
const LOOPBACK: &str = "127.0.0.0/8";

pub struct Firewall {
    /// Drops: jumped to from INPUT and OUTPUT.
    chain: String,
    /// Marks: jumped to from OUTPUT.
    marks: String,
    /// The rules each isolation or cut added (named by its address, or
    /// both addresses), to delete them again.
    isolated: Vec<(String, Vec<Vec<String>>)>,
}

impl Firewall {
    /// Creates this run's chains and their jumps (first in INPUT and
    /// OUTPUT, marks before drops), after removing the chains, members and
    /// scratch directories of runs whose process is gone.
    ///
    /// # Panics
    ///
    /// If iptables is missing or refuses (the fault test needs root, or
    /// `sudo -n`).
    pub fn install() -> Firewall {
        crate::sweep_stale_members();
        sweep_stale();
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let chain = format!("{PREFIX}{}_{n}", std::process::id());
        let marks = format!("{chain}_M");
        let firewall = Firewall {
            chain,
            marks,
            isolated: Vec::new(),
        };
        for chain in [&firewall.chain, &firewall.marks] {
            iptables(&["-N", chain]);
        }
        iptables(&["-I", "INPUT", "1", "-j", &firewall.chain]);
        iptables(&["-I", "OUTPUT", "1", "-j", &firewall.chain]);
        iptables(&["-I", "OUTPUT", "1", "-j", &firewall.marks]);
        firewall
    }

    /// Marks the loopback connections of processes running with group id
    /// `ident` (a [`crate::Member`]'s): from then on, isolating it cuts the
    /// connections it made as well as the ones made to it.
    pub fn track(&mut self, ident: u32) {
        let (gid, mark) = (ident.to_string(), format!("{ident:#x}"));
        iptables(&[
            "-A",
            &self.marks,
            "-s",
            LOOPBACK,
            "-d",
            LOOPBACK,
            "-m",
            "owner",
            "--gid-owner",
            &gid,
            "-j",
            "CONNMARK",
            "--set-mark",
            &mark,
        ]);
    }

    /// Drops every packet to or from `addr`, and every packet of a
    /// connection marked `ident`, in both directions.
    pub fn isolate(&mut self, addr: Ipv4Addr, ident: u32) {
        let addr_s = format!("{addr}/32");
        let mark = format!("{ident:#x}");
        self.add(
            addr.to_string(),
            &[
                &["-s", &addr_s, "-j", "DROP"],
                &["-d", &addr_s, "-j", "DROP"],
                &[
                    "-s", LOOPBACK, "-d", LOOPBACK, "-m", "connmark", "--mark", &mark, "-j", "DROP",
                ],
            ],
        );
    }

    /// Drops the packets between `a` and `b`, both ways, and nothing else:
    /// a partition between two members that dial from their own addresses
    /// (Redis does), while clients on 127.0.0.1 still reach both.
    pub fn cut(&mut self, a: Ipv4Addr, b: Ipv4Addr) {
        let (a_s, b_s) = (format!("{a}/32"), format!("{b}/32"));
        self.add(
            format!("{a}-{b}"),
            &[
                &["-s", &a_s, "-d", &b_s, "-j", "DROP"],
                &["-s", &b_s, "-d", &a_s, "-j", "DROP"],
            ],
        );
    }

    fn add(&mut self, label: String, rules: &[&[&str]]) {
        if self.isolated.iter().any(|(l, _)| *l == label) {
            return;
        }
        let rules: Vec<Vec<String>> = rules
            .iter()
            .map(|rule| rule.iter().map(|s| s.to_string()).collect())
            .collect();
        for rule in &rules {
            let mut args = vec!["-A", &self.chain];
            args.extend(rule.iter().map(String::as_str));
            iptables(&args);
        }
        self.isolated.push((label, rules));
    }

    /// Lets `addr`'s traffic through again.
    pub fn heal(&mut self, addr: Ipv4Addr) {
        self.remove(&addr.to_string());
    }

    /// Lets the traffic between `a` and `b` through again.
    pub fn uncut(&mut self, a: Ipv4Addr, b: Ipv4Addr) {
        self.remove(&format!("{a}-{b}"));
    }

    fn remove(&mut self, label: &str) {
        let Some(at) = self.isolated.iter().position(|(l, _)| l == label) else {
            return;
        };
        let (_, rules) = self.isolated.remove(at);
        for rule in &rules {
            let mut args = vec!["-D", &self.chain];
            args.extend(rule.iter().map(String::as_str));
            try_iptables(&args);
        }
    }

    pub fn heal_all(&mut self) {
        let labels: Vec<String> = self.isolated.iter().map(|(l, _)| l.clone()).collect();
        for label in labels {
            self.remove(&label);
        }
    }

    pub fn is_isolated(&self, addr: Ipv4Addr) -> bool {
        let label = addr.to_string();
        self.isolated.iter().any(|(l, _)| *l == label)
    }

    /// The chain holding the drops, for messages.
    pub fn chain(&self) -> &str {
        &self.chain
    }
}

impl Drop for Firewall {
    fn drop(&mut self) {
        remove_chains(&[self.chain.clone(), self.marks.clone()]);
    }
}

/// Removes the jumps to `chains` from INPUT and OUTPUT, then the chains.
fn remove_chains(chains: &[String]) {
    for chain in chains {
        for builtin in ["INPUT", "OUTPUT"] {
            // A jump inserted once; delete until none is left.
            for _ in 0..8 {
                if !try_iptables(&["-D", builtin, "-j", chain]) {
                    break;
                }
            }
        }
    }
    for chain in chains {
        try_iptables(&["-F", chain]);
        try_iptables(&["-X", chain]);
    }
}

/// Removes the chains of runs whose process no longer exists (killed
/// before its `Firewall` was dropped).
pub fn sweep_stale() {
    let Some(listing) = iptables_output(&["-S"]) else {
        return;
    };
    let stale: Vec<String> = listing
        .lines()
        .filter_map(|line| line.strip_prefix("-N "))
        .filter(|chain| {
            let Some(rest) = chain.strip_prefix(PREFIX) else {
                return false;
            };
            let pid = rest.split('_').next().unwrap_or("");
            !pid.is_empty()
                && pid.bytes().all(|b| b.is_ascii_digit())
                && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        })
        .map(str::to_owned)
        .collect();
    if !stale.is_empty() {
        eprintln!("removing iptables chains left by dead runs: {stale:?}");
        remove_chains(&stale);
    }
}

/// `iptables -w` (waiting for the xtables lock), through `sudo -n` unless
/// this process is root.
fn command(args: &[&str]) -> Command {
    let mut c = if crate::is_root() {
        Command::new("iptables")
    } else {
        let mut c = Command::new("sudo");
        c.args(["-n", "iptables"]);
        c
    };
    c.arg("-w").args(args);
    c
}

fn iptables(args: &[&str]) {
    let out = command(args).output().unwrap_or_else(|e| {
        panic!(
            "cannot run iptables: {e}; the fault test needs iptables (Debian: iptables) and root"
        )
    });
    assert!(
        out.status.success(),
        "iptables {args:?} failed: {}; the fault test needs root (or sudo -n)",
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

fn try_iptables(args: &[&str]) -> bool {
    command(args)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn iptables_output(args: &[&str]) -> Option<String> {
    let out = command(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
