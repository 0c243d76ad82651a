//! The outbox: an answer is committed here, with its idempotency key, before
//! anything else happens, and stays until the server has answered for it.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{now_ms, Store, StoreError, StoredQuestion};
use crate::protocol::AnswerSubmission;

/// Where an answer given on this device stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerState {
    /// Committed; waiting to be sent (or to be retried after a failure).
    Queued,
    /// A send is in flight.
    Sending,
    /// Handed to the system for a background upload (iOS, a notification
    /// action's answer): the system sends it even after this process is
    /// suspended or killed, and reports the outcome to this process or to
    /// the next one. Not sent by the flush meanwhile; back to `Queued` if
    /// the system reports a failure or no longer has it.
    HandedOver,
    /// The server took it: this answer resolved the question.
    Answered,
    /// The question was already resolved (by someone else, expired, cancelled).
    AlreadyResolved,
    /// The server refused it for good (not eligible, unknown option...).
    Rejected,
}

impl AnswerState {
    fn as_str(self) -> &'static str {
        match self {
            AnswerState::Queued => "queued",
            AnswerState::Sending => "sending",
            AnswerState::HandedOver => "handed_over",
            AnswerState::Answered => "answered",
            AnswerState::AlreadyResolved => "already_resolved",
            AnswerState::Rejected => "rejected",
        }
    }

    fn parse(s: &str) -> AnswerState {
        match s {
            "sending" => AnswerState::Sending,
            "handed_over" => AnswerState::HandedOver,
            "answered" => AnswerState::Answered,
            "already_resolved" => AnswerState::AlreadyResolved,
            "rejected" => AnswerState::Rejected,
            _ => AnswerState::Queued,
        }
    }

    /// Still to be delivered.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            AnswerState::Queued | AnswerState::Sending | AnswerState::HandedOver
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub id: i64,
    pub question_id: String,
    pub idempotency_key: String,
    pub body: AnswerSubmission,
    pub state: AnswerState,
    pub attempts: u32,
    pub next_attempt_ms: i64,
    pub last_error: Option<String>,
    /// What the person saw (the compact question as JSON) when the question
    /// was known only from a plain push: the flush reads the question from
    /// the server first and sends only if it is the same. `None` when they
    /// saw a question read from the server or opened from a sealed push.
    pub unverified_seen: Option<String>,
}

const COLUMNS: &str = "id, question_id, idempotency_key, body, state, attempts, next_attempt_ms, last_error, unverified_seen";

fn from_row(r: &rusqlite::Row) -> rusqlite::Result<OutboxEntry> {
    let body: String = r.get(3)?;
    let state: String = r.get(4)?;
    Ok(OutboxEntry {
        id: r.get(0)?,
        question_id: r.get(1)?,
        idempotency_key: r.get(2)?,
        body: serde_json::from_str(&body).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(e))
        })?,
        state: AnswerState::parse(&state),
        attempts: r.get(5)?,
        next_attempt_ms: r.get(6)?,
        last_error: r.get(7)?,
        unverified_seen: r.get(8)?,
    })
}

