//! The server end to end: both APIs hand out unique, increasing IDs that
//! decode under their generator's layout; bad requests get 400 /
//! INVALID_ARGUMENT saying what is wrong; probes, health and metrics answer.

mod support;

use std::collections::HashSet;

use flakeid::{Id, Layout};
use flakeid_server::proto::{DecodeRequest, NextIdRequest, NextIdsRequest, StreamIdsRequest};
use support::{Server, TempDir, http_get, http_request};
use tonic::Code;

const CONFIG: &str = r#"
default_generator = "orders"
max_count = 5000

[generators.orders]
layout = "twitter"
node_fields = { datacenter = 2, worker = 9 }

[generators.events]
layout = "sonyflake"
node_id = 300
"#;

fn start(dir: &TempDir, extra: &[&str]) -> Server {
    let path = dir.write("server.toml", CONFIG);
    let mut args = vec!["--config", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    Server::start(&args, &[])
}

/// IDs seen so far: each new one must be new and the largest yet.
#[derive(Default)]
struct Taken {
    all: HashSet<u64>,
    last: u64,
}

impl Taken {
    #[track_caller]
    fn take(&mut self, id: u64) {
        assert!(self.all.insert(id), "{id} twice");
        assert!(id > self.last, "{id} after {}", self.last);
        self.last = id;
    }
}

fn ids_of(json: &serde_json::Value) -> Vec<u64> {
    json["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().expect("IDs are strings").parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_apis_hand_out_unique_increasing_ids_that_decode() {
    let dir = TempDir::new("api");
    let server = start(&dir, &[]);
    let twitter = Layout::twitter();
    let mut seen = Taken::default();

    // HTTP: one, a batch; IDs as strings.
    let one = server.get("/v1/id");
    assert_eq!(one.status, 200, "{one:?}");
    assert_eq!(one.header("content-type"), Some("application/json"));
    let id: u64 = one.json()["id"].as_str().unwrap().parse().unwrap();
    seen.take(id);
    let batch = server.get("/v1/ids?count=5000");
    assert_eq!(batch.status, 200);
    let ids = ids_of(&batch.json());
    assert_eq!(ids.len(), 5000);
    for id in ids {
        seen.take(id);
    }
    let decoded = twitter.decode(Id::from_u64(seen.last)).unwrap();
    assert_eq!(
        (decoded.field("datacenter"), decoded.field("worker")),
        (Some(2), Some(9))
    );

    // gRPC: one, a batch, a stream of chunks.
    let mut client = server.grpc().await;
    let id = client
        .next_id(NextIdRequest::default())
        .await
        .unwrap()
        .into_inner()
        .id;
    seen.take(id);
    let ids = client
        .next_ids(NextIdsRequest {
            generator: String::new(),
            count: 5000,
        })
        .await
        .unwrap()
        .into_inner()
        .ids;
    assert_eq!(ids.len(), 5000);
    for id in ids {
        seen.take(id);
    }
    let mut stream = client
        .stream_ids(StreamIdsRequest {
            count: 10_000,
            generator: String::new(),
            chunk_size: 64,
        })
        .await
        .unwrap()
        .into_inner();
    let mut chunks = 0;
    while let Some(chunk) = stream.message().await.unwrap() {
        assert!(chunk.ids.len() <= 64);
        chunks += 1;
        for id in chunk.ids {
            seen.take(id);
        }
    }
    assert_eq!(chunks, 10_000usize.div_ceil(64));
    assert_eq!(seen.all.len(), 1 + 5000 + 1 + 5000 + 10_000);
    let last = seen.last;

    // The other generator, by name, under its own layout.
    let reply = server.get("/v1/id?generator=events");
    let id: u64 = reply.json()["id"].as_str().unwrap().parse().unwrap();
    let sonyflake = Layout::sonyflake();
    assert_eq!(sonyflake.decode(Id::from_u64(id)).unwrap().node_id(), 300);
    let id = client
        .next_id(NextIdRequest {
            generator: "events".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    assert_eq!(sonyflake.decode(Id::from_u64(id)).unwrap().node_id(), 300);

    // Decode, both APIs, any string form.
    let last_id = Id::from_u64(last);
    let reply = server.get(&format!("/v1/decode/{}", last_id.to_base62()));
    assert_eq!(reply.status, 200, "{reply:?}");
    let json = reply.json();
    let decoded = twitter.decode(last_id).unwrap();
    assert_eq!(json["id"], last.to_string());
    assert_eq!(json["form"], "base62");
    assert_eq!(json["generator"], "orders");
    assert_eq!(json["time"], decoded.rfc3339().to_string());
    assert_eq!(json["node_fields"]["worker"], 9);
    assert_eq!(json["sequence"], decoded.sequence());
    let reply = client
        .decode(DecodeRequest {
            id: last_id.to_hex().to_string(),
            generator: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.id, last);
    assert_eq!(reply.form, "hex");
    assert_eq!(reply.unix_ms, decoded.unix_ms());
    assert_eq!(reply.node_fields["datacenter"], 2);
    assert_eq!(reply.time, decoded.rfc3339().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_400_and_invalid_argument_saying_what_is_wrong() {
    let dir = TempDir::new("bad-requests");
    let server = start(&dir, &[]);
    for (path, wanted) in [
        (
            "/v1/ids?count=5001",
            "count 5001 is out of range: 1 to 5000 (the server's max_count)",
        ),
        ("/v1/ids?count=0", "count 0 is out of range"),
        ("/v1/ids?count=many", "count: invalid digit found in string"),
        ("/v1/ids", "missing field `count`"),
        (
            "/v1/id?generator=nope",
            "unknown generator \"nope\"; this server has: events, orders",
        ),
        ("/v1/id?n=3", "unknown field `n`, expected `generator`"),
        ("/v1/decode/not-an-id", "cannot read ID \"not-an-id\""),
        (
            "/v1/decode/18446744073709551615",
            "is not an ID of generator orders",
        ),
    ] {
        let reply = server.get(path);
        assert_eq!(reply.status, 400, "{path}: {reply:?}");
        let error = reply.json()["error"].as_str().unwrap().to_owned();
        assert!(error.contains(wanted), "{path}: {error:?} lacks {wanted:?}");
        assert!(reply.took.as_secs() < 1, "{path} took {:?}", reply.took);
    }
    assert_eq!(server.get("/v2/nothing").status, 404);

    let mut client = server.grpc().await;
    let status = client
        .next_ids(NextIdsRequest {
            generator: String::new(),
            count: 5001,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("count 5001 is out of range"),
        "{status:?}"
    );
    let status = client
        .next_id(NextIdRequest {
            generator: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("unknown generator \"nope\""),
        "{status:?}"
    );
    let status = client
        .stream_ids(StreamIdsRequest {
            count: 10,
            generator: String::new(),
            chunk_size: 70_000,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status
            .message()
            .contains("chunk_size 70000 is out of range"),
        "{status:?}"
    );
    let status = client
        .stream_ids(StreamIdsRequest {
            count: 0,
            generator: String::new(),
            chunk_size: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let status = client
        .decode(DecodeRequest {
            id: "ZZZ".into(),
            generator: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("cannot read ID \"ZZZ\""),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_health_and_metrics_answer() {
    let dir = TempDir::new("probes");
    let server = start(&dir, &[]);
    let ready = server.get("/ready");
    assert_eq!(ready.status, 200);
    let json = ready.json();
    assert_eq!(json["ready"], true);
    assert_eq!(json["generators"]["orders"]["health"], "issuing");
    assert_eq!(json["generators"]["events"]["node_id"], 300);
    assert_eq!(server.get("/live").status, 200);

    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    for service in [
        "",
        "flakeid.v1.IdGenerator",
        "flakeid.v1.IdGenerator/orders",
    ] {
        let reply = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            reply.status(),
            tonic_health::pb::health_check_response::ServingStatus::Serving
        );
    }

    server.get("/v1/ids?count=7");
    server.get("/v1/ids?count=0");
    // Each ID route's answers under its own label; a wrong method is no
    // route's answer.
    server.get("/v1/id");
    server.get("/v1/id");
    server.get("/v1/decode/ZZZ");
    assert_eq!(http_request(server.http, "POST", "/v1/id", &[]).status, 405);
    let metrics = server.get("/metrics");
    assert_eq!(metrics.status, 200);
    for line in [
        "flakeid_server_requests_total{api=\"http\",route=\"/v1/ids\",status=\"200\"} 1",
        "flakeid_server_requests_total{api=\"http\",route=\"/v1/ids\",status=\"400\"} 1",
        "flakeid_server_requests_total{api=\"http\",route=\"/v1/id\",status=\"200\"} 2",
        "flakeid_server_requests_total{api=\"http\",route=\"/v1/decode\",status=\"400\"} 1",
        "flakeid_server_ids_issued_total{generator=\"orders\"} 9",
        "flakeid_server_generator_ready{generator=\"events\"} 1",
        "flakeid_server_generator_node_id{generator=\"orders\"} 73",
    ] {
        assert!(
            metrics.body.lines().any(|l| l == line),
            "{line} in:\n{}",
            metrics.body
        );
    }
    assert!(metrics.body.contains("flakeid_server_request_duration_seconds_bucket{api=\"http\",route=\"/v1/ids\",le=\"0.001\"}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_the_id_apis_but_not_the_probes() {
    let dir = TempDir::new("token");
    let path = dir.write("server.toml", "node_id = 1\n");
    let server = Server::start(
        &["--config", path.to_str().unwrap()],
        &[("FLAKEID_TOKEN", "s3cret")],
    );
    let refused = server.get("/v1/id");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    let wrong = http_get(server.http, "/v1/id", &[("Authorization", "Bearer guess")]);
    assert_eq!(wrong.status, 401);
    let ok = http_get(server.http, "/v1/id", &[("Authorization", "Bearer s3cret")]);
    assert_eq!(ok.status, 200);
    assert_eq!(server.get("/ready").status, 200);
    // The refusals are counted with the route's answers.
    let metrics = server.get("/metrics").body;
    for line in [
        "flakeid_server_requests_total{api=\"http\",route=\"/v1/id\",status=\"401\"} 2",
        "flakeid_server_requests_total{api=\"http\",route=\"/v1/id\",status=\"200\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }

    let mut client = server.grpc().await;
    let status = client.next_id(NextIdRequest::default()).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let mut request = tonic::Request::new(NextIdRequest::default());
    request
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    assert!(client.next_id(request).await.is_ok());
    // Printed configuration never shows the token.
    assert!(!server.stderr().contains("s3cret"));
}

#[test]
fn tls_serves_both_listeners_and_json_logs_parse() {
    let dir = TempDir::new("tls");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl makes a test certificate");
    assert!(made.status.success(), "{made:?}");
    let server = Server::start(
        &[
            "--node-id",
            "5",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--log-format",
            "json",
        ],
        &[],
    );
    let curl = |args: &[&str]| {
        let out = std::process::Command::new("curl")
            .args(["-s", "--max-time", "5", "--cacert", cert.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "curl {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let body = curl(&[&format!("https://{}/v1/id", server.http)]);
    assert!(body.starts_with("{\"id\":\""), "{body}");
    // Plain HTTP on the TLS port gets nothing.
    assert!(
        std::process::Command::new("curl")
            .args([
                "-s",
                "--max-time",
                "2",
                &format!("http://{}/v1/id", server.http)
            ])
            .output()
            .unwrap()
            .stdout
            .is_empty()
    );
    // The gRPC listener negotiates h2 through ALPN.
    let version = curl(&[
        "--http2",
        "-o",
        "/dev/null",
        "-w",
        "%{http_version}",
        "-X",
        "POST",
        "-H",
        "content-type: application/grpc",
        &format!("https://{}/grpc.health.v1.Health/Check", server.grpc),
    ]);
    assert_eq!(version, "2");
    // Every log line is one JSON object.
    let log = server.stderr();
    assert!(!log.is_empty());
    for line in log.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string() && v["message"].is_string(), "{line}");
    }
}

#[test]
fn a_used_up_tick_is_waited_for_or_reported_as_the_policy_says() {
    // Two IDs per millisecond: a batch of 50 spans at least 25 ticks.
    let dir = TempDir::new("policy");
    let path = dir.write(
        "server.toml",
        r#"
[generators.waits]
layout = "epoch=1700000000000 unit=1 fields=timestamp:41,node:4,sequence:1"
node_id = 3

[generators.reports]
layout = "epoch=1700000000000 unit=1 fields=timestamp:41,node:4,sequence:1"
node_id = 4
on_exhausted = "error"

[generators.slow]
layout = "epoch=1700000000000 unit=10000 fields=timestamp:30,node:4,sequence:1"
node_id = 5
"#,
    );
    let server = Server::start(
        &[
            "--config",
            path.to_str().unwrap(),
            "--default-generator",
            "waits",
            "--wait-limit",
            "200ms",
        ],
        &[],
    );
    let reply = server.get("/v1/ids?count=50&generator=waits");
    assert_eq!(reply.status, 200, "{reply:?}");
    let ids = ids_of(&reply.json());
    assert_eq!(ids.len(), 50);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));

    let reply = server.get("/v1/ids?count=50&generator=reports");
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(reply.header("retry-after"), Some("1"));
    let error = reply.json()["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("the sequence of the current tick is used up"),
        "{error}"
    );

    // Ticks of 10 s: the third ID is 10 s away, past the 200 ms wait limit.
    let reply = server.get("/v1/ids?count=3&generator=slow");
    assert_eq!(reply.status, 503, "{reply:?}");
    assert!(
        reply.took < std::time::Duration::from_secs(1),
        "{:?}",
        reply.took
    );
    let error = reply.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("past the wait limit of 200ms"), "{error}");
    assert!(
        reply
            .header("retry-after")
            .is_some_and(|s| s.parse::<u64>().unwrap() >= 1)
    );
}

#[test]
fn failing_storage_is_answered_503_at_once_and_recovers() {
    let dir = TempDir::new("storage");
    let state_dir = dir.path().join("state");
    std::fs::create_dir_all(&state_dir).unwrap();
    let state = state_dir.join("node.state");
    let server = Server::start(
        &[
            "--node-id",
            "2",
            "--state-file",
            state.to_str().unwrap(),
            "--persist-window",
            "100ms",
        ],
        &[],
    );
    assert_eq!(server.get("/v1/id").status, 200);
    // The state file's directory gone: every save of the reservation fails,
    // and once the saved window runs out no ID may be issued.
    std::fs::remove_dir_all(&state_dir).unwrap();
    let begun = std::time::Instant::now();
    let failing = loop {
        let reply = server.get("/v1/id");
        assert!(
            reply.took < std::time::Duration::from_secs(1),
            "a call took {:?}",
            reply.took
        );
        if reply.status == 503 {
            break reply;
        }
        assert_eq!(reply.status, 200, "{reply:?}");
        assert!(
            begun.elapsed() < std::time::Duration::from_secs(5),
            "still issuing with no storage"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(failing.header("retry-after"), Some("1"));
    let error = failing.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("cannot save the reservation"), "{error}");
    let ready = server.get("/ready");
    assert_eq!(ready.status, 503);
    assert!(
        ready.json()["generators"]["default"]["health"]
            .as_str()
            .unwrap()
            .starts_with("storage failing")
    );

    // The directory back: the writer's next retry saves, IDs flow again.
    std::fs::create_dir_all(&state_dir).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.get("/v1/id").status != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "no IDs 10 s after storage came back"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(server.get("/ready").status, 200);
}

/// The longest error message a test accepts for a call whose input was
/// thousands of bytes: the reason arrives, the input is quoted in part.
const SHORT: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_quote_a_short_prefix_of_bad_input() {
    let dir = TempDir::new("long-input");
    let server = start(&dir, &[]);
    let long_id = "x".repeat(10_000);
    let long_name = "g".repeat(100_000);
    for (path, quoted) in [
        (format!("/v1/decode/{long_id}"), true),
        (format!("/v1/id?generator={}", &long_name[..10_000]), true),
        (format!("/v1/id?{}=1", "n".repeat(5_000)), true),
        (format!("/v1/ids?count={}", "9".repeat(5_000)), false),
    ] {
        let reply = server.get(&path);
        assert_eq!(reply.status, 400, "{reply:?}");
        let error = reply.json()["error"].as_str().unwrap().to_owned();
        assert!(error.len() < SHORT, "{} bytes: {error}", error.len());
        assert_eq!(error.contains("bytes)"), quoted, "{error}");
    }
    let mut client = server.grpc().await;
    let status = client
        .decode(DecodeRequest {
            id: long_id,
            generator: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().starts_with("cannot read ID \"xxx"),
        "{status:?}"
    );
    assert!(status.message().len() < SHORT, "{status:?}");
    let status = client
        .next_id(NextIdRequest {
            generator: long_name,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().starts_with("unknown generator \"ggg"),
        "{status:?}"
    );
    assert!(status.message().len() < SHORT, "{status:?}");
}

#[test]
fn wrong_methods_and_paths_get_a_json_reason() {
    let dir = TempDir::new("methods");
    let server = start(&dir, &[]);
    let reply = http_request(server.http, "POST", "/v1/id", &[]);
    assert_eq!(reply.status, 405, "{reply:?}");
    assert_eq!(reply.header("allow"), Some("GET,HEAD"));
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let error = reply.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("POST") && error.contains("GET"), "{error}");
    for path in ["/v2/nothing", "/v1/decode/", "/v1/id/7"] {
        let reply = server.get(path);
        assert_eq!(reply.status, 404, "{path}: {reply:?}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let error = reply.json()["error"].as_str().unwrap().to_owned();
        assert!(error.contains("/v1/ids?count=N"), "{path}: {error}");
    }
}

#[test]
fn query_values_are_percent_decoded() {
    let dir = TempDir::new("percent");
    let server = start(&dir, &[]);
    let reply = server.get("/v1/ids?count=%31%30&generator=%6Frders");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(ids_of(&reply.json()).len(), 10);
    let reply = server.get("/v1/id?generator=%65vents");
    assert_eq!(reply.status, 200, "{reply:?}");
    // `+` is a space in a query: " 5" is not a count.
    let reply = server.get("/v1/ids?count=+5");
    assert_eq!(reply.status, 400, "{reply:?}");
    let reply = server.get("/v1/ids?count=5&count=6");
    assert_eq!(reply.status, 400, "{reply:?}");
}

#[test]
fn every_server_series_is_in_the_metrics_from_the_start() {
    let dir = TempDir::new("metrics-start");
    let server = start(&dir, &[]);
    let metrics = server.get("/metrics");
    for line in [
        "flakeid_server_streams_active 0",
        "flakeid_server_ids_issued_total{generator=\"orders\"} 0",
        "flakeid_server_generator_ready{generator=\"orders\"} 1",
    ] {
        assert!(
            metrics.body.lines().any(|l| l == line),
            "{line} in:\n{}",
            metrics.body
        );
    }
}

#[test]
fn after_a_crash_the_ready_line_means_ids_are_issued() {
    // The default policy issues in the mark's tick once the clock is
    // there; `error` refuses while the clock is behind the mark.
    for policy in ["continue", "error"] {
        let dir = TempDir::new("restart");
        let state = dir.path().join("node.state");
        let args = [
            "--node-id",
            "3",
            "--state-file",
            state.to_str().unwrap(),
            "--persist-window",
            "6s",
            "--wait-limit",
            "3s",
            "--on-clock-behind",
            policy,
        ];
        let mut first = Server::start(&args, &[]);
        assert_eq!(first.get("/v1/id").status, 200);
        first.kill();
        // The crashed run reserved IDs up to 6 s ahead (a successor that
        // took longer than that to start would find nothing to wait out):
        // it may issue only after them, and is ready only then. A call
        // waits at most 3 s: less than the reservation, more than the
        // save of the successor's own on a busy machine.
        let second = Server::start(&args, &[]);
        let reply = second.get("/v1/id");
        assert_eq!(reply.status, 200, "{policy}: {reply:?}");
        assert_eq!(second.get("/ready").status, 200);
        assert!(
            second
                .stderr()
                .contains("the previous run reserved IDs until"),
            "{policy}: {}",
            second.stderr()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_an_endless_stream_with_unavailable_and_a_retry_hint() {
    let dir = TempDir::new("endless");
    let mut server = start(&dir, &["--drain-timeout", "1s"]);
    let mut client = server.grpc().await;
    let mut stream = client
        .stream_ids(StreamIdsRequest {
            count: 1_000_000_000,
            generator: String::new(),
            chunk_size: 1024,
        })
        .await
        .unwrap()
        .into_inner();
    let mut last = stream.message().await.unwrap().unwrap().ids[0];
    server.terminate();
    let status = loop {
        match stream.message().await {
            Ok(Some(chunk)) => {
                assert!(chunk.ids[0] > last);
                last = *chunk.ids.last().unwrap();
            }
            Ok(None) => panic!("the endless stream ended as if complete"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("shutting down"), "{status:?}");
    assert!(
        status.metadata().get("grpc-retry-pushback-ms").is_some(),
        "{status:?}"
    );
    let exit = server.wait(std::time::Duration::from_secs(15));
    assert_eq!(exit.code(), Some(0), "{}", server.stderr());
}
