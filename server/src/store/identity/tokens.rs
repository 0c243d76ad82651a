//! Tokens (shown once, stored as hashes) and authentication.
use super::*;

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
    let tx = conn.transaction()?;
    let done = revoke_token_in(&*tx, hash_prefix)?;
    tx.commit()?;
    Ok(done)
}

/// [`revoke_token`] inside the caller's transaction (an audited admin change).
pub fn revoke_token_in(tx: &Conn, hash_prefix: &str) -> Result<Vec<String>, StoreError> {
    if hash_prefix.len() < 8 || !hash_prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(StoreError::Invalid(
            "give at least 8 hex digits of the token hash, as `qp admin token list` shows".into(),
        ));
    }
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
    crate::store::events::notify_revoked(tx, hash)?;
    let mut untied = Vec::new();
    if kind == "user" {
        remove_devices_of_token(tx, hash, subject)?;
        untied = tx.query_map(
            "SELECT id FROM devices WHERE user_id = ?1 AND token_hash IS NULL ORDER BY created_at, id",
            params![subject],
            |r| r.get(0),
        )?;
    }
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
    kind: crate::store::invites::InviteKind,
    subject_id: &str,
    label: &str,
) -> DbResult<String> {
    match kind {
        crate::store::invites::InviteKind::User => {
            insert_token(conn, "user", subject_id, label, ids::USER_TOKEN_PREFIX)
        }
        crate::store::invites::InviteKind::Agent => {
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

/// Relabels a token (what the operator's lists show for it).
pub fn relabel_token(conn: &Conn, hash: &str, label: &str) -> DbResult<()> {
    conn.execute(
        "UPDATE tokens SET label = ?2 WHERE hash = ?1",
        params![hash, label],
    )?;
    Ok(())
}
