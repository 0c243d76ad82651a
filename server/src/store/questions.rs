//! Questions, and the idempotency keys of answers.

use std::sync::atomic::{AtomicI64, Ordering};

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
        source: super::sql::ValueError::Json {
            what: "question",
            reason: e.to_string(),
        },
    })?;
    Ok(StoredQuestion {
        question,
        room_id: r.get(1)?,
        agent_id: r.get(2)?,
    })
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

/// The history's query: each of the person's rooms read through
/// `questions_by_room_seq` (room, then `seq` below the cursor), not every
/// question of the room filtered row by row.
const HISTORY_FOR_USER: &str = "SELECT q.body, q.seq FROM questions q
     JOIN memberships m ON m.room_id = q.room_id AND m.user_id = ?1
     WHERE q.seq < ?2 AND (q.scope = 'room' OR q.target_user_id = ?1)
     ORDER BY q.seq DESC LIMIT ?3";

/// The questions `user_id` could see, resolved included, newest first:
/// the rule of [`pending_for_user`] without its state filter (a member of
/// the room, and the room's or addressed to them). `before` pages on: only
/// questions older than that `seq`. Each with its `seq`, the cursor of the
/// next page.
pub fn history_for_user(
    conn: &Conn,
    user_id: &str,
    before: Option<i64>,
    limit: usize,
) -> DbResult<Vec<(i64, Question)>> {
    let rows = conn.query_map(
        HISTORY_FOR_USER,
        params![user_id, before.unwrap_or(i64::MAX), limit as i64],
        |r| {
            let body: String = r.get(0)?;
            let q = serde_json::from_str(&body).map_err(|e| super::DbError::Column {
                index: 0,
                source: super::sql::ValueError::Json {
                    what: "question",
                    reason: e.to_string(),
                },
            })?;
            Ok((r.get(1)?, q))
        },
    )?;
    Ok(rows)
}

/// A stored answer result for `(user, Idempotency-Key)`.
pub struct KeyedResult {
    pub question_id: String,
    /// The protocol refused the answer (`response` is the error's body);
    /// otherwise `response` is the question as it then stood.
    pub refused: bool,
    pub response: String,
}

/// `answer_keys.status` keeps the HTTP status the first response had (the
/// column's meaning since it was made): these two values, nothing else.
const KEYED_ANSWERED: i64 = 200;
const KEYED_REFUSED: i64 = 422;

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
                refused: r.get::<i64>(1)? == KEYED_REFUSED,
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
            if result.refused {
                KEYED_REFUSED
            } else {
                KEYED_ANSWERED
            },
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

// ---- the question loop, in as few statements as each engine allows ----

/// SQL: the remembered token `?N` still exists (NULL: it was checked by
/// this request already). Every first statement of the loop carries it, so
/// a revoked token is refused from the very next request
/// (`crate::token_cache`).
macro_rules! token_live {
    ($n:literal) => {
        concat!(
            "(CAST(?",
            $n,
            " AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM tokens WHERE hash = ?",
            $n,
            "))"
        )
    };
}

/// What an ask must know before it writes, in one statement.
pub struct AskPlace {
    /// False: the remembered token was revoked.
    pub token_live: bool,
    /// The room (without its webhook), if the code names one.
    pub room: Option<crate::store::identity::Room>,
    pub agent_may_use: bool,
    /// The target, if any, is a member of the room.
    pub target_is_member: bool,
    /// The agent was made by a person's sign-in: that person's name.
    pub signed_in_by: Option<String>,
}

pub fn ask_place(
    conn: &Conn,
    room_code: &str,
    agent_id: &str,
    target_user_id: Option<&str>,
    token: Option<&str>,
) -> DbResult<AskPlace> {
    conn.query_row(
        concat!(
            "SELECT ",
            token_live!("4"),
            ", r.id, r.code, r.name,
               EXISTS (SELECT 1 FROM agent_rooms ar WHERE ar.agent_id = ?2 AND ar.room_id = r.id),
               (CAST(?3 AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM memberships m
                   WHERE m.room_id = r.id AND m.user_id = ?3)),
               (SELECT u.display_name FROM agents a JOIN users u ON u.id = a.signed_in_by
                   WHERE a.id = ?2)
             FROM (SELECT 1 AS one) x LEFT JOIN rooms r ON r.code = ?1"
        ),
        params![
            room_code.to_ascii_uppercase(),
            agent_id,
            target_user_id,
            token
        ],
        |r| {
            let room = match r.get::<Option<String>>(1)? {
                Some(id) => Some(crate::store::identity::Room {
                    id,
                    code: r.get(2)?,
                    name: r.get(3)?,
                    webhook: None,
                }),
                None => None,
            };
            Ok(AskPlace {
                token_live: r.get(0)?,
                room,
                agent_may_use: r.get::<Option<bool>>(4)?.unwrap_or(false),
                target_is_member: r.get::<Option<bool>>(5)?.unwrap_or(false),
                signed_in_by: r.get(6)?,
            })
        },
    )
}

