//! The device key for end-to-end encrypted pushes, kept by the app: the
//! Keychain on iOS (the access group the extension shares, accessible after
//! first unlock, this device only), the Keystore-backed storage on Android.

use std::sync::Arc;

use crate::error::QpError;

/// Where the app keeps the device's secret key (32 bytes).
#[uniffi::export(with_foreign)]
pub trait DeviceKeyStore: Send + Sync {
    /// The saved key, if any.
    fn load_device_key(&self) -> Option<Vec<u8>>;
    /// Keeps `key`, replacing any other; false if the storage refused.
    fn save_device_key(&self, key: Vec<u8>) -> bool;
}

/// The app's key storage, as the core's port.
pub(crate) struct AppKeys(pub Arc<dyn DeviceKeyStore>);

impl qp_core::phone::DeviceKeyStore for AppKeys {
    fn load_device_key(&self) -> Option<Vec<u8>> {
        self.0.load_device_key()
    }
    fn save_device_key(&self, key: Vec<u8>) -> bool {
        self.0.save_device_key(key)
    }
}

/// The device's public key (base64) from `keys`, made and saved on first
/// use: put it in the `DeviceRegistration` (`publicKey`) sent with pairing
/// or `POST /api/devices`, so pushes are end-to-end encrypted to it.
#[uniffi::export]
pub fn device_public_key(keys: Arc<dyn DeviceKeyStore>) -> Result<String, QpError> {
    Ok(qp_core::phone::device_public_key(&AppKeys(keys))?)
}
