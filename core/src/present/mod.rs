//! What a person sees for a question, decided once for both platforms:
//! - [`copy`]: every user-facing string, in one table (translatable later);
//! - [`ios`]: the notification content and the per-question category
//!   (actions, text-input action) for `UNUserNotificationCenter`;
//! - [`registry`]: which categories to register (merge, prune, bound);
//! - [`android`]: the notification, its at most three actions, RemoteInput
//!   and request codes for `NotificationCompat`.

pub mod android;
pub mod copy;
pub mod ios;
#[cfg(feature = "phone")]
pub mod reconcile;
pub mod registry;

/// Options an app sets once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PresentOptions {
    /// `danger` answers need the device unlocked (iOS `.authenticationRequired`;
    /// Android `setAuthenticationRequired`).
    pub require_unlock_for_danger: bool,
}
