//! What this instance knows of its own health from the requests it served
//! and the probes it ran: the database unreachable, the storage full, since
//! when and with which error. `http::ready` reports it as `/readyz`;
//! `http::error` feeds it from failed requests. The push gateways'
//! credentials failing ([`PushCredentials`]) are written by push's
//! transports and shown there too.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::store::DbError;

/// How long a refused write keeps `storage` failing without another one
/// (a write that succeeds clears it sooner).
pub const STORAGE_FULL_HOLD: Duration = Duration::from_secs(60);
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

/// What a database error says about the server's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbFailure {
    /// The disk (or SQLite's page limit) is full: the client keeps its
    /// request and retries; `/readyz` shows it.
    StorageFull,
    /// PostgreSQL restarting or unreachable: the client retries (the
    /// database threads reconnect on their next job).
    Unavailable,
    /// Anything else: a bug or a broken database; see the log.
    Other,
}

impl DbFailure {
    pub fn of(e: &DbError) -> Self {
        if is_storage_full(e) {
            DbFailure::StorageFull
        } else if e.is_unavailable() {
            DbFailure::Unavailable
        } else {
            DbFailure::Other
        }
    }

    /// The stable code a client reads.
    pub fn code(self) -> &'static str {
        match self {
            DbFailure::StorageFull => "storage_full",
            DbFailure::Unavailable => "database_unavailable",
            DbFailure::Other => "internal",
        }
    }

    /// The sentence a client shows (never the database's own words).
    pub fn message(self) -> &'static str {
        match self {
            DbFailure::StorageFull => "the server's database storage is full; retry later",
            DbFailure::Unavailable => "the server cannot reach its database; retry shortly",
            DbFailure::Other => "internal error; see the server log",
        }
    }
}

/// What went wrong with the database, carried from an error response to
/// `http::ready::note_failures` (which has the `App` to record it in).
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
    /// The push gateways whose credential is being refused now.
    pub push_credentials: PushCredentials,
    /// The push gateways in an outage now.
    pub push_outages: PushOutages,
}

/// A push gateway in an outage, as `/readyz` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OutageReport {
    /// The gateway (`apns`, `fcm`, `web_push`).
    pub gateway: &'static str,
    /// When its faults opened the outage.
    pub since: DateTime<Utc>,
    /// The last fault, in the transport's words.
    pub error: String,
}

/// Every push circuit in an outage now (a gateway, an APNs environment,
/// a Web Push service), by circuit: written by the push worker's outage
/// circuits (`push::outage`), read by `/readyz`. A clone shares the same
/// state.
#[derive(Clone, Default)]
pub struct PushOutages(Arc<Mutex<BTreeMap<String, OutageReport>>>);

impl PushOutages {
    /// The circuits in an outage now.
    pub fn open(&self) -> BTreeMap<String, OutageReport> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `circuit` in an outage (`Some`) or not (`None`).
    pub fn set(&self, circuit: &str, state: Option<OutageReport>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match state {
            Some(s) => map.insert(circuit.to_string(), s),
            None => map.remove(circuit),
        };
    }
}

/// A gateway whose credential is failing, as `/readyz` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CredentialFailure {
    /// When the current run of refusals began.
    pub since: DateTime<Utc>,
    /// The last refusal, in the transport's words (never a token).
    pub error: String,
    /// Refusals in this run.
    pub failures: u32,
}

/// Every push gateway's credential failing now, by gateway: written by the
/// transports' credential gates (`push::credentials`), read by `/readyz`. A
/// clone shares the same state.
#[derive(Clone, Default)]
pub struct PushCredentials(Arc<Mutex<BTreeMap<&'static str, CredentialFailure>>>);

impl PushCredentials {
    /// The gateways failing now.
    pub fn failing(&self) -> BTreeMap<&'static str, CredentialFailure> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `gateway` failing (`Some`) or working (`None`).
    pub fn set(&self, gateway: &'static str, state: Option<CredentialFailure>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match state {
            Some(s) => map.insert(gateway, s),
            None => map.remove(gateway),
        };
    }
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
    /// Records the database failing (`Some(error)`) or answering (`None`).
    pub fn note_database(&self, error: Option<&str>) {
        note(&self.database, error);
    }

    /// Records a write refused for lack of space, or (`None`) one that
    /// succeeded.
    pub fn note_storage(&self, error: Option<&str>) {
        note(&self.storage, error);
    }

    /// Whether `storage` is failing now.
    pub fn storage_failing(&self) -> bool {
        self.storage.lock().is_ok_and(|s| s.is_some())
    }

    /// The database check's report when it fails.
    pub fn database_report(&self) -> Option<Value> {
        self.database
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(report)
    }

    /// The storage check's report when it fails (a refused write older than
    /// [`STORAGE_FULL_HOLD`] is forgotten).
    pub fn storage_report(&self) -> Option<Value> {
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
