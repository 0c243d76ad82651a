//! The responder's side: a person's pending questions, one question, and
//! the answer (the first valid one wins; an Idempotency-Key replays).

use std::time::Duration;

use chrono::Utc;
use qp_core::protocol::{time, AnswerOutcome, AnswerSubmission, Question, Responder};
use serde_json::Value;

use super::resolution::{expire_loaded, load_fresh, not_found, record_resolution_in};
use super::{AnswerResponse, App, AppError, PENDING_LIMIT};
use crate::store::identity::{self, User};
use crate::store::questions::{self, KeyedResult, StoredQuestion};
use crate::store::round_trips::Op;
use crate::store::{Conn, DbResult};

/// A pending list's version: the same questions in the same states give the
/// same version (a short hash, so it fits in a URL whatever the list).
pub fn feed_version(pending: &[Question]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for q in pending {
        h.update(q.id.as_bytes());
        h.update(b"\n");
        h.update(serde_json::to_vec(&q.state).unwrap_or_default());
        h.update(b"\n");
    }
    hex::encode(&h.finalize()[..12])
}

/// How long until the first question on the list expires (a little after,
/// so the expiry has happened when the list is read again).
fn next_expiry(pending: &[Question]) -> Option<Duration> {
    let first = pending.iter().map(|q| q.expires_at).min()?;
    let ms = (first - Utc::now()).num_milliseconds().max(0) as u64;
    Some(Duration::from_millis(ms + 50))
}

impl App {
    pub async fn pending(&self, user: &User) -> Result<Vec<Question>, AppError> {
        self.expire_overdue().await?;
        let user_id = user.id.clone();
        self.db
            .run(move |conn| -> Result<_, AppError> {
                Ok(questions::pending_for_user(
                    conn,
                    &user_id,
                    Utc::now().timestamp(),
                    PENDING_LIMIT,
                )?)
            })
            .await
    }

