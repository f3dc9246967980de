//! The tests' way to run `flakeid-server`: start the binary on ports the
//! system picks, wait for its readiness line (never a sleep), talk HTTP over
//! a plain socket and gRPC through the generated client, send SIGTERM.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flakeid_server::proto::id_generator_client::IdGeneratorClient;
use flakeid_test_servers::ScratchDir;
use tonic::transport::{Channel, Endpoint};

pub const BIN: &str = env!("CARGO_BIN_EXE_flakeid-server");

/// A running server, killed when dropped if still running.
pub struct Server {
    child: Option<Child>,
    pub http: SocketAddr,
    pub grpc: SocketAddr,
    /// Everything it wrote to standard error so far.
    pub stderr: Arc<Mutex<String>>,
}

/// How a server run that ended went.
pub struct Ended {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Runs the binary to its end (it must end within `limit`), for
/// configurations that must not start.
pub fn run_to_end(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Ended {
    let start = Instant::now();
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start flakeid-server");
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            let mut stdout = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut stdout)
                .unwrap();
            assert!(
                !stdout.contains("flakeid-server ready"),
                "it must not start; stdout: {stdout}"
            );
            return Ended {
                status,
                stdout,
                stderr,
                took: start.elapsed(),
            };
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("flakeid-server {args:?} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Server {
    /// Starts the server with `args` (listeners on free ports are added) and
    /// `env`, and waits up to 30 s for its readiness line.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = Command::new(BIN);
        command
            .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FLAKEID_LOG_LEVEL", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start flakeid-server");
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let stderr = stderr.clone();
            let pipe = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut all = stderr.lock().unwrap();
                    all.push_str(&line);
                    all.push('\n');
                }
            });
        }
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let line = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(line) if line.starts_with("flakeid-server ready") => break line,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(status) = child.try_wait().unwrap() {
                        std::thread::sleep(Duration::from_millis(100));
                        panic!(
                            "flakeid-server exited at start ({status}); stderr:\n{}",
                            stderr.lock().unwrap()
                        );
                    }
                    if Instant::now() > deadline {
                        let _ = child.kill();
                        panic!(
                            "flakeid-server was not ready within 30 s; stderr:\n{}",
                            stderr.lock().unwrap()
                        );
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                    panic!(
                        "flakeid-server exited at start ({status}); stderr:\n{}",
                        stderr.lock().unwrap()
                    );
                }
            }
        };
        let addr = |name: &str| -> SocketAddr {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
                .parse()
                .unwrap()
        };
        Server {
            http: addr("http"),
            grpc: addr("grpc"),
            child: Some(child),
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// An HTTP GET with a 5 s read timeout.
    pub fn get(&self, path: &str) -> Reply {
        http_get(self.http, path, &[])
    }

    /// A gRPC client on a fresh channel.
    pub async fn grpc(&self) -> IdGeneratorClient<Channel> {
        IdGeneratorClient::new(self.channel().await)
    }

    pub async fn channel(&self) -> Channel {
        Endpoint::from_shared(format!("http://{}", self.grpc))
            .unwrap()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(5))
            .connect()
            .await
            .expect("connect to the gRPC listener")
    }

    /// Sends SIGKILL and waits for the process to end.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("still running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits up to `limit` for the process to end.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        let child = self.child.as_mut().expect("still running");
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            if start.elapsed() > limit {
                panic!(
                    "flakeid-server did not exit within {limit:?}; stderr:\n{}",
                    self.stderr.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub took: Duration,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

/// One HTTP/1.1 GET on a fresh connection (`Connection: close`).
pub fn http_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    http_request(addr, "GET", path, headers)
}

/// One HTTP/1.1 request without a body on a fresh connection.
pub fn http_request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let start = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n"
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("GET {path}: no full answer within 5 s: {e}"));
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let mut lines = head.lines();
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply {
        status: status.parse().unwrap(),
        headers,
        body: body.to_owned(),
        took: start.elapsed(),
    }
}

/// A temporary directory removed when dropped (kept when the test fails):
/// a scratch directory of flakeid-test-servers, on disk.
pub struct TempDir(ScratchDir);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        TempDir(ScratchDir::on_disk(name))
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// One Redis command over a plain socket; the reply as text.
pub fn redis(addr: SocketAddr, args: &[&str]) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut request = format!("*{}\r\n", args.len());
    for a in args {
        request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    // A reply to EXISTS/KEYS/GET is small: read until it parses.
    loop {
        let n = s.read(&mut buf).unwrap();
        reply.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&reply).into_owned();
        if n == 0 || complete(&text) {
            return text;
        }
    }
}

/// Whether a RESP reply is complete (the kinds the tests read).
fn complete(text: &str) -> bool {
    match text.as_bytes().first() {
        Some(b'*') => {
            let Some((count, rest)) = text[1..].split_once("\r\n") else {
                return false;
            };
            let count: i64 = count.parse().unwrap_or(0);
            let mut rest = rest;
            for _ in 0..count.max(0) {
                let Some((len, after)) = rest.strip_prefix('$').and_then(|r| r.split_once("\r\n"))
                else {
                    return false;
                };
                let len: usize = len.parse().unwrap_or(0);
                if after.len() < len + 2 {
                    return false;
                }
                rest = &after[len + 2..];
            }
            true
        }
        Some(b'$') => {
            let Some((len, after)) = text[1..].split_once("\r\n") else {
                return false;
            };
            let len: i64 = len.parse().unwrap_or(-1);
            len < 0 || after.len() >= len as usize + 2
        }
        Some(_) => text.ends_with("\r\n"),
        None => false,
    }
}
