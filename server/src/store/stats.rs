//! What the operator's probes read: the database answering at all, and the
//! counts `/metrics` shows.

use super::{Conn, DbResult};

/// Questions per state, and the push and webhook queue counts.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// `(state, count)` for each state that has questions.
    pub questions: Vec<(String, i64)>,
    pub push_queued: i64,
    pub push_failed: i64,
    pub webhook_pending: i64,
    pub webhook_failed: i64,
}

/// Full-table counts: callers cache them (`metrics::COUNTS_MAX_AGE`).
pub fn counts(conn: &Conn) -> DbResult<Counts> {
    let questions = conn.query_map(
        "SELECT state, COUNT(*) FROM questions GROUP BY state",
        &[],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let one = |sql: &str| conn.query_row(sql, &[], |r| r.get::<i64>(0));
    Ok(Counts {
        questions,
        push_queued: one("SELECT COUNT(*) FROM push_jobs WHERE state = 'queued'")?,
        push_failed: one("SELECT COUNT(*) FROM push_jobs WHERE state = 'failed'")?,
        webhook_pending: one("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'")?,
        webhook_failed: one("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'failed'")?,
    })
}
