//! OAuth for remote MCP clients and `qp login --url` (the `oauth` module
//! holds the behaviour): clients, consents (each one a question), one-time
//! codes, access and refresh tokens. Every secret (a code, a token, the
//! handle of a consent page, a device code) is kept only as its SHA-256.
//!
//! A *grant* is the agent token row (`tokens`, kind `agent`) made when a
//! person approves: its secret is never handed out, so it authenticates
//! nothing itself, but it is listed by `qp admin token list` and revoking it
//! (or a refresh token reused) ends every token minted under it.

use super::{now_secs, Conn, DbResult};
use crate::ids;
use crate::params;
use crate::store::identity::Agent;

/// A client: registered (`dcr`, RFC 7591) or known by its metadata
/// document's URL (`cimd`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub id: String,
    pub kind: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// The host the client's identity was verified at (its metadata
    /// document's host); empty for a registered client (unverified).
    pub host: String,
    pub fetched_at: Option<i64>,
}

const CLIENT_COLUMNS: &str = "id, kind, name, redirect_uris, host, fetched_at";

fn client_from_row(r: &super::sql::Row) -> DbResult<Client> {
    let uris: String = r.get(3)?;
    Ok(Client {
        id: r.get(0)?,
        kind: r.get(1)?,
        name: r.get(2)?,
        redirect_uris: serde_json::from_str(&uris).unwrap_or_default(),
        host: r.get(4)?,
        fetched_at: r.get(5)?,
    })
}

pub fn client(conn: &Conn, id: &str) -> DbResult<Option<Client>> {
    conn.query_opt(
        &format!("SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE id = ?1"),
        params![id],
        client_from_row,
    )
}

/// Stores a client, replacing what was known of the same id (a metadata
/// document fetched again).
pub fn put_client(conn: &Conn, c: &Client) -> DbResult<()> {
    let uris = serde_json::to_string(&c.redirect_uris).unwrap_or_else(|_| "[]".into());
    conn.execute(
        "INSERT INTO oauth_clients (id, kind, name, redirect_uris, host, fetched_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (id) DO UPDATE SET name = ?3, redirect_uris = ?4, host = ?5, fetched_at = ?6",
        params![c.id, c.kind, c.name, uris, c.host, c.fetched_at, now_secs()],
    )?;
    Ok(())
}

/// The condition "client `c` was never used": no consent, code or token
/// names it (each lookup by index).
pub const NEVER_USED: &str = "NOT EXISTS (SELECT 1 FROM oauth_consents x WHERE x.client_id = c.id)
       AND NOT EXISTS (SELECT 1 FROM oauth_codes x WHERE x.client_id = c.id)
       AND NOT EXISTS (SELECT 1 FROM oauth_tokens x WHERE x.client_id = c.id)";

/// How many registered clients may sit unused, from one address and in
/// all (see [`put_registered_client`]).
#[derive(Debug, Clone, Copy)]
pub struct UnusedCaps {
    pub per_address: i64,
    pub total: i64,
}

/// Stores a client registered (RFC 7591) from `source` (an address group),
/// unless `source` already has `caps.per_address` registered clients that
/// were never used: then `Ok(false)`, nothing stored. At `caps.total`
/// unused clients in all, the oldest unused ones make room: a flood from
/// many addresses costs its own oldest registrations, never a refusal to
/// the next person.
pub fn put_registered_client(
    conn: &Conn,
    c: &Client,
    source: &str,
    caps: UnusedCaps,
) -> DbResult<bool> {
    let tx = conn.transaction()?;
    let from_source: i64 = tx.query_row(
        &format!(
            "SELECT COUNT(*) FROM oauth_clients c WHERE c.registered_from = ?1 AND {NEVER_USED}"
        ),
        params![source],
        |r| r.get(0),
    )?;
    if from_source >= caps.per_address {
        return Ok(false);
    }
    let unused: i64 = tx.query_row(
        &format!("SELECT COUNT(*) FROM oauth_clients c WHERE c.kind = 'dcr' AND {NEVER_USED}"),
        params![],
        |r| r.get(0),
    )?;
    let over = unused - caps.total + 1;
    if over > 0 {
        tx.execute(
            &format!(
                "DELETE FROM oauth_clients WHERE id IN (SELECT c.id FROM oauth_clients c
                 WHERE c.kind = 'dcr' AND {NEVER_USED} ORDER BY c.created_at, c.id LIMIT ?1)"
            ),
            params![over],
        )?;
    }
    let uris = serde_json::to_string(&c.redirect_uris).unwrap_or_else(|_| "[]".into());
    tx.execute(
        "INSERT INTO oauth_clients (id, kind, name, redirect_uris, host, fetched_at, created_at, registered_from)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![c.id, c.kind, c.name, uris, c.host, c.fetched_at, now_secs(), source],
    )?;
    tx.commit()?;
    Ok(true)
}

