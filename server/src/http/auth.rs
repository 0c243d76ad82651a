//! Bearer-token extractors. The identity of every request comes from here,
//! never from the request body.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::error::ApiError;
use crate::app::App;
use crate::store::identity::{self, Agent, Principal, User};
use crate::store::round_trips::Op;

/// The authenticated agent (an asker).
pub struct AgentAuth(pub Agent);

/// The authenticated user (a responder's device).
pub struct UserAuth(pub User);

pub(crate) fn bearer(parts: &Parts) -> Result<String, ApiError> {
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

/// The principal, read from the database now (one statement), and then
/// remembered for the question loop's requests.
async fn principal(parts: &Parts, app: &Arc<App>) -> Result<Principal, ApiError> {
    let hash = crate::ids::token_hash(&bearer(parts)?);
    let generation = app.tokens.generation();
    let key = hash.clone();
    let found = app
        .db
        .run_as(Op::Auth, move |conn| {
            identity::authenticate_hash(conn, &key)
        })
        .await?
        .ok_or_else(revoked)?;
    super::request_id::note_actor(&found);
    if matches!(found, Principal::Agent(_) | Principal::User(_)) {
        app.tokens.put(&hash, found.clone(), generation);
    }
    Ok(found)
}

/// The principal from the token cache when it remembers the token, marked
/// so the operation's first statement confirms the token still exists
/// (`check_token`); else as [`principal`]. Only for handlers whose
/// operations make that check (ask, wait, answer).
async fn remembered(parts: &Parts, app: &Arc<App>) -> Result<Principal, ApiError> {
    let hash = crate::ids::token_hash(&bearer(parts)?);
    let cached = app.tokens.get(&hash, crate::store::now_secs());
    if let Some(p) = &cached {
        super::request_id::note_actor(p);
    }
    match cached {
        Some(Principal::Agent(mut a)) => {
            a.check_token = Some(hash);
            Ok(Principal::Agent(a))
        }
        Some(Principal::User(mut u)) => {
            u.check_token = Some(hash);
            Ok(Principal::User(u))
        }
        // Boxed: the database read's state is freed once it is done,
        // instead of sizing every request's extractor (and so every parked
        // long-poll's handler state) for it.
        _ => Box::pin(principal(parts, app)).await,
    }
}

/// The 401 of a token the database does not know (any more).
pub fn revoked() -> ApiError {
    crate::app::AppError::Revoked.into()
}

/// The authenticated agent, possibly from the token cache: for the
/// question loop's handlers only (their operations check the token; see
/// `remembered`).
pub struct LoopAgentAuth(pub Agent);

/// The authenticated user, as [`LoopAgentAuth`].
pub struct LoopUserAuth(pub User);

impl FromRequestParts<Arc<App>> for LoopAgentAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        match remembered(parts, app).await? {
            Principal::Agent(a) => Ok(LoopAgentAuth(a)),
            _ => Err(ApiError::forbidden(
                "wrong_token_kind",
                "this endpoint takes an agent token",
            )),
        }
    }
}

impl FromRequestParts<Arc<App>> for LoopUserAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        match remembered(parts, app).await? {
            Principal::User(u) => Ok(LoopUserAuth(u)),
            _ => Err(ApiError::forbidden(
                "wrong_token_kind",
                "this endpoint takes a user token",
            )),
        }
    }
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
