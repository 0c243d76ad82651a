//! What each APNs and FCM error means, and what the worker does about it:
//! one table, [`ERRORS`], read by both transports, the metrics and the
//! operators' chapter (docs/operators/push.md mirrors it).
//!
//! Each documented reason has a scope (who it is about) and an action:
//!
//! - **device**: the token is dead (APNs `410 Unregistered`, `410
//!   ExpiredToken`, `400 DeviceTokenNotForTopic`; FCM `UNREGISTERED`, and
//!   FCM `400 INVALID_ARGUMENT` whose `BadRequest` detail names the field
//!   `message.token`, counted as `INVALID_ARGUMENT:message.token`): the
//!   device is removed, no retry;
//! - **request**: this push as sent can never succeed (a bad header, a
//!   payload too large): failed for good, the device kept. APNs `400
//!   BadDeviceToken` is one: Apple answers it for a malformed token, but
//!   also for a good token sent to the other environment (a development
//!   build's token to production, or the server's `apns_sandbox` set
//!   wrong), and then it would say so for every iPhone: removing the device
//!   would wipe them all. The push fails for good, loudly (the warn line,
//!   `qp_push_gateway_errors_total{reason="BadDeviceToken"}`), and the
//!   device stays; a real bad token is replaced when the app registers
//!   again;
//! - **credential**: the provider token or access token was refused: the
//!   token is dropped and the gateway's [`CredentialGate`] holds every push
//!   for a backoff step, then one probes;
//! - **throttle**: slow down (APNs `TooManyRequests`, FCM `QUOTA_EXCEEDED`):
//!   retried after the gateway's `Retry-After`, else the push backoff (in
//!   an outage, [`super::outage`], without spending attempts);
//! - **token refresh throttled** (APNs `429 TooManyProviderTokenUpdates`):
//!   the provider token was signed again too often. Nothing is wrong with
//!   the device or the push: retried later, and no new token is signed for
//!   [`TOKEN_REFRESH_HOLD`];
//! - **gateway**: the service is down or shutting down (5xx): retried after
//!   `Retry-After`, else the push backoff.
//!
//! A reason not in the table falls back by status ([`fallback`]): 410
//! device, 429 throttle, 5xx gateway, other 4xx request.
//!
//! A Web Push service answers with a status only (RFC 8030): [`web_push`]
//! reads it by the same rule, 404 also meaning the subscription is gone.
//!
//! [`CredentialGate`]: super::credentials::CredentialGate

use std::time::Duration;

/// Who an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Device,
    Request,
    Credential,
    Throttle,
    Gateway,
}

/// What the transport does on an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Remove the device (`PushOutcome::DeviceGone`).
    ForgetDevice,
    /// Fail this push for good (`PushOutcome::Failed`).
    FailPush,
    /// Drop the token and back the credential off (`CredentialGate::refused`).
    CredentialRefused,
    /// Try again after `Retry-After`, else the push backoff
    /// (`PushOutcome::Unavailable`: a fault of the gateway, which spends no
    /// attempt during an outage, `super::outage`).
    Retry,
    /// Try this push again after `Retry-After`, else the push backoff,
    /// spending an attempt (`PushOutcome::Retry`): throttling of one device
    /// or topic, which says nothing about the gateway and never feeds its
    /// outage circuit.
    RetryDevice,
    /// Try again later, and sign no new provider token for
    /// [`TOKEN_REFRESH_HOLD`].
    SlowTokenRefresh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gateway {
    Apns,
    Fcm,
}

/// One documented error: the gateway's status and reason (APNs's `reason`,
/// FCM's `errorCode` of `details`, else its `status`), and what it means.
#[derive(Debug, Clone, Copy)]
pub struct ErrorRow {
    pub gateway: Gateway,
    pub status: u16,
    pub reason: &'static str,
    pub scope: Scope,
    pub action: Action,
    /// What the operator should check, for a reason that usually means a
    /// setting of the server's rather than one device (said in the push's
    /// failure and its warn line).
    pub hint: Option<&'static str>,
}

