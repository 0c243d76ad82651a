//! Checkpoints off the request path (SQLite). In WAL mode a commit appends
//! its pages to the `-wal` file; a checkpoint copies them into the main
//! file and fsyncs it. SQLite's automatic checkpoint does that on the
//! committing connection, that is on the server's one database thread,
//! inside whichever request crossed the threshold (every 1,000 pages): a
//! few milliseconds of copying and fsync that every request queued behind
//! it waits out (the release latency's p99; a tenth of that thread's time
//! under load).
//!
//! Here a thread of its own, with a connection of its own, runs PASSIVE
//! checkpoints (which never block the writer) shortly after commits. The
//! writer keeps SQLite's automatic checkpoint as the safety net, at a
//! larger threshold ([`WRITER_CHECKPOINT_PAGES`]): under continuous writes
//! a passive checkpoint never catches the frames appended while it ran,
//! and the WAL starts over from its beginning only once everything in it
//! was copied, which the writer's own checkpoint then does with little
//! left to copy. Durability is unchanged: a commit is durable (as
//! `synchronous=NORMAL` makes it) whether or not a checkpoint has run.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::{DbError, DbResult};

/// The writer's own automatic checkpoint threshold, in WAL pages (SQLite's
/// default is 1,000): reached only when the background thread could not
/// copy everything (continuous writes), so the WAL (normally at most about
/// 40 MB with 4 KB pages) starts over.
pub const WRITER_CHECKPOINT_PAGES: u32 = 10_000;

/// The size the WAL file is cut back to when it starts over (bytes), so a
/// burst (or a long backup pinning the WAL) does not leave a large file on
/// disk until the server stops.
pub const WAL_SIZE_LIMIT: i64 = 64 << 20;

/// How long the background thread lets commits gather after the first one
/// before it checkpoints them together: at most about ten checkpoints (and
/// fsyncs of the main file) a second, each copying a page changed many
/// times once.
const GATHER: Duration = Duration::from_millis(100);

/// The background checkpoint thread of one SQLite database. Stopped (and
/// its connection closed) by [`Checkpointer::stop`] or when dropped.
pub struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    /// A commit happened since the last checkpoint began.
    poked: AtomicBool,
    stop: AtomicBool,
}

impl Checkpointer {
    /// Opens a second connection to the database at `path` (already
    /// migrated and in WAL mode) and starts the thread.
    pub fn start(path: &Path) -> DbResult<Checkpointer> {
        // Never creates the file: it exists (migrated, owner-only) or this
        // fails loudly.
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
                | rusqlite::OpenFlags::SQLITE_OPEN_URI
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("qp-db-ckpt".into())
            .spawn(move || run(&conn, &state))
            .map_err(|e| DbError::Other(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Tells the thread a transaction may have committed. Cheap: an atomic
    /// swap, and a wake-up only for the first commit since a checkpoint.
    pub fn poke(&self) {
        if !self.shared.poked.swap(true, Ordering::AcqRel) {
            if let Some(t) = &self.thread {
                t.thread().unpark();
            }
        }
    }

    /// Stops the thread and closes its connection (before the server's
    /// final checkpoint, which must find no other connection reading).
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(conn: &rusqlite::Connection, shared: &Shared) {
    loop {
        std::thread::park();
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        if !shared.poked.load(Ordering::Acquire) {
            continue; // a spurious wake-up
        }
        // Interrupted by `stop` (which unparks), not slept out.
        std::thread::park_timeout(GATHER);
        // Cleared before the checkpoint: a commit during it pokes again.
        shared.poked.store(false, Ordering::Release);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        // PASSIVE: copies what no reader still needs, never waits and
        // never blocks the writer. A failure is logged and left to the
        // next round and to the writer's own checkpoint.
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(error = %e, "background database checkpoint failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer commits; the background thread copies the pages into
    /// the main file without the writer running a checkpoint itself.
    #[test]
    fn commits_are_checkpointed_by_the_background_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        let writer = rusqlite::Connection::open(&path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer
            .execute_batch("CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('a');")
            .unwrap();
        let mut checkpointer = Checkpointer::start(&path).unwrap();
        for i in 0..50 {
            writer
                .execute("INSERT INTO t VALUES (?1)", [format!("row {i}")])
                .unwrap();
        }
        // The main file holds the last row only once a checkpoint copied
        // its page there (read as bytes: SQL would read the WAL too).
        let in_main_file = || {
            let bytes = std::fs::read(&path).unwrap();
            bytes.windows(6).any(|w| w == b"row 49")
        };
        // Not poked yet: nothing copied (the writer's own automatic
        // checkpoint is off), so only the thread can copy them.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!in_main_file(), "checkpointed without a poke");
        checkpointer.poke();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !in_main_file() {
            assert!(
                std::time::Instant::now() < deadline,
                "the background thread did not checkpoint the WAL"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        checkpointer.stop();
        // Stopped: its connection is closed, so the writer's is the last
        // one, and closing it removes the WAL (SQLite does that only when
        // no other connection is open).
        let wal = dir.path().join("c.sqlite-wal");
        assert!(wal.exists());
        drop(writer);
        assert!(
            !wal.exists(),
            "the checkpoint thread's connection is still open"
        );
    }

    /// The server's own database thread pokes the checkpoint thread: a
    /// commit reaches the main file while the server runs, long before the
    /// 10,000 pages of the writer's own checkpoint.
    #[tokio::test]
    async fn the_server_checkpoints_its_commits_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let db = super::super::Db::open(&super::super::Database::Sqlite(path.clone())).unwrap();
        db.run(|conn| -> DbResult<()> {
            conn.batch("CREATE TABLE probe (x TEXT)")?;
            conn.execute("INSERT INTO probe VALUES ('probe-5f3a9c')", &[])?;
            Ok(())
        })
        .await
        .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !std::fs::read(&path)
            .unwrap()
            .windows(12)
            .any(|w| w == b"probe-5f3a9c")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the commit was not checkpointed while the server ran"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        db.close().await;
    }

    /// The server's connection leaves checkpoints to the thread: its own
    /// automatic one only at the safety net's threshold.
    #[tokio::test]
    async fn the_servers_connection_checkpoints_only_as_the_safety_net() {
        let dir = tempfile::tempdir().unwrap();
        let db = super::super::Database::Sqlite(dir.path().join("s.sqlite"));
        let db = super::super::Db::open(&db).unwrap();
        let pages = db
            .run(|conn| -> DbResult<i64> {
                conn.query_row("PRAGMA wal_autocheckpoint", &[], |r| r.get(0))
            })
            .await
            .unwrap();
        assert_eq!(pages, i64::from(WRITER_CHECKPOINT_PAGES));
        db.close().await;
    }
}
