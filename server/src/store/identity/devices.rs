//! Devices: where pushes go, tied to the token that registered them.
use super::*;

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

pub(crate) fn device_from_row(r: &crate::store::sql::Row) -> DbResult<Device> {
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
/// the 409 rule would not hold. FCM and dev tokens
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
            if let Some(kept) = at_device_cap(conn, user_id, token_hash, reg)? {
                return Ok(kept);
            }
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
                return Err(crate::store::DbError::Other(format!(
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

/// At most this many devices per person: every question to them queues one
/// push per device, so one token registering thousands would make each
/// question thousands of pushes. Phones, tablets, a few browsers and a
/// terminal fit well within it.
pub const MAX_DEVICES_PER_USER: i64 = 20;

/// Below the cap: None (register a new device). At it: the same phone or
/// browser (the token that registered it, its platform and app) coming
/// back with a new push token takes over its own newest registration, so
/// nobody is locked out of re-registering; anything else is refused,
/// naming the limit.
fn at_device_cap(
    conn: &Conn,
    user_id: &str,
    token_hash: Option<&str>,
    reg: &DeviceRegistration<'_>,
) -> Result<Option<Device>, StoreError> {
    let count: i64 = conn.query_row(
        "SELECT COUNT(*) FROM devices WHERE user_id = ?1",
        params![user_id],
        |r| r.get(0),
    )?;
    if count < MAX_DEVICES_PER_USER {
        return Ok(None);
    }
    let own: Option<String> = match token_hash {
        Some(hash) => conn.query_opt(
            "SELECT id FROM devices WHERE user_id = ?1 AND token_hash = ?2 AND platform = ?3
               AND app_id = ?4 ORDER BY created_at DESC, id DESC LIMIT 1",
            params![user_id, hash, reg.platform, reg.app_id],
            |r| r.get(0),
        )?,
        None => None,
    };
    let Some(id) = own else {
        return Err(StoreError::Limit {
            field: "push_token",
            message: format!(
                "push_token: you have {count} devices registered, the most one person may \
                 have is {MAX_DEVICES_PER_USER}; remove one you no longer use first"
            ),
        });
    };
    conn.execute(
        "UPDATE devices SET push_token = ?2, locale = ?3, public_key = ?4,
             apns_environment = ?5 WHERE id = ?1",
        params![
            id,
            reg.push_token,
            reg.locale,
            reg.public_key,
            reg.apns_environment
        ],
    )?;
    Ok(Some(Device {
        id,
        user_id: user_id.to_string(),
        platform: reg.platform.to_string(),
        push_token: reg.push_token.to_string(),
        app_id: reg.app_id.to_string(),
        locale: reg.locale.to_string(),
        public_key: reg.public_key.map(str::to_string),
        apns_environment: reg.apns_environment.map(str::to_string),
    }))
}

/// The refusal of a push token another user's device holds. It says no
/// more than that (not who holds it).
pub(super) fn taken(platform: &str) -> StoreError {
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
    let read = |r: &crate::store::sql::Row| {
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
