//! FCM HTTP v1: a service account's key signs an RS256 assertion, exchanged
//! for an OAuth2 access token (JWT bearer grant) that is cached until a
//! minute before it expires; `messages:send` carries a data-only message
//! (high priority for a question, normal for a resolution) whose TTL matches
//! the question's deadline.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::credentials::CredentialGate;
use super::gateway_errors::{classify, Action, Gateway};
use super::h2pool::H2Pool;
use super::key_file::Reloading;
use super::{PushFuture, PushMessage, PushOutcome, PushTransport};
use crate::store::deliveries::PushKind;

pub use crate::config::push::{FcmConfig, ServiceAccount, FCM_BASE};
pub const FCM_SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// HTTP/2 connections to FCM at most.
pub use crate::config::push::FCM_MAX_CONNECTIONS as MAX_CONNECTIONS;
/// How long one message's answer may take once its stream is open.
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(15);
/// The first wait before a push FCM could not serve (5xx) goes again when
/// the answer has no `Retry-After`: Google asks senders to wait at least
/// 10 s then, doubling ([`retry_wait`]). Never past the push's deadline
/// (`push::next_state` fails it instead).
pub const RETRY_FLOOR: Duration = Duration::from_secs(10);
/// The first wait after `QUOTA_EXCEEDED` without `Retry-After`: Google's
/// minimum initial retry delay for quota errors is 60 s.
pub const QUOTA_FLOOR: Duration = Duration::from_secs(60);
/// The longest wait [`retry_wait`] gives, jitter included: the longest
/// any push waits between two tries ([`super::RETRY_AFTER_MAX`]), whether
/// the gateway said how long or not.
pub const RETRY_CAP: Duration = super::RETRY_AFTER_MAX;

/// How long a push FCM refused with `reason` waits, at its `attempt`th
/// failure (1 = the first), when FCM sent no `Retry-After`: Google's
/// exponential backoff, from [`QUOTA_FLOOR`] for `QUOTA_EXCEEDED` and
/// [`RETRY_FLOOR`] otherwise, doubling per attempt, capped at
/// [`RETRY_CAP`], with ±25% jitter (never past the cap) so the pushes of one storm do not all
/// come back at once.
pub fn retry_wait(reason: &str, attempt: u32) -> Duration {
    let jitter = rand::Rng::gen_range(&mut rand::thread_rng(), 0.75..=1.25);
    retry_wait_with(reason, attempt, jitter)
}

