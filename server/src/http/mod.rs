//! The HTTP API (spec section 7, plus additive endpoints): one router, thin
//! handlers that parse, call [`crate::app::App`], and shape the response.

pub mod auth;
pub mod error;
mod layers;
pub mod mcp;
mod my_agents;
pub mod observe;
pub mod openapi;
mod pairing;
pub mod ready;
pub mod request_id;
mod webapp;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use qp_core::protocol::device::{ApnsEnvironment, Platform, APNS_ENVIRONMENT_RULE};
use qp_core::protocol::{AskRequest, Question, QuestionState};
use serde_json::Value;

use crate::app::{self, App};
use crate::pairing::DeviceFields;
use crate::store::dev_inbox::{self, DevInbox};
use crate::store::identity;
use auth::{AgentAuth, LoopAgentAuth, LoopUserAuth, UserAuth};
use error::ApiError;

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/api/agent/rooms/{room}/questions", post(ask))
        .route("/api/agent/questions", get(list))
        .route("/api/agent/questions/{id}", get(fetch))
        .route("/api/agent/questions/{id}/wait", get(wait))
        .route("/api/agent/questions/{id}/cancel", post(cancel))
        .route("/api/questions/pending", get(pending))
        .route("/api/questions/{id}", get(user_fetch))
        .route("/api/questions/{id}/answer", post(answer))
        .route("/api/devices", post(register_device))
        .route("/api/devices/{id}", delete(delete_device))
        .route("/api/me", get(me))
        .route("/api/me/agents", get(my_agents::list))
        .route("/api/me/agents/{id}", delete(my_agents::remove))
        .route("/api/dev/inbox", get(dev_inbox))
        .route("/api/pair", post(pairing::pair))
        .route("/api/agent/login", post(pairing::agent_login))
        .route("/api/admin/users/{id}/invites", post(pairing::invite_user))
        .route(
            "/api/admin/agents/{id}/invites",
            post(pairing::invite_agent),
        )
        .route("/pair", get(pairing::landing))
        .route("/healthz", get(observe::healthz))
        .route("/readyz", get(ready::readyz))
        .route("/metrics", get(observe::metrics))
        .route("/openapi.json", get(openapi::openapi_json))
        .merge(
            Router::new()
                .route_service("/mcp", crate::mcp::http_service(app.clone()))
                .layer(axum::middleware::from_fn_with_state(
                    app.clone(),
                    mcp::authenticate,
                ))
                // Outside the bearer check: a browser's preflight carries
                // no token.
                .layer(crate::oauth::cors()),
        )
        .merge(webapp::routes())
        .merge(crate::oauth::routes(app.clone()))
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        // The router's middleware are services of their own (`layers`):
        // every parked long-poll carries each one's state.
        .layer(layers::Wrap(layers::JsonErrors(app.clone())))
        // Latency and the database's health, in one layer.
        .route_layer(layers::Wrap(layers::Record(app.clone())))
        .layer(
            // One line per request: id, method, path template, client,
            // actor, status, latency. Never the URI's query, a header or a
            // body (tokens live there).
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(request_id::make_span)
                .on_request(())
                .on_response(
                    tower_http::trace::DefaultOnResponse::new()
                        .level(tracing::Level::INFO)
                        .latency_unit(tower_http::LatencyUnit::Micros),
                ),
        )
        .layer(layers::Wrap(layers::RequestIds))
        .with_state(app)
}

/// Parses a JSON body: unparseable bytes are 400 `malformed_json`; the
/// protocol rules then judge the value (422).
fn parse_json(body: &Bytes) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Err(ApiError::malformed(
            "the request body is empty; send a JSON object",
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::malformed(format!("the body is not valid JSON: {e}")))
}

