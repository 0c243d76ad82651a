//! What an operator watches: a trace line per request (tower-http: method,
//! path template, status, latency; never a token, a body or a query), the
//! request-latency histogram, and `/metrics` in Prometheus' text format:
//!
//! - `qp_questions{state}`: questions by state (read from the database);
//! - `qp_waiters_parked`: long-polls parked right now;
//! - `qp_push_queue_depth`, `qp_push_failed`: push jobs queued / failed;
//! - `qp_webhook_queue_depth`, `qp_webhook_failed`: webhook deliveries
//!   pending / given up;
//! - `qp_http_request_duration_seconds{method,route,status}`: a histogram;
//! - `qp_push_latency_seconds{gateway}`, `qp_push_in_flight{gateway}`,
//!   `qp_push_outcomes_total{gateway,outcome,reason}`: the push worker's
//!   (`push::metrics`, fixed label values);
//! - `qp_db_round_trips_total{operation}`: database statements sent, by
//!   operation (`store::round_trips`).
//!
//! Every label takes a bounded set of values (a method outside the standard
//! ones is `OTHER`, a path no route matches is `unmatched`), so requests,
//! however odd, cannot add series. The database counts are cached for
//! [`COUNTS_MAX_AGE`] and refreshed by one scrape at a time, so scrapers
//! cannot queue full-table counts on the database thread. `/metrics` takes
//! `Authorization: Bearer <metrics_token>` when one is set; without one it
//! answers loopback clients only (a request a proxy forwarded is not one),
//! and nobody behind a proxy or with trusted proxies set (every client
//! arrives from the proxy's address there).
//!
//! `/healthz` answers 200 only when the database answers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, MatchedPath, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::app::App;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: String,
    status: u16,
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
    /// The database counts of the last refresh; the async lock makes
    /// concurrent scrapes wait for one refresh instead of each running one.
    counts: tokio::sync::Mutex<Option<(Instant, Counts)>>,
    /// The push worker's latency, in-flight and outcome metrics (fixed
    /// labels: see `push::metrics`).
    pub push: crate::push::metrics::PushMetrics,
}

/// How long the database counts of `/metrics` are reused: below the usual
/// scrape interval (15 s), far above what a database thread should spend.
pub const COUNTS_MAX_AGE: Duration = Duration::from_secs(10);

/// The method as a label: the standard ones by name, anything else `OTHER`
/// (a custom method is any token up to the header limit, and each one would
/// be a series kept forever).
pub fn method_label(m: &Method) -> &'static str {
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::PATCH, "PATCH"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    KNOWN
        .iter()
        .find(|(k, _)| k == m)
        .map_or("OTHER", |(_, name)| name)
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
            round_trips: Family::default(),
            parked: AtomicI64::new(0),
            connections: AtomicI64::new(0),
            connections_gauge: Gauge::default(),
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

/// Records a request's latency under its route template (the middleware
/// is `http::layers::Record`).
pub fn record_done(
    app: &App,
    started: Instant,
    method: &'static str,
    route: Option<&MatchedPath>,
    resp: &Response,
) {
    app.metrics
        .latency
        .get_or_create(&RouteLabels {
            method,
            route: route.map_or("unmatched", |p| p.as_str()).to_string(),
            status: resp.status().as_u16(),
        })
        .observe(started.elapsed().as_secs_f64());
}

/// Questions per state, and the push and webhook queue counts.
type Counts = (Vec<(String, i64)>, [i64; 4]);

/// Whether this client may read `/metrics` (see the module's notes).
fn may_scrape(
    settings: &crate::config::Settings,
    client: SocketAddr,
    headers: &HeaderMap,
) -> Result<(), super::error::ApiError> {
    use super::error::ApiError;
    match &settings.metrics_token {
        Some(token) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            // Compared as digests, so the time taken says nothing about
            // how much of the token a guess got right.
            use sha2::{Digest, Sha256};
            if Sha256::digest(given.as_bytes()) == Sha256::digest(token.as_bytes()) {
                Ok(())
            } else {
                Err(ApiError::unauthorized(
                    "/metrics needs Authorization: Bearer with the server's metrics token (metrics_token)",
                ))
            }
        }
        None if !settings.behind_proxy
            && settings.trusted_proxies.is_empty()
            && !forwarded(headers)
            && client.ip().to_canonical().is_loopback() =>
        {
            Ok(())
        }
        None => Err(ApiError::forbidden(
            "metrics_forbidden",
            "/metrics answers loopback clients only; set metrics_token (--metrics-token) to scrape it from elsewhere or behind a proxy",
        )),
    }
}

/// Whether a proxy forwarded this request. A proxy on the same host that
/// forwards to the loopback listener needs no --behind-proxy, and then
/// every client it forwards arrives from loopback; a trusted proxy that
/// passes a client's `X-Forwarded-For: 127.0.0.1` through makes the client
/// "loopback" too. So "loopback only" means a request from loopback that
/// no proxy forwarded, with no trusted proxies configured (issue 32,
/// finding 3).
fn forwarded(headers: &HeaderMap) -> bool {
    ["forwarded", "x-forwarded-for", "x-real-ip"]
        .iter()
        .any(|h| headers.contains_key(*h))
}

/// The database counts: cached ones while fresh, else one refresh (other
/// scrapes meanwhile wait for it and share it).
async fn counts(app: &App) -> Result<Counts, super::error::ApiError> {
    let mut cached = app.metrics.counts.lock().await;
    if let Some((at, counts)) = cached.as_ref() {
        if at.elapsed() < COUNTS_MAX_AGE {
            return Ok(counts.clone());
        }
    }
    let fresh = count_in_database(app).await?;
    *cached = Some((Instant::now(), fresh.clone()));
    Ok(fresh)
}

async fn count_in_database(app: &App) -> Result<Counts, super::error::ApiError> {
    Ok(app
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
        .await?)
}

/// `GET /metrics`: the Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition (version 0.0.4)", content_type = "text/plain"),
        (status = 401, description = "A metrics token is set and this request does not carry it", body = super::openapi::ErrorBody),
        (status = 403, description = "No metrics token is set and the client is not on loopback, or the server is behind a proxy (`metrics_forbidden`)", body = super::openapi::ErrorBody)),
    security((), ("bearer" = [])))]
pub async fn metrics(
    State(app): State<Arc<App>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, super::error::ApiError> {
    may_scrape(&app.settings, client, &headers)?;
    let counts = counts(&app).await?;
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
    let registry = m.registry.lock().unwrap();
    // Under the registry's lock: two scrapes must not both add the same delta.
    for (op, n) in app.db.round_trips.snapshot() {
        let c = m.round_trips.get_or_create(&OpLabels {
            operation: op.as_str(),
        });
        c.inc_by(n.saturating_sub(c.get()));
    }
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)
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
