//! The durable queues: outgoing webhook deliveries and push jobs. Work is
//! written here in the same transaction as the change that caused it, so a
//! crash or restart loses none; workers drain what is due.

use super::{Conn, DbResult};
use crate::params;

use crate::ids;

/// A claim statement, `head` + `)` + `tail`, for this backend: on
/// PostgreSQL the subquery locks the rows it picks and skips rows another
/// worker holds (`FOR UPDATE SKIP LOCKED`); SQLite has one writer and no
/// such clause.
macro_rules! claim_sql {
    ($conn:expr, $head:literal, $tail:literal) => {
        match $conn.backend() {
            super::Backend::Sqlite => concat!($head, ")", $tail),
            super::Backend::Postgres => concat!($head, " FOR UPDATE SKIP LOCKED)", $tail),
        }
    };
}

// ---- webhook deliveries ----

#[derive(Debug, Clone)]
pub struct DueWebhook {
    pub id: String,
    pub room_id: String,
    pub event: String,
    pub body: String,
    pub attempts: u32,
}

/// Queues one event for a room's webhook; the body bytes are fixed now, so
/// every retry sends the same bytes under the same delivery id.
pub fn enqueue_webhook(
    conn: &Conn,
    room_id: &str,
    event: &str,
    body: &str,
    now_ms: i64,
) -> DbResult<String> {
    let id = ids::new_id("d");
    conn.execute(
        "INSERT INTO webhook_deliveries (id, room_id, event, body, state, next_attempt_ms, created_at)
         VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5)",
        params![id, room_id, event, body, now_ms],
    )?;
    Ok(id)
}

/// Claims up to `limit` due deliveries for this worker: their next attempt
/// moves to `lease_until_ms`, so no other worker (on this or another
/// instance) takes them meanwhile; if this one dies mid-delivery, they are
/// due again when the lease ends. On PostgreSQL the rows another worker is
/// claiming are skipped, not waited for (`FOR UPDATE SKIP LOCKED`).
pub fn claim_webhooks(
    conn: &Conn,
    now_ms: i64,
    lease_until_ms: i64,
    limit: usize,
) -> DbResult<Vec<DueWebhook>> {
    let mut due = conn.query_map(
        claim_sql!(
            conn,
            "UPDATE webhook_deliveries SET next_attempt_ms = ?2 WHERE seq IN (
                 SELECT seq FROM webhook_deliveries
                 WHERE state = 'pending' AND next_attempt_ms <= ?1 ORDER BY seq LIMIT ?3",
            " RETURNING seq, id, room_id, event, body, attempts"
        ),
        params![now_ms, lease_until_ms, limit],
        |r| {
            Ok((
                r.get::<i64>(0)?,
                DueWebhook {
                    id: r.get(1)?,
                    room_id: r.get(2)?,
                    event: r.get(3)?,
                    body: r.get(4)?,
                    attempts: r.get(5)?,
                },
            ))
        },
    )?;
    due.sort_by_key(|(seq, _)| *seq);
    Ok(due.into_iter().map(|(_, d)| d).collect())
}

/// When the next pending delivery is due, if any.
pub fn next_webhook_due_ms(conn: &Conn) -> DbResult<Option<i64>> {
    conn.query_row(
        "SELECT MIN(next_attempt_ms) FROM webhook_deliveries WHERE state = 'pending'",
        &[],
        |r| r.get(0),
    )
}

pub fn mark_webhook_delivered(conn: &Conn, id: &str, attempts: u32) -> DbResult<()> {
    conn.execute(
        "UPDATE webhook_deliveries SET state = 'delivered', attempts = ?2, last_error = NULL WHERE id = ?1",
        params![id, attempts],
    )?;
    Ok(())
}