/// The consent asker's handle: it asks in every room, from no room's list
/// of agents, so no other agent may take it.
pub const CONSENT_ASKER_HANDLE: &str = "qp-sign-in";

/// The agent that asks `user_id` the consent questions ("qp sign-in"):
/// made on first use, owned by that person, with no token (nothing can
/// act as it).
pub fn consent_asker(conn: &Conn, user_id: &str) -> DbResult<Agent> {
    let found: Option<String> = conn.query_opt(
        "SELECT agent_id FROM oauth_askers WHERE user_id = ?1",
        params![user_id],
        |r| r.get(0),
    )?;
    let id = match found {
        Some(id) => id,
        None => {
            let id = ids::new_id("a");
            let name = "qp sign-in";
            conn.execute(
                "INSERT INTO agents (id, name, handle, owner_user_id, scopes, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, name, CONSENT_ASKER_HANDLE, user_id, "read", now_secs()],
            )?;
            let n = conn.execute(
                "INSERT INTO oauth_askers (user_id, agent_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                params![user_id, id],
            )?;
            if n == 0 {
                // Made concurrently (another instance): use that one.
                conn.execute("DELETE FROM agents WHERE id = ?1", params![id])?;
                return consent_asker(conn, user_id);
            }
            super::audit::record(
                conn,
                "server",
                "agent.add",
                &id,
                &format!("qp sign-in: asks {user_id} the sign-in questions (no token)"),
            )?;
            id
        }
    };
    Ok(Agent {
        id,
        name: "qp sign-in".into(),
        handle: CONSENT_ASKER_HANDLE.into(),
        owner_user_id: user_id.to_string(),
        scopes: vec!["read".into()],
        check_token: None,
    })
}

/// A consent: a person asked whether a client may ask them questions in a
/// room. `kind` is `code` (the authorization page) or `device` (`qp login
/// --url`). States: `pending`, then `approved`, `denied` or `expired`; an
/// approved one becomes `used` when its code or token is handed out.
#[derive(Debug, Clone)]
pub struct Consent {
    pub id_hash: String,
    pub kind: String,
    pub client_id: String,
    pub user_id: String,
    pub room_id: String,
    pub question_id: String,
    pub state: String,
    pub redirect_uri: Option<String>,
    pub state_param: Option<String>,
    pub code_challenge: Option<String>,
    pub resource: Option<String>,
    pub user_code: Option<String>,
    pub interval_secs: i64,
    pub last_poll_at: Option<i64>,
    pub agent_id: Option<String>,
    pub expires_at: i64,
}

const CONSENT_COLUMNS: &str = "id_hash, kind, client_id, user_id, room_id, question_id, state, redirect_uri, state_param, code_challenge, resource, user_code, interval_secs, last_poll_at, agent_id, expires_at";

fn consent_from_row(r: &super::sql::Row) -> DbResult<Consent> {
    Ok(Consent {
        id_hash: r.get(0)?,
        kind: r.get(1)?,
        client_id: r.get(2)?,
        user_id: r.get(3)?,
        room_id: r.get(4)?,
        question_id: r.get(5)?,
        state: r.get(6)?,
        redirect_uri: r.get(7)?,
        state_param: r.get(8)?,
        code_challenge: r.get(9)?,
        resource: r.get(10)?,
        user_code: r.get(11)?,
        interval_secs: r.get(12)?,
        last_poll_at: r.get(13)?,
        agent_id: r.get(14)?,
        expires_at: r.get(15)?,
    })
}