/// The push jobs of a new question `?1` in room `?2`: every member's
/// devices that may receive pushes, or only the target's (`?3`, direct
/// questions), queued at `?4`.
const QUESTION_PUSHES: &str =
    "SELECT d.id, CAST(?1 AS TEXT), 'question', 'queued', CAST(?4 AS BIGINT), CAST(?4 AS BIGINT)
     FROM devices d
     WHERE d.user_id IN (SELECT m.user_id FROM memberships m
                         WHERE m.room_id = ?2 AND (CAST(?3 AS TEXT) IS NULL OR m.user_id = ?3))
       AND ";

/// What [`insert_asked`] did.
pub enum Asked {
    /// The agent has `max_pending` pending questions already: nothing written.
    OverQuota,
    /// Written, with this many push jobs queued.
    Queued { pushes: usize },
}

/// Writes a new question and its push jobs in one transaction, under the
/// agent's pending quota. SQLite: BEGIN, the question (with the quota in its
/// WHERE), the push jobs, COMMIT (SQLite has one writer, so the count is
/// exact). PostgreSQL: see `insert_asked_pg`. Opens its own transactions:
/// never call it inside one.
pub fn insert_asked(
    conn: &Conn,
    q: &Question,
    room_id: &str,
    agent_id: &str,
    max_pending: i64,
    now_ms: i64,
) -> DbResult<Asked> {
    let target = match q.responder_scope {
        qp_core::protocol::ResponderScope::Direct => q.target_user_id.as_deref(),
        qp_core::protocol::ResponderScope::Room => None,
    };
    let json = to_json(q);
    if conn.backend() == super::Backend::Postgres {
        return insert_asked_pg(
            conn,
            q,
            room_id,
            target,
            agent_id,
            &json,
            max_pending,
            now_ms,
        );
    }
    let tx = conn.transaction()?;
    let n = tx.execute(
        "INSERT INTO questions (id, room_id, agent_id, state, scope, target_user_id, correlation_id,
                                expires_at, created_at, body)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
         WHERE (SELECT COUNT(*) FROM questions WHERE agent_id = ?3 AND state = 'pending') < ?11",
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
            json,
            max_pending,
        ],
    )?;
    if n == 0 {
        return Ok(Asked::OverQuota); // rolled back
    }
    let pushes = tx.execute(
        &format!(
            "INSERT INTO push_jobs (device_id, question_id, kind, state, next_attempt_ms, created_at)
             {QUESTION_PUSHES}{} ORDER BY d.user_id, d.created_at, d.id",
            crate::store::identity::DEVICE_MAY_RECEIVE
        ),
        params![q.id, room_id, target, now_ms],
    )?;
    tx.commit()?;
    Ok(Asked::Queued { pushes })
}

