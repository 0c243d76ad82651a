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
use crate::push::PushTransport;
use crate::store::Db;

pub struct RunningServer {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    shutdown: Option<oneshot::Sender<()>>,
    http: JoinHandle<()>,
    workers: Vec<JoinHandle<()>>,
}

/// Opens the database, binds the listener and starts every task.
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
    let app = App::new(db, settings);

    let (tx, rx) = oneshot::channel::<()>();
    let router = crate::http::router(app.clone());
    let http = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "HTTP server stopped");
        }
    });

    let mut workers = vec![
        tokio::spawn(sweep_loop(app.clone())),
        tokio::spawn(crate::webhook::run_worker(app.clone())),
    ];
    if let Some(transport) = push {
        workers.push(tokio::spawn(crate::push::run_worker(
            app.clone(),
            transport,
        )));
    }
    tracing::info!(%addr, "qp serve listening");
    Ok(RunningServer {
        addr,
        app,
        shutdown: Some(tx),
        http,
        workers,
    })
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
    /// Stops accepting, gives in-flight requests a moment, then ends every task.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        for w in &self.workers {
            w.abort();
        }
        if tokio::time::timeout(Duration::from_millis(500), &mut self.http)
            .await
            .is_err()
        {
            self.http.abort();
        }
    }
}
