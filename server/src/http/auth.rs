//! Bearer-token extractors. The identity of every request comes from here,
//! never from the request body.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::error::ApiError;
use crate::app::App;
use crate::store::identity::{self, Agent, Principal, User};

/// The authenticated agent (an asker).
pub struct AgentAuth(pub Agent);

/// The authenticated user (a responder's device).
pub struct UserAuth(pub User);

fn bearer(parts: &Parts) -> Result<String, ApiError> {
    let value = parts
        .headers
        .get(AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthorized("missing Authorization: Bearer <token> header"))?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not valid text"))?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or_else(|| ApiError::unauthorized("Authorization must be \"Bearer <token>\""))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::unauthorized(
            "Authorization must be \"Bearer <token>\"",
        ));
    }
    Ok(token.trim().to_string())
}

async fn principal(parts: &Parts, app: &Arc<App>) -> Result<Principal, ApiError> {
    let token = bearer(parts)?;
    app.db
        .run(move |conn| -> Result<_, ApiError> {
            identity::authenticate(conn, &token)?
                .ok_or_else(|| ApiError::unauthorized("unknown or revoked token"))
        })
        .await
}

impl FromRequestParts<Arc<App>> for AgentAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        match principal(parts, app).await? {
            Principal::Agent(a) => Ok(AgentAuth(a)),
            Principal::User(_) | Principal::Admin { .. } => Err(ApiError::forbidden(
                "wrong_token_kind",
                "this endpoint takes an agent token",
            )),
        }
    }
}

impl FromRequestParts<Arc<App>> for UserAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        match principal(parts, app).await? {
            Principal::User(u) => Ok(UserAuth(u)),
            Principal::Agent(_) | Principal::Admin { .. } => Err(ApiError::forbidden(
                "wrong_token_kind",
                "this endpoint takes a user token",
            )),
        }
    }
}

/// An operator (`qp admin token add-admin`), for the admin endpoints.
pub struct AdminAuth {
    pub label: String,
}

impl FromRequestParts<Arc<App>> for AdminAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        match principal(parts, app).await? {
            Principal::Admin { label } => Ok(AdminAuth { label }),
            _ => Err(ApiError::forbidden(
                "wrong_token_kind",
                "this endpoint takes an admin token (qp admin token add-admin)",
            )),
        }
    }
}
