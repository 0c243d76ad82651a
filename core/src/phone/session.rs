//! A phone the app can hold from launch: opened before pairing (no user
//! yet), signed in by pairing, signed out (the store emptied, the device
//! removed on the server, the token forgotten), and the device's push
//! registration kept current through the token's whole life.
//!
//! Who is signed in lives in the shared store (the app and its extension
//! read the same, and each process follows it: a sign-out or a new device
//! id in the app is seen by a running extension at its next call), the
//! token in the app's secure storage ([`TokenVault`]). The push token the OS
//! last handed over is kept in the vault too (slot [`PUSH_TOKEN_SLOT`]), so
//! a token given before pairing is registered at sign-in; the store holds
//! only its hash (to know whether a token the OS hands over is new).
//!
//! Signing out offline cannot tell the server. The phone is signed out at
//! once regardless; what the server must still hear (the device removed,
//! the token revoked) is kept as a pending sign-out (in the store, its
//! token moved to a vault slot of its own) and finished at the next moment
//! the phone is online: the next `flush`, `sync`, `sign_in`, or
//! [`Phone::finish_sign_out`]. [`SignOutReport`] and [`SessionStatus`] say
//! when it is still pending, so the app can tell the person. Inside `flush`
//! and `sync` (and `sign_in`) those tries are kept off the send path's
//! budget: [`SIGN_OUT_BUDGET`] for all of them, and after a failed try none
//! until its backoff has passed ([`RetryPolicy::SIGN_OUT`]); one the server
//! has not heard of in [`SIGN_OUT_EXPIRY`], after [`SIGN_OUT_MIN_TRIES`]
//! tries (never one not yet tried), is dropped (its token forgotten) and
//! reported ([`SessionStatus::sign_outs_dropped`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::pair::{DeviceRegistration, PairedAccount, TokenStore};
use super::{Phone, PhoneError};
use crate::copy::Copy;
use crate::http::{HttpMethod, HttpTransport};
use crate::retry::RetryPolicy;
use crate::store::AnswerState;
use crate::store::{Store, StoreMode};
use crate::sync::{server_message, FlushReport, PhoneClient, Reply, SyncError, TokenProvider};

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
    /// A sign-out the server has not heard of yet (made offline): until
    /// the phone is online again that device may still get pushes and the
    /// old token still works. Finished at the next flush, sync or sign-in.
    pub sign_out_pending: bool,
    /// Sign-outs dropped before the server heard of them (pending longer
    /// than [`SIGN_OUT_EXPIRY`], tried [`SIGN_OUT_MIN_TRIES`] times): their device may still get pushes and
    /// their sign-in still works until it is revoked on the server (`qp
    /// admin token revoke`, or another device of the person). Tell the
    /// person; cleared by the next sign-in.
    pub sign_outs_dropped: u32,
}

/// What signing out did. This phone is signed out whatever it says (the
/// store erased, the token gone from the vault's account slot); the rest
/// is what the person may need to hear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignOutReport {
    /// The server confirmed this device is gone (or it was never
    /// registered).
    pub device_removed: bool,
    /// The server confirmed the sign-in token is revoked (or it no longer
    /// took it).
    pub token_revoked: bool,
    /// The server could not be told (offline): the removal and the revoke
    /// are kept and sent at the next moment the phone is online
    /// ([`Phone::finish_sign_out`]; `SessionStatus::sign_out_pending`).
    /// Tell the person this device may still get pushes until then.
    pub server_pending: bool,
    /// Answers that were still unsent after one last try to send them, and
    /// are now dropped with the rest of the store. Ask first with
    /// [`Phone::unsent_answers`].
    pub unsent_answers_dropped: u32,
    /// Answers the system held for a background upload (iOS: tapped on a
    /// notification, [`AnswerState::HandedOver`]): not dropped, as the
    /// system may still deliver them after the sign-out (the server takes
    /// each once, by its idempotency key); only their outcome is no longer
    /// recorded on this phone. Not counted in `unsent_answers_dropped`.
    ///
    /// [`AnswerState::HandedOver`]: crate::store::AnswerState::HandedOver
    pub answers_with_the_system: u32,
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
/// The store's list of [`PendingSignOut`]s (JSON; never a token).
const SIGN_OUT_PENDING: &str = "sign_out_pending";
/// How many pending sign-outs expired untold (until the next sign-in).
const SIGN_OUTS_DROPPED: &str = "sign_outs_dropped";

