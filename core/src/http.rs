//! The phone's one HTTP interface. The core describes each request
//! (method, URL, headers, body, and the time it may take) and reads the
//! response; what executes it is the platform's: `URLSession` on iOS,
//! `HttpURLConnection` on Android, reqwest for `qp device` and the tests
//! (qp-client's `ReqwestTransport`). So the phone goes through the
//! platform's proxies, trust store (MDM and user CAs), VPN and cellular
//! policy, and the phone library carries no HTTP or TLS of its own.
//!
//! Everything that decides something stays in the core: which requests,
//! their idempotency keys and tokens, retries and backoff, what a status
//! means, the outbox's states. A transport only executes.
//!
//! [`ScriptedTransport`] answers from a closure, in process: the Rust tests
//! drive the outbox and the session through it, failures and hangs included.

use std::sync::Mutex;
use std::time::Duration;

/// The methods the phone uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Delete,
}

impl HttpMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
        }
    }
}

/// One header of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpHeader {
    pub name: String,
    pub value: String,
}

/// A request as the core describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: HttpMethod,
    /// The whole URL (`https://host/api/...`).
    pub url: String,
    pub headers: Vec<HttpHeader>,
    pub body: Option<Vec<u8>>,
    /// The whole exchange (connect, send, read) must take no longer: the
    /// transport gives up then and fails with [`HttpFailure::TimedOut`]. The
    /// core's budgets decide it (the extension's is shorter than the app's).
    pub timeout_ms: u32,
}

impl HttpRequest {
    /// The value of header `name` (case-insensitive), if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str())
    }

    /// The path and query of the URL (`/api/questions/q_1`), for tests and logs.
    pub fn path(&self) -> &str {
        let rest = self
            .url
            .split_once("://")
            .map_or(self.url.as_str(), |(_, r)| r);
        rest.find('/').map_or("/", |i| &rest[i..])
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.into())
    }
}

/// What the server sent back: any status, with its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why no response came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpFailure {
    /// The device has no network (airplane mode, no signal).
    Offline,
    /// The request took longer than its `timeout_ms`.
    TimedOut,
    /// Anything else: the name did not resolve, the connection was refused
    /// or reset, TLS failed (an untrusted certificate), a proxy refused.
    Unreachable,
}

/// No response: why, and the platform's own words (for logs; never shown
/// as they are).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct HttpError {
    pub failure: HttpFailure,
    pub reason: String,
}

impl HttpError {
    pub fn unreachable(reason: impl Into<String>) -> HttpError {
        HttpError {
            failure: HttpFailure::Unreachable,
            reason: reason.into(),
        }
    }

    /// The detail the outbox records; an offline device is named so that
    /// the answer's line says "offline" rather than "server unreachable".
    pub fn detail(&self) -> String {
        match self.failure {
            HttpFailure::Offline => format!("not connected to the internet: {}", self.reason),
            HttpFailure::TimedOut => format!("timed out: {}", self.reason),
            HttpFailure::Unreachable => self.reason.clone(),
        }
    }
}

/// Executes the core's requests. Implemented by the platform (Swift,
/// Kotlin) and by qp-client's reqwest transport; one per process.
#[async_trait::async_trait]
pub trait HttpTransport: Send + Sync {
    /// Sends `request` and returns the response, whatever its status; an
    /// error only when no response came.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError>;
}

/// What a [`ScriptedTransport`] does with one request.
#[derive(Debug, Clone)]
pub enum Scripted {
    Reply(HttpResponse),
    Fail(HttpError),
    /// Never answers (a captive portal, a dead proxy): the caller's
    /// timeout must end it.
    Hang,
}

impl Scripted {
    /// A reply with `status` and a JSON body.
    pub fn json(status: u16, body: &serde_json::Value) -> Scripted {
        Scripted::Reply(HttpResponse {
            status,
            body: body.to_string().into_bytes(),
        })
    }

    /// No response: the connection failed.
    pub fn unreachable() -> Scripted {
        Scripted::Fail(HttpError::unreachable("connection refused (scripted)"))
    }
}

type Responder = Box<dyn Fn(&HttpRequest) -> Scripted + Send + Sync>;

/// A transport that answers from a closure and keeps every request, for
/// tests: no socket, no server.
pub struct ScriptedTransport {
    respond: Responder,
    sent: Mutex<Vec<HttpRequest>>,
}

impl ScriptedTransport {
    pub fn new(respond: impl Fn(&HttpRequest) -> Scripted + Send + Sync + 'static) -> Self {
        ScriptedTransport {
            respond: Box::new(respond),
            sent: Mutex::new(Vec::new()),
        }
    }

    /// Fails every request (a phone with no server).
    pub fn offline() -> Self {
        ScriptedTransport::new(|_| Scripted::unreachable())
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many requests were `method` to a path starting with `path`.
    pub fn count(&self, method: HttpMethod, path: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == method && r.path().starts_with(path))
            .count()
    }
}

#[async_trait::async_trait]
impl HttpTransport for ScriptedTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let action = (self.respond)(&request);
        self.sent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
        match action {
            Scripted::Reply(r) => Ok(r),
            Scripted::Fail(e) => Err(e),
            Scripted::Hang => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_its_path_and_headers() {
        let r = HttpRequest {
            method: HttpMethod::Get,
            url: "https://qp.example:8443/api/questions/q_1?x=1".into(),
            headers: vec![HttpHeader {
                name: "Idempotency-Key".into(),
                value: "k".into(),
            }],
            body: None,
            timeout_ms: 1500,
        };
        assert_eq!(r.path(), "/api/questions/q_1?x=1");
        assert_eq!(r.header("idempotency-key"), Some("k"));
        assert_eq!(r.timeout(), Duration::from_millis(1500));
    }
}
