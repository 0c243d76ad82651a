//! Questions, and the idempotency keys of answers.

use super::{Conn, DbResult};
use crate::params;
use qp_core::protocol::{Question, QuestionState};

/// A question with the server-side facts that are not on the wire.
#[derive(Debug, Clone)]
pub struct StoredQuestion {
    pub question: Question,
    pub room_id: String,
    pub agent_id: String,
}

fn to_json(q: &Question) -> String {
    serde_json::to_string(q).expect("a Question always serializes")
}

fn from_row(r: &super::sql::Row) -> DbResult<StoredQuestion> {
    let body: String = r.get(0)?;
    let question = serde_json::from_str(&body).map_err(|e| super::DbError::Column {
        index: 0,
        message: format!("a stored question does not parse: {e}"),
    })?;
    Ok(StoredQuestion {
        question,
        room_id: r.get(1)?,
        agent_id: r.get(2)?,
    })
}

pub fn insert(conn: &Conn, q: &Question, room_id: &str, agent_id: &str) -> DbResult<()> {
    conn.execute(
        "INSERT INTO questions (id, room_id, agent_id, state, scope, target_user_id, correlation_id,
                                expires_at, created_at, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            q.id,
            room_id,
            agent_id,
            q.state.as_str(),
            q.responder_scope.as_str(),
            q.target_user_id,
            q.correlation_id,
            q.expires_at.timestamp(),
            q.created_at.timestamp(),
            to_json(q),
        ],
    )?;
    Ok(())
}

pub fn get(conn: &Conn, id: &str) -> DbResult<Option<StoredQuestion>> {
    conn.query_opt(
        "SELECT body, room_id, agent_id FROM questions WHERE id = ?1",
        params![id],
        from_row,
    )
}

/// Writes a question that left `pending`. The `state = 'pending'` guard makes
/// the first resolution win: returns false (and writes nothing) when the row
/// was already terminal.
pub fn save_resolution(conn: &Conn, q: &Question) -> DbResult<bool> {
    let n = conn.execute(
        "UPDATE questions SET state = ?2, body = ?3 WHERE id = ?1 AND state = 'pending'",
        params![q.id, q.state.as_str(), to_json(q)],
    )?;
    Ok(n == 1)
}

/// Ids of pending questions whose deadline has passed.
pub fn overdue_ids(conn: &Conn, now_secs: i64, limit: usize) -> DbResult<Vec<String>> {
    conn.query_map(
        "SELECT id FROM questions WHERE state = 'pending' AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2",
        params![now_secs, limit as i64], |r| r.get(0))
}

/// Serializes the rest of the transaction with every other transaction of
/// this agent that takes the same lock (PostgreSQL: a transaction-scoped
/// advisory lock; SQLite has one writer already).
pub fn lock_agent(conn: &Conn, agent_id: &str) -> DbResult<()> {
    if conn.backend() == super::Backend::Postgres {
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(?1, 0))",
            params![agent_id],
        )?;
    }
    Ok(())
}

pub fn count_pending_for_agent(conn: &Conn, agent_id: &str) -> DbResult<i64> {
    conn.query_row(
        "SELECT COUNT(*) FROM questions WHERE agent_id = ?1 AND state = 'pending'",
        params![agent_id],
        |r| r.get(0),
    )
}

/// What an agent lists: its own questions, newest first.
pub fn list_for_agent(
    conn: &Conn,
    agent_id: &str,
    state: Option<QuestionState>,
    created_since: Option<i64>,
    limit: usize,
) -> DbResult<Vec<Question>> {
    let rows = conn.query_map(
        "SELECT body, room_id, agent_id FROM questions
         WHERE agent_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR state = ?2) AND (CAST(?3 AS BIGINT) IS NULL OR created_at >= ?3)
         ORDER BY seq DESC LIMIT ?4",
        params![
            agent_id,
            state.map(|s| s.as_str()),
            created_since,
            limit as i64
        ],
        from_row,
    )?;
    Ok(rows.into_iter().map(|s| s.question).collect())
}

/// What a user may answer now: direct-to-them and room-scope in their rooms,
/// pending and not past the deadline, newest first.
pub fn pending_for_user(
    conn: &Conn,
    user_id: &str,
    now_secs: i64,
    limit: usize,
) -> DbResult<Vec<Question>> {
    let rows = conn.query_map(
        "SELECT q.body, q.room_id, q.agent_id FROM questions q
         JOIN memberships m ON m.room_id = q.room_id AND m.user_id = ?1
         WHERE q.state = 'pending' AND q.expires_at > ?2
           AND (q.scope = 'room' OR q.target_user_id = ?1)
         ORDER BY q.seq DESC LIMIT ?3",
        params![user_id, now_secs, limit as i64],
        from_row,
    )?;
    Ok(rows.into_iter().map(|s| s.question).collect())
}

/// A stored answer result for `(user, Idempotency-Key)`.
pub struct KeyedResult {
    pub question_id: String,
    pub status: u16,
    pub response: String,
}

/// The stored result of `(user, key)` if it was stored after `since` (an
/// older key has expired, whether or not it was purged yet).
pub fn keyed_answer(
    conn: &Conn,
    user_id: &str,
    key: &str,
    since: i64,
) -> DbResult<Option<KeyedResult>> {
    conn.query_opt(
        "SELECT question_id, status, response FROM answer_keys
         WHERE user_id = ?1 AND key = ?2 AND created_at > ?3",
        params![user_id, key, since],
        |r| {
            Ok(KeyedResult {
                question_id: r.get(0)?,
                status: r.get(1)?,
                response: r.get(2)?,
            })
        },
    )
}

/// Stores the result under `(user, key)`; a live earlier row wins, one
/// stored before `expired_before` (expired, not yet purged) is replaced.
pub fn save_keyed_answer(
    conn: &Conn,
    user_id: &str,
    key: &str,
    result: &KeyedResult,
    now_secs: i64,
    expired_before: i64,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO answer_keys (user_id, key, question_id, status, response, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (user_id, key) DO UPDATE SET question_id = excluded.question_id,
             status = excluded.status, response = excluded.response, created_at = excluded.created_at
         WHERE answer_keys.created_at <= ?7",
        params![
            user_id,
            key,
            result.question_id,
            result.status,
            result.response,
            now_secs,
            expired_before
        ],
    )?;
    Ok(())
}

/// Deletes the keys stored at or before `before`; returns how many.
pub fn purge_answer_keys(conn: &Conn, before: i64) -> DbResult<usize> {
    conn.execute(
        "DELETE FROM answer_keys WHERE created_at <= ?1",
        params![before],
    )
}
