//! Starting and stopping the server: the HTTP listener and the background
//! tasks (expiry sweep, webhook worker, push worker).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::config::Settings;
use crate::push::apns::ApnsTransport;
use crate::push::dev::DevTransport;
use crate::push::fcm::FcmTransport;
use crate::push::router::PlatformRouter;
use crate::push::PushTransport;
use crate::store::Db;

pub struct RunningServer {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    shutdown: Option<oneshot::Sender<()>>,
    http: JoinHandle<()>,
    workers: Vec<JoinHandle<()>>,
}

/// Opens the database, binds the listener and starts every task. Pushes go
/// through `push` when given (tests), else through the transports the
/// settings configure (APNs, FCM) and the dev transport.
pub async fn start(
    settings: Settings,
    push: Option<Arc<dyn PushTransport>>,
) -> Result<RunningServer, String> {
    let db = Db::open(&settings.db)
        .map_err(|e| format!("cannot open database {}: {e}", settings.db.display()))?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let mut settings = settings;
    // Pairing links name the bound address (port 0 resolved) unless told.
    if settings.public_url.is_none() {
        settings.public_url = Some(format!("http://{addr}"));
    }
    let app = App::new(db, settings);

    let (tx, rx) = oneshot::channel::<()>();
    let router = crate::http::router(app.clone());
    let http = tokio::spawn(accept_loop(listener, router, rx, app.stopping.subscribe()));

    let mut workers = vec![
        tokio::spawn(sweep_loop(app.clone())),
        tokio::spawn(crate::webhook::run_worker(app.clone())),
    ];
    let transport: Arc<dyn PushTransport> = match push {
        Some(t) => t,
        None => Arc::new(PlatformRouter {
            ios: match app.settings.apns.clone() {
                Some(c) => Some(Arc::new(ApnsTransport::new(c)?)),
                None => None,
            },
            android: match app.settings.fcm.clone() {
                Some(c) => Some(Arc::new(FcmTransport::new(c)?)),
                None => None,
            },
            dev: Some(Arc::new(DevTransport::new(app.clone()))),
        }),
    };
    workers.push(tokio::spawn(crate::push::run_worker(
        app.clone(),
        transport,
    )));
    tracing::info!(%addr, "qp serve listening");
    Ok(RunningServer {
        addr,
        app,
        shutdown: Some(tx),
        http,
        workers,
    })
}

/// Serves HTTP/1.1 connections until `stop` fires, then ends them all.
///
/// Why not `axum::serve`: it speaks HTTP/1 and HTTP/2 through hyper-util's
/// auto builder, whose per-connection state is larger; thousands of parked
/// long-polls are the normal load of this server, so each one should cost as
/// little as hyper's HTTP/1 connection does (see BENCHMARKS.md). Askers and
/// phones speak HTTP/1.1.
/// How long stopping waits for in-flight requests before closing the rest.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    mut stop: oneshot::Receiver<()>,
    stopping: tokio::sync::watch::Receiver<bool>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower_service::Service;

    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let mut req = req.map(axum::body::Body::new);
                    // The client's address, for per-address limits (pairing).
                    req.extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                    router.clone().call(req)
                });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                // hyper's own header limit stays at its default (100, on the
                // stack): raising it costs ~4 KB per parked long-poll. Our
                // JSON 431 (http::error::MAX_HEADERS) sits below it.
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            let ended = tokio::select! {
                r = conn.as_mut() => r,
                _ = async { let _ = stopping.wait_for(|s| *s).await; } => {
                    // Finish the request in flight (parked long-polls were
                    // just answered), then close instead of keeping alive.
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
    drop(listener); // no new connections from here on
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "closing connections still busy after the drain timeout"
        );
        connections.abort_all();
    }
}

/// The scheduled expiry sweep.
async fn sweep_loop(app: Arc<App>) {
    let mut tick = tokio::time::interval(app.settings.sweep_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match app.expire_overdue().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "expiry sweep"),
            Err(e) => tracing::error!(error = %e.message, "expiry sweep failed"),
        }
    }
}

impl RunningServer {
    /// Stops accepting, ends every connection and background task.
    /// Stops gracefully: no new connections; parked long-polls are answered
    /// with the question as it stands (clients re-poll); requests in flight
    /// finish within [`DRAIN_TIMEOUT`]; then the workers stop (their queues
    /// are in the database, so nothing is lost).
    pub async fn stop(mut self) {
        self.app.stopping.send_replace(true);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(DRAIN_TIMEOUT + Duration::from_secs(1), &mut self.http)
            .await
            .is_err()
        {
            self.http.abort();
        }
        for w in &self.workers {
            w.abort();
        }
    }
}
