//! Talking to the server from the phone: flushing the outbox ([`flush`](fn@flush)) and
//! pulling what changed ([`sync`]). Every request goes through the
//! platform's [`HttpTransport`] with the timeout the core gives it; the user
//! token comes from the platform ([`TokenProvider`]: Keychain, Keystore) for
//! each request and is never stored or logged by the core.

mod flush;
mod handover;
mod pull;

use std::sync::Arc;
use std::time::Duration;

pub use flush::{flush, FlushReport};
pub use handover::{
    hand_over, handed_over_outcome, Handover, HandoverOutcome, LOST_HAND_OVER_GRACE_MS,
};
pub use pull::{refresh, sync, Refreshed, SyncReport};

use crate::http::{HttpHeader, HttpMethod, HttpRequest, HttpTransport};
use crate::store::StoreError;

/// The longest one request of the app may take (connect, send, read): a
/// phone on a bad network must not wait longer to learn it is offline.
/// The notification extension's requests get its whole network budget
/// at most ([`crate::phone::EXTENSION_NETWORK_BUDGET`]).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Supplies the signed-in user's token. Implemented by the platform.
pub trait TokenProvider: Send + Sync {
    /// The current token, or `None` when signed out.
    fn token(&self) -> Option<String>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    #[error("not signed in")]
    NotSignedIn,
    #[error("the server could not be reached: {0}")]
    Network(String),
    /// The server no longer takes the token (401: revoked, expired): sign in again.
    #[error("the server refused the sign-in (401): {0}")]
    Unauthorized(String),
    #[error("the server refused the request: {status} {message}")]
    Server { status: u16, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How the phone reaches its server.
pub struct PhoneClient {
    http: Arc<dyn HttpTransport>,
    base_url: String,
    /// The signed-in user's id: "answered by me" is decided against it.
    pub user_id: String,
    tokens: Arc<dyn TokenProvider>,
    /// Each request's time limit, passed to the transport (and enforced
    /// here too: a transport that ignores it does not hold the phone up).
    timeout: Duration,
}

/// Always built (the asker client uses it too); also named here, where
/// the sync's callers look for it.
pub use crate::logging::error_chain;

/// One HTTP exchange: the status and the body, or a network failure.
pub(crate) enum Reply {
    Status(u16, Vec<u8>),
    Unreachable(String),
}

impl PhoneClient {
    /// A client of `base_url` for `user_id`, whose requests `http` executes,
    /// each within `timeout`.
    pub fn new(
        base_url: &str,
        user_id: &str,
        tokens: Arc<dyn TokenProvider>,
        http: Arc<dyn HttpTransport>,
        timeout: Duration,
    ) -> Self {
        PhoneClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            user_id: user_id.to_string(),
            tokens,
            timeout,
        }
    }

    /// The server this client talks to (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn token(&self) -> Result<String, SyncError> {
        self.tokens
            .token()
            .filter(|t| !t.is_empty())
            .ok_or(SyncError::NotSignedIn)
    }

    /// The request for `path` as this client sends it: the bearer token,
    /// JSON in and out, the idempotency key when given, the time limit.
    pub(crate) fn request(
        &self,
        method: HttpMethod,
        path: &str,
        body: Option<&serde_json::Value>,
        idempotency_key: Option<&str>,
    ) -> Result<HttpRequest, SyncError> {
        let mut headers = vec![
            header("Authorization", &format!("Bearer {}", self.token()?)),
            header("Accept", "application/json"),
        ];
        if body.is_some() {
            headers.push(header("Content-Type", "application/json"));
        }
        if let Some(k) = idempotency_key {
            headers.push(header("Idempotency-Key", k));
        }
        Ok(HttpRequest {
            method,
            url: format!("{}{path}", self.base_url),
            headers,
            body: body.map(|b| b.to_string().into_bytes()),
            timeout_ms: self.timeout.as_millis().try_into().unwrap_or(u32::MAX),
        })
    }

    pub(crate) async fn send(
        &self,
        method: HttpMethod,
        path: &str,
        body: Option<&serde_json::Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Reply, SyncError> {
        let request = self.request(method, path, body, idempotency_key)?;
        Ok(exchange(&*self.http, request).await)
    }
}

fn header(name: &str, value: &str) -> HttpHeader {
    HttpHeader {
        name: name.into(),
        value: value.into(),
    }
}

/// One request through `http`, bounded by its own timeout whatever the
/// transport does with it.
pub(crate) async fn exchange(http: &dyn HttpTransport, request: HttpRequest) -> Reply {
    let limit = request.timeout();
    match tokio::time::timeout(limit, http.send(request)).await {
        Ok(Ok(response)) => Reply::Status(response.status, response.body),
        Ok(Err(e)) => Reply::Unreachable(e.detail()),
        Err(_) => Reply::Unreachable(format!("timed out after {} ms", limit.as_millis())),
    }
}

/// The server's error message from an error body (the top-level `message`,
/// or qp's nested `error.message`), if any.
pub(crate) fn server_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v["message"]
                .as_str()
                .or(v["error"]["message"].as_str())
                .map(String::from)
        })
        .unwrap_or_else(|| "no details".into())
}
