//! Two processes of 32 generators each claiming node ids at once.

use super::*;

const CHILD_ENV: &str = "FLAKEID_LEASE_CHILD";
const RACE_TTL: Duration = Duration::from_secs(6);
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
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "a child failed ({status}; its reason, if it gave one, is on stderr above)"
        );
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

/// Ends a race child with `why` on its stderr, which the parent's test
/// output shows: written to the stream itself, since libtest captures
/// `eprintln!` in the child's test threads and `exit` would drop it.
fn child_failed(why: &str) -> ! {
    let _ = writeln!(std::io::stderr().lock(), "race child: {why}");
    std::process::exit(1)
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
                        child_failed(&format!("a claim failed: {e}"))
                    });
                    let node = g.node_id();
                    barrier.wait(); // all hold their node ids
                    let ids: Vec<Id> = (0..IDS_PER_GENERATOR).map(|_| g.next_id()).collect();
                    let mut out = out.lock().unwrap();
                    writeln!(out, "node {node}").unwrap();
                    for id in ids {
                        if node_of(id) != node {
                            child_failed(&format!(
                                "lost node id {node} while generating: ID {id} has node id {}, \
                                 the generator's is now {}",
                                node_of(id),
                                g.node_id()
                            ));
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
