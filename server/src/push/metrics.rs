//! What the push worker's metrics count, and the labels push gives them
//! (the families themselves are [`crate::metrics::push`]'s, served as
//! `/metrics` by `http::observe`):
//!
//! - `qp_push_latency_seconds{gateway}`: from the job being queued to the
//!   gateway accepting it (a histogram; retries included);
//! - `qp_push_in_flight{gateway}`: pushes sent and not yet answered;
//! - `qp_push_outcomes_total{gateway,outcome,reason}`: every outcome
//!   recorded in the queue (counted once written, so a job's outcome is
//!   counted once whichever instance records it), labelled by the state
//!   written: a push that ends failed is `failed` whatever the answer
//!   ([`labels_written`]);
//! - `qp_push_outcomes_unrecorded_total{gateway,outcome,why}`: outcomes
//!   that were not written: `why="claim_lost"` (the job had moved on: its
//!   lease ran out and another instance claimed it, or recorded it) or
//!   `why="write_failed"` (the database refused the batch, retries
//!   included). With `qp_push_outcomes_total`, every answer is in one or
//!   the other;
//! - `qp_push_gateway_errors_total{gateway,reason}`: every error answer of
//!   APNs and FCM by its documented reason (`other` for one not in
//!   [`super::gateway_errors::ERRORS`]), credential refusals included;
//! - `qp_push_auth_failures_total{gateway}`, `qp_push_credential_failing{gateway}`:
//!   credential refusals ([`super::credentials`]);
//! - `qp_push_resent_maybe_delivered_total{gateway,cause}`: pushes sent
//!   again although the gateway may already have accepted them (the phone
//!   may get them twice, under the same collapse id: one notification).
//!   `cause` is `dead_connection` (a PING went unanswered under the
//!   stream), `connection_lost` (the connection broke, or went away with
//!   an error, after the request was written: a `GOAWAY`'s streams at or
//!   below its last-stream-id), `timeout` (no answer in time after the
//!   request was written: the queue sends it again), `stream_reset` (the
//!   gateway reset the stream, with a code other than `REFUSED_STREAM`,
//!   after it was written), `taken_over` (the gateway accepted a push
//!   whose job another claim had sent too: an instance stalled past its
//!   lease), `unrecorded` (the gateway accepted it but the outcome could
//!   not be written: the queue sends it again) or `lease_ran_out` (claimed
//!   again after an earlier claim's lease ran out with no outcome
//!   recorded: counted by the claim that takes it over).
//!   Pushes a gateway refused unprocessed (a `GOAWAY`'s streams above its
//!   last-stream-id, `REFUSED_STREAM`) are sent again without counting:
//!   they cannot arrive twice.
//!
//! A push that fails for good (whatever ended it: a failure answer, a
//! retry past its deadline, its attempts spent) is logged at warn, at most one line per
//! gateway and reason each [`FAILURE_LOG_EVERY`] (with how many were not
//! logged in between): a revoked credential or a bad payload must show in
//! the log without drowning it.
//!
//! Every label takes a fixed set of values, named here: `gateway` is
//! `apns`, `fcm`, `web_push`, `dev` or `none` (no device or question
//! left); `outcome` is `sent`, `retry` (queued to go again, an attempt
//! spent), `deferred` (held back by a credential backoff or a gateway
//! outage, [`super::outage`], or given back at the claim's cut-off; no
//! attempt spent), `no_answer` (written, no answer: goes again under its
//! collapse id), `skipped` (its question was resolved before its turn:
//! not sent), `device_gone` or `failed` (every other push that ends
//! failed, [`labels_written`]); `cause` is `dead_connection`,
//! `connection_lost`, `timeout`, `stream_reset`, `taken_over`,
//! `unrecorded` or `lease_ran_out` ([`ResendCause`]); `why` is
//! `claim_lost` or `write_failed`; `reason` is one of
//! [`REASONS`], classified from the outcome, never a gateway's own text.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::metrics::push::{GatewayErrorCounts, PushMetrics, ResendCounts};

use super::PushOutcome;

/// Why an outcome was not written (the `why` label of
/// `qp_push_outcomes_unrecorded_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrecorded {
    /// The job had moved on: another claim holds it or recorded it.
    ClaimLost,
    /// The database refused the batch (after its retries).
    WriteFailed,
}

