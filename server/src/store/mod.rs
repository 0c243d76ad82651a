//! The server's SQLite database: one file, WAL, foreign keys, migrations run
//! on open. Each submodule owns the tables of one concern and exposes plain
//! functions over a `rusqlite::Connection`, so they compose inside one
//! transaction.

pub mod deliveries;
pub mod identity;
pub mod questions;
mod schema;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

/// Opens (creating if needed) the database at `path` and migrates it.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    schema::migrate(&mut conn)?;
    Ok(conn)
}

/// The server's handle: one connection, used by one task at a time, off the
/// async threads. SQLite serializes writers anyway; a single connection makes
/// "first answer wins" a plain consequence of running transactions in turn.
#[derive(Clone)]
pub struct Db {
    conn: Arc<Mutex<Connection>>,
}

impl Db {
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        Ok(Db {
            conn: Arc::new(Mutex::new(open(path)?)),
        })
    }

    /// Runs `f` with the connection on tokio's blocking pool.
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static + From<rusqlite::Error>,
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            // A panic while holding the lock poisons it; the connection itself is
            // still consistent (SQLite rolled back), so keep going.
            let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut guard)
        })
        .await
        .unwrap_or_else(|join_err| std::panic::resume_unwind(join_err.into_panic()))
    }
}

/// Errors of the admin-facing store functions.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Seconds since the Unix epoch, now.
pub fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Milliseconds since the Unix epoch, now (for retry schedules).
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
