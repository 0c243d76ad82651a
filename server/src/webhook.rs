//! Outgoing webhooks: signing, verifying, and the delivery worker.
//!
//! Each delivery is POSTed with:
//! - `X-QP-Event`: the event name (`question.answered`...)
//! - `X-QP-Delivery`: the delivery id, stable across retries (dedupe on it)
//! - `X-QP-Timestamp`: Unix seconds of this attempt
//! - `X-QP-Signature`: `v1=` + hex HMAC-SHA256 with the room's secret over
//!   `"{timestamp}.{delivery_id}." + body`, so the timestamp and the id are
//!   bound into the signature and a receiver can reject replays.

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use qp_core::retry::RetryPolicy;
use sha2::Sha256;

use crate::app::App;
use crate::store::deliveries::{self, DueWebhook};
use crate::store::{identity, now_ms};

pub const HEADER_EVENT: &str = "x-qp-event";
pub const HEADER_DELIVERY: &str = "x-qp-delivery";
pub const HEADER_TIMESTAMP: &str = "x-qp-timestamp";
pub const HEADER_SIGNATURE: &str = "x-qp-signature";

fn mac(secret: &str, timestamp: i64, delivery_id: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{timestamp}.{delivery_id}.").as_bytes());
    mac.update(body);
    mac
}

/// The `X-QP-Signature` value for these exact bytes.
pub fn signature(secret: &str, timestamp: i64, delivery_id: &str, body: &[u8]) -> String {
    format!(
        "v1={}",
        hex::encode(
            mac(secret, timestamp, delivery_id, body)
                .finalize()
                .into_bytes()
        )
    )
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the signature header is not of the form v1=<hex>")]
    Malformed,
    #[error("the signature does not match the body")]
    Mismatch,
    #[error("the timestamp is outside the accepted window (replay?)")]
    Stale,
}

/// Checks a received webhook (for Rust receivers): the signature over the
/// exact body, and a timestamp within `tolerance_secs` of `now_secs`.
pub fn verify(
    secret: &str,
    timestamp: i64,
    delivery_id: &str,
    signature_header: &str,
    body: &[u8],
    now_secs: i64,
    tolerance_secs: i64,
) -> Result<(), VerifyError> {
    let hex_sig = signature_header
        .strip_prefix("v1=")
        .ok_or(VerifyError::Malformed)?;
    let sig = hex::decode(hex_sig).map_err(|_| VerifyError::Malformed)?;
    mac(secret, timestamp, delivery_id, body)
        .verify_slice(&sig)
        .map_err(|_| VerifyError::Mismatch)?;
    if (now_secs - timestamp).abs() > tolerance_secs {
        return Err(VerifyError::Stale);
    }
    Ok(())
}

/// The wait before the next attempt after `attempts` failures: the core's one
/// backoff policy, from a configurable first delay.
pub fn backoff(base: Duration, attempts: u32) -> Duration {
    RetryPolicy::WEBHOOK.with_min(base).delay(attempts)
}

/// Drains due deliveries forever; sleeps until the next is due or a new one is queued.
pub async fn run_worker(app: Arc<App>) {
    let client = reqwest::Client::builder()
        .timeout(app.settings.webhook_timeout)
        .build()
        .expect("an HTTP client");
    loop {
        let due = app
            .db
            .run(|conn| deliveries::due_webhooks(conn, now_ms(), 32))
            .await;
        let due = match due {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "reading webhook deliveries");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if due.is_empty() {
            let next = app
                .db
                .run(|c| deliveries::next_webhook_due_ms(c))
                .await
                .ok()
                .flatten();
            let wait_ms = next.map(|n| (n - now_ms()).clamp(5, 5000)).unwrap_or(5000);
            tokio::select! {
                _ = app.webhook_wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(wait_ms as u64)) => {}
            }
            continue;
        }
        for d in due {
            deliver(&app, &client, d).await;
        }
    }
}

async fn deliver(app: &App, client: &reqwest::Client, d: DueWebhook) {
    let room_id = d.room_id.clone();
    let room = app
        .db
        .run(move |conn| identity::room_by_id(conn, &room_id))
        .await;
    let attempts = d.attempts + 1;
    let hook = match room {
        Ok(Some(room)) => room.webhook,
        Ok(None) => None,
        Err(e) => {
            tracing::error!(error = %e, "reading room for webhook");
            return;
        }
    };
    let result = match hook {
        None => Err(("the room has no webhook any more".to_string(), false)),
        Some(hook) => {
            let ts = chrono::Utc::now().timestamp();
            let sig = signature(&hook.secret, ts, &d.id, d.body.as_bytes());
            let sent = client
                .post(&hook.url)
                .header("content-type", "application/json")
                .header(HEADER_EVENT, &d.event)
                .header(HEADER_DELIVERY, &d.id)
                .header(HEADER_TIMESTAMP, ts.to_string())
                .header(HEADER_SIGNATURE, sig)
                .body(d.body.clone())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err((format!("receiver answered {}", r.status()), true)),
                Err(e) => Err((format!("could not reach the receiver: {e}"), true)),
            }
        }
    };
    let max = app.settings.webhook_max_attempts;
    let base = app.settings.webhook_retry_base;
    let id = d.id.clone();
    let write = app
        .db
        .run(move |conn| match result {
            Ok(()) => deliveries::mark_webhook_delivered(conn, &id, attempts),
            Err((error, retryable)) => {
                let next = (retryable && attempts < max)
                    .then(|| now_ms() + backoff(base, attempts).as_millis() as i64);
                if next.is_none() {
                    tracing::warn!(delivery = %id, %error, "webhook delivery given up");
                }
                deliveries::mark_webhook_attempt_failed(conn, &id, attempts, next, &error)
            }
        })
        .await;
    if let Err(e) = write {
        tracing::error!(error = %e, "recording webhook delivery");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_verifies_and_binds_id_and_time() {
        let body = br#"{"event":"question.answered"}"#;
        let sig = signature("0123456789abcdef", 1000, "d_1", body);
        assert_eq!(
            verify("0123456789abcdef", 1000, "d_1", &sig, body, 1010, 300),
            Ok(())
        );
        assert_eq!(
            verify("0123456789abcdef", 1000, "d_2", &sig, body, 1010, 300),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify("0123456789abcdef", 1001, "d_1", &sig, body, 1010, 300),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify("other-secret-0000", 1000, "d_1", &sig, body, 1010, 300),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify("0123456789abcdef", 1000, "d_1", &sig, b"{}", 1010, 300),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify("0123456789abcdef", 1000, "d_1", &sig, body, 5000, 300),
            Err(VerifyError::Stale)
        );
        assert_eq!(
            verify("0123456789abcdef", 1000, "d_1", "abc", body, 1000, 300),
            Err(VerifyError::Malformed)
        );
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        let first = backoff(base, 1);
        // Full jitter on top of the curve: [d, 2d).
        assert!(first >= Duration::from_millis(100) && first < Duration::from_millis(200));
        let fourth = backoff(base, 4);
        assert!(fourth >= Duration::from_millis(800) && fourth < Duration::from_millis(1600));
        assert!(backoff(base, 40) < Duration::from_secs(2 * 3600));
    }
}
