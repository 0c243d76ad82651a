//! Resolutions and expiry: every change of a question's state is written
//! by [`record_resolution`] in the transaction that decides it, with the
//! webhook delivery and the push jobs it causes; a read expires an overdue
//! question first ([`load_fresh`]); the sweep expires the rest; expired
//! Idempotency-Keys are purged.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use qp_core::protocol::{time, Question, RoomRef, WebhookEvent};

use super::{App, AppError};
use crate::ids;
use crate::store::identity;
use crate::store::questions::{self, StoredQuestion};
use crate::store::round_trips::Op;
use crate::store::{now_ms, Conn, DbResult};

impl App {
    /// Expires every overdue pending question (in batches), releasing its
    /// waiters and queuing its webhook. Returns how many it expired.
    pub async fn expire_overdue(&self) -> Result<usize, AppError> {
        let mut total = 0;
        loop {
            let n = self
                .run_announcing(Op::Other, move |conn, done| -> Result<_, AppError> {
                    let now = time::now();
                    let mut n = 0;
                    for id in questions::overdue_ids(conn, now.timestamp(), 200)? {
                        // Each expiry commits on its own: announced even if
                        // a later one fails.
                        if let Some((stored, true)) = load_fresh(conn, &id, now)? {
                            done.changed(stored.question);
                            n += 1;
                        }
                    }
                    Ok(n)
                })
                .await?;
            total += n;
            if n < 200 {
                return Ok(total);
            }
        }
    }
}

impl App {
    /// Deletes the Idempotency-Keys older than `idempotency_key_ttl` (a
    /// lookup ignores them already); returns how many.
    pub async fn purge_answer_keys(&self) -> Result<usize, AppError> {
        let before = time::now().timestamp() - self.settings.idempotency_key_ttl.as_secs() as i64;
        self.db
            .run(move |conn| -> Result<_, AppError> {
                Ok(questions::purge_answer_keys(conn, before)?)
            })
            .await
    }
}

/// Purges expired Idempotency-Keys, ten times per key lifetime (between
/// every 100 ms and every 10 minutes), so the table holds about one
/// lifetime of answers.
pub async fn purge_answer_keys_loop(app: Arc<App>) {
    let every = (app.settings.idempotency_key_ttl / 10)
        .clamp(Duration::from_millis(100), Duration::from_secs(600));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match app.purge_answer_keys().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(purged = n, "expired Idempotency-Keys purged"),
            Err(e) => tracing::warn!(error = %e, "purging Idempotency-Keys failed"),
        }
    }
}

pub(super) fn not_found(id: &str) -> AppError {
    AppError::not_found(format!("no question {id}"))
}

/// Reads a question, first expiring it (durably) if its deadline passed, so
/// no read ever shows an overdue question as pending. The flag says whether
/// this call expired it, which the caller records in its
/// [`super::committed::Committed`] to announce.
pub(super) fn load_fresh(
    conn: &Conn,
    id: &str,
    now: DateTime<Utc>,
) -> DbResult<Option<(StoredQuestion, bool)>> {
    match questions::get(conn, id)? {
        Some(stored) => expire_loaded(conn, stored, now, None),
        None => Ok(None),
    }
}

/// [`load_fresh`] in the statement that checks a remembered token (401
/// when it was revoked).
pub(super) fn load_fresh_checked(
    conn: &Conn,
    id: &str,
    now: DateTime<Utc>,
    token: Option<&str>,
) -> Result<Option<(StoredQuestion, bool)>, AppError> {
    let (live, stored) = questions::get_checked(conn, id, token)?;
    if !live {
        return Err(AppError::Revoked);
    }
    match stored {
        Some(stored) => Ok(expire_loaded(conn, stored, now, None)?),
        None => Ok(None),
    }
}

/// A question just read, expired first (durably) if its deadline passed.
/// `room`: its room, when the caller read it already.
pub(super) fn expire_loaded(
    conn: &Conn,
    mut stored: StoredQuestion,
    now: DateTime<Utc>,
    room: Option<&identity::Room>,
) -> DbResult<Option<(StoredQuestion, bool)>> {
    if !stored.question.expire_if_due(now) {
        return Ok(Some((stored, false)));
    }
    let tx = conn.transaction()?;
    let json = serde_json::to_string(&stored.question).unwrap_or_default();
    let changed = match room {
        Some(room) => {
            record_resolution_in(&*tx, &stored.room_id, Some(room), &stored.question, &json)?
        }
        None => record_resolution(&*tx, &stored.room_id, &stored.question)?,
    };
    tx.commit()?;
    if changed.is_some() {
        Ok(Some((stored, true)))
    } else {
        Ok(questions::get(conn, &stored.question.id)?.map(|s| (s, false)))
    }
}

/// Writes a resolution (first one wins) and queues what it causes: the
/// room's webhook event (if its filter wants it) and a resolution push to every
/// device that got the question. Returns `None` if the question was already
/// terminal in the database (nothing written).
pub(super) fn record_resolution(
    conn: &Conn,
    room_id: &str,
    q: &Question,
) -> DbResult<Option<questions::Resolved>> {
    let room = identity::room_by_id(conn, room_id)?;
    let json = serde_json::to_string(q).unwrap_or_default();
    record_resolution_in(conn, room_id, room.as_ref(), q, &json)
}

/// [`record_resolution`] with the room read already and `q` serialized
/// (`json`): on PostgreSQL one statement, which also wakes the other
/// instances' waiters when it commits.
pub(super) fn record_resolution_in(
    conn: &Conn,
    room_id: &str,
    room: Option<&identity::Room>,
    q: &Question,
    json: &str,
) -> DbResult<Option<questions::Resolved>> {
    let event = room.and_then(|room| {
        let hook = room.webhook.as_ref()?;
        let room_ref = RoomRef {
            code: room.code.clone(),
            name: room.name.clone(),
        };
        let event = WebhookEvent::for_question(q, room_ref)?;
        hook.wants(&event.event).then(|| {
            let body = serde_json::to_string(&event).unwrap_or_default();
            (ids::new_id("d"), event.event, body)
        })
    });
    let queued = event
        .as_ref()
        .map(|(id, name, body)| questions::QueuedEvent {
            id,
            event: name,
            body,
        });
    let resolved = questions::resolve(conn, q, json, room_id, queued, now_ms())?;
    if resolved.is_some() {
        tracing::info!(question = %q.id, state = q.state.as_str(), "resolved");
    }
    Ok(resolved)
}
