//! `/mcp` sessions kept in the database, so a session opened on one
//! instance goes on on another (PostgreSQL behind a load balancer without
//! stickiness) and across a restart (either engine).
//!
//! A row is what the transport needs to re-create a session: the agent that
//! owns it and the client's `initialize` parameters (JSON). The id is kept
//! as its SHA-256, like tokens: the agent's token is needed too, but a copy
//! of the database should not hand out live session ids. `last_seen_ms` is
//! stamped by every request naming the session (which also proves it is
//! still there and the caller's) and, while a tool call waits, by the idle
//! reaper of the instance serving it; rows no instance stamped within the
//! idle window are deleted by any instance.

use super::sql::Param;
use super::{now_ms, now_secs, Conn, DbResult};
use crate::params;

/// What the database keeps of a session id.
pub fn key(session_id: &str) -> String {
    crate::ids::token_hash(session_id)
}

/// Records a new session (or refreshes one re-created with the same id);
/// returns the stamp written.
pub fn save(conn: &Conn, session_id: &str, agent_id: &str, state_json: &str) -> DbResult<i64> {
    let now = now_ms();
    conn.execute(
        "INSERT INTO mcp_sessions (id_hash, agent_id, state, created_at, last_seen_ms)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (id_hash) DO UPDATE SET state = excluded.state, last_seen_ms = excluded.last_seen_ms",
        params![key(session_id), agent_id, state_json, now_secs(), now],
    )?;
    Ok(now)
}

/// A live session (stamped at or after `live_since_ms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub agent_id: String,
    /// The client's `initialize` parameters, JSON.
    pub state: String,
    pub last_seen_ms: i64,
}

/// The live session `session_id`, if there is one.
pub fn find(conn: &Conn, session_id: &str, live_since_ms: i64) -> DbResult<Option<Found>> {
    conn.query_opt(
        "SELECT agent_id, state, last_seen_ms FROM mcp_sessions
         WHERE id_hash = ?1 AND last_seen_ms >= ?2",
        params![key(session_id), live_since_ms],
        |r| {
            Ok(Found {
                agent_id: r.get(0)?,
                state: r.get(1)?,
                last_seen_ms: r.get(2)?,
            })
        },
    )
}

/// Stamps the live session `session_id` of `agent_id` as seen now, and
/// returns the stamp; `None` when there is no such session: never opened,
/// another agent's, ended by a DELETE or idle past the window.
pub fn stamp(
    conn: &Conn,
    session_id: &str,
    agent_id: &str,
    live_since_ms: i64,
) -> DbResult<Option<i64>> {
    let now = now_ms();
    conn.query_opt(
        "UPDATE mcp_sessions SET last_seen_ms = ?1
         WHERE id_hash = ?2 AND agent_id = ?3 AND last_seen_ms >= ?4
         RETURNING last_seen_ms",
        params![now, key(session_id), agent_id, live_since_ms],
        |r| r.get(0),
    )
}

/// How many live sessions `agent_id` holds across every instance.
pub fn count_live(conn: &Conn, agent_id: &str, live_since_ms: i64) -> DbResult<u32> {
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM mcp_sessions WHERE agent_id = ?1 AND last_seen_ms >= ?2",
        params![agent_id, live_since_ms],
        |r| r.get(0),
    )?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Stamps sessions this instance is serving without requests arriving (a
/// tool call waiting): one statement per hundred. Returns the stamp and
/// the sessions that are no longer stored (ended elsewhere).
pub fn touch(conn: &Conn, session_ids: &[String]) -> DbResult<(i64, Vec<String>)> {
    let now = now_ms();
    let mut gone = Vec::new();
    for chunk in session_ids.chunks(100) {
        let keys: Vec<String> = chunk.iter().map(|s| key(s)).collect();
        let marks: Vec<String> = (0..keys.len()).map(|i| format!("?{}", i + 2)).collect();
        let sql = format!(
            "UPDATE mcp_sessions SET last_seen_ms = ?1 WHERE id_hash IN ({}) RETURNING id_hash",
            marks.join(", ")
        );
        let mut ps = vec![Param::Int(now)];
        ps.extend(keys.iter().map(|k| Param::Text(k)));
        let stamped: std::collections::HashSet<String> = conn
            .query_map(&sql, &ps, |r| r.get(0))?
            .into_iter()
            .collect();
        gone.extend(
            chunk
                .iter()
                .zip(&keys)
                .filter(|(_, k)| !stamped.contains(*k))
                .map(|(id, _)| id.clone()),
        );
    }
    Ok((now, gone))
}

/// Ends a session for every instance (the client's DELETE): the others
/// hear it at once (PostgreSQL's NOTIFY) and close their copies.
pub fn delete(conn: &Conn, session_id: &str) -> DbResult<()> {
    let tx = conn.transaction()?;
    tx.execute(
        "DELETE FROM mcp_sessions WHERE id_hash = ?1",
        params![key(session_id)],
    )?;
    crate::store::events::notify_mcp_ended(&*tx, &key(session_id))?;
    tx.commit()
}

/// Ends a session this instance found idle, unless another instance has
/// stamped it since this one's last stamp (`stamped_ms`): it is in use there.
pub fn delete_if_unseen_since(conn: &Conn, session_id: &str, stamped_ms: i64) -> DbResult<bool> {
    Ok(conn.execute(
        "DELETE FROM mcp_sessions WHERE id_hash = ?1 AND last_seen_ms <= ?2",
        params![key(session_id), stamped_ms],
    )? > 0)
}

/// Deletes the sessions no instance has stamped since `live_since_ms`.
pub fn purge_idle(conn: &Conn, live_since_ms: i64) -> DbResult<usize> {
    conn.execute(
        "DELETE FROM mcp_sessions WHERE last_seen_ms < ?1",
        params![live_since_ms],
    )
}