/// Records a failed attempt: retried at `next_ms`, or given up when `None`.
pub fn mark_webhook_attempt_failed(
    conn: &Conn,
    id: &str,
    attempts: u32,
    next_ms: Option<i64>,
    error: &str,
) -> DbResult<()> {
    match next_ms {
        Some(next) => conn.execute(
            "UPDATE webhook_deliveries SET attempts = ?2, next_attempt_ms = ?3, last_error = ?4 WHERE id = ?1",
            params![id, attempts, next, error],
        )?,
        None => conn.execute(
            "UPDATE webhook_deliveries SET state = 'failed', attempts = ?2, last_error = ?3 WHERE id = ?1",
            params![id, attempts, error],
        )?,
    };
    Ok(())
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct DeliveryStatus {
    pub id: String,
    pub event: String,
    pub state: String,
    pub attempts: u32,
    pub last_error: Option<String>,
}

pub fn webhook_deliveries_of_room(conn: &Conn, room_id: &str) -> DbResult<Vec<DeliveryStatus>> {
    conn.query_map(
        "SELECT id, event, state, attempts, last_error FROM webhook_deliveries WHERE room_id = ?1 ORDER BY seq",
        params![room_id], |r| {
        Ok(DeliveryStatus {
            id: r.get(0)?,
            event: r.get(1)?,
            state: r.get(2)?,
            attempts: r.get(3)?,
            last_error: r.get(4)?,
        })
    })
}

// ---- push jobs ----

/// What a push job carries to the phone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushKind {
    /// A new question: a visible notification with answer actions.
    Question,
    /// The question resolved: a push so the phone replaces or withdraws it.
    Resolved,
}

impl PushKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PushKind::Question => "question",
            PushKind::Resolved => "resolved",
        }
    }
}

pub fn enqueue_push(
    conn: &Conn,
    device_id: &str,
    question_id: &str,
    kind: PushKind,
    now_ms: i64,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO push_jobs (device_id, question_id, kind, state, next_attempt_ms, created_at)
         VALUES (?1, ?2, ?3, 'queued', ?4, ?4)",
        params![device_id, question_id, kind.as_str(), now_ms],
    )?;
    Ok(())
}

/// Devices that were sent (or queued) the question itself: they are the ones
/// that must hear about its resolution.
pub fn devices_that_got(conn: &Conn, question_id: &str) -> DbResult<Vec<String>> {
    conn.query_map(
        "SELECT DISTINCT device_id FROM push_jobs WHERE question_id = ?1 AND kind = 'question'",
        params![question_id],
        |r| r.get(0),
    )
}

#[derive(Debug, Clone)]
pub struct DuePush {
    pub id: i64,
    pub device_id: String,
    pub question_id: String,
    pub kind: PushKind,
    pub attempts: u32,
    /// When the job was queued (ms): the start of its latency.
    pub created_ms: i64,
    /// The end of this claim's lease, as the claim wrote it: the outcome
    /// is recorded only while the job still holds it (see [`mark_push`]).
    pub claimed_until_ms: i64,
    /// An earlier claim ended without an outcome (its lease ran out: the
    /// instance was killed, stalled, or could not write it): it may have
    /// sent the push already. Each recorded outcome ends the claims
    /// (`open_claims` back to 0), so a retry that came due is not one.
    pub after_lapsed_claim: bool,
    /// Sends of this push that went out without an answer so far.
    pub unanswered: u32,
}

/// Claims up to `limit` due push jobs, as [`claim_webhooks`] does, oldest
/// first, in device order: a `resolved` job is not due while its device's
/// `question` job for that question is still queued (waiting for a retry,
/// or in flight under a lease here or on another instance), so the
/// resolution never overtakes the question it resolves.
///
/// `routes`: the platforms this instance delivers to (`None`: every one).
/// A job whose device is of another platform is left for an instance that
/// routes it, unless it has waited [`UNROUTED_AFTER`] (no instance took
/// it: this one claims it, and its worker gives it up as it would any push
/// it cannot route, rather than leave it queued for good); a job whose
/// device is gone is claimed (and given up) by any.
pub fn claim_pushes(
    conn: &Conn,
    now_ms: i64,
    lease_until_ms: i64,
    limit: usize,
    routes: Option<&[&str]>,
) -> DbResult<Vec<DuePush>> {
    let (routable, mut params) = routable_clause(routes, now_ms, 4);
    let sql = format!(
        "UPDATE push_jobs SET next_attempt_ms = ?2, open_claims = open_claims + 1 WHERE id IN (
             SELECT p.id FROM push_jobs p
             WHERE p.state = 'queued' AND p.next_attempt_ms <= ?1{routable}
               AND NOT (p.kind = 'resolved' AND EXISTS (
                   SELECT 1 FROM push_jobs b WHERE b.state = 'queued' AND b.kind = 'question'
                     AND b.question_id = p.question_id AND b.device_id = p.device_id))
             ORDER BY p.id LIMIT ?3{}) \
         RETURNING id, device_id, question_id, kind, attempts, created_at, open_claims, unanswered",
        match conn.backend() {
            super::Backend::Sqlite => "",
            super::Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    );
    let mut all = params![now_ms, lease_until_ms, limit].to_vec();
    all.append(&mut params);
    let mut due = conn.query_map(&sql, &all, |r| {
        let kind: String = r.get(3)?;
        Ok(DuePush {
            id: r.get(0)?,
            device_id: r.get(1)?,
            question_id: r.get(2)?,
            kind: if kind == "resolved" {
                PushKind::Resolved
            } else {
                PushKind::Question
            },
            attempts: r.get(4)?,
            created_ms: r.get(5)?,
            claimed_until_ms: lease_until_ms,
            after_lapsed_claim: r.get::<i64>(6)? > 1,
            unanswered: r.get(7)?,
        })
    })?;
    due.sort_by_key(|d| d.id);
    Ok(due)
}

