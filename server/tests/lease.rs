//! Leased node ids on real stores (Debian's redis-server, etcd, PostgreSQL
//! and MariaDB, started on free ports by `flakeid-test-servers`): a fenced
//! generator is answered 503 / UNAVAILABLE at once, never held; SIGTERM
//! drains, releases the lease and exits 0; servers leasing from one SQL
//! table issue under node ids of their own.

mod support;

use std::time::{Duration, Instant};

use flakeid_server::proto::{NextIdRequest, NextIdsRequest, StreamIdsRequest};
use flakeid_test_servers::{
    Kind, MASTER_NAME, Mariadb, Postgres, RedisSentinel, Server as Store, loopback_block,
};
use support::{Server, redis, run_to_end};
use tonic::Code;

/// The lease flags for `store`, with a 1 s TTL so a fence closes within
/// 0.8 s of the store's death.
fn lease_args(store: &Store) -> Vec<String> {
    let url = store.url();
    let source = match store.kind {
        Kind::Redis => ["--lease-url", url.as_str()],
        Kind::Etcd => ["--lease-endpoints", url.as_str()],
    };
    source
        .iter()
        .map(ToString::to_string)
        .chain(["--lease-ttl", "1s", "--lease-connect-timeout", "5s"].map(String::from))
        .collect()
}

fn start(store: &Store) -> Server {
    let args = lease_args(store);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start(&args, &[])
}

