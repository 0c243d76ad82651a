//! APNs over HTTP/2 with token-based authentication.
//!
//! The provider token is an ES256 JWT (`kid` = key id, `iss` = team id,
//! `iat`) signed with the team's `.p8` key, reused for less than an hour and
//! refreshed before (Apple rejects tokens older than one hour and throttles
//! tokens refreshed more often than every 20 minutes). Each push carries
//! `apns-topic` (the app's bundle id, from the device), `apns-push-type`,
//! `apns-priority`, `apns-expiration` (the question's deadline) and
//! `apns-collapse-id` (the question id: a resolution replaces the question's
//! notification in place).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use qp_core::protocol::device::ApnsEnvironment;

use super::credentials::CredentialGate;
use super::gateway_errors::{classify, Action, Gateway, TOKEN_REFRESH_HOLD};
use super::h2pool::H2Pool;
use super::key_file::Reloading;
use super::provider_token::{AfterThrottle, ProviderTokens};
use super::{PushFuture, PushMessage, PushOutcome, PushTransport};
use crate::store::deliveries::PushKind;

pub use crate::config::push::{ApnsConfig, APNS_PRODUCTION, APNS_SANDBOX};
/// How long APNs keeps a resolution for a phone that is off.
pub(crate) const RESOLVED_KEPT_SECS: i64 = 24 * 3600;
/// HTTP/2 connections to APNs at most.
pub use crate::config::push::APNS_MAX_CONNECTIONS as MAX_CONNECTIONS;
/// How long a provider token is reused.
pub use crate::config::push::APNS_TOKEN_TTL as TOKEN_TTL;
/// How long one push's answer may take once its stream is open.
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest one push can take here: the pool's wait for a stream
/// (connecting and resends included), then the answer. The worker's lease
/// must cover it (`push::budget`).
pub(crate) const WORST_CASE: Duration = H2Pool::worst_case(RESPONSE_TIMEOUT);

pub struct ApnsTransport {
    /// The server's default APNs (`base_url`): devices that do not say
    /// which APNs their token is from.
    pool: H2Pool,
    /// Devices registered with `apns_environment`: a development build's
    /// token works only on the sandbox, a release build's only on
    /// production, so each goes to its own whatever the default.
    production: H2Pool,
    sandbox: H2Pool,
    config: ApnsConfig,
    key: Reloading<EncodingKey>,
    /// The provider token, and the hold on signing a new one after
    /// `TooManyProviderTokenUpdates` ([`super::provider_token`]).
    tokens: Mutex<ProviderTokens>,
    /// A refused provider token holds every push for a backoff step (a
    /// wrong key, key id or team refuses them all alike), then one push
    /// tries a fresh token.
    gate: CredentialGate,
    /// Where its error answers are counted (the server's metrics).
    errors: Mutex<super::metrics::GatewayErrors>,
}

#[derive(serde::Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: i64,
}

impl ApnsTransport {
    pub fn new(config: ApnsConfig) -> Result<Self, String> {
        let key = signing_key(config.key_pem.expose())?;
        let key = Reloading::new("apns_key", key, config.key_file.clone());
        // APNs speaks only HTTP/2: negotiated by ALPN over TLS; plain
        // http:// (a local test server) with prior knowledge.
        let pool = H2Pool::new(&config.base_url, config.max_connections)?;
        let production = H2Pool::new(APNS_PRODUCTION, config.max_connections)?;
        let sandbox = H2Pool::new(APNS_SANDBOX, config.max_connections)?;
        let tokens = ProviderTokens::new(config.token_ttl);
        Ok(ApnsTransport {
            pool,
            production,
            sandbox,
            config,
            key,
            tokens: Mutex::new(tokens),
            errors: Mutex::default(),
            gate: CredentialGate::new("apns"),
        })
    }

