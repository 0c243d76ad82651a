//! Pairing endpoints: a phone or an agent's CLI exchanges a one-time code
//! for its token; an operator creates invites.
//!
//! - `POST /api/pair` `{code, label?, device?: {platform, push_token, app_id?}}`
//!   -> `{token, user: {id, display_name}, device: {id, platform, app_id} | null}`
//! - `POST /api/pair/preview` `{code}` -> `{user: {id, display_name}, server,
//!   expires_at}`: whose account a user's code signs in to, the code left
//!   unspent (the web responder asks before it pairs)
//! - `POST /api/agent/login` `{code, label?}` -> `{token, agent: {id, name, handle}}`
//! - `POST /api/admin/users/{id}/invites` and `/api/admin/agents/{id}/invites`
//!   (admin token) `{ttl_secs?}` -> `{code, link, expires_at}`
//! - `GET /pair`: where a pairing link lands in a browser without the app.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use qp_core::pairing::pair_link;
use serde_json::Value;

use super::auth::AdminAuth;
use super::error::ApiError;
use super::{device_fields, parse_json};
use crate::app::{App, AppError};
use crate::pairing::Issued;
use crate::store::invites::{InviteKind, DEFAULT_TTL_SECS};

/// The client's address (the accept loop puts it on every request).
fn peer(ConnectInfo(addr): ConnectInfo<SocketAddr>) -> std::net::IpAddr {
    addr.ip()
}

fn code_of(body: &Value) -> Result<String, ApiError> {
    match body.get("code") {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(ApiError::invalid("code", "required", "code: is required")),
        Some(_) => Err(ApiError::invalid(
            "code",
            "invalid_type",
            "code: must be a string",
        )),
    }
}

fn label_of(body: &Value, default: &str) -> Result<String, ApiError> {
    match body.get("label") {
        None | Some(Value::Null) => Ok(default.to_string()),
        Some(Value::String(s)) if s.chars().count() <= 80 && !s.chars().any(char::is_control) => {
            Ok(if s.trim().is_empty() {
                default.to_string()
            } else {
                s.trim().to_string()
            })
        }
        Some(_) => Err(ApiError::invalid(
            "label",
            "invalid_value",
            "label: at most 80 characters on one line",
        )),
    }
}

#[utoipa::path(post, path = "/api/pair", tag = "pairing",
    request_body = super::openapi::PairRequest,
    responses((status = 200, description = "Paired: the user token, shown once", body = super::openapi::Paired),
        (status = 400, description = "The body is not JSON, or the code is unknown, used, expired or burned (`invalid_code`)", body = super::openapi::ErrorBody),
        (status = 422, description = "A field breaks a rule", body = super::openapi::ErrorBody),
        (status = 429, description = "Too many failed attempts from this address (`too_many_attempts`)", body = super::openapi::ErrorBody)))]
pub async fn pair(
    State(app): State<Arc<App>>,
    addr: ConnectInfo<SocketAddr>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body = parse_json(&body)?;
    let code = code_of(&body)?;
    let label = label_of(&body, "paired phone")?;
    let device = match body.get("device") {
        None | Some(Value::Null) => None,
        Some(d @ Value::Object(_)) => {
            let fields = device_fields(d, "device.")?;
            super::webapp::check_web_device(&app, &fields, "device.")?;
            Some(fields)
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "device",
                "invalid_type",
                "device: must be an object",
            ))
        }
    };
    let out = app
        .redeem(peer(addr), &code, InviteKind::User, label.clone(), device)
        .await?;
    let Issued::User(out) = out else {
        return Err(ApiError::internal());
    };
    // A token was issued: who, for which device (never the token).
    tracing::info!(
        user = out.user.id,
        device = out.device.as_ref().map_or("", |d| d.id.as_str()),
        label,
        "paired: user token issued"
    );
    Ok(Json(out).into_response())
}

#[utoipa::path(post, path = "/api/pair/preview", tag = "pairing",
    request_body = super::openapi::PairPreviewRequest,
    responses((status = 200, description = "Whose account the code signs in to; the code is not spent", body = super::openapi::PairPreview),
        (status = 400, description = "The body is not JSON, or the code is unknown, used, expired, burned or not a user's (`invalid_code`, as `POST /api/pair` says it)", body = super::openapi::ErrorBody),
        (status = 422, description = "A field breaks a rule", body = super::openapi::ErrorBody),
        (status = 429, description = "Too many failed attempts or lookups from this address (`too_many_attempts`)", body = super::openapi::ErrorBody)))]
pub async fn preview(
    State(app): State<Arc<App>>,
    addr: ConnectInfo<SocketAddr>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body = parse_json(&body)?;
    let code = code_of(&body)?;
    let out = app.preview_pairing(peer(addr), &code).await?;
    Ok(Json(out).into_response())
}

