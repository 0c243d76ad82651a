//! `GET /readyz`: whether this instance can do its job, and what is wrong
//! since when, as JSON (`/healthz` stays the liveness probe: the process and
//! its database answer).
//!
//! Checks:
//! - `database`: a `SELECT 1` answered within [`PROBE_TIMEOUT`];
//! - `storage`: no write refused for lack of space (SQLite's `SQLITE_FULL`,
//!   PostgreSQL's `disk_full`) in the last [`STORAGE_FULL_HOLD`] and not
//!   since cleared by a write that succeeded, and, on SQLite, at least
//!   [`MIN_FREE_BYTES`] free on the database's file system;
//! - `push_apns`, `push_fcm`: the gateway's credential is not being refused
//!   (`push::credentials`).
//!
//! A failing database or storage makes the answer 503 (`"status":
//! "unavailable"`: a load balancer should send requests elsewhere); a
//! failing push credential only `"degraded"` with 200, because every
//! instance shares the credential and taking them all out of rotation would
//! turn missing notifications into a full outage. Alert on `degraded` (or
//! on `qp_push_credential_failing`).
//!
//! A request refused for lack of space answers 503 `storage_full` with
//! `Retry-After` ([`STORAGE_FULL_RETRY_SECS`]) instead of 500: the client
//! keeps its question and tries again once the operator made room.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::app::App;
use crate::store::{Database, DbError};

/// How long the database may take to answer the probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a refused write keeps `storage` failing without another one
/// (a write that succeeds clears it sooner).
pub const STORAGE_FULL_HOLD: Duration = Duration::from_secs(60);
/// Below this much free space on the SQLite file's file system, `storage`
/// fails before the writes do (the WAL grows by whole transactions).
pub const MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;
/// What a `storage_full` answer's `Retry-After` says.
pub const STORAGE_FULL_RETRY_SECS: u64 = 30;

/// Whether `e` is the database refusing a write for lack of space.
pub fn is_storage_full(e: &DbError) -> bool {
    match e {
        DbError::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => {
            f.code == rusqlite::ErrorCode::DiskFull
        }
        DbError::Postgres(e) => e.code() == Some(&postgres::error::SqlState::DISK_FULL),
        _ => false,
    }
}

/// What went wrong with the database, carried from an error response to
/// [`note_failures`] (which has the [`App`] to record it in).
#[derive(Debug, Clone)]
pub enum DbTrouble {
    StorageFull(String),
    Unavailable(String),
}

/// A check failing: since when, the last error, and when it was last seen.
#[derive(Debug, Clone)]
struct Failing {
    since: DateTime<Utc>,
    error: String,
    seen: Instant,
}

/// The failures `/readyz` reports that requests and probes discover.
#[derive(Default)]
pub struct Health {
    database: Mutex<Option<Failing>>,
    storage: Mutex<Option<Failing>>,
}

fn note(slot: &Mutex<Option<Failing>>, error: Option<&str>) {
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    match (error, slot.as_mut()) {
        (None, _) => *slot = None,
        (Some(e), Some(f)) => {
            f.error = e.to_string();
            f.seen = Instant::now();
        }
        (Some(e), None) => {
            tracing::warn!(error = e, "readiness: failing from now");
            *slot = Some(Failing {
                since: Utc::now(),
                error: e.to_string(),
                seen: Instant::now(),
            })
        }
    }
}

fn report(f: &Failing) -> Value {
    json!({ "ok": false, "since": f.since.to_rfc3339(), "error": f.error })
}

impl Health {
    fn storage_report(&self) -> Option<Value> {
        let mut slot = self.storage.lock().unwrap_or_else(|p| p.into_inner());
        if slot
            .as_ref()
            .is_some_and(|f| f.seen.elapsed() > STORAGE_FULL_HOLD)
        {
            *slot = None;
        }
        slot.as_ref().map(report)
    }
}

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
        Some(DbTrouble::StorageFull(e)) => note(&app.health.storage, Some(e)),
        Some(DbTrouble::Unavailable(e)) => note(&app.health.database, Some(e)),
        None if writes
            && resp.status().is_success()
            && app.health.storage.lock().is_ok_and(|s| s.is_some()) =>
        {
            tracing::info!("readiness: a write succeeded; storage no longer full");
            note(&app.health.storage, None);
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
    responses((status = 200, description = "Ready (`ok`), or `degraded`: a push credential is failing; the JSON names each check with `ok`, and `since` and `error` when failing", content_type = "application/json"),
        (status = 503, description = "Not ready: the database does not answer or storage is full (`unavailable`)", content_type = "application/json")))]
pub async fn readyz(State(app): State<Arc<App>>) -> Response {
    let probe = tokio::time::timeout(
        PROBE_TIMEOUT,
        app.db
            .run(|conn| conn.query_row("SELECT 1", &[], |r| r.get::<i64>(0))),
    )
    .await;
    match probe {
        Ok(Ok(_)) => note(&app.health.database, None),
        Ok(Err(e)) => note(&app.health.database, Some(&e.to_string())),
        Err(_) => note(
            &app.health.database,
            Some(&format!(
                "no answer to SELECT 1 within {} s",
                PROBE_TIMEOUT.as_secs()
            )),
        ),
    }
    let mut checks = serde_json::Map::new();
    let database = app
        .health
        .database
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(report);
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
    let failing = app.metrics.push.credentials.failing();
    let mut degraded = false;
    for (gateway, configured) in [
        ("apns", app.settings.apns.is_some()),
        ("fcm", app.settings.fcm.is_some()),
    ] {
        let check = match failing.get(gateway) {
            Some(f) => {
                degraded = true;
                json!({ "ok": false, "since": f.since.to_rfc3339(), "error": f.error, "failures": f.failures })
            }
            None if configured => json!({"ok": true}),
            None => continue,
        };
        checks.insert(format!("push_{gateway}"), check);
    }
    let (status, word) = match (unavailable, degraded) {
        (true, _) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        (false, true) => (StatusCode::OK, "degraded"),
        (false, false) => (StatusCode::OK, "ok"),
    };
    (status, Json(json!({ "status": word, "checks": checks }))).into_response()
}