impl Unrecorded {
    pub fn label(self) -> &'static str {
        match self {
            Unrecorded::ClaimLost => "claim_lost",
            Unrecorded::WriteFailed => "write_failed",
        }
    }
}

/// Why a push the gateway may have accepted is sent again (the `cause`
/// label of `qp_push_resent_maybe_delivered_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResendCause {
    /// The connection stopped answering PINGs under the stream.
    DeadConnection,
    /// The connection broke or went away with an error under the stream.
    ConnectionLost,
    /// No answer within the timeout once the request was written.
    Timeout,
    /// The stream was reset by the gateway (a code other than
    /// REFUSED_STREAM) once the request was written.
    StreamReset,
    /// Accepted by the gateway after another claim had sent it too (an
    /// instance stalled past its lease): delivered twice for sure.
    TakenOver,
    /// Accepted by the gateway, but the outcome could not be written: the
    /// job is due again when its lease ends.
    Unrecorded,
    /// Claimed again after an earlier claim's lease ran out with no outcome
    /// recorded (its instance killed, stalled, or unable to write): that
    /// claim may have sent it. Counted by the claim that takes it over, so
    /// a push doubled after `kill -9` shows here (the same push may also
    /// show from the stalled side as `taken_over` or `unrecorded`).
    LeaseRanOut,
}

impl ResendCause {
    pub fn label(self) -> &'static str {
        match self {
            ResendCause::DeadConnection => "dead_connection",
            ResendCause::ConnectionLost => "connection_lost",
            ResendCause::Timeout => "timeout",
            ResendCause::StreamReset => "stream_reset",
            ResendCause::TakenOver => "taken_over",
            ResendCause::Unrecorded => "unrecorded",
            ResendCause::LeaseRanOut => "lease_ran_out",
        }
    }
}

/// Counts pushes sent again that the gateway may have accepted: shared by
/// the transports' connection pools (through [`Resends::for_gateway`]) and
/// the worker. A clone counts into the same series.
#[derive(Clone, Default)]
pub struct Resends(ResendCounts);

impl Resends {
    /// Counting into `/metrics`' series.
    pub fn new(counts: ResendCounts) -> Self {
        Resends(counts)
    }

    pub fn count(&self, gateway: &'static str, cause: ResendCause) {
        self.0.count(gateway, cause.label());
    }

    /// What one gateway's pool counts into.
    pub fn for_gateway(&self, gateway: &'static str) -> GatewayResends {
        GatewayResends {
            resends: self.clone(),
            gateway,
        }
    }

    /// The count so far (tests).
    pub fn get(&self, gateway: &'static str, cause: ResendCause) -> u64 {
        self.0.get(gateway, cause.label())
    }
}

/// [`Resends`] for one gateway (a pool knows no more than its own).
#[derive(Clone, Default)]
pub struct GatewayResends {
    resends: Resends,
    gateway: &'static str,
}

impl GatewayResends {
    pub fn count(&self, cause: ResendCause) {
        self.resends.count(self.gateway, cause)
    }
}

/// `qp_push_gateway_errors_total{gateway,reason}`: every error answer of
/// APNs and FCM, counted by the transport where it reads the answer, by
/// its row of the one error table ([`super::gateway_errors::ERRORS`]):
/// the documented reason, or `other`. Device, request, credential,
/// throttling and service answers alike. A clone counts into the same
/// series.
#[derive(Clone, Default)]
pub struct GatewayErrors(GatewayErrorCounts);

impl GatewayErrors {
    /// Counting into `/metrics`' series.
    pub fn new(counts: GatewayErrorCounts) -> Self {
        GatewayErrors(counts)
    }

    /// One error answer, classified (`classify`).
    pub fn count(&self, row: &super::gateway_errors::ErrorRow) {
        self.0.count(gateway_name(row.gateway), error_label(row));
    }

    /// The count so far (tests).
    pub fn get(&self, gateway: &'static str, reason: &'static str) -> u64 {
        self.0.get(gateway, reason)
    }
}

fn gateway_name(g: super::gateway_errors::Gateway) -> &'static str {
    match g {
        super::gateway_errors::Gateway::Apns => "apns",
        super::gateway_errors::Gateway::Fcm => "fcm",
    }
}

