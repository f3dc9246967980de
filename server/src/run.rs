//! The server's life: configuration, generators, listeners, SIGTERM.

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::api::Service;
use crate::auth::Token;
use crate::config::{self, Config};
use crate::generators::Generators;
use crate::health::Readiness;
use crate::serve::{Listener, Protocol, tls_acceptor};
use crate::{grpc, http, telemetry};

/// How the process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Served and shut down cleanly (or `--check` passed): 0.
    Ok,
    /// Could not start: a generator could not be built, a port could not be
    /// bound: 1.
    Failed,
    /// The configuration is wrong: 2 (as for a bad flag).
    Config,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        match exit {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::Failed => ExitCode::from(1),
            Exit::Config => ExitCode::from(2),
        }
    }
}

/// Runs the server with command-line `args` (the program name first).
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> Exit {
    let matches = match config::flags::command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Config
            } else {
                Exit::Ok
            };
        }
    };
    let invocation = match config::from_matches(&matches) {
        Ok(i) => i,
        Err(errors) => {
            eprintln!("flakeid-server: the configuration is wrong; nothing was started:");
            for e in &errors.0 {
                eprintln!("  {e}");
            }
            return Exit::Config;
        }
    };
    let config = invocation.config;
    if invocation.check_only {
        print!("{config}");
        return Exit::Ok;
    }
    let tls = match &config.tls() {
        None => (None, None),
        Some(files) => match (
            tls_acceptor(files, Protocol::Http),
            tls_acceptor(files, Protocol::Grpc),
        ) {
            (Ok(http), Ok(grpc)) => (Some(http), Some(grpc)),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("flakeid-server: the configuration is wrong; nothing was started:");
                eprintln!("  {e}");
                return Exit::Config;
            }
        },
    };
    if let Err(e) = telemetry::init_logs(config.log_format, &config.log_level) {
        eprintln!("flakeid-server: cannot set up logging: {e}");
        return Exit::Failed;
    }
    // Before the generators: their counters are taken from the recorder.
    let prometheus = match telemetry::init_metrics() {
        Ok(handle) => handle,
        Err(e) => {
            tracing::error!("cannot set up metrics: {e}");
            return Exit::Failed;
        }
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = config.workers {
        runtime.worker_threads(n as usize);
    }
    let runtime = match runtime.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("cannot start the runtime: {e}");
            return Exit::Failed;
        }
    };
    // Caught from here on: a SIGTERM while the generators are built (a
    // lease's first claim can take seconds) shuts the server down cleanly
    // once they are, releasing the leases, instead of killing the process
    // with them held.
    let signals = {
        let _context = runtime.enter();
        Signals::register()
    };
    // On this thread, not in the runtime: a lease's first claim blocks for
    // up to its connect timeout, a state file's first save for a write.
    let generators = match Generators::build(&config) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            tracing::error!("cannot start: {e}");
            eprintln!("flakeid-server: cannot start: {e}");
            return Exit::Failed;
        }
    };
    let outcome = runtime.block_on(serve(&config, generators.clone(), prometheus, tls, signals));
    // Whatever still runs (a stream past the drain time) ends here, and
    // with it every handle on the generators but ours.
    runtime.shutdown_timeout(Duration::from_secs(1));
    let held_elsewhere = Arc::strong_count(&generators) - 1;
    if held_elsewhere > 0 {
        tracing::warn!(held_elsewhere, "generators still referenced at exit");
    }
    // Dropping the generators releases their leases (the store's node keys
    // deleted, the marks set to the last IDs) and saves their state files.
    drop(generators);
    tracing::info!("generators dropped: leases released, state saved");
    match outcome {
        Ok(()) => {
            tracing::info!("stopped");
            Exit::Ok
        }
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("flakeid-server: {e}");
            Exit::Failed
        }
    }
}

