//! Users: the people who answer.
use super::*;

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
