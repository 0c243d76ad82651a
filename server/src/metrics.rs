//! The server's metrics: one Prometheus registry and the handles that feed
//! it (request latency, questions by state, parked long-polls, queues, the
//! push worker's, database round trips, the build). `http::observe` records
//! requests into it and serves it as `/metrics`; the rest of the server
//! only counts.

pub mod push;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use qp_core::protocol::QuestionState;

use crate::store::stats::Counts;
use crate::store::{Db, DbResult};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteLabels {
    pub method: &'static str,
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    operation: &'static str,
}

/// The server's metrics: a registry and the handles that feed it.
pub struct Metrics {
    registry: Mutex<Registry>,
    latency: Family<RouteLabels, Histogram>,
    questions: Family<StateLabels, Gauge>,
    waiters: Gauge,
    push_queued: Gauge,
    push_failed: Gauge,
    webhook_pending: Gauge,
    webhook_failed: Gauge,
    /// `store::round_trips`, brought up to date at each scrape.
    round_trips: Family<OpLabels, Counter>,
    /// Long-polls parked now (waits and dev inboxes).
    pub parked: AtomicI64,
    /// Client connections open now.
    pub connections: AtomicI64,
    connections_gauge: Gauge,
    /// Connections refused because their address held its share
    /// (`max_connections_per_address`).
    pub connections_refused_per_address: Counter,
    /// The database counts of the last refresh; the async lock makes
    /// concurrent scrapes wait for one refresh instead of each running one.
    counts: tokio::sync::Mutex<Option<(Instant, Counts)>>,
    /// The push worker's latency, in-flight, outcome, credential and
    /// outage metrics (fixed labels: see `crate::push::metrics`).
    pub push: push::PushMetrics,
}

/// How long the database counts of `/metrics` are reused: below the usual
/// scrape interval (15 s), far above what a database thread should spend.
pub const COUNTS_MAX_AGE: Duration = Duration::from_secs(10);

impl Default for Metrics {
    fn default() -> Self {
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            // 0.5 ms to ~33 s: long-polls land in the last buckets.
            Histogram::new(exponential_buckets(0.0005, 4.0, 9))
        });
        let m = Metrics {
            registry: Mutex::new(Registry::with_prefix("qp")),
            latency,
            questions: Family::default(),
            waiters: Gauge::default(),
            push_queued: Gauge::default(),
            push_failed: Gauge::default(),
            webhook_pending: Gauge::default(),
            webhook_failed: Gauge::default(),
            round_trips: Family::default(),
            parked: AtomicI64::new(0),
            connections: AtomicI64::new(0),
            connections_gauge: Gauge::default(),
            connections_refused_per_address: Counter::default(),
            counts: tokio::sync::Mutex::new(None),
            push: Default::default(),
        };
        {
            let mut r = m.registry.lock().unwrap();
            r.register("questions", "Questions by state", m.questions.clone());
            r.register("waiters_parked", "Long-polls parked now", m.waiters.clone());
            r.register(
                "connections_open",
                "Client connections open now",
                m.connections_gauge.clone(),
            );
            r.register(
                "connections_refused_per_address",
                "Connections refused because their client address held max_connections_per_address",
                m.connections_refused_per_address.clone(),
            );
            r.register(
                "push_queue_depth",
                "Push jobs queued",
                m.push_queued.clone(),
            );
            r.register("push_failed", "Push jobs given up", m.push_failed.clone());
            r.register(
                "webhook_queue_depth",
                "Webhook deliveries pending",
                m.webhook_pending.clone(),
            );
            r.register(
                "webhook_failed",
                "Webhook deliveries given up",
                m.webhook_failed.clone(),
            );
            r.register(
                "http_request_duration_seconds",
                "HTTP request latency by method, route template and status",
                m.latency.clone(),
            );
            r.register(
                "db_round_trips",
                "Database statements sent (each a round trip on PostgreSQL), by operation",
                m.round_trips.clone(),
            );
            m.push.register(&mut r);
        }
        m
    }
}

/// Counts one of something (a parked long-poll, an open connection) for as
/// long as it lives.
pub struct Counted<'a>(&'a AtomicI64);

impl<'a> Counted<'a> {
    pub fn new(counter: &'a AtomicI64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Counted(counter)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    /// Records one request's latency under its labels.
    pub(crate) fn record_request(&self, labels: &RouteLabels, secs: f64) {
        self.latency.get_or_create(labels).observe(secs);
    }

    /// The database counts: cached ones while fresh, else one refresh
    /// (other scrapes meanwhile wait for it and share it).
    async fn counts(&self, db: &Db) -> DbResult<Counts> {
        let mut cached = self.counts.lock().await;
        if let Some((at, counts)) = cached.as_ref() {
            if at.elapsed() < COUNTS_MAX_AGE {
                return Ok(counts.clone());
            }
        }
        let fresh = db.run(crate::store::stats::counts).await?;
        *cached = Some((Instant::now(), fresh.clone()));
        Ok(fresh)
    }

    /// Every metric in Prometheus' text exposition, brought up to date.
    pub async fn render(&self, db: &Db) -> DbResult<String> {
        let counts = self.counts(db).await?;
        for state in QuestionState::ALL.map(QuestionState::as_str) {
            let n = counts
                .questions
                .iter()
                .find(|(s, _)| s == state)
                .map_or(0, |(_, n)| *n);
            self.questions
                .get_or_create(&StateLabels {
                    state: state.into(),
                })
                .set(n);
        }
        self.waiters.set(self.parked.load(Ordering::Relaxed));
        self.connections_gauge
            .set(self.connections.load(Ordering::Relaxed));
        self.push_queued.set(counts.push_queued);
        self.push_failed.set(counts.push_failed);
        self.webhook_pending.set(counts.webhook_pending);
        self.webhook_failed.set(counts.webhook_failed);
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        // Under the registry's lock: two scrapes must not both add the same delta.
        for (op, n) in db.round_trips.snapshot() {
            let c = self.round_trips.get_or_create(&OpLabels {
                operation: op.as_str(),
            });
            c.inc_by(n.saturating_sub(c.get()));
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        Ok(out)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    commit: &'static str,
    schema: String,
}

impl Metrics {
    /// `qp_build_info{version,commit,schema} 1`: what runs, on which schema
    /// (an upgrade half done shows two values across instances).
    pub fn register_build_info(&self, schema: usize) {
        let info = Family::<BuildLabels, Gauge>::default();
        info.get_or_create(&BuildLabels {
            version: crate::build_info::VERSION,
            commit: crate::build_info::COMMIT,
            schema: schema.to_string(),
        })
        .set(1);
        if let Ok(mut r) = self.registry.lock() {
            r.register(
                "build_info",
                "The running build (version, git commit) and the database's schema version",
                info,
            );
        }
    }
}