/// [`retry_wait`] with the jitter's factor given (0.75 to 1.25).
fn retry_wait_with(reason: &str, attempt: u32, jitter: f64) -> Duration {
    let floor = if reason.contains("QUOTA_EXCEEDED") {
        QUOTA_FLOOR
    } else {
        RETRY_FLOOR
    };
    let doublings = attempt.saturating_sub(1).min(20);
    let wait = floor.saturating_mul(1 << doublings).min(RETRY_CAP);
    wait.mul_f64(jitter).min(RETRY_CAP)
}
/// How long fetching the OAuth access token may take.
pub(crate) const TOKEN_FETCH_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest one message can take here: a token fetch (pushes that find
/// none wait for the one fetch), the pool's wait for a stream, the answer.
/// The worker's lease must cover it (`push::budget`).
pub(crate) const WORST_CASE: Duration =
    TOKEN_FETCH_TIMEOUT.saturating_add(H2Pool::worst_case(RESPONSE_TIMEOUT));

/// A service account with its key ready to sign.
struct Credential {
    account: ServiceAccount,
    key: EncodingKey,
}

impl Credential {
    fn new(account: ServiceAccount) -> Result<Self, String> {
        let key = EncodingKey::from_rsa_pem(account.private_key.expose().as_bytes())
            .map_err(|e| format!("the service account's private_key is not an RSA PEM key: {e}"))?;
        Ok(Credential { account, key })
    }
}

pub struct FcmTransport {
    /// The OAuth token endpoint (one request an hour).
    http: reqwest::Client,
    /// `messages:send`: concurrent streams over few HTTP/2 connections.
    pool: H2Pool,
    credential: Reloading<Credential>,
    token: Mutex<Option<(String, Instant)>>,
    /// Held while the access token is fetched: pushes that find it
    /// missing wait for that one fetch instead of each starting one.
    refreshing: tokio::sync::Mutex<()>,
    /// A failed fetch (or a refused token) holds every push for a backoff
    /// step: the pushes that queued behind it take its answer, and the next
    /// fetch waits for the step's end (with thousands in flight and the
    /// token endpoint refusing, one fetch per push was 1,300 a second).
    gate: CredentialGate,
    /// Where its error answers are counted (the server's metrics).
    errors: Mutex<super::metrics::GatewayErrors>,
}

#[derive(serde::Serialize)]
struct Assertion<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

impl FcmTransport {
    pub fn new(config: FcmConfig) -> Result<Self, String> {
        let credential = Reloading::new(
            "fcm_service_account",
            Credential::new(config.account.clone())?,
            config.account_file.clone(),
        );
        let http = reqwest::Client::builder()
            .timeout(TOKEN_FETCH_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        let pool = H2Pool::new(&config.base_url, config.max_connections)?;
        Ok(FcmTransport {
            http,
            pool,
            credential,
            token: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
            errors: Mutex::default(),
            gate: CredentialGate::new("fcm"),
        })
    }

    /// Reads a service-account JSON file.
    pub fn account_from_file(path: &std::path::Path) -> Result<ServiceAccount, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::account_from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A service account from its JSON.
    pub fn account_from_bytes(bytes: &[u8]) -> Result<ServiceAccount, String> {
        ServiceAccount::from_json(bytes)
    }

    /// The connection pool (its counters, for tests and the benchmark).
    pub fn pool(&self) -> &H2Pool {
        &self.pool
    }

    fn cached_token(&self) -> Option<String> {
        let slot = self.token.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_ref()
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(t, _)| t.clone())
    }

    /// The shared access token: cached, or fetched once for every push
    /// that needs it meanwhile; while its credential backs off, the step's
    /// retry without a request.
    async fn access_token(&self) -> Result<String, PushOutcome> {
        if let Some(t) = self.cached_token() {
            return Ok(t);
        }
        if let Some(wait) = self.gate.blocked() {
            return Err(wait);
        }
        let _one = self.refreshing.lock().await;
        if let Some(t) = self.cached_token() {
            return Ok(t);
        }
        if let Some(wait) = self.gate.blocked() {
            return Err(wait);
        }
        self.fetch_token()
            .await
            .map_err(|reason| self.gate.refused(&reason))
    }

    /// Counts its error answers into `errors` (the server's metrics).
    pub fn report_errors_to(&self, errors: &super::metrics::GatewayErrors) {
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()) = errors.clone();
    }

    /// This transport's credential state (the server reports it on /readyz).
    pub fn gate(&self) -> &CredentialGate {
        &self.gate
    }

    /// Counts messages sent again that FCM may have accepted into
    /// `resends` (the server's metrics).
    pub fn report_resends_to(&self, resends: &super::metrics::Resends) {
        self.pool.report_resends_to(resends.for_gateway("fcm"));
    }

    /// The service account, read again when its file changed: then the
    /// access token of the old one is dropped and a credential backoff
    /// (the old one refused) ends, so the new one is tried on this push.
    fn refresh_credential(&self) -> std::sync::Arc<Credential> {
        let (credential, reloaded) = self
            .credential
            .get(|bytes| Credential::new(FcmTransport::account_from_bytes(bytes)?));
        if reloaded {
            *self.token.lock().unwrap_or_else(|p| p.into_inner()) = None;
            self.gate.retry_now();
        }
        credential
    }

    async fn fetch_token(&self) -> Result<String, String> {
        let now = chrono::Utc::now().timestamp();
        let credential = self.refresh_credential();
        let a = &credential.account;
        let claims = Assertion {
            iss: &a.client_email,
            scope: FCM_SCOPE,
            aud: &a.token_uri,
            iat: now,
            exp: now + 3600,
        };
        let assertion =
            jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &credential.key)
                .map_err(|e| format!("cannot sign the OAuth assertion: {e}"))?;
        let resp = self
            .http
            .post(&a.token_uri)
            .form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", &assertion),
            ])
            .send()
            .await
            .map_err(|e| format!("OAuth unreachable: {e}"))?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or_default();
        let (Some(token), true) = (body["access_token"].as_str(), status.is_success()) else {
            return Err(format!("OAuth token refused: {status} {}", body["error"]));
        };
        let lifetime = body["expires_in"].as_u64().unwrap_or(3600);
        // Renew a minute early (or halfway, for very short tokens).
        let keep = Duration::from_secs(lifetime.saturating_sub(60).max(lifetime / 2));
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((token.to_string(), Instant::now() + keep));
        Ok(token.to_string())
    }

    async fn deliver(&self, m: &PushMessage) -> PushOutcome {
        let data = match m.fcm_data() {
            Ok(d) => d,
            Err(e) => return PushOutcome::Failed(e),
        };
        let priority = match m.kind {
            PushKind::Question => "HIGH",
            PushKind::Resolved => "NORMAL",
        };
        let ttl = (m.question.expires_at - chrono::Utc::now())
            .num_seconds()
            .max(0);
        let body = json!({
            "message": {
                "token": m.device.push_token,
                "data": data,
                "android": { "priority": priority, "ttl": format!("{ttl}s"), "collapse_key": m.question.id },
            }
        });
        // A replaced service-account file ends a backoff the old one caused.
        let credential = self.refresh_credential();
        if let Some(wait) = self.gate.blocked() {
            return wait;
        }
        let token = match self.access_token().await {
            Ok(t) => t,
            Err(outcome) => return outcome,
        };
        let body = Bytes::from(body.to_string());
        let req = http::Request::post(self.pool.uri(&format!(
            "/v1/projects/{}/messages:send",
            credential.account.project_id
        )))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("content-length", body.len().to_string())
        .body(());
        let req = match req {
            Ok(r) => r,
            Err(e) => return PushOutcome::Failed(format!("cannot build the request: {e}")),
        };
        let resp = match self.pool.send(req, body, RESPONSE_TIMEOUT).await {
            Ok(r) => r,
            Err(e) => return super::unanswered("FCM", e),
        };
        let status = resp.status;
        let retry_after = super::retry_after(&resp.headers);
        let err: Value = serde_json::from_slice(&resp.body).unwrap_or_default();
        if status == 200 {
            self.gate.accepted();
            return PushOutcome::Sent;
        }
        let reason = reason_of(&err).to_string();
        let said = format!("FCM {status} {reason}");
        let row = classify(Gateway::Fcm, status, &reason);
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .count(&row);
        match row.action {
            Action::ForgetDevice => PushOutcome::DeviceGone,
            Action::FailPush => PushOutcome::Failed(match row.hint {
                Some(hint) => format!("{said} {}: {hint}", err["error"]["message"]),
                None => format!("{said} {}", err["error"]["message"]),
            }),
            Action::CredentialRefused => {
                // Forget the refused token, unless a newer one replaced it.
                let mut slot = self.token.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().is_some_and(|(t, _)| *t == token) {
                    *slot = None;
                }
                drop(slot);
                self.gate.refused(&format!("{said}: access token refused"))
            }
            // Throttling and the service: the gateway, not this push.
            // Without a Retry-After, Google's backoff (`retry_wait`),
            // never the push backoff's half second.
            Action::RetryDevice => PushOutcome::Retry {
                after: Some(retry_after.unwrap_or_else(|| retry_wait(&said, m.attempts + 1))),
                reason: said,
            },
            Action::Retry | Action::SlowTokenRefresh => PushOutcome::Unavailable {
                after: Some(retry_after.unwrap_or_else(|| retry_wait(&said, m.attempts + 1))),
                reason: said,
            },
        }
    }
}

