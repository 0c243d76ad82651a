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

use std::sync::Arc;

use super::{Phone, PhoneError};
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

/// The device key of a phone: made, rotated, loaded once.
impl Phone {
    /// End-to-end encrypted pushes: the device key is kept in `keys` (made
    /// on first use by [`device_public_key`](Self::device_public_key)), and
    /// `device_id` (this device's registration, when known) must be the one
    /// a sealed push names.
    pub fn with_device_keys(
        mut self,
        keys: Arc<dyn DeviceKeyStore>,
        device_id: Option<String>,
    ) -> Phone {
        self.keys = Some(keys);
        self.set_device_id(device_id);
        self
    }

    /// This device's registration id, once known (after registering).
    pub fn set_device_id(&self, device_id: Option<String>) {
        *self.device_id.write().unwrap_or_else(|p| p.into_inner()) =
            device_id.filter(|d| !d.is_empty());
    }

    /// This device's registration id: a session phone's from the shared
    /// store (the app may have registered again since this process, the
    /// extension say, looked), else (or when the store cannot say now) the
    /// one known last.
    pub(super) fn my_device_id(&self) -> Option<String> {
        if self.vault.is_some() {
            if let Ok(stored) = self.stored_device_id() {
                return stored;
            }
        }
        self.device_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// This device's public key (base64), to send with the device
    /// registration (`public_key`); made and saved on first use.
    pub fn device_public_key(&self) -> Result<String, PhoneError> {
        let keys = self.key_store()?;
        let secret = match self.device_secret() {
            Some(s) => s,
            None => load_or_create(keys.as_ref())?,
        };
        let public = secret.public().to_base64();
        *self.secret.write().unwrap_or_else(|p| p.into_inner()) = Some(secret);
        Ok(public)
    }

    /// A new key pair, replacing the old one (register the device again
    /// with the returned public key; pushes sealed to the old key then show
    /// the generic notification).
    pub fn rotate_device_key(&self) -> Result<String, PhoneError> {
        let secret = create(self.key_store()?.as_ref())?;
        let public = secret.public().to_base64();
        *self.secret.write().unwrap_or_else(|p| p.into_inner()) = Some(secret);
        Ok(public)
    }

    fn key_store(&self) -> Result<&Arc<dyn DeviceKeyStore>, PhoneError> {
        self.keys.as_ref().ok_or_else(|| {
            PhoneError::InvalidInput("no device key storage was given (with_device_keys)".into())
        })
    }

    /// The device key, loaded once from the key storage.
    pub(super) fn device_secret(&self) -> Option<DeviceSecret> {
        if let Some(s) = self
            .secret
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            return Some(s.clone());
        }
        let bytes = self.keys.as_ref()?.load_device_key()?;
        let secret = DeviceSecret::from_bytes(&bytes).ok()?;
        *self.secret.write().unwrap_or_else(|p| p.into_inner()) = Some(secret.clone());
        Some(secret)
    }
}