    /// Counts its error answers into `errors` (the server's metrics).
    pub fn report_errors_to(&self, errors: &super::metrics::GatewayErrors) {
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()) = errors.clone();
    }

    /// This transport's credential state (the server reports it on /readyz).
    pub fn gate(&self) -> &CredentialGate {
        &self.gate
    }

    /// Counts pushes sent again that APNs may have accepted into
    /// `resends` (the server's metrics).
    pub fn report_resends_to(&self, resends: &super::metrics::Resends) {
        for pool in [&self.pool, &self.production, &self.sandbox] {
            pool.report_resends_to(resends.for_gateway("apns"));
        }
    }

    /// The signing key, read again when its file changed: then the token
    /// signed with the old key is dropped and a credential backoff (the old
    /// key refused) ends, so the new key is tried on this very push.
    fn refresh_key(&self) -> std::sync::Arc<EncodingKey> {
        let (key, reloaded) = self.key.get(signing_key);
        if reloaded {
            self.tokens().clear();
            self.gate.retry_now();
        }
        key
    }

    fn tokens(&self) -> std::sync::MutexGuard<'_, ProviderTokens> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// APNs said `token` came too soon after the last refresh: the token
    /// before it is used again if still valid, and none is signed for
    /// [`TOKEN_REFRESH_HOLD`] (not extended by the same answer to the
    /// other pushes in flight, never past the token's 55th minute).
    fn token_refreshed_too_soon(&self, token: &str) -> AfterThrottle {
        let mut tokens = self.tokens();
        let was_held = tokens.held(Instant::now());
        let after = tokens.too_soon(token, Instant::now());
        if !was_held {
            tracing::warn!(
                hold_s = TOKEN_REFRESH_HOLD.as_secs(),
                previous_token = after == AfterThrottle::OtherToken,
                "APNs: provider token refreshed too often (TooManyProviderTokenUpdates); \
                 no new token for the hold, the previous one used if still valid"
            );
        }
        after
    }

    /// The current provider token, signing a new one with `key` when the
    /// old is too old (unless signing is on hold).
    fn provider_token(&self, key: &EncodingKey) -> Result<String, String> {
        let now = Instant::now();
        let mut tokens = self.tokens();
        if let Some(t) = tokens.current(now) {
            return Ok(t);
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.config.key_id.clone());
        let claims = Claims {
            iss: &self.config.team_id,
            iat: chrono::Utc::now().timestamp(),
        };
        let token = jsonwebtoken::encode(&header, &claims, key).map_err(|e| e.to_string())?;
        tokens.signed(token.clone(), now);
        Ok(token)
    }

    /// Drops the provider token APNs refused, unless another push already
    /// replaced it (many pushes in flight see the same refusal: the token
    /// is signed again once, not once per push).
    fn forget_token(&self, refused: &str) {
        self.tokens().refused(refused, Instant::now());
    }

    /// Where devices that name their APNs environment are sent instead of
    /// Apple's two hosts (tests: loopback stand-ins).
    pub fn with_environment_hosts(
        mut self,
        production_url: &str,
        sandbox_url: &str,
    ) -> Result<Self, String> {
        self.production = H2Pool::new(production_url, self.config.max_connections)?;
        self.sandbox = H2Pool::new(sandbox_url, self.config.max_connections)?;
        Ok(self)
    }

    /// The APNs of this device: the one its registration named, else the
    /// server's default.
    fn pool_for(&self, m: &PushMessage) -> &H2Pool {
        match m
            .device
            .apns_environment
            .as_deref()
            .and_then(ApnsEnvironment::parse)
        {
            Some(ApnsEnvironment::Production) => &self.production,
            Some(ApnsEnvironment::Sandbox) => &self.sandbox,
            None => &self.pool,
        }
    }

    /// The connection pool (its counters, for tests and the benchmark).
    pub fn pool(&self) -> &H2Pool {
        &self.pool
    }

    async fn deliver(&self, m: &PushMessage) -> PushOutcome {
        let payload = match m.apns_payload() {
            Ok(p) => p,
            Err(e) => return PushOutcome::Failed(e),
        };
        let (push_type, priority, expiration) = match m.kind {
            PushKind::Question => ("alert", "10", m.question.expires_at.timestamp()),
            // An alert that replaces the question's notification (same
            // collapse id), kept by APNs for a day for a phone that is off.
            PushKind::Resolved => (
                "alert",
                "10",
                chrono::Utc::now().timestamp() + RESOLVED_KEPT_SECS,
            ),
        };
        // The key, read again if its file changed: a replaced key file ends
        // a backoff the old key caused. Once per push.
        let key = self.refresh_key();
        if let Some(wait) = self.gate.blocked() {
            return wait;
        }
        let token = match self.provider_token(&key) {
            Ok(t) => t,
            Err(e) => return PushOutcome::Failed(format!("cannot sign the provider token: {e}")),
        };
        let pool = self.pool_for(m);
        let req = http::Request::post(pool.uri(&format!("/3/device/{}", m.device.push_token)))
            .header("authorization", format!("bearer {token}"))
            .header("apns-topic", &m.device.app_id)
            .header("apns-push-type", push_type)
            .header("apns-priority", priority)
            .header("apns-expiration", expiration.to_string())
            .header("apns-collapse-id", &m.question.id)
            .header("content-type", "application/json")
            .header("content-length", payload.len().to_string())
            .body(());
        let req = match req {
            Ok(r) => r,
            Err(e) => return PushOutcome::Failed(format!("cannot build the request: {e}")),
        };
        let resp = match pool.send(req, payload.into(), RESPONSE_TIMEOUT).await {
            Ok(r) => r,
            Err(e) => return super::unanswered("APNs", e),
        };
        let status = resp.status;
        let retry_after = super::retry_after(&resp.headers);
        let reason = serde_json::from_slice::<serde_json::Value>(&resp.body)
            .ok()
            .and_then(|v| v["reason"].as_str().map(String::from))
            .unwrap_or_default();
        if status == 200 {
            self.gate.accepted();
            return PushOutcome::Sent;
        }
        let said = format!("APNs {status} {reason}");
        let row = classify(Gateway::Apns, status, &reason);
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .count(&row);
        match row.action {
            Action::ForgetDevice => PushOutcome::DeviceGone,
            Action::FailPush => PushOutcome::Failed(match row.hint {
                Some(hint) => format!("{said}: {hint}"),
                None => said,
            }),
            Action::CredentialRefused => {
                self.forget_token(&token);
                self.gate.refused(&said)
            }
            // This device's throttling: not the gateway's.
            Action::RetryDevice => PushOutcome::Retry {
                reason: said,
                after: retry_after,
            },
            // Throttling and the service: the gateway, not this push.
            Action::Retry => PushOutcome::Unavailable {
                reason: said,
                after: retry_after,
            },
            // Nothing wrong with the push or the device, nor is APNs
            // down: no attempt spent, no outage fault.
            Action::SlowTokenRefresh => match self.token_refreshed_too_soon(&token) {
                // Sent again at once with the token APNs takes.
                AfterThrottle::OtherToken => PushOutcome::Deferred {
                    reason: format!("{said}: sent again with the previous provider token"),
                    after: retry_after.unwrap_or(Duration::ZERO),
                },
                // No token APNs takes until its 20 minutes are over:
                // every push held, one probe per backoff step.
                AfterThrottle::SameToken => self.gate.refused(&said),
            },
        }
    }
}

/// The `.p8` key as jsonwebtoken signs with it.
fn signing_key(pem: &[u8]) -> Result<EncodingKey, String> {
    EncodingKey::from_ec_pem(pem)
        .map_err(|e| format!("the APNs key is not an EC (P-256) PKCS#8 PEM key: {e}"))
}

impl PushTransport for ApnsTransport {
    fn send<'a>(&'a self, message: &'a PushMessage) -> PushFuture<'a> {
        Box::pin(self.deliver(message))
    }
}