/// How long no new APNs provider token is signed after
/// `TooManyProviderTokenUpdates`: Apple allows a refresh at most every 20
/// minutes.
pub const TOKEN_REFRESH_HOLD: Duration = Duration::from_secs(20 * 60);

/// What is done about an error of this scope (unless its row says more).
const fn action_of(scope: Scope) -> Action {
    match scope {
        Scope::Device => Action::ForgetDevice,
        Scope::Request => Action::FailPush,
        Scope::Credential => Action::CredentialRefused,
        Scope::Throttle | Scope::Gateway => Action::Retry,
    }
}

const fn row(gateway: Gateway, status: u16, reason: &'static str, scope: Scope) -> ErrorRow {
    ErrorRow {
        gateway,
        status,
        reason,
        scope,
        action: action_of(scope),
        hint: None,
    }
}

/// `row` with the operator's hint.
const fn hinted(row: ErrorRow, hint: &'static str) -> ErrorRow {
    ErrorRow {
        hint: Some(hint),
        ..row
    }
}

use Gateway::{Apns, Fcm};
use Scope::{Credential, Device, Request, Throttle};

/// Every APNs reason Apple documents ("Handling notification responses
/// from APNs") and every FCM HTTP v1 `ErrorCode`, with its action.
pub const ERRORS: &[ErrorRow] = &[
    // APNs: the device token.
    // Not `Device`: also the answer to a token of the other environment,
    // for every device alike when the server's is set wrong (see above).
    hinted(
        row(Apns, 400, "BadDeviceToken", Request),
        "the token is malformed or from the other APNs environment (a development build's \
         token sent to production, or apns_sandbox set wrong); the device is kept",
    ),
    // The topic is the app id the device registered: a token of another
    // app than it says is this device's registration, not the server's.
    row(Apns, 400, "DeviceTokenNotForTopic", Device),
    row(Apns, 410, "Unregistered", Device),
    row(Apns, 410, "ExpiredToken", Device),
    // APNs: this request.
    row(Apns, 400, "BadCollapseId", Request),
    row(Apns, 400, "BadExpirationDate", Request),
    row(Apns, 400, "BadMessageId", Request),
    row(Apns, 400, "BadPriority", Request),
    hinted(
        row(Apns, 400, "BadTopic", Request),
        "the app_id this device registered is not a valid APNs topic (the app's bundle id); \
         the device is kept",
    ),
    row(Apns, 400, "DuplicateHeaders", Request),
    row(Apns, 400, "InvalidPushType", Request),
    row(Apns, 400, "MissingDeviceToken", Request),
    hinted(
        row(Apns, 400, "MissingTopic", Request),
        "no apns-topic: this device registered no app_id (the app's bundle id); the device is kept",
    ),
    row(Apns, 400, "PayloadEmpty", Request),
    // The server's key may not push to this app: every device of the app
    // alike, but not the others (no credential backoff), and no device's
    // fault (kept).
    hinted(
        row(Apns, 400, "TopicDisallowed", Request),
        "the APNs key (apns_key_id, apns_team_id) may not push to this app's bundle id: use a key \
         of the team that owns the app; the device is kept",
    ),
    row(Apns, 404, "BadPath", Request),
    row(Apns, 405, "MethodNotAllowed", Request),
    row(Apns, 413, "PayloadTooLarge", Request),
    // APNs: the connection sat idle too long; the push itself is fine.
    row(Apns, 400, "IdleTimeout", Scope::Gateway),
    // APNs: the provider token (or the key behind it).
    row(Apns, 403, "ExpiredProviderToken", Credential),
    row(Apns, 403, "InvalidProviderToken", Credential),
    row(Apns, 403, "MissingProviderToken", Credential),
    row(Apns, 403, "BadCertificate", Credential),
    row(Apns, 403, "BadCertificateEnvironment", Credential),
    row(Apns, 403, "Forbidden", Credential),
    // APNs: slow down.
    // Too many pushes to one device token (Apple: "too many requests were
    // made consecutively to the same device token"): that device's.
    ErrorRow {
        gateway: Apns,
        status: 429,
        reason: "TooManyRequests",
        scope: Throttle,
        action: Action::RetryDevice,
        hint: None,
    },
    ErrorRow {
        gateway: Apns,
        status: 429,
        reason: "TooManyProviderTokenUpdates",
        scope: Throttle,
        action: Action::SlowTokenRefresh,
        hint: None,
    },
    // APNs: the service.
    row(Apns, 500, "InternalServerError", Scope::Gateway),
    row(Apns, 503, "ServiceUnavailable", Scope::Gateway),
    row(Apns, 503, "Shutdown", Scope::Gateway),
    // FCM HTTP v1.
    row(Fcm, 404, "UNREGISTERED", Device),
    // The registration token itself is malformed (FCM's BadRequest detail
    // names the field `message.token`): no push can ever reach it. Any
    // other INVALID_ARGUMENT is about this request.
    row(Fcm, 400, "INVALID_ARGUMENT:message.token", Device),
    row(Fcm, 400, "INVALID_ARGUMENT", Request),
    // The token belongs to another Firebase project: this server can never
    // reach it, but a misconfigured project would say so for every device,
    // so the device is kept.
    hinted(
        row(Fcm, 403, "SENDER_ID_MISMATCH", Request),
        "the token belongs to another Firebase project (check the server's FCM project and \
         the app's google-services.json); the device is kept",
    ),
    row(Fcm, 401, "UNAUTHENTICATED", Credential),
    row(Fcm, 403, "PERMISSION_DENIED", Credential),
    // The APNs certificate or auth key, or the Web Push auth key, stored
    // in the Firebase project for the target app is invalid or missing:
    // about the app the token belongs to (an iOS or web app of the
    // project), not this server's credential, which FCM accepted. Other
    // apps' pushes go on; this one fails, the device is kept.
    hinted(
        row(Fcm, 401, "THIRD_PARTY_AUTH_ERROR", Request),
        "the APNs certificate or auth key (or the Web Push key) stored in the Firebase project \
         for this device's app is invalid or missing: upload it under Project settings, Cloud \
         Messaging; the device is kept",
    ),
    row(Fcm, 429, "QUOTA_EXCEEDED", Throttle),
    row(Fcm, 503, "UNAVAILABLE", Scope::Gateway),
    row(Fcm, 500, "INTERNAL", Scope::Gateway),
    row(Fcm, 500, "UNSPECIFIED_ERROR", Scope::Gateway),
];