pub fn insert_consent(conn: &Conn, c: &Consent) -> DbResult<()> {
    conn.execute(
        &format!(
            "INSERT INTO oauth_consents ({CONSENT_COLUMNS}, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
        ),
        params![
            c.id_hash,
            c.kind,
            c.client_id,
            c.user_id,
            c.room_id,
            c.question_id,
            c.state,
            c.redirect_uri,
            c.state_param,
            c.code_challenge,
            c.resource,
            c.user_code,
            c.interval_secs,
            c.last_poll_at,
            c.agent_id,
            c.expires_at,
            now_secs()
        ],
    )?;
    Ok(())
}

pub fn consent(conn: &Conn, id_hash: &str) -> DbResult<Option<Consent>> {
    conn.query_opt(
        &format!("SELECT {CONSENT_COLUMNS} FROM oauth_consents WHERE id_hash = ?1"),
        params![id_hash],
        consent_from_row,
    )
}

/// Consents still waiting for `user_id`'s answer.
pub fn pending_for_user(conn: &Conn, user_id: &str, now: i64) -> DbResult<i64> {
    conn.query_row(
        "SELECT COUNT(*) FROM oauth_consents WHERE user_id = ?1 AND state = 'pending' AND expires_at > ?2",
        params![user_id, now],
        |r| r.get(0),
    )
}

/// Pending consents whose question was answered, expired or cancelled (at
/// most `limit`): to settle and log though nobody polls them.
pub fn consents_to_settle(conn: &Conn, limit: usize) -> DbResult<Vec<String>> {
    conn.query_map(
        "SELECT c.id_hash FROM oauth_consents c JOIN questions q ON q.id = c.question_id
         WHERE c.state = 'pending' AND q.state <> 'pending' LIMIT ?1",
        params![limit],
        |r| r.get(0),
    )
}

/// Consents of `client_id` still waiting for an answer.
pub fn pending_for_client(conn: &Conn, client_id: &str, now: i64) -> DbResult<i64> {
    conn.query_row(
        "SELECT COUNT(*) FROM oauth_consents WHERE client_id = ?1 AND state = 'pending' AND expires_at > ?2",
        params![client_id, now],
        |r| r.get(0),
    )
}

/// Moves a consent from state `from` to `to` (and records the agent made
/// for it); false when it was not in `from` (another request did it).
pub fn move_consent(
    conn: &Conn,
    id_hash: &str,
    from: &str,
    to: &str,
    agent_id: Option<&str>,
) -> DbResult<bool> {
    Ok(conn.execute(
        "UPDATE oauth_consents SET state = ?3, agent_id = COALESCE(?4, agent_id) WHERE id_hash = ?1 AND state = ?2",
        params![id_hash, from, to, agent_id],
    )? == 1)
}

/// A device poll: records when, and a new interval (after `slow_down`).
/// Names the agent a device sign-in will create (it rides in the
/// consent's state parameter slot, unused by that flow).
pub fn set_state_param(conn: &Conn, id_hash: &str, value: &str) -> DbResult<()> {
    conn.execute(
        "UPDATE oauth_consents SET state_param = ?2 WHERE id_hash = ?1",
        params![id_hash, value],
    )?;
    Ok(())
}

pub fn note_poll(conn: &Conn, id_hash: &str, at: i64, interval_secs: i64) -> DbResult<()> {
    conn.execute(
        "UPDATE oauth_consents SET last_poll_at = ?2, interval_secs = ?3 WHERE id_hash = ?1",
        params![id_hash, at, interval_secs],
    )?;
    Ok(())
}

/// An authorization code as stored.
#[derive(Debug, Clone)]
pub struct Code {
    pub client_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub resource: String,
    pub agent_id: String,
    pub grant_hash: String,
    pub expires_at: i64,
}

/// A new authorization code (shown once, in the redirect).
pub fn insert_code(conn: &Conn, c: &Code) -> DbResult<String> {
    let code = ids::new_token("qpk_");
    conn.execute(
        "INSERT INTO oauth_codes (hash, client_id, redirect_uri, code_challenge, resource, agent_id, grant_hash, expires_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            ids::token_hash(&code),
            c.client_id,
            c.redirect_uri,
            c.code_challenge,
            c.resource,
            c.agent_id,
            c.grant_hash,
            c.expires_at,
            now_secs()
        ],
    )?;
    Ok(code)
}