#[utoipa::path(post, path = "/api/agent/rooms/{room}/questions", tag = "asker",
    params(("room" = String, Path, description = "The room's invite code")),
    request_body = AskRequest,
    responses((status = 201, description = "Asked: the question, pending", body = Question), (status = 400, description = "The body is not JSON", body = openapi::ErrorBody), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 429, description = "Rate limit or pending quota; see Retry-After", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn ask(
    State(app): State<Arc<App>>,
    LoopAgentAuth(agent): LoopAgentAuth,
    Path(room): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<Question>), ApiError> {
    let body = parse_json(&body)?;
    let q = app.ask(agent, room, body).await?;
    Ok((StatusCode::CREATED, Json(q)))
}

#[utoipa::path(get, path = "/api/agent/questions/{id}", tag = "asker",
    params(("id" = String, Path, description = "The question id (q_…)")),
    responses((status = 200, body = Question), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn fetch(
    State(app): State<Arc<App>>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<String>,
) -> Result<Json<Question>, ApiError> {
    Ok(Json(app.agent_question(&agent, id).await?))
}

#[utoipa::path(get, path = "/api/agent/questions/{id}/wait", tag = "asker",
    params(("id" = String, Path, description = "The question id (q_…)"),
           ("timeout" = Option<u64>, Query, description = "Seconds to hold the request, 0 to 30 (default 20; more is capped at 30)")),
    responses((status = 200, description = "The question when it resolved, or still pending when the timeout passed", body = Question), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 429, description = "This agent holds as many long-polls as it may (`too_many_long_polls`); see Retry-After", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn wait(
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
        None => app::LONG_POLL_DEFAULT_SECS,
        Some(t) => t.trim().parse::<u64>().map_err(|_| {
            ApiError::invalid(
                "timeout",
                "invalid_value",
                format!(
                    "timeout: must be whole seconds from 0 to {}, got {t:?}",
                    app::LONG_POLL_MAX_SECS
                ),
            )
        })?,
    }
    .min(app::LONG_POLL_MAX_SECS);
    Ok(Duration::from_secs(secs))
}

#[utoipa::path(get, path = "/api/agent/questions", tag = "asker",
    params(("state" = Option<String>, Query, description = "pending, answered, expired, cancelled or all; left out: the last 24 hours"),
           ("limit" = Option<usize>, Query, description = "1 to 500 (default 100)")),
    responses((status = 200, description = "This agent's questions, newest first", body = openapi::QuestionList), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn list(
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
        None => app::LIST_DEFAULT_LIMIT,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=app::LIST_MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(ApiError::invalid(
                    "limit",
                    "out_of_range",
                    format!("limit: must be 1 to {}, got {l:?}", app::LIST_MAX_LIMIT),
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
async fn cancel(
    State(app): State<Arc<App>>,
    AgentAuth(agent): AgentAuth,
    Path(id): Path<String>,
) -> Result<Json<Question>, ApiError> {
    Ok(Json(app.cancel(&agent, id).await?))
}

#[utoipa::path(get, path = "/api/questions/pending", tag = "responder",
    responses((status = 200, description = "The questions this person may answer now", body = openapi::QuestionList), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn pending(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
) -> Result<Json<openapi::QuestionList>, ApiError> {
    let questions = app.pending(&user).await?;
    Ok(Json(openapi::QuestionList { questions }))
}

#[utoipa::path(get, path = "/api/questions/{id}", tag = "responder",
    params(("id" = String, Path, description = "The question id (q_…)")),
    responses((status = 200, body = Question), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such question of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn user_fetch(
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
async fn answer(
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
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK);
    // One line per answer: the question, who, and from which device's token
    // (the start of its stored hash, which `devices.token_hash` holds; never
    // the token).
    tracing::info!(
        question,
        responder,
        device_token = bearer_hash(&headers)
            .as_deref()
            .map_or("", |h| &h[..12.min(h.len())]),
        status = r.status,
        "answer"
    );
    Ok((status, [(header::CONTENT_TYPE, "application/json")], r.body).into_response())
}

/// The fields of a push registration (`platform`, `push_token`, `app_id`),
/// checked; `prefix` names where they sit (`device.` inside a pairing).
fn device_fields(body: &Value, prefix: &str) -> Result<DeviceFields, ApiError> {
    let field = |name: &str, max: usize| -> Result<String, ApiError> {
        let path = format!("{prefix}{name}");
        match body.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= max => {
                Ok(s.trim().to_string())
            }
            Some(Value::String(_)) => Err(ApiError::invalid(
                &path,
                "invalid_value",
                format!("{path}: must be 1 to {max} characters"),
            )),
            None | Some(Value::Null) => Err(ApiError::invalid(
                &path,
                "required",
                format!("{path}: is required"),
            )),
            Some(_) => Err(ApiError::invalid(
                &path,
                "invalid_type",
                format!("{path}: must be a string"),
            )),
        }
    };
    let platform = field("platform", 16)?;
    if !["ios", "android", "dev", "web"].contains(&platform.as_str()) {
        return Err(ApiError::invalid(
            &format!("{prefix}platform"),
            "invalid_value",
            format!("{prefix}platform: must be ios, android, dev or web; got {platform:?}"),
        ));
    }
    let push_token = field("push_token", 4096)?;
    // A browser's subscription: which of its parts is wrong, by name.
    if platform == "web" {
        qp_core::protocol::web_push::parse_subscription(&push_token).map_err(|e| {
            let path = format!("{prefix}push_token");
            ApiError::invalid(&path, "invalid_value", format!("{path}: {e}"))
        })?;
    }
    // Per platform: an APNs token goes into the path of the request to Apple.
    qp_core::protocol::device::check_push_token(&platform, &push_token).map_err(|e| {
        let path = format!("{prefix}push_token");
        ApiError::invalid(&path, "invalid_value", format!("{path}: {e}"))
    })?;
    let app_id = field("app_id", 255)?;
    // Optional: the person's language, a BCP 47 tag (`de`, `pt-BR`).
    let locale = match body.get("locale") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) if qp_core::present::copy::is_language_tag(s) => s.clone(),
        Some(_) => {
            return Err(ApiError::invalid(
                &format!("{prefix}locale"),
                "invalid_value",
                format!("{prefix}locale: must be a language tag such as \"de\" or \"pt-BR\""),
            ))
        }
    };
    // Optional: the device's public key for end-to-end encrypted pushes,
    // checked to be an X25519 key now rather than failing at every push.
    let public_key = match body.get("public_key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let path = format!("{prefix}public_key");
            let key = qp_core::e2e::DevicePublicKey::parse(s, &path)
                .map_err(|e| ApiError::invalid(&path, "invalid_value", e.to_string()))?;
            Some(key.to_base64())
        }
        Some(_) => {
            return Err(ApiError::invalid(
                &format!("{prefix}public_key"),
                "invalid_type",
                format!("{prefix}public_key: must be a string (base64 of a 32-byte X25519 key)"),
            ))
        }
    };
    // Optional, iOS only: which APNs the token is from (a debug build's
    // are sandbox tokens, which production refuses, and the reverse).
    let apns_environment = match body.get("apns_environment") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if platform == Platform::Ios.as_str() => {
            let path = format!("{prefix}apns_environment");
            let env = ApnsEnvironment::parse(s).ok_or_else(|| {
                ApiError::invalid(
                    &path,
                    "invalid_value",
                    format!("{path}: {APNS_ENVIRONMENT_RULE}; got {s:?}"),
                )
            })?;
            Some(env.as_str().to_string())
        }
        Some(Value::String(_)) => {
            let path = format!("{prefix}apns_environment");
            return Err(ApiError::invalid(
                &path,
                "not_allowed",
                format!("{path}: only for platform ios"),
            ));
        }
        Some(_) => {
            let path = format!("{prefix}apns_environment");
            return Err(ApiError::invalid(
                &path,
                "invalid_type",
                format!("{path}: must be a string ({APNS_ENVIRONMENT_RULE})"),
            ));
        }
    };
    Ok(DeviceFields {
        platform,
        push_token,
        app_id,
        locale,
        public_key,
        apns_environment,
    })
}

#[utoipa::path(post, path = "/api/devices", tag = "responder",
    request_body = openapi::DeviceRegistration,
    responses((status = 201, description = "Registered (or updated, for a known push token)", body = openapi::Device), (status = 400, description = "The body is not JSON", body = openapi::ErrorBody), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 409, description = "The push token is registered to another user's device", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn register_device(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<openapi::Device>), ApiError> {
    let body = parse_json(&body)?;
    let fields = device_fields(&body, "")?;
    webapp::check_web_device(&app, &fields, "")?;
    let user_id = user.id.clone();
    // The device is tied to the token registering it: revoking that token
    // removes the device (and its pushes).
    let token_hash = bearer_hash(&headers);
    let device = app
        .db
        .run(move |conn| -> Result<_, ApiError> {
            Ok(identity::register_device(
                conn,
                &user_id,
                token_hash.as_deref(),
                &fields.registration(),
            )?)
        })
        .await?;
    tracing::info!(
        user = %user.id,
        device = %device.id,
        platform = %device.platform,
        "device registered"
    );
    Ok((
        StatusCode::CREATED,
        Json(openapi::Device {
            id: device.id,
            platform: device.platform,
            app_id: device.app_id,
        }),
    ))
}

/// The stored hash of the bearer token a request was authenticated with
/// (`UserAuth` has checked it already).
fn bearer_hash(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (_, token) = value.split_once(' ')?;
    Some(crate::ids::token_hash(token.trim()))
}

#[utoipa::path(delete, path = "/api/devices/{id}", tag = "responder",
    params(("id" = String, Path, description = "The device id")),
    responses((status = 204, description = "Removed"), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such device of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn delete_device(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let user_id = user.id.clone();
    let device = id.clone();
    let deleted = app
        .db
        .run(move |conn| -> Result<_, ApiError> {
            Ok(identity::delete_device(conn, &user_id, &id)?)
        })
        .await?;
    if deleted {
        tracing::info!(user = %user.id, device, "device removed");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("no such device of yours"))
    }
}

/// Additive: who this user token belongs to (a device signs in with it).
#[utoipa::path(get, path = "/api/me", tag = "responder",
    responses((status = 200, description = "Who this user token belongs to", body = openapi::UserRef), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn me(UserAuth(user): UserAuth) -> Json<openapi::UserRef> {
    Json(openapi::UserRef {
        id: user.id,
        display_name: user.display_name,
    })
}

/// Additive, for the terminal device: the payloads the dev transport
/// delivered to one of my `dev` devices after `after`, long-polled up to
/// `timeout` seconds (0 to 30, default 20).
#[utoipa::path(get, path = "/api/dev/inbox", tag = "responder",
    params(("device" = String, Query, description = "One of this user's `dev` devices"),
           ("after" = Option<i64>, Query, description = "Only pushes after this sequence number"),
           ("timeout" = Option<u64>, Query, description = "Seconds to hold the request, 0 to 30 (default 20)")),
    responses((status = 200, description = "Pushes delivered to the terminal device", body = openapi::DevInbox), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 404, description = "No such dev device of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
async fn dev_inbox(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<DevInbox>, ApiError> {
    let device = query
        .get("device")
        .cloned()
        .ok_or_else(|| ApiError::invalid("device", "required", "device: is required"))?;
    let after: i64 = query.get("after").and_then(|a| a.parse().ok()).unwrap_or(0);
    let timeout = query
        .get("timeout")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(app::LONG_POLL_DEFAULT_SECS)
        .min(app::LONG_POLL_MAX_SECS);
    let (user_id, dev) = (user.id.clone(), device.clone());
    let owned = app
        .db
        .run(move |conn| -> Result<_, ApiError> {
            Ok(identity::device_by_id(conn, &dev)?
                .is_some_and(|d| d.user_id == user_id && d.platform == "dev"))
        })
        .await?;
    if !owned {
        return Err(ApiError::not_found("no such dev device of yours"));
    }
    // Counted against the user's long-polls (max_long_polls_per_token).
    let _slot = match timeout {
        0 => None,
        _ => Some(app.enter_long_poll(format!("user:{}", user.id))?),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        // Listen before reading, so a push in between is not missed.
        let woke = app.dev_wake.notified();
        let dev = device.clone();
        let pushes = app
            .db
            .run(move |conn| dev_inbox::after(conn, &dev, after))
            .await?;
        if !pushes.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(Json(DevInbox { pushes }));
        }
        let mut stopping = app.stopping.subscribe();
        let _parked = crate::metrics::Counted::new(&app.metrics.parked);
        tokio::select! {
            _ = tokio::time::timeout_at(deadline, woke) => {}
            _ = async { let _ = stopping.wait_for(|s| *s).await; } => return Ok(Json(DevInbox { pushes: Vec::new() })),
        }
    }
}
