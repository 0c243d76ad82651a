//! `qp login --url` without a code: the device authorization grant
//! (RFC 8628). The CLI names the person (`user`, else the server's
//! `default_owner`, else its only person) and may name the room; the
//! server asks that person at once on their phone (the consent question,
//! with the short user code as its context line so they can match it with
//! the terminal) and the CLI polls
//! the token endpoint (`authorization_pending`, `slow_down` when it polls
//! faster than `interval`). The token is an agent token, as `qp login
//! CODE` gets.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use qp_core::protocol::client_text::check_client_text;
use serde_json::{json, Value};

use super::consent::{self, Decision};
use super::{ErrorKind, OAuthError};
use crate::app::App;
use crate::store::identity;
use crate::store::oauth::{self as store, Client};

/// The one device client: the `qp` command line.
pub const CLI_CLIENT_ID: &str = "qp-cli";
/// Seconds between polls the CLI is asked to keep.
pub const INTERVAL_SECS: i64 = 2;

/// Starts a device authorization (`POST /oauth/device_authorization`):
/// `client_id=qp-cli`, `user`, `room`, `label` (the agent's name).
pub async fn start(app: &Arc<App>, body: &[u8]) -> Result<Value, OAuthError> {
    let p = super::form(body)?;
    match p.get("client_id").map(String::as_str) {
        Some(CLI_CLIENT_ID) => {}
        Some(other) => {
            return Err(OAuthError::invalid_client(format!(
                "client_id: {other:?} may not use the device flow here (only {CLI_CLIENT_ID})"
            )))
        }
        None => return Err(OAuthError::invalid_request("client_id: is required")),
    }
    // The label is the agent's name, and the consent question shows it.
    let label = p
        .get("label")
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| "qp login".into());
    check_client_text("label", &label).map_err(|e| OAuthError::invalid_request(e.to_string()))?;
    let named = p.get("user").map(|u| u.trim()).filter(|u| !u.is_empty());
    let by_default = named.is_none() && app.settings.default_owner.is_some();
    let user = match named.or(app.settings.default_owner.as_deref()) {
        Some(u) => u.to_string(),
        None => {
            let users = app
                .db
                .run(|c| -> Result<_, OAuthError> { Ok(identity::list_users(c)?) })
                .await?;
            match users.as_slice() {
                [one] => one.id.clone(),
                _ => {
                    return Err(OAuthError::invalid_request(
                        "user: name the person to ask (qp login --as USER); this server has more than one and no default owner (qp serve --default-owner)",
                    ))
                }
            }
        }
    };
    let code = consent::compare_code();
    let client = Client {
        id: CLI_CLIENT_ID.into(),
        kind: "device".into(),
        name: label.clone(),
        redirect_uris: Vec::new(),
        host: String::new(),
        fetched_at: None,
    };
    let asked = consent::ask(
        app,
        consent::Request {
            kind: "device",
            client,
            user,
            room: p.get("room").cloned(),
            redirect_uri: None,
            state_param: None,
            code_challenge: None,
            resource: None,
            user_code: Some(code.clone()),
            interval_secs: INTERVAL_SECS,
        },
    )
    .await
    .map_err(|e| {
        // The person came from the server's setting, not the request: say so.
        match e.description.strip_prefix("user: ") {
            // Not found or ambiguous (400); a limit (429) stays as it is.
            Some(rest) if by_default && matches!(e.kind, ErrorKind::InvalidRequest) => {
                OAuthError::invalid_request(format!(
                    "default_owner (qp serve --default-owner): {rest}"
                ))
            }
            _ => e,
        }
    })?;
    // The agent's name rides in the consent's state parameter slot.
    let key = crate::ids::token_hash(&asked.handle);
    app.db
        .run(move |c| -> Result<_, OAuthError> { Ok(store::set_state_param(c, &key, &label)?) })
        .await?;
    let base = super::issuer(app);
    Ok(json!({
        "device_code": asked.handle,
        "user_code": code,
        "verification_uri": format!("{base}/oauth/device"),
        "expires_in": asked.expires_in,
        "interval": INTERVAL_SECS,
        "user": {"id": asked.user.id, "display_name": asked.user.display_name},
        "room": asked.room.code,
    }))
}

/// The token endpoint's device grant.
pub async fn poll(app: &Arc<App>, p: &HashMap<String, String>) -> Result<Value, OAuthError> {
    let device_code = p
        .get("device_code")
        .filter(|d| !d.is_empty())
        .ok_or_else(|| OAuthError::invalid_request("device_code: is required"))?;
    if p.get("client_id").map(String::as_str) != Some(CLI_CLIENT_ID) {
        return Err(OAuthError::invalid_client(format!(
            "client_id: must be {CLI_CLIENT_ID}"
        )));
    }
    let key = crate::ids::token_hash(device_code);
    let now = crate::store::now_secs();
    let seen = app
        .db
        .run(move |c| -> Result<_, OAuthError> {
            let Some(found) = store::consent(c, &key)? else {
                return Ok(None);
            };
            if found.kind != "device" {
                return Ok(None);
            }
            // Polling faster than the interval: slow down (5 s more, RFC 8628 3.5).
            let early = found
                .last_poll_at
                .is_some_and(|at| now - at < found.interval_secs);
            let interval = if early {
                found.interval_secs + 5
            } else {
                found.interval_secs
            };
            store::note_poll(c, &key, now, interval)?;
            Ok(Some(early))
        })
        .await?;
    match seen {
        None => return Err(OAuthError::invalid_grant("device_code: unknown")),
        Some(true) => {
            return Err(OAuthError::new(
                ErrorKind::SlowDown,
                "polling faster than the interval; wait 5 seconds more between polls",
            ))
        }
        Some(false) => {}
    }
    let Some((decision, c)) = consent::decision(app, device_code, Duration::ZERO).await? else {
        return Err(OAuthError::invalid_grant("device_code: unknown"));
    };
    match decision {
        Decision::Pending => Err(OAuthError::new(
            ErrorKind::AuthorizationPending,
            "waiting for the person to answer on their phone",
        )),
        Decision::Denied => Err(OAuthError::new(
            ErrorKind::Denied,
            "the person denied the request",
        )),
        Decision::Expired => Err(OAuthError::new(
            ErrorKind::ExpiredToken,
            "the request expired unanswered; run qp login again",
        )),
        Decision::Used => Err(OAuthError::invalid_grant("device_code: already used")),
        Decision::Approved => {
            let name = c.state_param.clone().unwrap_or_else(|| "qp login".into());
            let Some((agent, token)) = consent::redeem(app, &c, &name).await? else {
                return Err(OAuthError::invalid_grant("device_code: already used"));
            };
            let hash = crate::ids::token_hash(&token);
            let label = format!("qp login: {name}");
            app.db
                .run(move |conn| -> Result<_, OAuthError> {
                    Ok(crate::store::identity::relabel_token(conn, &hash, &label)?)
                })
                .await?;
            Ok(json!({
                "access_token": token,
                "token_type": "Bearer",
                "agent": {"id": agent.id, "name": agent.name},
            }))
        }
    }
}