/// The table's reason for FCM's error body: FCM's own code
/// (`details[].errorCode`), else the RPC status; an `INVALID_ARGUMENT`
/// whose `google.rpc.BadRequest` detail names the field `message.token`
/// is [`MALFORMED_TOKEN`] (the registration token itself is malformed,
/// unlike any other invalid argument, which is about this request).
fn reason_of(err: &Value) -> &str {
    let details = err["error"]["details"].as_array();
    let reason = details
        .and_then(|d| d.iter().find_map(|x| x["errorCode"].as_str()))
        .or_else(|| err["error"]["status"].as_str())
        .unwrap_or_default();
    let names_the_token = details.is_some_and(|d| {
        d.iter().any(|x| {
            x["fieldViolations"]
                .as_array()
                .is_some_and(|v| v.iter().any(|f| f["field"] == "message.token"))
        })
    });
    if reason == "INVALID_ARGUMENT" && names_the_token {
        MALFORMED_TOKEN
    } else {
        reason
    }
}

/// The reason (and metric label) of an `INVALID_ARGUMENT` about the
/// registration token: the device is removed.
pub const MALFORMED_TOKEN: &str = "INVALID_ARGUMENT:message.token";

impl PushTransport for FcmTransport {
    fn send<'a>(&'a self, message: &'a PushMessage) -> PushFuture<'a> {
        Box::pin(self.deliver(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_retry_after_the_wait_doubles_from_googles_floor_to_ten_minutes() {
        let secs = |reason: &str, attempt| retry_wait_with(reason, attempt, 1.0).as_secs();
        let unavailable = "FCM 503 UNAVAILABLE";
        let quota = "FCM 429 QUOTA_EXCEEDED";
        assert_eq!(
            (1..=10).map(|a| secs(unavailable, a)).collect::<Vec<_>>(),
            [10, 20, 40, 80, 160, 320, 600, 600, 600, 600]
        );
        assert_eq!(
            (1..=8).map(|a| secs(quota, a)).collect::<Vec<_>>(),
            [60, 120, 240, 480, 600, 600, 600, 600]
        );
        assert_eq!(secs(quota, u32::MAX), 600, "capped");
        assert_eq!(retry_wait_with(quota, 1, 0.75), Duration::from_secs(45));
        assert_eq!(retry_wait_with(unavailable, 20, 1.25), RETRY_CAP);
        for _ in 0..200 {
            let w = retry_wait(unavailable, 1);
            assert!((7500..=12500).contains(&w.as_millis()), "{w:?}");
        }
    }

    #[test]
    fn an_invalid_argument_naming_message_token_is_a_malformed_token_and_no_other() {
        let body = |field: &str| {
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "details": [
                {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                 "errorCode": "INVALID_ARGUMENT"},
                {"@type": "type.googleapis.com/google.rpc.BadRequest",
                 "fieldViolations": [{"field": field, "description": "Invalid"}]}]}})
        };
        assert_eq!(reason_of(&body("message.token")), MALFORMED_TOKEN);
        assert_eq!(reason_of(&body("message.android.ttl")), "INVALID_ARGUMENT");
        let plain = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT"}});
        assert_eq!(reason_of(&plain), "INVALID_ARGUMENT");
    }
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Pushes waiting for an access token while the token endpoint fails
    /// share that one failed fetch (each gets its Retry at once), rather
    /// than each fetching again one after another.
    #[tokio::test]
    async fn pushes_behind_a_failed_token_fetch_share_its_failure() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(move || {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    (axum::http::StatusCode::SERVICE_UNAVAILABLE, "{}")
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let key = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/fcm-test-key.pem"),
        )
        .unwrap();
        let fcm = Arc::new(
            FcmTransport::new(FcmConfig {
                base_url: "http://127.0.0.1:9".into(),
                account: ServiceAccount {
                    project_id: "p".into(),
                    client_email: "a@p.iam.gserviceaccount.com".into(),
                    private_key: key.into(),
                    token_uri: url,
                },
                account_file: None,
                max_connections: 1,
            })
            .unwrap(),
        );
        let t = Instant::now();
        let waits: Vec<_> = (0..20)
            .map(|_| {
                let fcm = fcm.clone();
                tokio::spawn(async move { fcm.access_token().await })
            })
            .collect();
        for w in waits {
            assert!(matches!(
                w.await.unwrap(),
                Err(PushOutcome::Deferred { .. })
            ));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "fetches");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
}