    /// The person's pending list and its version, held up to `timeout`
    /// while the list's version is `since` (counted against the user's
    /// long-polls). Returns at once when the list differs from `since`, when
    /// a question on it expires, at the deadline, or when the server stops:
    /// the caller compares versions, never the clock.
    pub async fn pending_wait(
        &self,
        user: &User,
        since: Option<String>,
        timeout: Duration,
    ) -> Result<(Vec<Question>, String), AppError> {
        // Only a wait that can be held takes a place: without `since` (a
        // page's first read) the list comes back at once.
        let _slot = match timeout.is_zero() || since.is_none() {
            true => None,
            false => Some(self.enter_long_poll(format!("user:{}", user.id))?),
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let mut stopping = self.stopping.subscribe();
        // Listen before reading, so a change in between is not missed: as
        // this person, and as a member of each of their rooms (a room
        // joined during the wait is heard from the next wait on).
        let user_id = user.id.clone();
        let rooms = self
            .db
            .run(move |conn| identity::room_codes_of(conn, &user_id))
            .await?;
        let mut keys = vec![crate::feed_wake::user_key(&user.id)];
        keys.extend(rooms.iter().map(|c| crate::feed_wake::room_key(c)));
        let listener = self.feed_wake.listen(keys);
        loop {
            let pending = self.pending(user).await?;
            let version = feed_version(&pending);
            let now = tokio::time::Instant::now();
            if since.as_deref() != Some(version.as_str()) || now >= deadline || *stopping.borrow() {
                return Ok((pending, version));
            }
            // The first expiry on the list changes it with no wake-up of
            // its own: look again just after it.
            let until = next_expiry(&pending)
                .map_or(deadline, |at| deadline.min(now + at))
                .max(now);
            let _parked = crate::metrics::Counted::new(&self.metrics.parked);
            tokio::select! {
                _ = tokio::time::timeout_at(until, listener.woken()) => {}
                _ = async { let _ = stopping.wait_for(|s| *s).await; } => {}
            }
        }
    }

    /// One page of the questions `user` could see, resolved included,
    /// newest first, older than the cursor `before`; with the cursor of the
    /// next page when there may be one.
    pub async fn history(
        &self,
        user: &User,
        before: Option<i64>,
        limit: usize,
    ) -> Result<(Vec<Question>, Option<i64>), AppError> {
        self.expire_overdue().await?;
        let user_id = user.id.clone();
        let rows = self
            .db
            .run(move |conn| questions::history_for_user(conn, &user_id, before, limit))
            .await?;
        let next = match rows.len() == limit {
            true => rows.last().map(|(seq, _)| *seq),
            false => None,
        };
        Ok((rows.into_iter().map(|(_, q)| q).collect(), next))
    }

    /// A question for an eligible responder (403 otherwise).
    pub async fn user_question(&self, user: &User, id: String) -> Result<Question, AppError> {
        let user_id = user.id.clone();
        self.run_announcing(Op::Other, move |conn, done| -> Result<_, AppError> {
            let Some((stored, expired_now)) = load_fresh(conn, &id, time::now())? else {
                return Ok(Err(not_found(&id)));
            };
            if expired_now {
                done.changed(stored.question.clone());
            }
            if !may_respond(conn, &stored, &user_id)? {
                return Ok(Err(not_eligible()));
            }
            Ok(Ok(stored.question))
        })
        .await?
    }

    /// Answers as the authenticated `user`. The first valid answer wins; a
    /// late, duplicate or expired answer returns the resolved question with
    /// 200. With an Idempotency-Key, a retry returns the stored response.
    pub async fn answer(
        &self,
        user: User,
        id: String,
        body: Value,
        key: Option<String>,
    ) -> Result<AnswerResponse, AppError> {
        let user_check = user.check_token.clone();
        self.check_answer_rate(&user.id)?;
        let key_ttl = self.settings.idempotency_key_ttl.as_secs() as i64;
        let check = user.check_token.clone();
        self.run_announcing(Op::Answer, move |conn, done| -> Result<_, AppError> {
            // One statement: the question, the user's membership, the
            // room (webhook included) and the token's check.
            let place = questions::answer_place(conn, &id, &user.id, check.as_deref())?;
            if !place.token_live {
                return Err(AppError::Revoked);
            }
            let keys_since = time::now().timestamp() - key_ttl;
            if let Some(key) = &key {
                if let Some(prev) = questions::keyed_answer(conn, &user.id, key, keys_since)? {
                    if prev.question_id != id {
                        return Ok(Err(AppError::invalid(
                            "Idempotency-Key",
                            "idempotency_key_reused",
                            "Idempotency-Key: this key was already used for another question",
                        )));
                    }
                    return Ok(Ok(AnswerResponse {
                        refused: prev.refused,
                        body: prev.response,
                    }));
                }
            }
            let submission = match AnswerSubmission::from_json(&body) {
                Ok(s) => s,
                Err(e) => return Ok(Err(e.into())),
            };
            let now = time::now();
            let Some(stored) = place.stored else {
                return Ok(Err(not_found(&id)));
            };
            let room = place.room.as_ref();
            let Some((stored, expired_now)) = expire_loaded(conn, stored, now, room)? else {
                return Ok(Err(not_found(&id)));
            };
            if expired_now {
                done.changed(stored.question.clone());
            }
            if !(place.member && stored.question.is_eligible(&user.id, place.member)) {
                return Ok(Err(not_eligible()));
            }
            let mut q = stored.question;
            let responder = Responder {
                id: user.id.clone(),
                display_name: user.display_name.clone(),
            };
            let outcome = q.apply_answer(&submission, responder, now);
            let accepted = matches!(outcome, Ok(AnswerOutcome::Accepted));
            // PostgreSQL writes a resolution in one statement; a
            // transaction only when an Idempotency-Key is stored with
            // it (or on SQLite, whose resolution is several).
            let tx =
                if key.is_some() || (accepted && conn.backend() == crate::store::Backend::Sqlite) {
                    Some(conn.transaction()?)
                } else {
                    None
                };
            let c: &Conn = match &tx {
                Some(t) => &**t,
                None => conn,
            };
            let mut resolved = None;
            let response = match outcome {
                Err(e) => AnswerResponse::refused(e.into()),
                Ok(AnswerOutcome::Accepted) => {
                    // Serialized once: stored, carried to the other
                    // instances, and answered.
                    let json = serde_json::to_string(&q).unwrap_or_default();
                    match record_resolution_in(c, &stored.room_id, room, &q, &json)? {
                        Some(r) => {
                            resolved = Some((q, r));
                            AnswerResponse::question(json)
                        }
                        None => {
                            if let Some(current) = questions::get(c, &id)? {
                                q = current.question; // someone else won in between
                            }
                            AnswerResponse::question(serde_json::to_string(&q).unwrap_or_default())
                        }
                    }
                }
                Ok(AnswerOutcome::AlreadyResolved) => {
                    AnswerResponse::question(serde_json::to_string(&q).unwrap_or_default())
                }
            };
            if let Some(key) = &key {
                let keyed = KeyedResult {
                    question_id: id.clone(),
                    refused: response.refused,
                    response: response.body.clone(),
                };
                questions::save_keyed_answer(
                    c,
                    &user.id,
                    key,
                    &keyed,
                    now.timestamp(),
                    keys_since,
                )?;
            }
            if let Some(tx) = tx {
                tx.commit()?;
            }
            // Only now, with the answer committed.
            if let Some((q, r)) = resolved {
                done.resolved(q, r);
            }
            Ok(Ok(response))
        })
        .await
        .map_err(|e| self.forget_if_revoked(e, user_check.as_deref()))?
    }
}

/// Whether `user_id` may read and answer: a member of the question's room,
/// and its target when it is direct (the protocol's rule, with the server's
/// membership).
fn may_respond(conn: &Conn, stored: &StoredQuestion, user_id: &str) -> DbResult<bool> {
    let member = identity::is_member(conn, &stored.room_id, user_id)?;
    Ok(member && stored.question.is_eligible(user_id, member))
}

fn not_eligible() -> AppError {
    AppError::forbidden(
        "not_eligible",
        "you may not answer or read this question (not its target, or not a member of its room)",
    )
}