/// What redeeming a code found.
pub enum Taken {
    /// No such code (or expired).
    Unknown,
    /// Used before: a replay.
    Replayed { grant_hash: String },
    /// Now used, by this call.
    Fresh(Code),
}

/// Marks a code used (once) and returns it.
pub fn take_code(conn: &Conn, code: &str, now: i64) -> DbResult<Taken> {
    let hash = ids::token_hash(code);
    let row = conn.query_opt(
        "SELECT client_id, redirect_uri, code_challenge, resource, agent_id, grant_hash, expires_at, used_at
         FROM oauth_codes WHERE hash = ?1",
        params![hash],
        |r| {
            Ok((
                Code {
                    client_id: r.get(0)?,
                    redirect_uri: r.get(1)?,
                    code_challenge: r.get(2)?,
                    resource: r.get(3)?,
                    agent_id: r.get(4)?,
                    grant_hash: r.get(5)?,
                    expires_at: r.get(6)?,
                },
                r.get::<Option<i64>>(7)?,
            ))
        },
    )?;
    let Some((code, used)) = row else {
        return Ok(Taken::Unknown);
    };
    if used.is_some() {
        return Ok(Taken::Replayed {
            grant_hash: code.grant_hash,
        });
    }
    let n = conn.execute(
        "UPDATE oauth_codes SET used_at = ?2 WHERE hash = ?1 AND used_at IS NULL",
        params![hash, now],
    )?;
    if n == 0 {
        return Ok(Taken::Replayed {
            grant_hash: code.grant_hash,
        });
    }
    if code.expires_at <= now {
        return Ok(Taken::Unknown);
    }
    Ok(Taken::Fresh(code))
}

/// What an access or refresh token is minted for.
#[derive(Debug, Clone)]
pub struct Minted {
    pub grant_hash: String,
    pub client_id: String,
    pub resource: String,
    pub agent_id: String,
}

/// A new token of `kind` (`access`, `refresh`) valid for `ttl_secs`.
pub fn insert_token(
    conn: &Conn,
    kind: &str,
    prefix: &str,
    m: &Minted,
    ttl_secs: i64,
) -> DbResult<String> {
    let token = ids::new_token(prefix);
    let now = now_secs();
    conn.execute(
        "INSERT INTO oauth_tokens (hash, kind, grant_hash, client_id, resource, agent_id, expires_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            ids::token_hash(&token),
            kind,
            m.grant_hash,
            m.client_id,
            m.resource,
            m.agent_id,
            now + ttl_secs,
            now
        ],
    )?;
    Ok(token)
}

/// A stored token: what it was minted for, and whether it is used,
/// expired, or its grant revoked.
#[derive(Debug, Clone)]
pub struct TokenRow {
    pub kind: String,
    pub minted: Minted,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub grant_live: bool,
}

pub fn token(conn: &Conn, hash: &str) -> DbResult<Option<TokenRow>> {
    conn.query_opt(
        "SELECT o.kind, o.grant_hash, o.client_id, o.resource, o.agent_id, o.expires_at, o.used_at,
                EXISTS (SELECT 1 FROM tokens t WHERE t.hash = o.grant_hash)
         FROM oauth_tokens o WHERE o.hash = ?1",
        params![hash],
        |r| {
            Ok(TokenRow {
                kind: r.get(0)?,
                minted: Minted {
                    grant_hash: r.get(1)?,
                    client_id: r.get(2)?,
                    resource: r.get(3)?,
                    agent_id: r.get(4)?,
                },
                expires_at: r.get(5)?,
                used_at: r.get(6)?,
                grant_live: r.get(7)?,
            })
        },
    )
}

/// Marks a refresh token used (once); false when it was used already.
pub fn use_refresh(conn: &Conn, hash: &str, now: i64) -> DbResult<bool> {
    Ok(conn.execute(
        "UPDATE oauth_tokens SET used_at = ?2 WHERE hash = ?1 AND kind = 'refresh' AND used_at IS NULL",
        params![hash, now],
    )? == 1)
}