/// The `reason` label of an error row: its documented reason, or `other`
/// (a status fallback: never the gateway's own text).
fn error_label(row: &super::gateway_errors::ErrorRow) -> &'static str {
    if row.reason.is_empty() {
        "other"
    } else {
        row.reason
    }
}

/// The gateway's answer in a transport's message (`APNs 429
/// TooManyRequests`, `FCM 503 UNAVAILABLE`, also inside a credential
/// refusal: `apns credential refused: APNs 403 InvalidProviderToken`), as
/// its row of the error table.
pub fn answer_in(text: &str) -> Option<super::gateway_errors::ErrorRow> {
    use super::gateway_errors::{classify, Gateway};
    let words: Vec<&str> = text.split_whitespace().collect();
    (0..words.len()).find_map(|i| {
        let gateway = match words[i] {
            "APNs" => Gateway::Apns,
            "FCM" => Gateway::Fcm,
            _ => return None,
        };
        let status = words.get(i + 1)?.trim_end_matches(':');
        let status = status.parse::<u16>().ok().filter(|_| status.len() == 3)?;
        let reason = words.get(i + 2).map_or("", |r| r.trim_end_matches(':'));
        Some(classify(gateway, status, reason))
    })
}

/// Every value the `reason` label takes.
pub const REASONS: [&str; 12] = [
    "ok",
    "outage",
    "rate_limited",
    "server_error",
    "unreachable",
    "auth",
    "unregistered",
    "payload",
    "no_transport",
    "gone",
    "rejected",
    "other",
];

/// When a failure was last logged, and how many have not been since.
type LogState = (Option<Instant>, u64);

/// The least time between two warn lines of one gateway and reason.
pub const FAILURE_LOG_EVERY: Duration = Duration::from_secs(60);

/// Per gateway and reason: when a push failing for good was last logged,
/// and how many have not been since (the worker's, for all its sends).
#[derive(Default)]
pub struct FailureLog(Mutex<HashMap<(&'static str, &'static str), LogState>>);

pub use crate::config::push::gateway_of;

/// The `outcome` and `reason` labels of an answer.
pub fn labels_of(outcome: &PushOutcome) -> (&'static str, &'static str) {
    match outcome {
        PushOutcome::Sent => ("sent", "ok"),
        PushOutcome::DeviceGone => ("device_gone", "unregistered"),
        PushOutcome::Retry { reason, .. } | PushOutcome::Unavailable { reason, .. } => {
            ("retry", classify(reason))
        }
        PushOutcome::Deferred { reason, .. } => ("deferred", classify(reason)),
        PushOutcome::NoAnswer { .. } => ("no_answer", "no_answer"),
        PushOutcome::Skipped(reason) => ("skipped", classify(reason)),
        PushOutcome::Failed(reason) => ("failed", classify(reason)),
    }
}

/// The fixed reason of a transport's message (see apns.rs, fcm.rs, the
/// router and the worker for the texts).
fn classify(reason: &str) -> &'static str {
    use super::gateway_errors::Scope;
    // "APNs 503 …", or a Web Push service's "push service answered 503".
    let status = match reason.strip_prefix(super::webpush::ANSWERED) {
        Some(rest) => rest.trim().parse::<u16>().ok(),
        None => reason
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.trim_end_matches(':').parse::<u16>().ok()),
    };
    if reason.starts_with(super::outage::HELD) {
        "outage"
    } else if let Some(row) = answer_in(reason) {
        // An APNs or FCM answer: by its row of the one error table, not
        // its status (FCM 403 SENDER_ID_MISMATCH is about the request).
        match row.scope {
            Scope::Device => "unregistered",
            Scope::Request => "rejected",
            Scope::Credential => "auth",
            Scope::Throttle => "rate_limited",
            Scope::Gateway => "server_error",
        }
    } else if reason.contains("credential refused") {
        "auth"
    } else if reason.contains("unreachable") {
        "unreachable"
    } else if reason.starts_with("no ") && reason.ends_with("transport configured") {
        "no_transport"
    } else if reason.contains("no longer exists") || reason.contains("no longer pending") {
        "gone"
    } else if reason.contains("OAuth") || matches!(status, Some(401 | 403)) {
        "auth"
    } else if matches!(status, Some(429)) {
        "rate_limited"
    } else if matches!(status, Some(500..=599)) {
        "server_error"
    } else if reason.starts_with("payload") || reason.starts_with("cannot encode") {
        "payload"
    } else if status.is_some() {
        "rejected"
    } else {
        "other"
    }
}

