//! Users, rooms, memberships, agents, tokens and devices.

use super::{Conn, DbResult};
use crate::params;
use qp_core::protocol::identity::{self as identity_rules, IdentityError};
use serde::Serialize;

use super::{now_secs, StoreError};
use crate::ids;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct User {
    pub id: String,
    pub display_name: String,
    /// Set when this user came from the token cache: the hash of the
    /// token, whose existence the operation's first statement confirms
    /// (`crate::token_cache`).
    #[serde(skip)]
    pub check_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Webhook {
    pub url: String,
    #[serde(skip)]
    pub secret: String,
    /// Event names forwarded; empty forwards every event.
    pub events: Vec<String>,
}

impl Webhook {
    /// The room's filter: matched by exact event name; empty matches all.
    pub fn wants(&self, event: &str) -> bool {
        self.events.is_empty() || self.events.iter().any(|e| e == event)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Room {
    pub id: String,
    pub code: String,
    pub name: String,
    pub webhook: Option<Webhook>,
}

/// Scopes an agent token may carry.
pub const SCOPE_ASK: &str = "ask";
pub const SCOPE_READ: &str = "read";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agent {
    pub id: String,
    pub name: String,
    /// URL-safe, derived from the name at creation (`release-bot`).
    pub handle: String,
    pub owner_user_id: String,
    pub scopes: Vec<String>,
    /// As [`User::check_token`].
    #[serde(skip)]
    pub check_token: Option<String>,
}

impl Agent {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Who a bearer token belongs to.
#[derive(Debug, Clone)]
pub enum Principal {
    Agent(Agent),
    User(User),
    /// An operator's token (`qp admin token add-admin`): admin endpoints only.
    Admin {
        label: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct TokenInfo {
    /// The first 12 hex digits of the token's hash: enough to name it for
    /// revocation, useless to authenticate.
    pub hash_prefix: String,
    pub kind: String,
    pub subject_id: String,
    pub label: String,
    pub created_at: i64,
    /// Unix seconds of the last request made with it (to the minute), if any.
    pub last_used_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device {
    pub id: String,
    pub user_id: String,
    pub platform: String,
    pub push_token: String,
    pub app_id: String,
    /// The person's language (BCP 47, `de`, `pt-BR`), for the visible text
    /// of pushes; empty for English.
    pub locale: String,
    /// The device's public key (base64 X25519, checked when registered):
    /// its pushes are end-to-end encrypted to it.
    pub public_key: Option<String>,
    /// iOS: which APNs its token is from (`production`, `sandbox`, checked
    /// when registered); none: the server's default (`--apns-sandbox`).
    pub apns_environment: Option<String>,
}

/// A uniqueness violation becomes `Conflict(message)`; anything else stays a database error.
fn conflict_on_unique(e: super::DbError, message: impl FnOnce() -> String) -> StoreError {
    if e.is_unique_violation() {
        StoreError::Conflict(message())
    } else {
        e.into()
    }
}

/// A broken identity rule (the core's, shared with the phone's decoder) as
/// the store's error: "room name must be 1 to 80 characters".
fn rule(what: &str, checked: Result<(), IdentityError>) -> Result<(), StoreError> {
    checked.map_err(|e| StoreError::Invalid(format!("{what} {e}")))
}

// ---- users ----

pub fn create_user(conn: &Conn, display_name: &str, id: Option<&str>) -> Result<User, StoreError> {
    let display_name = display_name.trim();
    rule(
        "display name",
        identity_rules::check_display_name(display_name),
    )?;
    let id = match id {
        Some(id) => {
            rule(
                &format!("user id {id:?}"),
                identity_rules::check_user_id(id),
            )?;
            id.to_string()
        }
        None => ids::new_id("u"),
    };
    conn.execute(
        "INSERT INTO users (id, display_name, created_at) VALUES (?1, ?2, ?3)",
        params![id, display_name, now_secs()],
    )
    .map_err(|e| conflict_on_unique(e, || format!("user {id} already exists")))?;
    Ok(User {
        id,
        display_name: display_name.to_string(),
        check_token: None,
    })
}

pub fn user(conn: &Conn, id: &str) -> DbResult<Option<User>> {
    conn.query_opt(
        "SELECT id, display_name FROM users WHERE id = ?1",
        params![id],
        |r| {
            Ok(User {
                id: r.get(0)?,
                display_name: r.get(1)?,
                check_token: None,
            })
        },
    )
}

pub fn require_user(conn: &Conn, id: &str) -> Result<User, StoreError> {
    user(conn, id)?.ok_or_else(|| StoreError::NotFound(format!("no user {id}")))
}

pub fn list_users(conn: &Conn) -> DbResult<Vec<User>> {
    conn.query_map(
        "SELECT id, display_name FROM users ORDER BY created_at, id",
        &[],
        |r| {
            Ok(User {
                id: r.get(0)?,
                display_name: r.get(1)?,
                check_token: None,
            })
        },
    )
}

// ---- rooms ----

fn room_from_row(r: &super::sql::Row) -> DbResult<Room> {
    room_at(r, 0)
}

/// A room read from [`ROOM_COLUMNS`] starting at column `at`.
pub(crate) fn room_at(r: &super::sql::Row, at: usize) -> DbResult<Room> {
    let url: Option<String> = r.get(at + 3)?;
    let secret: Option<String> = r.get(at + 4)?;
    let events: String = r.get(at + 5)?;
    Ok(Room {
        id: r.get(at)?,
        code: r.get(at + 1)?,
        name: r.get(at + 2)?,
        webhook: match (url, secret) {
            (Some(url), Some(secret)) => Some(Webhook {
                url,
                secret,
                events: events
                    .split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(String::from)
                    .collect(),
            }),
            _ => None,
        },
    })
}

pub(crate) const ROOM_COLUMNS: &str = "id, code, name, webhook_url, webhook_secret, webhook_events";

pub fn create_room(conn: &Conn, name: &str, code: Option<&str>) -> Result<Room, StoreError> {
    let name = name.trim();
    rule("room name", identity_rules::check_display_name(name))?;
    let code = match code {
        Some(c) => {
            let c = c.trim().to_ascii_uppercase();
            rule(
                &format!("room code {c:?}"),
                identity_rules::check_room_code(&c),
            )?;
            c
        }
        None => ids::new_room_code(),
    };
    let id = ids::new_id("r");
    conn.execute(
        "INSERT INTO rooms (id, code, name, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![id, code, name, now_secs()],
    )
    .map_err(|e| conflict_on_unique(e, || format!("room code {code} is taken")))?;
    Ok(Room {
        id,
        code,
        name: name.to_string(),
        webhook: None,
    })
}

/// A room by its invite code (case-insensitive).
pub fn room_by_code(conn: &Conn, code: &str) -> DbResult<Option<Room>> {
    conn.query_opt(
        &format!("SELECT {ROOM_COLUMNS} FROM rooms WHERE code = ?1"),
        params![code.to_ascii_uppercase()],
        room_from_row,
    )
}

pub fn room_by_id(conn: &Conn, id: &str) -> DbResult<Option<Room>> {
    conn.query_opt(
        &format!("SELECT {ROOM_COLUMNS} FROM rooms WHERE id = ?1"),
        params![id],
        room_from_row,
    )
}

pub fn require_room(conn: &Conn, code: &str) -> Result<Room, StoreError> {
    room_by_code(conn, code)?
        .ok_or_else(|| StoreError::NotFound(format!("no room with code {code}")))
}

pub fn list_rooms(conn: &Conn) -> DbResult<Vec<Room>> {
    conn.query_map(
        &format!("SELECT {ROOM_COLUMNS} FROM rooms ORDER BY created_at, code"),
        &[],
        room_from_row,
    )
}

pub fn add_member(conn: &Conn, room_id: &str, user_id: &str) -> DbResult<()> {
    conn.execute(
        "INSERT INTO memberships (room_id, user_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        params![room_id, user_id],
    )?;
    Ok(())
}

pub fn is_member(conn: &Conn, room_id: &str, user_id: &str) -> DbResult<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM memberships WHERE room_id = ?1 AND user_id = ?2)",
        params![room_id, user_id],
        |r| r.get(0),
    )
}

pub fn members(conn: &Conn, room_id: &str) -> DbResult<Vec<User>> {
    conn.query_map(
        "SELECT u.id, u.display_name FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.room_id = ?1 ORDER BY u.id",
        params![room_id],
        |r| {
            Ok(User {
                id: r.get(0)?,
                display_name: r.get(1)?,
                check_token: None,
            })
        },
    )
}

pub fn set_webhook(
    conn: &Conn,
    room_id: &str,
    webhook: Option<&Webhook>,
) -> Result<(), StoreError> {
    if let Some(w) = webhook {
        if !(w.url.starts_with("http://") || w.url.starts_with("https://")) {
            return Err(StoreError::Invalid(format!(
                "webhook URL {:?} must start with http:// or https://",
                w.url
            )));
        }
        if w.secret.len() < 16 {
            return Err(StoreError::Invalid(
                "webhook signing secret must be at least 16 characters".into(),
            ));
        }
    }
    conn.execute(
        "UPDATE rooms SET webhook_url = ?2, webhook_secret = ?3, webhook_events = ?4 WHERE id = ?1",
        params![
            room_id,
            webhook.map(|w| w.url.clone()),
            webhook.map(|w| w.secret.clone()),
            webhook.map(|w| w.events.join(",")).unwrap_or_default(),
        ],
    )?;
    Ok(())
}

// ---- agents and tokens ----

fn insert_token(
    conn: &Conn,
    kind: &str,
    subject_id: &str,
    label: &str,
    prefix: &str,
) -> DbResult<String> {
    let token = ids::new_token(prefix);
    conn.execute(
        "INSERT INTO tokens (hash, kind, subject_id, label, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![ids::token_hash(&token), kind, subject_id, label, now_secs()],
    )?;
    Ok(token)
}

/// Creates an agent owned by `owner_user_id`, allowed to act in `room_ids`,
/// and returns it with its bearer token (shown once, never stored).
pub fn create_agent(
    conn: &Conn,
    name: &str,
    owner_user_id: &str,
    scopes: &[String],
    room_ids: &[String],
) -> Result<(Agent, String), StoreError> {
    let name = name.trim();
    rule("agent name", identity_rules::check_display_name(name))?;
    require_user(conn, owner_user_id)?;
    for s in scopes {
        if s != SCOPE_ASK && s != SCOPE_READ {
            return Err(StoreError::Invalid(format!(
                "unknown scope {s:?} (known: ask, read)"
            )));
        }
    }
    let id = ids::new_id("a");
    let handle = identity_rules::handle_of(name, &id);
    conn.execute(
        "INSERT INTO agents (id, name, handle, owner_user_id, scopes, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, name, handle, owner_user_id, scopes.join(","), now_secs()],
    )?;
    for room_id in room_ids {
        conn.execute(
            "INSERT INTO agent_rooms (agent_id, room_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![id, room_id],
        )?;
    }
    let token = insert_token(conn, "agent", &id, name, ids::AGENT_TOKEN_PREFIX)?;
    Ok((
        Agent {
            id,
            name: name.to_string(),
            handle,
            owner_user_id: owner_user_id.to_string(),
            scopes: scopes.to_vec(),
            check_token: None,
        },
        token,
    ))
}

const AGENT_BY_ID: &str =
    "SELECT id, name, owner_user_id, scopes, handle FROM agents WHERE id = ?1";
const ALL_AGENTS: &str =
    "SELECT id, name, owner_user_id, scopes, handle FROM agents ORDER BY created_at, id";

fn agent_from_row(r: &super::sql::Row) -> DbResult<Agent> {
    Ok(agent_from_parts(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        &r.get::<String>(3)?,
        r.get(4)?,
    ))
}

fn agent_from_parts(
    id: String,
    name: String,
    owner_user_id: String,
    scopes: &str,
    handle: Option<String>,
) -> Agent {
    // Agents created before handles existed get theirs derived on read.
    let handle = handle.unwrap_or_else(|| identity_rules::handle_of(&name, &id));
    Agent {
        id,
        name,
        handle,
        owner_user_id,
        scopes: scopes
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        check_token: None,
    }
}

pub fn list_agents(conn: &Conn) -> DbResult<Vec<(Agent, Vec<String>)>> {
    let agents = conn.query_map(ALL_AGENTS, &[], agent_from_row)?;
    let mut out = Vec::with_capacity(agents.len());
    for a in agents {
        let codes = conn.query_map(
            "SELECT r.code FROM agent_rooms ar JOIN rooms r ON r.id = ar.room_id WHERE ar.agent_id = ?1 ORDER BY r.code",
            params![a.id],
            |r| r.get(0),
        )?;
        out.push((a, codes));
    }
    Ok(out)
}

pub fn agent_may_use_room(conn: &Conn, agent_id: &str, room_id: &str) -> DbResult<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM agent_rooms WHERE agent_id = ?1 AND room_id = ?2)",
        params![agent_id, room_id],
        |r| r.get(0),
    )
}

pub fn allow_agent_room(conn: &Conn, agent_id: &str, room_id: &str) -> DbResult<()> {
    conn.execute(
        "INSERT INTO agent_rooms (agent_id, room_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        params![agent_id, room_id],
    )?;
    Ok(())
}

/// A new device token for a user; shown once, stored as a hash.
pub fn create_user_token(conn: &Conn, user_id: &str, label: &str) -> Result<String, StoreError> {
    require_user(conn, user_id)?;
    Ok(insert_token(
        conn,
        "user",
        user_id,
        label,
        ids::USER_TOKEN_PREFIX,
    )?)
}

pub fn list_tokens(conn: &Conn) -> DbResult<Vec<TokenInfo>> {
    conn.query_map(
        "SELECT hash, kind, subject_id, label, created_at, last_used_at FROM tokens ORDER BY created_at, hash",
        &[], |r| {
        let hash: String = r.get(0)?;
        Ok(TokenInfo {
            hash_prefix: hash[..12].to_string(),
            kind: r.get(1)?,
            subject_id: r.get(2)?,
            label: r.get(3)?,
            created_at: r.get(4)?,
            last_used_at: r.get(5)?,
        })
    })
}

/// Revokes the one token whose hash starts with `hash_prefix` (as listed),
/// and removes the devices it registered, so a revoked phone gets no more
/// pushes (devices belong to users, but each is tied to the token that
/// registered it). When it was its user's last token, the user's devices
/// registered before devices were tied to tokens go too.
///
/// Returns the ids of that user's devices kept although tied to no token
/// (registered before migration 7): which token registered them is not
/// known, so one may be this token's phone, still getting pushes while the
/// user has another token. The operator is told, to remove it by hand.
pub fn revoke_token(conn: &Conn, hash_prefix: &str) -> Result<Vec<String>, StoreError> {
    if hash_prefix.len() < 8 || !hash_prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(StoreError::Invalid(
            "give at least 8 hex digits of the token hash, as `qp admin token list` shows".into(),
        ));
    }
    let tx = conn.transaction()?;
    let matches: Vec<(String, String, String)> = tx.query_map(
        "SELECT hash, kind, subject_id FROM tokens WHERE hash LIKE ?1 LIMIT 2",
        params![format!("{}%", hash_prefix.to_ascii_lowercase())],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let [(hash, kind, subject)] = matches.as_slice() else {
        return Err(StoreError::NotFound(format!(
            "no single token matches {hash_prefix}"
        )));
    };
    tx.execute("DELETE FROM tokens WHERE hash = ?1", params![hash])?;
    // Instances that remember the token forget it when this commits.
    crate::wakeups::notify_revoked(&*tx, hash)?;
    let mut untied = Vec::new();
    if kind == "user" {
        remove_devices_of_token(&*tx, hash, subject)?;
        untied = tx.query_map(
            "SELECT id FROM devices WHERE user_id = ?1 AND token_hash IS NULL ORDER BY created_at, id",
            params![subject],
            |r| r.get(0),
        )?;
    }
    tx.commit()?;
    Ok(untied)
}

/// The devices `hash` registered, and, once `user_id` has no token left,
/// that user's devices tied to no token.
fn remove_devices_of_token(conn: &Conn, hash: &str, user_id: &str) -> DbResult<()> {
    conn.execute("DELETE FROM devices WHERE token_hash = ?1", params![hash])?;
    conn.execute(
        "DELETE FROM devices WHERE user_id = ?1 AND token_hash IS NULL
           AND NOT EXISTS (SELECT 1 FROM tokens WHERE kind = 'user' AND subject_id = ?1)",
        params![user_id],
    )?;
    Ok(())
}

/// The agent with this id.
pub fn agent(conn: &Conn, id: &str) -> DbResult<Option<Agent>> {
    conn.query_opt(AGENT_BY_ID, params![id], agent_from_row)
}

/// A new operator token for the admin endpoints (`POST /api/admin/…`).
pub fn create_admin_token(conn: &Conn, label: &str) -> Result<String, StoreError> {
    Ok(insert_token(
        conn,
        "admin",
        "admin",
        label,
        ids::ADMIN_TOKEN_PREFIX,
    )?)
}

/// A new token minted by redeeming an invite (a paired phone, `qp login`).
pub fn mint_token(
    conn: &Conn,
    kind: super::invites::InviteKind,
    subject_id: &str,
    label: &str,
) -> DbResult<String> {
    match kind {
        super::invites::InviteKind::User => {
            insert_token(conn, "user", subject_id, label, ids::USER_TOKEN_PREFIX)
        }
        super::invites::InviteKind::Agent => {
            insert_token(conn, "agent", subject_id, label, ids::AGENT_TOKEN_PREFIX)
        }
    }
}

/// How often a token's `last_used_at` is written at most: reads stay reads.
pub const LAST_USED_GRANULARITY_SECS: i64 = 60;

/// Who presents `token`, if anyone. Records when it was last used (to the
/// minute, so most requests write nothing).
pub fn authenticate(conn: &Conn, token: &str) -> DbResult<Option<Principal>> {
    authenticate_hash(conn, &ids::token_hash(token))
}

/// [`authenticate`] by the token's hash: one statement (the token with its
/// agent or user), and a second only when `last_used_at` is a minute old.
pub fn authenticate_hash(conn: &Conn, hash: &str) -> DbResult<Option<Principal>> {
    let row = conn.query_opt(
        "SELECT t.kind, t.label, t.last_used_at, a.id, a.name, a.owner_user_id, a.scopes, a.handle,
                u.id, u.display_name
         FROM tokens t
         LEFT JOIN agents a ON t.kind = 'agent' AND a.id = t.subject_id
         LEFT JOIN users u ON t.kind = 'user' AND u.id = t.subject_id
         WHERE t.hash = ?1",
        params![hash],
        |r| {
            let kind: String = r.get(0)?;
            let principal = match kind.as_str() {
                "admin" => Some(Principal::Admin { label: r.get(1)? }),
                "agent" => match r.get::<Option<String>>(3)? {
                    Some(id) => Some(Principal::Agent(agent_from_parts(
                        id,
                        r.get(4)?,
                        r.get(5)?,
                        &r.get::<String>(6)?,
                        r.get(7)?,
                    ))),
                    None => None,
                },
                _ => match r.get::<Option<String>>(8)? {
                    Some(id) => Some(Principal::User(User {
                        id,
                        display_name: r.get(9)?,
                        check_token: None,
                    })),
                    None => None,
                },
            };
            Ok((principal, r.get::<Option<i64>>(2)?))
        },
    )?;
    let Some((principal, last_used)) = row else {
        return Ok(None);
    };
    let now = now_secs();
    if last_used.is_none_or(|t| now - t >= LAST_USED_GRANULARITY_SECS) {
        stamp_use(conn, hash, now)?;
    }
    Ok(principal)
}

/// Records a use of the token at `at` (Unix seconds), unless one within
/// the last minute is recorded already.
pub fn stamp_use(conn: &Conn, hash: &str, at: i64) -> DbResult<()> {
    conn.execute(
        "UPDATE tokens SET last_used_at = ?2 WHERE hash = ?1
           AND (last_used_at IS NULL OR last_used_at <= CAST(?2 AS BIGINT) - CAST(?3 AS BIGINT))",
        params![hash, at, LAST_USED_GRANULARITY_SECS],
    )?;
    Ok(())
}

// ---- devices ----

/// What a device registers with.
pub struct DeviceRegistration<'a> {
    pub platform: &'a str,
    pub push_token: &'a str,
    pub app_id: &'a str,
    pub locale: &'a str,
    pub public_key: Option<&'a str>,
    /// `production` or `sandbox` (checked by the caller), or none.
    pub apns_environment: Option<&'a str>,
}

