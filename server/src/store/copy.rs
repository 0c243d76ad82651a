//! The one-shot move from an SQLite file to PostgreSQL (`qp admin
//! copy-to-postgres`): every table, in an order that satisfies the foreign
//! keys, in one PostgreSQL transaction, into a database that has the schema
//! and no data yet. Stop `qp serve` first: the file must not change while
//! it is read.

use super::sql::{Param, Value};
use super::{Conn, DbError, DbResult};

/// Each table with the columns copied (generated keys are left for
/// PostgreSQL to number, in the same order).
const TABLES: &[(&str, &str, &str)] = &[
    (
        "users",
        "id, display_name, created_at, disabled_at",
        "created_at, id",
    ),
    (
        "rooms",
        "id, code, name, webhook_url, webhook_secret, webhook_events, created_at",
        "created_at, id",
    ),
    ("memberships", "room_id, user_id, admin", "room_id, user_id"),
    (
        "agents",
        "id, name, owner_user_id, scopes, created_at, handle, disabled_at, signed_in_by",
        "created_at, id",
    ),
    ("agent_rooms", "agent_id, room_id", "agent_id, room_id"),
    (
        "tokens",
        "hash, kind, subject_id, label, created_at, last_used_at",
        "created_at, hash",
    ),
    (
        "questions",
        "id, room_id, agent_id, state, scope, target_user_id, correlation_id, expires_at, created_at, body",
        "seq",
    ),
    (
        "answer_keys",
        "user_id, key, question_id, status, response, created_at",
        "created_at, user_id, key",
    ),
    (
        "webhook_deliveries",
        "id, room_id, event, body, state, attempts, next_attempt_ms, last_error, created_at",
        "seq",
    ),
    (
        "devices",
        "id, user_id, platform, push_token, app_id, created_at, locale, public_key, token_hash, apns_environment",
        "created_at, id",
    ),
    (
        "push_jobs",
        "device_id, question_id, kind, state, attempts, next_attempt_ms, last_error, created_at, open_claims, unanswered",
        "id",
    ),
    (
        "dev_inbox",
        "device_id, format, payload, created_ms",
        "seq",
    ),
    (
        "invites",
        "id, secret_hash, kind, subject_id, created_at, expires_at, used_at, failed_attempts",
        "created_at, id",
    ),
    (
        "tokens_disabled",
        "hash, kind, subject_id, label, created_at, last_used_at",
        "created_at, hash",
    ),
    ("audit_log", "at, actor, action, subject, detail", "seq"),
    (
        "mcp_sessions",
        "id_hash, agent_id, state, created_at, last_seen_ms",
        "created_at, id_hash",
    ),
    (
        "oauth_clients",
        "id, kind, name, redirect_uris, host, fetched_at, created_at, registered_from",
        "created_at, id",
    ),
    (
        "oauth_consents",
        "id_hash, kind, client_id, user_id, room_id, question_id, state, redirect_uri, state_param, code_challenge, resource, user_code, interval_secs, last_poll_at, agent_id, expires_at, created_at",
        "created_at, id_hash",
    ),
    (
        "oauth_codes",
        "hash, client_id, redirect_uri, code_challenge, resource, agent_id, grant_hash, expires_at, used_at, created_at",
        "created_at, hash",
    ),
    (
        "oauth_tokens",
        "hash, kind, grant_hash, client_id, resource, agent_id, expires_at, used_at, created_at",
        "created_at, hash",
    ),
    ("oauth_askers", "user_id, agent_id", "user_id"),
];

/// Rows read from SQLite at a time.
const PAGE: usize = 5_000;

/// Rows copied per table, in `TABLES` order.
pub type Copied = Vec<(&'static str, usize)>;

/// Copies everything in `from` (SQLite) into `to` (PostgreSQL, migrated,
/// empty). Nothing is written unless everything is.
pub fn sqlite_to_postgres(from: &Conn, to: &Conn) -> DbResult<Copied> {
    for (table, _, _) in TABLES {
        let n: i64 = to.query_row(&format!("SELECT COUNT(*) FROM {table}"), &[], |r| r.get(0))?;
        if n > 0 {
            return Err(DbError::Other(format!(
                "the PostgreSQL database already has data ({n} rows in {table}): copy into an empty one"
            )));
        }
    }
    let tx = to.transaction()?;
    let mut copied = Vec::with_capacity(TABLES.len());
    for (table, columns, order) in TABLES {
        let n = columns.split(',').count();
        let placeholders: Vec<String> = (1..=n).map(|i| format!("?{i}")).collect();
        let insert = format!(
            "INSERT INTO {table} ({columns}) VALUES ({})",
            placeholders.join(", ")
        );
        // In pages, so a large file is never read into memory at once.
        let select = format!("SELECT {columns} FROM {table} ORDER BY {order} LIMIT ?1 OFFSET ?2");
        let mut total = 0;
        loop {
            let rows = from.query(&select, crate::params![PAGE, total])?;
            for row in &rows {
                let params: Vec<Param> = row
                    .0
                    .iter()
                    .map(|v| match v {
                        Value::Null => Param::Null,
                        Value::Int(i) => Param::Int(*i),
                        Value::Text(t) => Param::Text(t),
                    })
                    .collect();
                tx.execute(&insert, &params)?;
            }
            total += rows.len();
            if rows.len() < PAGE {
                break;
            }
        }
        copied.push((*table, total));
    }
    tx.commit()?;
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::TABLES;

    /// Columns PostgreSQL numbers itself (the copy keeps their order, not
    /// their values).
    const GENERATED: &[&str] = &["seq", "id"];

    /// Every table and column of the SQLite schema is copied: a column
    /// added by a migration and not to [`TABLES`] would be dropped on the
    /// move to PostgreSQL without a word.
    #[test]
    fn every_table_and_column_of_the_schema_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open(&dir.path().join("copy.sqlite")).unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut missing = Vec::new();
        for table in &tables {
            let Some((_, copied, _)) = TABLES.iter().find(|(t, _, _)| t == table) else {
                missing.push(format!("table {table}"));
                continue;
            };
            let copied: Vec<&str> = copied.split(',').map(str::trim).collect();
            let columns: Vec<String> = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            for column in columns {
                let generated =
                    GENERATED.contains(&column.as_str()) && !copied.contains(&column.as_str());
                if !generated && !copied.contains(&column.as_str()) {
                    missing.push(format!("{table}.{column}"));
                }
            }
        }
        assert!(missing.is_empty(), "not copied to PostgreSQL: {missing:?}");
    }
}
