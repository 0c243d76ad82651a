//! The server's background loops, each started here and only here (`serve`
//! calls [`start`], and [`wakeups`] on PostgreSQL), one line each below.
//! They run until the server stops (`RunningServer::stop` aborts them);
//! their queues are in the database, so nothing is lost. Loops that belong
//! to one object end with it and start with it instead: the MCP session
//! reaper (`mcp::http_service`), the TLS certificate reload and ACME
//! (`tls/`), a push transport's connections (`push/`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::push::PushTransport;

/// Starts every app-wide loop; pushes go out through `push`.
pub fn start(app: &Arc<App>, push: Arc<dyn PushTransport>) -> Vec<JoinHandle<()>> {
    vec![
        // Expires overdue questions, every `sweep_interval`.
        tokio::spawn(sweep_loop(app.clone())),
        // Purges expired Idempotency-Keys, ten times per key lifetime.
        tokio::spawn(crate::app::purge_answer_keys_loop(app.clone())),
        // Returns free heap pages to the system after a burst of long-polls.
        tokio::spawn(trim_after_bursts(app.clone())),
        // Delivers signed webhooks from their durable queue, with retries.
        tokio::spawn(crate::webhook::run_worker(app.clone())),
        // Writes bearer tokens' remembered uses in batches.
        tokio::spawn(crate::app::flush_token_uses_loop(app.clone())),
        // Deletes what is past its retention, every 60 sweep intervals.
        tokio::spawn(crate::housekeeping::retention_loop(app.clone())),
        // Settles and logs OAuth consents answered while nobody polled.
        tokio::spawn(crate::oauth::consent::settle_loop(app.clone())),
        // Sends due push jobs through the transports, with retries.
        tokio::spawn(crate::push::run_worker(app.clone(), push)),
    ]
}

/// Hears the other instances' wake-ups on PostgreSQL's `url` (LISTEN);
/// the receiver gets a message once it listens (serve waits for it).
pub fn wakeups(app: &Arc<App>, url: String) -> (JoinHandle<()>, oneshot::Receiver<()>) {
    let (ready_tx, ready) = oneshot::channel();
    let task = tokio::spawn(crate::wakeups::listen(app.clone(), url, ready_tx));
    (task, ready)
}

/// Gives memory back to the system after a burst of connections (long-polls)
/// ends. glibc's allocator keeps what was freed in its arenas for reuse, so
/// 12,000 long-polls once left ~290 MB resident for good; when the open
/// connections have fallen to under half their peak since the last trim,
/// `malloc_trim` returns the free pages (a few milliseconds, at most every
/// two seconds).
async fn trim_after_bursts(app: Arc<App>) {
    use std::sync::atomic::Ordering;
    const MIN_BURST: i64 = 256;
    let mut peak = 0i64;
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let parked = app.metrics.connections.load(Ordering::Relaxed);
        peak = peak.max(parked);
        if peak >= MIN_BURST && parked < peak / 2 {
            let released = release_free_memory();
            tracing::debug!(peak, parked, released, "memory trimmed after a burst");
            peak = parked;
        }
    }
}

/// Returns free heap pages to the system; true when some were.
fn release_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks the allocator's own free lists.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
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
            Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
        }
    }
}
