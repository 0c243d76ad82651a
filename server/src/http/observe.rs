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
//! `metrics::COUNTS_MAX_AGE` and refreshed by one scrape at a time, so scrapers
//! cannot queue full-table counts on the database thread. `/metrics` takes
//! `Authorization: Bearer <metrics_token>` when one is set; without one it
//! answers loopback clients only (a request a proxy forwarded is not one),
//! and nobody behind a proxy or with trusted proxies set (every client
//! arrives from the proxy's address there).
//!
//! `/healthz` answers 200 only when the database answers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::app::App;

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

/// Records a request's latency under its route template (the middleware
/// is `http::layers::Record`).
pub fn record_done(
    app: &App,
    started: Instant,
    method: &'static str,
    route: Option<&MatchedPath>,
    resp: &Response,
) {
    app.metrics.record_request(
        &crate::metrics::RouteLabels {
            method,
            route: route.map_or("unmatched", |p| p.as_str()).to_string(),
            status: resp.status().as_u16(),
        },
        started.elapsed().as_secs_f64(),
    );
}

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
            if Sha256::digest(given.as_bytes()) == Sha256::digest(token.expose().as_bytes()) {
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
/// no proxy forwarded, with no trusted proxies configured.
fn forwarded(headers: &HeaderMap) -> bool {
    ["forwarded", "x-forwarded-for", "x-real-ip"]
        .iter()
        .any(|h| headers.contains_key(*h))
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
    let out = app.metrics.render(&app.db).await?;
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
    let ok = app.db.run(crate::store::ping).await;
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
