//! The push delivery queue and the transports.
//!
//! Each ask queues a `question` job per device of every eligible user, and
//! each resolution a `resolved` job per device that got the question (both in
//! the same transaction as the change). A worker drains due jobs through a
//! [`PushTransport`]: [`router::PlatformRouter`] sends `ios` devices through
//! [`apns`], `android` through [`fcm`], and `dev` devices (the terminal
//! device, `qp device`) through [`dev`]. Without a transport for a platform,
//! its jobs stay queued in the database.

pub mod apns;
pub mod dev;
pub mod fcm;
pub mod router;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use qp_core::e2e::DevicePublicKey;
use qp_core::payload::{
    encode_apns_question, encode_apns_question_sealed, encode_apns_resolved,
    encode_apns_resolved_sealed, encode_fcm_question, encode_fcm_question_sealed,
    encode_fcm_resolved, encode_fcm_resolved_sealed, Recipient, MAX_PAYLOAD_BYTES,
};
use qp_core::present::copy::Copy;
use qp_core::protocol::Question;

use crate::app::App;
use crate::store::deliveries::{self, PushKind};
use crate::store::identity::Device;
use crate::store::{now_ms, questions};
use qp_core::retry::RetryPolicy;

/// One push to one device.
#[derive(Debug, Clone)]
pub struct PushMessage {
    pub device: Device,
    pub kind: PushKind,
    pub question: Question,
    /// Seal it to the device's public key, if it registered one (the
    /// server's `push_encryption` setting).
    pub encrypt: bool,
}

impl PushMessage {
    fn copy(&self) -> Copy {
        Copy::for_languages(&[&self.device.locale])
    }

    /// The key to seal to, when this push is end-to-end encrypted. A key
    /// that no longer parses (checked at registration, so only a damaged
    /// database) fails the push: a device that asked for encryption never
    /// gets its question in clear.
    fn sealed_to(&self) -> Result<Option<DevicePublicKey>, String> {
        match self.device.public_key.as_deref().filter(|_| self.encrypt) {
            None => Ok(None),
            Some(key) => DevicePublicKey::parse(key, "public_key")
                .map(Some)
                .map_err(|e| format!("unusable device key: {e}")),
        }
    }

    /// What APNs carries for this push (the dev transport too, for an
    /// iOS-shaped terminal device): sealed or plain, within 4 KB.
    pub fn apns_payload(&self) -> Result<String, String> {
        let (q, copy, me) = (
            &self.question,
            self.copy(),
            Some(self.device.user_id.as_str()),
        );
        let encoded = match (self.kind, self.sealed_to()?) {
            (PushKind::Question, None) => encode_apns_question(q, &copy),
            (PushKind::Resolved, None) => Ok(encode_apns_resolved(q, &copy, me)),
            (kind, Some(key)) => {
                let to = Recipient {
                    device_id: &self.device.id,
                    key: &key,
                };
                match kind {
                    PushKind::Question => encode_apns_question_sealed(q, &copy, &to),
                    PushKind::Resolved => encode_apns_resolved_sealed(q, &copy, me, &to),
                }
            }
        };
        let e = encoded.map_err(|e| format!("cannot encode: {e}"))?;
        within_budget(e.report.bytes)?;
        Ok(e.json)
    }

    /// What FCM carries for this push (the data map): sealed or plain.
    pub fn fcm_data(&self) -> Result<BTreeMap<String, String>, String> {
        let (q, copy, me) = (
            &self.question,
            self.copy(),
            Some(self.device.user_id.as_str()),
        );
        let encoded = match (self.kind, self.sealed_to()?) {
            (PushKind::Question, None) => encode_fcm_question(q, &copy),
            (PushKind::Resolved, None) => Ok(encode_fcm_resolved(q)),
            (kind, Some(key)) => {
                let to = Recipient {
                    device_id: &self.device.id,
                    key: &key,
                };
                match kind {
                    PushKind::Question => encode_fcm_question_sealed(q, &copy, &to),
                    PushKind::Resolved => encode_fcm_resolved_sealed(q, &copy, me, &to),
                }
            }
        };
        let e = encoded.map_err(|e| format!("cannot encode: {e}"))?;
        within_budget(e.report.bytes)?;
        Ok(e.data)
    }
}

/// The encoders guarantee the gateways' limit; a payload over it would be
/// refused by the gateway anyway, so it is failed here with its size.
fn within_budget(bytes: usize) -> Result<(), String> {
    if bytes > MAX_PAYLOAD_BYTES {
        return Err(format!("payload of {bytes} bytes"));
    }
    Ok(())
}