/// What `flush`, `sync` and `sign_in` give the pending sign-outs, in all,
/// before going on with their own work (a server that does not answer
/// would otherwise cost each of them the client's full timeouts).
pub const SIGN_OUT_BUDGET: Duration = Duration::from_secs(3);
/// A pending sign-out the server has not heard of in this long, after at
/// least [`SIGN_OUT_MIN_TRIES`] tries, is dropped and reported
/// ([`SessionStatus::sign_outs_dropped`]).
pub const SIGN_OUT_EXPIRY: Duration = Duration::from_secs(7 * 24 * 3600);
/// Tries a pending sign-out is given before it may expire: a phone left
/// offline (or unopened) for a week still tries it when it is back, as
/// many times as this before giving up.
pub const SIGN_OUT_MIN_TRIES: u32 = 5;

/// The vault slot of the push token the OS last handed over. Vault slots
/// are user ids (`u_…`: letters, digits, `_`, `-`) or these names with a
/// dot, so they cannot meet.
pub const PUSH_TOKEN_SLOT: &str = "qp.push-token";
/// The prefix of a pending sign-out's vault slot (its token, kept only
/// until the server has revoked it).
const SIGN_OUT_SLOT: &str = "qp.sign-out.";

/// A sign-out the server has not heard of yet.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct PendingSignOut {
    pub(super) server_url: String,
    pub(super) user_id: String,
    pub(super) device_id: Option<String>,
    /// The vault slot holding the token to revoke.
    pub(super) slot: String,
    /// When the person signed out (ms; older entries: when first read).
    #[serde(default = "crate::store::now_ms")]
    pub(super) created_ms: i64,
    /// Tries made by `flush`/`sync` that did not finish it.
    #[serde(default)]
    pub(super) failures: u32,
    /// `flush`/`sync` try it again from then on (ms).
    #[serde(default)]
    pub(super) next_try_ms: i64,
}

/// What telling the server of one sign-out achieved.
#[derive(Debug, Clone, Copy, Default)]
struct Told {
    device_removed: bool,
    token_revoked: bool,
    /// Nothing more to tell (done, or nothing more can be done).
    done: bool,
}

