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
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use super::Store;

/// How often the watcher looks: well under what a person notices.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(200);

/// How often a watcher between two looks checks whether to let go of its
/// connection: suspend waits for that, so it bounds the wait.
const RELEASE_CHECK: Duration = Duration::from_millis(5);

/// The longest [`Gate::close`] waits for the watchers' connections.
const RELEASE_WAIT: Duration = Duration::from_millis(250);

/// Suspended or not, and how many watcher connections are open: suspend
/// returns only once they are closed, so the process never goes to sleep
/// with a watcher still holding the shared store's files (iOS's 0xdead10cc).
#[derive(Default)]
pub(crate) struct Gate {
    suspended: AtomicBool,
    open_connections: Mutex<usize>,
    released: Condvar,
}

impl Gate {
    fn count(&self) -> std::sync::MutexGuard<'_, usize> {
        self.open_connections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Suspends, then waits (bounded) until no watcher holds a connection.
    pub(crate) fn close(&self) {
        self.suspended.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + RELEASE_WAIT;
        let mut n = self.count();
        while *n > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            n = self
                .released
                .wait_timeout(n, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    pub(crate) fn open(&self) {
        self.suspended.store(false, Ordering::SeqCst);
    }

    fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::SeqCst)
    }

    /// A watcher's connection, counted, unless suspended. The check and the
    /// count are under one lock, so a suspend either sees the count or the
    /// watcher sees the suspend.
    fn connect(&self, path: &PathBuf) -> Option<Connection> {
        let mut n = self.count();
        if self.is_suspended() {
            return None;
        }
        let conn = open(path)?;
        *n += 1;
        Some(conn)
    }

    fn release(&self, conn: &mut Option<Connection>) {
        if conn.take().is_some() {
            *self.count() -= 1;
            self.released.notify_all();
        }
    }
}

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
                if suspended.is_suspended() {
                    suspended.release(&mut conn);
                    was_suspended = true;
                } else {
                    if conn.is_none() {
                        conn = suspended.connect(&path);
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
                // Sleeps in short steps: a suspend is waiting for this
                // connection to close.
                let woke = Instant::now();
                while woke.elapsed() < interval
                    && !quit.load(Ordering::SeqCst)
                    && !(conn.is_some() && suspended.is_suspended())
                {
                    std::thread::sleep(RELEASE_CHECK.min(interval));
                }
            }
            suspended.release(&mut conn);
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

    #[test]
    fn suspend_returns_only_once_the_watcher_let_go_of_its_connection() {
        // Between two looks (here a long interval) the watcher used to keep
        // its connection, and so the shared store's files, for the rest of
        // the interval after a suspend: iOS kills an app suspended so.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let app = Store::open(&path, StoreMode::App).unwrap();
        let _watch = app.watch(Duration::from_secs(30), || {});
        for _ in 0..100 {
            if *app.suspended.count() == 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(*app.suspended.count(), 1, "the watcher has its connection");
        app.suspend().unwrap();
        assert_eq!(
            *app.suspended.count(),
            0,
            "suspended: no watcher connection left"
        );
        app.resume().unwrap();
    }
}
