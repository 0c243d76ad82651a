//! Agents: who asks, its owner and the rooms it may ask in.
use super::*;

pub(super) fn insert_token(
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
/// and returns it with its bearer token (shown once, never stored). Its
/// handle is derived from its name, made distinct from the handles of the
/// other agents in those rooms.
pub fn create_agent(
    conn: &Conn,
    name: &str,
    owner_user_id: &str,
    scopes: &[String],
    room_ids: &[String],
) -> Result<(Agent, String), StoreError> {
    insert_agent(conn, name, owner_user_id, scopes, room_ids, false)
}

/// Creates the agent a person's sign-in approval makes (OAuth, `qp login
/// --url`): owned by them, asking and reading in one room, marked as
/// signed in by them (everyone it asks sees so).
pub fn create_signed_in_agent(
    conn: &Conn,
    name: &str,
    owner_user_id: &str,
    room_id: &str,
) -> Result<(Agent, String), StoreError> {
    insert_agent(
        conn,
        name,
        owner_user_id,
        &[SCOPE_ASK.to_string(), SCOPE_READ.to_string()],
        &[room_id.to_string()],
        true,
    )
}

fn insert_agent(
    conn: &Conn,
    name: &str,
    owner_user_id: &str,
    scopes: &[String],
    room_ids: &[String],
    signed_in: bool,
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
    let mut taken =
        std::collections::HashSet::from([crate::store::oauth::CONSENT_ASKER_HANDLE.to_string()]);
    for room_id in room_ids {
        taken.extend(handles_in_room(conn, room_id)?);
    }
    let handle = identity_rules::distinct_handle(&identity_rules::handle_of(name, &id), |h| {
        taken.contains(h)
    });
    let signed_in_by = signed_in.then_some(owner_user_id);
    conn.execute(
        "INSERT INTO agents (id, name, handle, owner_user_id, scopes, created_at, signed_in_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![id, name, handle, owner_user_id, scopes.join(","), now_secs(), signed_in_by],
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

/// The handles of the agents allowed in a room (those made before handles
/// were stored: derived, as on read).
fn handles_in_room(conn: &Conn, room_id: &str) -> DbResult<Vec<String>> {
    let rows: Vec<(String, String, Option<String>)> = conn.query_map(
        "SELECT a.id, a.name, a.handle FROM agents a JOIN agent_rooms ar ON ar.agent_id = a.id
         WHERE ar.room_id = ?1",
        params![room_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok(rows
        .into_iter()
        .map(|(id, name, handle)| handle.unwrap_or_else(|| identity_rules::handle_of(&name, &id)))
        .collect())
}

pub(super) const AGENT_BY_ID: &str =
    "SELECT id, name, owner_user_id, scopes, handle FROM agents WHERE id = ?1";
pub(super) const ALL_AGENTS: &str =
    "SELECT id, name, owner_user_id, scopes, handle FROM agents ORDER BY created_at, id";

pub(super) fn agent_from_row(r: &crate::store::sql::Row) -> DbResult<Agent> {
    Ok(agent_from_parts(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        &r.get::<String>(3)?,
        r.get(4)?,
    ))
}

pub(super) fn agent_from_parts(
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