/// A device as the operator sees it (`qp admin device list`).
#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    #[serde(flatten)]
    pub device: Device,
    /// The first 12 hex digits of the hash of the token that registered it,
    /// as `qp admin token list` shows them; none for a device registered
    /// before devices were tied to tokens.
    pub token_prefix: Option<String>,
    pub created_at: i64,
}

pub(crate) const DEVICE_COLUMNS: &str =
    "id, user_id, platform, push_token, app_id, locale, public_key, apns_environment";

pub(crate) fn device_from_row(r: &super::sql::Row) -> DbResult<Device> {
    Ok(Device {
        id: r.get(0)?,
        user_id: r.get(1)?,
        platform: r.get(2)?,
        push_token: r.get(3)?,
        app_id: r.get(4)?,
        locale: r.get(5)?,
        public_key: r.get(6)?,
        apns_environment: r.get(7)?,
    })
}

/// Who holds a push token now: the device's id, its user, and its key.
struct Holder {
    id: String,
    user_id: String,
    public_key: Option<String>,
}

/// `push_token` is as [`push_token_key`] made it. An APNs token an older
/// server stored as sent is found in capitals too (apps write the hex all
/// in one case), so it cannot be taken in the other case either.
fn holder_of(conn: &Conn, platform: &str, push_token: &str) -> DbResult<Option<Holder>> {
    let capitals = match platform {
        "ios" => push_token.to_ascii_uppercase(),
        _ => push_token.to_string(),
    };
    conn.query_opt(
        "SELECT id, user_id, public_key FROM devices WHERE platform = ?1 AND push_token IN (?2, ?3)
         ORDER BY push_token = ?2 DESC LIMIT 1",
        params![platform, push_token, capitals],
        |r| {
            Ok(Holder {
                id: r.get(0)?,
                user_id: r.get(1)?,
                public_key: r.get(2)?,
            })
        },
    )
}

