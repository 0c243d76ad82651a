//! A phone the app can hold from launch: opened before pairing (no user
//! yet), signed in by pairing, signed out (the store emptied, the device
//! removed on the server, the token forgotten), and the device's push
//! registration kept current through the token's whole life.
//!
//! Who is signed in lives in the shared store (the app and its extension
//! read the same), the token in the app's secure storage ([`TokenVault`]),
//! and the push token only as a hash (to know whether a token the OS hands
//! over is new).

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::pair::{DeviceRegistration, PairedAccount, TokenStore};
use super::{Phone, PhoneError};
use crate::present::copy::Copy;
use crate::store::{Store, StoreMode};
use crate::sync::{
    server_message, FlushReport, PhoneClient, Reply, SyncError, TokenProvider, Trust,
};

/// Where the app keeps each user's token: the Keychain (in an access group
/// the extension shares) on iOS, Keystore-backed storage on Android. The
/// core asks it for the token of each request and never keeps a copy.
pub trait TokenVault: Send + Sync {
    /// Keep `token` for `user_id`, replacing any earlier one.
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String>;
    /// The token kept for `user_id`, if any.
    fn token(&self, user_id: &str) -> Option<String>;
    /// Forget the token of `user_id` (signing out).
    fn forget_token(&self, user_id: &str);
}

/// The vault as the client's token source, for one user.
struct VaultTokens {
    vault: Arc<dyn TokenVault>,
    user_id: String,
}

impl TokenProvider for VaultTokens {
    fn token(&self) -> Option<String> {
        self.vault.token(&self.user_id)
    }
}

/// The vault as pairing's token sink.
struct VaultSink<'a>(&'a dyn TokenVault);

impl TokenStore for VaultSink<'_> {
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String> {
        self.0.save_token(user_id, token)
    }
}

/// Where the session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Never paired, or signed out: pair to start.
    SignedOut,
    SignedIn,
    /// The server refused the token (revoked, expired): answers wait in the
    /// outbox until the person signs in again (pairs).
    Unauthorized,
}

/// The session, for the app's account screen and status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStatus {
    pub state: SessionState,
    pub user_id: Option<String>,
    pub display_name: Option<String>,
    pub server_url: Option<String>,
    /// This device's registration on the server, when registered.
    pub device_id: Option<String>,
    /// What to tell the person, in their language, when something is
    /// wrong ("Signed out by the server: pair this phone again…").
    pub line: Option<String>,
}

/// What signing out did on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignOutReport {
    /// The server confirmed this device is gone (or it was never
    /// registered). False when the server could not be reached: this phone
    /// is signed out regardless, and the server drops the device at its
    /// first failed push or when the token is revoked.
    pub device_removed: bool,
}

/// The store's record of the session (no secrets).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Account {
    server_url: String,
    user_id: String,
    display_name: String,
    device_id: Option<String>,
    /// The last registration sent, its `push_token` replaced by
    /// [`token_hash`].
    registration: Option<DeviceRegistration>,
}

const ACCOUNT: &str = "account";
const UNAUTHORIZED: &str = "unauthorized";

