//! `GET /readyz`: whether this instance can do its job, and what is wrong
//! since when, as JSON (`/healthz` stays the liveness probe: the process and
//! its database answer).
//!
//! Checks:
//! - `database`: a `SELECT 1` answered within [`PROBE_TIMEOUT`];
//! - `storage`: no write refused for lack of space (SQLite's `SQLITE_FULL`,
//!   PostgreSQL's `disk_full`) in the last [`STORAGE_FULL_HOLD`](crate::health::STORAGE_FULL_HOLD) and not
//!   since cleared by a write that succeeded, and, on SQLite, at least
//!   [`MIN_FREE_BYTES`] free on the database's file system;
//! - `push_apns`, `push_fcm`, `push_web_push` (each when configured): the
//!   gateway's credential is not being refused (`push::credentials`:
//!   `"state": "credential_refused"`, with `failures`) and the gateway is
//!   not in an outage (`push::outage`: `"state": "outage"`, with the
//!   `circuit`, e.g. `apns sandbox`);
//! - `push_routes`: which push routes are configured (`apns`, `fcm`,
//!   `web_push`); none fails it.
//!
//! A failing database or storage makes the answer 503 (`"status":
//! "unavailable"`: a load balancer should send requests elsewhere); a
//! failing push credential, a gateway in an outage (or no push route) only
//! `"degraded"` with 200, because every instance shares the credential and
//! the gateway, and taking them all out of rotation would turn late
//! notifications into a full outage (asking, answering and the web
//! responder still work; held pushes go when the gateway answers). Alert
//! on `degraded` (or on `qp_push_credential_failing`,
//! `qp_push_gateway_outage`).
//!
//! A request refused for lack of space answers 503 `storage_full` with
//! `Retry-After` (`health::STORAGE_FULL_RETRY_SECS`) instead of 500: the client
//! keeps its question and tries again once the operator made room.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::app::App;
use crate::health::DbTrouble;
use crate::store::Database;

/// How long the database may take to answer the probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Below this much free space on the SQLite file's file system, `storage`
/// fails before the writes do (the WAL grows by whole transactions).
pub const MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;

/// Whether a request with this method writes (a success clears `storage`).
pub fn writes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Records what an error response says about the database, and clears
/// `storage` when a write succeeds (`writes`: [`writes`] of its request).
/// Called by the routes' one observing middleware (`http::layers::Record`),
/// so a parked long-poll carries one middleware state for both.
pub fn note_failures(app: &App, writes: bool, resp: &Response) {
    match resp.extensions().get::<DbTrouble>() {
        Some(DbTrouble::StorageFull(e)) => app.health.note_storage(Some(e)),
        Some(DbTrouble::Unavailable(e)) => app.health.note_database(Some(e)),
        None if writes && resp.status().is_success() && app.health.storage_failing() => {
            tracing::info!("readiness: a write succeeded; storage no longer full");
            app.health.note_storage(None);
        }
        None => {}
    }
}

/// Free bytes on the file system holding `path` (its folder when the file
/// is not there yet).
fn free_bytes(path: &std::path::Path) -> Option<u64> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "Ready (`ok`), or `degraded`: a push credential is refused, a push gateway is in an outage, or no push route is configured; the JSON names each check with `ok`, and `since` and `error` when failing (a push gateway's check says which in `state`: `credential_refused` or `outage`; `push_routes` lists the routes: `apns`, `fcm`, `web_push`)", content_type = "application/json"),
        (status = 503, description = "Not ready: the database does not answer or storage is full (`unavailable`)", content_type = "application/json")))]
pub async fn readyz(State(app): State<Arc<App>>) -> Response {
    let probe = tokio::time::timeout(PROBE_TIMEOUT, app.db.run(crate::store::ping)).await;
    match probe {
        Ok(Ok(_)) => app.health.note_database(None),
        Ok(Err(e)) => app.health.note_database(Some(&e.to_string())),
        Err(_) => app.health.note_database(Some(&format!(
            "no answer to SELECT 1 within {} s",
            PROBE_TIMEOUT.as_secs()
        ))),
    }
    let mut checks = serde_json::Map::new();
    let database = app.health.database_report();
    let mut storage = app.health.storage_report();
    if storage.is_none() {
        if let Database::Sqlite(path) = &app.settings.db {
            if let Some(free) = free_bytes(path).filter(|f| *f < MIN_FREE_BYTES) {
                storage = Some(json!({
                    "ok": false,
                    "error": format!("{free} bytes free on the database's file system (less than {MIN_FREE_BYTES})"),
                }));
            }
        }
    }
    let unavailable = database.is_some() || storage.is_some();
    checks.insert("database".into(), database.unwrap_or(json!({"ok": true})));
    checks.insert("storage".into(), storage.unwrap_or(json!({"ok": true})));
    let failing = app.health.push_credentials.failing();
    let outages = app.health.push_outages.open();
    let routes = crate::push::routes(&app.settings);
    let mut degraded = false;
    for gateway in ["apns", "fcm", "web_push"] {
        let outage = outages.iter().find(|(_, o)| o.gateway == gateway);
        let check = match (failing.get(gateway), outage) {
            (Some(f), _) => json!({
                "ok": false, "state": "credential_refused", "since": f.since.to_rfc3339(),
                "error": f.error, "failures": f.failures
            }),
            (None, Some((circuit, o))) => json!({
                "ok": false, "state": "outage", "circuit": circuit,
                "since": o.since.to_rfc3339(), "error": o.error
            }),
            (None, None) if routes.contains(&gateway) => json!({"ok": true}),
            (None, None) => continue,
        };
        degraded |= check["ok"] == false;
        checks.insert(format!("push_{gateway}"), check);
    }
    // No route at all: every question sits pending unseen (a phone's own
    // device list cannot say so). Degraded, not unavailable: answers still
    // work, through the web responder.
    let route_check = if routes.is_empty() {
        degraded = true;
        json!({ "ok": false, "routes": routes, "error": "no push route configured (APNs, FCM or Web Push): no phone or browser is notified of a question" })
    } else {
        json!({ "ok": true, "routes": routes })
    };
    checks.insert("push_routes".into(), route_check);
    let (status, word) = match (unavailable, degraded) {
        (true, _) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        (false, true) => (StatusCode::OK, "degraded"),
        (false, false) => (StatusCode::OK, "ok"),
    };
    (status, Json(json!({ "status": word, "checks": checks }))).into_response()
}
