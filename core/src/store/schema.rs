//! Migrations of the phone store (rusqlite_migration, the same as the
//! server's), recorded in `PRAGMA user_version`. Append; never edit a
//! released one.

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};

const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    r#"
    -- When this device last showed the question as a notification (a push
    -- handled by the extension, or a reconciliation that posted it): a
    -- question learned only by sync and never shown is posted at the next
    -- reconciliation; one shown and dismissed is not shown again.
    ALTER TABLE questions ADD COLUMN presented_ms INTEGER;
"#,
    r#"
    -- Whether a held question's words were read from the server (over TLS,
    -- authenticated) or opened from a push sealed to this device (1), or come
    -- only from a plain push, which anyone who can inject pushes may have
    -- made (0). Rows from older versions are not known to be either: 0.
    ALTER TABLE questions ADD COLUMN verified INTEGER NOT NULL DEFAULT 0;
    -- What the person saw (the compact question, JSON) when they answered a
    -- question known only from a plain push: before sending, the outbox
    -- reads the question from the server and sends only if it is the same.
    -- NULL: they saw a verified question. Answers still to be sent from an
    -- older version are checked too.
    ALTER TABLE outbox ADD COLUMN unverified_seen TEXT;
    UPDATE outbox SET unverified_seen = COALESCE(
        (SELECT compact FROM questions q WHERE q.id = outbox.question_id), '{}')
    WHERE state IN ('queued', 'sending');
"#,
    r#"
    -- What this device's notification of the question shows (the compact
    -- question it was drawn from), when the library drew it: a server read
    -- may replace the held words of a plain push afterwards, and an action
    -- from that notification is an answer to what it shows.
    ALTER TABLE questions ADD COLUMN shown_compact TEXT;
"#,
    r#"
    -- The session (who is signed in, where, this device's registration)
    -- and its state (the server refused the token), as JSON by key: the
    -- app and its extension read the same. Never a token: those stay in
    -- the platform's secure storage.
    CREATE TABLE phone_state (
        key        TEXT PRIMARY KEY,
        value      TEXT NOT NULL,
        updated_ms INTEGER NOT NULL
    );
"#,
    r#"
    -- A new answer state: 'handed_over', an answer the system uploads in
    -- the background (iOS) and reports on later. SQLite cannot change a
    -- CHECK constraint in place, so the table is rebuilt with every row.
    CREATE TABLE outbox_new (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        question_id     TEXT NOT NULL,
        idempotency_key TEXT NOT NULL UNIQUE,
        body            TEXT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'handed_over', 'answered', 'already_resolved', 'rejected')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,
        last_error      TEXT,
        created_ms      INTEGER NOT NULL,
        updated_ms      INTEGER NOT NULL,
        unverified_seen TEXT
    );
    INSERT INTO outbox_new (id, question_id, idempotency_key, body, state, attempts,
                            next_attempt_ms, last_error, created_ms, updated_ms, unverified_seen)
        SELECT id, question_id, idempotency_key, body, state, attempts,
               next_attempt_ms, last_error, created_ms, updated_ms, unverified_seen
        FROM outbox;
    DROP TABLE outbox;
    ALTER TABLE outbox_new RENAME TO outbox;
    CREATE INDEX outbox_due ON outbox(next_attempt_ms) WHERE state IN ('queued', 'sending');
    CREATE INDEX outbox_by_question ON outbox(question_id);
"#,
    r#"
    -- When the system's list of background uploads was first seen without
    -- this handed-over answer (NULL: not missing). A finished upload leaves
    -- the list before its report reaches the app, so one missing snapshot
    -- does not make the answer lost (see Store::requeue_lost_hand_overs).
    ALTER TABLE outbox ADD COLUMN missing_since_ms INTEGER;
"#,
];

fn migrations() -> Migrations<'static> {
    Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect())
}

/// Applies what is missing. The app and its extension may open the store at
/// the same moment: migrations run in IMMEDIATE transactions, and a process
/// that lost the race (its migration failed because the other one applied it
/// meanwhile) sees the schema at the latest version and carries on.
pub fn migrate(conn: &mut Connection) -> Result<(), rusqlite_migration::Error> {
    let migrations = migrations();
    conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
    let result = migrations.to_latest(conn);
    conn.set_transaction_behavior(rusqlite::TransactionBehavior::Deferred);
    match result {
        Err(_) if migrations.pending_migrations(conn)? == 0 => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        assert!(super::migrations().validate().is_ok());
    }
}
