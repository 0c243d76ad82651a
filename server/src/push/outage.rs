//! A gateway down for a while (APNs or FCM answering 5xx or throttling,
//! unreachable, going away), told apart from a push that fails: the
//! attempt budget ([`super::PUSH_MAX_ATTEMPTS`]) is for faults of the push
//! itself, and a one- or two-minute outage must not spend it.
//!
//! Each gateway has a circuit; Web Push has one per push service (its
//! origin, [`circuit_of`]: browsers use different services, and one down
//! says nothing of the others). A transport reports a gateway fault as
//! [`PushOutcome::Unavailable`]. An isolated one (a hanging answer for one
//! device, a single 503) is a retry that spends an attempt, like a failure:
//! without that, a push that always makes the gateway fail would be tried
//! until its question expires. After [`OUTAGE_AFTER`] gateway faults in a
//! row with no other answer between them, the gateway is in an outage:
//! every push through it is held back without spending an attempt (the
//! worker does not even send it) for a backoff step ([`OUTAGE_BACKOFF`],
//! at least the gateway's `Retry-After`), after which pushes go again; the
//! first answer that is not a gateway fault ends the outage: a throttle
//! (429) answered during an outage is one (the gateway is reachable; the
//! push goes again after its Retry-After), and so is a credential refusal
//! (the gateway answered; the credential's gate holds the pushes from
//! then on, so the circuit never waits on a probe the gate keeps). A push held
//! this way is never held past its deadline (the question's expiry; a
//! resolution's day): then it fails, saying why.
//!
//! Shown as `qp_push_gateway_outage{gateway}` (1 during one; for
//! `web_push`, how many push services are in one),
//! `qp_push_gateway_outages_total{gateway}`, the held pushes as
//! `qp_push_outcomes_total{outcome="deferred",reason="outage"}`, and a warn
//! line when an outage starts, at each longer step, and when it ends.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qp_core::retry::RetryPolicy;

use super::PushOutcome;

/// Gateway faults in a row (no other answer between) that make an outage.
pub const OUTAGE_AFTER: u32 = 3;

/// How long pushes are held at each step of an outage: 1 s doubling to
/// 30 s. Not jittered: the step bounds how long after the gateway is back
/// its pushes still wait (at most one step), and a jitter would double
/// that. The gateway's own `Retry-After`, when longer, wins.
pub const OUTAGE_BACKOFF: RetryPolicy = RetryPolicy {
    min: Duration::from_secs(1),
    max: Duration::from_secs(30),
    factor: 2.0,
    jitter: false,
};

/// What the reason of a held push starts with (the metrics' `outage`),
/// followed by ` (circuit)`: how held pushes are found to release them
/// when the outage ends ([`held_prefix`]).
pub const HELD: &str = "gateway outage";

/// An outage with no gateway fault for this long ends (its gauge goes
/// back to 0), even if no push came to probe it.
pub const QUIET_END: Duration = Duration::from_secs(60);

/// How long, at most, the other pushes wait for a probe that says
/// nothing about the gateway (cut off, held by a credential backoff)
/// before another push may probe.
pub const PROBE_WAIT: Duration = Duration::from_secs(30);

/// What the reason of every push held for `circuit` starts with.
pub fn held_prefix(circuit: &str) -> String {
    format!("{HELD} ({circuit})")
}

/// The circuit a held push's reason names ([`held_prefix`]), if it is one.
pub fn held_circuit(reason: &str) -> Option<&str> {
    let rest = reason.strip_prefix(HELD)?.strip_prefix(" (")?;
    rest.split_once("):").map(|(circuit, _)| circuit)
}

#[derive(Default)]
struct Circuit {
    /// Gateway faults since the last other answer.
    faults_in_a_row: u32,
    /// Steps of the current outage (0: none).
    steps: u32,
    /// Pushes are held until then.
    held_until: Option<Instant>,
    since: Option<Instant>,
    /// Once a step is over, the one push let through to probe the gateway
    /// is out until then (the others stay held).
    probe_until: Option<Instant>,
    last_fault: Option<Instant>,
}

