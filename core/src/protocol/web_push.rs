//! A browser's push subscription (the `push_token` of a `web` device): the
//! JSON of `PushSubscription.toJSON()`,
//! `{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}}`.
//!
//! Checked for its shape here (where the other platforms' tokens are
//! checked); which push services the server sends to is the server's
//! allow-list, checked at registration and before every send.

use serde_json::Value;

/// The longest subscription accepted (endpoints are a few hundred bytes).
pub const WEB_SUBSCRIPTION_MAX_CHARS: usize = 4096;
/// `p256dh`: an uncompressed P-256 point, 65 bytes (RFC 8291).
pub const P256DH_BYTES: usize = 65;
/// `auth`: the 16-byte authentication secret (RFC 8291).
pub const AUTH_BYTES: usize = 16;

/// A subscription's parts, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSubscription {
    pub endpoint: String,
    /// URL-safe base64, unpadded as browsers write it.
    pub p256dh: String,
    pub auth: String,
}

/// What is wrong with a subscription, naming its part:
/// "keys.auth must be …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{part} must be {rule}")]
pub struct SubscriptionError {
    pub part: &'static str,
    pub rule: &'static str,
}

fn bad(part: &'static str, rule: &'static str) -> SubscriptionError {
    SubscriptionError { part, rule }
}

/// The number of bytes `s` decodes to as URL-safe base64 (padding
/// allowed), or `None` if it is not that.
fn base64url_len(s: &str) -> Option<usize> {
    let body = s.trim_end_matches('=');
    let ok = body
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (ok && body.len() % 4 != 1).then_some(body.len() * 3 / 4)
}

/// Reads and checks a subscription.
pub fn parse_subscription(token: &str) -> Result<WebSubscription, SubscriptionError> {
    if token.len() > WEB_SUBSCRIPTION_MAX_CHARS {
        return Err(bad("the subscription", "at most 4096 characters"));
    }
    let v: Value = serde_json::from_str(token)
        .map_err(|_| bad("the subscription", "the JSON of PushSubscription.toJSON()"))?;
    let text = |v: Option<&Value>, part: &'static str, rule: &'static str| {
        v.and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(bad(part, rule))
    };
    let endpoint = text(v.get("endpoint"), "endpoint", "a URL (a string)")?;
    let lower = endpoint.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://"))
        || endpoint
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(bad("endpoint", "an https URL of a push service"));
    }
    let keys = v.get("keys");
    let p256dh = text(
        keys.and_then(|k| k.get("p256dh")),
        "keys.p256dh",
        "a string",
    )?;
    if base64url_len(&p256dh) != Some(P256DH_BYTES) {
        return Err(bad(
            "keys.p256dh",
            "URL-safe base64 of a 65-byte P-256 public key",
        ));
    }
    let auth = text(keys.and_then(|k| k.get("auth")), "keys.auth", "a string")?;
    if base64url_len(&auth) != Some(AUTH_BYTES) {
        return Err(bad("keys.auth", "URL-safe base64 of 16 bytes"));
    }
    Ok(WebSubscription {
        endpoint,
        p256dh,
        auth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const P256DH: &str =
        "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
    const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

    fn sub(endpoint: &str, p256dh: &str, auth: &str) -> String {
        serde_json::json!({"endpoint": endpoint, "keys": {"p256dh": p256dh, "auth": auth}})
            .to_string()
    }

    #[test]
    fn a_browsers_subscription_is_read_and_each_bad_part_is_named() {
        let ok = parse_subscription(&sub("https://fcm.googleapis.com/fcm/send/x", P256DH, AUTH))
            .unwrap();
        assert_eq!(ok.auth, AUTH);
        let part = |t: &str| parse_subscription(t).unwrap_err().part;
        assert_eq!(part("nope"), "the subscription");
        assert_eq!(part(&sub("ftp://x", P256DH, AUTH)), "endpoint");
        assert_eq!(part(&sub("https://x", "AAAA", AUTH)), "keys.p256dh");
        assert_eq!(part(&sub("https://x", P256DH, "a+b/")), "keys.auth");
        assert_eq!(part(r#"{"endpoint": "https://x"}"#), "keys.p256dh");
        assert_eq!(part(&"x".repeat(5000)), "the subscription");
    }
}
