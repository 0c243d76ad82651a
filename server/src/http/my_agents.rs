//! A person's own agents, from their side (a user token): the agents they
//! own, among them those their approvals made (OAuth, `qp login --url`),
//! listed with their rooms, and removed for good (every token, OAuth's
//! included, stops at once). Not the "qp sign-in" agent that asks the
//! consent questions.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::auth::UserAuth;
use super::error::ApiError;
use crate::app::App;
use crate::store::offboard::{self, Subject};

/// `GET /api/me/agents`.
pub async fn list(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
) -> Result<Json<Value>, ApiError> {
    let owner = user.id.clone();
    let agents = app
        .db
        .run(move |c| -> Result<_, ApiError> {
            Ok(crate::store::oauth::agents_owned_by(c, &owner)?)
        })
        .await?;
    let agents: Vec<Value> = agents
        .into_iter()
        .map(|(a, rooms)| json!({"id": a.id, "name": a.name, "handle": a.handle, "scopes": a.scopes, "rooms": rooms}))
        .collect();
    Ok(Json(json!({ "agents": agents })))
}

/// `DELETE /api/me/agents/{id}`: 204, or 404 for an agent that is not
/// this person's.
pub async fn remove(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (owner, agent) = (user.id.clone(), id.clone());
    let removed = app
        .db
        .run(move |c| -> Result<_, ApiError> {
            let mine = crate::store::oauth::agents_owned_by(c, &owner)?
                .iter()
                .any(|(a, _)| a.id == agent);
            if !mine {
                return Ok(false);
            }
            offboard::remove(c, Subject::Agent, &agent)?;
            crate::store::oauth::forget_agent(c, &agent)?;
            Ok(true)
        })
        .await?;
    if !removed {
        return Err(ApiError::not_found(format!("no agent {id} of yours")));
    }
    tracing::info!(user = %user.id, agent = %id, "agent removed by its owner");
    Ok(StatusCode::NO_CONTENT)
}