#[utoipa::path(post, path = "/api/agent/login", tag = "pairing",
    request_body = super::openapi::AgentLoginRequest,
    responses((status = 200, description = "The agent token, shown once", body = super::openapi::AgentLoggedIn),
        (status = 400, description = "The body is not JSON, or the code is unknown, used, expired or burned (`invalid_code`)", body = super::openapi::ErrorBody),
        (status = 422, description = "A field breaks a rule", body = super::openapi::ErrorBody),
        (status = 429, description = "Too many failed attempts from this address (`too_many_attempts`)", body = super::openapi::ErrorBody)))]
pub async fn agent_login(
    State(app): State<Arc<App>>,
    addr: ConnectInfo<SocketAddr>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let body = parse_json(&body)?;
    let code = code_of(&body)?;
    let label = label_of(&body, "qp login")?;
    let out = app
        .redeem(peer(addr), &code, InviteKind::Agent, label.clone(), None)
        .await?;
    let Issued::Agent(out) = out else {
        return Err(ApiError::internal());
    };
    tracing::info!(
        agent = out.agent.id,
        label,
        "agent login: agent token issued"
    );
    Ok(Json(out).into_response())
}

async fn invite(
    app: &App,
    kind: InviteKind,
    id: String,
    body: &Bytes,
    actor: String,
) -> Result<(StatusCode, Json<super::openapi::Invite>), ApiError> {
    let ttl = if body.is_empty() {
        DEFAULT_TTL_SECS
    } else {
        match parse_json(body)?.get("ttl_secs") {
            None | Some(Value::Null) => DEFAULT_TTL_SECS,
            Some(v) => v.as_i64().ok_or_else(|| {
                ApiError::invalid(
                    "ttl_secs",
                    "invalid_type",
                    "ttl_secs: must be a whole number",
                )
            })?,
        }
    };
    // Before the code exists: no invite is made that no phone could use.
    let base = crate::pairing::link_base(&app.settings, None).map_err(|e| AppError::Conflict {
        code: "unreachable_url",
        message: e.0,
    })?;
    let subject = id.clone();
    let inv = app.invite(kind, id, ttl, actor).await?;
    tracing::info!(
        subject,
        agent = matches!(kind, InviteKind::Agent),
        expires_at = inv.expires_at,
        "pairing invite made"
    );
    let link = pair_link(&base, &inv.code);
    let expires_at = chrono::DateTime::from_timestamp(inv.expires_at, 0)
        .map(|t| qp_core::protocol::time::format(&t))
        .unwrap_or_default();
    Ok((
        StatusCode::CREATED,
        Json(super::openapi::Invite {
            code: inv.code,
            link,
            expires_at,
        }),
    ))
}

#[utoipa::path(post, path = "/api/admin/users/{id}/invites", tag = "pairing",
    params(("id" = String, Path, description = "The user id")),
    request_body(content = Option<super::openapi::InviteRequest>, description = "Optional"),
    responses((status = 201, description = "A one-time code for the user's phone", body = super::openapi::Invite),
        (status = 401, description = "Missing or unknown token", body = super::openapi::ErrorBody),
        (status = 403, description = "Not an admin token", body = super::openapi::ErrorBody),
        (status = 404, description = "No such user", body = super::openapi::ErrorBody),
        (status = 422, description = "A field breaks a rule", body = super::openapi::ErrorBody)),
    security(("bearer" = [])))]
pub async fn invite_user(
    State(app): State<Arc<App>>,
    admin: AdminAuth,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<super::openapi::Invite>), ApiError> {
    invite(
        &app,
        InviteKind::User,
        id,
        &body,
        format!("admin-token:{}", admin.label),
    )
    .await
}

#[utoipa::path(post, path = "/api/admin/agents/{id}/invites", tag = "pairing",
    params(("id" = String, Path, description = "The agent id")),
    request_body(content = Option<super::openapi::InviteRequest>, description = "Optional"),
    responses((status = 201, description = "A one-time code for `qp login`", body = super::openapi::Invite),
        (status = 401, description = "Missing or unknown token", body = super::openapi::ErrorBody),
        (status = 403, description = "Not an admin token", body = super::openapi::ErrorBody),
        (status = 404, description = "No such agent", body = super::openapi::ErrorBody),
        (status = 422, description = "A field breaks a rule", body = super::openapi::ErrorBody)),
    security(("bearer" = [])))]
pub async fn invite_agent(
    State(app): State<Arc<App>>,
    admin: AdminAuth,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<super::openapi::Invite>), ApiError> {
    invite(
        &app,
        InviteKind::Agent,
        id,
        &body,
        format!("admin-token:{}", admin.label),
    )
    .await
}

/// A pairing link opened where the app is not installed (or on a desktop):
/// on to the web responder, which pairs this browser. The code stays in the
/// fragment, which never reaches this server: a browser keeps it across
/// the redirect (RFC 9110, 10.2.2).
pub async fn landing() -> axum::response::Redirect {
    axum::response::Redirect::to(super::webapp::APP_PATH)
}
