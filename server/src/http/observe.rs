//! What an operator watches: a trace line per request (tower-http: method,
//! path template, status, latency; never a token, a body or a query), the
//! request-latency histogram, and `/metrics` in Prometheus' text format:
//!
//! - `qp_questions{state}`: questions by state (read from the database);
//! - `qp_waiters_parked`: long-polls parked right now;
//! - `qp_push_queue_depth`, `qp_push_failed`: push jobs queued / failed;
//! - `qp_webhook_queue_depth`, `qp_webhook_failed`: webhook deliveries
//!   pending / given up;
//! - `qp_http_request_duration_seconds{method,route,status}`: a histogram.
//!
//! `/healthz` answers 200 only when the database answers.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::app::App;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
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
    /// Long-polls parked now (waits and dev inboxes).
    pub parked: AtomicI64,
    /// Client connections open now.
    pub connections: AtomicI64,
    connections_gauge: Gauge,
}

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
            parked: AtomicI64::new(0),
            connections: AtomicI64::new(0),
            connections_gauge: Gauge::default(),
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

/// Middleware: records every request's latency under its route template.
pub async fn record(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    // Cheap handles while the request is in flight (long-polls park here);
    // the label strings are made once it is done.
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let resp = next.run(req).await;
    app.metrics
        .latency
        .get_or_create(&RouteLabels {
            method: method.as_str().to_string(),
            route: route
                .as_ref()
                .map_or("unmatched", |p| p.as_str())
                .to_string(),
            status: resp.status().as_u16(),
        })
        .observe(started.elapsed().as_secs_f64());
    resp
}

/// Questions per state, and the push and webhook queue counts.
type Counts = (Vec<(String, i64)>, [i64; 4]);

/// `GET /metrics`: the Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition (version 0.0.4)", content_type = "text/plain")))]
pub async fn metrics(State(app): State<Arc<App>>) -> Result<Response, super::error::ApiError> {
    let counts = app
        .db
        .run(|conn| -> crate::store::DbResult<Counts> {
            let states = conn.query_map(
                "SELECT state, COUNT(*) FROM questions GROUP BY state",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let one = |sql: &str| conn.query_row(sql, &[], |r| r.get::<i64>(0));
            Ok((
                states,
                [
                    one("SELECT COUNT(*) FROM push_jobs WHERE state = 'queued'")?,
                    one("SELECT COUNT(*) FROM push_jobs WHERE state = 'failed'")?,
                    one("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'")?,
                    one("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'failed'")?,
                ],
            ))
        })
        .await?;
    let m = &app.metrics;
    for state in ["pending", "answered", "expired", "cancelled"] {
        let n = counts
            .0
            .iter()
            .find(|(s, _)| s == state)
            .map_or(0, |(_, n)| *n);
        m.questions
            .get_or_create(&StateLabels {
                state: state.into(),
            })
            .set(n);
    }
    m.waiters.set(m.parked.load(Ordering::Relaxed));
    m.connections_gauge
        .set(m.connections.load(Ordering::Relaxed));
    m.push_queued.set(counts.1[0]);
    m.push_failed.set(counts.1[1]);
    m.webhook_pending.set(counts.1[2]);
    m.webhook_failed.set(counts.1[3]);
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &m.registry.lock().unwrap())
        .map_err(|_| super::error::ApiError::internal())?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response())
}

/// `GET /healthz`: 200 "ok" when the database answers, else 503.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "ok", content_type = "text/plain"),
        (status = 503, description = "The database does not answer", body = super::openapi::ErrorBody)))]
pub async fn healthz(State(app): State<Arc<App>>) -> Response {
    let ok = app
        .db
        .run(|conn| conn.query_row("SELECT 1", &[], |r| r.get::<i64>(0)))
        .await;
    match ok {
        Ok(1) => (StatusCode::OK, "ok").into_response(),
        _ => super::error::ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the database does not answer",
        )
        .into_response(),
    }
}