/// Registers (or re-registers) a device for push, tied to the token that
/// registered it (`token_hash`, as stored in `tokens`): revoking that token
/// removes the device. The rules:
/// - the push token must suit its platform (APNs hex, FCM's alphabet);
/// - a push token another user's device holds is refused (409): taking a
///   phone's pushes needs that device removed first (by its owner, by an
///   admin, or by revoking the token that registered it), so nobody can
///   redirect someone else's pushes by knowing their push token;
/// - the same user registering again updates app id, language and token,
///   and keeps the stored public key when none is sent: encryption is never
///   turned off by an omission (remove the device to drop the key).
pub fn register_device(
    conn: &Conn,
    user_id: &str,
    token_hash: Option<&str>,
    reg: &DeviceRegistration<'_>,
) -> Result<Device, StoreError> {
    qp_core::protocol::device::check_push_token(reg.platform, reg.push_token)
        .map_err(|e| StoreError::Invalid(format!("push_token {e}")))?;
    let push_token = push_token_key(reg.platform, reg.push_token);
    let reg = DeviceRegistration {
        push_token: &push_token,
        ..*reg
    };
    register_once(conn, user_id, token_hash, &reg, false)
}

/// The push token as it is stored and compared. An APNs token is hex,
/// which APNs reads in either letter case: kept as sent, `AB…` would be a
/// second device of another user for the phone that registered `ab…`, so
/// the 409 rule would not hold (issue 32, finding 5). FCM and dev tokens
/// are case-sensitive and stay as sent.
fn push_token_key(platform: &str, push_token: &str) -> String {
    match platform {
        "ios" => push_token.to_ascii_lowercase(),
        _ => push_token.to_string(),
    }
}

