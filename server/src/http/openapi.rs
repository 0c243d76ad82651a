//! The OpenAPI 3.1 description of the HTTP API, generated from the handlers'
//! `#[utoipa::path]` annotations and the protocol types' schemas (qp-core's
//! `openapi` feature). Served at `/openapi.json`; the copy checked in at
//! `server/openapi.json` is compared with it by `tests/openapi.rs`, and real
//! responses are validated against it by `tests/python/openapi_check.py`.
//!
//! The response bodies that are not protocol types are declared here, and
//! the handlers build them from these types, so the schema is the code.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use qp_core::protocol::ask::AskTextInput;
use qp_core::protocol::limits as l;
use qp_core::protocol::{
    Answer, AskOption, AskRequest, AskedQuestion, Asker, OptionStyle, Question, QuestionOption,
    QuestionState, ResolutionPolicy, Responder, ResponderScope, RoomRef, TextInput, WebhookEvent,
};
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// The query parameters several operations share, in the document's words,
/// their numbers the protocol's constants (`qp_core::protocol::limits`).
pub(crate) mod param {
    use super::l;

    /// A long-poll's `timeout` where a larger one is refused.
    pub(crate) fn long_poll_timeout() -> String {
        format!(
            "Seconds to hold the request, 0 to {} (default {})",
            l::LONG_POLL_MAX_SECS,
            l::LONG_POLL_DEFAULT_SECS
        )
    }

    /// A long-poll's `timeout` where a larger one is capped.
    pub(crate) fn long_poll_timeout_capped() -> String {
        format!(
            "Seconds to hold the request, 0 to {max} (default {}; more is capped at {max})",
            l::LONG_POLL_DEFAULT_SECS,
            max = l::LONG_POLL_MAX_SECS
        )
    }

    /// The agent's question list's `state`.
    pub(crate) fn list_state() -> String {
        format!(
            "pending, answered, expired, cancelled or all; left out: the last {} hours",
            l::LIST_RECENT_WINDOW_SECS / 3600
        )
    }

    /// The agent's question list's `limit`.
    pub(crate) fn list_limit() -> String {
        format!(
            "1 to {} (default {})",
            l::LIST_MAX_LIMIT,
            l::LIST_DEFAULT_LIMIT
        )
    }
}

/// A list of questions.
#[derive(Serialize, ToSchema)]
pub struct QuestionList {
    pub questions: Vec<Question>,
}

/// One page of a person's history (`/api/questions/history`).
#[derive(Serialize, ToSchema)]
pub struct QuestionHistory {
    pub questions: Vec<Question>,
    /// Passed as `before`, the next (older) page; null on the last page.
    pub next: Option<String>,
}

/// A person's pending list and its version (`/api/questions/pending/wait`).
#[derive(Serialize, ToSchema)]
pub struct PendingFeed {
    pub questions: Vec<Question>,
    /// Names this list: passed back as `since`, the next wait holds while
    /// the list stays the same.
    pub version: String,
}

/// The server's VAPID public key (`/api/webpush/key`).
#[derive(Serialize, ToSchema)]
pub struct VapidKey {
    /// Base64url, an uncompressed P-256 point: the `applicationServerKey`
    /// of `pushManager.subscribe`.
    pub public_key: String,
}

/// The error object, nested under `error` (qp's clients read it there).
pub use crate::app::error::{ErrorBody, ErrorDetail};
pub use crate::pairing::{AgentLoggedIn, AgentRef, Device, PairPreview, Paired, UserRef};

/// An answer: exactly one of `value` (a tapped option) or `text` (typed).
#[derive(Serialize, ToSchema)]
pub struct AnswerBody {
    pub value: Option<String>,
    pub text: Option<String>,
}

/// A push registration.
#[derive(Serialize, ToSchema)]
pub struct DeviceRegistration {
    /// `ios`, `android`, `web` (a browser, by Web Push) or `dev` (the
    /// terminal device).
    pub platform: String,
    /// The APNs device token (`ios`: 64 to 200 hex digits), FCM
    /// registration token (`android`: 1 to 4096 letters, digits, `-`, `_`,
    /// `:`) or, for `web`, the browser's `PushSubscription.toJSON()` as a
    /// JSON string (an https endpoint on port 443 of an allowed push
    /// service, with its `p256dh` and `auth` keys; else 422 naming
    /// `push_token`). One held by another user's device is refused (409).
    pub push_token: String,
    /// The app's bundle id or package name.
    pub app_id: String,
    /// The person's language, a BCP 47 tag (`de`, `pt-BR`): pushes are written in it.
    pub locale: Option<String>,
    /// The device's public key (base64 of a 32-byte X25519 key): its pushes
    /// are then end-to-end encrypted to it (HPKE); omitted: plain pushes,
    /// or, re-registering, the key stored before is kept.
    pub public_key: Option<String>,
    /// `ios` only: which APNs the token is from, `production` (TestFlight,
    /// App Store) or `sandbox` (a development build); omitted: the
    /// server's default (`--apns-sandbox`). Anything else is refused (422).
    pub apns_environment: Option<String>,
}

