//! The feed rows: questions this user can see, from pushes and from the server.

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{now_ms, Store, StoreError};
use crate::payload::{CompactQuestion, ResolvedNotice};
use crate::present::registry::KnownQuestion;
use crate::protocol::{Answer, Question, QuestionState};

/// A question as the phone holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredQuestion {
    pub question: CompactQuestion,
    pub state: QuestionState,
    pub answer: Option<Answer>,
    pub resolved_at: Option<DateTime<Utc>>,
    /// The words (prompt, context, options, text input) were read from the
    /// server or opened from a push sealed to this device. False when only
    /// a plain push said so: anyone who can inject pushes may have made it,
    /// so an answer to it is sent only after the server shows the same
    /// question (see [`crate::sync::flush`]).
    pub verified: bool,
}

impl StoredQuestion {
    /// The full protocol object (for copy and answer validation).
    pub fn to_question(&self) -> Question {
        let mut q = self.question.to_question();
        q.state = self.state;
        q.answer = self.answer.clone();
        q.resolved_at = self.resolved_at;
        q
    }
}

fn ts(secs: Option<i64>) -> Option<DateTime<Utc>> {
    secs.and_then(|s| Utc.timestamp_opt(s, 0).single())
}

fn bad_row(e: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.to_string().into())
}

fn from_row(r: &rusqlite::Row) -> rusqlite::Result<StoredQuestion> {
    let compact: String = r.get(0)?;
    let state: String = r.get(1)?;
    let answer: Option<String> = r.get(2)?;
    Ok(StoredQuestion {
        question: serde_json::from_str(&compact).map_err(bad_row)?,
        state: QuestionState::parse(&state).ok_or_else(|| bad_row("bad state"))?,
        answer: answer
            .map(|a| serde_json::from_str(&a))
            .transpose()
            .map_err(bad_row)?,
        resolved_at: ts(r.get(3)?),
        verified: r.get::<_, i64>(4)? != 0,
    })
}

const COLUMNS: &str = "compact, state, answer, resolved_at, verified";

/// Adds a question not held yet.
fn insert(
    tx: &rusqlite::Transaction<'_>,
    c: &CompactQuestion,
    state: QuestionState,
    answer_json: Option<&str>,
    resolved_at: Option<DateTime<Utc>>,
    presented_ms: Option<i64>,
    verified: bool,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO questions (id, compact, state, answer, resolved_at, expires_at, created_at, updated_ms, presented_ms, verified)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            c.id,
            serde_json::to_string(c).unwrap_or_default(),
            state.as_str(),
            answer_json,
            resolved_at.map(|t| t.timestamp()),
            c.expires_at.timestamp(),
            c.created_at.timestamp(),
            now_ms(),
            presented_ms,
            verified,
        ],
    )?;
    Ok(())
}

