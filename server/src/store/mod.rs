//! The server's SQLite database: one file, WAL, foreign keys, migrations run
//! on open. Each submodule owns the tables of one concern and exposes plain
//! functions over a `rusqlite::Connection`, so they compose inside one
//! transaction.

pub mod deliveries;
pub mod identity;
pub mod invites;
pub mod questions;
mod schema;

use std::path::Path;
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

/// The server's handle: one connection owned by one dedicated thread, which
/// runs the closures sent to it in order. SQLite serializes writers anyway;
/// one owner makes "first answer wins" a plain consequence of running
/// transactions in turn, and keeps the async threads free of blocking I/O
/// without a pool of threads contending for one lock.
#[derive(Clone)]
pub struct Db {
    jobs: std::sync::mpsc::Sender<Job>,
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A failure of ours (not SQLite's) as a rusqlite error.
fn failure(message: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
        Some(message),
    )
}

fn stopped(message: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some(message),
    )
}

impl Db {
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let mut conn = open(path)?;
        let (jobs, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("qp-db".into())
            .spawn(move || {
                // Ends when every Db handle is dropped.
                for job in rx {
                    job(&mut conn);
                }
            })
            .map_err(|e| stopped(format!("cannot start the database thread: {e}")))?;
        Ok(Db { jobs })
    }

    /// Runs `f` on the database thread and awaits its result. A panic in `f`
    /// is caught there (the thread lives on) and resumed in the caller.
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static + From<rusqlite::Error>,
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(conn)));
            let _ = tx.send(result);
        });
        if self.jobs.send(job).is_err() {
            return Err(stopped("the database thread has stopped".into()).into());
        }
        match rx.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(stopped("the database thread has stopped".into()).into()),
        }
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