/// How an ask on PostgreSQL holds the quota exact across instances without
/// running one agent's asks one at a time.
///
/// Every ask takes the agent's advisory lock, in a transaction, before its
/// next statement counts and writes (so that statement's snapshot, taken
/// after the lock was granted, sees every ask that had released it), and
/// holds the lock until it commits:
///
/// - **Shared, far from the quota.** Asks do not wait for each other (their
///   commits share WAL flushes). An ask writes only if the pending count it
///   sees plus `max_connections` is still under the quota. The asks its count
///   cannot see are the ones holding the lock (shared) when its snapshot was
///   taken, each a transaction on one of the server's at most
///   `max_connections` backends. So at any time the pending count is at most
///   what the writer whose snapshot is the latest saw, plus
///   `max_connections`: under the quota. (Rows only ever leave `pending`
///   after they are written, which only lowers the count.)
/// - **Exclusive, near it.** Otherwise the ask (again, in a new transaction)
///   takes the lock exclusive: it waits for every shared ask in flight to
///   commit, keeps new ones out, and then counts exactly.
///
/// BEGIN, the lock, the statement, COMMIT: the lock cannot go into the
/// statement, whose snapshot would then be taken before the lock was
/// granted (an ask could count, wait for the lock while exclusive asks fill
/// the quota, then write on its old count). The transactions are READ
/// COMMITTED (`Conn::transaction` says so), so each statement's snapshot
/// is its own. Far from the quota an ask costs BEGIN, the lock, the
/// statement, COMMIT; one that tried the shared lock in vain costs a
/// ROLLBACK and the four again.
#[allow(clippy::too_many_arguments)]
fn insert_asked_pg(
    conn: &Conn,
    q: &Question,
    room_id: &str,
    target: Option<&str>,
    agent_id: &str,
    json: &str,
    max_pending: i64,
    now_ms: i64,
) -> DbResult<Asked> {
    let (state, scope) = (q.state.as_str(), q.responder_scope.as_str());
    let (expires_at, created_at) = (q.expires_at.timestamp(), q.created_at.timestamp());
    let args = params![
        q.id,
        room_id,
        target,
        now_ms,
        agent_id,
        state,
        scope,
        q.target_user_id,
        q.correlation_id,
        expires_at,
        created_at,
        json,
        max_pending,
    ];
    let known = MAX_CONNECTIONS_SEEN.load(Ordering::Relaxed);
    // Shared first, unless the quota is at or under max_connections (then
    // the agent is always near it).
    let notice = super::events::asked_payload(q);
    if known == 0 || max_pending > known {
        if let Some(asked) = pg_try_ask(
            conn,
            PgQuotaLock::Shared,
            agent_id,
            args,
            max_pending,
            &notice,
        )? {
            return Ok(asked);
        }
    }
    let asked = pg_try_ask(
        conn,
        PgQuotaLock::Exclusive,
        agent_id,
        args,
        max_pending,
        &notice,
    )?;
    Ok(asked.unwrap_or(Asked::OverQuota)) // an exact count always decides
}

/// One try of the ask in a transaction of its own, under `lock`: what it
/// decided, or `None` (rolled back) when a shared try found the agent near
/// the quota.
fn pg_try_ask(
    conn: &Conn,
    lock: PgQuotaLock,
    agent_id: &str,
    args: &[super::sql::Param],
    max_pending: i64,
    asked: &str,
) -> DbResult<Option<Asked>> {
    let tx = conn.transaction()?;
    // The lock's statement also queues the notice that wakes the other
    // instances' feed long-polls: PostgreSQL sends it only if this
    // transaction commits, and it costs no round trip of its own.
    tx.execute(
        match lock {
            PgQuotaLock::Shared => {
                "SELECT pg_advisory_xact_lock_shared(hashtextextended(?1, 0)), pg_notify(?2, ?3)"
            }
            PgQuotaLock::Exclusive => {
                "SELECT pg_advisory_xact_lock(hashtextextended(?1, 0)), pg_notify(?2, ?3)"
            }
        },
        params![agent_id, super::events::CHANNEL, asked],
    )?;
    let (pending, written, pushes, max_connections): (i64, i64, i64, i64) =
        tx.query_row(pg_ask(lock), args, |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    MAX_CONNECTIONS_SEEN.store(max_connections, Ordering::Relaxed);
    if written == 1 {
        tx.commit()?;
        return Ok(Some(Asked::Queued {
            pushes: pushes as usize,
        }));
    }
    // Nothing written: rolled back.
    Ok((pending >= max_pending).then_some(Asked::OverQuota))
}

/// The server's `max_connections` as the last ask saw it: only a hint of
/// which lock to try first (the statement reads the current value itself),
/// so a quota at or under it goes straight to the exclusive lock instead of
/// trying the shared one in vain every time. Stale either way (a restart
/// changed it), it costs an ask a try, never the quota.
static MAX_CONNECTIONS_SEEN: AtomicI64 = AtomicI64::new(0);

/// How [`insert_asked_pg`] holds the agent's quota lock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PgQuotaLock {
    /// The count keeps `max_connections` of headroom.
    Shared,
    /// The count is exact.
    Exclusive,
}

