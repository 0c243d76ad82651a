//! What a person sees for a question, decided once for both platforms:
//! - [`cell`]: a feed cell (spec 6.2) from a question alone (phone and web);
//! - [`copy`]: every user-facing string (re-exported: it lives in
//!   [`crate::copy`], below the payload encoder that words the alerts);
//! - [`ios`]: the notification content and the per-question category
//!   (actions, text-input action) for `UNUserNotificationCenter`;
//! - [`registry`]: which categories to register (merge, prune, bound);
//! - [`android`]: the notification, its at most three actions, RemoteInput
//!   and request codes for `NotificationCompat`;
//! - [`web`]: the browser notification of the web responder;
//! - [`options`]: what the app sets (interruption level, sound, channel
//!   importance, unlock for danger).
//!
//! The action identifiers both platforms use are in [`crate::actions`]; the
//! icon's badge count is the feed's (`feed::pending_count`), and reconciling
//! the notifications on screen with the store is the phone's
//! (`phone::reconcile`).

pub mod android;
pub mod cell;
pub use crate::copy;
pub mod ios;
pub mod options;
pub mod registry;
pub mod web;

pub use options::{ChannelImportance, InterruptionLevel, NotificationSound, PresentOptions};