/// What a transport reports for one push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    Sent,
    /// Try again later (429, 5xx, network): after `after` if the gateway said.
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    /// The gateway says the token is dead (APNs 410, FCM UNREGISTERED): the
    /// device is removed.
    DeviceGone,
    /// A permanent error for this push; recorded, not retried.
    Failed(String),
}

pub type PushFuture<'a> = Pin<Box<dyn Future<Output = PushOutcome> + Send + 'a>>;

/// A push gateway (APNs, FCM, or a local development transport).
pub trait PushTransport: Send + Sync + 'static {
    fn send<'a>(&'a self, message: &'a PushMessage) -> PushFuture<'a>;
}

/// A `Retry-After` header in seconds, if any.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// Attempts per job before it is marked failed.
pub const PUSH_MAX_ATTEMPTS: u32 = 8;
const PUSH_RETRY_BASE: Duration = Duration::from_millis(500);
/// How long a claimed batch of push jobs stays this worker's: 32 sends
/// through APNs/FCM over kept-alive connections take well under this.
const PUSH_LEASE_MS: i64 = 60_000;

/// Drains due push jobs forever through `transport`.
pub async fn run_worker(app: Arc<App>, transport: Arc<dyn PushTransport>) {
    let encrypt = app.settings.push_encryption;
    loop {
        let batch = app
            .db
            .run(
                move |conn| -> crate::store::DbResult<
                    Vec<(deliveries::DuePush, Option<PushMessage>)>,
                > {
                    // Leased: jobs this instance dies sending are due
                    // again when the lease ends (on any instance).
                    let now = now_ms();
                    let due = deliveries::claim_pushes(conn, now, now + PUSH_LEASE_MS, 32)?;
                    let mut out = Vec::with_capacity(due.len());
                    for job in due {
                        let device = crate::store::identity::device_by_id(conn, &job.device_id)?;
                        let question = questions::get(conn, &job.question_id)?.map(|s| s.question);
                        let msg = match (device, question) {
                            (Some(device), Some(question)) => Some(PushMessage {
                                device,
                                kind: job.kind,
                                question,
                                encrypt,
                            }),
                            _ => None,
                        };
                        out.push((job, msg));
                    }
                    Ok(out)
                },
            )
            .await;
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(error = %e, "reading push jobs");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if batch.is_empty() {
            let next = app
                .db
                .run(deliveries::next_push_due_ms)
                .await
                .ok()
                .flatten();
            let wait_ms = next.map(|n| (n - now_ms()).clamp(5, 5000)).unwrap_or(5000);
            tokio::select! {
                _ = app.push_wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(wait_ms as u64)) => {}
            }
            continue;
        }
        for (job, msg) in batch {
            let outcome = match &msg {
                Some(m) => transport.send(m).await,
                None => PushOutcome::Failed("device or question no longer exists".into()),
            };
            let attempts = job.attempts + 1;
            let device_id = job.device_id.clone();
            let written = app
                .db
                .run(move |conn| -> crate::store::DbResult<()> {
                    let now = now_ms();
                    match outcome {
                        PushOutcome::Sent => {
                            deliveries::mark_push(conn, job.id, "sent", attempts, now, None)
                        }
                        PushOutcome::DeviceGone => {
                            deliveries::mark_push(
                                conn,
                                job.id,
                                "failed",
                                attempts,
                                now,
                                Some("device unregistered"),
                            )?;
                            conn.execute(
                                "DELETE FROM devices WHERE id = ?1",
                                crate::params![device_id],
                            )?;
                            Ok(())
                        }
                        PushOutcome::Retry { reason, after } if attempts < PUSH_MAX_ATTEMPTS => {
                            let delay = after.unwrap_or_else(|| {
                                RetryPolicy::PUSH.with_min(PUSH_RETRY_BASE).delay(attempts)
                            });
                            deliveries::mark_push(
                                conn,
                                job.id,
                                "queued",
                                attempts,
                                now + delay.as_millis() as i64,
                                Some(&reason),
                            )
                        }
                        // Failed for good, or out of attempts.
                        PushOutcome::Failed(reason) | PushOutcome::Retry { reason, .. } => {
                            deliveries::mark_push(
                                conn,
                                job.id,
                                "failed",
                                attempts,
                                now,
                                Some(&reason),
                            )
                        }
                    }
                })
                .await;
            if let Err(e) = written {
                tracing::error!(error = %e, "recording push outcome");
            }
        }
    }
}
