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
/// copy everything (continuous writes), so the WAL (at most about 40 MB
/// with 4 KB pages) starts over.
pub const WRITER_CHECKPOINT_PAGES: u32 = 10_000;

/// How long the background thread lets commits gather after the first one
/// before it checkpoints them together (one fsync for all of them).
const GATHER: Duration = Duration::from_millis(20);

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
        let conn = rusqlite::Connection::open(path)?;
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("qp-db-checkpoint".into())
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
        std::thread::sleep(GATHER);
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
        // Stopped: its connection is closed, so a TRUNCATE checkpoint at
        // shutdown finds nobody reading and empties the WAL.
        let busy: i64 = writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .unwrap();
        assert_eq!(busy, 0);
        assert_eq!(
            std::fs::metadata(dir.path().join("c.sqlite-wal"))
                .unwrap()
                .len(),
            0
        );
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