/// When the next claimable push job is due, if any (a resolution waiting
/// for its question push is not: the question's own time counts).
/// Only jobs this instance would claim count ([`claim_pushes`]'s `routes`).
pub fn next_push_due_ms(
    conn: &Conn,
    now_ms: i64,
    routes: Option<&[&str]>,
) -> DbResult<Option<i64>> {
    let (routable, params) = routable_clause(routes, now_ms, 1);
    conn.query_row(
        &format!(
            "SELECT MIN(p.next_attempt_ms) FROM push_jobs p WHERE p.state = 'queued'{routable}
               AND NOT (p.kind = 'resolved' AND EXISTS (
                   SELECT 1 FROM push_jobs b WHERE b.state = 'queued' AND b.kind = 'question'
                     AND b.question_id = p.question_id AND b.device_id = p.device_id))"
        ),
        &params,
        |r| r.get(0),
    )
}

/// How long a push of a platform an instance has no gateway for is left to
/// the instances that have one (on PostgreSQL): past it, no instance took
/// it, and any claims it and gives it up ("no … transport configured"),
/// rather than leave it queued for good.
pub const UNROUTED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// The condition (on `push_jobs p`) that a job's device is of one of
/// `routes`, or gone, or that it has waited [`UNROUTED_AFTER`] by `now_ms`;
/// its parameters numbered from `first`.
fn routable_clause<'a>(
    routes: Option<&'a [&'a str]>,
    now_ms: i64,
    first: usize,
) -> (String, Vec<super::sql::Param<'a>>) {
    let Some(routes) = routes else {
        return (String::new(), Vec::new());
    };
    let unrouted_before_ms = now_ms - UNROUTED_AFTER.as_millis() as i64;
    let mut params = vec![super::sql::Param::Int(unrouted_before_ms)];
    let other_platform = if routes.is_empty() {
        String::new()
    } else {
        let marks: Vec<String> = (first + 1..first + 1 + routes.len())
            .map(|i| format!("?{i}"))
            .collect();
        params.extend(routes.iter().map(|r| super::sql::ToParam::to_param(*r)));
        format!(" AND d.platform NOT IN ({})", marks.join(", "))
    };
    (
        format!(
            " AND (p.created_at < ?{first} OR NOT EXISTS \
             (SELECT 1 FROM devices d WHERE d.id = p.device_id{other_platform}))"
        ),
        params,
    )
}

/// The devices of a batch, in one query per 500 ids.
pub fn devices_by_ids(
    conn: &Conn,
    ids: &[&str],
) -> DbResult<std::collections::HashMap<String, crate::store::identity::Device>> {
    let mut out = std::collections::HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "SELECT {} FROM devices WHERE id IN ({})",
            crate::store::identity::DEVICE_COLUMNS,
            marks.join(", ")
        );
        let params: Vec<super::sql::Param> = chunk
            .iter()
            .map(|id| super::sql::ToParam::to_param(*id))
            .collect();
        for d in conn.query_map(&sql, &params, crate::store::identity::device_from_row)? {
            out.insert(d.id.clone(), d);
        }
    }
    Ok(out)
}

/// Where a push job stands (`push_jobs.state`). Webhook deliveries have
/// states of their own (`webhook_deliveries.state`: `pending`, `delivered`,
/// `failed`), kept as they were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushJobState {
    /// Waiting for its attempt (the first, or a retry at `next_attempt_ms`).
    Queued,
    /// The gateway took it.
    Sent,
    /// Given up: refused for good, or out of attempts.
    Failed,
}

impl PushJobState {
    /// The word stored in `push_jobs.state`.
    pub fn as_str(self) -> &'static str {
        match self {
            PushJobState::Queued => "queued",
            PushJobState::Sent => "sent",
            PushJobState::Failed => "failed",
        }
    }
}