fn register_once(
    conn: &Conn,
    user_id: &str,
    token_hash: Option<&str>,
    reg: &DeviceRegistration<'_>,
    retried: bool,
) -> Result<Device, StoreError> {
    let (id, public_key) = match holder_of(conn, reg.platform, reg.push_token)? {
        Some(holder) if holder.user_id != user_id => return Err(taken(reg.platform)),
        Some(holder) => {
            let key = reg.public_key.map(str::to_string).or(holder.public_key);
            conn.execute(
                "UPDATE devices SET app_id = ?2, locale = ?3, public_key = ?4,
                     token_hash = COALESCE(?5, token_hash), apns_environment = ?6 WHERE id = ?1",
                params![
                    holder.id,
                    reg.app_id,
                    reg.locale,
                    key,
                    token_hash,
                    reg.apns_environment
                ],
            )?;
            (holder.id, key)
        }
        None => {
            let id = ids::new_id("dev");
            let inserted = conn.execute(
                "INSERT INTO devices (id, user_id, platform, push_token, app_id, locale, public_key, token_hash, created_at, apns_environment)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING",
                params![id, user_id, reg.platform, reg.push_token, reg.app_id, reg.locale, reg.public_key, token_hash, now_secs(), reg.apns_environment],
            )?;
            if inserted == 0 {
                // The same push token registered at the same moment through
                // another instance (PostgreSQL): that row is committed now;
                // take it as the existing one.
                if !retried {
                    return register_once(conn, user_id, token_hash, reg, true);
                }
                return Err(super::DbError::Other(format!(
                    "a {} device: registered concurrently twice",
                    reg.platform
                ))
                .into());
            }
            (id, reg.public_key.map(str::to_string))
        }
    };
    Ok(Device {
        id,
        user_id: user_id.to_string(),
        platform: reg.platform.to_string(),
        push_token: reg.push_token.to_string(),
        app_id: reg.app_id.to_string(),
        locale: reg.locale.to_string(),
        public_key,
        apns_environment: reg.apns_environment.map(str::to_string),
    })
}

