//! The push worker's metric families, registered into `/metrics` after the
//! server's own (what each counts, and every value its labels take, is
//! `push::metrics`' to say: push maps its outcomes to these plain labels).
//!
//! - `qp_push_latency_seconds{gateway}`, `qp_push_in_flight{gateway}`;
//! - `qp_push_outcomes_total{gateway,outcome,reason}`,
//!   `qp_push_outcomes_unrecorded_total{gateway,outcome,why}`;
//! - `qp_push_gateway_errors_total{gateway,reason}`;
//! - `qp_push_resent_maybe_delivered_total{gateway,cause}`;
//! - `qp_push_auth_failures_total{gateway}`, `qp_push_credential_failing{gateway}`;
//! - `qp_push_gateway_outage{gateway}`, `qp_push_gateway_outages_total{gateway}`.
//!
//! Each handle is cheap to clone and a clone counts into the same series.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GatewayLabels {
    gateway: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    gateway: &'static str,
    outcome: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UnrecordedLabels {
    gateway: &'static str,
    outcome: &'static str,
    why: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResendLabels {
    gateway: &'static str,
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GatewayErrorLabels {
    gateway: &'static str,
    reason: &'static str,
}

/// The push worker's metric families.
pub struct PushMetrics {
    latency: Family<GatewayLabels, Histogram>,
    in_flight: Family<GatewayLabels, Gauge>,
    outcomes: Family<OutcomeLabels, Counter>,
    unrecorded: Family<UnrecordedLabels, Counter>,
    /// The gateways' error answers (the transports count into it).
    pub gateway_errors: GatewayErrorCounts,
    /// Pushes sent again that the gateway may have accepted.
    pub resends: ResendCounts,
    /// Credential refusals (the transports' gates count into it).
    pub credentials: CredentialCounts,
    /// Gateway outages (the worker's circuits count into it).
    pub outages: OutageCounts,
}

impl Default for PushMetrics {
    fn default() -> Self {
        PushMetrics {
            // 1 ms .. ~65 s.
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 17))
            }),
            in_flight: Default::default(),
            outcomes: Default::default(),
            unrecorded: Default::default(),
            gateway_errors: Default::default(),
            resends: Default::default(),
            credentials: Default::default(),
            outages: Default::default(),
        }
    }
}

/// Counts one push in flight while alive.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl PushMetrics {
    /// Adds the push metrics to `/metrics`' registry (prefix `qp_`).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "push_latency_seconds",
            "Push jobs from queued to accepted by the gateway, per gateway",
            self.latency.clone(),
        );
        r.register(
            "push_in_flight",
            "Pushes sent and not yet answered, per gateway",
            self.in_flight.clone(),
        );
        r.register(
            "push_outcomes",
            "Push outcomes recorded in the queue, by gateway, outcome and reason",
            self.outcomes.clone(),
        );
        r.register(
            "push_outcomes_unrecorded",
            "Push outcomes not written to the queue, by gateway, outcome and why (claim_lost: the job's lease ran out and another claim took it; write_failed: the database refused the batch)",
            self.unrecorded.clone(),
        );
        r.register(
            "push_gateway_errors",
            "APNs and FCM error answers by gateway and documented reason (other: not documented)",
            self.gateway_errors.family.clone(),
        );
        r.register(
            "push_resent_maybe_delivered",
            "Pushes sent again although the gateway may have accepted them (a dead or broken connection, or no answer in time, after the request was written; a job another claim sent too; an accepted push whose outcome could not be written), per gateway and cause",
            self.resends.family.clone(),
        );
        r.register(
            "push_auth_failures",
            "Push credential refusals (token endpoint, FCM 401, APNs 403 provider token), per gateway",
            self.credentials.failures.clone(),
        );
        r.register(
            "push_credential_failing",
            "1 while a gateway's push credential is being refused, per gateway",
            self.credentials.failing.clone(),
        );
        r.register(
            "push_gateway_outage",
            "1 while a push gateway is in an outage (its pushes held without spending attempts), per gateway; for web_push, the push services in one",
            self.outages.open.clone(),
        );
        r.register(
            "push_gateway_outages",
            "Push gateway outages started (gateway faults in a row), per gateway",
            self.outages.started.clone(),
        );
    }

    /// One push sent to `gateway` and not yet answered, while the guard lives.
    pub fn in_flight(&self, gateway: &'static str) -> InFlight {
        let g = self
            .in_flight
            .get_or_create(&GatewayLabels { gateway })
            .clone();
        g.inc();
        InFlight(g)
    }

    /// One outcome written to the queue; `latency_secs` (from queued to
    /// accepted) when it was sent.
    pub fn recorded(
        &self,
        gateway: &'static str,
        outcome: &'static str,
        reason: &'static str,
        latency_secs: Option<f64>,
    ) {
        self.outcomes
            .get_or_create(&OutcomeLabels {
                gateway,
                outcome,
                reason,
            })
            .inc();
        if let Some(secs) = latency_secs {
            self.latency
                .get_or_create(&GatewayLabels { gateway })
                .observe(secs);
        }
    }

    /// One outcome not written, and why.
    pub fn unrecorded(&self, gateway: &'static str, outcome: &'static str, why: &'static str) {
        self.unrecorded
            .get_or_create(&UnrecordedLabels {
                gateway,
                outcome,
                why,
            })
            .inc();
    }
}