impl FailureLog {
    /// One answer from a transport, as it arrives: a failure logged. (Its
    /// gateway's error answers are counted by the transport, which reads
    /// them: [`GatewayErrors`].)
    pub fn answered(&self, gateway: &'static str, outcome: &PushOutcome) {
        if let PushOutcome::Failed(text) = outcome {
            self.log_failure(gateway, labels_of(outcome).1, text);
        }
    }

    /// A push whose written state is failed: logged unless its answer
    /// was (a transport's failure, [`FailureLog::answered`]), or it is no
    /// failure to tell (`device_gone`, `skipped`).
    pub fn ended_failed(&self, gateway: &'static str, outcome: &PushOutcome) {
        let text = match outcome {
            PushOutcome::Retry { reason, .. }
            | PushOutcome::Unavailable { reason, .. }
            | PushOutcome::Deferred { reason, .. }
            | PushOutcome::NoAnswer { reason, .. } => reason,
            _ => return,
        };
        let text = format!("{text} (not tried again: out of attempts or past the push's deadline)");
        self.log_failure(gateway, labels_of(outcome).1, &text);
    }

    /// A push failed for good: one warn line per gateway and reason per
    /// [`FAILURE_LOG_EVERY`].
    fn log_failure(&self, gateway: &'static str, reason: &'static str, text: &str) {
        let now = Instant::now();
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = log.entry((gateway, reason)).or_insert((None, 0));
        if entry
            .0
            .is_some_and(|at| now.duration_since(at) < FAILURE_LOG_EVERY)
        {
            entry.1 += 1;
            return;
        }
        let not_logged = std::mem::replace(entry, (Some(now), 0)).1;
        tracing::warn!(
            gateway,
            reason,
            error = text,
            not_logged_since_last = not_logged,
            "push failed for good"
        );
    }
}

/// The `outcome` and `reason` labels of an answer as written: one that
/// left the push failed (`failed`) is `failed` whatever the transport
/// said (a retry past the deadline or out of attempts, a deferral past
/// the deadline, a push unanswered too often), with its reason;
/// `device_gone` and `skipped` keep theirs.
pub fn labels_written(outcome: &PushOutcome, failed: bool) -> (&'static str, &'static str) {
    match labels_of(outcome) {
        ("retry" | "deferred" | "no_answer", reason) if failed => ("failed", reason),
        labels => labels,
    }
}

/// One outcome written to the queue (`failed`: the push's state is now
/// failed); `queued_for_ms` since the job was queued.
pub fn recorded(
    m: &PushMetrics,
    gateway: &'static str,
    outcome: &PushOutcome,
    failed: bool,
    queued_for_ms: i64,
) {
    let (outcome_label, reason) = labels_written(outcome, failed);
    let latency = (*outcome == PushOutcome::Sent).then(|| queued_for_ms.max(0) as f64 / 1000.0);
    m.recorded(gateway, outcome_label, reason, latency);
}

