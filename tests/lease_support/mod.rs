//! The scenarios both lease backends must pass, run by `lease.rs` (a
//! module per store) against real servers from the `flakeid-test-servers`
//! crate (`tests/servers/`).
//!
//! Each test binary uses the part for its backend only.
#![allow(dead_code)]

mod hold;
#[cfg(flakeid_plant)]
mod plant;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flakeid::{
    BuildError, Clock, Event, GenerateError, Generator, Health, Id, Layout, Lease, LeaseError,
    ManualClock, Persist,
};
pub use flakeid_test_servers::{Impostor, Kind, Proxy, Server, free_port, unique_prefix, url_at};
pub use hold::HoldingProxy;
#[cfg(flakeid_plant)]
pub use plant::{fails_naming, planted};

/// The TTL the tests run with: short, so fencing and expiry take a second.
pub const TTL: Duration = Duration::from_secs(1);

/// Held by each scenario: with second-long TTLs, several scenarios at once
/// on two cores (a server each, up to a hundred keepers) could starve
/// renewals and fence generators the test expects to keep their node ids.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
pub const MARGIN: Duration = Duration::from_millis(200);

pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

pub fn lease_at(kind: Kind, addr: SocketAddr, prefix: &str) -> Lease {
    let lease = match kind {
        #[cfg(feature = "etcd")]
        Kind::Etcd => Lease::etcd([url_at(kind, addr)]),
        #[cfg(feature = "redis")]
        Kind::Redis => Lease::redis(url_at(kind, addr)),
        #[allow(unreachable_patterns)]
        other => panic!("{other:?} is not built in"),
    };
    lease
        .prefix(prefix)
        .ttl(TTL)
        .safety_margin(MARGIN)
        .connect_timeout(Duration::from_secs(5))
}

/// What the scenarios ask of a running server: a lease on it, and the keys
/// flakeid keeps there.
pub trait LeaseStore {
    /// A lease on this server with the tests' short TTL.
    fn lease(&self, prefix: &str) -> Lease;
    /// The mark of a node id, as stored.
    fn mark(&self, prefix: &str, node: u64) -> Option<String>;
    /// The holder's token of a node id, if it is held.
    fn holder(&self, prefix: &str, node: u64) -> Option<String>;
    /// Overwrites the mark of a node id, as a damaged store would.
    fn set_mark(&self, prefix: &str, node: u64, value: &str);
}

impl LeaseStore for Server {
    fn lease(&self, prefix: &str) -> Lease {
        lease_at(self.kind, self.addr(), prefix)
    }

    fn mark(&self, prefix: &str, node: u64) -> Option<String> {
        match self.kind {
            Kind::Etcd => etcd_get(&self.url(), &format!("{prefix}/marks/{node}")),
            Kind::Redis => redis_get(&self.url(), &format!("{prefix}:mark:{node}")),
        }
    }

    fn holder(&self, prefix: &str, node: u64) -> Option<String> {
        match self.kind {
            Kind::Etcd => etcd_get(&self.url(), &format!("{prefix}/nodes/{node}")),
            Kind::Redis => redis_get(&self.url(), &format!("{prefix}:node:{node}")),
        }
    }

    fn set_mark(&self, prefix: &str, node: u64, value: &str) {
        match self.kind {
            Kind::Etcd => etcd_put(&self.url(), &format!("{prefix}/marks/{node}"), value),
            Kind::Redis => redis_set(&self.url(), &format!("{prefix}:mark:{node}"), value),
        }
    }
}

#[cfg(feature = "etcd")]
fn etcd_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[cfg(feature = "etcd")]
fn etcd_get(url: &str, key: &str) -> Option<String> {
    etcd_runtime().block_on(async {
        let mut c = etcd_client::Client::connect([url], None).await.unwrap();
        let reply = c.get(key, None).await.unwrap();
        reply
            .kvs()
            .first()
            .map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
    })
}

#[cfg(feature = "etcd")]
fn etcd_put(url: &str, key: &str, value: &str) {
    etcd_runtime().block_on(async {
        let mut c = etcd_client::Client::connect([url], None).await.unwrap();
        c.put(key, value, None).await.unwrap();
    });
}

#[cfg(not(feature = "etcd"))]
fn etcd_get(_: &str, _: &str) -> Option<String> {
    unreachable!("etcd is not built in")
}

#[cfg(not(feature = "etcd"))]
fn etcd_put(_: &str, _: &str, _: &str) {
    unreachable!("etcd is not built in")
}

#[cfg(feature = "redis")]
fn redis_get(url: &str, key: &str) -> Option<String> {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("GET").arg(key).query(&mut c).unwrap()
}

#[cfg(feature = "redis")]
fn redis_set(url: &str, key: &str, value: &str) {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let () = redis::cmd("SET").arg(key).arg(value).query(&mut c).unwrap();
}

#[cfg(not(feature = "redis"))]
fn redis_get(_: &str, _: &str) -> Option<String> {
    unreachable!("redis is not built in")
}

#[cfg(not(feature = "redis"))]
fn redis_set(_: &str, _: &str, _: &str) {
    unreachable!("redis is not built in")
}

fn build(lease: Lease) -> Result<Generator, BuildError> {
    Generator::builder(Layout::twitter()).lease(lease).build()
}

fn node_of(id: Id) -> u64 {
    Layout::twitter().decode(id).unwrap().node_id()
}

fn assert_unique(ids: &mut [u64]) {
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        panic!("id {} was issued twice", w[0]);
    }
}

// --- scenarios -----------------------------------------------------------

