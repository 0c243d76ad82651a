//! Observing the feed: a foreign listener the core calls after any commit
//! to the shared store (this process or the other: app or extension), and
//! the subscription that stops it. Forwards to `qp_core::phone` (`observe`).
//! Swift's `AsyncSequence` and Kotlin's `Flow` wrap these in the glue.

use std::sync::{Arc, Mutex};

use qp_core::store::Watch;

/// Told when the feed may have changed: read it again. Called on the
/// core's watcher thread; hop to the main thread to update the UI.
#[uniffi::export(with_foreign)]
pub trait FeedListener: Send + Sync {
    fn feed_changed(&self);
}

pub(crate) struct AppListener(pub Arc<dyn FeedListener>);

impl qp_core::phone::FeedListener for AppListener {
    fn feed_changed(&self) {
        self.0.feed_changed()
    }
}

/// A running feed subscription; `cancel()` (or dropping it) stops it.
#[derive(uniffi::Object)]
pub struct FeedSubscription(pub(crate) Mutex<Option<Watch>>);

#[uniffi::export]
impl FeedSubscription {
    /// Stops the signals; none follows once this returns.
    pub fn cancel(&self) {
        if let Some(mut w) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
            w.cancel();
        }
    }
}