/// One outcome not written, and why.
pub fn unrecorded(m: &PushMetrics, gateway: &'static str, outcome: &PushOutcome, why: Unrecorded) {
    m.unrecorded(gateway, labels_of(outcome).0, why.label());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_message_maps_to_a_fixed_reason() {
        let cases = [
            ("APNs 429 TooManyRequests", "rate_limited"),
            ("FCM 429", "rate_limited"),
            ("APNs 503 ServiceUnavailable", "server_error"),
            ("FCM 500", "server_error"),
            ("APNs unreachable: no response in time", "unreachable"),
            ("FCM unreachable: cannot connect: x", "unreachable"),
            ("APNs 403 ExpiredProviderToken", "auth"),
            ("FCM 401: access token refused", "auth"),
            ("OAuth token refused: 400 Bad Request \"x\"", "auth"),
            ("no ios transport configured", "no_transport"),
            ("device or question no longer exists", "gone"),
            ("question no longer pending (answered): not sent", "gone"),
            ("payload of 5000 bytes", "payload"),
            ("APNs 400 BadTopic", "rejected"),
            ("FCM 400 \"bad\"", "rejected"),
            ("database locked", "other"),
            ("gateway outage: APNs 503 ServiceUnavailable", "outage"),
        ];
        for (text, want) in cases {
            assert_eq!(classify(text), want, "{text}");
            assert!(REASONS.contains(&want));
        }
    }

    /// A push left failed is counted `failed`, whatever the transport's
    /// answer was; one still queued keeps the answer's label.
    #[test]
    fn a_push_written_failed_is_counted_failed() {
        let retry = PushOutcome::Retry {
            reason: "APNs 429 TooManyRequests".into(),
            after: Some(Duration::from_secs(600)),
        };
        assert_eq!(labels_written(&retry, false), ("retry", "rate_limited"));
        assert_eq!(labels_written(&retry, true), ("failed", "rate_limited"));
        let deferred = PushOutcome::Deferred {
            reason: "gateway outage: APNs 503 ServiceUnavailable".into(),
            after: Duration::from_secs(5),
        };
        assert_eq!(labels_written(&deferred, true), ("failed", "outage"));
        assert_eq!(
            labels_written(&PushOutcome::DeviceGone, true).0,
            "device_gone"
        );
        let skipped =
            PushOutcome::Skipped("question no longer pending (answered): not sent".into());
        assert_eq!(labels_written(&skipped, true).0, "skipped");
    }

    #[test]
    fn gateway_answers_are_read_by_their_row_of_the_error_table() {
        let reason =
            |text: &str| answer_in(text).map(|r| (gateway_name(r.gateway), error_label(&r)));
        assert_eq!(
            reason("APNs 429 TooManyProviderTokenUpdates"),
            Some(("apns", "TooManyProviderTokenUpdates"))
        );
        assert_eq!(
            reason("FCM 401 UNAUTHENTICATED: access token refused"),
            Some(("fcm", "UNAUTHENTICATED"))
        );
        assert_eq!(reason("APNs 400 SomethingNew"), Some(("apns", "other")));
        assert_eq!(reason("APNs unreachable: no response in time"), None);
        // A credential refusal carries the gateway's answer.
        assert_eq!(
            reason("apns credential refused: APNs 403 InvalidProviderToken"),
            Some(("apns", "InvalidProviderToken"))
        );
        assert_eq!(
            reason("fcm credential refused: FCM 401 UNAUTHENTICATED: access token refused"),
            Some(("fcm", "UNAUTHENTICATED"))
        );
        assert_eq!(reason("OAuth token refused: 400 Bad Request"), None);
    }

    /// The outcome's `reason` label follows the table's scope, not the
    /// HTTP status: SENDER_ID_MISMATCH is a 403 about the request (the
    /// device is kept), IdleTimeout a 400 about the connection.
    #[test]
    fn outcome_reasons_follow_the_error_table() {
        use crate::push::gateway_errors::{Scope, ERRORS};
        assert_eq!(
            classify("FCM 403 SENDER_ID_MISMATCH \"x\": hint"),
            "rejected"
        );
        assert_eq!(classify("APNs 400 IdleTimeout"), "server_error");
        assert_eq!(classify("push service answered 503"), "server_error");
        assert_eq!(classify("push service answered 429"), "rate_limited");
        assert_eq!(classify("push service answered 413"), "rejected");
        assert_eq!(classify("APNs 400 BadDeviceToken: hint"), "rejected");
        for row in ERRORS {
            let gw = match row.gateway {
                crate::push::gateway_errors::Gateway::Apns => "APNs",
                crate::push::gateway_errors::Gateway::Fcm => "FCM",
            };
            let label = classify(&format!("{gw} {} {}", row.status, row.reason));
            let want = match row.scope {
                Scope::Device => "unregistered",
                Scope::Request => "rejected",
                Scope::Credential => "auth",
                Scope::Throttle => "rate_limited",
                Scope::Gateway => "server_error",
            };
            assert_eq!(label, want, "{:?}", row.reason);
        }
    }

    #[test]
    fn every_error_answer_is_counted_by_its_row() {
        use crate::push::gateway_errors::{classify, Gateway};
        let e = GatewayErrors::default();
        e.count(&classify(Gateway::Apns, 410, "Unregistered"));
        e.count(&classify(Gateway::Fcm, 404, "UNREGISTERED"));
        e.count(&classify(Gateway::Apns, 400, "New"));
        assert_eq!(e.get("apns", "Unregistered"), 1);
        assert_eq!(e.get("fcm", "UNREGISTERED"), 1);
        assert_eq!(e.get("apns", "other"), 1);
    }
}
