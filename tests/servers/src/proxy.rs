//! A TCP proxy in front of a server, for tests that need the network
//! between a client and its server to fail: cut (every connection closed,
//! new ones refused), frozen (nothing forwarded either way: requests
//! hang), holding the server's answers (requests reach the server, the
//! answers come late, in order, when the hold ends or is released), or
//! holding the client's requests (they reach the server late). It counts
//! the bytes it forwards each way, and the held bytes it delivered late.
//!
//! An HTTP/2 proxy ([`Proxy::http2`], for gRPC servers such as etcd)
//! forwards whole frames and knows their streams: it counts the requests
//! (streams opened) it holds back, and, for those it delivered late, the
//! server's answers (streams the server ended). Released on their own
//! ([`Proxy::release_requests`]), held requests arrive as from a network
//! that lost the client's later frames: without the client's cancellations
//! (`RST_STREAM`, `GOAWAY`), and the server's connection stays open after
//! the client's closed, so the server handles them as any request, after
//! the client gave up on them.

use std::collections::HashSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// Everything forwarded as it comes.
const FORWARD: u8 = 0;
/// Client to server forwarded; server to client kept back.
const HOLD: u8 = 1;
/// Nothing forwarded; what the server said is kept back.
const FREEZE: u8 = 2;
/// Server to client forwarded; client to server kept back.
const HOLD_REQUESTS: u8 = 3;

/// What an HTTP/2 client sends first, before any frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// HTTP/2 frame types and flags the proxy looks at.
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;

/// How often a pipe looks at the mode while its socket is quiet.
const POLL: Duration = Duration::from_millis(2);

/// What the proxy's threads share.
#[derive(Default)]
struct Shared {
    mode: AtomicU8,
    /// Bumped by [`Proxy::release`]: each pipe from the server then
    /// delivers what it held, once, whatever the mode.
    releases: AtomicU64,
    cut: AtomicBool,
    /// Bytes from client to server, and back (delivered).
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
    /// Bytes held back that were delivered after the hold, freeze or
    /// release (answers that came late).
    late: AtomicU64,
    /// Bytes from the server kept back right now, over every connection.
    held: AtomicU64,
    /// Whether connections carry HTTP/2 ([`Proxy::http2`]).
    http2: bool,
    /// Bumped by [`Proxy::release_requests`].
    request_releases: AtomicU64,
    /// HTTP/2: requests (streams opened) kept back right now; delivered
    /// late; and of those, the ones the server has ended since.
    held_requests: AtomicU64,
    late_requests: AtomicU64,
    late_answered: AtomicU64,
    /// When each chunk of bytes came from a client (CLOCK_MONOTONIC ns).
    requests_read: Mutex<Vec<u64>>,
    connections: Mutex<Vec<TcpStream>>,
}

