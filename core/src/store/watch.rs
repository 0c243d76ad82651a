//! A change signal across processes: the app learns that its notification
//! extension (another process) committed to the shared store, and the
//! reverse. SQLite's `PRAGMA data_version` changes on a connection whenever
//! another connection (of any process) committed, so a watcher with a
//! connection of its own sees every writer, this process's included.
//!
//! While the store is suspended the watcher holds no connection either
//! (iOS kills a suspended process holding a file lock in the shared
//! container), and signals once on resume: the other process may have
//! written meanwhile.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::Store;

/// How often the watcher looks: well under what a person notices.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(200);

/// A running watcher; stops when cancelled or dropped.
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Stops the watcher; no signal follows once this returns. Called from
    /// the watcher's own thread (a listener that cancels, or drops the last
    /// handle, as a stream ending on an error does) it only asks the loop to
    /// stop: joining oneself would panic (EDEADLK), across the FFI a crash.
    pub fn cancel(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.cancel();
    }
}

fn open(path: &PathBuf) -> Option<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).ok()?;
    conn.busy_timeout(Duration::from_millis(100)).ok()?;
    Some(conn)
}

fn data_version(conn: &Connection) -> Option<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok()
}

impl Store {
    /// Calls `on_change` (on the watcher's thread) after any commit to this
    /// store by any connection or process, within about `interval`.
    pub fn watch(&self, interval: Duration, on_change: impl Fn() + Send + 'static) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let suspended = self.suspended.clone();
        let path = self.path.clone();
        let quit = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut conn: Option<Connection> = None;
            let mut seen: Option<i64> = None;
            let mut was_suspended = false;
            while !quit.load(Ordering::SeqCst) {
                if suspended.load(Ordering::SeqCst) {
                    conn = None;
                    was_suspended = true;
                } else {
                    if conn.is_none() {
                        conn = open(&path);
                        seen = conn.as_ref().and_then(data_version);
                        if was_suspended && conn.is_some() {
                            was_suspended = false;
                            on_change();
                        }
                    } else if let Some(v) = conn.as_ref().and_then(data_version) {
                        if seen != Some(v) {
                            seen = Some(v);
                            on_change();
                        }
                    }
                }
                std::thread::sleep(interval);
            }
        });
        Watch {
            stop,
            thread: Some(thread),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::store::StoreMode;

    fn wait_for(n: &AtomicUsize, at_least: usize) -> bool {
        for _ in 0..100 {
            if n.load(Ordering::SeqCst) >= at_least {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_commit_by_another_connection_is_signalled_and_a_cancelled_watch_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let app = Store::open(&path, StoreMode::App).unwrap();
        let extension = Store::open(&path, StoreMode::Extension).unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        let counter = n.clone();
        let mut watch = app.watch(Duration::from_millis(10), move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            n.load(Ordering::SeqCst),
            0,
            "nothing committed, nothing said"
        );
        extension.set_state("k", "v").unwrap();
        assert!(wait_for(&n, 1), "the other connection's commit is seen");
        app.set_state("k", "w").unwrap();
        assert!(wait_for(&n, 2), "this process's own commits too");
        // Suspended: no connection; resumed: one signal.
        app.suspend().unwrap();
        extension.set_state("k", "x").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let before = n.load(Ordering::SeqCst);
        app.resume().unwrap();
        assert!(wait_for(&n, before + 1), "resuming signals once");
        watch.cancel();
        let after = n.load(Ordering::SeqCst);
        extension.set_state("k", "y").unwrap();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(n.load(Ordering::SeqCst), after, "cancelled: quiet");
    }

    #[test]
    fn a_listener_may_cancel_its_own_watch_from_the_watcher_thread() {
        // A stream that ends on an error cancels from inside the listener;
        // joining the watcher from itself used to panic (EDEADLK).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let app = Store::open(&path, StoreMode::App).unwrap();
        let slot: Arc<std::sync::Mutex<Option<Watch>>> = Arc::default();
        let n = Arc::new(AtomicUsize::new(0));
        let returned = Arc::new(AtomicBool::new(false));
        let (inner, counter, done) = (slot.clone(), n.clone(), returned.clone());
        let watch = app.watch(Duration::from_millis(10), move || {
            counter.fetch_add(1, Ordering::SeqCst);
            if let Some(mut w) = inner.lock().unwrap().take() {
                w.cancel();
                // Reached only if cancel did not panic (a panic here kills
                // the watcher thread, and through the FFI the app).
                done.store(true, Ordering::SeqCst);
            }
        });
        *slot.lock().unwrap() = Some(watch);
        std::thread::sleep(Duration::from_millis(50)); // the watcher has its connection
        app.set_state("k", "v").unwrap();
        assert!(wait_for(&n, 1), "the commit is signalled");
        std::thread::sleep(Duration::from_millis(60));
        app.set_state("k", "w").unwrap();
        std::thread::sleep(Duration::from_millis(60));
        assert!(
            returned.load(Ordering::SeqCst),
            "cancel returned to the listener"
        );
        assert_eq!(n.load(Ordering::SeqCst), 1, "cancelled from inside: quiet");
    }
}
