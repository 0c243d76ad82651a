//! Wake-ups between instances sharing one PostgreSQL database, built on
//! PostgreSQL itself (`LISTEN`/`NOTIFY`, no other broker).
//!
//! A resolution (answer, cancel, expiry) notifies `qp_events` with
//! `resolved:<question id>` inside the transaction that writes it, so the
//! notification goes out exactly when the change commits. Every instance
//! listens; one that has long-polls parked on that question releases them
//! with the question the notification carries (or reads it, when it was too
//! large to carry). A revoked token notifies `revoked:<hash>`, so every
//! instance forgets it; an MCP session a client ended notifies
//! `mcp-ended:<id hash>`, so every instance closes its copy. A push to a
//! dev device notifies `dev`, which wakes dev inbox long-polls. A new
//! question notifies `asked:<whose feeds>`; it and every `resolved:` wake
//! the feed long-polls of the people concerned. When the listening
//! connection drops, the instance reconnects with backoff, listens again,
//! and then re-checks every parked question, so a wake-up sent while it was
//! disconnected is not lost.
//!
//! The store sends these wake-ups and writes and reads their payloads
//! (`store::events`); this module is the listening side.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use qp_core::protocol::QuestionState;
use qp_core::retry::RetryPolicy;
use tokio_postgres::AsyncMessage;

use crate::app::App;
use crate::store::events::{self, Event, CHANNEL};
use crate::store::{questions, DbResult};

/// Reconnecting the wake-up connection: 0.1 s doubling up to 5 s (waiters
/// on other instances wait for it, so it is quick and never gives up).
const RECONNECT: RetryPolicy = RetryPolicy {
    min: Duration::from_millis(100),
    max: Duration::from_secs(5),
    factor: 2.0,
    jitter: true,
};

/// Proves at start-up that a NOTIFY sent through the request connections
/// (`db`) reaches this instance's LISTEN connection (`db_direct`, else
/// `db`). It does not when `db` goes through a transaction-mode pooler
/// without `db_direct`, or when `db_direct` names another database: the
/// waits would then end only at their timeout, silently. Returns whether
/// the probe was heard within `within`.
pub async fn probe(app: &Arc<App>, within: Duration) -> DbResult<bool> {
    let token = crate::ids::random_hex(16);
    let (tx, rx) = tokio::sync::oneshot::channel();
    probes().insert(token.clone(), tx);
    let probe = token.clone();
    let sent = app.db.run(move |c| events::notify_probe(c, &probe)).await;
    let heard = match sent {
        Ok(()) => tokio::time::timeout(within, rx).await.is_ok(),
        Err(e) => {
            probes().remove(&token);
            return Err(e);
        }
    };
    probes().remove(&token);
    Ok(heard)
}

/// Probes waiting to be heard, by token (several servers may share a
/// process: tests).
fn probes() -> std::sync::MutexGuard<
    'static,
    std::collections::HashMap<String, tokio::sync::oneshot::Sender<()>>,
> {
    static PROBES: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, tokio::sync::oneshot::Sender<()>>>,
    > = std::sync::OnceLock::new();
    PROBES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Listens for the other instances' wake-ups until the process ends.
/// `ready` is sent once the first `LISTEN` is active.
pub async fn listen(app: Arc<App>, url: String, ready: tokio::sync::oneshot::Sender<()>) {
    let mut ready = Some(ready);
    let mut failures = 0u32;
    loop {
        match listen_once(&app, &url, &mut ready).await {
            Ok(()) => failures = 0,
            Err(e) => {
                failures = failures.saturating_add(1);
                tracing::warn!(error = %e, "listening for other instances' wake-ups");
            }
        }
        if *app.stopping.borrow() {
            return;
        }
        tokio::time::sleep(RECONNECT.delay(failures).min(RECONNECT.max)).await;
    }
}

/// One connection's life: connect, `LISTEN`, re-check parked waiters, then
/// handle notifications until the connection ends.
async fn listen_once(
    app: &Arc<App>,
    url: &str,
    ready: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = match crate::store::pg::target(url) {
        Ok((url, tls)) => tokio_postgres::connect(&url, tls).await?,
        Err(e) => {
            tracing::error!(error = %e, "the database URL");
            return Ok(());
        }
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_string()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "the wake-up connection failed");
                    return;
                }
            }
        }
    });
    crate::store::listen(&client, CHANNEL).await?;
    if let Some(ready) = ready.take() {
        let _ = ready.send(());
    } else {
        // Reconnected: anything resolved meanwhile sent no wake-up we heard.
        recheck_parked(app).await;
    }
    let mut stopping = app.stopping.subscribe();
    loop {
        let payload = tokio::select! {
            payload = rx.recv() => payload,
            _ = async { let _ = stopping.wait_for(|s| *s).await; } => None,
        };
        match payload {
            Some(payload) => handle(app, &payload).await,
            None => break, // the connection ended, or the server stops
        }
    }
    driver.abort();
    drop(client);
    Ok(())
}

async fn handle(app: &Arc<App>, payload: &str) {
    match Event::parse(payload) {
        Some(Event::Resolved { id, carried }) => {
            match &carried {
                Some(q) if q.id == id => app.feed_wake.wake_for(q),
                _ => app.feed_wake.wake_all(),
            }
            // Only questions someone waits on here matter; one the wake-up
            // carries costs no read.
            if app.waiters.is_waited(id) {
                match carried {
                    Some(q) if q.id == id && q.state != QuestionState::Pending => {
                        app.waiters.release(Arc::new(*q))
                    }
                    _ => release_if_resolved(app, vec![id.to_string()]).await,
                }
            }
        }
        Some(Event::Revoked(hash)) => app.tokens.forget(hash),
        Some(Event::Probe(token)) => {
            if let Some(heard) = probes().remove(token) {
                let _ = heard.send(());
            }
        }
        Some(Event::McpEnded(hash)) => app.mcp_sessions.ended_by_hash(hash),
        Some(Event::Asked(Some(key))) => app.feed_wake.wake_keys([key]),
        // From an instance that does not say whom.
        Some(Event::Asked(None)) => app.feed_wake.wake_all(),
        Some(Event::DevInbox) => app.dev_wake.notify_waiters(),
        None => {}
    }
}

/// Every question with a parked waiter here, read again; every token
/// remembered here forgotten (a revocation may have gone unheard).
async fn recheck_parked(app: &Arc<App>) {
    app.tokens.forget_all();
    // A session ended elsewhere meanwhile: each is checked at its next
    // request (its stamp is due).
    app.mcp_sessions.stamps_due_now();
    let ids = app.waiters.waited_ids();
    if !ids.is_empty() {
        release_if_resolved(app, ids).await;
    }
    app.dev_wake.notify_waiters();
    app.feed_wake.wake_all();
}

async fn release_if_resolved(app: &Arc<App>, ids: Vec<String>) {
    // A few tries: after an outage the first read may meet a database
    // connection that broke with it (the pool then makes a new one).
    for attempt in 0..5u64 {
        let ids = ids.clone();
        let read = app
            .db
            .run(move |conn| -> DbResult<Vec<_>> {
                let mut out = Vec::new();
                for id in &ids {
                    if let Some(stored) = questions::get(conn, id)? {
                        out.push(stored.question);
                    }
                }
                Ok(out)
            })
            .await;
        match read {
            Ok(questions) => {
                for q in questions {
                    if q.state != QuestionState::Pending {
                        app.waiters.release(Arc::new(q));
                    }
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, attempt, "reading questions after a wake-up");
                tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await;
            }
        }
    }
    // Still failing: the waiters wake at their own timeout and read again.
}
