//! The phone's SQLite store: one file shared by the app and its notification
//! extension (an App Group container on iOS). It holds the feed (questions
//! this user can see), the outbox (answers not yet confirmed by the server)
//! and drafts (typed text kept when it could not be sent as is).
//!
//! Two processes may write at once: WAL, a busy timeout and short
//! transactions make that safe. A store that cannot be opened (files locked
//! before the first unlock after a reboot, a corrupt file) is a typed
//! [`StoreError`], never a crash; the caller still shows the notification.
//! Tokens are never written here.

mod outbox;
mod questions;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use outbox::{AnswerState, OutboxEntry};
pub use questions::StoredQuestion;

/// How the store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    /// The app: a normal page cache.
    App,
    /// The notification extension: a small page cache and little memory
    /// (the iOS extension is killed at about 24 MB).
    Extension,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Another process holds the lock for too long, or the file is not
    /// readable yet (iOS data protection before the first unlock).
    #[error("the store is busy or locked: {0}")]
    Locked(String),
    /// The file is not a database or is damaged.
    #[error("the store is damaged: {0}")]
    Corrupt(String),
    /// The folder is missing or not writable.
    #[error("the store cannot be opened: {0}")]
    CannotOpen(String),
    #[error("store error: {0}")]
    Other(String),
}

/// The kind of a [`StoreError`], for code that switches on it (the FFI error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorKind {
    Locked,
    Corrupt,
    CannotOpen,
    Other,
}

impl StoreError {
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            StoreError::Locked(_) => StoreErrorKind::Locked,
            StoreError::Corrupt(_) => StoreErrorKind::Corrupt,
            StoreError::CannotOpen(_) => StoreErrorKind::CannotOpen,
            StoreError::Other(_) => StoreErrorKind::Other,
        }
    }
}

impl From<rusqlite_migration::Error> for StoreError {
    fn from(e: rusqlite_migration::Error) -> Self {
        match e {
            rusqlite_migration::Error::RusqliteError { err, .. } => err.into(),
            other => StoreError::Other(format!("migration: {other}")),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                C::DatabaseBusy | C::DatabaseLocked => StoreError::Locked(e.to_string()),
                C::DatabaseCorrupt | C::NotADatabase => StoreError::Corrupt(e.to_string()),
                C::CannotOpen | C::PermissionDenied | C::ReadOnly => {
                    StoreError::CannotOpen(e.to_string())
                }
                _ => StoreError::Other(e.to_string()),
            },
            _ => StoreError::Other(e.to_string()),
        }
    }
}

pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) and migrates the store at `path`.
    pub fn open(path: &Path, mode: StoreMode) -> Result<Store, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let mut conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        // Reading the header first turns "not a database" into an error here.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        keep_wal_file(&conn);
        if mode == StoreMode::Extension {
            // About 256 KB of page cache and no memory-mapped I/O.
            conn.pragma_update(None, "cache_size", -256)?;
            conn.pragma_update(None, "mmap_size", 0)?;
        }
        schema::migrate(&mut conn)?;
        Ok(Store {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the WAL back into the main file; call before the app is
    /// suspended so no lock is held across suspension.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn()
            .pragma_update(None, "wal_checkpoint", "TRUNCATE")?;
        Ok(())
    }

    /// `PRAGMA integrity_check` is "ok".
    pub fn is_intact(&self) -> Result<bool, StoreError> {
        let r: String = self
            .conn()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(r == "ok")
    }
}

/// Keeps the WAL and shared-memory files when the last connection closes, so
/// the next process (a fresh extension per notification) does not pay for
/// creating them again. The data is checkpointed on close all the same.
fn keep_wal_file(conn: &Connection) {
    let mut on: std::os::raw::c_int = 1;
    // SAFETY: the handle is valid for the connection's lifetime, and
    // SQLITE_FCNTL_PERSIST_WAL takes a pointer to an int, as given.
    unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_PERSIST_WAL,
            (&mut on as *mut std::os::raw::c_int).cast(),
        );
    }
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
