//! PostgreSQL's schema migrations, beside SQLite's (`schema.rs`): one
//! migration per step, recorded in `qp_schema_migrations` and applied under
//! an advisory lock so instances starting together migrate once. Append new
//! migrations; never edit a released one.

use super::pg::PgConn;
use super::sql::DbResult;

/// PostgreSQL's schema, one migration per step like SQLite's (`schema.rs`);
/// the first is the SQLite schema as of its migration 6, so the two stay
/// comparable. Append; never edit a released one.
const MIGRATIONS: &[&str] = &[
    r#"
    CREATE TABLE users (
        id           TEXT PRIMARY KEY,
        display_name TEXT NOT NULL,
        created_at   BIGINT NOT NULL
    );
    CREATE TABLE rooms (
        id             TEXT PRIMARY KEY,
        code           TEXT NOT NULL UNIQUE,
        name           TEXT NOT NULL,
        webhook_url    TEXT,
        webhook_secret TEXT,
        webhook_events TEXT NOT NULL DEFAULT '',
        created_at     BIGINT NOT NULL
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
        created_at    BIGINT NOT NULL,
        handle        TEXT
    );
    CREATE TABLE agent_rooms (
        agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        room_id  TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        PRIMARY KEY (agent_id, room_id)
    );
    CREATE TABLE tokens (
        hash         TEXT PRIMARY KEY,
        kind         TEXT NOT NULL CHECK (kind IN ('agent', 'user', 'admin')),
        subject_id   TEXT NOT NULL,
        label        TEXT NOT NULL DEFAULT '',
        created_at   BIGINT NOT NULL,
        last_used_at BIGINT
    );
    CREATE TABLE questions (
        seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id             TEXT NOT NULL UNIQUE,
        room_id        TEXT NOT NULL REFERENCES rooms(id),
        agent_id       TEXT NOT NULL REFERENCES agents(id),
        state          TEXT NOT NULL,
        scope          TEXT NOT NULL,
        target_user_id TEXT,
        correlation_id TEXT,
        expires_at     BIGINT NOT NULL,
        created_at     BIGINT NOT NULL,
        body           TEXT NOT NULL
    );
    CREATE INDEX questions_pending_by_expiry ON questions(expires_at) WHERE state = 'pending';
    CREATE INDEX questions_by_agent ON questions(agent_id, seq);
    CREATE INDEX questions_by_agent_state ON questions(agent_id, state);
    CREATE INDEX questions_by_room ON questions(room_id, state);
    CREATE TABLE answer_keys (
        user_id     TEXT NOT NULL,
        key         TEXT NOT NULL,
        question_id TEXT NOT NULL,
        status      BIGINT NOT NULL,
        response    TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        PRIMARY KEY (user_id, key)
    );
    CREATE TABLE webhook_deliveries (
        seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id              TEXT NOT NULL UNIQUE,
        room_id         TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
        event           TEXT NOT NULL,
        body            TEXT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts        BIGINT NOT NULL DEFAULT 0,
        next_attempt_ms BIGINT NOT NULL,
        last_error      TEXT,
        created_at      BIGINT NOT NULL
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms) WHERE state = 'pending';
    CREATE TABLE devices (
        id         TEXT PRIMARY KEY,
        user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        platform   TEXT NOT NULL CHECK (platform IN ('ios', 'android', 'dev')),
        push_token TEXT NOT NULL,
        app_id     TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        locale     TEXT NOT NULL DEFAULT '',
        public_key TEXT,
        UNIQUE (platform, push_token)
    );
    CREATE TABLE push_jobs (
        id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        device_id       TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        question_id     TEXT NOT NULL,
        kind            TEXT NOT NULL CHECK (kind IN ('question', 'resolved')),
        state           TEXT NOT NULL CHECK (state IN ('queued', 'sent', 'failed')),
        attempts        BIGINT NOT NULL DEFAULT 0,
        next_attempt_ms BIGINT NOT NULL,
        last_error      TEXT,
        created_at      BIGINT NOT NULL
    );
    CREATE INDEX push_jobs_due ON push_jobs(next_attempt_ms) WHERE state = 'queued';
    CREATE TABLE dev_inbox (
        seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        device_id  TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        format     TEXT NOT NULL CHECK (format IN ('apns', 'fcm')),
        payload    TEXT NOT NULL,
        created_ms BIGINT NOT NULL
    );
    CREATE INDEX dev_inbox_by_device ON dev_inbox(device_id, seq);
    CREATE TABLE invites (
        id              TEXT PRIMARY KEY,
        secret_hash     TEXT NOT NULL,
        kind            TEXT NOT NULL CHECK (kind IN ('user', 'agent')),
        subject_id      TEXT NOT NULL,
        created_at      BIGINT NOT NULL,
        expires_at      BIGINT NOT NULL,
        used_at         BIGINT,
        failed_attempts BIGINT NOT NULL DEFAULT 0
    );
    "#,
    // 2 (SQLite's 7): the token that registered each device.
    r#"
    ALTER TABLE devices ADD COLUMN token_hash TEXT;
    CREATE INDEX devices_by_token ON devices(token_hash);
    "#,
    // 3 (SQLite's 8): the indexes a fan-out and the purges need: the claim's per-device
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
    // 4 (SQLite's 9): which APNs each iOS device's token is from.
    r#"
    ALTER TABLE devices ADD COLUMN apns_environment TEXT
        CHECK (apns_environment IN ('production', 'sandbox'));
    "#,
    // 5 (SQLite's 10): data lifecycle. The retention sweep's indexes (finished
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
    ALTER TABLE users ADD COLUMN disabled_at BIGINT;
    ALTER TABLE agents ADD COLUMN disabled_at BIGINT;
    CREATE TABLE tokens_disabled (
        hash         TEXT PRIMARY KEY,
        kind         TEXT NOT NULL,
        subject_id   TEXT NOT NULL,
        label        TEXT NOT NULL DEFAULT '',
        created_at   BIGINT NOT NULL,
        last_used_at BIGINT
    );
    CREATE INDEX tokens_disabled_by_subject ON tokens_disabled(subject_id);
    CREATE TABLE audit_log (
        seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at      BIGINT NOT NULL,
        actor   TEXT NOT NULL,
        action  TEXT NOT NULL,
        subject TEXT NOT NULL DEFAULT '',
        detail  TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX audit_log_by_age ON audit_log(at);
    "#,
    // 6 (SQLite's 11): `web` devices (browsers, Web Push): the platform
    // check admits them.
    r#"
    ALTER TABLE devices DROP CONSTRAINT IF EXISTS devices_platform_check;
    ALTER TABLE devices ADD CONSTRAINT devices_platform_check
        CHECK (platform IN ('ios', 'android', 'dev', 'web'));
    "#,
    // 7 (SQLite's 12): `/mcp` sessions in the database, so a session opened
    // on one instance is served by any other (store/mcp_sessions.rs).
    r#"
    CREATE TABLE mcp_sessions (
        id_hash      TEXT PRIMARY KEY,
        agent_id     TEXT NOT NULL,
        state        TEXT NOT NULL,
        created_at   BIGINT NOT NULL,
        last_seen_ms BIGINT NOT NULL
    );
    CREATE INDEX mcp_sessions_by_agent ON mcp_sessions(agent_id, last_seen_ms);
    CREATE INDEX mcp_sessions_by_age ON mcp_sessions(last_seen_ms);
    "#,
    // 8 (SQLite's 13): OAuth for remote MCP clients and `qp login --url`
    // (store/oauth.rs).
    r#"
    CREATE TABLE oauth_clients (
        id            TEXT PRIMARY KEY,
        kind          TEXT NOT NULL CHECK (kind IN ('dcr', 'cimd')),
        name          TEXT NOT NULL,
        redirect_uris TEXT NOT NULL,
        host          TEXT NOT NULL DEFAULT '',
        fetched_at    BIGINT,
        created_at    BIGINT NOT NULL
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
        interval_secs  BIGINT NOT NULL DEFAULT 5,
        last_poll_at   BIGINT,
        agent_id       TEXT,
        expires_at     BIGINT NOT NULL,
        created_at     BIGINT NOT NULL
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
        expires_at     BIGINT NOT NULL,
        used_at        BIGINT,
        created_at     BIGINT NOT NULL
    );
    CREATE TABLE oauth_tokens (
        hash       TEXT PRIMARY KEY,
        kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
        grant_hash TEXT NOT NULL,
        client_id  TEXT NOT NULL,
        resource   TEXT NOT NULL,
        agent_id   TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at    BIGINT,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX oauth_tokens_by_grant ON oauth_tokens(grant_hash);
    CREATE TABLE oauth_askers (
        user_id  TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL
    );
    "#,
    // 9 (SQLite's 14): the address a client was registered from, and the
    // indexes that tell whether a client was ever used.
    r#"
    ALTER TABLE oauth_clients ADD COLUMN registered_from TEXT;
    CREATE INDEX oauth_clients_by_source ON oauth_clients(registered_from, created_at);
    CREATE INDEX oauth_clients_by_age ON oauth_clients(created_at);
    CREATE INDEX oauth_codes_by_client ON oauth_codes(client_id);
    CREATE INDEX oauth_tokens_by_client ON oauth_tokens(client_id);
    "#,
    // 10 (SQLite's 15): agent sign-in (OAuth, `qp login --url`) under the operator's
    // rules: a room's admins (who may approve, with `agent_sign_in =
    // admins`), and who signed an agent in (shown to everyone it asks; set
    // for the agents earlier sign-ins made: a consent names them until
    // retention drops it, an OAuth grant's tokens name them while the agent
    // can ask, and `qp login --url` labels the token it hands out
    // "qp login: <name>"); such an agent sharing its handle with another
    // agent of one of its rooms gets a handle of its own).
    r#"
    ALTER TABLE memberships ADD COLUMN admin BIGINT NOT NULL DEFAULT 0;
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
    // 11 (SQLite's 16): a person's history pages through each of their rooms by seq
    // (store/questions.rs, history_for_user).
    r#"
    CREATE INDEX questions_by_room_seq ON questions(room_id, seq);
    "#,
    // 12 (SQLite's 17): claims of a push job since its last recorded outcome: a claim
    // that finds an earlier one (its lease ran out with no outcome: the
    // instance was killed, stalled or could not write) counts the push as
    // maybe delivered twice (`qp_push_resent_maybe_delivered_total
    // {cause="lease_ran_out"}`).
    r#"
    ALTER TABLE push_jobs ADD COLUMN open_claims BIGINT NOT NULL DEFAULT 0;
    "#,
    // 13 (SQLite's 18): sends of a push job that went out without an
    // answer (the gateway may have them): re-sent at most
    // `push::NO_ANSWER_RESENDS` times.
    r#"
    ALTER TABLE push_jobs ADD COLUMN unanswered BIGINT NOT NULL DEFAULT 0;
    "#,
    // 14 (PostgreSQL only: one SQLite database has one instance): what
    // every instance on the database must set alike, as the first one to
    // start set it ([`shared_setting`]): the VAPID public key browsers
    // subscribed with.
    r#"
    CREATE TABLE qp_shared_settings (
        name   TEXT PRIMARY KEY,
        value  TEXT NOT NULL,
        set_at BIGINT NOT NULL
    );
    "#,
];

/// The value every instance on this database must use for `name`: the
/// first caller's `value` is recorded, and returned to every later one
/// (who compares it with its own).
pub fn shared_setting(
    conn: &super::Conn,
    name: &str,
    value: &str,
    now_ms: i64,
) -> DbResult<String> {
    conn.execute(
        "INSERT INTO qp_shared_settings (name, value, set_at) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO NOTHING",
        crate::params![name, value, now_ms],
    )?;
    conn.query_row(
        "SELECT value FROM qp_shared_settings WHERE name = ?1",
        crate::params![name],
        |r| r.get(0),
    )
}

/// Any number that names this schema's advisory lock (instances starting
/// together wait for the first one's migration).
pub const MIGRATION_LOCK: i64 = 0x5150_6d69_6772;

/// How long one migration's statements wait for a table lock.
pub const MIGRATION_LOCK_TIMEOUT: &str = "30s";
/// While another session holds the migration lock, a line this often.
const LOCK_WAIT_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Takes the migration lock, saying who holds it while waiting: another
/// instance migrating, or a session a transaction-mode pooler (PgBouncer)
/// left holding it, so `qp serve` never waits without a word.
fn take_migration_lock(conn: &super::Conn) -> DbResult<()> {
    let started = std::time::Instant::now();
    let mut logged: Option<std::time::Instant> = None;
    loop {
        let got: i64 = conn.query_row(
            "SELECT CASE WHEN pg_try_advisory_lock(?1) THEN 1 ELSE 0 END",
            crate::params![MIGRATION_LOCK],
            |r| r.get(0),
        )?;
        if got == 1 {
            if logged.is_some() {
                tracing::info!(
                    waited_secs = started.elapsed().as_secs(),
                    "took the migration lock"
                );
            }
            return Ok(());
        }
        if logged.is_none_or(|at| at.elapsed() >= LOCK_WAIT_LOG_EVERY) {
            let holder: (i64, String) = conn.query_row(
                "SELECT COALESCE(MAX(a.pid), 0), COALESCE(MAX(a.application_name || ' from ' || COALESCE(a.client_addr::text, 'local')), '')
                 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                 WHERE l.locktype = 'advisory' AND l.granted
                   AND ((l.classid::bigint << 32) | l.objid::bigint) = ?1",
                crate::params![MIGRATION_LOCK],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            tracing::warn!(
                holder_pid = holder.0,
                holder = %holder.1,
                waited_secs = started.elapsed().as_secs(),
                "waiting for the schema migration lock held by another session \
                 (another instance migrating; if none is, a pooler may have left it held: \
                 SELECT pg_terminate_backend(holder_pid))"
            );
            logged = Some(std::time::Instant::now());
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// The schema version this build writes: how many migrations it has.
pub const VERSION: usize = MIGRATIONS.len();

/// The version the database records (0 before the first migration).
pub fn version_of(conn: &PgConn) -> DbResult<usize> {
    recorded_version(conn)
}

/// The version a PostgreSQL database records, 0 before any migration.
/// Two statements: one that names `qp_schema_migrations` fails to plan
/// on a fresh database even inside a CASE that would not read it (`qp
/// migrate` on an empty database failed so).
pub fn recorded_version(conn: &super::Conn) -> DbResult<usize> {
    let exists: i64 = conn.query_row(
        "SELECT CASE WHEN to_regclass('qp_schema_migrations') IS NULL THEN 0 ELSE 1 END",
        &[],
        |r| r.get(0),
    )?;
    if exists == 0 {
        return Ok(0);
    }
    let found: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM qp_schema_migrations",
        &[],
        |r| r.get(0),
    )?;
    Ok(usize::try_from(found).unwrap_or(0))
}

/// Applies what is missing up to `target`, in one transaction per
/// migration, recording each in `qp_schema_migrations`. A small runner
/// rather than a crate: the SQLite side's rusqlite_migration does not
/// speak PostgreSQL, and the advisory lock that serializes instances is the
/// part that matters. A database a newer qp migrated is used as it is
/// (migrations are additive: see `schema::migrate`), so an older instance
/// still starts during a rolling upgrade.
pub fn migrate_to(conn: &PgConn, target: usize) -> DbResult<()> {
    let conn: &super::Conn = conn;
    conn.batch(
        "CREATE TABLE IF NOT EXISTS qp_schema_migrations (
             version    BIGINT PRIMARY KEY,
             applied_at BIGINT NOT NULL
         )",
    )?;
    take_migration_lock(conn)?;
    let result = (|| {
        let done: i64 = conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM qp_schema_migrations",
            &[],
            |r| r.get(0),
        )?;
        if done as usize > MIGRATIONS.len() {
            super::schema::warn_newer(done as usize, MIGRATIONS.len());
            return Ok(());
        }
        for (i, sql) in MIGRATIONS
            .iter()
            .enumerate()
            .take(target)
            .skip(done as usize)
        {
            let tx = conn.transaction()?;
            // A migration waits for table locks at most this long (a long
            // transaction elsewhere would hold it, and every instance
            // behind it, forever), then fails naming the setting.
            tx.batch(&format!(
                "SET LOCAL lock_timeout = '{MIGRATION_LOCK_TIMEOUT}'"
            ))?;
            tx.batch(sql)?;
            tx.execute(
                "INSERT INTO qp_schema_migrations (version, applied_at) VALUES (?1, ?2)",
                crate::params![i as i64 + 1, super::now_secs()],
            )?;
            tx.commit()?;
        }
        Ok(())
    })();
    conn.execute(
        "SELECT pg_advisory_unlock(?1)",
        crate::params![MIGRATION_LOCK],
    )?;
    result
}
