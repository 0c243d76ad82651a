//! The dev transport's inbox: pushes kept for terminal devices (`qp
//! device`), read back in order by `GET /api/dev/inbox`.

use serde::Serialize;

use super::{Conn, DbResult};
use crate::params;

/// The most pushes one read returns.
pub const READ_LIMIT: i64 = 50;

/// Pushes the dev transport delivered to a terminal device.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DevInbox {
    pub pushes: Vec<DevPush>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DevPush {
    pub seq: i64,
    /// `apns` or `fcm`: the wire format of `payload`.
    pub format: String,
    /// The push payload as the platform would receive it (JSON text).
    pub payload: String,
}

/// Keeps a push for `device_id`.
pub fn put(conn: &Conn, device_id: &str, format: &str, payload: &str, now_ms: i64) -> DbResult<()> {
    conn.execute(
        "INSERT INTO dev_inbox (device_id, format, payload, created_ms) VALUES (?1, ?2, ?3, ?4)",
        params![device_id, format, payload, now_ms],
    )?;
    Ok(())
}

/// `device_id`'s pushes after `after`, oldest first, at most [`READ_LIMIT`].
pub fn after(conn: &Conn, device_id: &str, after: i64) -> DbResult<Vec<DevPush>> {
    conn.query_map(
        "SELECT seq, format, payload FROM dev_inbox WHERE device_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        params![device_id, after, READ_LIMIT],
        |r| {
            Ok(DevPush {
                seq: r.get(0)?,
                format: r.get(1)?,
                payload: r.get(2)?,
            })
        },
    )
}