/// The refusal of a push token another user's device holds. It says no
/// more than that (not who holds it).
fn taken(platform: &str) -> StoreError {
    StoreError::Conflict(format!(
        "push_token: this {platform} push token is registered to another user's device; \
         it can move only once that device is removed (by its owner, or by an operator: \
         `qp admin device remove`, or revoking the token that registered it)"
    ))
}

/// Removes a device of this user; false when there is none.
pub fn delete_device(conn: &Conn, user_id: &str, device_id: &str) -> DbResult<bool> {
    Ok(conn.execute(
        "DELETE FROM devices WHERE id = ?1 AND user_id = ?2",
        params![device_id, user_id],
    )? == 1)
}

/// Relabels a token (what the operator's lists show for it).
pub fn relabel_token(conn: &Conn, hash: &str, label: &str) -> DbResult<()> {
    conn.execute(
        "UPDATE tokens SET label = ?2 WHERE hash = ?1",
        params![hash, label],
    )?;
    Ok(())
}

/// Forgets a device its gateway says is gone (its app uninstalled, its
/// token expired), with its queued pushes; already gone is fine.
pub fn forget_device(conn: &Conn, device_id: &str) -> DbResult<()> {
    conn.execute("DELETE FROM devices WHERE id = ?1", params![device_id])?;
    Ok(())
}