async fn serve(
    config: &Config,
    generators: Arc<Generators>,
    prometheus: metrics_exporter_prometheus::PrometheusHandle,
    (http_tls, grpc_tls): (
        Option<tokio_rustls::TlsAcceptor>,
        Option<tokio_rustls::TlsAcceptor>,
    ),
    mut signals: Signals,
) -> Result<(), String> {
    telemetry::spawn_upkeep(prometheus.clone());
    let token = config.token.clone().map(Token::new);
    let (streams_end_tx, streams_end) = watch::channel(None);
    let service = Arc::new(Service::new(config, generators.clone(), streams_end));
    let readiness = Arc::new(Readiness::new(generators.clone()));
    let shutting_down = Arc::new(AtomicBool::new(false));

    let http = match config.http_addr {
        Some(addr) => Some(
            Listener::bind(addr, Protocol::Http, http_tls)
                .await
                .map_err(|e| format!("cannot listen on {addr} (http_addr): {e}"))?,
        ),
        None => None,
    };
    let grpc = match config.grpc_addr {
        Some(addr) => Some(
            Listener::bind(addr, Protocol::Grpc, grpc_tls)
                .await
                .map_err(|e| format!("cannot listen on {addr} (grpc_addr): {e}"))?,
        ),
        None => None,
    };

    let (reporter, health_service) = tonic_health::server::health_reporter();
    tokio::spawn(readiness.clone().watch(reporter, shutting_down.clone()));

    let (stop_tx, stop) = watch::channel(false);
    // Streams still running at the drain timeout end then, with
    // UNAVAILABLE; their connections get a moment more to send that.
    let drain = config.drain_timeout + STREAM_END_SENT;
    let mut tasks = Vec::new();
    let scheme = if config.tls_cert.is_some() {
        "https"
    } else {
        "http"
    };
    let mut ready_line = String::from("flakeid-server ready");
    if let Some(listener) = http {
        ready_line.push_str(&format!(" http={}", listener.addr));
        tracing::info!("HTTP/JSON on {scheme}://{}", listener.addr);
        let router = http::router(
            service.clone(),
            readiness.clone(),
            shutting_down.clone(),
            prometheus.clone(),
            token.clone(),
        );
        tasks.push(tokio::spawn(listener.serve(router, stop.clone(), drain)));
    }
    if let Some(listener) = grpc {
        ready_line.push_str(&format!(" grpc={}", listener.addr));
        tracing::info!("gRPC on {}", listener.addr);
        let routes = grpc::service(service.clone(), token.clone()).add_service(health_service);
        tasks.push(tokio::spawn(listener.serve(
            routes.into_axum_router(),
            stop.clone(),
            drain,
        )));
    }
    drop(service);
    // A generator restarted inside its predecessor's reservation issues
    // only after it: until then /ready says so, and the line waits.
    let signal = tokio::select! {
        () = generators.issuing() => {
            // The line tests and scripts wait for: every listener is
            // accepting, every generator issuing.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{ready_line}");
            let _ = out.flush();
            tracing::info!(
                generators = %generators.names(),
                default = %generators.default_name(),
                "ready"
            );
            signals.recv().await
        }
        signal = signals.recv() => signal,
    };
    tracing::info!(
        "{signal}: not accepting connections; draining for up to {:?}",
        config.drain_timeout
    );
    shutting_down.store(true, Ordering::Relaxed);
    let _ = streams_end_tx.send(Some(tokio::time::Instant::now() + config.drain_timeout));
    generators.changed.notify_one();
    let _ = stop_tx.send(true);
    let mut drained = true;
    for task in tasks {
        drained &= task.await.unwrap_or(false);
    }
    if !drained {
        tracing::warn!(
            "requests still in flight after {:?}; cutting them",
            config.drain_timeout
        );
    }
    Ok(())
}

/// How long connections may take to send the end of the streams cut at the
/// drain timeout.
const STREAM_END_SENT: Duration = Duration::from_secs(1);

/// SIGTERM and SIGINT (Ctrl-C), caught once registered.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Registers the handlers; inside the runtime's context.
    fn register() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Waits for one; names it.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        if let (Some(term), Some(int)) = (&mut self.term, &mut self.int) {
            return tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
        }
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}
