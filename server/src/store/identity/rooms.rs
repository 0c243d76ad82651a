//! Rooms, their members and their webhook.
use super::*;

fn room_from_row(r: &crate::store::sql::Row) -> DbResult<Room> {
    room_at(r, 0)
}

/// A room read from [`ROOM_COLUMNS`] starting at column `at`.
pub(crate) fn room_at(r: &crate::store::sql::Row, at: usize) -> DbResult<Room> {
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

/// Makes a member a room admin, or an ordinary member again; false when
/// they are not a member.
pub fn set_room_admin(conn: &Conn, room_id: &str, user_id: &str, admin: bool) -> DbResult<bool> {
    let n = conn.execute(
        "UPDATE memberships SET admin = ?3 WHERE room_id = ?1 AND user_id = ?2",
        params![room_id, user_id, i64::from(admin)],
    )?;
    Ok(n > 0)
}

/// Whether a user is an admin of a room (`qp admin room add-member --admin`).
pub fn is_room_admin(conn: &Conn, room_id: &str, user_id: &str) -> DbResult<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM memberships WHERE room_id = ?1 AND user_id = ?2 AND admin = 1)",
        params![room_id, user_id],
        |r| r.get(0),
    )
}

pub fn is_member(conn: &Conn, room_id: &str, user_id: &str) -> DbResult<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM memberships WHERE room_id = ?1 AND user_id = ?2)",
        params![room_id, user_id],
        |r| r.get(0),
    )
}

/// The codes of the rooms `user_id` is a member of.
pub fn room_codes_of(conn: &Conn, user_id: &str) -> DbResult<Vec<String>> {
    conn.query_map(
        "SELECT r.code FROM memberships m JOIN rooms r ON r.id = m.room_id
         WHERE m.user_id = ?1 ORDER BY r.code",
        params![user_id],
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