/// Kills the store and checks that every call is answered within 1 s, that
/// the answers turn to 503 / UNAVAILABLE (with a retry hint) within the TTL
/// and a second, and that they stay so; then restarts the store and waits
/// for IDs again.
async fn fenced_calls_are_answered_at_once(kind: Kind) {
    let mut store = Store::start(kind);
    let server = start(&store);
    assert_eq!(server.get("/v1/id").status, 200);
    let mut client = server.grpc().await;
    assert!(client.next_id(NextIdRequest::default()).await.is_ok());

    store.kill();
    let killed = Instant::now();
    let fenced = loop {
        let reply = server.get("/v1/id");
        assert!(
            reply.took < Duration::from_secs(1),
            "a call took {:?}",
            reply.took
        );
        match reply.status {
            200 => {}
            503 => break reply,
            other => panic!("{other}: {reply:?}"),
        }
        assert!(
            killed.elapsed() < Duration::from_secs(2),
            "still issuing {:?} after the store died",
            killed.elapsed()
        );
    };
    assert_eq!(fenced.header("retry-after"), Some("1"));
    let error = fenced.json()["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("generator default cannot issue IDs now") && error.contains("lease"),
        "{error}"
    );

    // Every API, now: 503 / UNAVAILABLE within 1 s, with the retry hint.
    let batch = server.get("/v1/ids?count=100");
    assert_eq!(
        (batch.status, batch.header("retry-after")),
        (503, Some("1"))
    );
    assert!(batch.took < Duration::from_secs(1));
    let begun = Instant::now();
    let status = client.next_id(NextIdRequest::default()).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(
        status
            .metadata()
            .get("grpc-retry-pushback-ms")
            .map(|v| v.to_str().unwrap()),
        Some("1000")
    );
    let status = client
        .next_ids(NextIdsRequest {
            generator: String::new(),
            count: 100,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    let mut stream = client
        .stream_ids(StreamIdsRequest {
            count: 100_000,
            generator: String::new(),
            chunk_size: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let status = stream.message().await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert!(
        begun.elapsed() < Duration::from_secs(1),
        "gRPC took {:?}",
        begun.elapsed()
    );

    // Probes say so too (the gRPC health service within its 1 s refresh).
    let ready = server.get("/ready");
    assert_eq!(ready.status, 503);
    assert!(
        ready.json()["generators"]["default"]["health"]
            .as_str()
            .unwrap()
            .starts_with("fenced")
    );
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let reply = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        if reply.status() == tonic_health::pb::health_check_response::ServingStatus::NotServing {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "gRPC health still SERVING while fenced"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The store back: a fresh claim reopens the generator.
    store.restart();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = server.get("/v1/id");
        assert!(reply.took < Duration::from_secs(1));
        if reply.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no IDs 15 s after the store came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_fenced_calls_are_answered_at_once() {
    fenced_calls_are_answered_at_once(Kind::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_fenced_calls_are_answered_at_once() {
    fenced_calls_are_answered_at_once(Kind::Etcd).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_a_stream_releases_the_lease_and_exits_0() {
    let store = Store::start(Kind::Redis);
    let mut server = start(&store);
    let node_keys = || redis(store.addr(), &["KEYS", "flakeid/default:node:*"]);
    assert!(
        node_keys().contains("flakeid/default:node:0"),
        "{}",
        node_keys()
    );

    // A stream larger than the flow-control window, so it is still in
    // flight when the signal comes.
    const COUNT: u64 = 1_000_000;
    let mut client = server.grpc().await;
    let mut stream = client
        .stream_ids(StreamIdsRequest {
            count: COUNT,
            generator: String::new(),
            chunk_size: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    server.terminate();
    let mut received = first.ids.len() as u64;
    let mut last = *first.ids.last().unwrap();
    while let Some(chunk) = stream.message().await.unwrap() {
        assert!(chunk.ids[0] > last);
        last = *chunk.ids.last().unwrap();
        received += chunk.ids.len() as u64;
    }
    assert_eq!(
        received, COUNT,
        "the stream in flight was drained to its end"
    );

    let status = server.wait(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "stderr:\n{}", server.stderr());
    let log = server.stderr();
    assert!(log.contains("SIGTERM: not accepting connections"), "{log}");
    assert!(log.contains("leases released"), "{log}");
    // The node key is gone; the mark records the last millisecond issued.
    assert_eq!(node_keys(), "*0\r\n");
    let mark = redis(store.addr(), &["GET", "flakeid/default:mark:0"]);
    let mark_ms: u64 = mark.lines().nth(1).unwrap().parse().unwrap();
    let last_ms = flakeid::Layout::twitter()
        .decode(flakeid::Id::from_u64(last))
        .unwrap()
        .unix_ms();
    assert!(
        mark_ms >= last_ms,
        "mark {mark_ms} below the last ID's {last_ms}"
    );
    // Nothing listens any more.
    assert!(std::net::TcpStream::connect(server.http).is_err());
}

#[test]
fn sigterm_during_the_first_claim_still_releases_the_lease() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    // The store behind a frozen proxy: the first claim hangs until thawed.
    let store = Store::start(Kind::Redis);
    let proxy = flakeid_test_servers::Proxy::new(store.addr());
    proxy.freeze(true);
    let url = format!("redis://{}/", proxy.addr());
    let mut child = Command::new(support::BIN)
        .args([
            "--lease-url",
            &url,
            "--lease-ttl",
            "1s",
            "--lease-connect-timeout",
            "10s",
        ])
        .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // The claim has begun when the server says so.
    while !line.contains("claiming a node id") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "stderr ended first"
        );
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    proxy.freeze(false);
    let log = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });
    let begun = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            begun.elapsed() < Duration::from_secs(15),
            "no exit 15 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let log = log.join().unwrap();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("SIGTERM"), "{log}");
    assert_eq!(
        redis(store.addr(), &["KEYS", "flakeid/default:node:*"]),
        "*0\r\n"
    );
}

/// A Sentinel lease (`node_source = "sentinel"` by its keys): the server
/// finds the primary through the sentinels, claims node id 0 there (the
/// first claim under a new prefix waits out one TTL, answering 503
/// meanwhile), and issues; the claim is on the primary Sentinel names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_lease_finds_the_primary_and_issues() {
    let cluster = RedisSentinel::start(&loopback_block());
    let sentinels = cluster.sentinel_addrs().join(",");
    let server = Server::start(
        &[
            "--lease-sentinels",
            &sentinels,
            "--lease-master",
            MASTER_NAME,
            "--lease-ttl",
            "1s",
            "--lease-connect-timeout",
            "10s",
        ],
        &[],
    );
    assert!(
        server
            .stderr()
            .contains(&format!("master {MASTER_NAME} via sentinels {sentinels}")),
        "{}",
        server.stderr()
    );
    // Fenced while the claim waits out the new epoch's TTL (503; how fast
    // a fenced call is answered is `fenced_calls_are_answered_at_once`'s
    // to check), 200 once the wait is over. The bound only ends the test
    // if the server never issues.
    let deadline = Instant::now() + Duration::from_secs(30);
    let reply = loop {
        let reply = server.get("/v1/id");
        match reply.status {
            200 => break reply,
            503 => assert!(Instant::now() < deadline, "no ID within 30 s: {reply:?}"),
            other => panic!("{other}: {reply:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let id: u64 = reply.json()["id"].as_str().unwrap().parse().unwrap();
    let layout = flakeid::Layout::twitter();
    let decoded = layout.decode(flakeid::Id::from_u64(id)).unwrap();
    assert_eq!(decoded.node_id(), 0);
    let primary = cluster.primary().expect("a primary");
    let holder = redis(
        cluster.nodes[primary].socket_addr(),
        &["KEYS", "flakeid/default:node:*"],
    );
    assert!(holder.contains("flakeid/default:node:0"), "{holder}");
}

/// A Redis that accepts connections and never answers (a frozen proxy in
/// front of a real one): the first claim gives up after the connect
/// timeout, once, and the server exits 1. The bound leaves 3 s for the
/// process to start and end on a busy machine; a timeout spent once per
/// reply of the connection's setup took twice the timeout (10 s).
#[test]
fn a_silent_redis_is_given_up_after_the_connect_timeout() {
    let store = Store::start(Kind::Redis);
    let proxy = flakeid_test_servers::Proxy::new(store.addr());
    proxy.freeze(true);
    let url = format!("redis://{}/", proxy.addr());
    let timeout = Duration::from_secs(5);
    let ended = run_to_end(
        &[
            "--lease-url",
            &url,
            "--lease-connect-timeout",
            "5s",
            "--http-addr",
            "127.0.0.1:0",
            "--grpc-addr",
            "127.0.0.1:0",
        ],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(ended.status.code(), Some(1), "{}", ended.stderr);
    assert!(ended.stderr.contains("within 5s"), "{}", ended.stderr);
    assert!(
        ended.took < timeout + Duration::from_secs(3),
        "exited {:?} after its start, with a connect timeout of {timeout:?}",
        ended.took
    );
}

/// `count` IDs from `server` in batches of 1,000, waiting (503, at most
/// 30 s) while its lease is being claimed.
async fn issued(server: &Server, count: usize) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ids = Vec::with_capacity(count);
    while ids.len() < count {
        let reply = server.get("/v1/ids?count=1000");
        match reply.status {
            200 => ids.extend(
                reply.json()["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| id.as_str().unwrap().parse::<u64>().unwrap()),
            ),
            503 => {
                assert!(Instant::now() < deadline, "no IDs within 30 s: {reply:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("{other}: {reply:?}"),
        }
    }
    ids
}

/// The node ids of Twitter-layout IDs.
fn node_ids(ids: &[u64]) -> std::collections::BTreeSet<u64> {
    let layout = flakeid::Layout::twitter();
    ids.iter()
        .map(|&id| layout.decode(flakeid::Id::from_u64(id)).unwrap().node_id())
        .collect()
}

/// Two servers leasing from one SQL store (`node_source` by the URL's
/// scheme), in a table of their own that the first claim creates: each
/// issues under a node id of its own, every ID unique; `rows` counts the
/// table's rows (the table exists). SIGTERM releases and exits 0; a
/// server that may not create a missing table exits 1 naming it.
async fn servers_on_one_sql_store(
    url: &str,
    store: &str,
    rows: impl Fn() -> Result<String, String>,
) {
    let args = [
        "--lease-url",
        url,
        "--lease-table",
        "server_leases",
        "--lease-ttl",
        "2s",
        "--lease-connect-timeout",
        "10s",
    ];
    let mut a = Server::start(&args, &[]);
    let b = Server::start(&args, &[]);
    let described = format!("{store} lease at {url}, table server_leases, prefix flakeid/default");
    assert!(
        a.stderr().contains(&described),
        "{described} in:\n{}",
        a.stderr()
    );

    let (ids_a, ids_b) = (issued(&a, 20_000).await, issued(&b, 20_000).await);
    let (node_a, node_b) = (node_ids(&ids_a), node_ids(&ids_b));
    assert_eq!(
        (node_a.len(), node_b.len()),
        (1, 1),
        "{node_a:?} {node_b:?}"
    );
    assert_ne!(node_a, node_b, "two servers on one node id");
    assert!(ids_a.windows(2).all(|w| w[0] < w[1]));
    assert!(ids_b.windows(2).all(|w| w[0] < w[1]));
    let all: std::collections::BTreeSet<u64> = ids_a.iter().chain(&ids_b).copied().collect();
    assert_eq!(all.len(), ids_a.len() + ids_b.len(), "an ID issued twice");
    let count: u64 = rows()
        .unwrap_or_else(|e| panic!("the table server_leases: {e}"))
        .parse()
        .unwrap();
    assert!(count >= 2, "{count} rows for two held node ids");

    a.terminate();
    let status = a.wait(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "stderr:\n{}", a.stderr());
    assert!(a.stderr().contains("leases released"), "{}", a.stderr());
    // b is not disturbed.
    assert_eq!(node_ids(&issued(&b, 1000).await), node_b);

    // A table that is not there, and may not be created: exit 1, naming it.
    let ended = run_to_end(
        &[
            "--lease-url",
            url,
            "--lease-table",
            "no_such_leases",
            "--lease-create-table",
            "false",
            "--lease-connect-timeout",
            "10s",
            "--http-addr",
            "127.0.0.1:0",
            "--grpc-addr",
            "127.0.0.1:0",
        ],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(ended.status.code(), Some(1), "{}", ended.stderr);
    assert!(ended.stderr.contains("no_such_leases"), "{}", ended.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_leasing_from_one_postgres_table_issue_apart() {
    let db = Postgres::start();
    servers_on_one_sql_store(&db.url(), "PostgreSQL", || {
        db.sql("SELECT count(*) FROM server_leases")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_leasing_from_one_mariadb_table_issue_apart() {
    let db = Mariadb::start();
    servers_on_one_sql_store(&db.url(), "MySQL", || {
        db.sql("SELECT count(*) FROM server_leases")
    })
    .await;
}