/// A push token as the store keeps it: enough to tell a new one.
fn token_hash(push_token: &str) -> String {
    sha2::Sha256::digest(push_token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn read_account(store: &Store) -> Result<Option<Account>, PhoneError> {
    Ok(store
        .state(ACCOUNT)?
        .and_then(|json| serde_json::from_str(&json).ok()))
}

fn write_account(store: &Store, account: &Account) -> Result<(), PhoneError> {
    let json =
        serde_json::to_string(account).map_err(|e| PhoneError::InvalidInput(e.to_string()))?;
    Ok(store.set_state(ACCOUNT, &json)?)
}

impl Phone {
    /// A phone the app opens at launch, before or after pairing: signed in
    /// as whoever the store says (with the token from `vault`), or signed
    /// out. See [`Phone::open`] for the other arguments.
    pub fn open_session(
        store_path: &Path,
        mode: StoreMode,
        vault: Arc<dyn TokenVault>,
        languages: &[String],
        trust: &Trust,
    ) -> Result<Phone, PhoneError> {
        trust.check().map_err(PhoneError::InvalidInput)?;
        let store = Store::open(store_path, mode)?;
        let account = read_account(&store)?;
        let phone = Phone {
            store,
            client: std::sync::RwLock::new(None),
            vault: Some(vault),
            trust: trust.clone(),
            copy: std::sync::RwLock::new(Arc::new(Copy::for_languages(languages))),
            keys: None,
            device_id: std::sync::RwLock::new(None),
            secret: std::sync::RwLock::new(None),
        };
        if let Some(a) = account {
            phone.connect(&a.server_url, &a.user_id)?;
            phone.set_device_id(a.device_id);
        }
        Ok(phone)
    }

    fn vault(&self) -> Result<&Arc<dyn TokenVault>, PhoneError> {
        self.vault.as_ref().ok_or_else(|| {
            PhoneError::InvalidInput(
                "this phone was opened for one user (open); sessions need open_session".into(),
            )
        })
    }

    fn connect(&self, server_url: &str, user_id: &str) -> Result<(), PhoneError> {
        let tokens = Arc::new(VaultTokens {
            vault: self.vault()?.clone(),
            user_id: user_id.to_string(),
        });
        let client = PhoneClient::with_trust(server_url, user_id, tokens, &self.trust)?;
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(client));
        Ok(())
    }

    /// Where the session stands, with the line to show when it needs the
    /// person (in their language).
    pub fn session_status(&self) -> Result<SessionStatus, PhoneError> {
        let account = read_account(&self.store)?;
        let client = self
            .client
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let unauthorized = self.store.state(UNAUTHORIZED)?.is_some();
        let state = match (&client, unauthorized) {
            (None, _) => SessionState::SignedOut,
            (Some(_), true) => SessionState::Unauthorized,
            (Some(_), false) => SessionState::SignedIn,
        };
        let line = (state == SessionState::Unauthorized).then(|| self.copy().sign_in_again());
        Ok(SessionStatus {
            state,
            user_id: client.as_ref().map(|c| c.user_id.clone()),
            display_name: account.as_ref().map(|a| a.display_name.clone()),
            server_url: client.as_ref().map(|c| c.base_url().to_string()),
            device_id: self.my_device_id(),
            line,
        })
    }

    /// Pairs (see [`Phone::pair`]; the token goes to the vault) and signs
    /// this phone in. Signing in as someone else first erases what the
    /// store held of the previous person. Answers waiting in the outbox
    /// (the server had refused the old token) are sent at once, once.
    pub async fn sign_in(
        &self,
        link_or_code: &str,
        server_url: Option<&str>,
        device_label: &str,
        device: Option<&DeviceRegistration>,
    ) -> Result<PairedAccount, PhoneError> {
        let vault = self.vault()?.clone();
        let paired = Phone::pair(
            link_or_code,
            server_url,
            device_label,
            device,
            &VaultSink(vault.as_ref()),
            &self.trust,
        )
        .await?;
        let old = read_account(&self.store)?;
        let same_user = old.as_ref().is_some_and(|o| o.user_id == paired.user_id);
        if old.is_some() && !same_user {
            self.store.erase_all()?;
        }
        let (device_id, registration) = match (device, &paired.device_id) {
            (Some(d), Some(id)) => (
                Some(id.clone()),
                Some(DeviceRegistration {
                    push_token: token_hash(&d.push_token),
                    ..d.clone()
                }),
            ),
            // Signing in again without a registration: the device is kept
            // (signing out removes it), and the next push token the OS hands
            // over is sent whatever it is (a revoked token took the device
            // with it on the server).
            _ if same_user => old
                .map(|o| {
                    let kept = o.registration.map(|r| DeviceRegistration {
                        push_token: String::new(),
                        ..r
                    });
                    (o.device_id, kept)
                })
                .unwrap_or_default(),
            _ => (None, None),
        };
        write_account(
            &self.store,
            &Account {
                server_url: paired.server_url.clone(),
                user_id: paired.user_id.clone(),
                display_name: paired.display_name.clone(),
                device_id: device_id.clone(),
                registration,
            },
        )?;
        self.connect(&paired.server_url, &paired.user_id)?;
        self.set_device_id(device_id);
        self.store.clear_state(UNAUTHORIZED)?;
        if self.store.requeue_open()? > 0 {
            match self.flush().await {
                Ok(r) => log::info!("signed in: {} waiting answer(s) sent", r.answered),
                Err(e) => log::warn!("signed in; the waiting answers are sent later: {e}"),
            }
        }
        Ok(paired)
    }

    /// Signs out: removes this device on the server (`DELETE
    /// /api/devices/{id}`), erases the store and forgets the token in the
    /// vault. The phone stays usable, signed out.
    pub async fn sign_out(&self) -> Result<SignOutReport, PhoneError> {
        let client = self
            .client
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let device_removed = match (&client, self.my_device_id()) {
            (Some(c), Some(id)) => self.delete_device(c, &id).await,
            _ => true,
        };
        self.store.erase_all()?;
        if let (Some(c), Some(vault)) = (&client, &self.vault) {
            vault.forget_token(&c.user_id);
        }
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.set_device_id(None);
        Ok(SignOutReport { device_removed })
    }

    /// True when the server says the device is gone: removed now (204),
    /// not there (404), or the token is refused (401: a revoked token takes
    /// its devices with it).
    async fn delete_device(&self, client: &PhoneClient, id: &str) -> bool {
        let reply = client
            .send(
                reqwest::Method::DELETE,
                &format!("/api/devices/{id}"),
                None,
                None,
            )
            .await;
        match reply {
            Ok(Reply::Status(204 | 404 | 401, _)) => true,
            Ok(Reply::Status(status, body)) => {
                log::warn!("device not removed: {status} {}", server_message(&body));
                false
            }
            Ok(Reply::Unreachable(e)) => {
                log::warn!("device not removed: {e}");
                false
            }
            Err(e) => {
                log::warn!("device not removed: {e}");
                false
            }
        }
    }

    /// Registers this device for pushes (`POST /api/devices`), replacing
    /// the registration made before; returns the device id.
    pub async fn register_device(&self, device: &DeviceRegistration) -> Result<String, PhoneError> {
        let client = self.client()?;
        let body = device.to_json();
        let reply = client
            .send(reqwest::Method::POST, "/api/devices", Some(&body), None)
            .await?;
        let id = match reply {
            Reply::Status(201 | 200, bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v["id"].as_str().map(String::from))
                .ok_or_else(|| {
                    PhoneError::Network("the server's answer has no device id".into())
                })?,
            Reply::Status(401, bytes) => {
                self.note_auth::<()>(&Err(SyncError::Unauthorized(server_message(&bytes))));
                return Err(PhoneError::Unauthorized(server_message(&bytes)));
            }
            Reply::Status(status @ (400 | 409 | 422), bytes) => {
                return Err(PhoneError::InvalidInput(format!(
                    "the server refused the registration ({status}): {}",
                    server_message(&bytes)
                )))
            }
            Reply::Status(status, bytes) => {
                return Err(PhoneError::Network(format!(
                    "the server answered {status}: {}",
                    server_message(&bytes)
                )))
            }
            Reply::Unreachable(e) => return Err(PhoneError::Network(e)),
        };
        let mut account = read_account(&self.store)?.unwrap_or_else(|| Account {
            server_url: client.base_url().to_string(),
            user_id: client.user_id.clone(),
            display_name: String::new(),
            device_id: None,
            registration: None,
        });
        let old = account.device_id.replace(id.clone());
        account.registration = Some(DeviceRegistration {
            push_token: token_hash(&device.push_token),
            ..device.clone()
        });
        write_account(&self.store, &account)?;
        self.set_device_id(Some(id.clone()));
        // A new push token is a new device on the server: the old one (its
        // token dead) would only collect failed pushes.
        if let Some(old) = old.filter(|o| *o != id) {
            self.delete_device(&client, &old).await;
        }
        Ok(id)
    }

    /// The OS handed over a push token (iOS
    /// `didRegisterForRemoteNotificationsWithDeviceToken`, FCM `onNewToken`):
    /// call it every time. The registration is sent again, with the same
    /// fields, only when the token changed; true when it was.
    pub async fn update_push_token(&self, push_token: &str) -> Result<bool, PhoneError> {
        let account = read_account(&self.store)?;
        let Some(registration) = account.and_then(|a| a.registration) else {
            return Err(PhoneError::InvalidInput(
                "no device registered yet: give the registration to sign_in or register_device"
                    .into(),
            ));
        };
        if registration.push_token == token_hash(push_token) {
            return Ok(false);
        }
        let device = DeviceRegistration {
            push_token: push_token.to_string(),
            ..registration
        };
        self.register_device(&device).await?;
        Ok(true)
    }

    /// Stops pushes to this device (the person turned notifications off):
    /// removes the registration on the server and here. True when the
    /// server confirmed.
    pub async fn unregister(&self) -> Result<bool, PhoneError> {
        let client = self.client()?;
        let Some(id) = self.my_device_id() else {
            return Ok(true);
        };
        let removed = self.delete_device(&client, &id).await;
        if removed {
            if let Some(mut account) = read_account(&self.store)? {
                account.device_id = None;
                account.registration = None;
                write_account(&self.store, &account)?;
            }
            self.set_device_id(None);
        }
        Ok(removed)
    }

    /// Records what a flush learned of the token.
    pub(super) fn note_flush(&self, report: &FlushReport) {
        if report.unauthorized {
            self.mark_unauthorized(true);
        } else if report.answered + report.already_resolved + report.rejected > 0 {
            self.mark_unauthorized(false);
        }
    }

    /// Records what a request to the server learned of the token.
    pub(super) fn note_auth<T>(&self, result: &Result<T, SyncError>) {
        match result {
            Err(SyncError::Unauthorized(_)) => self.mark_unauthorized(true),
            Ok(_) => self.mark_unauthorized(false),
            Err(_) => {}
        }
    }

    fn mark_unauthorized(&self, refused: bool) {
        let done = if refused {
            self.store.set_state(UNAUTHORIZED, "true")
        } else {
            self.store.clear_state(UNAUTHORIZED)
        };
        // The state is a hint for the status line; the outbox is the truth.
        if let Err(e) = done {
            log::warn!("session state not recorded: {e}");
        }
    }
}