/// [`revoke_grant`], in the audit log: `actor` ended it (`server`, or
/// `oauth-client:<id>` for the client's own revocation) because of `why`.
pub fn end_grant(conn: &Conn, grant_hash: &str, actor: &str, why: &str) -> DbResult<usize> {
    let agent: Option<String> = conn.query_opt(
        "SELECT subject_id FROM tokens WHERE hash = ?1 AND kind = 'agent'",
        params![grant_hash],
        |r| r.get(0),
    )?;
    let n = revoke_grant(conn, grant_hash)?;
    let grant = grant_hash.get(..12).unwrap_or(grant_hash);
    super::audit::record(
        conn,
        actor,
        "token.revoke",
        agent.as_deref().unwrap_or_default(),
        &format!("OAuth grant {grant}: {why}"),
    )?;
    Ok(n)
}

/// Ends a grant: every token minted under it, and the grant's row.
pub fn revoke_grant(conn: &Conn, grant_hash: &str) -> DbResult<usize> {
    let agent: Option<String> = conn.query_opt(
        "SELECT subject_id FROM tokens WHERE hash = ?1 AND kind = 'agent'",
        params![grant_hash],
        |r| r.get(0),
    )?;
    let n = conn.execute(
        "DELETE FROM oauth_tokens WHERE grant_hash = ?1",
        params![grant_hash],
    )?;
    conn.execute(
        "DELETE FROM tokens WHERE hash = ?1 AND kind = 'agent'",
        params![grant_hash],
    )?;
    // The agent the approval made goes with its grant (it was listed, to
    // its owner and in `qp admin`, as if it still worked): disabled, unless
    // it holds another token (an operator gave it one).
    if let Some(agent) = agent {
        conn.execute(
            "UPDATE agents SET disabled_at = ?2 WHERE id = ?1 AND disabled_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM tokens WHERE subject_id = ?1 AND kind = 'agent')",
            params![agent, now_secs()],
        )?;
    }
    Ok(n)
}

/// Ends the grants of codes that expired unexchanged: the approval made an
/// agent, and a client that never came back for its tokens must not leave
/// it listed (and its grant live) for good. Returns each ended grant's
/// client and agent, for the log.
pub fn end_unredeemed_grants(
    conn: &Conn,
    now: i64,
    limit: usize,
) -> DbResult<Vec<(String, String)>> {
    let stale: Vec<(String, String, String)> = conn.query_map(
        "SELECT c.grant_hash, c.client_id, c.agent_id FROM oauth_codes c
         WHERE c.used_at IS NULL AND c.expires_at < ?1
           AND EXISTS (SELECT 1 FROM tokens t WHERE t.hash = c.grant_hash)
         LIMIT ?2",
        params![now, limit],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let mut ended = Vec::with_capacity(stale.len());
    for (grant, client, agent) in stale {
        // Each grant's end and its audit row commit together.
        let tx = conn.transaction()?;
        end_grant(
            &*tx,
            &grant,
            "server",
            "its code expired unexchanged; its agent is disabled",
        )?;
        tx.commit()?;
        ended.push((client, agent));
    }
    Ok(ended)
}

/// Deletes one token.
pub fn delete_token(conn: &Conn, hash: &str) -> DbResult<bool> {
    Ok(conn.execute("DELETE FROM oauth_tokens WHERE hash = ?1", params![hash])? == 1)
}

/// The agents `user_id` owns and may still use (not removed or disabled),
/// with their rooms' codes; not the consent asker.
pub fn agents_owned_by(conn: &Conn, user_id: &str) -> DbResult<Vec<(Agent, Vec<String>)>> {
    let ids: Vec<String> = conn.query_map(
        "SELECT a.id FROM agents a WHERE a.owner_user_id = ?1 AND a.disabled_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM oauth_askers k WHERE k.agent_id = a.id)
         ORDER BY a.created_at, a.id",
        params![user_id],
        |r| r.get(0),
    )?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(a) = crate::store::identity::agent(conn, &id)? {
            let rooms = conn.query_map(
                "SELECT r.code FROM agent_rooms ar JOIN rooms r ON r.id = ar.room_id WHERE ar.agent_id = ?1 ORDER BY r.code",
                params![id],
                |r| r.get(0),
            )?;
            out.push((a, rooms));
        }
    }
    Ok(out)
}

/// Deletes every OAuth token of an agent (after it was removed).
pub fn forget_agent(conn: &Conn, agent_id: &str) -> DbResult<usize> {
    conn.execute(
        "DELETE FROM oauth_tokens WHERE agent_id = ?1",
        params![agent_id],
    )
}
