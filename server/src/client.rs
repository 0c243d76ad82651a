//! A small Rust client for askers: ask, a yes/no helper, await with the
//! re-poll hidden, fetch, list, cancel, and reconciling a webhook event by
//! `correlation_id`. `qp ask`/`watch`/`list`/`cancel` are built on it.

use std::time::Duration;

use qp_core::protocol::{AskRequest, Question, WebhookEvent};
use qp_core::retry::RetryPolicy;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error body.
    #[error("{message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        field: Option<String>,
        /// The question as it stands, for 409 conflicts.
        question: Option<Box<Question>>,
    },
    #[error(
        "cannot reach the server at {url}: {}",
        qp_core::sync::error_chain(source)
    )]
    Transport { url: String, source: reqwest::Error },
    #[error("unexpected response from the server: {0}")]
    Decode(String),
}

impl ClientError {
    /// Worth retrying: the network, or a 5xx / 429.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport { .. } => true,
            ClientError::Api { status, .. } => *status >= 500 || *status == 429,
            ClientError::Decode(_) => false,
        }
    }
}

/// How long one wait request asks the server to hold (the server's max is 30 s).
pub const WAIT_POLL_SECS: u64 = 25;

/// The CA certificates the `qp` clients trust besides the web's roots (a
/// private CA, `qp admin tls dev-cert`): read and checked once, then every
/// client is built from it. The one place those clients get their trust.
#[derive(Clone, Default)]
pub struct ExtraCa {
    pem: Vec<u8>,
    certs: Vec<reqwest::Certificate>,
}

impl ExtraCa {
    /// None: the web's roots only.
    pub fn none() -> ExtraCa {
        ExtraCa::default()
    }

    /// Certificates in PEM; an error says what is wrong.
    pub fn from_pem(pem: &[u8]) -> Result<ExtraCa, String> {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("the CA certificate is not PEM: {e}"))?;
        if certs.is_empty() {
            return Err("the CA certificate file has no \"BEGIN CERTIFICATE\" block".into());
        }
        Ok(ExtraCa {
            pem: pem.to_vec(),
            certs,
        })
    }

    /// `--ca-cert` / `QP_CA_CERT`; none when not given.
    pub fn read(path: Option<&std::path::Path>) -> Result<ExtraCa, String> {
        let Some(p) = path else {
            return Ok(ExtraCa::none());
        };
        let pem = std::fs::read(p).map_err(|e| format!("--ca-cert {}: {e}", p.display()))?;
        Self::from_pem(&pem).map_err(|e| format!("--ca-cert {}: {e}", p.display()))
    }

    /// The PEM text, for the phone core's trust (`qp device`); None when empty.
    pub fn pem(&self) -> Option<&[u8]> {
        (!self.pem.is_empty()).then_some(self.pem.as_slice())
    }

    /// A client builder trusting the web's roots and these certificates.
    pub fn builder(&self) -> reqwest::ClientBuilder {
        self.certs.iter().fold(reqwest::Client::builder(), |b, c| {
            b.add_root_certificate(c.clone())
        })
    }

    /// A client with this trust and a whole-request `timeout`.
    pub fn client(&self, timeout: Duration) -> Result<reqwest::Client, String> {
        self.builder()
            .timeout(timeout)
            .build()
            .map_err(|e| qp_core::sync::error_chain(&e))
    }
}

#[derive(Clone)]
pub struct AskerClient {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl AskerClient {
    /// `base_url` like `http://127.0.0.1:8750`; `token` an agent token.
    pub fn new(base_url: &str, token: &str) -> Result<Self, ClientError> {
        Self::with_ca(base_url, token, &ExtraCa::none())
    }