/// The circuit a push goes through: its gateway; for Web Push its gateway
/// and push service; for APNs the environment its device names (the
/// sandbox and production are separate services), else the server's
/// default APNs.
pub fn circuit_of(gateway: &'static str, m: &super::PushMessage) -> String {
    use qp_core::protocol::device::ApnsEnvironment;
    match gateway {
        "web_push" => match super::webpush::service_origin(&m.device.push_token) {
            Some(origin) => format!("{gateway} {origin}"),
            None => gateway.to_string(),
        },
        "apns" => match m
            .device
            .apns_environment
            .as_deref()
            .and_then(ApnsEnvironment::parse)
        {
            Some(env) => format!("{gateway} {}", env.as_str()),
            None => gateway.to_string(),
        },
        _ => gateway.to_string(),
    }
}

/// Every circuit, shared by the worker's sends.
#[derive(Default)]
pub struct Outages {
    circuits: Mutex<HashMap<String, Circuit>>,
    /// Circuits whose outage a gateway's answer ended since the worker
    /// last looked ([`Outages::take_ended`]): their held pushes go at once.
    ended: Mutex<Vec<String>>,
    /// `qp_push_gateway_outage` and `qp_push_gateway_outages_total`.
    counts: crate::metrics::push::OutageCounts,
    /// What `/readyz` shows of them.
    board: crate::health::PushOutages,
}

impl Outages {
    /// The circuits of a worker, counted into `/metrics`' outage series.
    pub fn new(counts: crate::metrics::push::OutageCounts) -> Self {
        Outages {
            counts,
            ..Default::default()
        }
    }

    /// Shows its outages on `board` (the server's `/readyz`).
    pub fn reporting_to(self, board: crate::health::PushOutages) -> Self {
        Outages { board, ..self }
    }

    fn circuits(&self) -> std::sync::MutexGuard<'_, HashMap<String, Circuit>> {
        self.circuits.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Before a send: while an outage step runs, the push's outcome without
    /// sending it (held to the step's end, no attempt spent). Once a step
    /// is over, one push goes as the probe (None); the others stay held
    /// until it answers (a success releases them at once:
    /// [`Outages::take_ended`]), at most a further step.
    pub fn held(&self, circuit: &str) -> Option<PushOutcome> {
        self.held_at(circuit, Instant::now())
    }

    fn held_at(&self, circuit: &str, now: Instant) -> Option<PushOutcome> {
        self.end_quiet_at(now);
        let mut circuits = self.circuits();
        let c = circuits.get_mut(circuit)?;
        c.since?;
        let until = c.held_until?;
        let left = if until > now {
            until - now
        } else if c.probe_until.is_some_and(|p| p > now) {
            // A probe is out: the next step's length, unless it succeeds.
            OUTAGE_BACKOFF.delay(c.steps + 1)
        } else {
            c.probe_until = Some(now + PROBE_WAIT);
            return None;
        };
        Some(PushOutcome::Deferred {
            reason: format!(
                "{}: unavailable, next try in {} ms",
                held_prefix(circuit),
                left.as_millis()
            ),
            after: left,
        })
    }

    /// Ends the outages with no fault for [`QUIET_END`] (no push came to
    /// probe them): their gauges go back to 0.
    pub fn end_quiet(&self) {
        self.end_quiet_at(Instant::now())
    }

    fn end_quiet_at(&self, now: Instant) {
        let mut circuits = self.circuits();
        for (circuit, c) in circuits.iter_mut() {
            let quiet = c
                .last_fault
                .is_some_and(|f| now.saturating_duration_since(f) >= QUIET_END);
            if c.since.is_some() && quiet {
                let gateway = gateway_of_circuit(circuit);
                tracing::warn!(
                    gateway,
                    circuit = circuit.as_str(),
                    quiet_ms = QUIET_END.as_millis() as u64,
                    "push gateway outage over: no fault since"
                );
                self.counts.ended(gateway);
                self.board.set(circuit, None);
                *c = Circuit::default();
            }
        }
    }