/// The ask's statement on PostgreSQL, under the agent's lock: the pending
/// count, the question (under the quota, with the lock's headroom), its push
/// jobs; returns the count, the questions written (0 or 1), the push jobs
/// queued and the server's `max_connections`.
fn pg_ask(lock: PgQuotaLock) -> &'static str {
    // Built once: the text is the prepared statement's cache key.
    static STATEMENTS: std::sync::OnceLock<[String; 2]> = std::sync::OnceLock::new();
    let [shared, exclusive] =
        STATEMENTS.get_or_init(|| [PgQuotaLock::Shared, PgQuotaLock::Exclusive].map(pg_ask_text));
    match lock {
        PgQuotaLock::Shared => shared,
        PgQuotaLock::Exclusive => exclusive,
    }
}

fn pg_ask_text(lock: PgQuotaLock) -> String {
    let headroom = match lock {
        PgQuotaLock::Shared => "CAST(current_setting('max_connections') AS BIGINT)",
        PgQuotaLock::Exclusive => "CAST(0 AS BIGINT)",
    };
    format!(
        "WITH c AS (SELECT COUNT(*) AS n FROM questions WHERE agent_id = ?5 AND state = 'pending'),
         q AS (
             INSERT INTO questions (id, room_id, agent_id, state, scope, target_user_id,
                                    correlation_id, expires_at, created_at, body)
             SELECT ?1, ?2, ?5, ?6, ?7, ?8, ?9, CAST(?10 AS BIGINT), CAST(?11 AS BIGINT), ?12
             WHERE (SELECT n FROM c) + {headroom} < ?13
             RETURNING id),
         p AS (
             INSERT INTO push_jobs (device_id, question_id, kind, state, next_attempt_ms, created_at)
             {QUESTION_PUSHES}{} AND EXISTS (SELECT 1 FROM q)
             ORDER BY d.user_id, d.created_at, d.id
             RETURNING 1)
         SELECT (SELECT n FROM c), (SELECT COUNT(*) FROM q), (SELECT COUNT(*) FROM p),
                CAST(current_setting('max_connections') AS BIGINT)",
        crate::store::identity::DEVICE_MAY_RECEIVE
    )
}

/// A question read for an answer, with everything the answer needs, in one
/// statement.
pub struct AnswerPlace {
    pub token_live: bool,
    pub stored: Option<StoredQuestion>,
    /// The answering user is a member of the question's room.
    pub member: bool,
    /// The question's room, webhook included.
    pub room: Option<crate::store::identity::Room>,
}

