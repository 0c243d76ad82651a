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
    // 10: data lifecycle. The retention sweep's indexes (finished
    // rows by age, partial so the live queues stay small); users and agents
    // that can be disabled (their tokens are moved aside to
    // `tokens_disabled`, so every token check refuses them as it does a
    // revoked token, and moved back on enable); the audit log of admin
    // actions, pairings and token changes, with who did them.
    r#"
    CREATE INDEX IF NOT EXISTS questions_finished_by_age
        ON questions(created_at) WHERE state <> 'pending';
    CREATE INDEX IF NOT EXISTS push_jobs_finished_by_age
        ON push_jobs(created_at) WHERE state <> 'queued';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_finished_by_age
        ON webhook_deliveries(created_at) WHERE state <> 'pending';
    CREATE INDEX IF NOT EXISTS dev_inbox_by_age ON dev_inbox(created_ms);
    ALTER TABLE users ADD COLUMN disabled_at INTEGER;
    ALTER TABLE agents ADD COLUMN disabled_at INTEGER;
    CREATE TABLE tokens_disabled (
        hash         TEXT PRIMARY KEY,
        kind         TEXT NOT NULL,
        subject_id   TEXT NOT NULL,
        label        TEXT NOT NULL DEFAULT '',
        created_at   INTEGER NOT NULL,
        last_used_at INTEGER
    );
    CREATE INDEX tokens_disabled_by_subject ON tokens_disabled(subject_id);
    CREATE TABLE audit_log (
        seq     INTEGER PRIMARY KEY AUTOINCREMENT,
        at      INTEGER NOT NULL,
        actor   TEXT NOT NULL,
        action  TEXT NOT NULL,
        subject TEXT NOT NULL DEFAULT '',
        detail  TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX audit_log_by_age ON audit_log(at);
    "#,
    // 11: `web` devices (browsers, Web Push). SQLite cannot change a CHECK
    // constraint in place: the table is rebuilt as its documented procedure
    // says (same columns and rows; `open_with` migrates before turning
    // foreign keys on, so dropping the old table removes no push jobs).
    r#"
    CREATE TABLE devices_v11 (
        id         TEXT PRIMARY KEY,
        user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        platform   TEXT NOT NULL CHECK (platform IN ('ios', 'android', 'dev', 'web')),
        push_token TEXT NOT NULL,
        app_id     TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        locale     TEXT NOT NULL DEFAULT '',
        public_key TEXT,
        token_hash TEXT,
        apns_environment TEXT CHECK (apns_environment IN ('production', 'sandbox')),
        UNIQUE (platform, push_token)
    );
    INSERT INTO devices_v11
        (id, user_id, platform, push_token, app_id, created_at, locale, public_key, token_hash, apns_environment)
        SELECT id, user_id, platform, push_token, app_id, created_at, locale, public_key, token_hash, apns_environment
        FROM devices;
    DROP TABLE devices;
    ALTER TABLE devices_v11 RENAME TO devices;
    CREATE INDEX devices_by_token ON devices(token_hash);
    CREATE INDEX devices_by_user ON devices(user_id);
    "#,
    // 12: `/mcp` sessions in the database (store/mcp_sessions.rs): a
    // session goes on across instances and restarts.
    r#"
    CREATE TABLE mcp_sessions (
        id_hash      TEXT PRIMARY KEY,
        agent_id     TEXT NOT NULL,
        state        TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        last_seen_ms INTEGER NOT NULL
    );
    CREATE INDEX mcp_sessions_by_agent ON mcp_sessions(agent_id, last_seen_ms);
    CREATE INDEX mcp_sessions_by_age ON mcp_sessions(last_seen_ms);
    "#,
    // 13: OAuth for remote MCP clients and `qp login --url` (store/oauth.rs):
    // clients (registered or fetched metadata documents), consents asked as
    // questions, codes and tokens (hashes only), the consent asker per person.
    r#"
    CREATE TABLE oauth_clients (
        id            TEXT PRIMARY KEY,
        kind          TEXT NOT NULL CHECK (kind IN ('dcr', 'cimd')),
        name          TEXT NOT NULL,
        redirect_uris TEXT NOT NULL,
        host          TEXT NOT NULL DEFAULT '',
        fetched_at    INTEGER,
        created_at    INTEGER NOT NULL
    );
    CREATE TABLE oauth_consents (
        id_hash        TEXT PRIMARY KEY,
        kind           TEXT NOT NULL CHECK (kind IN ('code', 'device')),
        client_id      TEXT NOT NULL,
        user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        room_id        TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        question_id    TEXT NOT NULL,
        state          TEXT NOT NULL DEFAULT 'pending',
        redirect_uri   TEXT,
        state_param    TEXT,
        code_challenge TEXT,
        resource       TEXT,
        user_code      TEXT,
        interval_secs  INTEGER NOT NULL DEFAULT 5,
        last_poll_at   INTEGER,
        agent_id       TEXT,
        expires_at     INTEGER NOT NULL,
        created_at     INTEGER NOT NULL
    );
    CREATE INDEX oauth_consents_by_user ON oauth_consents(user_id, state);
    CREATE INDEX oauth_consents_by_client ON oauth_consents(client_id, state);
    CREATE TABLE oauth_codes (
        hash           TEXT PRIMARY KEY,
        client_id      TEXT NOT NULL,
        redirect_uri   TEXT NOT NULL,
        code_challenge TEXT NOT NULL,
        resource       TEXT NOT NULL,
        agent_id       TEXT NOT NULL,
        grant_hash     TEXT NOT NULL,
        expires_at     INTEGER NOT NULL,
        used_at        INTEGER,
        created_at     INTEGER NOT NULL
    );
    CREATE TABLE oauth_tokens (
        hash       TEXT PRIMARY KEY,
        kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
        grant_hash TEXT NOT NULL,
        client_id  TEXT NOT NULL,
        resource   TEXT NOT NULL,
        agent_id   TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at    INTEGER,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX oauth_tokens_by_grant ON oauth_tokens(grant_hash);
    CREATE TABLE oauth_askers (
        user_id  TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL
    );
    "#,
    // 14: the address a client was registered from, so unused registrations
    // are capped per address (oauth/clients.rs), and the indexes that find
    // a client's codes and tokens (whether a client was ever used).
    r#"
    ALTER TABLE oauth_clients ADD COLUMN registered_from TEXT;
    CREATE INDEX oauth_clients_by_source ON oauth_clients(registered_from, created_at);
    CREATE INDEX oauth_clients_by_age ON oauth_clients(created_at);
    CREATE INDEX oauth_codes_by_client ON oauth_codes(client_id);
    CREATE INDEX oauth_tokens_by_client ON oauth_tokens(client_id);
    "#,
    // 15: agent sign-in (OAuth, `qp login --url`) under the operator's
    // rules: a room's admins (who may approve, with `agent_sign_in =
    // admins`), and who signed an agent in (shown to everyone it asks; set
    // for the agents earlier sign-ins made: a consent names them until
    // retention drops it, an OAuth grant's tokens name them while the agent
    // can ask, and `qp login --url` labels the token it hands out
    // "qp login: <name>"); such an agent sharing its handle with another
    // agent of one of its rooms gets a handle of its own).
    r#"
    ALTER TABLE memberships ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN signed_in_by TEXT;
    UPDATE agents SET signed_in_by = owner_user_id
        WHERE id IN (SELECT agent_id FROM oauth_consents WHERE agent_id IS NOT NULL)
           OR id IN (SELECT agent_id FROM oauth_tokens)
           OR id IN (SELECT subject_id FROM tokens
                     WHERE kind = 'agent' AND label LIKE 'qp login: %')
           OR id IN (SELECT subject_id FROM tokens_disabled
                     WHERE kind = 'agent' AND label LIKE 'qp login: %');
    UPDATE agents SET handle = handle || '-' || substr(id, 3, 6)
        WHERE signed_in_by IS NOT NULL AND EXISTS (
            SELECT 1 FROM agents other
            JOIN agent_rooms theirs ON theirs.agent_id = other.id
            JOIN agent_rooms mine ON mine.room_id = theirs.room_id
            WHERE mine.agent_id = agents.id AND other.id <> agents.id
              AND other.handle = agents.handle);
    "#,
    // 16: a person's history pages through each of their rooms by seq
    // (store/questions.rs, history_for_user).
    r#"
    CREATE INDEX questions_by_room_seq ON questions(room_id, seq);
    "#,
    // 17: claims of a push job since its last recorded outcome: a claim
    // that finds an earlier one (its lease ran out with no outcome: the
    // instance was killed, stalled or could not write) counts the push as
    // maybe delivered twice (`qp_push_resent_maybe_delivered_total
    // {cause="lease_ran_out"}`).
    r#"
    ALTER TABLE push_jobs ADD COLUMN open_claims INTEGER NOT NULL DEFAULT 0;
    "#,
    // 18: sends of a push job that went out without an answer (the gateway
    // may have them): re-sent at most `push::NO_ANSWER_RESENDS` times.
    r#"
    ALTER TABLE push_jobs ADD COLUMN unanswered INTEGER NOT NULL DEFAULT 0;
    "#,
];

/// The schema version this build writes: how many migrations it has.
pub const VERSION: usize = MIGRATIONS.len();

/// The version the database records (`PRAGMA user_version`).
pub fn version_of(conn: &Connection) -> super::DbResult<usize> {
    let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok(usize::try_from(v).unwrap_or(0))
}

/// Applies what is missing, each migration in its own transaction
/// (rusqlite_migration, the approach the phone store uses too).
///
/// A database a newer qp migrated is used as it is, with a warning: every
/// migration is additive (new tables, columns with defaults, indexes), so
/// this build's statements still work on it, and rolling back a binary
/// needs no restore.
pub fn migrate(conn: &mut Connection) -> super::DbResult<()> {
    let found = version_of(conn)?;
    if found > VERSION {
        warn_newer(found, VERSION);
        return Ok(());
    }
    let migrations = Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect());
    migrations.to_latest(conn).map_err(|e| match e {
        rusqlite_migration::Error::RusqliteError { err, .. } => err.into(),
        other => super::DbError::Other(format!("migration: {other}")),
    })
}

