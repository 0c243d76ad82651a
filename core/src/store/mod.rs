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
mod state;
mod watch;

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use outbox::{AnswerState, OutboxEntry};
pub use questions::StoredQuestion;
pub use watch::{Watch, WATCH_INTERVAL};

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
    /// [`Store::suspend`] was called and [`Store::resume`] not yet: the
    /// process is about to be (or is) suspended and holds no file lock.
    #[error("the store is suspended (the app is in the background)")]
    Suspended,
    #[error("store error: {0}")]
    Other(String),
}

/// The kind of a [`StoreError`], for code that switches on it (the FFI error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorKind {
    Locked,
    Corrupt,
    CannotOpen,
    Suspended,
    Other,
}

impl StoreError {
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            StoreError::Locked(_) => StoreErrorKind::Locked,
            StoreError::Corrupt(_) => StoreErrorKind::Corrupt,
            StoreError::CannotOpen(_) => StoreErrorKind::CannotOpen,
            StoreError::Suspended => StoreErrorKind::Suspended,
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

/// The store. Its one connection is closed while suspended (see
/// [`Store::suspend`]) and opened again on [`Store::resume`].
pub struct Store {
    conn: Mutex<Option<Connection>>,
    path: PathBuf,
    mode: StoreMode,
    /// Between suspend and resume, for the change watchers' threads (and
    /// their connections, which suspend waits to see closed).
    suspended: std::sync::Arc<watch::Gate>,
}

/// The connection, held for one piece of work (a statement or a transaction).
pub(crate) struct ConnGuard<'a>(MutexGuard<'a, Option<Connection>>);

impl Deref for ConnGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        // A ConnGuard is only made over an open connection (Store::conn).
        self.0.as_ref().expect("connection checked open")
    }
}

impl DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.0.as_mut().expect("connection checked open")
    }
}

/// How long [`Store::suspend`] waits for another process's lock before it
/// closes anyway.
pub const SUSPEND_BUSY_TIMEOUT: Duration = Duration::from_millis(100);

impl Store {
    /// Opens (creating if needed) and migrates the store at `path`.
    pub fn open(path: &Path, mode: StoreMode) -> Result<Store, StoreError> {
        let conn = open_connection(path, mode)?;
        Ok(Store {
            conn: Mutex::new(Some(conn)),
            path: path.to_path_buf(),
            mode,
            suspended: Default::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn slot(&self) -> MutexGuard<'_, Option<Connection>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open connection, or [`StoreError::Suspended`].
    pub(crate) fn conn(&self) -> Result<ConnGuard<'_>, StoreError> {
        let slot = self.slot();
        if slot.is_none() {
            return Err(StoreError::Suspended);
        }
        Ok(ConnGuard(slot))
    }

    /// Before the process is suspended (iOS: the app going to the
    /// background, the extension handing its content over). Waits for the
    /// database work in flight (each holds the connection for one statement
    /// or one transaction), writes the WAL back, and closes the connection,
    /// so no lock is held on any of the store's files: iOS terminates a
    /// suspended process that holds a file lock in a shared App Group
    /// container (`0xdead10cc`), and an open WAL connection always holds one
    /// on the `-shm` file. Until [`resume`](Self::resume), every store call
    /// fails with [`StoreError::Suspended`] (a flush in flight stops there;
    /// its answer stays in the outbox and is sent by the next flush).
    /// Calling it twice is harmless.
    ///
    /// Bounded: the checkpoint waits at most [`SUSPEND_BUSY_TIMEOUT`] for
    /// another process (the extension writing, the app reading); then it
    /// writes back what it can without waiting and leaves the rest of the
    /// WAL to the next writer. iOS gives a background task a few seconds
    /// and kills an app whose main thread stalls.
    pub fn suspend(&self) -> Result<(), StoreError> {
        let mut slot = self.slot();
        self.suspended.close();
        if let Some(conn) = slot.take() {
            // Closed right after, so the open connection's 5 s is not restored.
            conn.busy_timeout(SUSPEND_BUSY_TIMEOUT)?;
            // TRUNCATE that cannot get its locks in time does what PASSIVE
            // would (SQLite's documented fallback) and reports busy in its
            // row, not as an error.
            let checkpointed = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
            // Closed either way: a failed checkpoint (another process
            // reading) leaves the WAL for the next writer, not a lock.
            if let Err((conn, e)) = conn.close() {
                // Not closed (a statement still open, which cannot happen
                // with the guard held): keep it rather than leak it.
                *slot = Some(conn);
                return Err(e.into());
            }
            checkpointed?;
        }
        Ok(())
    }

    /// After the process is back in the foreground: opens the connection
    /// again. Harmless when not suspended.
    pub fn resume(&self) -> Result<(), StoreError> {
        let mut slot = self.slot();
        if slot.is_none() {
            *slot = Some(open_connection(&self.path, self.mode)?);
        }
        self.suspended.open();
        Ok(())
    }

    /// True between [`suspend`](Self::suspend) and [`resume`](Self::resume).
    pub fn is_suspended(&self) -> bool {
        self.slot().is_none()
    }

    /// Writes the WAL back into the main file (the connection stays open).
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn()?
            .pragma_update(None, "wal_checkpoint", "TRUNCATE")?;
        Ok(())
    }

    /// `PRAGMA integrity_check` is "ok".
    pub fn is_intact(&self) -> Result<bool, StoreError> {
        let r: String = self
            .conn()?
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(r == "ok")
    }
}

fn open_connection(path: &Path, mode: StoreMode) -> Result<Connection, StoreError> {
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
    Ok(conn)
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
