//! The audit log: who did what to whom, for the actions an operator must be
//! able to account for: every action that creates, removes or changes a
//! credential or an agent, whichever surface it came from (`qp admin`,
//! pairings, agent sign-ins, a person removing their agent or signing out,
//! OAuth grants, offboarding). Rows are appended and never updated; the
//! log has no retention of its own (`qp admin purge` leaves it alone).
//!
//! `actor` names who acted: `admin-cli:<os user>` for `qp admin`,
//! `admin-token:<label>` for the admin HTTP endpoints, `user:<id>` and
//! `agent:<id>` for what the person or agent did themselves,
//! `oauth-client:<client id>` for an OAuth client's own token requests, and
//! `server` for what the server did on its own (ending a grant whose code
//! was replayed, making a person's consent asker).

use serde::Serialize;

use super::{now_secs, Conn, DbResult};
use crate::params;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub seq: i64,
    /// Unix seconds.
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub subject: String,
    pub detail: String,
}

/// Appends one entry.
pub fn record(conn: &Conn, actor: &str, action: &str, subject: &str, detail: &str) -> DbResult<()> {
    conn.execute(
        "INSERT INTO audit_log (at, actor, action, subject, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![now_secs(), actor, action, subject, detail],
    )?;
    Ok(())
}

/// Entries at or after `since` (Unix seconds), oldest first.
pub fn since(conn: &Conn, since: i64, limit: usize) -> DbResult<Vec<Entry>> {
    conn.query_map(
        "SELECT seq, at, actor, action, subject, detail FROM audit_log
         WHERE at >= ?1 ORDER BY seq LIMIT ?2",
        params![since, limit],
        |r| {
            Ok(Entry {
                seq: r.get(0)?,
                at: r.get(1)?,
                actor: r.get(2)?,
                action: r.get(3)?,
                subject: r.get(4)?,
                detail: r.get(5)?,
            })
        },
    )
}

/// The actor of `qp admin`: the operating-system user who ran it.
pub fn cli_actor() -> String {
    let who = std::env::var("SUDO_USER")
        .or_else(|_| std::env::var("USER"))
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".into());
    format!("admin-cli:{who}")
}