/// The row for this answer: its reason, else the status's [`fallback`].
pub fn classify(gateway: Gateway, status: u16, reason: &str) -> ErrorRow {
    ERRORS
        .iter()
        .find(|r| r.gateway == gateway && r.reason == reason)
        .copied()
        .unwrap_or_else(|| fallback(gateway, status))
}

/// An undocumented reason, by its status.
pub fn fallback(gateway: Gateway, status: u16) -> ErrorRow {
    let scope = match (gateway, status) {
        (_, 410) => Device,
        (_, 429) => Throttle,
        (_, 500..=599) => Scope::Gateway,
        (Fcm, 401) | (Apns, 403) => Credential,
        _ => Request,
    };
    row(gateway, status, "", scope)
}

/// A Web Push service's error status, by the fallback's rule: 404 and 410
/// the subscription is gone, 429 throttle, 5xx the service (a gateway
/// fault: held without attempts in an outage, [`super::outage`]), any
/// other (400, 401/403 a VAPID signature refused, 413) this push.
pub fn web_push(status: u16) -> (Scope, Action) {
    let scope = match status {
        404 | 410 => Device,
        429 => Throttle,
        500..=599 => Scope::Gateway,
        _ => Request,
    };
    (scope, action_of(scope))
}

/// The `reason` label of `qp_push_gateway_errors_total`: the documented
/// reason, or `other` (a fixed set: never the gateway's own text).
pub fn label(gateway: Gateway, reason: &str) -> &'static str {
    ERRORS
        .iter()
        .find(|r| r.gateway == gateway && r.reason == reason)
        .map_or("other", |r| r.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test per row: the action each documented reason must take. The
    /// expectations are written out again on purpose (what the gateway's
    /// documentation says), so a row changed by mistake fails here.
    macro_rules! rows {
        ($($name:ident: $gw:ident $status:literal $reason:literal => $action:ident;)*) => {
            $(
                #[test]
                fn $name() {
                    let r = classify($gw, $status, $reason);
                    assert_eq!(r.reason, $reason, "not in the table");
                    assert_eq!(r.status, $status);
                    assert_eq!(r.action, Action::$action);
                }
            )*
            const COVERED: &[(Gateway, &str)] = &[$(($gw, $reason)),*];
        };
    }

    rows! {
        apns_bad_device_token: Apns 400 "BadDeviceToken" => FailPush;
        apns_device_token_not_for_topic: Apns 400 "DeviceTokenNotForTopic" => ForgetDevice;
        apns_unregistered: Apns 410 "Unregistered" => ForgetDevice;
        apns_expired_token: Apns 410 "ExpiredToken" => ForgetDevice;
        apns_bad_collapse_id: Apns 400 "BadCollapseId" => FailPush;
        apns_bad_expiration_date: Apns 400 "BadExpirationDate" => FailPush;
        apns_bad_message_id: Apns 400 "BadMessageId" => FailPush;
        apns_bad_priority: Apns 400 "BadPriority" => FailPush;
        apns_bad_topic: Apns 400 "BadTopic" => FailPush;
        apns_duplicate_headers: Apns 400 "DuplicateHeaders" => FailPush;
        apns_invalid_push_type: Apns 400 "InvalidPushType" => FailPush;
        apns_missing_device_token: Apns 400 "MissingDeviceToken" => FailPush;
        apns_missing_topic: Apns 400 "MissingTopic" => FailPush;
        apns_payload_empty: Apns 400 "PayloadEmpty" => FailPush;
        apns_topic_disallowed: Apns 400 "TopicDisallowed" => FailPush;
        apns_bad_path: Apns 404 "BadPath" => FailPush;
        apns_method_not_allowed: Apns 405 "MethodNotAllowed" => FailPush;
        apns_payload_too_large: Apns 413 "PayloadTooLarge" => FailPush;
        apns_idle_timeout: Apns 400 "IdleTimeout" => Retry;
        apns_expired_provider_token: Apns 403 "ExpiredProviderToken" => CredentialRefused;
        apns_invalid_provider_token: Apns 403 "InvalidProviderToken" => CredentialRefused;
        apns_missing_provider_token: Apns 403 "MissingProviderToken" => CredentialRefused;
        apns_bad_certificate: Apns 403 "BadCertificate" => CredentialRefused;
        apns_bad_certificate_environment: Apns 403 "BadCertificateEnvironment" => CredentialRefused;
        apns_forbidden: Apns 403 "Forbidden" => CredentialRefused;
        apns_too_many_requests: Apns 429 "TooManyRequests" => RetryDevice;
        apns_too_many_provider_token_updates: Apns 429 "TooManyProviderTokenUpdates" => SlowTokenRefresh;
        apns_internal_server_error: Apns 500 "InternalServerError" => Retry;
        apns_service_unavailable: Apns 503 "ServiceUnavailable" => Retry;
        apns_shutdown: Apns 503 "Shutdown" => Retry;
        fcm_unregistered: Fcm 404 "UNREGISTERED" => ForgetDevice;
        fcm_invalid_argument_naming_the_token: Fcm 400 "INVALID_ARGUMENT:message.token" => ForgetDevice;
        fcm_invalid_argument: Fcm 400 "INVALID_ARGUMENT" => FailPush;
        fcm_sender_id_mismatch: Fcm 403 "SENDER_ID_MISMATCH" => FailPush;
        fcm_unauthenticated: Fcm 401 "UNAUTHENTICATED" => CredentialRefused;
        fcm_permission_denied: Fcm 403 "PERMISSION_DENIED" => CredentialRefused;
        fcm_third_party_auth_error: Fcm 401 "THIRD_PARTY_AUTH_ERROR" => FailPush;
        fcm_quota_exceeded: Fcm 429 "QUOTA_EXCEEDED" => Retry;
        fcm_unavailable: Fcm 503 "UNAVAILABLE" => Retry;
        fcm_internal: Fcm 500 "INTERNAL" => Retry;
        fcm_unspecified_error: Fcm 500 "UNSPECIFIED_ERROR" => Retry;
    }

    /// A row added to the table without its test fails here.
    #[test]
    fn every_row_has_its_test() {
        for r in ERRORS {
            assert!(
                COVERED.contains(&(r.gateway, r.reason)),
                "{:?} {} has no test",
                r.gateway,
                r.reason
            );
        }
        assert_eq!(COVERED.len(), ERRORS.len());
    }

    /// The refusals naming the topic, by whose they are as Apple
    /// documents them: the token not for the device's own app is that
    /// device's (removed); a topic that is invalid, missing or not allowed
    /// for the server's key is the registration's or the server's
    /// configuration (the device kept, the push failed with a hint saying
    /// which setting to check), never a credential backoff that would
    /// hold every other app's pushes.
    #[test]
    fn the_topic_refusals_are_the_devices_or_the_configurations() {
        let device = classify(Apns, 400, "DeviceTokenNotForTopic");
        assert_eq!((device.scope, device.hint), (Device, None));
        for (reason, names) in [
            ("BadTopic", "app_id"),
            ("MissingTopic", "app_id"),
            ("TopicDisallowed", "apns_key_id"),
        ] {
            let r = classify(Apns, 400, reason);
            assert_eq!(r.scope, Request, "{reason}");
            assert_eq!(r.action, Action::FailPush, "{reason}");
            let hint = r.hint.unwrap_or_else(|| panic!("{reason} has no hint"));
            assert!(
                hint.contains(names) && hint.contains("device is kept"),
                "{reason}: {hint}"
            );
        }
    }

    #[test]
    fn an_undocumented_reason_falls_back_by_status() {
        assert_eq!(classify(Apns, 410, "Whatever").action, Action::ForgetDevice);
        assert_eq!(classify(Apns, 429, "").action, Action::Retry);
        assert_eq!(classify(Fcm, 502, "").action, Action::Retry);
        assert_eq!(classify(Fcm, 401, "").action, Action::CredentialRefused);
        assert_eq!(classify(Apns, 403, "New").action, Action::CredentialRefused);
        assert_eq!(classify(Apns, 400, "New").action, Action::FailPush);
        assert_eq!(label(Apns, "New"), "other");
    }

    #[test]
    fn a_web_push_service_is_read_by_status() {
        for (status, action) in [
            (404, Action::ForgetDevice),
            (410, Action::ForgetDevice),
            (429, Action::Retry),
            (500, Action::Retry),
            (503, Action::Retry),
            (400, Action::FailPush),
            (403, Action::FailPush),
            (413, Action::FailPush),
        ] {
            assert_eq!(web_push(status).1, action, "{status}");
        }
        assert_eq!(label(Fcm, "QUOTA_EXCEEDED"), "QUOTA_EXCEEDED");
    }
}