/// A TCP proxy in front of `upstream`; see the module docs (`src/proxy.rs`). Cut
/// when dropped.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Bytes from client to server, and back (also [`Proxy::sent`] and
    /// [`Proxy::received`]).
    pub sent: Arc<AtomicU64>,
    pub received: Arc<AtomicU64>,
    accepting: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Listens on 127.0.0.1 (a free port) and forwards every connection to
    /// `upstream`.
    pub fn new(upstream: SocketAddr) -> Proxy {
        Proxy::start(upstream, Shared::default())
    }

    /// An HTTP/2 proxy (for gRPC: etcd): as [`Proxy::new`], and it forwards
    /// whole frames, counts the requests it holds back and the answers to
    /// those it delivered late, and drops the client's cancellations of
    /// requests it releases ([`Proxy::release_requests`]).
    pub fn http2(upstream: SocketAddr) -> Proxy {
        Proxy::start(
            upstream,
            Shared {
                http2: true,
                ..Shared::default()
            },
        )
    }

    fn start(upstream: SocketAddr, shared: Shared) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(shared);
        let accepting = {
            let shared = shared.clone();
            thread::spawn(move || {
                while !shared.cut.load(Ordering::Acquire) {
                    let client = match listener.accept() {
                        Ok((client, _)) => client,
                        Err(_) => {
                            thread::sleep(POLL);
                            continue;
                        }
                    };
                    let _ = client.set_nonblocking(false);
                    let Ok(server) = TcpStream::connect(upstream) else {
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    {
                        let mut all = shared.connections.lock().unwrap();
                        all.push(client.try_clone().unwrap());
                        all.push(server.try_clone().unwrap());
                    }
                    if shared.cut.load(Ordering::Acquire) {
                        let _ = client.shutdown(Shutdown::Both);
                        let _ = server.shutdown(Shutdown::Both);
                        break;
                    }
                    // Requests delivered late, by stream, until the server
                    // ends them.
                    let late = Arc::new(Mutex::new(HashSet::new()));
                    requests(
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        shared.clone(),
                        late.clone(),
                    );
                    answers(server, client, shared.clone(), late);
                }
                // The listener closes here: new connections are refused.
            })
        };
        Proxy {
            addr,
            sent: shared.sent.clone(),
            received: shared.received.clone(),
            shared,
            accepting: Some(accepting),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops forwarding either way (connections stay open, requests hang,
    /// answers already on their way are kept back), or forwards again
    /// (delivering what was kept back).
    pub fn freeze(&self, frozen: bool) {
        self.set(if frozen { FREEZE } else { FORWARD });
    }

    /// Keeps the server's answers back from now on while requests still
    /// reach the server (a renewal is applied but answered late), or
    /// delivers what was kept back, in order, and forwards again.
    pub fn hold(&self, holding: bool) {
        self.set(if holding { HOLD } else { FORWARD });
    }

    /// Delivers the answers kept back so far, once, and stays as it is
    /// (holding or frozen): after `hold(true)`, `freeze(true)` then
    /// `release()` answers the requests sent during the hold, late, and
    /// none sent after. The answers go out as soon as each connection's
    /// pipe next looks (every 2 ms while it runs);
    /// [`delivered_late`](Proxy::delivered_late) counts them then.
    pub fn release(&self) {
        self.shared.releases.fetch_add(1, Ordering::AcqRel);
    }

    /// Keeps the client's requests back from now on while the server's
    /// answers are still forwarded (a request stuck on its way), or
    /// delivers what was kept back, as it is, in order, and forwards again.
    pub fn hold_requests(&self, holding: bool) {
        self.set(if holding { HOLD_REQUESTS } else { FORWARD });
    }

    /// Delivers the requests kept back so far (by
    /// [`hold_requests`](Proxy::hold_requests)), once, and stays as it is
    /// (holding requests or frozen). An HTTP/2 proxy leaves out the
    /// client's cancellations among them and keeps the server's connection
    /// open after the client's closed: the server handles the requests
    /// though their client gave up on them.
    pub fn release_requests(&self) {
        self.shared.request_releases.fetch_add(1, Ordering::AcqRel);
    }

    /// When the proxy read each chunk of bytes a client sent (requests,
    /// from every connection, in order), on CLOCK_MONOTONIC in
    /// nanoseconds: when they left their client, as seen from outside it
    /// (within the proxy's scheduling; whether held, frozen or forwarded).
    pub fn requests_read_at(&self) -> Vec<u64> {
        self.shared.requests_read.lock().unwrap().clone()
    }

    /// HTTP/2: requests (streams opened) kept back right now.
    pub fn held_requests(&self) -> u64 {
        self.shared.held_requests.load(Ordering::Acquire)
    }

    /// HTTP/2: requests kept back and delivered later.
    pub fn late_requests(&self) -> u64 {
        self.shared.late_requests.load(Ordering::Acquire)
    }

    /// HTTP/2: of the [`late_requests`](Proxy::late_requests), those the
    /// server has answered (ended the stream of) since: it handled them.
    pub fn late_requests_answered(&self) -> u64 {
        self.shared.late_answered.load(Ordering::Acquire)
    }

    fn set(&self, mode: u8) {
        self.shared.mode.store(mode, Ordering::Release);
    }

    /// Closes every connection and refuses new ones, for good.
    pub fn cut(&mut self) {
        self.shared.cut.store(true, Ordering::Release);
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
        for c in self.shared.connections.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Bytes from clients to the server so far.
    pub fn sent(&self) -> u64 {
        self.shared.sent.load(Ordering::Acquire)
    }

    /// Bytes from the server delivered to clients so far.
    pub fn received(&self) -> u64 {
        self.shared.received.load(Ordering::Acquire)
    }

    /// Bytes the server sent that are kept back right now (holding or
    /// frozen): answers waiting to be delivered late.
    pub fn held(&self) -> u64 {
        self.shared.held.load(Ordering::Acquire)
    }

    /// Bytes the server sent that were kept back (held or frozen) and
    /// delivered later, on connections still open: answers that came late.
    pub fn delivered_late(&self) -> u64 {
        self.shared.late.load(Ordering::Acquire)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}

/// CLOCK_MONOTONIC in nanoseconds (what `Instant` reads on Linux), as a
/// number other processes' records share.
fn mono_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A read that gives up after [`POLL`], so the pipe sees mode changes:
/// `Some(0)` at the end of the stream, `None` when nothing came.
fn read_some(from: &mut TcpStream, buf: &mut [u8]) -> Result<Option<usize>, ()> {
    match from.read(buf) {
        Ok(n) => Ok(Some(n)),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(None),
        Err(_) => Err(()),
    }
}

/// A piece of what a client sent: on an HTTP/2 proxy the preface or one
/// whole frame, else what one read returned.
struct Piece {
    bytes: Vec<u8>,
    /// The frame's type, flags and stream; `None`: not a frame.
    frame: Option<(u8, u8, u32)>,
}

impl Piece {
    /// The stream a request (a `HEADERS` frame from the client) opens.
    fn opens(&self) -> Option<u32> {
        match self.frame {
            Some((HEADERS, _, stream)) => Some(stream),
            _ => None,
        }
    }

    /// A client's cancellation: a stream reset, or the connection going away.
    fn cancels(&self) -> bool {
        matches!(self.frame, Some((RST_STREAM | GOAWAY, _, _)))
    }
}

/// The header of an HTTP/2 frame: its payload's length, type, flags and
/// stream.
fn frame_header(h: &[u8]) -> (usize, u8, u8, u32) {
    let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
    (len, h[3], h[4], stream)
}

/// Cuts what a client sends into [`Piece`]s.
struct Splitter {
    http2: bool,
    /// Bytes of the HTTP/2 preface still to come.
    preface: usize,
    partial: Vec<u8>,
}

impl Splitter {
    fn new(http2: bool) -> Splitter {
        Splitter {
            http2,
            preface: if http2 { PREFACE.len() } else { 0 },
            partial: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8], out: &mut Vec<Piece>) {
        if !self.http2 {
            out.push(Piece {
                bytes: bytes.to_vec(),
                frame: None,
            });
            return;
        }
        self.partial.extend_from_slice(bytes);
        loop {
            let (size, frame) = if self.preface > 0 {
                (self.preface, None)
            } else if self.partial.len() >= 9 {
                let (len, kind, flags, stream) = frame_header(&self.partial);
                (9 + len, Some((kind, flags, stream)))
            } else {
                return;
            };
            if self.partial.len() < size {
                return;
            }
            let rest = self.partial.split_off(size);
            let bytes = std::mem::replace(&mut self.partial, rest);
            self.preface = 0;
            out.push(Piece { bytes, frame });
        }
    }
}

/// Follows the frames of what an HTTP/2 server sends, as it passes.
#[derive(Default)]
struct Scanner {
    header: Vec<u8>,
    /// Payload bytes of the current frame still to pass.
    skip: usize,
}

impl Scanner {
    /// Calls `on_frame` with the type, flags and stream of each frame whose
    /// header is complete in what came so far.
    fn scan(&mut self, mut bytes: &[u8], mut on_frame: impl FnMut(u8, u8, u32)) {
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (9 - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.header.len() == 9 {
                let (len, kind, flags, stream) = frame_header(&self.header);
                on_frame(kind, flags, stream);
                self.skip = len;
                self.header.clear();
            }
        }
    }
}

/// Client to server: counted and forwarded, except while frozen (what was
/// read just before a freeze waits for its end) or holding requests (kept
/// back until the hold ends or a release).
fn requests(
    mut from: TcpStream,
    mut to: TcpStream,
    shared: Arc<Shared>,
    late: Arc<Mutex<HashSet<u32>>>,
) {
    thread::spawn(move || {
        let _ = from.set_read_timeout(Some(POLL));
        let mut buf = [0u8; 16 * 1024];
        let mut splitter = Splitter::new(shared.http2);
        // Read and not passed on yet: kept back by a hold, and waiting for
        // the next round (or a freeze's end).
        let mut held: Vec<Piece> = Vec::new();
        let mut waiting: Vec<Piece> = Vec::new();
        let mut releases = shared.request_releases.load(Ordering::Acquire);
        let mut ended = false;
        // Counted before it is passed on: whatever the client has had an
        // answer to is counted by then.
        let pass = |to: &mut TcpStream, piece: &Piece| {
            shared
                .sent
                .fetch_add(piece.bytes.len() as u64, Ordering::AcqRel);
            to.write_all(&piece.bytes)
        };
        'pipe: while !shared.cut.load(Ordering::Acquire) {
            let mode = shared.mode.load(Ordering::Acquire);
            let now = shared.request_releases.load(Ordering::Acquire);
            let released = now != releases;
            releases = now;
            let forwarding = mode != FREEZE && mode != HOLD_REQUESTS;
            if mode == HOLD_REQUESTS {
                for piece in waiting.drain(..) {
                    if piece.opens().is_some() {
                        shared.held_requests.fetch_add(1, Ordering::AcqRel);
                    }
                    held.push(piece);
                }
            }
            if released || forwarding {
                // A release drops the client's cancellations.
                let abandoned = released && shared.http2;
                for piece in held.drain(..) {
                    if let Some(stream) = piece.opens() {
                        shared.held_requests.fetch_sub(1, Ordering::AcqRel);
                        late.lock().unwrap().insert(stream);
                        shared.late_requests.fetch_add(1, Ordering::AcqRel);
                    }
                    if abandoned && piece.cancels() {
                        continue;
                    }
                    if pass(&mut to, &piece).is_err() {
                        break 'pipe;
                    }
                }
            }
            if forwarding {
                for piece in waiting.drain(..) {
                    if pass(&mut to, &piece).is_err() {
                        break 'pipe;
                    }
                }
            }
            if ended {
                if held.is_empty() && waiting.is_empty() {
                    break;
                }
                thread::sleep(POLL);
                continue;
            }
            if mode == FREEZE {
                thread::sleep(POLL);
                continue;
            }
            match read_some(&mut from, &mut buf) {
                Ok(Some(0)) | Err(()) => ended = true,
                Ok(None) => {}
                Ok(Some(n)) => {
                    shared.requests_read.lock().unwrap().push(mono_ns());
                    splitter.push(&buf[..n], &mut waiting);
                }
            }
        }
        // An HTTP/2 server keeps its connection after the client closed
        // (until the proxy is cut): it handles what it was sent.
        if !shared.http2 {
            let _ = to.shutdown(Shutdown::Write);
        }
    });
}

/// Server to client: delivered at once while forwarding; kept back while
/// holding or frozen, and delivered, in order, when that ends or on a
/// release. HTTP/2: the server's end of each stream delivered late is
/// counted, and after the client closed, what the server sends is dropped.
fn answers(
    mut from: TcpStream,
    mut to: TcpStream,
    shared: Arc<Shared>,
    late: Arc<Mutex<HashSet<u32>>>,
) {
    thread::spawn(move || {
        let _ = from.set_read_timeout(Some(POLL));
        let mut held: Vec<u8> = Vec::new();
        // Whether `held` waited a round (holding or frozen), not just read.
        let mut kept = false;
        let mut releases = shared.releases.load(Ordering::Acquire);
        let mut buf = [0u8; 16 * 1024];
        let mut ended = false;
        let mut scanner = Scanner::default();
        let mut client_gone = false;
        while !shared.cut.load(Ordering::Acquire) {
            if !ended {
                match read_some(&mut from, &mut buf) {
                    Ok(Some(0)) | Err(()) => ended = true,
                    Ok(None) => {}
                    Ok(Some(n)) => {
                        if shared.http2 {
                            scanner.scan(&buf[..n], |kind, flags, stream| {
                                let ends = (kind == HEADERS && flags & END_STREAM != 0)
                                    || kind == RST_STREAM;
                                if ends && late.lock().unwrap().remove(&stream) {
                                    shared.late_answered.fetch_add(1, Ordering::AcqRel);
                                }
                            });
                        }
                        if !client_gone {
                            held.extend_from_slice(&buf[..n]);
                            shared.held.fetch_add(n as u64, Ordering::AcqRel);
                        }
                    }
                }
            }
            let mode = shared.mode.load(Ordering::Acquire);
            let forwarding = mode == FORWARD || mode == HOLD_REQUESTS;
            let now = shared.releases.load(Ordering::Acquire);
            let released = now != releases;
            releases = now;
            if !held.is_empty() {
                if forwarding || released {
                    // Counted before they go: whatever the client has
                    // read is counted by then.
                    let n = held.len() as u64;
                    shared.received.fetch_add(n, Ordering::AcqRel);
                    if kept || released {
                        shared.late.fetch_add(n, Ordering::AcqRel);
                    }
                    shared.held.fetch_sub(n, Ordering::AcqRel);
                    let written = to.write_all(&held);
                    held.clear();
                    kept = false;
                    if written.is_err() {
                        if !shared.http2 {
                            break;
                        }
                        client_gone = true;
                    }
                } else {
                    kept = true;
                }
            }
            if ended && (held.is_empty() || forwarding) {
                break;
            }
            if ended {
                thread::sleep(POLL);
            }
        }
        shared.held.fetch_sub(held.len() as u64, Ordering::AcqRel);
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;

    use super::*;

    /// A server that answers each line with the same line, and reports
    /// each line it read.
    fn echo() -> (SocketAddr, mpsc::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (heard, rx) = mpsc::channel();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let heard = heard.clone();
                thread::spawn(move || {
                    let mut out = client.try_clone().unwrap();
                    for line in BufReader::new(client).lines().map_while(Result::ok) {
                        let _ = heard.send(line.clone());
                        if writeln!(out, "{line}").is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, rx)
    }

    fn nothing_to_read(s: &mut TcpStream) -> bool {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        let quiet = matches!(s.read(&mut buf), Err(e) if e.kind() == ErrorKind::WouldBlock);
        s.set_nonblocking(false).unwrap();
        quiet
    }

    #[test]
    fn held_answers_come_late_and_frozen_requests_never() {
        let (upstream, heard) = echo();
        let proxy = Proxy::new(upstream);
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut reader = BufReader::new(client.try_clone().unwrap());
        let mut line = String::new();

        writeln!(client, "a").unwrap();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "a\n");
        assert_eq!(proxy.delivered_late(), 0);

        // Held: the request reaches the server, the answer waits.
        proxy.hold(true);
        writeln!(client, "b").unwrap();
        assert_eq!(heard.recv().unwrap(), "a");
        assert_eq!(heard.recv().unwrap(), "b");
        while proxy.held() < 2 {
            thread::sleep(POLL);
        }
        assert!(
            nothing_to_read(&mut client),
            "an answer came through a hold"
        );

        // Frozen, then released: the held answer comes, late; a request
        // sent while frozen does not reach the server.
        proxy.freeze(true);
        proxy.release();
        line.clear();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "b\n");
        assert_eq!(proxy.delivered_late(), 2);
        let sent = proxy.sent();
        writeln!(client, "c").unwrap();
        assert!(heard.try_recv().is_err(), "a request went through a freeze");
        assert_eq!(proxy.sent(), sent);

        // Forwarding again: the frozen request goes, and its answer.
        proxy.freeze(false);
        assert_eq!(heard.recv().unwrap(), "c");
        line.clear();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "c\n");
    }

    #[test]
    fn held_requests_reach_the_server_only_when_the_hold_ends() {
        let (upstream, heard) = echo();
        let proxy = Proxy::new(upstream);
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut reader = BufReader::new(client.try_clone().unwrap());
        proxy.hold_requests(true);
        writeln!(client, "a").unwrap();
        while proxy.requests_read_at().is_empty() {
            thread::sleep(POLL);
        }
        assert!(heard.try_recv().is_err(), "a request went through a hold");
        assert!(proxy.requests_read_at()[0] <= mono_ns());
        proxy.hold_requests(false);
        assert_eq!(heard.recv().unwrap(), "a");
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "a\n");
    }

    /// An HTTP/2 frame.
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut f = len.to_be_bytes()[1..].to_vec();
        f.extend([kind, flags]);
        f.extend(stream.to_be_bytes());
        f.extend(payload);
        f
    }

    #[test]
    fn released_http2_requests_come_without_their_cancellations() {
        // A server that keeps what it reads and hands its socket over.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = listener.local_addr().unwrap();
        let read = Arc::new(Mutex::new(Vec::new()));
        let (socket, accepted) = mpsc::channel();
        {
            let read = read.clone();
            thread::spawn(move || {
                let (mut server, _) = listener.accept().unwrap();
                socket.send(server.try_clone().unwrap()).unwrap();
                let mut buf = [0u8; 1024];
                while let Ok(n) = server.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    read.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        let proxy = Proxy::http2(upstream);
        proxy.hold_requests(true);
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        let mut request = PREFACE.to_vec();
        request.extend(frame(HEADERS, 0x4, 1, b"h"));
        request.extend(frame(0x0, END_STREAM, 1, b"d"));
        let delivered = request.clone();
        // The client gives up on it: the stream reset, the connection going.
        request.extend(frame(RST_STREAM, 0, 1, &[0, 0, 0, 8]));
        request.extend(frame(GOAWAY, 0, 0, &[0; 8]));
        client.write_all(&request).unwrap();
        while proxy.held_requests() == 0 {
            thread::sleep(POLL);
        }
        drop(client);
        proxy.release_requests();
        let mut server = accepted.recv().unwrap();
        while read.lock().unwrap().len() < delivered.len() {
            thread::sleep(POLL);
        }
        // The server answers the stream it was given: the answer counts.
        server
            .write_all(&frame(HEADERS, 0x4 | END_STREAM, 1, b"t"))
            .unwrap();
        while proxy.late_requests_answered() == 0 {
            thread::sleep(POLL);
        }
        assert_eq!(proxy.late_requests(), 1);
        assert_eq!(*read.lock().unwrap(), delivered);
    }

    #[test]
    fn a_cut_closes_connections_and_refuses_new_ones() {
        let (upstream, _heard) = echo();
        let mut proxy = Proxy::new(upstream);
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        writeln!(client, "a").unwrap();
        let mut reader = BufReader::new(client.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        proxy.cut();
        line.clear();
        assert_eq!(reader.read_line(&mut line).unwrap_or(0), 0);
        assert!(TcpStream::connect(proxy.addr()).is_err());
    }
}
