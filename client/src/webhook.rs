//! Webhook events: matching one to the question that was asked.

use qp_core::protocol::WebhookEvent;

use crate::ClientError;

/// Reads a webhook body and returns the event if it resolves the question
/// with `correlation_id`. Verify the `X-QP-Signature` header over the exact
/// body first (qp-server's `webhook::verify` does it for Rust receivers).
pub fn reconcile(body: &[u8], correlation_id: &str) -> Result<Option<WebhookEvent>, ClientError> {
    let event: WebhookEvent =
        serde_json::from_slice(body).map_err(|e| ClientError::Decode(e.to_string()))?;
    Ok((event.correlation_id.as_deref() == Some(correlation_id)).then_some(event))
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
}