pub fn answer_place(
    conn: &Conn,
    id: &str,
    user_id: &str,
    token: Option<&str>,
) -> DbResult<AnswerPlace> {
    conn.query_row(
        &format!(
            "SELECT q.body, q.room_id, q.agent_id, {},
                    EXISTS (SELECT 1 FROM memberships m WHERE m.room_id = q.room_id AND m.user_id = ?2),
                    {}
             FROM (SELECT 1 AS one) x LEFT JOIN questions q ON q.id = ?1
             LEFT JOIN rooms r ON r.id = q.room_id",
            token_live!("3"),
            crate::store::identity::ROOM_COLUMNS
                .split(", ")
                .map(|c| format!("r.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        params![id, user_id, token],
        |r| {
            let found = r.get::<Option<String>>(0)?.is_some();
            Ok(AnswerPlace {
                token_live: r.get(3)?,
                stored: if found { Some(from_row(r)?) } else { None },
                member: r.get::<Option<bool>>(4)?.unwrap_or(false),
                room: if found {
                    Some(crate::store::identity::room_at(r, 5)?)
                } else {
                    None
                },
            })
        },
    )
}

/// A question, and whether the remembered token still exists, in one
/// statement (the long-poll's read).
pub fn get_checked(
    conn: &Conn,
    id: &str,
    token: Option<&str>,
) -> DbResult<(bool, Option<StoredQuestion>)> {
    if token.is_none() {
        return Ok((true, get(conn, id)?));
    }
    conn.query_row(
        concat!(
            "SELECT q.body, q.room_id, q.agent_id, ",
            token_live!("2"),
            " FROM (SELECT 1 AS one) x LEFT JOIN questions q ON q.id = ?1"
        ),
        params![id, token],
        |r| {
            let found = r.get::<Option<String>>(0)?.is_some();
            Ok((r.get(3)?, if found { Some(from_row(r)?) } else { None }))
        },
    )
}

/// A webhook event to queue with a resolution: delivery id, event name,
/// body bytes.
pub struct QueuedEvent<'a> {
    pub id: &'a str,
    pub event: &'a str,
    pub body: &'a str,
}

/// What [`resolve`] wrote: `None` when the question was terminal already
/// (nothing written).
pub struct Resolved {
    pub webhook: bool,
    pub pushes: usize,
}

/// Writes a resolution (first one wins: `state = 'pending'` in the
/// UPDATE), the room's webhook event if given, and a resolution push to
/// every device that got the question; on PostgreSQL the other instances'
/// wake-up, carrying the question, goes out when this commits. `json` is
/// `q` serialized (once, by the caller). PostgreSQL: one statement (atomic
/// on its own; the caller may wrap it in a transaction). SQLite: one
/// statement each, inside the caller's transaction.
pub fn resolve(
    conn: &Conn,
    q: &Question,
    json: &str,
    room_id: &str,
    event: Option<QueuedEvent<'_>>,
    now_ms: i64,
) -> DbResult<Option<Resolved>> {
    let (event_id, event_name, event_body) = match &event {
        Some(e) => (Some(e.id), Some(e.event), Some(e.body)),
        None => (None, None, None),
    };
    match conn.backend() {
        super::Backend::Postgres => {
            let payload = super::events::resolved_payload(&q.id, json);
            let (changed, webhook, pushes): (i64, i64, i64) = conn.query_row(
                "WITH u AS (
                     UPDATE questions SET state = ?2, body = ?3 WHERE id = ?1 AND state = 'pending'
                     RETURNING id),
                 w AS (
                     INSERT INTO webhook_deliveries (id, room_id, event, body, state, next_attempt_ms, created_at)
                     SELECT ?4, ?5, ?6, ?7, 'pending', CAST(?8 AS BIGINT), CAST(?8 AS BIGINT) FROM u
                     WHERE CAST(?7 AS TEXT) IS NOT NULL
                     RETURNING 1),
                 p AS (
                     INSERT INTO push_jobs (device_id, question_id, kind, state, next_attempt_ms, created_at)
                     SELECT DISTINCT j.device_id, u.id, 'resolved', 'queued', CAST(?8 AS BIGINT), CAST(?8 AS BIGINT)
                     FROM u JOIN push_jobs j ON j.question_id = u.id AND j.kind = 'question'
                     RETURNING 1)
                 SELECT (SELECT COUNT(*) FROM u), (SELECT COUNT(*) FROM w), (SELECT COUNT(*) FROM p),
                        (SELECT COUNT(pg_notify(?9, ?10)) FROM u)",
                params![
                    q.id,
                    q.state.as_str(),
                    json,
                    event_id,
                    room_id,
                    event_name,
                    event_body,
                    now_ms,
                    super::events::CHANNEL,
                    payload,
                ],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            Ok((changed == 1).then_some(Resolved {
                webhook: webhook > 0,
                pushes: pushes as usize,
            }))
        }
        super::Backend::Sqlite => {
            let n = conn.execute(
                "UPDATE questions SET state = ?2, body = ?3 WHERE id = ?1 AND state = 'pending'",
                params![q.id, q.state.as_str(), json],
            )?;
            if n != 1 {
                return Ok(None);
            }
            if let Some(e) = &event {
                conn.execute(
                    "INSERT INTO webhook_deliveries (id, room_id, event, body, state, next_attempt_ms, created_at)
                     VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5)",
                    params![e.id, room_id, e.event, e.body, now_ms],
                )?;
            }
            let pushes = conn.execute(
                "INSERT INTO push_jobs (device_id, question_id, kind, state, next_attempt_ms, created_at)
                 SELECT DISTINCT device_id, ?1, 'resolved', 'queued', ?2, ?2 FROM push_jobs
                 WHERE question_id = ?1 AND kind = 'question'",
                params![q.id, now_ms],
            )?;
            Ok(Some(Resolved {
                webhook: event.is_some(),
                pushes,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    /// A page of history reads the person's rooms by (room, seq): on a
    /// server with many questions, the room's index by state would have
    /// SQLite read every question of the room to find those below the
    /// cursor. Fails before migration 16 (the plan names questions_by_room).
    #[test]
    fn a_page_of_history_reads_the_room_and_seq_index_on_sqlite() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        let mut plan = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::HISTORY_FOR_USER))
            .unwrap();
        let steps: Vec<String> = plan
            .query_map(rusqlite::params!["u_1", 10, 20], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            steps
                .iter()
                .any(|s| s.contains("questions_by_room_seq (room_id=? AND seq<?)")),
            "the history does not read (room_id, seq): {steps:?}"
        );
    }
}
