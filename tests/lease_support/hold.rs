//! A TCP proxy that can hold the server's replies: while holding, what the
//! client sends reaches the server (and is counted), and what the server
//! answers is kept back until the hold ends, then delivered in order. A
//! renewal is then applied by the store but answered late, as over a link
//! that stalls one way.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

pub struct HoldingProxy {
    addr: SocketAddr,
    holding: Arc<AtomicBool>,
    /// How many times the test asked for what is held to be delivered
    /// while the hold goes on.
    deliveries: Arc<AtomicU64>,
    /// Bytes from the client to the server so far.
    sent: Arc<AtomicU64>,
    /// Held bytes delivered after a hold ended, on connections still open.
    late: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl HoldingProxy {
    pub fn new(upstream: SocketAddr) -> HoldingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let holding = Arc::new(AtomicBool::new(false));
        let deliveries = Arc::new(AtomicU64::new(0));
        let sent = Arc::new(AtomicU64::new(0));
        let late = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (holding, sent, stop) = (holding.clone(), sent.clone(), stop.clone());
            let (late, deliveries) = (late.clone(), deliveries.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let Ok((client, _)) = listener.accept() else {
                        thread::sleep(Duration::from_millis(2));
                        continue;
                    };
                    let _ = client.set_nonblocking(false);
                    let Ok(server) = TcpStream::connect(upstream) else {
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    forward(
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        sent.clone(),
                        stop.clone(),
                    );
                    let hold = Hold {
                        holding: holding.clone(),
                        deliveries: deliveries.clone(),
                        late: late.clone(),
                        stop: stop.clone(),
                    };
                    answer(server, client, hold);
                }
            });
        }
        HoldingProxy {
            addr,
            holding,
            deliveries,
            sent,
            late,
            stop,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Holds the server's replies from now on, or delivers what was held
    /// and forwards again.
    pub fn hold(&self, holding: bool) {
        self.holding.store(holding, Ordering::Release);
    }

    /// Delivers what is held now (answers the server has sent), and goes on
    /// holding what comes after: one late answer, and none after it.
    pub fn deliver_held(&self) {
        self.deliveries.fetch_add(1, Ordering::AcqRel);
    }

    /// Bytes the client has sent to the server so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Acquire)
    }

    /// Held bytes delivered once a hold ended, on connections the client
    /// still had open: answers to requests it was still waiting for.
    pub fn delivered_late(&self) -> u64 {
        self.late.load(Ordering::Acquire)
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Client to server: everything, counted.
fn forward(mut from: TcpStream, mut to: TcpStream, count: Arc<AtomicU64>, stop: Arc<AtomicBool>) {
    thread::spawn(move || {
        let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
        let mut buf = [0u8; 16 * 1024];
        while !stop.load(Ordering::Acquire) {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    // Counted before it is passed on: whatever the client
                    // has had an answer to is counted by then.
                    count.fetch_add(n as u64, Ordering::AcqRel);
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// What an answering thread shares with the proxy.
struct Hold {
    holding: Arc<AtomicBool>,
    deliveries: Arc<AtomicU64>,
    late: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// Server to client: kept back while holding, then delivered in order (or
/// when a delivery is asked for during the hold).
fn answer(mut from: TcpStream, mut to: TcpStream, hold: Hold) {
    let Hold {
        holding,
        deliveries,
        late,
        stop,
    } = hold;
    thread::spawn(move || {
        let mut delivered = deliveries.load(Ordering::Acquire);
        // Short reads, so that what was held goes out soon after the hold
        // ends even if the server says nothing more.
        let _ = from.set_read_timeout(Some(Duration::from_millis(5)));
        let mut held = Vec::new();
        // Whether `held` waited for a hold to end.
        let mut kept = false;
        let mut buf = [0u8; 16 * 1024];
        while !stop.load(Ordering::Acquire) {
            let asked = deliveries.load(Ordering::Acquire);
            if held.is_empty() {
                // A delivery is of what is held when it is asked for.
                delivered = asked;
            } else if holding.load(Ordering::Acquire) && asked == delivered {
                kept = true;
            } else {
                delivered = asked;
                if to.write_all(&held).is_err() {
                    break;
                }
                if kept {
                    late.fetch_add(held.len() as u64, Ordering::AcqRel);
                }
                held.clear();
                kept = false;
            }
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => held.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        if !holding.load(Ordering::Acquire) {
            let _ = to.write_all(&held);
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}