/// Claim the lowest free node id, keep it through several TTLs, give it back
/// with the exact last time as its mark; the next holder starts after it.
pub fn claim_renew_release(server: &Server) {
    let prefix = unique_prefix("crr");
    let layout = Layout::twitter();
    let before_ms = wall_ms();
    let a = build(server.lease(&prefix)).unwrap();
    assert_eq!(a.node_id(), 0, "the lowest free node id");
    assert!(server.holder(&prefix, 0).is_some());
    let first_mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
    assert!(
        first_mark >= before_ms + TTL.as_millis() as u64,
        "the claim recorded a ceiling a TTL ahead: {first_mark} vs {before_ms}"
    );

    // Renewals raise the mark (waited for, not timed: a starved keeper
    // thread may fence the generator for a while, which `next_id` waits
    // out); every ID is node 0's and later than the one before.
    let mut last_a = a.next_id();
    loop {
        let id = a.next_id();
        assert!(id > last_a);
        assert_eq!(node_of(id), 0);
        last_a = id;
        let mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
        if mark > first_mark + 2 * TTL.as_millis() as u64 {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }

    let b = build(server.lease(&prefix)).unwrap();
    assert_eq!(b.node_id(), 1, "0 is held");
    b.try_next_id().unwrap();

    drop(a);
    assert_eq!(server.holder(&prefix, 0), None, "released on drop");
    let last_ms = layout.decode(last_a).unwrap().unix_ms();
    assert_eq!(
        server.mark(&prefix, 0),
        Some(last_ms.to_string()),
        "the mark is the exact last time issued"
    );

    let c = build(server.lease(&prefix)).unwrap();
    assert_eq!(c.node_id(), 0, "the lowest free node id again");
    let first_c = c.next_id();
    assert_eq!(node_of(first_c), 0);
    assert!(first_c > last_a, "the next holder starts after the mark");
}

/// All node ids held, a bad mark, an unreachable server: typed errors.
pub fn errors(server: &Server) {
    let prefix = unique_prefix("held");
    let two = |p: &str| server.lease(p).node_ids(0..=1);
    let a = build(two(&prefix)).unwrap();
    let b = build(two(&prefix)).unwrap();
    assert_eq!((a.node_id(), b.node_id()), (0, 1));
    match build(two(&prefix)) {
        Err(BuildError::Lease(LeaseError::AllHeld { first: 0, last: 1 })) => {}
        other => panic!("expected AllHeld, got {other:?}"),
    }
    drop(a);
    assert_eq!(build(two(&prefix)).unwrap().node_id(), 0, "free again");

    let prefix = unique_prefix("bad-mark");
    server.set_mark(&prefix, 0, "yesterday");
    match build(server.lease(&prefix)) {
        Err(BuildError::Lease(LeaseError::BadReply { reason })) => {
            assert!(reason.contains("yesterday"), "{reason}");
        }
        other => panic!("expected BadReply, got {other:?}"),
    }

    let with_persist = Generator::builder(Layout::twitter())
        .lease(server.lease(&unique_prefix("persist")))
        .persist(Persist::file(
            std::env::temp_dir().join("flakeid-never-written.state"),
        ))
        .build();
    assert!(
        matches!(
            with_persist,
            Err(BuildError::Lease(LeaseError::Config { .. }))
        ),
        "{with_persist:?}"
    );

    let closed = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let timeout = Duration::from_millis(700);
    let begun = Instant::now();
    let result = build(lease_at(server.kind, closed, "unreachable").connect_timeout(timeout));
    let took = begun.elapsed();
    match result {
        Err(BuildError::Lease(LeaseError::Unreachable { waited, .. })) => {
            assert_eq!(waited, timeout);
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    // (No upper bound: how soon the thread runs again is the scheduler's.)
    assert!(
        took >= timeout,
        "gave up after {took:?}, before the timeout"
    );
}

const CHILD_ENV: &str = "FLAKEID_LEASE_CHILD";
const RACE_TTL: Duration = Duration::from_secs(3);
pub const GENERATORS_PER_CHILD: usize = 32;
const IDS_PER_GENERATOR: usize = 2_000;

/// Two processes of 32 generators each claim node ids at once, then all 64
/// generate while holding them: no node id twice, no ID twice.
pub fn two_processes_race(server: &Server, child_test: &str) {
    let prefix = unique_prefix("race");
    let mut children: Vec<Child> = (0..2)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--ignored",
                    "--exact",
                    child_test,
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(
                    CHILD_ENV,
                    format!("{} {} {prefix}", server.kind.name(), server.addr()),
                )
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let readers: Vec<_> = children
        .iter_mut()
        .map(|child| {
            let stdout = child.stdout.take().unwrap();
            let tx = tx.clone();
            thread::spawn(move || {
                let (mut nodes, mut ids) = (Vec::new(), Vec::new());
                let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
                let mut done = false;
                for line in lines.by_ref() {
                    if let Some(n) = line.strip_prefix("node ") {
                        nodes.push(n.parse::<u64>().unwrap());
                    } else if let Some(id) = line.strip_prefix("id ") {
                        ids.push(id.parse::<u64>().unwrap());
                    } else if line == "done" {
                        done = true;
                        break;
                    }
                }
                tx.send((nodes, ids, done)).unwrap();
                // The test harness still reports to this pipe.
                lines.for_each(drop);
            })
        })
        .collect();
    drop(tx);
    let results: Vec<_> = rx.iter().take(2).collect();
    // Every generator of both processes is alive until here.
    for child in &mut children {
        drop(child.stdin.take());
    }
    for child in &mut children {
        assert!(child.wait().unwrap().success(), "a child failed");
    }
    for reader in readers {
        reader.join().unwrap();
    }
    let mut nodes = Vec::new();
    let mut ids = Vec::new();
    for (n, i, done) in results {
        assert!(done, "a child did not finish");
        assert_eq!(n.len(), GENERATORS_PER_CHILD);
        nodes.extend(n);
        ids.extend(i);
    }
    let distinct: HashSet<_> = nodes.iter().collect();
    assert_eq!(
        distinct.len(),
        2 * GENERATORS_PER_CHILD,
        "a node id was held twice: {nodes:?}"
    );
    assert_eq!(ids.len(), 2 * GENERATORS_PER_CHILD * IDS_PER_GENERATOR);
    assert_unique(&mut ids);
}

/// The child of [`two_processes_race`]: run by the test binary itself.
pub fn race_child() {
    let Ok(config) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut words = config.split(' ');
    let kind = Kind::parse(words.next().unwrap());
    let addr: SocketAddr = words.next().unwrap().parse().unwrap();
    let prefix = words.next().unwrap().to_owned();
    let barrier = Barrier::new(GENERATORS_PER_CHILD);
    let out = Mutex::new(std::io::stdout());
    // The harness's "test race_child ... " line has no newline yet.
    writeln!(out.lock().unwrap()).unwrap();
    let generators: Vec<Generator> = thread::scope(|s| {
        let handles: Vec<_> = (0..GENERATORS_PER_CHILD)
            .map(|_| {
                let (barrier, out, prefix) = (&barrier, &out, &prefix);
                s.spawn(move || {
                    barrier.wait(); // all claim at once
                    // A longer TTL than the other tests: 64 generators in
                    // two processes claim and generate at once.
                    let lease = lease_at(kind, addr, prefix)
                        .ttl(RACE_TTL)
                        .safety_margin(RACE_TTL / 5);
                    let g = build(lease).unwrap_or_else(|e| {
                        // Exit rather than leave the others at the barrier.
                        eprintln!("race child: {e}");
                        std::process::exit(1)
                    });
                    let node = g.node_id();
                    barrier.wait(); // all hold their node ids
                    let ids: Vec<Id> = (0..IDS_PER_GENERATOR).map(|_| g.next_id()).collect();
                    let mut out = out.lock().unwrap();
                    writeln!(out, "node {node}").unwrap();
                    for id in ids {
                        if node_of(id) != node {
                            eprintln!("race child: lost node id {node} while generating");
                            std::process::exit(1);
                        }
                        writeln!(out, "id {id}").unwrap();
                    }
                    g
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    {
        let mut out = out.lock().unwrap();
        writeln!(out, "done").unwrap();
        out.flush().unwrap();
    }
    // Hold every node id until the parent has both processes' results.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(generators);
}

/// What one generator thread saw, stamped on the monotonic clock.
/// Sets its flag when dropped: the body of a `thread::scope` holds one, so a
/// panic in the body stops the scope's threads (the scope joins them before
/// the panic goes on) instead of waiting on them forever.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[derive(Default)]
/// Calls are stamped when they start: a call that starts after the fence's
/// deadline cannot return an ID (it confirms each ID against the deadline
/// later still), whatever the scheduler does to the thread.
struct Seen {
    ids: Vec<(Instant, u64)>,
    /// Calls answered `Fenced`: when each started and when it was answered.
    fenced: Vec<(Instant, Instant)>,
}

/// What a readiness probe said, and when it was asked.
struct Probe {
    before: Instant,
    after: Instant,
    closed_for: Duration,
}

/// Kill the server mid-run: every generator fences within the TTL and issues
/// nothing after; restart it: every generator claims again and resumes.
pub fn killed_then_restarted(server: &mut Server) {
    const GENERATORS: usize = 8;
    let prefix = unique_prefix("kill");
    // Each generator's lease events, as its hook heard them.
    let heard: Vec<Arc<Mutex<Vec<Event>>>> = (0..GENERATORS).map(|_| Arc::default()).collect();
    let generators: Vec<Generator> = heard
        .iter()
        .map(|log| {
            let log = log.clone();
            Generator::builder(Layout::twitter())
                .lease(server.lease(&prefix))
                .on_event(move |e: &Event| log.lock().unwrap().push(e.clone()))
                .build()
                .unwrap()
        })
        .collect();
    let stop = AtomicBool::new(false);
    let back = AtomicBool::new(false);
    let resumed: Vec<AtomicBool> = (0..GENERATORS).map(|_| AtomicBool::new(false)).collect();
    let fenced_late: Vec<AtomicBool> = (0..GENERATORS).map(|_| AtomicBool::new(false)).collect();
    // Every renewal that succeeded was sent before the kill, so every fence
    // closed by `killed + TTL - MARGIN` (its clock and `Instant` run at the
    // same rate; 5 ms is for the TSC calibration).
    let deadline = std::sync::OnceLock::<Instant>::new();
    let mut probes: Vec<Option<Probe>> = (0..GENERATORS).map(|_| None).collect();
    let (killed, restarted, seen) = thread::scope(|s| {
        let _stop_on_panic = StopOnDrop(&stop);
        let threads: Vec<_> = generators
            .iter()
            .zip(resumed.iter().zip(&fenced_late))
            .map(|(g, (resumed, fenced_late))| {
                let (stop, back, deadline) = (&stop, &back, &deadline);
                s.spawn(move || {
                    let mut seen = Seen::default();
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        match g.try_next_id() {
                            Ok(id) => {
                                seen.ids.push((start, id.to_u64()));
                                if back.load(Ordering::Relaxed) {
                                    resumed.store(true, Ordering::Relaxed);
                                }
                            }
                            Err(GenerateError::Fenced) => {
                                seen.fenced.push((start, Instant::now()));
                                if deadline.get().is_some_and(|&d| start > d) {
                                    fenced_late.store(true, Ordering::Relaxed);
                                }
                            }
                            Err(e) => panic!("unexpected {e}"),
                        }
                        thread::sleep(Duration::from_micros(300));
                    }
                    seen
                })
            })
            .collect();
        thread::sleep(TTL + TTL / 2); // a few renewals
        // The kill's instant is when the signal goes: reaping the process
        // can take long (a Redis in an fsync on a busy disk took 105 s once),
        // and the generators fence meanwhile.
        let killed = Instant::now();
        server.kill();
        let _ = deadline.set(killed + TTL - MARGIN + Duration::from_millis(5));
        // Restart once every generator has made a call after its deadline
        // (waited for, not timed).
        while !fenced_late.iter().all(|f| f.load(Ordering::Relaxed)) {
            thread::sleep(Duration::from_millis(20));
        }
        // A readiness probe sees each generator fenced; when it says the
        // fence closed is checked below, against the calls' answers.
        for (g, probe) in generators.iter().zip(&mut probes) {
            let before = Instant::now();
            let health = g.health();
            *probe = match health {
                Health::Fenced { closed_for } => Some(Probe {
                    before,
                    after: Instant::now(),
                    closed_for,
                }),
                other => panic!("a generator past its deadline reports {other:?}"),
            };
        }
        // The async handler's pattern answers at once (503) instead of
        // hanging until the store is back, as `next_id_async` would.
        #[cfg(feature = "tokio")]
        {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            for g in &generators {
                let answer = runtime.block_on(g.try_next_id_async());
                assert_eq!(answer, Err(GenerateError::Fenced));
            }
        }
        let restarted = Instant::now();
        back.store(true, Ordering::Relaxed);
        server.restart();
        while !resumed.iter().all(|r| r.load(Ordering::Relaxed)) {
            thread::sleep(Duration::from_millis(20));
        }
        // Each has issued since the restart; its probe reports so too (once
        // the keeper's renewals keep the fresh claim proven).
        for g in &generators {
            while g.health() != Health::Issuing {
                thread::sleep(Duration::from_millis(5));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let seen: Vec<Seen> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        (killed, restarted, seen)
    });
    let mut all = Vec::new();
    let deadline = *deadline.get().unwrap();
    for (i, seen) in seen.iter().enumerate() {
        // No ID from a call that started after the deadline...
        if let Some((t, _)) = seen
            .ids
            .iter()
            .find(|&&(t, _)| t > deadline && t < restarted)
        {
            panic!(
                "generator {i} issued an ID in a call made {:?} after the kill",
                *t - killed
            );
        }
        // ... while calls went on (each of them fenced) ...
        assert!(
            seen.fenced
                .iter()
                .any(|&(t, _)| t > deadline && t < restarted),
            "generator {i} made no call between its deadline and the restart"
        );
        // ... and none after the generator first found itself fenced.
        let fenced_at = seen
            .fenced
            .iter()
            .map(|&(t, _)| t)
            .find(|&t| t > killed)
            .unwrap_or_else(|| panic!("generator {i} was never fenced"));
        let late = seen
            .ids
            .iter()
            .filter(|(t, _)| *t > fenced_at && *t < restarted)
            .count();
        assert_eq!(late, 0, "generator {i} issued {late} IDs after fencing");
        // ... and resumed after the restart.
        assert!(
            seen.ids.iter().any(|&(t, _)| t > restarted),
            "generator {i} did not resume"
        );
        // The probe dated the fence's closing between the last call that got
        // an ID and the first answer `Fenced` after it (usually after the
        // kill; before it if a starved keeper missed its deadline earlier).
        // The fence times itself on the TSC, the test on `Instant`: 5 ms
        // allow for the calibration.
        let probe = probes[i].as_ref().unwrap();
        let last_ok = seen
            .ids
            .iter()
            .map(|&(t, _)| t)
            .filter(|&t| t < probe.before)
            .max()
            .unwrap_or_else(|| panic!("generator {i} issued nothing before the probe"));
        let first_fenced = seen
            .fenced
            .iter()
            .find(|&&(t, _)| t > last_ok)
            .map(|&(_, answered)| answered)
            .unwrap_or_else(|| panic!("generator {i} was not fenced before the probe"));
        let slack = Duration::from_millis(5);
        assert!(
            probe.after - probe.closed_for + slack > last_ok,
            "generator {i}: fenced for {:?}, but it issued an ID in a call made {:?} before the probe",
            probe.closed_for,
            probe.after - last_ok
        );
        assert!(
            probe.before - probe.closed_for < first_fenced + slack,
            "generator {i}: fenced for {:?}, but it was first answered Fenced only {:?} before the probe",
            probe.closed_for,
            probe.before - first_fenced
        );
        all.extend(seen.ids.iter().map(|&(_, id)| id));
    }
    let nodes: HashSet<u64> = generators.iter().map(Generator::node_id).collect();
    assert_eq!(
        nodes.len(),
        GENERATORS,
        "two generators share a node id after reclaiming"
    );
    assert_unique(&mut all);
    // Each hook heard the claim, then (after failed renewals, if any were
    // due) the fence, then the fresh claim, each with its node id. The hook
    // also hears the calls' waits (a full tick at 8 threads) and IDs dropped
    // by the lapse; only the lease's changes of state are checked here.
    for (g, log) in generators.iter().zip(&heard) {
        let events: Vec<Event> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::LeaseClaimed { .. }
                        | Event::Fenced { .. }
                        | Event::LeaseReopened { .. }
                        | Event::LeaseRotated { .. }
                )
            })
            .cloned()
            .collect();
        // A starved keeper may have lost and reclaimed the lease before the
        // kill too: one or more fence-and-reopen pairs, each fence naming the
        // node id held, the last reopening naming the one the generator has.
        let [Event::LeaseClaimed { node_id: mut held }, ref cycles @ ..] = events[..] else {
            panic!("lease events heard: {events:?}");
        };
        assert!(
            !cycles.is_empty() && cycles.len() % 2 == 0,
            "lease events heard: {events:?}"
        );
        for pair in cycles.chunks(2) {
            let [
                Event::Fenced { node_id: fenced },
                Event::LeaseReopened { node_id: reopened },
            ] = pair[..]
            else {
                panic!("lease events heard: {events:?}");
            };
            assert_eq!(fenced, held, "lease events heard: {events:?}");
            held = reopened;
        }
        assert_eq!(held, g.node_id(), "lease events heard: {events:?}");
    }
}

/// One simulated node's life, for [`churn`].
struct Life {
    node: u64,
    claimed: Instant,
    ids: Vec<u64>,
    end: End,
}

enum End {
    /// Dropped (released) from this instant on.
    Released(Instant),
    /// Cut off from the store at `cut`; its last ID was made at `last_id`.
    Crashed { cut: Instant, last_id: Instant },
}

/// 1,000 simulated nodes join and leave (nine in ten by a clean release, one
/// in ten by a crash: cut off from the store without releasing) over a small
/// range of node ids, so ids are reused many times. A node id is claimed
/// again only after its holder released it, or after the holder's lease ran
/// out (the holder had stopped issuing: it was fenced); each new holder starts
/// after the last ID of the one before; no ID is issued twice.
pub fn churn(server: &Server) {
    const NODES: usize = 1_000;
    const WORKERS: usize = 12;
    const RANGE: u64 = 11; // node ids 0..=11, one per worker
    let prefix = unique_prefix("churn");
    let next = AtomicU64::new(0);
    let all_held = AtomicU64::new(0);
    let lives = Mutex::new(Vec::<Life>::new());
    thread::scope(|s| {
        for w in 0..WORKERS {
            let (next, all_held, lives, prefix) = (&next, &all_held, &lives, &prefix);
            s.spawn(move || {
                let mut rng = (w as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut rand = move |n: u64| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng % n
                };
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= NODES as u64 {
                        return;
                    }
                    let crash = k % 10 == 3;
                    let mut proxy = crash.then(|| Proxy::new(server.addr()));
                    let addr = proxy.as_ref().map_or(server.addr(), Proxy::addr);
                    let lease = lease_at(server.kind, addr, prefix).node_ids(0..=RANGE);
                    let g = loop {
                        match build(lease.clone()) {
                            Ok(g) => break g,
                            Err(BuildError::Lease(LeaseError::AllHeld { .. })) => {
                                all_held.fetch_add(1, Ordering::Relaxed);
                                thread::sleep(Duration::from_millis(10 + rand(20)));
                            }
                            Err(e) => panic!("node {k}: {e}"),
                        }
                    };
                    let claimed = Instant::now();
                    let node = g.node_id();
                    let mut ids: Vec<u64> = (0..20).map(|_| g.next_id().to_u64()).collect();
                    thread::sleep(Duration::from_millis(5 + rand(40)));
                    ids.extend((0..20).map(|_| g.next_id().to_u64()));
                    let end = match &mut proxy {
                        None => {
                            let released = Instant::now();
                            drop(g);
                            End::Released(released)
                        }
                        Some(proxy) => {
                            let cut = Instant::now();
                            proxy.cut();
                            // It keeps trying until its fence closes.
                            let mut last_id = cut;
                            loop {
                                match g.try_next_id() {
                                    Ok(id) => {
                                        last_id = Instant::now();
                                        ids.push(id.to_u64());
                                    }
                                    Err(GenerateError::Fenced) => break,
                                    Err(e) => panic!("node {k}: {e}"),
                                }
                                thread::sleep(Duration::from_millis(2));
                            }
                            // Dropping it now fails to reach the store: the
                            // node id is freed by expiry alone.
                            drop(g);
                            End::Crashed { cut, last_id }
                        }
                    };
                    lives.lock().unwrap().push(Life {
                        node,
                        claimed,
                        ids,
                        end,
                    });
                }
            });
        }
    });
    let mut lives = lives.into_inner().unwrap();
    assert_eq!(lives.len(), NODES);
    let layout = Layout::twitter();
    let mut by_node: HashMap<u64, Vec<&Life>> = HashMap::new();
    for life in &lives {
        assert!(life.node <= RANGE);
        for &id in &life.ids {
            assert_eq!(layout.decode(Id::from(id)).unwrap().node_id(), life.node);
        }
        by_node.entry(life.node).or_default().push(life);
    }
    let mut reused = 0;
    for (node, holders) in &mut by_node {
        holders.sort_by_key(|l| l.claimed);
        for pair in holders.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            reused += 1;
            match before.end {
                End::Released(at) => assert!(
                    after.claimed > at,
                    "node id {node} claimed before its holder released it"
                ),
                End::Crashed { cut, last_id } => {
                    assert!(
                        after.claimed > last_id,
                        "node id {node} claimed while its cut-off holder still issued"
                    );
                    assert!(after.claimed > cut);
                }
            }
            let last = before.ids.iter().max().unwrap();
            let first = after.ids.iter().min().unwrap();
            assert!(
                first > last,
                "node id {node}: a new holder started before the old one's last ID"
            );
        }
    }
    let crashed = lives
        .iter()
        .filter(|l| matches!(l.end, End::Crashed { .. }))
        .count();
    eprintln!(
        "churn: {NODES} nodes ({crashed} crashed) on {} node ids, {reused} reuses, {} claims found all held",
        RANGE + 1,
        all_held.load(Ordering::Relaxed)
    );
    assert!(reused > NODES / 2);
    let mut ids: Vec<u64> = lives.iter_mut().flat_map(|l| l.ids.drain(..)).collect();
    assert_unique(&mut ids);
}

/// The rotation policy: after the clock steps back further than the
/// threshold, the generator gives its node id back and issues at the real
/// time under a node id whose mark is before it; the node id given back
/// keeps its mark, so its next holder starts after everything issued on it.
pub fn rotation_after_rollback(server: &Server) {
    let prefix = unique_prefix("rotate");
    let layout = Layout::twitter();
    let clock = ManualClock::new(wall_ms());
    let a = Generator::builder(layout.clone())
        .clock(clock.clone())
        .lease(
            server
                .lease(&prefix)
                .rotate_after_rollback(Duration::from_secs(1)),
        )
        .build()
        .unwrap();
    let before: Vec<u64> = (0..100).map(|_| a.next_id().to_u64()).collect();
    assert!(before.iter().all(|&id| node_of(Id::from(id)) == 0));
    let last_before = *before.last().unwrap();

    clock.rewind(Duration::from_secs(5));
    let stepped_back = layout.timestamp_at(clock.now_ms()).unwrap();
    let mut after = Vec::new();
    let rotated = loop {
        // OnClockBehind::Continue keeps issuing on node 0 until the keeper
        // has claimed a fresh node id.
        let id = a.next_id();
        after.push(id.to_u64());
        let d = layout.decode(id).unwrap();
        if d.node_id() != 0 {
            break d.timestamp();
        }
        thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(a.node_id(), 1, "the lowest node id with no mark");
    assert_eq!(rotated, stepped_back, "issues at the real, earlier time");
    // The keeper opens the fence for the new node id first, then gives the
    // old one back.
    while server.holder(&prefix, 0).is_some() {
        thread::sleep(Duration::from_millis(10));
    }
    let mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
    assert!(mark >= layout.decode(Id::from(last_before)).unwrap().unix_ms());

    let b = build(server.lease(&prefix)).unwrap();
    assert_eq!(b.node_id(), 0);
    let first_b = b.next_id().to_u64();
    assert!(
        after
            .iter()
            .chain(&before)
            .filter(|&&id| node_of(Id::from(id)) == 0)
            .all(|&id| id < first_b),
        "node id 0's next holder starts after everything issued on it"
    );
    let mut all: Vec<u64> = before.into_iter().chain(after).chain([first_b]).collect();
    assert_unique(&mut all);
}

/// A server that answers nonsense gets a typed error within the connect
/// timeout, never a panic or a hang.
pub fn nonsense_replies(kind: Kind) {
    let reply: &'static [u8] = match kind {
        // Not HTTP/2: the gRPC connection cannot be set up.
        Kind::Etcd => b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        // Well-formed Redis integers where a script result is expected (two
        // per request: the client pipelines two commands when connecting).
        Kind::Redis => b":5\r\n:5\r\n",
    };
    let impostor = Impostor::new(reply);
    let timeout = Duration::from_millis(800);
    let begun = Instant::now();
    let result = build(lease_at(kind, impostor.addr(), "nonsense").connect_timeout(timeout));
    let took = begun.elapsed();
    eprintln!("{kind:?} answering nonsense: {result:?} after {took:?}");
    // Not a transport problem (the server answers at once), but replies
    // flakeid cannot use: not retried until the timeout (which would end in
    // `Unreachable`), reported as is.
    assert!(
        matches!(result, Err(BuildError::Lease(LeaseError::BadReply { .. }))),
        "{result:?}"
    );
}

/// A store that stops answering (requests hang, connections stay open) must
/// fence every generator at the deadline even though the keeper is stuck in
/// a request: the fence closes by itself. When the store answers again, the
/// generators claim afresh and resume.
pub fn frozen_store(server: &Server) {
    const GENERATORS: usize = 4;
    let prefix = unique_prefix("frozen");
    let proxy = Proxy::new(server.addr());
    let generators: Vec<Generator> = (0..GENERATORS)
        .map(|_| build(lease_at(server.kind, proxy.addr(), &prefix)).unwrap())
        .collect();
    let stop = AtomicBool::new(false);
    let fenced_late: Vec<AtomicBool> = (0..GENERATORS).map(|_| AtomicBool::new(false)).collect();
    let deadline = std::sync::OnceLock::<Instant>::new();
    let (frozen, thawed, seen) = thread::scope(|s| {
        let _stop_on_panic = StopOnDrop(&stop);
        let threads: Vec<_> = generators
            .iter()
            .zip(&fenced_late)
            .map(|(g, fenced_late)| {
                let (stop, deadline) = (&stop, &deadline);
                s.spawn(move || {
                    let mut seen = Seen::default();
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        match g.try_next_id() {
                            Ok(id) => seen.ids.push((start, id.to_u64())),
                            Err(GenerateError::Fenced) => {
                                seen.fenced.push((start, Instant::now()));
                                if deadline.get().is_some_and(|&d| start > d) {
                                    fenced_late.store(true, Ordering::Relaxed);
                                }
                            }
                            Err(e) => panic!("unexpected {e}"),
                        }
                        thread::sleep(Duration::from_micros(300));
                    }
                    seen
                })
            })
            .collect();
        thread::sleep(TTL);
        let frozen = Instant::now();
        let _ = deadline.set(frozen + TTL - MARGIN + Duration::from_millis(5));
        proxy.freeze(true);
        // Thaw once every generator has made a call after its deadline
        // (waited for, not timed).
        while !fenced_late.iter().all(|f| f.load(Ordering::Relaxed)) {
            thread::sleep(Duration::from_millis(20));
        }
        let thawed = Instant::now();
        proxy.freeze(false);
        // Wait until every generator issues again.
        while generators.iter().any(|g| g.try_next_id().is_err()) {
            thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        let seen: Vec<Seen> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        (frozen, thawed, seen)
    });
    let deadline = *deadline.get().unwrap();
    for (i, seen) in seen.iter().enumerate() {
        if let Some((t, _)) = seen.ids.iter().find(|&&(t, _)| t > deadline && t < thawed) {
            panic!(
                "generator {i} issued an ID in a call made {:?} after the freeze",
                *t - frozen
            );
        }
        assert!(
            seen.fenced.iter().any(|&(t, _)| t > deadline && t < thawed),
            "generator {i} made no call between its deadline and the thaw"
        );
    }
}

/// Built, used and dropped inside an async runtime (the caller's thread is
/// one of the runtime's): the keeper's store and its runtime live on the
/// keeper thread only, so nothing here may start or drop a runtime inside
/// this one. With a live server, and with an unreachable one (a typed error,
/// no panic). Runs inside `#[tokio::test]`, of either flavor.
pub fn inside_a_runtime(server: &Server) {
    assert!(
        tokio::runtime::Handle::try_current().is_ok(),
        "called from inside a runtime"
    );
    let prefix = unique_prefix("runtime");
    let g = build(server.lease(&prefix)).expect("builds inside a runtime");
    let node = g.node_id();
    let first = g.try_next_id().unwrap();
    let second = g.next_id();
    assert!(second > first);
    drop(g); // releases the node id, inside the runtime
    let again = build(server.lease(&prefix)).unwrap();
    assert_eq!(again.node_id(), node, "released on drop: the lowest again");
    assert!(again.next_id() > second, "after the mark the drop recorded");

    // A store that stops answering: the drop gives up after the request
    // timeout (a third of the TTL here), it does not hang.
    let proxy = Proxy::new(server.addr());
    let frozen = build(lease_at(server.kind, proxy.addr(), &prefix)).unwrap();
    frozen.next_id();
    proxy.freeze(true);
    drop(frozen);
    proxy.freeze(false);
    drop(again);

    let closed = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let timeout = Duration::from_millis(300);
    match build(lease_at(server.kind, closed, "unreachable").connect_timeout(timeout)) {
        Err(BuildError::Lease(LeaseError::Unreachable { waited, .. })) => {
            assert_eq!(waited, timeout);
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
}

/// 1 Jan 2200 in Unix milliseconds: a mark from a clock 175 years ahead.
pub const YEAR_2200_MS: u64 = 7_258_118_400_000;

/// Marks too far ahead of the claimer's clock (planted: the year 2200 and
/// 2^64 - 1; left by a holder whose clock ran a day ahead) do not poison
/// their node ids: a claim skips them, takes the lowest usable one and
/// issues at once, and counts what it skipped; it fails with a typed error
/// naming them only when every free node id is skipped.
pub fn poisoned_marks(server: &Server) {
    let prefix = unique_prefix("poisoned");
    server.set_mark(&prefix, 0, &YEAR_2200_MS.to_string());
    server.set_mark(&prefix, 1, &u64::MAX.to_string());
    let g = build(server.lease(&prefix).node_ids(0..=3)).unwrap();
    assert_eq!(g.node_id(), 2, "the lowest usable node id");
    assert_eq!(g.lease_skipped_node_ids(), 2);
    let id = g
        .try_next_id()
        .expect("issues at once, without waiting for the clock to reach a mark");
    assert_eq!(node_of(id), 2);

    // A holder whose clock ran a day ahead takes node id 3 and leaves its
    // mark a day ahead.
    const DAY_MS: u64 = 86_400_000;
    let ahead = Generator::builder(Layout::twitter())
        .clock(ManualClock::new(wall_ms() + DAY_MS))
        .lease(server.lease(&prefix).node_ids(0..=3))
        .build()
        .unwrap();
    assert_eq!(ahead.node_id(), 3);
    let last_ahead = ahead.next_id();
    drop(ahead);
    let mark: u64 = server.mark(&prefix, 3).unwrap().parse().unwrap();
    assert!(mark >= wall_ms() + DAY_MS - 60_000, "{mark}");

    // Every free node id (0, 1, 3) is skipped: a typed error naming them.
    match build(server.lease(&prefix).node_ids(0..=3)) {
        Err(BuildError::Lease(LeaseError::MarksAhead {
            first: 0,
            last: 3,
            skipped: 3,
            lowest,
            ..
        })) => assert_eq!(
            lowest,
            [(0, YEAR_2200_MS), (1, u64::MAX), (3, mark)],
            "the skipped node ids and their marks"
        ),
        other => panic!("expected MarksAhead, got {other:?}"),
    }

    // A wider bound takes the day-ahead node id again; its first ID is
    // after the day-ahead holder's last.
    let patient = Generator::builder(Layout::twitter())
        .clock(ManualClock::new(wall_ms() + DAY_MS + 1_000))
        .lease(
            server
                .lease(&prefix)
                .node_ids(3..=3)
                .max_mark_ahead(Duration::from_millis(2 * DAY_MS)),
        )
        .build()
        .unwrap();
    assert_eq!(patient.node_id(), 3);
    assert!(patient.next_id() > last_ahead);
    drop(g);
}

/// Waits (polling) until `done`, for at most `within`; panics naming `what`
/// after that. The bound is far above the expected wait: reaching it means
/// something never happened, not that it was slow.
pub fn wait_until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let begun = Instant::now();
    while !done() {
        assert!(begun.elapsed() < within, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(2));
    }
}

/// The lease events a generator's hook heard, in order, and a gate: while
/// it is shut, the hook holds the keeper thread when it hears `Fenced`
/// (after the keeper closed the fence, before it claims afresh), so the
/// test sees the generator as the lapse left it.
#[derive(Default)]
pub struct Heard {
    state: Mutex<HeardState>,
    changed: Condvar,
}

#[derive(Default)]
struct HeardState {
    events: Vec<Event>,
    /// When each was heard.
    times: Vec<Instant>,
    gate_open: bool,
}

impl Heard {
    /// A log whose gate is open (the hook never holds the keeper).
    pub fn open() -> Arc<Heard> {
        let heard = Arc::new(Heard::default());
        heard.open_gate();
        heard
    }

    /// A log whose gate holds the keeper at `Fenced` until
    /// [`Heard::open_gate`].
    pub fn gated() -> Arc<Heard> {
        Arc::new(Heard::default())
    }

    /// The hook: keeps lease events, and holds the keeper at `Fenced`
    /// while the gate is shut.
    pub fn hear(&self, event: &Event) {
        if !matches!(
            event,
            Event::LeaseClaimed { .. }
                | Event::LeaseExtended { .. }
                | Event::LeaseRenewalFailed { .. }
                | Event::Fenced { .. }
                | Event::LeaseReopened { .. }
                | Event::LeaseRotated { .. }
        ) {
            return;
        }
        let mut state = self.lock();
        state.events.push(event.clone());
        state.times.push(Instant::now());
        self.changed.notify_all();
        if matches!(event, Event::Fenced { .. }) {
            while !state.gate_open {
                state = self
                    .changed
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
    }

    /// (A test that failed while holding it leaves it poisoned; the gate
    /// must still open.)
    fn lock(&self) -> std::sync::MutexGuard<'_, HeardState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn open_gate(&self) {
        self.lock().gate_open = true;
        self.changed.notify_all();
    }

    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// The events heard, each with when.
    pub fn timed_events(&self) -> Vec<(Instant, Event)> {
        let state = self.lock();
        state
            .times
            .iter()
            .copied()
            .zip(state.events.clone())
            .collect()
    }

    /// Waits until the events heard satisfy `done` (at most `within`, then
    /// panics naming `what`); returns them.
    pub fn wait_for(
        &self,
        within: Duration,
        what: &str,
        mut done: impl FnMut(&[Event]) -> bool,
    ) -> Vec<Event> {
        let begun = Instant::now();
        let mut state = self.lock();
        while !done(&state.events) {
            let left = within.checked_sub(begun.elapsed()).unwrap_or_else(|| {
                panic!("{what}: not within {within:?}; heard {:?}", state.events)
            });
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        state.events.clone()
    }
}

/// Opens a gate when dropped: declared after the generator, it is dropped
/// first, so a failing test does not leave the keeper held while the
/// generator's drop waits for it.
pub struct OpenOnDrop(pub Arc<Heard>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open_gate();
    }
}

fn is_fenced(e: &Event) -> bool {
    matches!(e, Event::Fenced { .. })
}

fn is_renewal_failure(e: &Event) -> bool {
    matches!(e, Event::LeaseRenewalFailed { .. })
}

fn is_extension(e: &Event) -> bool {
    matches!(e, Event::LeaseExtended { .. })
}

/// What a test does to each lease it builds: nothing, or (in the plant
/// build) plant a bug the test must catch.
pub type Tweak<'a> = &'a dyn Fn(Lease) -> Lease;

/// No tweak.
pub fn honest(lease: Lease) -> Lease {
    lease
}

/// A renewal answered late, then no more answers: the generator must stop
/// issuing a TTL less the margin after the renewal was *sent* (the time
/// the lease's `LeaseExtended` event reports; not after its answer), and
/// the test must see a keeper that counts from the answer. `Err` says what
/// broke.
///
/// A proxy holds the store's replies from just after the build (before
/// the first renewal, a third of the TTL after the claim). Once the first
/// renewal's request has reached the store, the proxy holds its answer
/// for `LATE` (less than the claim's deadline is away), delivers it, and
/// holds every later one: the renewal extends the lease from its sending,
/// and nothing extends it after. The test thread then calls `try_next_id`
/// without pause, noting when each call began, until well past where a
/// deadline counted from the answer would fall: a call that began at or
/// after the deadline (plus 5 ms for the fence's TSC against `Instant`)
/// must not return an ID.
///
/// Waited for, not timed: a run where the answer did not come back late
/// (the keeper gave up on it first, or the renewal came when the claim's
/// deadline was too near), or where no call began between the two
/// deadlines (the test thread was not scheduled), shows nothing; it runs
/// again, up to five times.
pub fn deadline_counts_from_sending(server: &Server, tweak: Tweak) -> Result<(), String> {
    const LATE_TTL: Duration = Duration::from_secs(3);
    const LATE_MARGIN: Duration = Duration::from_millis(600);
    const LATE: Duration = Duration::from_millis(800);
    const WITHIN: Duration = Duration::from_secs(30);
    const SLACK: Duration = Duration::from_millis(5);
    for run in 1..=5 {
        let prefix = unique_prefix("deadline");
        let proxy = HoldingProxy::new(server.addr());
        let heard = Heard::open();
        let hook = heard.clone();
        let g = Generator::builder(Layout::twitter())
            .lease(tweak(
                lease_at(server.kind, proxy.addr(), &prefix)
                    .node_ids(0..=0)
                    .ttl(LATE_TTL)
                    .safety_margin(LATE_MARGIN),
            ))
            .on_event(move |e: &Event| hook.hear(e))
            .build()
            .unwrap();
        proxy.hold(true);
        let before = proxy.sent();
        wait_until(WITHIN, "the first renewal's request", || {
            proxy.sent() > before
        });
        thread::sleep(LATE);
        proxy.deliver_held();
        let renewed = heard.wait_for(WITHIN, "the renewal's end", |e| {
            e.iter()
                .any(|e| matches!(e, Event::LeaseExtended { claim: false, .. }))
                || e.iter().any(|e| is_renewal_failure(e) || is_fenced(e))
        });
        let late = renewed.iter().find_map(|e| match e {
            Event::LeaseExtended {
                claim: false,
                sent,
                answered,
                ..
            } if *answered - *sent >= LATE => Some((*sent, *answered)),
            _ => None,
        });
        let Some((sent, answered)) = late else {
            eprintln!("deadline, run {run}: no late answer extended the lease: {renewed:?}");
            continue;
        };
        let deadline = sent + (LATE_TTL - LATE_MARGIN);
        let from_answer = answered + (LATE_TTL - LATE_MARGIN);
        let (mut between, mut issued_late) = (0, None);
        loop {
            let began = Instant::now();
            if began > from_answer + Duration::from_millis(50) {
                break;
            }
            let id = g.try_next_id();
            let past = began.saturating_duration_since(deadline);
            if began >= deadline + SLACK && began + SLACK < from_answer {
                between += 1;
            }
            match id {
                Ok(_) if past >= SLACK => {
                    issued_late.get_or_insert(past);
                }
                Ok(_)
                | Err(GenerateError::Fenced)
                | Err(GenerateError::SequenceExhausted { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        let extended = heard
            .events()
            .iter()
            .filter(|e| matches!(e, Event::LeaseExtended { claim: false, .. }))
            .count();
        if extended != 1 {
            eprintln!("deadline, run {run}: {extended} renewals extended the lease, not 1");
            continue;
        }
        if let Some(past) = issued_late {
            return Err(format!(
                "issued {past:?} after the deadline of a renewal answered {:?} late",
                answered - sent
            ));
        }
        if between == 0 {
            eprintln!("deadline, run {run}: no call began between the two deadlines");
            continue;
        }
        return Ok(());
    }
    panic!("in 5 runs no renewal answered late was followed by a call past its deadline");
}

/// A holder whose clock runs 2 s ahead issues under node id 0 and gives it
/// back (its mark: the exact last millisecond it issued); the next holder
/// of node id 0, on the real clock, must issue only after that mark, so
/// above every ID of its predecessor. `Err` says what broke.
pub fn successor_starts_after_the_mark(server: &Server, tweak: Tweak) -> Result<(), String> {
    let prefix = unique_prefix("successor");
    let ahead = ManualClock::new(wall_ms() + 2_000);
    let a = Generator::builder(Layout::twitter())
        .clock(ahead)
        .lease(tweak(server.lease(&prefix).node_ids(0..=0)))
        .build()
        .unwrap();
    let last_a = (0..100).map(|_| a.next_id()).max().unwrap();
    drop(a);
    let b = build(tweak(server.lease(&prefix).node_ids(0..=0))).unwrap();
    let first_b = b.next_id();
    if first_b <= last_a {
        let layout = Layout::twitter();
        let (a_ms, b_ms) = (
            layout.decode(last_a).unwrap().unix_ms(),
            layout.decode(first_b).unwrap().unix_ms(),
        );
        return Err(format!(
            "the next holder issued at {b_ms} ms, below its predecessor's last ID at {a_ms} ms"
        ));
    }
    Ok(())
}

/// A renewal the store applied but whose answer came back after the
/// fence's deadline, on a fence that no generator call had closed (nobody
/// called between the deadline and the answer, so the deadline is still
/// stored): the generator must be fenced, the late answer must not reopen
/// it, and the keeper then claims afresh.
///
/// A proxy holds the store's replies from just after the build on (before
/// the first renewal is due: at least a twelfth of the TTL after the
/// claim). The lease's safety margin is half its TTL, so the deadline (the
/// claim's send plus half the TTL, before the build returned) comes while a
/// renewal waits for its answer: the first is due within a third of the TTL
/// and waits up to a third of the TTL, and one that failed is followed by
/// the next within a tenth of the TTL. The test lets the replies through
/// half a TTL after the build returned, when the deadline has certainly
/// passed: the renewal waiting then gets its answer late. Unless the
/// deadline fell between two renewals, or the keeper ran late: the lease
/// then ended without a late answer (a renewal failed, or none was
/// waiting), which checks the same fence by the other path, and the
/// scenario runs again, up to five times, until a late answer reached the
/// keeper.
pub fn late_renewal(server: &Server, tweak: Tweak) {
    const LATE_TTL: Duration = Duration::from_secs(3);
    const WITHIN: Duration = Duration::from_secs(60);
    let mut late_answers = 0;
    let mut runs = 0;
    while late_answers == 0 && runs < 5 {
        runs += 1;
        let prefix = unique_prefix("late");
        let proxy = HoldingProxy::new(server.addr());
        let heard = Heard::gated();
        let hook = heard.clone();
        let asked = Instant::now();
        let g = Generator::builder(Layout::twitter())
            .lease(tweak(
                lease_at(server.kind, proxy.addr(), &prefix)
                    .node_ids(0..=0)
                    .ttl(LATE_TTL)
                    .safety_margin(LATE_TTL / 2),
            ))
            .on_event(move |e: &Event| hook.hear(e))
            .build()
            .unwrap();
        proxy.hold(true);
        let held = Instant::now();
        let _gate = OpenOnDrop(heard.clone());
        if held - asked >= LATE_TTL / 12 {
            // The first renewal may have been answered before the hold.
            eprintln!(
                "late renewal: the hold began {:?} after the build was asked for",
                held - asked
            );
            continue;
        }
        // (Read straight from the server, not through the proxy.)
        let claimed_mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
        // No generator call from here until the keeper says Fenced.
        let before = proxy.sent();
        wait_until(WITHIN, "the first renewal's request", || {
            proxy.sent() > before
        });
        // The deadline passed by then (5 ms for the fence's TSC
        // calibration): a lower bound, the renewal's request timeout runs
        // for a sixth of the TTL more.
        let release_at = held + LATE_TTL / 2 + Duration::from_millis(5);
        thread::sleep(release_at.saturating_duration_since(Instant::now()));
        let before_release = heard.events().len();
        proxy.hold(false);
        // The keeper gives the lease up, or (a bug the test must catch)
        // takes the late answer as an extension.
        let events = heard.wait_for(WITHIN, "Fenced", |e| {
            e.iter().any(is_fenced) || e[before_release..].iter().any(is_extension)
        });

        // The keeper is held at Fenced: the generator as the lapse left it.
        assert_eq!(
            g.try_next_id(),
            Err(GenerateError::Fenced),
            "issued after a late renewal; heard {events:?}"
        );
        assert!(
            matches!(g.health(), Health::Fenced { .. }),
            "{:?}; heard {events:?}",
            g.health()
        );
        // A renewal was waiting for its answer when the hold ended (held
        // bytes went to an open connection), it had reached the store (the
        // mark is raised), and its answer reached the keeper, which took it
        // as renewed (no failure heard after the hold) and extended nothing
        // (Fenced heard after the hold).
        let mark: u64 = server.mark(&prefix, 0).unwrap().parse().unwrap();
        let after = &events[before_release..];
        if proxy.delivered_late() > 0
            && mark > claimed_mark
            && after.iter().any(is_fenced)
            && !after.iter().any(is_renewal_failure)
        {
            late_answers += 1;
        }
        heard.open_gate();

        // The keeper claims afresh, and the generator issues again.
        let events = heard.wait_for(WITHIN, "the fresh claim", |e| {
            e.iter().any(|e| matches!(e, Event::LeaseReopened { .. }))
        });
        wait_until(WITHIN, "an ID after the fresh claim", || {
            g.try_next_id().is_ok()
        });
        let changes: Vec<&Event> = events
            .iter()
            .filter(|e| !is_renewal_failure(e) && !is_extension(e))
            .collect();
        assert!(
            matches!(
                changes[..],
                [
                    Event::LeaseClaimed { node_id: 0 },
                    Event::Fenced { node_id: 0 },
                    Event::LeaseReopened { node_id: 0 }
                ]
            ),
            "lease events heard: {events:?}"
        );
    }
    eprintln!("late renewal: {late_answers} late answer(s) in {runs} run(s)");
    assert!(
        late_answers > 0,
        "in {runs} runs the keeper never had the held answer before giving up on it"
    );
}
