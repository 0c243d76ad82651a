//! Migrations of the phone store, applied on open in one transaction each.

use rusqlite::Connection;

const MIGRATIONS: &[&str] = &[r#"
    -- The feed: what this user can see. `compact` is the push view (enough to
    -- show and answer); `answer` the winning answer once known.
    CREATE TABLE questions (
        id          TEXT PRIMARY KEY,
        compact     TEXT NOT NULL,
        state       TEXT NOT NULL,
        answer      TEXT,
        resolved_at INTEGER,
        expires_at  INTEGER NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL
    );
    CREATE INDEX questions_newest ON questions(created_at DESC);
    -- Answers given on this device, each with its idempotency key, kept until
    -- the server has confirmed or refused them (and after, for the feed).
    CREATE TABLE outbox (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        question_id     TEXT NOT NULL,
        idempotency_key TEXT NOT NULL UNIQUE,
        body            TEXT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'answered', 'already_resolved', 'rejected')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,
        last_error      TEXT,
        created_ms      INTEGER NOT NULL,
        updated_ms      INTEGER NOT NULL
    );
    CREATE INDEX outbox_due ON outbox(next_attempt_ms) WHERE state IN ('queued', 'sending');
    CREATE INDEX outbox_by_question ON outbox(question_id);
    -- Typed text that could not be sent as is (too long): kept, never lost.
    CREATE TABLE drafts (
        question_id TEXT PRIMARY KEY,
        text        TEXT NOT NULL,
        reason      TEXT NOT NULL,
        updated_ms  INTEGER NOT NULL
    );
"#];

pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let done: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(done) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Another process may have migrated while we waited for the lock.
        let now: usize = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if now > i {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i + 1)?;
        tx.commit()?;
    }
    Ok(())
}
