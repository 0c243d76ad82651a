//! The operator's changes (`qp admin`): people, rooms and their members,
//! webhooks, agents and the rooms they may ask in, admin tokens, token
//! revocation, devices. Each runs its change and its audit row in one
//! transaction ([`audited`]), so the log never misses a change that
//! happened, nor records one that did not.
//!
//! `actor` is who acted, as [`crate::store::audit`] names actors
//! (`admin-cli:<os user>` for `qp admin`).

use crate::store::identity::{self, Agent, Room, User, Webhook};
use crate::store::offboard::{self, Changed, Subject};
use crate::store::{self, audit, Conn, StoreError};

use super::error::AppResult;

/// Runs `change` and records its audit row, both in one transaction: a
/// change whose row cannot be written is rolled back.
pub fn audited<T>(
    conn: &Conn,
    actor: &str,
    (action, subject, detail): (&str, &str, &str),
    change: impl FnOnce(&Conn) -> Result<T, StoreError>,
) -> AppResult<T> {
    let tx = conn.transaction()?;
    let done = change(&*tx)?;
    audit::record(&*tx, actor, action, subject, detail)?;
    tx.commit()?;
    Ok(done)
}

/// A room's id from its code or id.
fn room_id(conn: &Conn, room: &str) -> Result<String, StoreError> {
    Ok(identity::require_room(conn, room)?.id)
}

pub fn add_user(conn: &Conn, actor: &str, name: &str, id: Option<&str>) -> AppResult<User> {
    audited(conn, actor, ("user.add", "", name), |tx| {
        identity::create_user(tx, name, id)
    })
}

/// Disables, enables or removes a user or an agent (see
/// [`crate::store::offboard`]).
pub fn offboard(
    conn: &Conn,
    actor: &str,
    step: Step,
    who: Subject,
    id: &str,
) -> AppResult<Changed> {
    let action = format!("{}.{}", who.name(), step.name());
    audited(conn, actor, (&action, id, ""), |tx| match step {
        Step::Disable => offboard::disable_in(tx, who, id),
        Step::Enable => offboard::enable_in(tx, who, id),
        Step::Remove => offboard::remove_in(tx, who, id),
    })
}

/// An offboarding step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Disable,
    Enable,
    Remove,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Disable => "disable",
            Step::Enable => "enable",
            Step::Remove => "remove",
        }
    }
}

pub fn add_room(conn: &Conn, actor: &str, name: &str, code: Option<&str>) -> AppResult<Room> {
    audited(conn, actor, ("room.add", "", name), |tx| {
        identity::create_room(tx, name, code)
    })
}

/// Makes `user` a member of `room` (a code or id), its admin when `admin`.
pub fn add_member(conn: &Conn, actor: &str, room: &str, user: &str, admin: bool) -> AppResult<()> {
    let detail = format!("{room}{}", if admin { " (admin)" } else { "" });
    audited(conn, actor, ("room.add_member", user, &detail), |tx| {
        let room_id = room_id(tx, room)?;
        identity::require_user(tx, user)?;
        identity::add_member(tx, &room_id, user)?;
        identity::set_room_admin(tx, &room_id, user, admin)?;
        Ok(())
    })
}

/// Takes `user` out of `room`; not found when they were not a member.
pub fn remove_member(conn: &Conn, actor: &str, room: &str, user: &str) -> AppResult<()> {
    audited(conn, actor, ("room.remove_member", user, room), |tx| {
        let room_id = room_id(tx, room)?;
        if !offboard::remove_member(tx, &room_id, user)? {
            return Err(StoreError::NotFound(format!(
                "{user} is not a member of {room}"
            )));
        }
        Ok(())
    })
}

/// Sets `room`'s webhook, or clears it (`None`).
pub fn set_webhook(conn: &Conn, actor: &str, room: &str, hook: Option<&Webhook>) -> AppResult<()> {
    let detail = if hook.is_some() { "set" } else { "cleared" };
    audited(conn, actor, ("room.webhook", room, detail), |tx| {
        identity::set_webhook(tx, &room_id(tx, room)?, hook)
    })
}

/// A new agent of `owner`, allowed in `rooms` (codes or ids), and its token.
pub fn add_agent(
    conn: &Conn,
    actor: &str,
    name: &str,
    owner: &str,
    scopes: &[String],
    rooms: &[String],
) -> AppResult<(Agent, String)> {
    let detail = format!("{name} (and its token)");
    audited(conn, actor, ("agent.add", owner, &detail), |tx| {
        let room_ids = rooms
            .iter()
            .map(|room| room_id(tx, room))
            .collect::<Result<Vec<_>, _>>()?;
        identity::create_agent(tx, name, owner, scopes, &room_ids)
    })
}

/// Lets `agent` ask in `room` (a code or id).
pub fn allow_agent_room(conn: &Conn, actor: &str, agent: &str, room: &str) -> AppResult<()> {
    audited(conn, actor, ("agent.allow", agent, room), |tx| {
        Ok(identity::allow_agent_room(tx, agent, &room_id(tx, room)?)?)
    })
}

/// A new operator token for the admin endpoints (the token itself, never
/// in the log).
pub fn add_admin_token(conn: &Conn, actor: &str, label: &str) -> AppResult<String> {
    audited(conn, actor, ("token.create", "admin", label), |tx| {
        identity::create_admin_token(tx, label)
    })
}

/// Revokes the one token whose hash starts with `hash_prefix`; the user's
/// devices from before devices were tied to tokens, which it leaves (see
/// [`identity::revoke_token`]).
pub fn revoke_token(conn: &Conn, actor: &str, hash_prefix: &str) -> AppResult<Vec<String>> {
    audited(conn, actor, ("token.revoke", hash_prefix, ""), |tx| {
        identity::revoke_token_in(tx, hash_prefix)
    })
}

pub fn remove_device(conn: &Conn, actor: &str, id: &str) -> AppResult<()> {
    audited(conn, actor, ("device.remove", id, ""), |tx| {
        identity::remove_device(tx, id)
    })
}

/// The retention sweep, run to its end. It runs in batches, each its own
/// transaction (a long purge must not hold the write lock), so its audit
/// row is written once the sweep ended, with what it deleted.
pub fn purge(
    conn: &Conn,
    actor: &str,
    older_than: std::time::Duration,
    batch_size: usize,
) -> AppResult<store::retention::Purged> {
    if batch_size == 0 {
        return Err(StoreError::Invalid("--batch-size must be at least 1".into()).into());
    }
    let plan = store::retention::Plan::older_than(older_than, batch_size, store::now_ms());
    let deleted = store::retention::run_to_end(conn, &plan)?;
    let detail = format!("older than {} s", older_than.as_secs());
    audit::record(conn, actor, "purge", "", &detail)?;
    Ok(deleted)
}
