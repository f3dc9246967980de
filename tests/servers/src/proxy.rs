//! A TCP proxy in front of a server, for tests that need the network
//! between a client and its server to fail: cut (every connection closed,
//! new ones refused), frozen (nothing forwarded either way: requests
//! hang), or holding the server's answers (requests reach the server, the
//! answers come late, in order, when the hold ends or is released). It
//! counts the bytes it forwards each way, and the held bytes it delivered
//! late.

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
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
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
                    requests(
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        shared.clone(),
                    );
                    answers(server, client, shared.clone());
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

/// A read that gives up after [`POLL`], so the pipe sees mode changes:
/// `Some(0)` at the end of the stream, `None` when nothing came.
fn read_some(from: &mut TcpStream, buf: &mut [u8]) -> Result<Option<usize>, ()> {
    match from.read(buf) {
        Ok(n) => Ok(Some(n)),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(None),
        Err(_) => Err(()),
    }
}

/// Client to server: counted and forwarded, except while frozen (what was
/// read just before a freeze waits for its end).
fn requests(mut from: TcpStream, mut to: TcpStream, shared: Arc<Shared>) {
    thread::spawn(move || {
        let _ = from.set_read_timeout(Some(POLL));
        let mut buf = [0u8; 16 * 1024];
        while !shared.cut.load(Ordering::Acquire) {
            if shared.mode.load(Ordering::Acquire) == FREEZE {
                thread::sleep(POLL);
                continue;
            }
            let n = match read_some(&mut from, &mut buf) {
                Ok(Some(0)) | Err(()) => break,
                Ok(None) => continue,
                Ok(Some(n)) => n,
            };
            while shared.mode.load(Ordering::Acquire) == FREEZE
                && !shared.cut.load(Ordering::Acquire)
            {
                thread::sleep(POLL);
            }
            // Counted before it is passed on: whatever the client has had
            // an answer to is counted by then.
            shared.sent.fetch_add(n as u64, Ordering::AcqRel);
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// Server to client: delivered at once while forwarding; kept back while
/// holding or frozen, and delivered, in order, when that ends or on a
/// release.
fn answers(mut from: TcpStream, mut to: TcpStream, shared: Arc<Shared>) {
    thread::spawn(move || {
        let _ = from.set_read_timeout(Some(POLL));
        let mut held: Vec<u8> = Vec::new();
        // Whether `held` waited a round (holding or frozen), not just read.
        let mut kept = false;
        let mut releases = shared.releases.load(Ordering::Acquire);
        let mut buf = [0u8; 16 * 1024];
        let mut ended = false;
        while !shared.cut.load(Ordering::Acquire) {
            if !ended {
                match read_some(&mut from, &mut buf) {
                    Ok(Some(0)) | Err(()) => ended = true,
                    Ok(None) => {}
                    Ok(Some(n)) => {
                        held.extend_from_slice(&buf[..n]);
                        shared.held.fetch_add(n as u64, Ordering::AcqRel);
                    }
                }
            }
            let mode = shared.mode.load(Ordering::Acquire);
            let now = shared.releases.load(Ordering::Acquire);
            let released = now != releases;
            releases = now;
            if !held.is_empty() {
                if mode == FORWARD || released {
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
                        break;
                    }
                } else {
                    kept = true;
                }
            }
            if ended && (held.is_empty() || mode == FORWARD) {
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
