//! Watching the feed: a listener the core calls when the store changed
//! (this process, or the other one: the app or its notification extension),
//! and running store work off the caller's thread.

use std::sync::Arc;

use super::Phone;
use crate::store::{Watch, WATCH_INTERVAL};

/// Told when the feed may have changed: read it again (`feed`). Called on
/// the core's watcher thread, never the caller's; hop to the main thread
/// to update the UI.
pub trait FeedListener: Send + Sync {
    fn feed_changed(&self);
}

impl Phone {
    /// Calls `listener` after every commit to the shared store, by this
    /// process or the other one, until the returned watch is cancelled or
    /// dropped. No connection is held while the phone is suspended.
    pub fn subscribe_feed(&self, listener: Arc<dyn FeedListener>) -> Watch {
        self.store
            .watch(WATCH_INTERVAL, move || listener.feed_changed())
    }
}

/// Runs blocking store work on the runtime's blocking pool, so an `async`
/// caller (Swift `async`, Kotlin `suspend`) never waits on SQLite on its own
/// thread.
pub async fn off_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(v) => v,
        // The work panicked: the same panic, here.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
