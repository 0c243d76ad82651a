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

/// Questions per state. It reads every question's entry: on SQLite from
/// an index that holds `state` (`questions_by_room` or
/// `questions_by_agent_state` today), a fraction of
/// the pages of the table itself, whose rows carry the questions' bodies.
/// A test below fails if no index serves it.
const QUESTIONS_BY_STATE: &str = "SELECT state, COUNT(*) FROM questions GROUP BY state";

/// Full-table counts: callers cache them (`metrics::COUNTS_MAX_AGE`).
pub fn counts(conn: &Conn) -> DbResult<Counts> {
    let questions = conn.query_map(QUESTIONS_BY_STATE, &[], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let one = |sql: &str| conn.query_row(sql, &[], |r| r.get::<i64>(0));
    Ok(Counts {
        questions,
        push_queued: one("SELECT COUNT(*) FROM push_jobs WHERE state = 'queued'")?,
        push_failed: one("SELECT COUNT(*) FROM push_jobs WHERE state = 'failed'")?,
        webhook_pending: one("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'")?,
        webhook_failed: one("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'failed'")?,
    })
}

#[cfg(test)]
mod tests {
    use super::QUESTIONS_BY_STATE;

    /// The per-state count reads a covering index, not the table: on a
    /// server with many questions the table is many times the pages
    /// (each row holds the question's JSON), read on the database's one
    /// thread at every `/metrics` refresh. Fails if a schema change drops
    /// the last index that holds `state` for every question (tried: with
    /// both of today's dropped, SQLite scans the table).
    #[test]
    fn the_per_state_count_reads_an_index_not_the_table_on_sqlite() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        let mut plan = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {QUESTIONS_BY_STATE}"))
            .unwrap();
        let steps: Vec<String> = plan
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            steps.iter().any(|s| s.contains("USING COVERING INDEX")),
            "the per-state count reads the table: {steps:?}"
        );
    }
}
