//! The asker's endpoints (agent token): ask, fetch, wait, list, cancel.

use super::*;

#[utoipa::path(post, path = "/api/agent/rooms/{room}/questions", tag = "asker",
    params(("room" = String, Path, description = "The room's invite code")),
    request_body = AskRequest,
    responses((status = 201, description = "Asked: the question, pending, and `pushed_to_devices`: how many devices its push was queued for (0: no one can receive it now)", body = AskedQuestion), (status = 400, description = "The body is not JSON", body = openapi::ErrorBody), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 429, description = "Rate limit or pending quota; see Retry-After", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn ask(
    State(app): State<Arc<App>>,
    LoopAgentAuth(agent): LoopAgentAuth,
    Path(room): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<AskedQuestion>), ApiError> {
    let body = parse_json(&body)?;
    let q = app.ask(agent, room, body).await?;
    Ok((StatusCode::CREATED, Json(q)))
}

#[utoipa::path(get, path = "/api/agent/questions/{id}", tag = "asker",
    params(("id" = String, Path, description = "The question id (q_…)")),
    responses((status = 200, body = Question), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn fetch(
    State(app): State<Arc<App>>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<String>,
) -> Result<Json<Question>, ApiError> {
    Ok(Json(app.agent_question(&agent, id).await?))
}

#[utoipa::path(get, path = "/api/agent/questions/{id}/wait", tag = "asker",
    params(("id" = String, Path, description = "The question id (q_…)"),
           ("timeout" = Option<u64>, Query, description = openapi::param::long_poll_timeout_capped())),
    responses((status = 200, description = "The question when it resolved, or still pending when the timeout passed", body = Question), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 429, description = "This agent holds as many long-polls as it may (`too_many_long_polls`); see Retry-After", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn wait(
    State(app): State<Arc<App>>,
    LoopAgentAuth(agent): LoopAgentAuth,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Question>, ApiError> {
    let timeout = wait_timeout(query)?;
    Ok(Json(app.wait(&agent, id, timeout).await?))
}

/// The long-poll's `timeout`, capped. Takes the query map by value: it is
/// freed before the wait instead of staying with every parked request.
fn wait_timeout(query: HashMap<String, String>) -> Result<Duration, ApiError> {
    let secs = match query.get("timeout") {
        None => limits::LONG_POLL_DEFAULT_SECS,
        Some(t) => t.trim().parse::<u64>().map_err(|_| {
            ApiError::invalid(
                "timeout",
                "invalid_value",
                format!(
                    "timeout: must be whole seconds from 0 to {}, got {t:?}",
                    limits::LONG_POLL_MAX_SECS
                ),
            )
        })?,
    }
    .min(limits::LONG_POLL_MAX_SECS);
    Ok(Duration::from_secs(secs))
}

#[utoipa::path(get, path = "/api/agent/questions", tag = "asker",
    params(("state" = Option<String>, Query, description = openapi::param::list_state()),
           ("limit" = Option<usize>, Query, description = openapi::param::list_limit())),
    responses((status = 200, description = "This agent's questions, newest first", body = openapi::QuestionList), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn list(
    State(app): State<Arc<App>>,
    AgentAuth(agent): AgentAuth,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<openapi::QuestionList>, ApiError> {
    let (state, all) = match query.get("state").map(String::as_str) {
        None | Some("") => (None, false),
        Some("all") => (None, true),
        Some(s) => (
            Some(QuestionState::parse(s).ok_or_else(|| {
                ApiError::invalid(
                    "state",
                    "invalid_value",
                    format!(
                        "state: must be pending, answered, expired, cancelled or all; got {s:?}"
                    ),
                )
            })?),
            false,
        ),
    };
    let limit = match query.get("limit") {
        None => limits::LIST_DEFAULT_LIMIT,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=limits::LIST_MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(ApiError::invalid(
                    "limit",
                    "out_of_range",
                    format!("limit: must be 1 to {}, got {l:?}", limits::LIST_MAX_LIMIT),
                ))
            }
        },
    };
    let questions = app.list(&agent, state, all, limit).await?;
    Ok(Json(openapi::QuestionList { questions }))
}

#[utoipa::path(post, path = "/api/agent/questions/{id}/cancel", tag = "asker",
    params(("id" = String, Path, description = "The question id (q_…)")),
    responses((status = 200, description = "Cancelled", body = Question), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody), (status = 409, description = "Already resolved: the body carries the question as it stands", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn cancel(
    State(app): State<Arc<App>>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<String>,
) -> Result<Json<Question>, ApiError> {
    Ok(Json(app.cancel(&agent, id).await?))
}
