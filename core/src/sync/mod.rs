//! Talking to the server from the phone: flushing the outbox ([`flush`]) and
//! pulling what changed ([`sync`]). HTTP goes through reqwest with timeouts;
//! the user token comes from the platform ([`TokenProvider`]: Keychain,
//! Keystore) for each request and is never stored or logged by the core.

mod flush;
mod pull;
mod trust;

use std::sync::Arc;

pub use flush::{flush, FlushReport};
pub use pull::{refresh, sync, Refreshed, SyncReport};
pub use trust::Trust;

use crate::store::StoreError;

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
    /// The trust settings are unusable (an extra CA that is not a certificate).
    #[error("{0}")]
    InvalidTrust(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How the phone reaches its server.
pub struct PhoneClient {
    /// Built on first use: the notification extension constructs a phone
    /// for every push but sends only when it has something to send, and
    /// loading the platform's trust store can cost milliseconds (Linux reads
    /// every system root).
    http: std::sync::OnceLock<reqwest::Client>,
    trust: Trust,
    base_url: String,
    /// The signed-in user's id: "answered by me" is decided against it.
    pub user_id: String,
    tokens: Arc<dyn TokenProvider>,
}

/// Always built (the asker client uses it too); named here as before.
pub use crate::logging::error_chain;

/// One HTTP exchange: the status and the body, or a network failure.
pub(crate) enum Reply {
    Status(u16, Vec<u8>),
    Unreachable(String),
}

impl PhoneClient {
    /// A client trusting the platform's roots.
    pub fn new(
        base_url: &str,
        user_id: &str,
        tokens: Arc<dyn TokenProvider>,
    ) -> Result<Self, SyncError> {
        Self::with_trust(base_url, user_id, tokens, &Trust::platform())
    }

    /// A client trusting what `trust` says (an extra CA).
    pub fn with_trust(
        base_url: &str,
        user_id: &str,
        tokens: Arc<dyn TokenProvider>,
        trust: &Trust,
    ) -> Result<Self, SyncError> {
        trust.check().map_err(SyncError::InvalidTrust)?;
        Ok(PhoneClient {
            http: std::sync::OnceLock::new(),
            trust: trust.clone(),
            base_url: base_url.trim_end_matches('/').to_string(),
            user_id: user_id.to_string(),
            tokens,
        })
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

    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Reply, SyncError> {
        let http = match self.http.get() {
            Some(h) => h,
            None => {
                let built = self.trust.http_client().map_err(SyncError::InvalidTrust)?;
                self.http.get_or_init(|| built)
            }
        };
        let mut req = http
            .request(method, format!("{}{path}", self.base_url))
            .bearer_auth(self.token()?);
        if let Some(k) = idempotency_key {
            req = req.header("Idempotency-Key", k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                match resp.bytes().await {
                    Ok(b) => Ok(Reply::Status(status, b.to_vec())),
                    Err(e) => Ok(Reply::Unreachable(error_chain(&e.without_url()))),
                }
            }
            // Without the URL: it carries the question id, not the token, but
            // error text ends up in the UI and logs; keep it short.
            Err(e) => Ok(Reply::Unreachable(error_chain(&e.without_url()))),
        }
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