impl Store {
    /// Upserts a question from the server. A terminal row never changes
    /// again; a pending one takes the incoming state (and display data,
    /// which makes it verified: read from the server).
    /// Returns whether this call made it terminal.
    fn upsert(
        &self,
        compact: Option<&CompactQuestion>,
        id: &str,
        state: QuestionState,
        answer: Option<&Answer>,
        resolved_at: Option<DateTime<Utc>>,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: Option<String> = tx
            .query_row("SELECT state FROM questions WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        let answer_json = answer.map(|a| serde_json::to_string(a).unwrap_or_default());
        let became_terminal = match current.as_deref().and_then(QuestionState::parse) {
            Some(s) if s.is_terminal() => false,
            Some(_) => {
                tx.execute(
                    "UPDATE questions SET state = ?2, answer = ?3, resolved_at = ?4, updated_ms = ?5,
                         compact = COALESCE(?6, compact),
                         verified = CASE WHEN ?6 IS NULL THEN verified ELSE 1 END WHERE id = ?1",
                    params![
                        id,
                        state.as_str(),
                        answer_json,
                        resolved_at.map(|t| t.timestamp()),
                        now_ms(),
                        compact.map(|c| serde_json::to_string(c).unwrap_or_default()),
                    ],
                )?;
                state.is_terminal()
            }
            None => {
                // Unknown and no display data: nothing to show.
                let Some(c) = compact else { return Ok(false) };
                insert(
                    &tx,
                    c,
                    state,
                    answer_json.as_deref(),
                    resolved_at,
                    None,
                    true,
                )?;
                state.is_terminal()
            }
        };
        tx.commit()?;
        Ok(became_terminal)
    }

    /// A question that arrived by a plain push; its notification is on
    /// screen now. Added unverified: a plain push authenticates nothing, so
    /// an answer to it is sent only once the server shows the same question.
    /// A push may add a question this device has not seen, but never
    /// changes one it holds: the question id travels in clear and a push
    /// can be injected by whoever reaches the gateway (a leaked APNs key, an
    /// FCM account), so only a server read ([`record_server`](Self::record_server))
    /// may change a held prompt, options or state. Returns the held question
    /// when there was one: show that, not the push.
    pub fn record_push(&self, q: &CompactQuestion) -> Result<Option<StoredQuestion>, StoreError> {
        self.record_pushed(q, false)
    }

    /// A question opened from a push sealed to this device: as
    /// [`record_push`](Self::record_push), but added as verified (the
    /// sealed envelope binds it to this device and this question id).
    pub fn record_sealed_push(
        &self,
        q: &CompactQuestion,
    ) -> Result<Option<StoredQuestion>, StoreError> {
        self.record_pushed(q, true)
    }

    fn record_pushed(
        &self,
        q: &CompactQuestion,
        verified: bool,
    ) -> Result<Option<StoredQuestion>, StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let held = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM questions WHERE id = ?1"),
                [&q.id],
                from_row,
            )
            .optional()?;
        if held.is_some() {
            // The notification shows the held question (not the push).
            tx.execute(
                "UPDATE questions SET presented_ms = COALESCE(presented_ms, ?2), shown_compact = compact
                 WHERE id = ?1",
                params![q.id, now_ms()],
            )?;
        } else {
            insert(
                &tx,
                q,
                QuestionState::Pending,
                None,
                None,
                Some(now_ms()),
                verified,
            )?;
            tx.execute(
                "UPDATE questions SET shown_compact = compact WHERE id = ?1",
                [&q.id],
            )?;
        }
        tx.commit()?;
        Ok(held)
    }

    /// These questions' notifications are (or were) on screen.
    pub fn mark_presented(&self, ids: &[&str]) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        // Usually every one is marked already (its push was recorded): read
        // first, so the extension's reconciliation takes no write lock then.
        let unmarked: Vec<&str> = {
            let mut st = conn
                .prepare_cached("SELECT 1 FROM questions WHERE id = ?1 AND presented_ms IS NULL")?;
            let mut out = Vec::new();
            for id in ids {
                if st.exists([id])? {
                    out.push(*id);
                }
            }
            out
        };
        if unmarked.is_empty() {
            return Ok(());
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut st = tx.prepare_cached(
                "UPDATE questions SET presented_ms = ?2 WHERE id = ?1 AND presented_ms IS NULL",
            )?;
            let now = now_ms();
            for id in unmarked {
                st.execute(params![id, now])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The library drew these questions' notifications from the questions
    /// as held now (reconciliation posted them).
    pub fn mark_shown(&self, ids: &[&str]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut st =
                tx.prepare_cached("UPDATE questions SET shown_compact = compact WHERE id = ?1")?;
            for id in ids {
                st.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// What this device's notification of a question shows, when the
    /// library drew it (see [`mark_shown`](Self::mark_shown)).
    pub fn shown(&self, id: &str) -> Result<Option<CompactQuestion>, StoreError> {
        let json: Option<String> = self
            .conn()?
            .query_row(
                "SELECT shown_compact FROM questions WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    /// Pending questions never shown on this device and not answered on it
    /// (nothing in its outbox), oldest first: what reconciliation may post.
    pub fn never_presented(&self) -> Result<Vec<StoredQuestion>, StoreError> {
        let conn = self.conn()?;
        let mut st = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM questions q WHERE state = 'pending' AND presented_ms IS NULL
             AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.question_id = q.id)
             ORDER BY created_at, id"
        ))?;
        let rows = st.query_map([], from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// A question as the server reports it (the truth, except that a
    /// terminal state never reverts). True when this resolved it locally:
    /// the platform withdraws its notification.
    pub fn record_server(&self, q: &Question) -> Result<bool, StoreError> {
        let compact = q.room.is_some().then(|| CompactQuestion::from_question(q));
        self.upsert(
            compact.as_ref(),
            &q.id,
            q.state,
            q.answer.as_ref(),
            q.resolved_at,
        )
    }

    /// A resolution the server confirmed, in the shape of a "resolved"
    /// push. The phone never calls it with a push's notice: a resolution by
    /// push is a claim anyone who can inject pushes can make, and a pending
    /// question made terminal here would never come back (terminal states
    /// never revert); [`crate::phone::Phone::confirm_resolution`] asks the server.
    pub fn record_resolved(&self, n: &ResolvedNotice) -> Result<bool, StoreError> {
        self.upsert(None, &n.id, n.state, n.answer.as_ref(), n.resolved_at)
    }

    pub fn question(&self, id: &str) -> Result<Option<StoredQuestion>, StoreError> {
        Ok(self
            .conn()?
            .query_row(
                &format!("SELECT {COLUMNS} FROM questions WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?)
    }

    /// The newest questions first.
    pub fn recent_questions(&self, limit: usize) -> Result<Vec<StoredQuestion>, StoreError> {
        let conn = self.conn()?;
        let mut st = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM questions ORDER BY created_at DESC, id LIMIT ?1"
        ))?;
        let rows = st.query_map([limit as i64], from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What the category registry needs, newest first, read from columns
    /// only (no JSON): this runs in the notification extension for every push.
    pub fn known_questions(&self, limit: usize) -> Result<Vec<KnownQuestion>, StoreError> {
        let conn = self.conn()?;
        let mut st = conn.prepare_cached(
            "SELECT id, state, expires_at, created_at FROM questions ORDER BY created_at DESC, id LIMIT ?1",
        )?;
        let rows = st.query_map([limit as i64], |r| {
            let state: String = r.get(1)?;
            Ok(KnownQuestion {
                question_id: r.get(0)?,
                state: QuestionState::parse(&state).ok_or_else(|| bad_row("bad state"))?,
                expires_at: ts(Some(r.get(2)?)).unwrap_or_default(),
                created_at: ts(Some(r.get(3)?)).unwrap_or_default(),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Ids of questions still pending here.
    pub fn pending_ids(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn()?;
        let mut st =
            conn.prepare("SELECT id FROM questions WHERE state = 'pending' ORDER BY created_at")?;
        let rows = st.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Whether any question is held here (none: a new device, or one
    /// signed out and in again).
    pub fn holds_questions(&self) -> Result<bool, StoreError> {
        // EXISTS stops at the first row; count(*) would read them all on
        // every sync.
        let held: bool =
            self.conn()?
                .query_row("SELECT EXISTS(SELECT 1 FROM questions)", [], |r| r.get(0))?;
        Ok(held)
    }

    /// Drops a question the server no longer shows this user.
    pub fn forget_question(&self, id: &str) -> Result<(), StoreError> {
        self.conn()?
            .execute("DELETE FROM questions WHERE id = ?1", [id])?;
        Ok(())
    }

    /// Keeps typed text that could not be sent as is.
    pub fn save_draft(
        &self,
        question_id: &str,
        text: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO drafts (question_id, text, reason, updated_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (question_id) DO UPDATE SET text = ?2, reason = ?3, updated_ms = ?4",
            params![question_id, text, reason, now_ms()],
        )?;
        Ok(())
    }

    pub fn draft(&self, question_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn()?
            .query_row(
                "SELECT text FROM drafts WHERE question_id = ?1",
                [question_id],
                |r| r.get(0),
            )
            .optional()?)
    }
}
