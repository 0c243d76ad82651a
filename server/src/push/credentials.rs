//! A push gateway's credential (FCM's OAuth token, APNs' provider token)
//! failing: loud and cheap.
//!
//! When the credential is refused (FCM's token endpoint answering
//! `400 invalid_grant`, FCM `401`, APNs `403 InvalidProviderToken` or
//! `ExpiredProviderToken`) or cannot be fetched, the transport's
//! [`CredentialGate`] holds every push for a backoff step
//! ([`CREDENTIAL_BACKOFF`]: 1 s doubling to 5 minutes) and lets one through
//! when the step ends: one token request (or one probing push) per step, not
//! one per job; a revoked key once cost 10,341 token requests in eight
//! seconds, and failed every job for good. Each real refusal is logged at
//! warn (at most once per step, so the backoff is the rate limit), counted in
//! `qp_push_auth_failures_total{gateway}`, and shown on `/readyz` with the
//! time it started ([`CredentialBoard`]); the first success after one logs
//! that the credential works again and clears it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::Utc;
use qp_core::retry::RetryPolicy;

use super::PushOutcome;

/// The wait after each refusal in a row: 1 s, 2 s, 4 s… up to 5 minutes. No
/// jitter: one process holds one gate per gateway, there is no crowd to
/// spread.
pub const CREDENTIAL_BACKOFF: RetryPolicy = RetryPolicy {
    min: Duration::from_secs(1),
    max: Duration::from_secs(300),
    factor: 2.0,
    jitter: false,
};

pub use crate::health::CredentialFailure;

/// Every gateway's credential state, shared by the transports (which write
/// it) and `/readyz` and `/metrics` (which read it): the state in
/// [`crate::health::PushCredentials`], the counts in
/// [`crate::metrics::push::CredentialCounts`].
#[derive(Clone, Default)]
pub struct CredentialBoard {
    failing: crate::health::PushCredentials,
    counts: crate::metrics::push::CredentialCounts,
}

impl CredentialBoard {
    /// The board of the server's `/readyz` and `/metrics`.
    pub fn new(
        failing: crate::health::PushCredentials,
        counts: crate::metrics::push::CredentialCounts,
    ) -> Self {
        CredentialBoard { failing, counts }
    }

    /// The gateways failing now.
    pub fn failing(&self) -> BTreeMap<&'static str, CredentialFailure> {
        self.failing.failing()
    }

    fn set(&self, gateway: &'static str, state: Option<CredentialFailure>) {
        match &state {
            Some(_) => self.counts.refused(gateway),
            None => self.counts.accepted(gateway),
        }
        self.failing.set(gateway, state);
    }
}

struct Failing {
    report: CredentialFailure,
    /// Pushes wait until then; the first one after probes the credential.
    retry_at: Instant,
}

/// One transport's credential: open, or failing and backing off.
pub struct CredentialGate {
    gateway: &'static str,
    board: Mutex<CredentialBoard>,
    state: Mutex<Option<Failing>>,
}

impl CredentialGate {
    /// `gateway` is the metrics label (`apns`, `fcm`).
    pub fn new(gateway: &'static str) -> Self {
        CredentialGate {
            gateway,
            board: Mutex::new(CredentialBoard::default()),
            state: Mutex::new(None),
        }
    }

    /// Reports to `board` from now on (the server's, for `/readyz`).
    pub fn report_to(&self, board: &CredentialBoard) {
        *self.board.lock().unwrap_or_else(|p| p.into_inner()) = board.clone();
    }