    /// Whether `circuit` is in an outage now (a probe out included).
    pub fn in_outage(&self, circuit: &str) -> bool {
        self.circuits()
            .get(circuit)
            .is_some_and(|c| c.since.is_some())
    }

    /// The circuits whose outage ended by an answer since the last call:
    /// the worker releases their held pushes at once.
    pub fn take_ended(&self) -> Vec<String> {
        std::mem::take(&mut *self.ended.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// After a send: a gateway fault counts toward an outage (and, in one,
    /// holds the push without spending an attempt); any other answer ends
    /// the outage. Returns the outcome to record.
    /// `gateway` labels the metrics; `circuit` ([`circuit_of`]) is what
    /// the outage is of.
    pub fn judge(&self, gateway: &'static str, circuit: &str, outcome: PushOutcome) -> PushOutcome {
        match outcome {
            // A throttle in an outage: the gateway is reachable again, and
            // its Retry-After (else the push backoff) paces this push.
            PushOutcome::Unavailable { reason, after }
                if self.in_outage(circuit) && is_throttle(&reason) =>
            {
                self.throttled(gateway, circuit);
                PushOutcome::Retry { reason, after }
            }
            PushOutcome::Unavailable { reason, after } => {
                match self.fault(gateway, circuit, &reason, after) {
                    Some(hold) => PushOutcome::Deferred {
                        reason: format!("{}: {reason}", held_prefix(circuit)),
                        after: hold,
                    },
                    None => PushOutcome::Retry { reason, after },
                }
            }
            // Written and never answered: a fault of the gateway, but the
            // push may be delivered, so it spends an attempt whatever the
            // circuit says. Unless the claim's cut-off ended it: this
            // instance may have stalled, which says nothing of the gateway.
            PushOutcome::NoAnswer {
                ref reason,
                cut_off: false,
            } => {
                self.fault(gateway, circuit, reason, None);
                outcome
            }
            // The gateway answered: it works.
            PushOutcome::Sent | PushOutcome::DeviceGone => {
                self.answered(gateway, circuit);
                outcome
            }
            PushOutcome::Failed(ref text)
                if super::metrics::answer_in(text).is_some()
                    || text.starts_with(super::webpush::ANSWERED) =>
            {
                self.answered(gateway, circuit);
                outcome
            }
            // The credential refused: the gateway answered, so it is not
            // down; the credential's gate holds its pushes from now on.
            PushOutcome::Deferred { ref reason, .. }
                if super::credentials::refusal_heard(reason) =>
            {
                self.answered(gateway, circuit);
                outcome
            }
            // Throttling of one device (APNs `TooManyRequests`) or of the
            // provider token's refresh: the gateway answered, so it works
            // (a probe that meets one ends the outage, rather than leave
            // every held push waiting `PROBE_WAIT` for another probe); and
            // never a fault of the gateway.
            // A push the credential's backoff held unsent carries the
            // gateway's last answer in its reason, but heard none itself.
            PushOutcome::Retry { ref reason, .. } | PushOutcome::Deferred { ref reason, .. }
                if is_throttle(reason)
                    && held_circuit(reason).is_none()
                    && !super::credentials::held_unsent(reason) =>
            {
                self.answered(gateway, circuit);
                outcome
            }
            // Never reached the gateway (held, not pending any more, a
            // payload that cannot be encoded), or not from APNs or FCM:
            // says nothing about it.
            other => other,
        }
    }

    /// One gateway fault: the hold, if the gateway is in an outage now.
    fn fault(
        &self,
        gateway: &'static str,
        circuit: &str,
        reason: &str,
        after: Option<Duration>,
    ) -> Option<Duration> {
        let mut circuits = self.circuits();
        let c = circuits.entry(circuit.to_string()).or_default();
        c.faults_in_a_row += 1;
        if c.faults_in_a_row < OUTAGE_AFTER {
            return None;
        }
        let now = Instant::now();
        c.last_fault = Some(now);
        if let Some(until) = c.held_until.filter(|u| *u > now) {
            // Another push of the same moment: one step each.
            return Some(until - now);
        }
        c.steps += 1;
        c.probe_until = None;
        let step = OUTAGE_BACKOFF.delay(c.steps).max(after.unwrap_or_default());
        c.held_until = Some(now + step);
        let since = *c.since.get_or_insert(now);
        if c.steps == 1 {
            self.counts.started(gateway);
        }
        self.board.set(
            circuit,
            Some(crate::health::OutageReport {
                gateway,
                since: chrono::Utc::now()
                    - chrono::Duration::from_std(now - since)
                        .unwrap_or_else(|_| chrono::Duration::zero()),
                error: reason.to_string(),
            }),
        );
        tracing::warn!(
            gateway,
            circuit,
            error = reason,
            faults_in_a_row = c.faults_in_a_row,
            step = c.steps,
            down_for_ms = now.duration_since(since).as_millis() as u64,
            hold_ms = step.as_millis() as u64,
            "push gateway unavailable: its pushes wait without spending attempts"
        );
        Some(step)
    }

    /// An answer that is not a gateway fault: the gateway works.
    fn answered(&self, gateway: &'static str, circuit: &str) {
        self.end(gateway, circuit, true);
    }

    /// A throttle of the whole gateway answered (FCM's project quota): the
    /// gateway is reachable, so the outage ends, but the pushes it held go
    /// at the end of their step, not at once: released now, they would all
    /// meet the throttle that just answered and spend an attempt each. (One
    /// device's throttling, APNs `TooManyRequests`, says nothing of the
    /// others: that answer releases them.)
    fn throttled(&self, gateway: &'static str, circuit: &str) {
        self.end(gateway, circuit, false);
    }

    /// Ends `circuit`'s outage, if any; `release`: its held pushes go now.
    fn end(&self, gateway: &'static str, circuit: &str, release: bool) {
        let mut circuits = self.circuits();
        let Some(c) = circuits.get_mut(circuit) else {
            return;
        };
        c.faults_in_a_row = 0;
        if let Some(since) = c.since.take() {
            tracing::warn!(
                gateway,
                circuit,
                steps = c.steps,
                down_for_ms = since.elapsed().as_millis() as u64,
                held_pushes_go = if release {
                    "now"
                } else {
                    "at their step's end (throttled)"
                },
                "push gateway answering again"
            );
            self.counts.ended(gateway);
            self.board.set(circuit, None);
            if release {
                self.ended
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(circuit.to_string());
            }
        }
        c.steps = 0;
        c.held_until = None;
        c.probe_until = None;
        c.last_fault = None;
    }
}

/// Whether a gateway fault's reason is a throttle (a 429: the gateway
/// answered, only asking to slow down).
fn is_throttle(reason: &str) -> bool {
    super::metrics::answer_in(reason).is_some_and(|r| r.status == 429)
}

/// The gateway a circuit is of (its first word, [`circuit_of`]).
fn gateway_of_circuit(circuit: &str) -> &'static str {
    match circuit.split(' ').next() {
        Some("apns") => "apns",
        Some("fcm") => "fcm",
        Some("web_push") => "web_push",
        _ => "none",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down(after: Option<Duration>) -> PushOutcome {
        PushOutcome::Unavailable {
            reason: "APNs 503 ServiceUnavailable".into(),
            after,
        }
    }

    #[test]
    fn faults_in_a_row_hold_pushes_without_attempts_until_an_answer() {
        let o = Outages::default();
        // Isolated faults are retries: they spend an attempt.
        for _ in 1..OUTAGE_AFTER {
            assert!(matches!(
                o.judge("apns", "apns", down(None)),
                PushOutcome::Retry { .. }
            ));
        }
        assert!(o.held("apns").is_none());
        // The next one makes an outage: held, and so is every push now.
        let PushOutcome::Deferred { after, reason } =
            o.judge("apns", "apns", down(Some(Duration::from_secs(3))))
        else {
            panic!()
        };
        assert!(reason.starts_with(HELD), "{reason}");
        assert!(
            after >= Duration::from_secs(3),
            "Retry-After wins when longer"
        );
        assert!(matches!(o.held("apns"), Some(PushOutcome::Deferred { .. })));
        assert!(o.held("fcm").is_none(), "per gateway");
        assert_eq!(o.counts.open("apns"), 1);
        // An answer ends it.
        assert_eq!(
            o.judge("apns", "apns", PushOutcome::Sent),
            PushOutcome::Sent
        );
        assert!(o.held("apns").is_none());
        assert_eq!(o.counts.open("apns"), 0);
        assert!(matches!(
            o.judge("apns", "apns", down(None)),
            PushOutcome::Retry { .. }
        ));
    }

    /// The probe of an outage may be a device APNs throttles (`429
    /// TooManyRequests`, its own retry): APNs answered, so the outage ends
    /// and the held pushes go, instead of waiting `PROBE_WAIT` for another
    /// probe. `/readyz`'s board shows the outage while it lasts.
    #[test]
    fn a_probe_answered_with_a_devices_throttling_ends_the_outage() {
        let board = crate::health::PushOutages::default();
        let o = Outages::default().reporting_to(board.clone());
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns", down(None));
        }
        assert!(o.in_outage("apns"));
        let shown = board.open();
        assert_eq!(shown["apns"].gateway, "apns");
        assert!(shown["apns"].error.contains("503"), "{shown:?}");
        let throttled = PushOutcome::Retry {
            reason: "APNs 429 TooManyRequests".into(),
            after: Some(Duration::from_secs(1)),
        };
        assert_eq!(o.judge("apns", "apns", throttled.clone()), throttled);
        assert!(!o.in_outage("apns"));
        assert!(o.held("apns").is_none());
        assert_eq!(o.take_ended(), ["apns"]);
        assert!(board.open().is_empty());
        // A held push's reason names the fault it was held for: not an
        // answer.
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns", down(None));
        }
        let held = PushOutcome::Deferred {
            reason: format!("{}: APNs 429 TooManyRequests", held_prefix("apns")),
            after: Duration::from_secs(1),
        };
        o.judge("apns", "apns", held);
        assert!(o.in_outage("apns"));
    }