/// Records a push attempt of the claim that ends at `claimed_until_ms`:
/// sent, failed, or queued again (retry at `next_ms`). Only while that
/// claim still holds the job (queued, its lease as the claim wrote it):
/// an instance that stalled past its lease, whose jobs another claimed
/// and recorded meanwhile, must not undo that record (a sent push queued
/// again would go a third time). False: the claim was lost, nothing
/// written.
pub fn mark_push(
    conn: &Conn,
    id: i64,
    claimed_until_ms: i64,
    mark: PushMark<'_>,
) -> DbResult<bool> {
    let n = conn.execute(
        "UPDATE push_jobs SET state = ?2, attempts = ?3, next_attempt_ms = ?4, last_error = ?5, \
         open_claims = 0, unanswered = ?7 WHERE id = ?1 AND state = 'queued' AND next_attempt_ms = ?6",
        params![
            id,
            mark.state.as_str(),
            mark.attempts,
            mark.next_ms,
            mark.error,
            claimed_until_ms,
            mark.unanswered
        ],
    )?;
    Ok(n > 0)
}

/// What [`mark_push`] writes.
#[derive(Debug, Clone, Copy)]
pub struct PushMark<'a> {
    pub state: PushJobState,
    pub attempts: u32,
    pub next_ms: i64,
    pub error: Option<&'a str>,
    /// Sends that went out without an answer ([`DuePush::unanswered`]).
    pub unanswered: u32,
}

/// The question pushes queued for a question, per device platform.
pub fn question_pushes_by_platform(
    conn: &Conn,
    question_id: &str,
) -> DbResult<Vec<(String, usize)>> {
    conn.query_map(
        "SELECT d.platform, COUNT(*) FROM push_jobs j JOIN devices d ON d.id = j.device_id \
         WHERE j.question_id = ?1 AND j.kind = 'question' GROUP BY d.platform ORDER BY d.platform",
        params![question_id],
        |r| Ok((r.get(0)?, r.get::<i64>(1)? as usize)),
    )
}

/// Makes the queued, unclaimed push jobs whose last error starts with
/// `prefix` (held for a gateway outage, `push::outage::held_prefix`) due
/// at `now_ms`: the gateway answers again. How many.
pub fn release_held_pushes(conn: &Conn, prefix: &str, now_ms: i64) -> DbResult<usize> {
    let escaped = prefix
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    conn.execute(
        "UPDATE push_jobs SET next_attempt_ms = ?2 WHERE state = 'queued' AND open_claims = 0 \
         AND next_attempt_ms > ?2 AND last_error LIKE ?1 ESCAPE '\\'",
        params![format!("{escaped}%"), now_ms],
    )
}

/// Records a push the gateway accepted as sent while the job is still
/// queued, whoever claims it now (see `push::record_one`). False: it was
/// already recorded (sent, or failed), nothing written.
pub fn mark_push_sent(conn: &Conn, id: i64, attempts: u32, now_ms: i64) -> DbResult<bool> {
    let n = conn.execute(
        "UPDATE push_jobs SET state = 'sent', attempts = ?2, next_attempt_ms = ?3, last_error = NULL, \
         open_claims = 0 WHERE id = ?1 AND state = 'queued'",
        params![id, attempts, now_ms],
    )?;
    Ok(n > 0)
}

/// A push job's state (`queued`, `sent`, `failed`), if it still exists.
pub fn push_state(conn: &Conn, id: i64) -> DbResult<Option<String>> {
    conn.query_opt(
        "SELECT state FROM push_jobs WHERE id = ?1",
        params![id],
        |r| r.get(0),
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushJobRow {
    pub device_id: String,
    pub question_id: String,
    pub kind: String,
    pub state: String,
    pub attempts: u32,
}

/// Every push job of a question, oldest first (for tests and the admin).
pub fn push_jobs_of(conn: &Conn, question_id: &str) -> DbResult<Vec<PushJobRow>> {
    conn.query_map(
        "SELECT device_id, question_id, kind, state, attempts FROM push_jobs WHERE question_id = ?1 ORDER BY id",
        params![question_id], |r| {
        Ok(PushJobRow {
            device_id: r.get(0)?,
            question_id: r.get(1)?,
            kind: r.get(2)?,
            state: r.get(3)?,
            attempts: r.get(4)?,
        })
    })
}

pub fn device_exists(conn: &Conn, device_id: &str) -> DbResult<bool> {
    Ok(conn
        .query_opt(
            "SELECT 1 FROM devices WHERE id = ?1",
            params![device_id],
            |_| Ok(()),
        )?
        .is_some())
}