/// `qp_push_resent_maybe_delivered_total{gateway,cause}`.
#[derive(Clone, Default)]
pub struct ResendCounts {
    family: Family<ResendLabels, Counter>,
}

impl ResendCounts {
    pub fn count(&self, gateway: &'static str, cause: &'static str) {
        self.family
            .get_or_create(&ResendLabels { gateway, cause })
            .inc();
    }

    /// The count so far (tests).
    pub fn get(&self, gateway: &'static str, cause: &'static str) -> u64 {
        self.family
            .get_or_create(&ResendLabels { gateway, cause })
            .get()
    }
}

/// `qp_push_gateway_errors_total{gateway,reason}`.
#[derive(Clone, Default)]
pub struct GatewayErrorCounts {
    family: Family<GatewayErrorLabels, Counter>,
}

impl GatewayErrorCounts {
    pub fn count(&self, gateway: &'static str, reason: &'static str) {
        self.family
            .get_or_create(&GatewayErrorLabels { gateway, reason })
            .inc();
    }

    /// The count so far (tests).
    pub fn get(&self, gateway: &'static str, reason: &'static str) -> u64 {
        self.family
            .get_or_create(&GatewayErrorLabels { gateway, reason })
            .get()
    }
}

/// `qp_push_auth_failures_total{gateway}` and `qp_push_credential_failing{gateway}`.
#[derive(Clone, Default)]
pub struct CredentialCounts {
    failures: Family<GatewayLabels, Counter>,
    failing: Family<GatewayLabels, Gauge>,
}

impl CredentialCounts {
    /// One refusal: counted, and the gateway shown failing.
    pub fn refused(&self, gateway: &'static str) {
        let gauge = self.failing.get_or_create(&GatewayLabels { gateway });
        self.failures
            .get_or_create(&GatewayLabels { gateway })
            .inc();
        gauge.set(1);
    }

    /// The credential works again.
    pub fn accepted(&self, gateway: &'static str) {
        self.failing
            .get_or_create(&GatewayLabels { gateway })
            .set(0);
    }
}

/// `qp_push_gateway_outage{gateway}` and `qp_push_gateway_outages_total{gateway}`.
#[derive(Clone, Default)]
pub struct OutageCounts {
    open: Family<GatewayLabels, Gauge>,
    started: Family<GatewayLabels, Counter>,
}

impl OutageCounts {
    /// An outage started.
    pub fn started(&self, gateway: &'static str) {
        self.started.get_or_create(&GatewayLabels { gateway }).inc();
        self.open.get_or_create(&GatewayLabels { gateway }).inc();
    }

    /// An outage ended.
    pub fn ended(&self, gateway: &'static str) {
        self.open.get_or_create(&GatewayLabels { gateway }).dec();
    }

    /// The outages open now (tests).
    pub fn open(&self, gateway: &'static str) -> i64 {
        self.open.get_or_create(&GatewayLabels { gateway }).get()
    }
}
