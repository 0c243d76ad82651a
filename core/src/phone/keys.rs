//! The device's key pair for end-to-end encrypted pushes.
//!
//! The secret key lives in the platform's key storage, behind
//! [`DeviceKeyStore`], which the app implements: the Keychain on iOS (an
//! access group shared with the extension, accessible after first unlock,
//! this device only), the Keystore-backed storage on Android. Not in the
//! shared SQLite store: that file is readable by anything that can read the
//! app's container (backups, a copied file), and a key there would let them
//! read every question ever pushed. The core caches the key in memory for the
//! life of the process.

/// Where the app keeps the device's secret key (32 bytes).
pub trait DeviceKeyStore: Send + Sync {
    /// The saved key, if any.
    fn load_device_key(&self) -> Option<Vec<u8>>;
    /// Keeps `key`, replacing any other; false if the storage refused.
    fn save_device_key(&self, key: Vec<u8>) -> bool;
}

use super::PhoneError;
use crate::e2e::DeviceSecret;

/// The saved key, or a new one made and saved now.
pub(crate) fn load_or_create(keys: &dyn DeviceKeyStore) -> Result<DeviceSecret, PhoneError> {
    if let Some(secret) = keys
        .load_device_key()
        .and_then(|b| DeviceSecret::from_bytes(&b).ok())
    {
        return Ok(secret);
    }
    create(keys)
}

/// A new key, saved (replacing any other).
pub(crate) fn create(keys: &dyn DeviceKeyStore) -> Result<DeviceSecret, PhoneError> {
    let secret = DeviceSecret::generate().map_err(|e| PhoneError::InvalidInput(e.to_string()))?;
    if !keys.save_device_key(secret.to_bytes()) {
        return Err(PhoneError::InvalidInput(
            "the platform's key storage refused the device key".into(),
        ));
    }
    Ok(secret)
}

/// The device's public key (base64) from `keys`, made on first use: for the
/// registration sent with pairing, before a `Phone` is opened.
pub fn device_public_key(keys: &dyn DeviceKeyStore) -> Result<String, PhoneError> {
    Ok(load_or_create(keys)?.public().to_base64())
}