    fn board(&self) -> CredentialBoard {
        self.board.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// While a backoff step runs: the push's outcome without trying
    /// (deferred to the step's end, no attempt spent: the push did nothing
    /// wrong). None: go ahead.
    pub fn blocked(&self) -> Option<PushOutcome> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let f = state.as_ref()?;
        let left = f.retry_at.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| PushOutcome::Deferred {
            reason: format!(
                "{} {HELD}{} ms: {}",
                self.gateway,
                left.as_millis(),
                f.report.error
            ),
            after: left,
        })
    }

    /// The credential was refused (`error` says how): backs off one step
    /// more, logs it, and returns the push's outcome: deferred to the
    /// step's end without spending an attempt (the push did nothing wrong;
    /// the same for the pushes in flight that hear the same refusal).
    pub fn refused(&self, error: &str) -> PushOutcome {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some(f) = state.as_ref().filter(|f| f.retry_at > now) {
            // Another push in flight saw the same refusal: one step each.
            let left = f.retry_at - now;
            return PushOutcome::Deferred {
                reason: format!("{} {HEARD}{error}", self.gateway),
                after: left,
            };
        }
        let report = match state.take() {
            Some(f) => CredentialFailure {
                since: f.report.since,
                error: error.to_string(),
                failures: f.report.failures + 1,
            },
            None => CredentialFailure {
                since: Utc::now(),
                error: error.to_string(),
                failures: 1,
            },
        };
        let step = CREDENTIAL_BACKOFF.delay(report.failures);
        tracing::warn!(
            gateway = self.gateway,
            error,
            failures = report.failures,
            since = %report.since.to_rfc3339(),
            retry_in_ms = step.as_millis() as u64,
            "push credential refused: pushes through this gateway wait; check its key or service account"
        );
        self.board().set(self.gateway, Some(report.clone()));
        *state = Some(Failing {
            report,
            retry_at: now + step,
        });
        PushOutcome::Deferred {
            reason: format!("{} {HEARD}{error}", self.gateway),
            after: step,
        }
    }

    /// The credential was replaced (its file changed): the next push tries
    /// it now instead of waiting out the old one's backoff step. The
    /// failure stays reported until a push is accepted.
    pub fn retry_now(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = state.as_mut() {
            f.retry_at = Instant::now();
        }
    }

    /// The credential worked: clears a failure, saying so once.
    pub fn accepted(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = state.take() {
            tracing::warn!(
                gateway = self.gateway,
                failures = f.report.failures,
                since = %f.report.since.to_rfc3339(),
                "push credential accepted again"
            );
            self.board().set(self.gateway, None);
        }
    }
}

/// What follows the gateway's name in the reason of a push whose
/// credential the gateway refused just now ([`CredentialGate::refused`]),
/// unlike one held by the backoff without being sent.
const HEARD: &str = "credential refused: ";

/// What follows the gateway's name in the reason of a push the
/// credential's backoff held without sending it ([`CredentialGate::blocked`]).
const HELD: &str = "credential refused, next try in ";

/// Whether a deferred push's reason is a refusal the gateway answered (it
/// was reached), not a push held by the credential's backoff.
pub fn refusal_heard(reason: &str) -> bool {
    reason
        .split_once(' ')
        .is_some_and(|(_, rest)| rest.starts_with(HEARD))
}

/// Whether a deferred push's reason is the credential's backoff holding it
/// unsent (the gateway's last refusal follows, but this push heard none).
pub fn held_unsent(reason: &str) -> bool {
    reason
        .split_once(' ')
        .is_some_and(|(_, rest)| rest.starts_with(HELD))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_back_off_one_step_each_and_show_on_the_board_until_accepted() {
        let board = CredentialBoard::default();
        let gate = CredentialGate::new("fcm");
        gate.report_to(&board);
        assert!(gate.blocked().is_none());
        let PushOutcome::Deferred { after, .. } = gate.refused("OAuth token refused: 400") else {
            panic!()
        };
        assert_eq!(after, Duration::from_secs(1));
        // A second refusal within the step (a push already in flight) does
        // not add a step.
        let PushOutcome::Deferred { after, .. } = gate.refused("again") else {
            panic!()
        };
        assert!(after <= Duration::from_secs(1));
        assert!(matches!(gate.blocked(), Some(PushOutcome::Deferred { .. })));
        let failing = board.failing();
        assert_eq!(failing["fcm"].failures, 1);
        assert!(failing["fcm"].error.contains("400"));
        gate.accepted();
        assert!(board.failing().is_empty());
        assert!(gate.blocked().is_none());
    }
}
