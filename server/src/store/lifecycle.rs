//! The SQLite file's life while a server holds it: an exclusive lock, so a
//! second `qp serve` on the same file is refused (two servers would each
//! run their own sweep and workers, and SQLite's one writer would make
//! them time out on each other), and a checkpoint and close on shutdown, so
//! the main file alone holds every committed transaction (a plain `cp
//! qp.sqlite` after a clean stop is a complete copy).
//!
//! The lock is `flock` on `<db>.lock` next to the database, which holds the
//! pid of the server that has it. The kernel releases it when the process
//! ends, however it ends, so a killed server leaves nothing to clean up.
//! `qp admin` does not take it: it runs alongside the server by design.

use std::cell::RefCell;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::{DbError, DbResult};

/// Held while a server uses the file; dropping it releases the lock.
pub struct ServerLock {
    _file: std::fs::File,
}

/// The lock file of the database at `db`.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

/// Takes the server's lock on the database at `db`, or says who holds it.
pub fn lock(db: &Path) -> DbResult<ServerLock> {
    let path = lock_path(db);
    let other = |e: std::io::Error| DbError::Other(format!("{}: {e}", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(other)?;
    if !try_lock_exclusive(&file).map_err(other)? {
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        let holder = match text.trim().parse::<u32>() {
            Ok(pid) => format!("another qp serve (pid {pid})"),
            Err(_) => "another qp serve".to_string(),
        };
        return Err(DbError::Other(format!(
            "{} is in use by {holder}: one server per SQLite file (its lock is {}). \
             Stop the other server first; several servers on one database need PostgreSQL",
            db.display(),
            path.display()
        )));
    }
    file.set_len(0).map_err(other)?;
    file.rewind().map_err(other)?;
    writeln!(file, "{}", std::process::id()).map_err(other)?;
    Ok(ServerLock { _file: file })
}

#[cfg(unix)]
fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function borrows; no memory involved.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(not(unix))]
fn try_lock_exclusive(_file: &std::fs::File) -> std::io::Result<bool> {
    Ok(true)
}

thread_local! {
    /// Set on the SQLite database thread by [`request_close`]: its loop
    /// ends after the job, and this is told once the file is closed.
    static CLOSE: RefCell<Option<tokio::sync::oneshot::Sender<()>>> = const { RefCell::new(None) };
}

/// Run as a job on a database thread: asks the SQLite thread to stop after
/// it and answers `done` once the database is checkpointed and closed. On
/// PostgreSQL there is no file to settle: `done` is answered now.
pub(super) fn request_close(conn: &super::Conn, done: tokio::sync::oneshot::Sender<()>) {
    if conn.backend() == super::Backend::Sqlite {
        CLOSE.with(|c| *c.borrow_mut() = Some(done));
    } else {
        let _ = done.send(());
    }
}

/// Whether the job just run asked this thread to close.
pub(super) fn close_requested() -> bool {
    CLOSE.with(|c| c.borrow().is_some())
}

/// The end of the SQLite thread: moves every committed page into the main
/// file and empties the WAL (`wal_checkpoint(TRUNCATE)`), closes the
/// connection, releases the server lock, then tells whoever asked.
pub(super) fn close_sqlite(conn: rusqlite::Connection, lock: ServerLock) {
    let checkpoint = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        r.get::<_, i64>(0)
    });
    match checkpoint {
        Ok(0) => {}
        Ok(_) => tracing::warn!("database checkpoint at shutdown was blocked by a reader"),
        Err(e) => tracing::warn!(error = %e, "database checkpoint at shutdown failed"),
    }
    if let Err((_, e)) = conn.close() {
        tracing::warn!(error = %e, "closing the database failed");
    }
    drop(lock);
    if let Some(done) = CLOSE.with(|c| c.borrow_mut().take()) {
        let _ = done.send(());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_lock_on_one_file_is_refused_with_the_holder_named() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("qp.sqlite");
        let first = super::lock(&db).unwrap();
        let e = super::lock(&db).err().unwrap().to_string();
        assert!(e.contains(&db.display().to_string()), "{e}");
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(first);
        super::lock(&db).unwrap();
    }
}
