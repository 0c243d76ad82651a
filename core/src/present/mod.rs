//! What a person sees for a question, decided once for both platforms:
//! - [`cell`]: a feed cell (spec 6.2) from a question alone (phone and web);
//! - [`copy`]: every user-facing string, in one table (translatable later);
//! - [`ios`]: the notification content and the per-question category
//!   (actions, text-input action) for `UNUserNotificationCenter`;
//! - [`registry`]: which categories to register (merge, prune, bound);
//! - [`android`]: the notification, its at most three actions, RemoteInput
//!   and request codes for `NotificationCompat`;
//! - [`web`]: the browser notification of the web responder;
//! - [`options`]: what the app sets (interruption level, sound, channel
//!   importance, unlock for danger); [`badge`]: the icon's pending count.

pub mod android;
#[cfg(feature = "phone")]
pub mod badge;
pub mod cell;
pub mod copy;
pub mod ios;
pub mod options;
#[cfg(feature = "phone")]
pub mod reconcile;
pub mod registry;
pub mod web;

pub use options::{ChannelImportance, InterruptionLevel, NotificationSound, PresentOptions};
