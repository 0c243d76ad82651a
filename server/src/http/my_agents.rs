//! A person's own agents, from their side (a user token): the agents they
//! own, among them those their approvals made (OAuth, `qp login --url`),
//! listed with their rooms, and removed for good (every token, OAuth's
//! included, stops at once). Not the "qp sign-in" agent that asks the
//! consent questions.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;

use super::auth::UserAuth;
use super::error::ApiError;
use super::openapi;
use crate::app::App;

/// The agents this person owns, those their sign-in approvals made among
/// them.
#[utoipa::path(get, path = "/api/me/agents", operation_id = "my_agents", tag = "responder",
    responses((status = 200, description = "This person's agents", body = openapi::MyAgents), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "Not a user token", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
) -> Result<Json<openapi::MyAgents>, ApiError> {
    let agents = app.owned_agents(&user).await?;
    let agents = agents
        .into_iter()
        .map(|(a, rooms)| openapi::MyAgent {
            id: a.id,
            name: a.name,
            handle: a.handle,
            scopes: a.scopes,
            rooms,
        })
        .collect();
    Ok(Json(openapi::MyAgents { agents }))
}

/// Removes one of this person's agents for good: every token it holds,
/// OAuth's included, stops at once.
#[utoipa::path(delete, path = "/api/me/agents/{id}", operation_id = "remove_my_agent", tag = "responder",
    params(("id" = String, Path, description = "The agent's id")),
    responses((status = 204, description = "Removed"), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 404, description = "No such agent of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    app.remove_owned_agent(&user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
