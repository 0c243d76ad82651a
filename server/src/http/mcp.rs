//! `/mcp` over HTTP: who calls it (an agent token or an OAuth access
//! token, with the `WWW-Authenticate` challenge OAuth clients start from),
//! and the gate that keeps each session its agent's and bounded. The MCP
//! service itself (rmcp's streamable HTTP transport and the tools) is
//! `mcp::http_service`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use super::auth::AgentAuth;
use super::error::ApiError;
use crate::app::App;
use crate::mcp::sessions::{self, Busy, Unsaved};
use crate::waiters::LongPollSlot;

/// Who calls `/mcp`: an agent token (`qpa_…`, as on the HTTP API) or an
/// OAuth access token (`qpo_…`: live, its grant not revoked, and minted
/// for this server's `/mcp`, checked on every request). A 401 carries
/// `WWW-Authenticate` pointing at the protected-resource metadata (RFC
/// 9728), where OAuth clients start.
pub struct McpAgent(pub crate::store::identity::Agent);

impl axum::extract::FromRequestParts<Arc<App>> for McpAgent {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &Arc<App>,
    ) -> Result<Self, Response> {
        let challenge = |e: ApiError, error: Option<&str>| {
            let mut r = e.into_response();
            if r.status() == StatusCode::UNAUTHORIZED {
                if let Ok(v) = axum::http::HeaderValue::from_str(
                    &crate::oauth::metadata::www_authenticate(app, error),
                ) {
                    r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
                }
            }
            r
        };
        let token = crate::http::auth::bearer(parts).ok();
        if let Some(t) = token.filter(|t| t.starts_with(crate::oauth::ACCESS_PREFIX)) {
            use crate::oauth::token::Refused;
            return match crate::oauth::token::access_agent(app, &t).await {
                Ok(Ok(agent)) => {
                    crate::http::request_id::note_actor(&crate::store::identity::Principal::Agent(
                        agent.clone(),
                    ));
                    Ok(McpAgent(agent))
                }
                Ok(Err(Refused::Unknown)) => Err(challenge(
                    crate::http::auth::revoked(),
                    Some("unknown or revoked token"),
                )),
                Ok(Err(Refused::Expired)) => Err(challenge(
                    ApiError::unauthorized("the access token expired; refresh it"),
                    Some("the access token expired"),
                )),
                Ok(Err(Refused::OtherResource(r))) => Err(challenge(
                    ApiError::unauthorized(format!(
                        "this access token was issued for another resource ({r}), not {}",
                        crate::oauth::resource(app)
                    )),
                    Some("the token was issued for another resource"),
                )),
                Err(e) => Err(ApiError::from(e).into_response()),
            };
        }
        match AgentAuth::from_request_parts(parts, app).await {
            Ok(AgentAuth(agent)) => Ok(McpAgent(agent)),
            Err(e) => {
                let error = parts
                    .headers
                    .contains_key(header::AUTHORIZATION)
                    .then_some("unknown or revoked token");
                Err(challenge(e, error))
            }
        }
    }
}

/// The `/mcp` route's gate: a valid agent token or the API's 401/403; a
/// session named by `Mcp-Session-Id` must be this agent's (404 otherwise,
/// as for a session that does not exist); a request that opens a session
/// needs a free place (429 at `mcp_max_sessions_per_agent`). The agent then
/// rides in the request for the tools to read.
pub async fn authenticate(
    State(app): State<Arc<App>>,
    McpAgent(agent): McpAgent,
    mut req: Request,
    next: Next,
) -> Response {
    let owners = app.mcp_sessions.clone();
    let session = req
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let agent_id = agent.id.clone();
    req.extensions_mut().insert(agent);
    match session {
        Some(id) => {
            let busy =
                match sessions::enter(&app, &id, &agent_id).await {
                    Ok(Some(busy)) => busy,
                    Ok(None) => return ApiError::not_found(
                        "Mcp-Session-Id: no such session of this agent; open one with initialize",
                    )
                    .with_field("Mcp-Session-Id")
                    .into_response(),
                    Err(e) => return ApiError::from(e).into_response(),
                };
            // A GET opens the session's stream of server messages,
            // held open like a long-poll, so it counts as one
            // (max_long_polls_per_token, with the agent's waits):
            // rmcp keeps up to 33 per session (one, plus 32 "shadow"
            // streams), which no cap would count otherwise.
            let slot = if req.method() == Method::GET {
                match app.enter_long_poll(format!("agent:{agent_id}")) {
                    Ok(slot) => Some(slot),
                    Err(e) => return ApiError::from(e).into_response(),
                }
            } else {
                None
            };
            busy_while_streaming(next.run(req).await, (busy, slot))
        }
        None => {
            let Some(place) = owners.reserve(&agent_id) else {
                return ApiError::from(sessions::too_many(&app)).into_response();
            };
            // The cap counts the sessions the agent holds on every instance.
            match sessions::may_open(&app, &agent_id).await {
                Ok(false) => ApiError::from(sessions::too_many(&app)).into_response(),
                Ok(true) => {
                    let resp = place.scope(next.run(req)).await;
                    // rmcp answers the `initialize` even when the session
                    // could not be stored; a session that cannot go on
                    // (404 at its next request) is refused now instead.
                    let made = resp
                        .headers()
                        .get("mcp-session-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    match made.and_then(|s| owners.unsaved(&s)) {
                        Some(Unsaved::TooLarge(why)) => {
                            ApiError::invalid("initialize", "too_large", why).into_response()
                        }
                        Some(Unsaved::Unavailable(why)) => {
                            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", why)
                                .into_response()
                        }
                        None => resp,
                    }
                }
                Err(e) => ApiError::from(e).into_response(),
            }
        }
    }
}

/// Keeps the session busy (and a GET's long-poll counted) until a
/// streamed response (a tool call that waits, a GET's stream) has been
/// sent or dropped; any other response ends it now.
fn busy_while_streaming(resp: Response, busy: (Busy, Option<LongPollSlot>)) -> Response {
    let streaming = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !streaming || resp.status() != StatusCode::OK {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &busy;
        chunk
    });
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}
