//! Offboarding: disabling and removing users and agents, and taking a
//! person out of a room.
//!
//! Disabling moves the subject's tokens aside (to `tokens_disabled`), so
//! every token check refuses them exactly as it refuses a revoked token
//! (including the server's token cache, which confirms a token still
//! exists) and a user's devices get no pushes (a device's pushes need its
//! token); enabling moves them back. Removing deletes the tokens, the
//! devices, the memberships or room grants and the open invites for good;
//! the row itself stays, disabled, because the questions the subject asked
//! or answered name it (history and `qp admin questions export` keep
//! working). A disabled or removed subject cannot pair again.

use serde::Serialize;

use super::{now_secs, Conn, DbResult, StoreError};
use crate::params;

/// Whose account: a person or an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    User,
    Agent,
}

impl Subject {
    fn table(self) -> &'static str {
        match self {
            Subject::User => "users",
            Subject::Agent => "agents",
        }
    }
    /// The `tokens.kind` of its tokens.
    fn token_kind(self) -> &'static str {
        match self {
            Subject::User => "user",
            Subject::Agent => "agent",
        }
    }
    pub fn name(self) -> &'static str {
        self.token_kind()
    }
}

/// What an offboarding step changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub tokens: usize,
    pub devices: usize,
    pub rooms: usize,
    pub invites: usize,
}

fn require(conn: &Conn, who: Subject, id: &str) -> Result<Option<i64>, StoreError> {
    conn.query_opt(
        &format!("SELECT disabled_at FROM {} WHERE id = ?1", who.table()),
        params![id],
        |r| r.get::<Option<i64>>(0),
    )?
    .ok_or_else(|| StoreError::NotFound(format!("no {} {id}", who.name())))
}

/// Whether `id` is disabled (or removed); false for an unknown id.
pub fn is_disabled(conn: &Conn, who: Subject, id: &str) -> DbResult<bool> {
    Ok(conn
        .query_opt(
            &format!("SELECT disabled_at FROM {} WHERE id = ?1", who.table()),
            params![id],
            |r| r.get::<Option<i64>>(0),
        )?
        .flatten()
        .is_some())
}

fn cancel_invites(conn: &Conn, who: Subject, id: &str) -> DbResult<usize> {
    conn.execute(
        "DELETE FROM invites WHERE kind = ?1 AND subject_id = ?2 AND used_at IS NULL",
        params![who.token_kind(), id],
    )
}

/// Disables `id`: its tokens stop working at once, its open invites are
/// cancelled. Disabling twice changes nothing more.
pub fn disable(conn: &Conn, who: Subject, id: &str) -> Result<Changed, StoreError> {
    let tx = conn.transaction()?;
    let done = disable_in(&*tx, who, id)?;
    tx.commit()?;
    Ok(done)
}

/// [`disable`] inside the caller's transaction (an audited admin change).
pub fn disable_in(tx: &Conn, who: Subject, id: &str) -> Result<Changed, StoreError> {
    require(tx, who, id)?;
    tx.execute(
        &format!(
            "UPDATE {} SET disabled_at = ?2 WHERE id = ?1 AND disabled_at IS NULL",
            who.table()
        ),
        params![id, now_secs()],
    )?;
    tx.execute(
        "INSERT INTO tokens_disabled (hash, kind, subject_id, label, created_at, last_used_at)
         SELECT hash, kind, subject_id, label, created_at, last_used_at FROM tokens
         WHERE kind = ?1 AND subject_id = ?2 ON CONFLICT DO NOTHING",
        params![who.token_kind(), id],
    )?;
    let tokens = tx.execute(
        "DELETE FROM tokens WHERE kind = ?1 AND subject_id = ?2",
        params![who.token_kind(), id],
    )?;
    let invites = cancel_invites(tx, who, id)?;
    Ok(Changed {
        tokens,
        invites,
        ..Changed::default()
    })
}

/// Enables `id` again: the tokens it had when disabled work again (a
/// removed subject has none left: give it new ones).
pub fn enable(conn: &Conn, who: Subject, id: &str) -> Result<Changed, StoreError> {
    let tx = conn.transaction()?;
    let done = enable_in(&*tx, who, id)?;
    tx.commit()?;
    Ok(done)
}

/// [`enable`] inside the caller's transaction (an audited admin change).
pub fn enable_in(tx: &Conn, who: Subject, id: &str) -> Result<Changed, StoreError> {
    require(tx, who, id)?;
    tx.execute(
        &format!(
            "UPDATE {} SET disabled_at = NULL WHERE id = ?1",
            who.table()
        ),
        params![id],
    )?;
    let tokens = tx.execute(
        "INSERT INTO tokens (hash, kind, subject_id, label, created_at, last_used_at)
         SELECT hash, kind, subject_id, label, created_at, last_used_at FROM tokens_disabled
         WHERE kind = ?1 AND subject_id = ?2 ON CONFLICT DO NOTHING",
        params![who.token_kind(), id],
    )?;
    tx.execute(
        "DELETE FROM tokens_disabled WHERE kind = ?1 AND subject_id = ?2",
        params![who.token_kind(), id],
    )?;
    Ok(Changed {
        tokens,
        ..Changed::default()
    })
}

/// Removes `id` for good (see the module's notes): disabled, every token
/// deleted, a user's devices and memberships, an agent's room grants, and
/// open invites.
pub fn remove(conn: &Conn, who: Subject, id: &str) -> Result<Changed, StoreError> {
    let tx = conn.transaction()?;
    let done = remove_in(&*tx, who, id)?;
    tx.commit()?;
    Ok(done)
}

/// [`remove`] inside the caller's transaction (an audited admin change).
pub fn remove_in(tx: &Conn, who: Subject, id: &str) -> Result<Changed, StoreError> {
    require(tx, who, id)?;
    tx.execute(
        &format!(
            "UPDATE {} SET disabled_at = COALESCE(disabled_at, ?2) WHERE id = ?1",
            who.table()
        ),
        params![id, now_secs()],
    )?;
    let mut tokens = tx.execute(
        "DELETE FROM tokens WHERE kind = ?1 AND subject_id = ?2",
        params![who.token_kind(), id],
    )?;
    tokens += tx.execute(
        "DELETE FROM tokens_disabled WHERE kind = ?1 AND subject_id = ?2",
        params![who.token_kind(), id],
    )?;
    let (devices, rooms) = match who {
        Subject::User => (
            tx.execute("DELETE FROM devices WHERE user_id = ?1", params![id])?,
            tx.execute("DELETE FROM memberships WHERE user_id = ?1", params![id])?,
        ),
        Subject::Agent => (
            0,
            tx.execute("DELETE FROM agent_rooms WHERE agent_id = ?1", params![id])?,
        ),
    };
    let invites = cancel_invites(tx, who, id)?;
    Ok(Changed {
        tokens,
        devices,
        rooms,
        invites,
    })
}

/// Takes `user_id` out of a room: from now on they neither see nor may
/// answer its questions. False when they were not a member.
pub fn remove_member(conn: &Conn, room_id: &str, user_id: &str) -> DbResult<bool> {
    Ok(conn.execute(
        "DELETE FROM memberships WHERE room_id = ?1 AND user_id = ?2",
        params![room_id, user_id],
    )? == 1)
}
