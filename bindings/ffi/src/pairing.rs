//! First run: pairing a phone with a one-time link or code. Forwards to
//! `qp_core::phone::Phone::pair`; the token goes from the server straight to
//! the app's [`SecureStore`] and is never kept by the core.

use std::sync::Arc;

use qp_core::phone::Phone;

use crate::error::QpError;
use crate::types::{DeviceRegistration, PairErrorKind, PairedAccount};

/// The secure storage refused to keep the token.
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum SecureStoreError {
    #[error("{reason}")]
    Failed { reason: String },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for SecureStoreError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        SecureStoreError::Failed { reason: e.reason }
    }
}

/// Where the app keeps the user's token: the Keychain, in an access group
/// the notification extension shares (iOS); Keystore-backed storage
/// (Android). The app's `TokenProvider` reads it back.
#[uniffi::export(with_foreign)]
pub trait SecureStore: Send + Sync {
    fn save_token(&self, user_id: String, token: String) -> Result<(), SecureStoreError>;
}

struct AppSecureStore(Arc<dyn SecureStore>);

impl qp_core::phone::TokenStore for AppSecureStore {
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String> {
        self.0
            .save_token(user_id.to_string(), token.to_string())
            .map_err(|e| e.to_string())
    }
}

/// Exchanges a pairing link (`https://HOST/pair#CODE`, from the QR code) or a
/// bare code (with `server_url`) for the user's token, saved in `store`.
/// With `device`, the push registration is made in the same call. Then
/// construct `PhoneCore` with the returned server and user.
/// The request goes through the transport registered with `setHttpTransport`.
#[uniffi::export(async_runtime = "tokio")]
pub async fn pair_device(
    link_or_code: String,
    server_url: Option<String>,
    device_label: String,
    device: Option<DeviceRegistration>,
    store: Arc<dyn SecureStore>,
) -> Result<PairedAccount, QpError> {
    Ok(Phone::pair(
        &link_or_code,
        server_url.as_deref(),
        &device_label,
        device.as_ref(),
        &AppSecureStore(store),
        &crate::http::Registered,
    )
    .await?)
}

/// Why pairing failed (a `QpError.Pairing`'s `kind`), in the best of
/// `languages` (the person's, most preferred first), for an app that pairs
/// before it holds a `PhoneCore` (else `PhoneCore.pairFailure`). The
/// error's `detail` is the server's or the network's English, for logs.
#[uniffi::export]
pub fn pair_failure_line(kind: PairErrorKind, languages: Vec<String>) -> String {
    qp_core::present::copy::Copy::for_languages(&languages).pair_failure(kind)
}