    /// A push failed before it reached the gateway (its question resolved,
    /// a payload that cannot be encoded) does not end an outage; a
    /// gateway's refusal of one push does.
    #[test]
    fn only_an_answer_of_the_gateway_ends_an_outage() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns", down(None));
        }
        assert!(o.held("apns").is_some());
        let not_sent = "question no longer pending (answered): not sent";
        o.judge("apns", "apns", PushOutcome::Failed(not_sent.into()));
        assert!(o.held("apns").is_some());
        o.judge(
            "apns",
            "apns",
            PushOutcome::Failed("APNs 400 BadTopic".into()),
        );
        assert!(o.held("apns").is_none());
    }

    /// A probe answered with a throttle (429) ends the outage: the gateway
    /// is reachable, and the push goes again after its Retry-After,
    /// spending an attempt like any throttled push.
    #[test]
    fn a_probe_answered_with_a_throttle_ends_the_outage() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("fcm", "fcm", down(None));
        }
        assert!(o.in_outage("fcm"));
        let throttled = PushOutcome::Unavailable {
            reason: "FCM 429 QUOTA_EXCEEDED".into(),
            after: Some(Duration::from_secs(7)),
        };
        let out = o.judge("fcm", "fcm", throttled);
        assert!(!o.in_outage("fcm"), "still in an outage");
        assert!(o.held("fcm").is_none());
        assert_eq!(
            out,
            PushOutcome::Retry {
                reason: "FCM 429 QUOTA_EXCEEDED".into(),
                after: Some(Duration::from_secs(7)),
            }
        );
        assert!(
            o.take_ended().is_empty(),
            "the held pushes were released into the throttle"
        );
    }

    /// A push the credential's backoff held unsent carries the gateway's
    /// last answer, a 429 among them: it heard nothing, so the outage stays.
    #[test]
    fn a_push_held_by_the_credential_backoff_after_a_429_leaves_the_outage() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns", down(None));
        }
        let held = PushOutcome::Deferred {
            reason: "apns credential refused, next try in 900 ms: APNs 429 \
                     TooManyProviderTokenUpdates"
                .into(),
            after: Duration::from_millis(900),
        };
        assert!(crate::push::credentials::held_unsent(match &held {
            PushOutcome::Deferred { reason, .. } => reason,
            _ => unreachable!(),
        }));
        o.judge("apns", "apns", held);
        assert!(o.in_outage("apns"), "a push never sent ended the outage");
    }

    /// A probe whose credential is refused ends the outage (the gateway
    /// answered; the credential's gate holds the pushes now); a push held
    /// by the credential's backoff, never sent, leaves it as it is.
    #[test]
    fn a_credential_refusal_ends_the_outage_and_a_held_push_does_not() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns", down(None));
        }
        let held = PushOutcome::Deferred {
            reason: "apns credential refused, next try in 900 ms: APNs 403 InvalidProviderToken"
                .into(),
            after: Duration::from_millis(900),
        };
        o.judge("apns", "apns", held);
        assert!(o.in_outage("apns"), "a push never sent ended the outage");
        let gate = crate::push::credentials::CredentialGate::new("apns");
        let refused = gate.refused("APNs 403 InvalidProviderToken: provider token refused");
        o.judge("apns", "apns", refused);
        assert!(!o.in_outage("apns"), "still in an outage");
    }

    /// Browsers use different push services: one down holds only its own
    /// pushes, and the gauge counts the services in an outage.
    #[test]
    fn each_web_push_service_has_its_own_circuit() {
        let o = Outages::default();
        let mozilla = "web_push https://updates.push.services.mozilla.com";
        let google = "web_push https://fcm.googleapis.com";
        let down = || PushOutcome::Unavailable {
            reason: "push service answered 503".into(),
            after: None,
        };
        for _ in 0..OUTAGE_AFTER {
            o.judge("web_push", mozilla, down());
        }
        assert!(o.held(mozilla).is_some());
        assert!(o.held(google).is_none());
        for _ in 0..OUTAGE_AFTER {
            o.judge("web_push", google, down());
        }
        let open = || o.counts.open("web_push");
        assert_eq!(open(), 2);
        // A refusal of one push is an answer of the service.
        o.judge(
            "web_push",
            google,
            PushOutcome::Failed("push service answered 400".into()),
        );
        assert!(o.held(google).is_none());
        assert!(o.held(mozilla).is_some());
        assert_eq!(open(), 1);
    }

    fn open_of(o: &Outages, gateway: &'static str) -> i64 {
        o.counts.open(gateway)
    }

    /// Once a step is over, one push probes the gateway and the others stay
    /// held; its success ends the outage and names the circuit whose held
    /// pushes go at once.
    #[test]
    fn one_probe_per_step_and_its_answer_releases_the_held_pushes() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns", down(None));
        }
        let over = Instant::now() + OUTAGE_BACKOFF.delay(1) + Duration::from_millis(10);
        assert!(o.held_at("apns", over).is_none(), "the probe goes");
        for _ in 0..5 {
            assert!(
                matches!(o.held_at("apns", over), Some(PushOutcome::Deferred { .. })),
                "the others wait for the probe"
            );
        }
        assert!(o.take_ended().is_empty());
        o.judge("apns", "apns", PushOutcome::Sent);
        assert_eq!(o.take_ended(), ["apns"]);
        assert!(o.take_ended().is_empty(), "once");
        assert!(o.held_at("apns", over).is_none());
        assert_eq!(open_of(&o, "apns"), 0);
    }

    /// A failed probe starts the next, longer step; its pushes are held
    /// with the reason that names the circuit (how they are released).
    /// A held push's reason names its circuit, so the pushes held for an
    /// outage that has ended by the time they are recorded can be found.
    #[test]
    fn a_held_pushs_reason_names_its_circuit() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("web_push", "web_push https://push.example", down(None));
        }
        let Some(PushOutcome::Deferred { reason, .. }) = o.held("web_push https://push.example")
        else {
            panic!("not held")
        };
        assert_eq!(held_circuit(&reason), Some("web_push https://push.example"));
        assert!(o.in_outage("web_push https://push.example"));
        assert_eq!(held_circuit("APNs 503 ServiceUnavailable"), None);
        o.judge(
            "web_push",
            "web_push https://push.example",
            PushOutcome::Sent,
        );
        assert!(!o.in_outage("web_push https://push.example"));
    }

    #[test]
    fn a_failed_probe_starts_the_next_step() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns", down(None));
        }
        let over = Instant::now() + OUTAGE_BACKOFF.delay(1) + Duration::from_millis(10);
        assert!(o.held_at("apns", over).is_none());
        // The probe fails (judged now, before `over`: still the first step
        // for the clock, so this test only checks the reason and the hold).
        let PushOutcome::Deferred { reason, .. } = o.judge("apns", "apns", down(None)) else {
            panic!()
        };
        assert!(reason.starts_with(&held_prefix("apns")), "{reason}");
    }

    /// An outage nobody probes (no pushes) ends after `QUIET_END` without
    /// a fault: the gauge does not stay at 1.
    #[test]
    fn an_outage_with_no_fault_for_a_minute_ends() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("fcm", "fcm", down(None));
        }
        assert_eq!(open_of(&o, "fcm"), 1);
        o.end_quiet_at(Instant::now() + QUIET_END - Duration::from_secs(1));
        assert_eq!(open_of(&o, "fcm"), 1);
        o.end_quiet_at(Instant::now() + QUIET_END + Duration::from_millis(10));
        assert_eq!(open_of(&o, "fcm"), 0);
        assert!(o.held("fcm").is_none());
        // Counting starts again from zero.
        assert!(matches!(
            o.judge("fcm", "fcm", down(None)),
            PushOutcome::Retry { .. }
        ));
    }

    /// A claim's cut-off ending a send (this instance stalled) is no fault
    /// of the gateway: however many, no outage. A push the gateway took
    /// without answering is one, but stays a no-answer (it spends an
    /// attempt: it may be delivered).
    #[test]
    fn only_the_gateways_own_silence_feeds_the_circuit() {
        let o = Outages::default();
        let cut = PushOutcome::NoAnswer {
            reason: "no answer within 1500 ms of the claim".into(),
            cut_off: true,
        };
        for _ in 0..10 {
            assert_eq!(o.judge("apns", "apns", cut.clone()), cut);
        }
        assert!(o.held("apns").is_none());
        assert_eq!(open_of(&o, "apns"), 0);
        let silent = PushOutcome::NoAnswer {
            reason: "APNs sent no answer".into(),
            cut_off: false,
        };
        for _ in 0..OUTAGE_AFTER {
            assert_eq!(o.judge("apns", "apns", silent.clone()), silent);
        }
        assert!(o.held("apns").is_some());
    }

    /// APNs's sandbox and production are separate services: one down
    /// holds only its own pushes. `TooManyRequests` (one device's
    /// throttling) is a plain retry and never opens the circuit.
    #[test]
    fn apns_sandbox_and_production_have_their_own_circuits() {
        let o = Outages::default();
        for _ in 0..OUTAGE_AFTER {
            o.judge("apns", "apns sandbox", down(None));
        }
        assert!(o.held("apns sandbox").is_some());
        assert!(o.held("apns production").is_none());
        let throttled = PushOutcome::Retry {
            reason: "APNs 429 TooManyRequests".into(),
            after: None,
        };
        for _ in 0..10 {
            assert_eq!(
                o.judge("apns", "apns production", throttled.clone()),
                throttled
            );
        }
        assert!(o.held("apns production").is_none());
    }

    #[test]
    fn a_device_failure_between_faults_is_an_answer() {
        let o = Outages::default();
        for _ in 0..10 {
            assert!(matches!(
                o.judge("fcm", "fcm", down(None)),
                PushOutcome::Retry { .. }
            ));
            o.judge("fcm", "fcm", PushOutcome::DeviceGone);
        }
        assert!(o.held("fcm").is_none());
    }
}