    /// As [`AskerClient::new`], also trusting `ca` for an `https://` server.
    pub fn with_ca(base_url: &str, token: &str, ca: &ExtraCa) -> Result<Self, ClientError> {
        let http = ca
            .builder()
            .timeout(Duration::from_secs(WAIT_POLL_SECS + 15))
            .build()
            .map_err(|e| ClientError::Transport {
                url: base_url.to_string(),
                source: e,
            })?;
        Ok(AskerClient {
            http,
            base: base_url.trim_end_matches('/').to_string(),
            token: token.to_string(),
        })
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, ClientError> {
        let url = self.base.clone();
        let resp = req
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|source| ClientError::Transport {
                url: url.clone(),
                source,
            })?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|source| ClientError::Transport { url, source })?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode(e.to_string()));
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let err = &body["error"];
        Err(ClientError::Api {
            status: status.as_u16(),
            code: err["code"].as_str().unwrap_or("http_error").to_string(),
            message: err["message"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| format!("the server answered {status}")),
            field: err["field"].as_str().map(String::from),
            question: serde_json::from_value(body["question"].clone())
                .ok()
                .map(Box::new),
        })
    }

    /// Asks in `room` (its invite code). Returns the created question.
    pub async fn ask(&self, room: &str, req: &AskRequest) -> Result<Question, ClientError> {
        let url = format!(
            "{}/api/agent/rooms/{}/questions",
            self.base,
            urlencode(room)
        );
        self.send(self.http.post(url).json(req)).await
    }

    /// Asks an approve/deny question.
    pub async fn ask_yes_no(&self, room: &str, prompt: &str) -> Result<Question, ClientError> {
        self.ask(room, &AskRequest::yes_no(prompt)).await
    }

    /// One long-poll: at most `timeout_secs` (0 to 30).
    pub async fn wait_once(&self, id: &str, timeout_secs: u64) -> Result<Question, ClientError> {
        let url = format!(
            "{}/api/agent/questions/{}/wait?timeout={timeout_secs}",
            self.base,
            urlencode(id)
        );
        self.send(self.http.get(url)).await
    }

    /// Blocks until the question is terminal, re-polling the wait endpoint
    /// and riding out transient failures (with growing pauses, never a hot loop).
    pub async fn await_resolution(&self, id: &str) -> Result<Question, ClientError> {
        let mut failures = 0;
        loop {
            match self.wait_once(id, WAIT_POLL_SECS).await {
                Ok(q) if q.state.is_terminal() => return Ok(q),
                Ok(_) => failures = 0,
                Err(e) if e.is_transient() => {
                    failures += 1;
                    tokio::time::sleep(RetryPolicy::CLIENT_WAIT.delay(failures)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits at most `max` for the question to resolve and returns it as it
    /// then stands (still `pending` when the time ran out). Transient
    /// failures are ridden out until the deadline, then returned.
    pub async fn await_within(&self, id: &str, max: Duration) -> Result<Question, ClientError> {
        let deadline = tokio::time::Instant::now() + max;
        let mut failures = 0;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            // Whole seconds, rounded up, so the last poll covers the deadline.
            let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
            match self.wait_once(id, secs.min(WAIT_POLL_SECS)).await {
                Ok(q) if q.state.is_terminal() || secs == 0 => return Ok(q),
                Ok(_) => failures = 0,
                Err(e) if e.is_transient() && !left.is_zero() => {
                    failures += 1;
                    let pause = RetryPolicy::CLIENT_WAIT.delay(failures).min(left);
                    tokio::time::sleep(pause).await;
                }
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() >= deadline {
                return self.fetch(id).await;
            }
        }
    }

    pub async fn fetch(&self, id: &str) -> Result<Question, ClientError> {
        let url = format!("{}/api/agent/questions/{}", self.base, urlencode(id));
        self.send(self.http.get(url)).await
    }

    /// `state`: `pending`, `answered`, `expired`, `cancelled`, `all`, or
    /// `None` for the recent window.
    pub async fn list(&self, state: Option<&str>) -> Result<Vec<Question>, ClientError> {
        let mut url = format!("{}/api/agent/questions", self.base);
        if let Some(s) = state {
            url.push_str(&format!("?state={}", urlencode(s)));
        }
        #[derive(serde::Deserialize)]
        struct Listed {
            questions: Vec<Question>,
        }
        let listed: Listed = self.send(self.http.get(url)).await?;
        Ok(listed.questions)
    }

    /// Withdraws a pending question. A resolved one gives `Api { status: 409,
    /// question: Some(..) }`.
    pub async fn cancel(&self, id: &str) -> Result<Question, ClientError> {
        let url = format!("{}/api/agent/questions/{}/cancel", self.base, urlencode(id));
        self.send(self.http.post(url)).await
    }
}

/// Reads a webhook body and returns the event if it resolves the question
/// with `correlation_id` (verify the signature first with
/// [`crate::webhook::verify`]).
pub fn reconcile(body: &[u8], correlation_id: &str) -> Result<Option<WebhookEvent>, ClientError> {
    let event: WebhookEvent =
        serde_json::from_slice(body).map_err(|e| ClientError::Decode(e.to_string()))?;
    Ok((event.correlation_id.as_deref() == Some(correlation_id)).then_some(event))
}

/// Percent-encodes a path segment or query value.
fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconcile_matches_by_correlation_id() {
        let body = br#"{"event":"question.answered","question_id":"q_1","room":{"name":"Ops","code":"OPS123"},
            "state":"answered","answer":{"value":"prod","label":"Production","text":null,
            "responder":{"id":"u_1","display_name":"Federica"},"answered_at":"2026-06-27T10:31:04Z"},
            "correlation_id":"rel-2.4","reply_to":null,"data":{"pipeline":"deploy"},"timestamp":"2026-06-27T10:31:04Z"}"#;
        let hit = reconcile(body, "rel-2.4").unwrap().expect("matches");
        assert_eq!(hit.answer.unwrap().value.as_deref(), Some("prod"));
        assert!(reconcile(body, "rel-9").unwrap().is_none());
        assert!(reconcile(b"[]", "rel-2.4").is_err());
    }

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(urlencode("q_1/../x"), "q_1%2F..%2Fx");
    }
}
