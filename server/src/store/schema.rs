//! Schema migrations (rusqlite_migration), applied in order on open;
//! `PRAGMA user_version` records how many have run. Append new migrations;
//! never edit a released one.

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};

const MIGRATIONS: &[&str] = &[
    // 1: identity, questions, webhook deliveries, devices and push jobs.
    r#"
    CREATE TABLE users (
        id           TEXT PRIMARY KEY,
        display_name TEXT NOT NULL,
        created_at   INTEGER NOT NULL
    );
    CREATE TABLE rooms (
        id             TEXT PRIMARY KEY,
        code           TEXT NOT NULL UNIQUE,
        name           TEXT NOT NULL,
        webhook_url    TEXT,
        webhook_secret TEXT,
        webhook_events TEXT NOT NULL DEFAULT '',
        created_at     INTEGER NOT NULL
    );
    CREATE TABLE memberships (
        room_id TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        PRIMARY KEY (room_id, user_id)
    );
    CREATE INDEX memberships_by_user ON memberships(user_id);
    CREATE TABLE agents (
        id            TEXT PRIMARY KEY,
        name          TEXT NOT NULL,
        owner_user_id TEXT NOT NULL REFERENCES users(id),
        scopes        TEXT NOT NULL,
        created_at    INTEGER NOT NULL
    );
    CREATE TABLE agent_rooms (
        agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        room_id  TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        PRIMARY KEY (agent_id, room_id)
    );
    -- Bearer tokens, kept only as SHA-256 hashes.
    CREATE TABLE tokens (
        hash       TEXT PRIMARY KEY,
        kind       TEXT NOT NULL CHECK (kind IN ('agent', 'user')),
        subject_id TEXT NOT NULL,
        label      TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL
    );
    CREATE TABLE questions (
        seq            INTEGER PRIMARY KEY AUTOINCREMENT,
        id             TEXT NOT NULL UNIQUE,
        room_id        TEXT NOT NULL REFERENCES rooms(id),
        agent_id       TEXT NOT NULL REFERENCES agents(id),
        state          TEXT NOT NULL,
        scope          TEXT NOT NULL,
        target_user_id TEXT,
        correlation_id TEXT,
        expires_at     INTEGER NOT NULL,
        created_at     INTEGER NOT NULL,
        body           TEXT NOT NULL   -- the Question object as JSON
    );
    CREATE INDEX questions_pending_by_expiry ON questions(expires_at) WHERE state = 'pending';
    CREATE INDEX questions_by_agent ON questions(agent_id, seq);
    CREATE INDEX questions_by_agent_state ON questions(agent_id, state);
    CREATE INDEX questions_by_room ON questions(room_id, state);
    -- Idempotency-Key of answers: a retried answer returns the stored result.
    CREATE TABLE answer_keys (
        user_id     TEXT NOT NULL,
        key         TEXT NOT NULL,
        question_id TEXT NOT NULL,
        status      INTEGER NOT NULL,
        response    TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        PRIMARY KEY (user_id, key)
    );
    CREATE TABLE webhook_deliveries (
        seq             INTEGER PRIMARY KEY AUTOINCREMENT,
        id              TEXT NOT NULL UNIQUE,
        room_id         TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        event           TEXT NOT NULL,
        body            TEXT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,
        last_error      TEXT,
        created_at      INTEGER NOT NULL
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms) WHERE state = 'pending';
    CREATE TABLE devices (
        id         TEXT PRIMARY KEY,
        user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        platform   TEXT NOT NULL CHECK (platform IN ('ios', 'android', 'dev')),
        push_token TEXT NOT NULL,
        app_id     TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (platform, push_token)
    );
    CREATE TABLE push_jobs (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        device_id       TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        question_id     TEXT NOT NULL,
        kind            TEXT NOT NULL CHECK (kind IN ('question', 'resolved')),
        state           TEXT NOT NULL CHECK (state IN ('queued', 'sent', 'failed')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,
        last_error      TEXT,
        created_at      INTEGER NOT NULL
    );
    CREATE INDEX push_jobs_due ON push_jobs(next_attempt_ms) WHERE state = 'queued';
    "#,
    // 2: the dev inbox: what the local development transport delivered.
    r#"
    CREATE TABLE dev_inbox (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        device_id  TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        format     TEXT NOT NULL CHECK (format IN ('apns', 'fcm')),
        payload    TEXT NOT NULL,
        created_ms INTEGER NOT NULL
    );
    CREATE INDEX dev_inbox_by_device ON dev_inbox(device_id, seq);
    "#,
    // 3: agents' URL-safe handles (the asker's `handle`); older agents get
    // theirs derived from the name when read.
    r#"
    ALTER TABLE agents ADD COLUMN handle TEXT;
    "#,
    // 4: one-time pairing invites (phones and agents), admin tokens, and when
    // each token was last used. SQLite cannot change a CHECK constraint in
    // place: the tokens table is rebuilt.
    r#"
    CREATE TABLE tokens_v4 (
        hash         TEXT PRIMARY KEY,
        kind         TEXT NOT NULL CHECK (kind IN ('agent', 'user', 'admin')),
        subject_id   TEXT NOT NULL,
        label        TEXT NOT NULL DEFAULT '',
        created_at   INTEGER NOT NULL,
        last_used_at INTEGER
    );
    INSERT INTO tokens_v4 (hash, kind, subject_id, label, created_at)
        SELECT hash, kind, subject_id, label, created_at FROM tokens;
    DROP TABLE tokens;
    ALTER TABLE tokens_v4 RENAME TO tokens;
    CREATE TABLE invites (
        id              TEXT PRIMARY KEY,  -- the code's first group (public)
        secret_hash     TEXT NOT NULL,     -- SHA-256 of the whole code
        kind            TEXT NOT NULL CHECK (kind IN ('user', 'agent')),
        subject_id      TEXT NOT NULL,
        created_at      INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL,
        used_at         INTEGER,
        failed_attempts INTEGER NOT NULL DEFAULT 0
    );
    "#,
    // 5: each device's language, for the visible text of its pushes.
    r#"
    ALTER TABLE devices ADD COLUMN locale TEXT NOT NULL DEFAULT '';
    "#,
    // 6: each device's public key (base64 X25519), for end-to-end
    // encrypted pushes; NULL: plain pushes.
    r#"
    ALTER TABLE devices ADD COLUMN public_key TEXT;
    "#,
    // 7: the token that registered each device (its SHA-256, as in
    // `tokens`): revoking that token removes the device, so a revoked
    // phone gets no more pushes. NULL: registered before this migration.
    r#"
    ALTER TABLE devices ADD COLUMN token_hash TEXT;
    CREATE INDEX devices_by_token ON devices(token_hash);
    "#,
    // 8: the indexes a fan-out and the purges need: the claim's per-device
    // order (a queued `resolved` job looks up its device's queued
    // `question` job: partial, only the live queue); the ask's enqueue reads
    // each recipient's devices (by user, and for devices registered before
    // they were tied to a token, the user's tokens: without these a
    // 10,000-device room scanned both tables once per person, a 5.4 s ask);
    // the Idempotency-Key purge by age. `IF NOT EXISTS`: a worker of the
    // development builds in between created the first three at start-up.
    r#"
    CREATE INDEX IF NOT EXISTS push_jobs_queued_pair
        ON push_jobs(question_id, device_id) WHERE state = 'queued';
    CREATE INDEX IF NOT EXISTS devices_by_user ON devices(user_id);
    CREATE INDEX IF NOT EXISTS tokens_by_subject ON tokens(subject_id);
    CREATE INDEX IF NOT EXISTS answer_keys_by_age ON answer_keys(created_at);
    "#,
    // 9: which APNs each iOS device's token is from (`production`,
    // `sandbox`), so debug and release builds share a server; NULL: the
    // server's default (`--apns-sandbox`).
    r#"
    ALTER TABLE devices ADD COLUMN apns_environment TEXT
        CHECK (apns_environment IN ('production', 'sandbox'));
    "#,
];

/// Applies what is missing, each migration in its own transaction
/// (rusqlite_migration, the approach the phone store uses too).
pub fn migrate(conn: &mut Connection) -> super::DbResult<()> {
    let migrations = Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect());
    migrations.to_latest(conn).map_err(|e| match e {
        rusqlite_migration::Error::RusqliteError { err, .. } => err.into(),
        other => super::DbError::Other(format!("migration: {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        let m = Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect());
        assert!(m.validate().is_ok());
    }
}