/// Removes any device (the operator's `qp admin device remove`), and with
/// it (ON DELETE CASCADE) its queued pushes and what was delivered to it.
pub fn remove_device(conn: &Conn, device_id: &str) -> Result<(), StoreError> {
    let n = conn.execute("DELETE FROM devices WHERE id = ?1", params![device_id])?;
    if n == 1 {
        Ok(())
    } else {
        Err(StoreError::NotFound(format!("no device {device_id}")))
    }
}

/// Whether device `d` may receive pushes (see [`devices_of`]), as SQL.
pub(crate) const DEVICE_MAY_RECEIVE: &str = "CASE
    WHEN d.token_hash IS NULL THEN EXISTS (SELECT 1 FROM tokens t
        WHERE t.kind = 'user' AND t.subject_id = d.user_id)
    ELSE EXISTS (SELECT 1 FROM tokens t WHERE t.hash = d.token_hash)
END";

/// A user's devices that may receive pushes: those whose registering token
/// still exists, and those registered before devices were tied to tokens
/// while their user still has a token. Revoking removes devices as well;
/// this keeps a device whose token went any other way silent too.
pub fn devices_of(conn: &Conn, user_id: &str) -> DbResult<Vec<Device>> {
    conn.query_map(
        &format!(
            "SELECT {DEVICE_COLUMNS} FROM devices d WHERE d.user_id = ?1 AND {DEVICE_MAY_RECEIVE}
             ORDER BY d.created_at, d.id"
        ),
        params![user_id],
        device_from_row,
    )
}

pub fn device_by_id(conn: &Conn, id: &str) -> DbResult<Option<Device>> {
    conn.query_opt(
        &format!("SELECT {DEVICE_COLUMNS} FROM devices WHERE id = ?1"),
        params![id],
        device_from_row,
    )
}

/// Every device (or one user's), oldest first, with the token tied to it.
pub fn list_devices(conn: &Conn, user_id: Option<&str>) -> DbResult<Vec<DeviceInfo>> {
    let columns = format!("SELECT {DEVICE_COLUMNS}, token_hash, created_at FROM devices");
    let read = |r: &super::sql::Row| {
        let hash: Option<String> = r.get(8)?;
        Ok(DeviceInfo {
            device: device_from_row(r)?,
            token_prefix: hash.map(|h| h.chars().take(12).collect()),
            created_at: r.get(9)?,
        })
    };
    match user_id {
        Some(u) => conn.query_map(
            &format!("{columns} WHERE user_id = ?1 ORDER BY created_at, id"),
            params![u],
            read,
        ),
        None => conn.query_map(&format!("{columns} ORDER BY created_at, id"), &[], read),
    }
}
