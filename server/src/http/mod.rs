//! The HTTP API (spec section 7, plus additive endpoints): one router, thin
//! handlers that parse, call [`crate::app::App`], and shape the response:
//! the asker's (`asker`), the responder's (`responder`), a person's devices
//! (`devices`), pairing, the web responder, OAuth's routes and pages (`oauth`),
//! `/mcp`'s gate (`mcp`) and the operator's probes (`observe`, `ready`).

mod asker;
pub mod auth;
mod compress;
mod conditional;
mod devices;
pub mod error;
mod layers;
pub mod mcp;
mod my_agents;
pub mod oauth;
pub mod observe;
pub mod openapi;
mod pairing;
pub mod ready;
pub mod request_id;
mod responder;
pub(crate) mod webapp;

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
use qp_core::protocol::limits;
use qp_core::protocol::{AskRequest, AskedQuestion, Question, QuestionState};
use serde_json::Value;

use crate::app::{self, App};
use crate::pairing::DeviceFields;
use crate::store::dev_inbox::DevInbox;
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
        .route("/api/questions/pending/wait", get(pending_wait))
        .route("/api/questions/history", get(history))
        .route("/api/questions/{id}", get(user_fetch))
        .route("/api/questions/{id}/answer", post(answer))
        .route("/api/devices", post(register_device))
        .route("/api/devices/{id}", delete(delete_device))
        .route("/api/me", get(me))
        .route("/api/me/agents", get(my_agents::list))
        .route("/api/me/agents/{id}", delete(my_agents::remove))
        .route("/api/dev/inbox", get(dev_inbox))
        .route("/api/pair", post(pairing::pair))
        .route("/api/pair/preview", post(pairing::preview))
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
                .layer(oauth::cors()),
        )
        .merge(webapp::routes())
        .merge(oauth::routes(app.clone()))
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

use asker::*;
use devices::*;
pub use responder::IDEMPOTENCY_KEY_MAX_LEN;
use responder::*;
