//! The listeners: one accept loop for HTTP and gRPC alike (hyper, HTTP/1
//! and HTTP/2, TLS or not), with graceful shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

use crate::config::TlsFiles;

/// Which protocol a listener speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1, and HTTP/2 for clients that speak it.
    Http,
    /// HTTP/2 only (gRPC).
    Grpc,
}

/// Reads the certificate chain and key and makes a TLS acceptor that offers
/// `h2` (and `http/1.1` for [`Protocol::Http`]) through ALPN.
///
/// # Errors
///
/// A message naming the file and what is wrong with it.
pub fn tls_acceptor(files: &TlsFiles, protocol: Protocol) -> Result<TlsAcceptor, String> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| {
            format!(
                "tls_cert: cannot read certificates from {}: {e}",
                files.cert.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "tls_cert: {} holds no PEM certificate",
            files.cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        format!(
            "tls_key: cannot read a private key from {}: {e}",
            files.key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls_key: does not go with tls_cert: {e}"))?;
    config.alpn_protocols = match protocol {
        Protocol::Http => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Protocol::Grpc => vec![b"h2".to_vec()],
    };
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A bound listener, not yet accepting.
pub struct Listener {
    /// Where it listens (with the port the system chose for port 0).
    pub addr: SocketAddr,
    listener: TcpListener,
    protocol: Protocol,
    tls: Option<TlsAcceptor>,
}

impl Listener {
    /// Binds `addr`.
    ///
    /// # Errors
    ///
    /// The bind error, for example the address in use.
    pub async fn bind(
        addr: SocketAddr,
        protocol: Protocol,
        tls: Option<TlsAcceptor>,
    ) -> std::io::Result<Listener> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Listener {
            addr: listener.local_addr()?,
            listener,
            protocol,
            tls,
        })
    }

    /// Accepts connections and serves `router` on them until `stop` turns
    /// true; then stops accepting, lets requests in flight finish for up to
    /// `drain`. Returns false if connections were still open when the drain
    /// time ran out (they are cut when the runtime stops).
    pub async fn serve(
        self,
        router: Router,
        mut stop: watch::Receiver<bool>,
        drain: Duration,
    ) -> bool {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http2()
            // Streams of large chunks: let a client take 1 MiB before it
            // has to acknowledge (h2's default is 64 KiB).
            .initial_stream_window_size(1 << 20)
            .initial_connection_window_size(2 << 20)
            .max_concurrent_streams(1024);
        // A timer, so hyper's header read timeout (30 s) applies: a client
        // that opens a connection and trickles its headers is cut off.
        builder.http1().keep_alive(true).timer(TokioTimer::new());
        let builder = match self.protocol {
            Protocol::Http => builder,
            Protocol::Grpc => builder.http2_only(),
        };
        let builder = Arc::new(builder);
        let graceful = GracefulShutdown::new();
        loop {
            let (stream, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: pause, do
                        // not spin.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = async { let _ = stop.wait_for(|stop| *stop).await; } => break,
            };
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(router.clone());
            let builder = builder.clone();
            let watcher = graceful.watcher();
            match &self.tls {
                None => {
                    let connection =
                        builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    let connection = watcher.watch(connection.into_owned());
                    tokio::spawn(async move {
                        if let Err(e) = connection.await {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                    });
                }
                Some(tls) => {
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let stream =
                            match tokio::time::timeout(Duration::from_secs(10), tls.accept(stream))
                                .await
                            {
                                Ok(Ok(stream)) => stream,
                                Ok(Err(e)) => {
                                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                                    return;
                                }
                                Err(_) => {
                                    tracing::debug!(%peer, "TLS handshake timed out");
                                    return;
                                }
                            };
                        let connection =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                        if let Err(e) = watcher.watch(connection.into_owned()).await {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                    });
                }
            }
        }
        drop(self.listener);
        let open = graceful.count();
        if open == 0 {
            return true;
        }
        tracing::info!(addr = %self.addr, connections = open, "draining");
        tokio::time::timeout(drain, graceful.shutdown())
            .await
            .is_ok()
    }
}
