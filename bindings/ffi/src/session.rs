//! The session the app holds from launch: `PhoneCore.openSession` before
//! pairing, `signIn`, `signOut`, and the push registration's life
//! (`registerDevice`, `updatePushToken`, `unregister`). Forwards to
//! `qp_core::phone` (the `session` module), where the rules live.

use std::sync::Arc;

use crate::pairing::SecureStoreError;

/// Where the app keeps each user's token: the Keychain in an access group
/// the notification extension shares (iOS), Keystore-backed storage
/// (Android). The core reads the token for each request and keeps no copy.
#[uniffi::export(with_foreign)]
pub trait TokenVault: Send + Sync {
    /// Keep `token` for `user_id`, replacing any earlier one.
    fn save_token(&self, user_id: String, token: String) -> Result<(), SecureStoreError>;
    /// The token kept for `user_id`, if any.
    fn token(&self, user_id: String) -> Option<String>;
    /// Forget the token of `user_id` (signing out).
    fn forget_token(&self, user_id: String);
}

/// The app's vault, as the core's port.
pub(crate) struct AppVault(pub Arc<dyn TokenVault>);

impl qp_core::phone::TokenVault for AppVault {
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String> {
        self.0
            .save_token(user_id.to_string(), token.to_string())
            .map_err(|e| e.to_string())
    }
    fn token(&self, user_id: &str) -> Option<String> {
        self.0.token(user_id.to_string())
    }
    fn forget_token(&self, user_id: &str) {
        self.0.forget_token(user_id.to_string())
    }
}