/// 128 random bits, hex: the answer's Idempotency-Key.
fn new_key() -> String {
    let mut b = [0u8; 16];
    // getrandom only fails where the OS has no randomness source at all.
    if getrandom::getrandom(&mut b).is_err() {
        let n = now_ms().to_le_bytes();
        b[..8].copy_from_slice(&n);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Store {
    /// Commits an answer durably and returns its entry. If this device
    /// already has an answer for the question that was not refused, that one
    /// is returned instead: one answer, one key, never two. What the person
    /// saw is the question as held now: when only a plain push said so, it
    /// is kept with the answer, to be checked against the server first.
    pub fn commit_answer(
        &self,
        question_id: &str,
        body: &AnswerSubmission,
    ) -> Result<OutboxEntry, StoreError> {
        self.commit(question_id, body, None)
    }

    /// As [`commit_answer`](Self::commit_answer), for an answer given to
    /// `seen`, the question as it was shown (the phone read it before the
    /// person answered): if it was not verified, its words are kept with the
    /// answer even when a server read has changed the held row since.
    pub fn commit_answer_to(
        &self,
        seen: &StoredQuestion,
        body: &AnswerSubmission,
    ) -> Result<OutboxEntry, StoreError> {
        self.commit(&seen.question.id, body, Some(seen))
    }

    fn commit(
        &self,
        question_id: &str,
        body: &AnswerSubmission,
        seen: Option<&StoredQuestion>,
    ) -> Result<OutboxEntry, StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = tx
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM outbox WHERE question_id = ?1 AND state != 'rejected' ORDER BY id DESC LIMIT 1"
                ),
                [question_id],
                from_row,
            )
            .optional()?;
        if let Some(e) = existing {
            return Ok(e);
        }
        let unverified_seen: Option<String> = match seen {
            Some(s) if s.verified => None,
            Some(s) => Some(serde_json::to_string(&s.question).unwrap_or_default()),
            None => tx
                .query_row(
                    "SELECT compact FROM questions WHERE id = ?1 AND verified = 0",
                    [question_id],
                    |r| r.get(0),
                )
                .optional()?,
        };
        let now = now_ms();
        let key = new_key();
        tx.execute(
            "INSERT INTO outbox (question_id, idempotency_key, body, state, next_attempt_ms, created_ms, updated_ms, unverified_seen)
             VALUES (?1, ?2, ?3, 'queued', ?4, ?4, ?4, ?5)",
            params![question_id, key, serde_json::to_string(body).unwrap_or_default(), now, unverified_seen],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute("DELETE FROM drafts WHERE question_id = ?1", [question_id])?;
        tx.commit()?;
        Ok(OutboxEntry {
            id,
            question_id: question_id.to_string(),
            idempotency_key: key,
            body: body.clone(),
            state: AnswerState::Queued,
            attempts: 0,
            next_attempt_ms: now,
            last_error: None,
            unverified_seen,
        })
    }

    /// Open entries whose time has come, oldest first.
    pub fn due_answers(&self, now_ms: i64) -> Result<Vec<OutboxEntry>, StoreError> {
        let conn = self.conn()?;
        let mut st = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM outbox WHERE state IN ('queued', 'sending') AND next_attempt_ms <= ?1 ORDER BY id"
        ))?;
        let rows = st.query_map([now_ms], from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Claims an entry for sending, for `lease_ms`: another flusher (the other
    /// process) leaves it alone meanwhile; if this process dies, it is due
    /// again when the lease ends. False if someone else holds it.
    pub fn claim_answer(&self, id: i64, lease_ms: i64) -> Result<bool, StoreError> {
        let now = now_ms();
        let n = self.conn()?.execute(
            "UPDATE outbox SET state = 'sending', attempts = attempts + 1, next_attempt_ms = ?2, updated_ms = ?3
             WHERE id = ?1 AND state IN ('queued', 'sending') AND next_attempt_ms <= ?3",
            params![id, now + lease_ms, now],
        )?;
        Ok(n == 1)
    }

    /// Records the end of a send: a final state, or `Queued` with the time
    /// of the next attempt.
    pub fn finish_answer(
        &self,
        id: i64,
        state: AnswerState,
        error: Option<&str>,
        next_attempt_ms: i64,
    ) -> Result<(), StoreError> {
        self.conn()?.execute(
            "UPDATE outbox SET state = ?2, last_error = ?3, next_attempt_ms = ?4, updated_ms = ?5 WHERE id = ?1",
            params![id, state.as_str(), error, next_attempt_ms, now_ms()],
        )?;
        Ok(())
    }

    /// Hands a due entry to the system for a background upload (see
    /// [`AnswerState::HandedOver`]), counting the attempt. False if it is
    /// not due or someone else holds it.
    pub fn hand_over_answer(&self, id: i64) -> Result<bool, StoreError> {
        let now = now_ms();
        let n = self.conn()?.execute(
            "UPDATE outbox SET state = 'handed_over', attempts = attempts + 1, missing_since_ms = NULL,
             updated_ms = ?2 WHERE id = ?1 AND state IN ('queued', 'sending') AND next_attempt_ms <= ?2",
            params![id, now],
        )?;
        Ok(n == 1)
    }

    /// The system reported on the hand-over of the answer with
    /// `idempotency_key`: the entry, claimed for `lease_ms` to record the
    /// outcome (as [`claim_answer`](Self::claim_answer), without counting
    /// another attempt). `None` when no such answer is handed over (the
    /// report came twice, or after the answer was sent another way): then
    /// nothing is to be recorded.
    pub fn claim_handed_over(
        &self,
        idempotency_key: &str,
        lease_ms: i64,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let entry = tx
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM outbox WHERE idempotency_key = ?1 AND state = 'handed_over'"
                ),
                [idempotency_key],
                from_row,
            )
            .optional()?;
        let Some(mut entry) = entry else {
            return Ok(None);
        };
        let now = now_ms();
        tx.execute(
            "UPDATE outbox SET state = 'sending', next_attempt_ms = ?2, updated_ms = ?3 WHERE id = ?1",
            params![entry.id, now + lease_ms, now],
        )?;
        tx.commit()?;
        entry.state = AnswerState::Sending;
        Ok(Some(entry))
    }

    /// Answers handed over that the system no longer has (`in_flight`: the
    /// idempotency keys of the uploads it still holds) and never reported
    /// on: queued again, due; returns how many. Re-sending is safe (the
    /// same key gets the same result), but sending an answer the system
    /// already delivered is what this avoids: an upload that finished
    /// leaves the system's list before its report reaches the app (the
    /// report comes once the app makes its session again, after a
    /// relaunch). So an answer is lost only when missing from a snapshot
    /// taken at least `grace_ms` after the first one that missed it; until
    /// then its report is still taken. One back in the list is not missing.
    pub fn requeue_lost_hand_overs(
        &self,
        in_flight: &[String],
        now: i64,
        grace_ms: i64,
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let handed: Vec<(i64, String, Option<i64>)> = {
            let mut st = tx.prepare(
                "SELECT id, idempotency_key, missing_since_ms FROM outbox WHERE state = 'handed_over'",
            )?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        let mut n = 0;
        for (id, key, missing_since) in handed {
            if in_flight.contains(&key) {
                tx.execute(
                    "UPDATE outbox SET missing_since_ms = NULL WHERE id = ?1",
                    [id],
                )?;
                continue;
            }
            match missing_since {
                None => {
                    tx.execute(
                        "UPDATE outbox SET missing_since_ms = ?2 WHERE id = ?1",
                        params![id, now],
                    )?;
                }
                Some(since) if now - since >= grace_ms => {
                    n += tx.execute(
                        // Due as when it was handed over (it was due then).
                        "UPDATE outbox SET state = 'queued', missing_since_ms = NULL, updated_ms = ?2
                         WHERE id = ?1",
                        params![id, now],
                    )?;
                }
                Some(_) => {} // its report may still come
            }
        }
        tx.commit()?;
        Ok(n)
    }

    /// The server showed the question the person saw: the answer may be
    /// sent (and is not checked again).
    pub fn mark_seen_verified(&self, id: i64) -> Result<(), StoreError> {
        self.conn()?.execute(
            "UPDATE outbox SET unverified_seen = NULL WHERE id = ?1",
            [id],
        )?;
        Ok(())
    }

    /// This device's latest answer to a question.
    pub fn answer_for(&self, question_id: &str) -> Result<Option<OutboxEntry>, StoreError> {
        Ok(self
            .conn()?
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM outbox WHERE question_id = ?1 ORDER BY id DESC LIMIT 1"
                ),
                [question_id],
                from_row,
            )
            .optional()?)
    }

    /// Makes a waiting answer due now (the person tapped "retry").
    pub fn retry_now(&self, question_id: &str) -> Result<bool, StoreError> {
        let n = self.conn()?.execute(
            "UPDATE outbox SET state = 'queued', next_attempt_ms = ?2 WHERE question_id = ?1 AND state IN ('queued', 'sending')",
            params![question_id, now_ms()],
        )?;
        Ok(n > 0)
    }

    /// At app launch: sends interrupted by the death of a process are queued
    /// again at once. Re-sending is safe: the same key gets the same result.
    pub fn requeue_interrupted(&self) -> Result<usize, StoreError> {
        Ok(self.conn()?.execute(
            "UPDATE outbox SET state = 'queued', next_attempt_ms = ?1 WHERE state = 'sending'",
            [now_ms()],
        )?)
    }

    /// All entries (for diagnostics and tests).
    pub fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        let conn = self.conn()?;
        let mut st = conn.prepare(&format!("SELECT {COLUMNS} FROM outbox ORDER BY id"))?;
        let rows = st.query_map([], from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