/// Migrates only up to `version` (the upgrade test builds an older
/// release's database this way).
pub fn migrate_to(conn: &mut Connection, version: usize) -> super::DbResult<()> {
    let migrations = Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect());
    migrations
        .to_version(conn, version)
        .map_err(|e| super::DbError::Other(format!("migration: {e}")))
}

/// `--no-migrate`: a database that lacks migrations is refused.
pub fn require_current(conn: &Connection) -> super::DbResult<()> {
    let found = version_of(conn)?;
    check_current(found, VERSION)
}

/// The rule of `--no-migrate`, for both engines: older is refused (with
/// what to run), newer is used with a warning (see [`migrate`]).
pub fn check_current(found: usize, this: usize) -> super::DbResult<()> {
    if found < this {
        return Err(super::DbError::Other(format!(
            "the database's schema is version {found}, this qp needs version {this}: \
             run `qp migrate` (with the same --db) first, or start without --no-migrate"
        )));
    }
    if found > this {
        warn_newer(found, this);
    }
    Ok(())
}

pub fn warn_newer(found: usize, this: usize) {
    tracing::warn!(
        database_schema = found,
        this_qp = this,
        "the database was migrated by a newer qp; running on it (migrations are additive)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        let m = Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect());
        assert!(m.validate().is_ok());
    }

    /// The agents earlier sign-ins made are marked even once retention has
    /// dropped their consents: by their OAuth grant's tokens, or by the label
    /// `qp login --url` gives its token; an operator's agent is not, and a
    /// marked agent that shared a handle in its room gets its own.
    #[test]
    fn agents_signed_in_before_the_upgrade_are_marked_without_their_consents() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, 14).unwrap();
        conn.execute_batch(
            "INSERT INTO users (id, display_name, created_at) VALUES ('u_op', 'Op', 0), ('u_m', 'Mallory', 0);
             INSERT INTO rooms (id, name, code, created_at) VALUES ('r_1', 'Ops', 'OPS123', 0);
             INSERT INTO agents (id, name, owner_user_id, scopes, created_at, handle) VALUES
                 ('a_operator', 'Release Bot', 'u_op', 'ask', 0, 'release-bot'),
                 ('a_device01', 'Release Bot', 'u_m', 'ask', 0, 'release-bot'),
                 ('a_oauth001', 'Claude', 'u_m', 'ask', 0, 'claude');
             INSERT INTO agent_rooms (agent_id, room_id) VALUES
                 ('a_operator', 'r_1'), ('a_device01', 'r_1'), ('a_oauth001', 'r_1');
             INSERT INTO tokens (hash, kind, subject_id, label, created_at) VALUES
                 ('h1', 'agent', 'a_operator', 'qp login', 0),
                 ('h2', 'agent', 'a_device01', 'qp login: Release Bot', 0);
             INSERT INTO oauth_tokens (hash, kind, grant_hash, client_id, resource, agent_id, expires_at, created_at)
                 VALUES ('h3', 'refresh', 'g', 'c', 'r', 'a_oauth001', 9, 0);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let row = |id: &str| -> (Option<String>, String) {
            conn.query_row(
                "SELECT signed_in_by, handle FROM agents WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
        };
        assert_eq!(row("a_operator"), (None, "release-bot".into()));
        assert_eq!(
            row("a_device01"),
            (Some("u_m".into()), "release-bot-device".into())
        );
        assert_eq!(row("a_oauth001"), (Some("u_m".into()), "claude".into()));
    }
}