fn random_hex() -> String {
    let mut b = [0u8; 8];
    // Without randomness the slot is still unique enough per phone.
    if getrandom::getrandom(&mut b).is_err() {
        b = (crate::store::now_ms() as u64).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

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
        http: Arc<dyn HttpTransport>,
    ) -> Result<Phone, PhoneError> {
        let store = Store::open(store_path, mode)?;
        let account = read_account(&store)?;
        let phone = Phone {
            store,
            client: std::sync::RwLock::new(None),
            vault: Some(vault),
            http,
            request_timeout: super::request_timeout(mode),
            copy: std::sync::RwLock::new(Arc::new(Copy::for_languages(languages))),
            keys: None,
            device_id: std::sync::RwLock::new(None),
            secret: std::sync::RwLock::new(None),
            foregrounded: Default::default(),
        };
        if let Some(a) = account {
            phone.connect(&a.server_url, &a.user_id)?;
            phone.set_device_id(a.device_id);
        }
        Ok(phone)
    }

    fn new_client(
        &self,
        server_url: &str,
        user_id: &str,
        tokens: Arc<dyn TokenProvider>,
    ) -> PhoneClient {
        PhoneClient::new(
            server_url,
            user_id,
            tokens,
            self.http.clone(),
            self.request_timeout,
        )
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
        let client = self.new_client(server_url, user_id, tokens);
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(client));
        Ok(())
    }

    /// The signed-in account's client. A session phone follows the store,
    /// which the app and its extension share: the other process may have
    /// signed out, or in as someone else, since this one looked. When the
    /// store cannot say now (locked, suspended), the client known last.
    pub(super) fn session_client(&self) -> Option<Arc<PhoneClient>> {
        let known = self
            .client
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if self.vault.is_none() {
            return known;
        }
        let Ok(account) = read_account(&self.store) else {
            return known;
        };
        match (account, &known) {
            (None, None) => None,
            (None, Some(_)) => {
                *self.client.write().unwrap_or_else(|p| p.into_inner()) = None;
                None
            }
            (Some(a), Some(c))
                if c.user_id == a.user_id && c.base_url() == a.server_url.trim_end_matches('/') =>
            {
                known
            }
            (Some(a), _) => match self.connect(&a.server_url, &a.user_id) {
                Ok(()) => self
                    .client
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
                Err(e) => {
                    log::warn!("the stored session could not be opened: {e}");
                    known
                }
            },
        }
    }

    /// This device's registration id as the shared store has it (a session
    /// phone): the app registers, and a running extension must open the
    /// pushes sealed to the new id. `Err` when the store cannot say now.
    pub(super) fn stored_device_id(&self) -> Result<Option<String>, PhoneError> {
        Ok(read_account(&self.store)?.and_then(|a| a.device_id))
    }

    /// True when this is a session phone and the store says nobody is
    /// signed in (another process may have signed out). Then a push is not
    /// recorded nor its words shown (the neutral fallback), and no action
    /// becomes an answer. False when the store cannot say now.
    pub fn is_signed_out(&self) -> bool {
        self.vault.is_some() && matches!(read_account(&self.store), Ok(None))
    }

    /// Where the session stands, with the line to show when it needs the
    /// person (in their language).
    pub fn session_status(&self) -> Result<SessionStatus, PhoneError> {
        let account = read_account(&self.store)?;
        let client = self.session_client();
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
            sign_out_pending: !self.pending_sign_outs()?.is_empty(),
            sign_outs_dropped: self.sign_outs_dropped()?,
        })
    }

    /// The push token the OS last handed over, kept in the vault.
    fn kept_push_token(&self) -> Option<String> {
        self.vault
            .as_ref()?
            .token(PUSH_TOKEN_SLOT)
            .filter(|t| !t.trim().is_empty())
    }

    /// Keeps `push_token` as the one the OS last handed over (a session
    /// phone; best effort: the registration does not depend on it).
    fn keep_push_token(&self, push_token: &str) {
        let Some(vault) = &self.vault else { return };
        if vault.token(PUSH_TOKEN_SLOT).as_deref() == Some(push_token) {
            return;
        }
        if let Err(e) = vault.save_token(PUSH_TOKEN_SLOT, push_token) {
            log::warn!("the push token was not kept in the secure storage: {e}");
        }
    }

    /// `device` with an empty `push_token` filled with the kept one (if any).
    fn with_kept_token(&self, device: &DeviceRegistration) -> DeviceRegistration {
        if !device.push_token.trim().is_empty() {
            return device.clone();
        }
        DeviceRegistration {
            push_token: self.kept_push_token().unwrap_or_default(),
            ..device.clone()
        }
    }

    /// Pairs (see [`Phone::pair`]; the token goes to the vault) and signs
    /// this phone in. Signing in as someone else first erases what the
    /// store held of the previous person. Answers waiting in the outbox
    /// (the server had refused the old token) are sent at once, once.
    ///
    /// `device`: the push registration. Its `push_token` may be empty: the
    /// token the OS handed over before ([`update_push_token`](Self::update_push_token),
    /// often before pairing) is used, or, when none came yet, the
    /// registration is made when one does. A sign-out the server has not
    /// heard of yet is finished first.
    pub async fn sign_in(
        &self,
        link_or_code: &str,
        server_url: Option<&str>,
        device_label: &str,
        device: Option<&DeviceRegistration>,
    ) -> Result<PairedAccount, PhoneError> {
        let vault = self.vault()?.clone();
        // Within its budget: a server that does not answer must not hold
        // the sign-in up.
        match tokio::time::timeout(SIGN_OUT_BUDGET, self.tell_pending(false, false)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => log::warn!("the earlier sign-out is still pending: {e}"),
            Err(_) => log::warn!("the earlier sign-out is still pending: no answer in time"),
        }
        let device = device.map(|d| self.with_kept_token(d));
        let sent = device.as_ref().filter(|d| !d.push_token.is_empty());
        let paired = Phone::pair(
            link_or_code,
            server_url,
            device_label,
            sent,
            &VaultSink(vault.as_ref()),
            &*self.http,
        )
        .await?;
        if let Some(d) = sent {
            self.keep_push_token(&d.push_token);
        }
        let old = read_account(&self.store)?;
        let same_user = old.as_ref().is_some_and(|o| o.user_id == paired.user_id);
        if old.is_some() && !same_user {
            self.erase_keeping_pending()?;
        }
        let (device_id, registration) = match (sent, &paired.device_id) {
            (Some(d), Some(id)) => (
                Some(id.clone()),
                Some(DeviceRegistration {
                    push_token: token_hash(&d.push_token),
                    ..d.clone()
                }),
            ),
            // The registration's fields, no token yet: the first one the OS
            // hands over registers the device (update_push_token).
            _ if device.is_some() => (
                None,
                device.as_ref().map(|d| DeviceRegistration {
                    push_token: String::new(),
                    ..d.clone()
                }),
            ),
            // Signing in again without a registration: the registration is
            // made again below with the push token the OS handed over last
            // (a revoked token took the device with it on the server, and
            // the OS may not hand the same token over again soon); with no
            // token kept, the next one the OS hands over is sent whatever
            // it is.
            _ if same_user => old
                .clone()
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
        self.set_device_id(device_id.clone());
        self.store.clear_state(UNAUTHORIZED)?;
        self.store.clear_state(SIGN_OUTS_DROPPED)?;
        let old_device = old
            .as_ref()
            .filter(|_| same_user)
            .and_then(|o| o.device_id.clone());
        if sent.is_none() && same_user && self.kept_push_token().is_some() {
            // The same person again, no registration given: register again
            // with the kept token (a new device id; the old one, if the
            // server still has it, is removed by register_device).
            if let Some(fields) = read_account(&self.store)?.and_then(|a| a.registration) {
                match self.register_device(&fields).await {
                    Ok(id) => log::info!("signed in again: registered for pushes as {id}"),
                    Err(e) => log::warn!("signed in; the push registration is made later: {e}"),
                }
            }
        } else if let (Some(old_id), Some(new_id)) = (old_device, &device_id) {
            // Registered anew in the pairing call: the old registration (if
            // the server still has it) would only collect duplicate pushes.
            if old_id != *new_id {
                if let Some(client) = self.session_client() {
                    self.delete_device(&client, &old_id).await;
                }
            }
        }
        if self.store.requeue_open()? > 0 {
            match self.flush().await {
                Ok(r) => log::info!("signed in: {} waiting answer(s) sent", r.answered),
                Err(e) => log::warn!("signed in; the waiting answers are sent later: {e}"),
            }
        }
        Ok(paired)
    }

    /// Answers committed here and not delivered yet (queued or sending):
    /// what signing out now would drop if they cannot be sent first.
    pub fn unsent_answers(&self) -> Result<u32, PhoneError> {
        Ok(self
            .store
            .outbox()?
            .iter()
            .filter(|e| e.state.is_open())
            .count() as u32)
    }

    /// The open answers as (held by the system's background upload, still
    /// this process's to send).
    fn open_answers_by_holder(&self) -> Result<(u32, u32), PhoneError> {
        let open: Vec<AnswerState> = self
            .store
            .outbox()?
            .iter()
            .map(|e| e.state)
            .filter(|s| s.is_open())
            .collect();
        let with_the_system = open
            .iter()
            .filter(|s| **s == AnswerState::HandedOver)
            .count() as u32;
        Ok((with_the_system, open.len() as u32 - with_the_system))
    }

    /// Signs out: tries once more to send the unsent answers, erases the
    /// store, forgets the token, and tells the server (this device removed,
    /// `DELETE /api/devices/{id}`; the token revoked, `DELETE
    /// /api/me/token`). This phone is signed out whatever the network does;
    /// what the server could not be told now is kept and told at the next
    /// moment the phone is online (see [`SignOutReport`]). The phone stays
    /// usable, signed out. The push token the OS handed over is kept (it
    /// belongs to the app's install): the next sign-in registers it.
    pub async fn sign_out(&self) -> Result<SignOutReport, PhoneError> {
        let Some(client) = self.session_client() else {
            // Signed out already (perhaps by the other process): nothing of
            // anyone is kept; what the server was not told is tried again.
            self.erase_keeping_pending()?;
            self.set_device_id(None);
            let done = self.finish_sign_out().await.unwrap_or(false);
            return Ok(SignOutReport {
                device_removed: done,
                token_revoked: done,
                server_pending: !done,
                unsent_answers_dropped: 0,
                answers_with_the_system: 0,
            });
        };
        // One last try to deliver what the person answered.
        if self.unsent_answers()? > 0 {
            self.store.requeue_open()?;
            if let Err(e) = self.flush().await {
                log::warn!("signing out: the unsent answers could not be sent: {e}");
            }
        }
        // The system's uploads are not this process's to drop: told apart.
        let (with_the_system, dropped) = self.open_answers_by_holder()?;
        if dropped > 0 {
            log::warn!("signing out drops {dropped} unsent answer(s)");
        }
        if with_the_system > 0 {
            log::info!("signing out: {with_the_system} answer(s) still with the system's background upload");
        }
        let device_id = self.my_device_id();
        // The server told now, with the account's own token.
        let told = self.tell_server_with(&client, device_id.as_deref()).await;
        let mut pending = false;
        if let Some(vault) = &self.vault {
            if !told.done {
                // Offline: the token moves to a slot of its own until the
                // server has revoked it (a sign-in as the same person must
                // not overwrite the one still to revoke).
                let slot = format!("{SIGN_OUT_SLOT}{}", random_hex());
                pending = vault
                    .token(&client.user_id)
                    .is_some_and(|t| vault.save_token(&slot, &t).is_ok());
                self.erase_keeping_pending()?;
                if pending {
                    self.add_pending_sign_out(&PendingSignOut {
                        server_url: client.base_url().to_string(),
                        user_id: client.user_id.clone(),
                        device_id: device_id.filter(|_| !told.device_removed),
                        slot,
                        created_ms: crate::store::now_ms(),
                        failures: 0,
                        next_try_ms: 0,
                    })?;
                } else {
                    log::warn!("signing out: the token could not be kept to tell the server later");
                }
            } else {
                self.erase_keeping_pending()?;
            }
            vault.forget_token(&client.user_id);
        } else {
            // A phone opened for one user (open): the app keeps the token.
            self.store.erase_all()?;
        }
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.set_device_id(None);
        Ok(SignOutReport {
            device_removed: told.device_removed,
            token_revoked: told.token_revoked,
            server_pending: pending,
            unsent_answers_dropped: dropped,
            answers_with_the_system: with_the_system,
        })
    }

    /// Erases the store, keeping the sign-outs still to tell the server
    /// (and the count of those dropped).
    fn erase_keeping_pending(&self) -> Result<(), PhoneError> {
        let pending = self.store.state(SIGN_OUT_PENDING)?;
        let dropped = self.store.state(SIGN_OUTS_DROPPED)?;
        self.store.erase_all()?;
        if let Some(p) = pending {
            self.store.set_state(SIGN_OUT_PENDING, &p)?;
        }
        if let Some(d) = dropped {
            self.store.set_state(SIGN_OUTS_DROPPED, &d)?;
        }
        Ok(())
    }

    fn sign_outs_dropped(&self) -> Result<u32, PhoneError> {
        Ok(self
            .store
            .state(SIGN_OUTS_DROPPED)?
            .and_then(|n| n.parse().ok())
            .unwrap_or(0))
    }

    /// Drops the pending sign-outs older than [`SIGN_OUT_EXPIRY`] that
    /// were tried at least [`SIGN_OUT_MIN_TRIES`] times (their tokens
    /// forgotten), counting them for [`SessionStatus`]. Age alone never
    /// drops one: a phone offline for a week still tries when it is back.
    fn expire_sign_outs(&self) -> Result<(), PhoneError> {
        let now = crate::store::now_ms();
        let expiry = SIGN_OUT_EXPIRY.as_millis() as i64;
        let (expired, kept): (Vec<_>, Vec<_>) =
            self.pending_sign_outs()?.into_iter().partition(|p| {
                now.saturating_sub(p.created_ms) > expiry && p.failures >= SIGN_OUT_MIN_TRIES
            });
        if expired.is_empty() {
            return Ok(());
        }
        for p in &expired {
            log::warn!(
                "a sign-out of {} from {} was never told to the server ({} tries) and is dropped: revoke that sign-in there",
                p.user_id,
                p.server_url,
                p.failures
            );
            if let Some(vault) = &self.vault {
                vault.forget_token(&p.slot);
            }
        }
        self.write_pending(&kept)?;
        let dropped = self.sign_outs_dropped()? + expired.len() as u32;
        Ok(self
            .store
            .set_state(SIGN_OUTS_DROPPED, &dropped.to_string())?)
    }

    pub(super) fn pending_sign_outs(&self) -> Result<Vec<PendingSignOut>, PhoneError> {
        Ok(self
            .store
            .state(SIGN_OUT_PENDING)?
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default())
    }

    pub(super) fn write_pending(&self, pending: &[PendingSignOut]) -> Result<(), PhoneError> {
        if pending.is_empty() {
            return Ok(self.store.clear_state(SIGN_OUT_PENDING)?);
        }
        let json =
            serde_json::to_string(pending).map_err(|e| PhoneError::InvalidInput(e.to_string()))?;
        Ok(self.store.set_state(SIGN_OUT_PENDING, &json)?)
    }

    fn add_pending_sign_out(&self, p: &PendingSignOut) -> Result<(), PhoneError> {
        let mut all = self.pending_sign_outs()?;
        all.push(p.clone());
        self.write_pending(&all)
    }

    /// Records what the server was told of the sign-out in `slot`: done,
    /// it is dropped (and its token forgotten); the device removed, only
    /// the revoke is left.
    fn settle_pending(&self, slot: &str, told: &Told) -> Result<(), PhoneError> {
        let mut all = self.pending_sign_outs()?;
        if told.done {
            all.retain(|p| p.slot != slot);
            if let Some(vault) = &self.vault {
                vault.forget_token(slot);
            }
        } else if told.device_removed {
            for p in all.iter_mut().filter(|p| p.slot == slot) {
                p.device_id = None;
            }
        }
        self.write_pending(&all)
    }

    /// Tells the server of the sign-outs it has not heard of (made
    /// offline): each device removed, each token revoked. True when none is
    /// left pending. `flush`, `sync` and `sign_in` call it; the app may too
    /// (a "sign-out pending" line in its account screen).
    ///
    /// Called by the app, it tries each one now, whatever the backoff, with
    /// the client's own timeouts (the expired are dropped first).
    pub async fn finish_sign_out(&self) -> Result<bool, PhoneError> {
        self.tell_pending(false, false).await
    }

    /// Tells the server of the pending sign-outs: all, or only those whose
    /// backoff has passed (`only_due`). With `backoff`, each try counts as
    /// failed before it is made (a try cut short by the budget, or by the
    /// process ending, counts too) and the next is set after the policy's
    /// delay; one that succeeds is dropped from the list.
    async fn tell_pending(&self, only_due: bool, backoff: bool) -> Result<bool, PhoneError> {
        self.expire_sign_outs()?;
        let now = crate::store::now_ms();
        let mut all = self.pending_sign_outs()?;
        let due: Vec<PendingSignOut> = all
            .iter()
            .filter(|p| !only_due || p.next_try_ms <= now)
            .cloned()
            .collect();
        if backoff && !due.is_empty() {
            for p in all
                .iter_mut()
                .filter(|p| due.iter().any(|d| d.slot == p.slot))
            {
                p.failures = p.failures.saturating_add(1);
                let wait = RetryPolicy::SIGN_OUT.delay(p.failures).as_millis() as i64;
                p.next_try_ms = now.saturating_add(wait);
            }
            self.write_pending(&all)?;
        }
        for p in &due {
            let told = self.tell_server(p).await;
            self.settle_pending(&p.slot, &told)?;
        }
        Ok(self.pending_sign_outs()?.is_empty())
    }

    /// The sign-outs still pending, tried when the phone reaches the server
    /// anyway: those due (backoff), within [`SIGN_OUT_BUDGET`] in all
    /// (errors only logged: the caller's own call goes on).
    pub(super) async fn retry_sign_out(&self) {
        match self.pending_sign_outs() {
            Ok(p) if p.is_empty() => {}
            Ok(_) => {
                match tokio::time::timeout(SIGN_OUT_BUDGET, self.tell_pending(true, true)).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => log::warn!("the pending sign-out: {e}"),
                    Err(_) => log::info!(
                        "the pending sign-out: no answer within {SIGN_OUT_BUDGET:?}; tried again after its backoff"
                    ),
                }
            }
            Err(e) => log::debug!("the pending sign-out cannot be read now: {e}"),
        }
    }

    /// One pending sign-out told to the server with its parked token.
    async fn tell_server(&self, p: &PendingSignOut) -> Told {
        let Some(vault) = &self.vault else {
            return Told::default();
        };
        if vault.token(&p.slot).is_none_or(|t| t.is_empty()) {
            // Nothing left to authenticate with: nothing more can be done.
            return Told {
                done: true,
                ..Told::default()
            };
        }
        let tokens = Arc::new(VaultTokens {
            vault: vault.clone(),
            user_id: p.slot.clone(),
        });
        let client = self.new_client(&p.server_url, &p.user_id, tokens);
        self.tell_server_with(&client, p.device_id.as_deref()).await
    }

    /// The device removed, then the token revoked, with `client`'s token.
    async fn tell_server_with(&self, client: &PhoneClient, device_id: Option<&str>) -> Told {
        let device_removed = match device_id {
            Some(id) => self.delete_device(client, id).await,
            None => true,
        };
        if !device_removed {
            return Told::default();
        }
        let reply = client
            .send(HttpMethod::Delete, "/api/me/token", None, None)
            .await;
        let (token_revoked, done) = match reply {
            // Revoked now, or the server no longer takes it.
            Ok(Reply::Status(200 | 204 | 401, _)) => (true, true),
            Ok(Reply::Status(status @ (404 | 405), _)) => {
                log::warn!(
                    "the server cannot revoke the sign-in ({status}): revoke it there (qp admin token revoke)"
                );
                (false, true)
            }
            Ok(Reply::Status(status, body)) => {
                log::warn!("sign-in not revoked: {status} {}", server_message(&body));
                (false, false)
            }
            Ok(Reply::Unreachable(e)) => {
                log::warn!("sign-in not revoked: {e}");
                (false, false)
            }
            Err(e) => {
                log::warn!("sign-in not revoked: {e}");
                (false, false)
            }
        };
        Told {
            device_removed,
            token_revoked,
            done,
        }
    }

    /// True when the server says the device is gone: removed now (204),
    /// not there (404), or the token is refused (401: a revoked token takes
    /// its devices with it).
    async fn delete_device(&self, client: &PhoneClient, id: &str) -> bool {
        let reply = client
            .send(
                HttpMethod::Delete,
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
    /// the registration made before; returns the device id. An empty
    /// `push_token` is the one the OS handed over last (kept by the core).
    pub async fn register_device(&self, device: &DeviceRegistration) -> Result<String, PhoneError> {
        let client = self.client()?;
        let device = self.with_kept_token(device);
        if device.push_token.is_empty() {
            return Err(PhoneError::InvalidInput(
                "push_token: empty, and the OS has not handed one over yet (call update_push_token when it does)"
                    .into(),
            ));
        }
        let body = device.to_json();
        let reply = client
            .send(HttpMethod::Post, "/api/devices", Some(&body), None)
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
        self.keep_push_token(&device.push_token);
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
    /// call it every time, signed in or not. The token is kept (in the
    /// vault); the registration is sent again, with the same fields, only
    /// when the token changed, or the device key did (a phone restored from
    /// a backup): true when it was. Before pairing, after
    /// signing out or after [`unregister`](Self::unregister) it is only
    /// kept (false): the next `sign_in` (or `register_device` with an empty
    /// token) registers it.
    pub async fn update_push_token(&self, push_token: &str) -> Result<bool, PhoneError> {
        let push_token = push_token.trim();
        if push_token.is_empty() {
            return Err(PhoneError::InvalidInput(
                "push_token: must not be empty".into(),
            ));
        }
        self.keep_push_token(push_token);
        let registration = match self.session_client() {
            Some(_) => read_account(&self.store)?.and_then(|a| a.registration),
            None => None,
        };
        let Some(registration) = registration else {
            if self.vault.is_some() {
                log::info!("push token kept: it is registered at the next sign-in");
                return Ok(false);
            }
            return Err(PhoneError::InvalidInput(
                "push_token: no device registered yet to update (register_device first)".into(),
            ));
        };
        // The device key now, when the registration carries one: a phone
        // restored from a backup is still signed in (token and store came
        // along) but has a new key (kept on the device only), and pushes
        // sealed to the old one would show the generic notification.
        let key_now = registration
            .public_key
            .as_ref()
            .and_then(|_| self.device_public_key().ok());
        let key_changed = key_now
            .as_ref()
            .is_some_and(|k| registration.public_key.as_deref() != Some(k.as_str()));
        if registration.push_token == token_hash(push_token) && !key_changed {
            return Ok(false);
        }
        let device = DeviceRegistration {
            push_token: push_token.to_string(),
            public_key: key_now.or(registration.public_key.clone()),
            ..registration
        };
        self.register_device(&device).await?;
        Ok(true)
    }

    /// Stops pushes to this device (the person turned notifications off):
    /// removes the registration on the server and here. True when the
    /// server confirmed. The push token stays kept: `register_device` with
    /// an empty token (or the next sign-in) registers again.
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
