//! Outgoing webhooks: signing, verifying, and the delivery worker.
//!
//! Every delivery is signed so that receivers of either kind verify it
//! unmodified. One construction, "v2", is HMAC-SHA256 with the room's secret
//! over `"v2\n{timestamp}\n{delivery_id}\n" + body` (lowercase hex): the
//! timestamp and the delivery id are bound into the signature, so a receiver
//! can reject replays and dedupe retries. Headers:
//! - qp's own: `X-QP-Event`, `X-QP-Delivery` (stable across retries),
//!   `X-QP-Timestamp` (Unix seconds of this attempt), `X-QP-Signature:
//!   v2=<hex>` (the v2 construction);
//! - the reference implementation's (PingRoom), for receivers written for it:
//!   `X-PingRoom-Event`, `X-PingRoom-Delivery`, `X-PingRoom-Timestamp`,
//!   `X-PingRoom-Signature-V2: <hex>` (the same v2 value) and the older
//!   `X-PingRoom-Signature: <hex>` over `"{timestamp}." + body` (it does not
//!   bind the delivery id; receivers that see V2 verify V2 only).
//!
//! Earlier qp versions signed `v1=` over `"{timestamp}.{delivery_id}." +
//! body`; [`verify`] still accepts it.

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
pub const PINGROOM_EVENT: &str = "x-pingroom-event";
pub const PINGROOM_DELIVERY: &str = "x-pingroom-delivery";
pub const PINGROOM_TIMESTAMP: &str = "x-pingroom-timestamp";
pub const PINGROOM_SIGNATURE: &str = "x-pingroom-signature";
pub const PINGROOM_SIGNATURE_V2: &str = "x-pingroom-signature-v2";

/// How old a timestamp a receiver should accept (the reference's 5 minutes).
pub const TOLERANCE_SECS: i64 = 300;

fn hmac_hex(secret: &str, parts: &[&[u8]]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    for p in parts {
        mac.update(p);
    }
    hex::encode(mac.finalize().into_bytes())
}

/// The v2 signature (hex): over `"v2\n{timestamp}\n{delivery_id}\n" + body`.
pub fn signature_v2(secret: &str, timestamp: i64, delivery_id: &str, body: &[u8]) -> String {
    let prefix = format!("v2\n{timestamp}\n{delivery_id}\n");
    hmac_hex(secret, &[prefix.as_bytes(), body])
}

/// The reference implementation's first scheme (hex): over `"{timestamp}." + body`.
pub fn signature_timestamp_only(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let prefix = format!("{timestamp}.");
    hmac_hex(secret, &[prefix.as_bytes(), body])
}

/// qp's own header value: `v2=<hex>`.
pub fn signature(secret: &str, timestamp: i64, delivery_id: &str, body: &[u8]) -> String {
    format!("v2={}", signature_v2(secret, timestamp, delivery_id, body))
}

/// Every signature header of one delivery attempt, as (name, value).
pub fn signed_headers(
    secret: &str,
    event: &str,
    delivery_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let v2 = signature_v2(secret, timestamp, delivery_id, body);
    let ts = timestamp.to_string();
    vec![
        (HEADER_EVENT, event.to_string()),
        (HEADER_DELIVERY, delivery_id.to_string()),
        (HEADER_TIMESTAMP, ts.clone()),
        (HEADER_SIGNATURE, format!("v2={v2}")),
        (PINGROOM_EVENT, event.to_string()),
        (PINGROOM_DELIVERY, delivery_id.to_string()),
        (PINGROOM_TIMESTAMP, ts),
        (
            PINGROOM_SIGNATURE,
            signature_timestamp_only(secret, timestamp, body),
        ),
        (PINGROOM_SIGNATURE_V2, v2),
    ]
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the signature header is not of the form v2=<hex> (or v1=<hex>)")]
    Malformed,
    #[error("the signature does not match the body")]
    Mismatch,
    #[error("the timestamp is outside the accepted window (replay?)")]
    Stale,
}

/// Checks a received webhook (for Rust receivers) from qp's headers: the
/// `X-QP-Signature` value (`v2=` or the older `v1=`) over the exact body, and
/// a timestamp within `tolerance_secs` of `now_secs`.
pub fn verify(
    secret: &str,
    timestamp: i64,
    delivery_id: &str,
    signature_header: &str,
    body: &[u8],
    now_secs: i64,
    tolerance_secs: i64,
) -> Result<(), VerifyError> {
    let (scheme, hex_sig) = signature_header
        .split_once('=')
        .ok_or(VerifyError::Malformed)?;
    let sig = hex::decode(hex_sig).map_err(|_| VerifyError::Malformed)?;
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    match scheme {
        "v2" => mac.update(format!("v2\n{timestamp}\n{delivery_id}\n").as_bytes()),
        "v1" => mac.update(format!("{timestamp}.{delivery_id}.").as_bytes()),
        _ => return Err(VerifyError::Malformed),
    }
    mac.update(body);
    mac.verify_slice(&sig).map_err(|_| VerifyError::Mismatch)?;
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

/// How much longer than one attempt's timeout a claimed delivery stays
/// another worker's: recording the result takes a moment too.
const WEBHOOK_LEASE_MARGIN: Duration = Duration::from_secs(5);

/// Drains due deliveries forever; sleeps until the next is due or a new one is queued.
pub async fn run_worker(app: Arc<App>) {
    let client = reqwest::Client::builder()
        .timeout(app.settings.webhook_timeout)
        .build()
        .expect("an HTTP client");
    let lease_ms = (app.settings.webhook_timeout + WEBHOOK_LEASE_MARGIN).as_millis() as i64;
    loop {
        let due = app
            .db
            .run(move |conn| {
                // One at a time, leased for one attempt: a delivery this
                // instance dies sending is due again when the lease ends.
                let now = now_ms();
                deliveries::claim_webhooks(conn, now, now + lease_ms, 1)
            })
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
                .run(deliveries::next_webhook_due_ms)
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
            let mut request = client
                .post(&hook.url)
                .header("content-type", "application/json");
            for (name, value) in
                signed_headers(&hook.secret, &d.event, &d.id, ts, d.body.as_bytes())
            {
                request = request.header(name, value);
            }
            let sent = request.body(d.body.clone()).send().await;
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
        // Signatures of earlier qp versions still verify.
        let v1 = {
            let mut mac = Hmac::<Sha256>::new_from_slice(b"0123456789abcdef").unwrap();
            mac.update(b"1000.d_1.");
            mac.update(body);
            format!("v1={}", hex::encode(mac.finalize().into_bytes()))
        };
        assert_eq!(
            verify("0123456789abcdef", 1000, "d_1", &v1, body, 1010, 300),
            Ok(())
        );
    }

    #[test]
    fn every_header_of_a_delivery() {
        let h = signed_headers(
            "s3cret-s3cret-s3cret",
            "question.answered",
            "d_1",
            1000,
            b"{}",
        );
        let get = |k: &str| h.iter().find(|(n, _)| *n == k).unwrap().1.clone();
        assert_eq!(
            get(HEADER_SIGNATURE),
            format!("v2={}", get(PINGROOM_SIGNATURE_V2))
        );
        assert_eq!(get(PINGROOM_DELIVERY), "d_1");
        assert_eq!(get(PINGROOM_TIMESTAMP), "1000");
        assert_ne!(get(PINGROOM_SIGNATURE), get(PINGROOM_SIGNATURE_V2));
        assert_eq!(get(PINGROOM_SIGNATURE).len(), 64);
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