/// A pairing: a one-time code for a user token, and optionally a device.
#[derive(Serialize, ToSchema)]
pub struct PairRequest {
    pub code: String,
    /// The token's label (at most 80 characters); default "paired phone".
    pub label: Option<String>,
    pub device: Option<DeviceRegistration>,
}

/// A pairing code to look up (not spent).
#[derive(Serialize, ToSchema)]
pub struct PairPreviewRequest {
    pub code: String,
}

#[derive(Serialize, ToSchema)]
pub struct AgentLoginRequest {
    pub code: String,
    pub label: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct InviteRequest {
    /// Seconds the code stays valid (default 600: ten minutes).
    pub ttl_secs: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct Invite {
    /// The one-time code.
    pub code: String,
    /// A link that opens the app (and carries the code in its fragment).
    pub link: String,
    pub expires_at: String,
}

pub use crate::store::dev_inbox::{DevInbox, DevPush};

/// The agents a person owns (`GET /api/me/agents`), those their sign-in
/// approvals made among them.
#[derive(Serialize, ToSchema)]
pub struct MyAgents {
    pub agents: Vec<MyAgent>,
}

#[derive(Serialize, ToSchema)]
pub struct MyAgent {
    pub id: String,
    pub name: String,
    pub handle: String,
    /// `ask`, `read`.
    pub scopes: Vec<String>,
    /// The codes of the rooms it may ask in.
    pub rooms: Vec<String>,
}

/// An OAuth error (RFC 6749 §5.2): the OAuth endpoints answer in OAuth's
/// shape, not `ErrorBody`.
#[derive(Serialize, ToSchema)]
pub struct OAuthErrorBody {
    /// `invalid_request`, `invalid_client`, `invalid_grant`,
    /// `invalid_target`, `invalid_scope`, `authorization_pending`,
    /// `slow_down`, `access_denied`, `expired_token`,
    /// `temporarily_unavailable` (with Retry-After), `server_error`.
    pub error: String,
    /// A sentence naming the field at fault and the rule.
    pub error_description: String,
}

/// Tokens (RFC 6749 §5.1). From a code or a refresh token: an access
/// token for `/mcp` only, with its lifetime and a refresh token. From the
/// device grant (`qp login --url`): an agent token (`qpa_…`, no expiry)
/// and its agent.
#[derive(Serialize, ToSchema)]
pub struct OAuthTokens {
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds the access token lives.
    pub expires_in: Option<i64>,
    /// Rotates: each use returns a new one, and a reused one ends the grant.
    pub refresh_token: Option<String>,
    /// The device grant's agent.
    pub agent: Option<OAuthAgent>,
}

#[derive(Serialize, ToSchema)]
pub struct OAuthAgent {
    pub id: String,
    pub name: String,
}

/// The form of `POST /oauth/token` (`application/x-www-form-urlencoded`);
/// each field at most once.
#[derive(Serialize, ToSchema)]
pub struct OAuthTokenRequest {
    /// `authorization_code`, `refresh_token`, or
    /// `urn:ietf:params:oauth:grant-type:device_code`.
    pub grant_type: String,
    pub client_id: String,
    pub code: Option<String>,
    /// PKCE: the verifier whose S256 the authorization request carried.
    pub code_verifier: Option<String>,
    pub redirect_uri: Option<String>,
    pub refresh_token: Option<String>,
    pub device_code: Option<String>,
    /// RFC 8707: this server's `/mcp` (or its origin); anything else is
    /// `invalid_target`.
    pub resource: Option<String>,
}

/// Dynamic Client Registration (RFC 7591): the metadata sent, and what is
/// returned (with `client_id`).
#[derive(Serialize, ToSchema)]
pub struct OAuthClientMetadata {
    pub client_id: Option<String>,
    /// Shown to the person, as a name the client gave itself.
    pub client_name: Option<String>,
    /// 1 to 10: https, or http on a loopback host.
    pub redirect_uris: Vec<String>,
    /// `none` only: clients are public, PKCE protects the code.
    pub token_endpoint_auth_method: Option<String>,
    pub grant_types: Option<Vec<String>>,
    pub response_types: Option<Vec<String>>,
}

/// `qp login --url`'s start (RFC 8628 §3.2).
#[derive(Serialize, ToSchema)]
pub struct OAuthDeviceAuthorization {
    pub device_code: String,
    /// Shown on the phone's question too, to compare.
    pub user_code: String,
    pub verification_uri: String,
    pub expires_in: i64,
    /// Seconds between token polls; faster is `slow_down`.
    pub interval: i64,
}

/// The authorization page's poll of its consent.
#[derive(Serialize, ToSchema)]
pub struct OAuthStatusRequest {
    /// The handle `POST /oauth/authorize` gave.
    pub request: String,
    /// Seconds to wait for the answer, 0 to 25 (a long-poll; default 0).
    pub wait: Option<u64>,
}

/// Where a sign-in's consent stands (the authorization page's poll).
#[derive(Serialize, ToSchema)]
pub struct OAuthConsentStatus {
    /// `pending`, `approved`, `denied`, `expired` or `used`.
    pub state: String,
    pub message: Option<String>,
    /// Where to send the browser: the client's redirect URI with `code`
    /// (or `error`), `state` and `iss`.
    pub redirect: Option<String>,
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An agent token (qpa_…) for the asker endpoints, a user token (qpu_…) \
                         for a person's device, an admin token (qpx_…) for invites.",
                    ))
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Question Protocol (qp)",
        description = "Ask a person a question they answer from their phone's lock screen. \
            Agents ask and wait (long-poll) or receive a signed webhook; people's devices list \
            and answer. Every error has the shape of `ErrorBody`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        super::ask, super::list, super::fetch, super::wait, super::cancel,
        super::pending, super::pending_wait, super::history, super::user_fetch, super::answer,
        super::register_device, super::delete_device, super::me, super::dev_inbox,
        super::pairing::pair, super::pairing::preview, super::pairing::agent_login,
        super::pairing::invite_user, super::pairing::invite_agent,
        super::observe::healthz, super::ready::readyz, super::observe::metrics, openapi_json,
        super::my_agents::list, super::my_agents::remove,
        super::webapp::vapid_key, super::webapp::sign_out,
        super::oauth::protected_resource, super::oauth::server_resource,
        super::oauth::authorization_server,
        super::oauth::register, super::oauth::authorize::page,
        super::oauth::authorize::start, super::oauth::authorize::status,
        super::oauth::token, super::oauth::revoke,
        super::oauth::device_authorization, super::oauth::device_page,
    ),
    components(schemas(
        Question, AskedQuestion, QuestionOption, OptionStyle, TextInput, ResponderScope, ResolutionPolicy,
        QuestionState, Answer, Responder, RoomRef, Asker, WebhookEvent,
        AskRequest, AskOption, AskTextInput,
        QuestionList, PendingFeed, QuestionHistory, VapidKey, ErrorBody, ErrorDetail, AnswerBody, DeviceRegistration, Device, UserRef,
        AgentRef, PairRequest, Paired, PairPreviewRequest, PairPreview, AgentLoginRequest, AgentLoggedIn, InviteRequest, Invite,
        DevInbox, DevPush, MyAgents, MyAgent, OAuthErrorBody, OAuthTokens, OAuthAgent, OAuthTokenRequest,
        OAuthClientMetadata, OAuthDeviceAuthorization, OAuthConsentStatus, OAuthStatusRequest,
    )),
    modifiers(&BearerAuth),
    tags(
        (name = "asker", description = "Agents: ask, wait, list, cancel (agent token)."),
        (name = "responder", description = "A person's devices: pending questions, answers, push registration (user token)."),
        (name = "pairing", description = "One-time codes exchanged for tokens."),
        (name = "operations", description = "Health, metrics and this document."),
        (name = "oauth", description = "OAuth 2.1 for remote MCP clients (the MCP authorization specification) and `qp login --url`: discovery, registration, the consent asked on the person's phone, tokens. Errors in OAuth's shape (`OAuthErrorBody`)."),
    )
)]
pub struct ApiDoc;

/// The document as served: pretty JSON, built once.
pub fn document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_string();
        let mut text = doc
            .to_pretty_json()
            .expect("the OpenAPI document serializes");
        text.push('\n');
        text
    })
}

/// The OpenAPI 3.1 description of this API.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "This document", content_type = "application/json")))]
pub async fn openapi_json() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], document()).into_response()
}
