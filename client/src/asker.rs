//! The asker client: ask, await, fetch, list, cancel.

use std::time::Duration;

use qp_core::protocol::{AskRequest, AskedQuestion, Question};
use qp_core::retry::RetryPolicy;
use serde_json::Value;

use crate::{ClientError, ExtraCa};

/// How long one wait request asks the server to hold (under the server's
/// maximum, `limits::LONG_POLL_MAX_SECS`).
pub const WAIT_POLL_SECS: u64 = qp_core::protocol::limits::CLIENT_WAIT_POLL_SECS;

/// An asker on one server with one agent token. Cheap to clone (the
/// connection pool is shared).
#[derive(Clone)]
pub struct AskerClient {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl AskerClient {
    /// `base_url` like `qp_core::protocol::limits::DEFAULT_URL`; `token` an
    /// agent token.
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
        Ok(self.ask_counted(room, req).await?.question)
    }

    /// [`AskerClient::ask`], with how many devices the push was queued for
    /// (`pushed_to_devices`; `None` from a server that predates it).
    pub async fn ask_counted(
        &self,
        room: &str,
        req: &AskRequest,
    ) -> Result<AskedQuestion, ClientError> {
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

    /// One long-poll: at most `timeout_secs` (0 to
    /// `limits::LONG_POLL_MAX_SECS`; the server caps a longer one).
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
    fn path_segments_are_encoded() {
        assert_eq!(urlencode("q_1/../x"), "q_1%2F..%2Fx");
    }
}
