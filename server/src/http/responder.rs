//! The responder's endpoints (user token): pending questions, one
//! question, the answer.

use super::*;

#[utoipa::path(get, path = "/api/questions/pending", tag = "responder",
    responses((status = 200, description = "The questions this person may answer now", body = openapi::QuestionList), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn pending(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
) -> Result<Json<openapi::QuestionList>, ApiError> {
    let questions = app.pending(&user).await?;
    Ok(Json(openapi::QuestionList { questions }))
}

/// Additive, for an open page or app: the pending list as
/// `/api/questions/pending` gives it, with its `version`, held up to
/// `timeout` seconds while the list is still the one `since` names. A new
/// question, an answer, a cancel or an expiry on the list ends the wait at
/// once.
#[utoipa::path(get, path = "/api/questions/pending/wait", tag = "responder",
    params(("since" = Option<String>, Query, description = "The `version` of the list the caller has; omitted, the list comes back at once"),
           ("timeout" = Option<u64>, Query, description = openapi::param::long_poll_timeout())),
    responses((status = 200, description = "The questions this person may answer now, and the list's version (the same as `since` when the timeout passed with no change)", body = openapi::PendingFeed), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 429, description = "This person holds as many long-polls as they may (`too_many_long_polls`); see Retry-After", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn pending_wait(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<openapi::PendingFeed>, ApiError> {
    let since = query.get("since").cloned();
    let timeout = match query.get("timeout") {
        None => limits::LONG_POLL_DEFAULT_SECS,
        Some(t) => t
            .parse::<u64>()
            .ok()
            .filter(|t| *t <= limits::LONG_POLL_MAX_SECS)
            .ok_or_else(|| {
                ApiError::invalid(
                    "timeout",
                    "out_of_range",
                    format!(
                        "timeout: must be a whole number of seconds from 0 to {}",
                        limits::LONG_POLL_MAX_SECS
                    ),
                )
            })?,
    };
    let (questions, version) = app
        .pending_wait(&user, since, Duration::from_secs(timeout))
        .await?;
    Ok(Json(openapi::PendingFeed { questions, version }))
}

/// Additive: the questions this person could see, resolved included (with
/// the answer and who gave it), newest first, a page at a time: what a
/// new device or a reloaded page shows as the feed's history. With an
/// `ETag`: a client that kept the page sends it back (`If-None-Match`) and
/// gets a bodiless 304 while the page is the same.
#[utoipa::path(get, path = "/api/questions/history", tag = "responder",
    params(("before" = Option<String>, Query, description = "The `next` of the previous page; omitted, the newest questions"),
           ("limit" = Option<usize>, Query, description = "Questions per page, 1 to 200 (default 50)"),
           ("If-None-Match" = Option<String>, Header, description = "The `ETag` of the page the client kept: a 304 without a body while the page is still that one")),
    responses((status = 200, description = "One page of the questions this person could see, newest first, with its `ETag` (weak when the body is compressed)", body = openapi::QuestionHistory,
                  headers(("ETag" = String, description = "The page's validator: sent back as `If-None-Match`, a 304 while the page is the same"),
                          ("Cache-Control" = String, description = "`private, no-cache`: kept by the client only, and revalidated each time"))),
              (status = 304, description = "The page is the one `If-None-Match` names: use the kept copy",
                  headers(("ETag" = String, description = "The same validator as the kept page's, weak (`W/…`) when `If-None-Match` named it weak"))), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn history(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let limit = match query.get("limit") {
        None => app::HISTORY_DEFAULT_LIMIT,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=app::HISTORY_MAX_LIMIT).contains(l))
            .ok_or_else(|| {
                ApiError::invalid(
                    "limit",
                    "out_of_range",
                    format!(
                        "limit: must be a whole number from 1 to {}",
                        app::HISTORY_MAX_LIMIT
                    ),
                )
            })?,
    };
    let before = match query.get("before") {
        None => None,
        Some(b) => Some(b.parse::<i64>().ok().filter(|b| *b > 0).ok_or_else(|| {
            ApiError::invalid(
                "before",
                "invalid",
                "before: must be the `next` of a previous page",
            )
        })?),
    };
    let (questions, next) = app.history(&user, before, limit).await?;
    let page = openapi::QuestionHistory {
        questions,
        next: next.map(|n| n.to_string()),
    };
    Ok(super::conditional::json_with_etag(&headers, &page))
}

#[utoipa::path(get, path = "/api/questions/{id}", tag = "responder",
    params(("id" = String, Path, description = "The question id (q_…)")),
    responses((status = 200, body = Question), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn user_fetch(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Path(id): Path<String>,
) -> Result<Json<Question>, ApiError> {
    Ok(Json(app.user_question(&user, id).await?))
}

/// The longest `Idempotency-Key` taken (visible ASCII characters).
pub const IDEMPOTENCY_KEY_MAX_LEN: usize = 200;

/// `Idempotency-Key`: 1 to [`IDEMPOTENCY_KEY_MAX_LEN`] visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match v.to_str() {
        Ok(k)
            if (1..=IDEMPOTENCY_KEY_MAX_LEN).contains(&k.len())
                && k.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Ok(Some(k.to_string()))
        }
        _ => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_idempotency_key",
            format!(
                "Idempotency-Key: must be 1 to {IDEMPOTENCY_KEY_MAX_LEN} visible ASCII characters"
            ),
        )
        .with_field("Idempotency-Key")),
    }
}

#[utoipa::path(post, path = "/api/questions/{id}/answer", tag = "responder",
    params(("id" = String, Path, description = "The question id (q_…)"),
           ("Idempotency-Key" = Option<String>, Header, description = "1 to 200 visible ASCII characters; a retry with the same key gets the first response")),
    request_body = openapi::AnswerBody,
    responses((status = 200, description = "The question, answered (by this answer or an earlier one)", body = Question), (status = 400, description = "The body is not JSON", body = openapi::ErrorBody), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody), (status = 409, description = "Already resolved: the body carries the question as it stands", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 429, description = "Too many answers from this user (`rate_limited`); see Retry-After", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn answer(
    State(app): State<Arc<App>>,
    LoopUserAuth(user): LoopUserAuth,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let body = parse_json(&body)?;
    let responder = user.id.clone();
    let question = id.clone();
    let r = app.answer(user, id, body, key).await?;
    let status = if r.refused {
        super::error::INVALID
    } else {
        StatusCode::OK
    };
    // One line per answer: the question, who, and from which device's token
    // (the start of its stored hash, which `devices.token_hash` holds; never
    // the token).
    tracing::info!(
        question,
        responder,
        device_token = bearer_hash(&headers)
            .as_deref()
            .map_or("", |h| &h[..12.min(h.len())]),
        status = status.as_u16(),
        "answer"
    );
    Ok((status, [(header::CONTENT_TYPE, "application/json")], r.body).into_response())
}
