//! `PhoneCore`, the object Swift and Kotlin hold: one per process (the app,
//! or one run of the notification extension). Every method forwards to
//! [`qp_core::phone::Phone`], where the phone's rules live; this file only
//! converts arguments and errors.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use qp_core::phone::{Phone, PhoneError};
use qp_core::present::PresentOptions;

use crate::error::QpError;
use crate::http::{Handover, HandoverResult, Registered};
use crate::keys::{AppKeys, DeviceKeyStore};
use crate::observe::{AppListener, FeedListener, FeedSubscription};
use crate::session::{AppVault, TokenVault};
use crate::types::{
    AndroidChannel, AndroidNotification, CommittedAnswer, DecodedPush, FallbackNotification,
    FeedCell, FlushReport, IosNotification, IosResolvedNotification, MyAnswer, PushQuestion,
    ReconcilePlan, RegistryPlan, StoreMode, SyncReport, Timestamp,
};
use crate::types::{
    DeviceRegistration, PairErrorKind, PairedAccount, SessionStatus, SignOutReport,
};
use qp_core::phone::off_thread;

/// Supplies the signed-in user's token, from the Keychain or the Keystore.
/// Asked for each request; the core never stores or logs it.
#[uniffi::export(with_foreign)]
pub trait TokenProvider: Send + Sync {
    /// The current token, or `None` when signed out.
    fn token(&self) -> Option<String>;
}

/// The app's provider, as the core's port.
struct AppTokens(Arc<dyn TokenProvider>);

impl qp_core::sync::TokenProvider for AppTokens {
    fn token(&self) -> Option<String> {
        self.0.token()
    }
}

#[derive(uniffi::Object)]
pub struct PhoneCore {
    inner: Phone,
}

impl PhoneCore {
    /// The phone inside (Rust tests and benchmarks).
    pub fn phone(&self) -> &Phone {
        &self.inner
    }

    /// A phone error for the app: the messages a person reads (a too-long
    /// reply, a tap that is not an answer) in their language.
    fn error(&self, e: PhoneError) -> QpError {
        let people = self.inner.describe(&e);
        let mut out = QpError::from(e);
        if let QpError::Action { detail, .. } = &mut out {
            *detail = people;
        }
        out
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl PhoneCore {
    /// Opens the store shared by the app and its extension. `mode` is
    /// `Extension` inside the notification extension. Requests go through
    /// the transport registered with `setHttpTransport` (the platform's
    /// network stack: its proxies, trust store and VPN).
    ///
    /// End-to-end encrypted pushes: give `device_keys` (the app's key
    /// storage; the key is made on first use) and, once registered,
    /// `device_id` (a sealed push must name this device).
    #[uniffi::constructor(default(device_keys = None, device_id = None))]
    #[allow(clippy::too_many_arguments)] // the FFI constructor: defaults keep call sites short
    pub fn new(
        store_path: String,
        mode: StoreMode,
        server_url: String,
        user_id: String,
        tokens: Arc<dyn TokenProvider>,
        languages: Vec<String>,
        device_keys: Option<Arc<dyn DeviceKeyStore>>,
        device_id: Option<String>,
    ) -> Result<Arc<Self>, QpError> {
        let mut inner = Phone::open(
            Path::new(&store_path),
            mode,
            &server_url,
            &user_id,
            Arc::new(AppTokens(tokens)),
            &languages,
            Arc::new(Registered),
        )?;
        if let Some(keys) = device_keys {
            inner = inner.with_device_keys(Arc::new(AppKeys(keys)), device_id);
        }
        Ok(Arc::new(PhoneCore { inner }))
    }

    /// The phone the app opens at launch, before pairing or after: signed
    /// in as whoever the store says (the token read from `vault`), or
    /// signed out until `signIn`. Other arguments as for the constructor.
    #[uniffi::constructor(default(device_keys = None))]
    pub fn open_session(
        store_path: String,
        mode: StoreMode,
        vault: Arc<dyn TokenVault>,
        languages: Vec<String>,
        device_keys: Option<Arc<dyn DeviceKeyStore>>,
    ) -> Result<Arc<Self>, QpError> {
        let mut inner = Phone::open_session(
            Path::new(&store_path),
            mode,
            Arc::new(AppVault(vault)),
            &languages,
            Arc::new(Registered),
        )?;
        if let Some(keys) = device_keys {
            let id = inner.session_status()?.device_id;
            inner = inner.with_device_keys(Arc::new(AppKeys(keys)), id);
        }
        Ok(Arc::new(PhoneCore { inner }))
    }

    /// Where the session stands; `line` is what to tell the person (in
    /// their language) when it needs them.
    pub fn session_status(&self) -> Result<SessionStatus, QpError> {
        Ok(self.inner.session_status()?)
    }

    /// Pairs with a link or code (the token goes to the vault) and signs
    /// this phone in; with `device`, registers it for pushes in the same
    /// call. Answers that waited for a new sign-in are sent now, once.
    #[uniffi::method(default(server_url = None, device = None))]
    pub async fn sign_in(
        &self,
        link_or_code: String,
        device_label: String,
        server_url: Option<String>,
        device: Option<DeviceRegistration>,
    ) -> Result<PairedAccount, QpError> {
        Ok(self
            .inner
            .sign_in(
                &link_or_code,
                server_url.as_deref(),
                &device_label,
                device.as_ref(),
            )
            .await?)
    }

    /// Signs out: one last try to send the unsent answers, the store
    /// erased, the token forgotten; the server told (device removed, token
    /// revoked) now, or, offline, at the next moment online. The report
    /// says what was dropped and what is still pending.
    pub async fn sign_out(&self) -> Result<SignOutReport, QpError> {
        Ok(self.inner.sign_out().await?)
    }

    /// Answers not delivered yet: what signing out now may drop.
    pub fn unsent_answers(&self) -> Result<u32, QpError> {
        Ok(self.inner.unsent_answers()?)
    }

    /// Tells the server of a sign-out made offline (`flush`, `sync` and
    /// `signIn` do it too). True when none is left pending.
    pub async fn finish_sign_out(&self) -> Result<bool, QpError> {
        Ok(self.inner.finish_sign_out().await?)
    }

    /// True when nobody is signed in to this session (as the shared store
    /// says now: the app may have signed out while the extension runs).
    pub fn is_signed_out(&self) -> bool {
        self.inner.is_signed_out()
    }

    /// Registers this device for pushes (after signing in without one, or
    /// to change its fields); returns the device id. An empty `pushToken`:
    /// the one the OS handed over last.
    pub async fn register_device(&self, device: DeviceRegistration) -> Result<String, QpError> {
        Ok(self.inner.register_device(&device).await?)
    }

    /// The OS handed over a push token: call it every time, signed in or
    /// not. Kept; sent to the server only when it changed (true then).
    /// Before pairing (or after `unregister`) only kept: `signIn` registers
    /// it.
    pub async fn update_push_token(&self, push_token: String) -> Result<bool, QpError> {
        Ok(self.inner.update_push_token(&push_token).await?)
    }

    /// No more pushes to this device: the registration is removed on the
    /// server. True when the server confirmed.
    pub async fn unregister(&self) -> Result<bool, QpError> {
        Ok(self.inner.unregister().await?)
    }

    /// Calls `listener` after every commit to the shared store, by this
    /// process or the other one (the extension recorded a push, the app
    /// answered), until the subscription is cancelled.
    pub fn subscribe_feed(&self, listener: Arc<dyn FeedListener>) -> Arc<FeedSubscription> {
        let watch = self.inner.subscribe_feed(Arc::new(AppListener(listener)));
        Arc::new(FeedSubscription(std::sync::Mutex::new(Some(watch))))
    }

    /// `feed()` off the caller's thread.
    pub async fn feed_async(self: Arc<Self>) -> Result<Vec<FeedCell>, QpError> {
        off_thread(move || self.feed()).await
    }

    /// `answerInApp` off the caller's thread.
    pub async fn answer_in_app_async(
        self: Arc<Self>,
        question_id: String,
        value: Option<String>,
        text: Option<String>,
    ) -> Result<CommittedAnswer, QpError> {
        off_thread(move || self.answer_in_app(question_id, value, text)).await
    }

    /// `answerAction` off the caller's thread.
    pub async fn answer_action_async(
        self: Arc<Self>,
        question_id: String,
        action_id: String,
        text: Option<String>,
    ) -> Result<CommittedAnswer, QpError> {
        off_thread(move || self.answer_action(question_id, action_id, text)).await
    }

    /// `reconcile` off the caller's thread.
    pub async fn reconcile_async(
        self: Arc<Self>,
        on_screen: Vec<String>,
    ) -> Result<ReconcilePlan, QpError> {
        off_thread(move || self.reconcile(on_screen)).await
    }

    /// This device's public key (base64), made on first use: register it
    /// (`DeviceRegistration.publicKey`) so pushes are sealed to it.
    pub fn device_public_key(&self) -> Result<String, QpError> {
        Ok(self.inner.device_public_key()?)
    }

    /// A new key pair replacing the old (register the device again with it).
    pub fn rotate_device_key(&self) -> Result<String, QpError> {
        Ok(self.inner.rotate_device_key()?)
    }

    /// This device's registration id, once known.
    pub fn set_device_id(&self, device_id: Option<String>) {
        self.inner.set_device_id(device_id)
    }

    /// The person changed their languages (iOS: `NSLocale.currentLocaleDidChangeNotification`;
    /// Android: `ACTION_LOCALE_CHANGED`).
    pub fn set_languages(&self, languages: Vec<String>) {
        self.inner.set_languages(&languages);
    }

    /// Why pairing failed, in the person's language: the line to show for
    /// a `QpError.Pairing`'s `kind` (its `detail` is English, for logs).
    pub fn pair_failure(&self, kind: PairErrorKind) -> String {
        self.inner.pair_failure(kind)
    }

    /// The language the phone speaks (`pt-BR` for `pt-PT`; `en` when none matched).
    pub fn language(&self) -> String {
        self.inner.language()
    }

    /// The iOS notification content and its category, in the person's language.
    pub fn ios_notification(
        &self,
        question: PushQuestion,
        require_unlock_for_danger: bool,
    ) -> IosNotification {
        self.inner.ios_notification(
            &question,
            &PresentOptions {
                require_unlock_for_danger,
                ..Default::default()
            },
        )
    }

    /// The Android notification and its actions, in the person's language.
    pub fn android_notification(
        &self,
        question: PushQuestion,
        now: Timestamp,
        require_unlock_for_danger: bool,
    ) -> AndroidNotification {
        self.inner.android_notification(
            &question,
            now,
            &PresentOptions {
                require_unlock_for_danger,
                ..Default::default()
            },
        )
    }

    /// The plain notification for a push that could not be decoded.
    pub fn fallback_notification(
        &self,
        title: Option<String>,
        body: Option<String>,
    ) -> FallbackNotification {
        self.inner
            .fallback_notification(title.as_deref(), body.as_deref())
    }

    /// Android: the plain notification for an FCM data message that could
    /// not be decoded, from its words where the core may use them.
    pub fn fcm_fallback_notification(&self, data: HashMap<String, String>) -> FallbackNotification {
        self.inner.fcm_fallback_notification(&data)
    }

    /// Android: the questions channel, named in the person's language.
    pub fn android_channel(&self) -> AndroidChannel {
        self.inner.android_channel()
    }

    /// Android: "Open the app to finish your answer".
    pub fn open_app_to_finish(&self) -> String {
        self.inner.open_app_to_finish()
    }

    /// Notification extension: decode an APNs payload and record it. Show
    /// what it returns: for a question already held, the held one. With a
    /// device key, a plain payload is a `Payload(kind: unsealed)` error:
    /// show the fallback notification. A resolution is only a claim: call
    /// `confirmResolution` before withdrawing anything.
    pub fn receive_apns(&self, json: String) -> Result<DecodedPush, QpError> {
        Ok(self.inner.receive_apns(&json)?.into())
    }

    /// FCM handler: decode a data message and record it (as `receive_apns`).
    pub fn receive_fcm(&self, data: HashMap<String, String>) -> Result<DecodedPush, QpError> {
        Ok(self.inner.receive_fcm(&data)?.into())
    }

    /// iOS, before a notification action becomes an answer: whether the
    /// notification (its `subtitle` and `body`) shows the question held as
    /// `question_id`. A push that skipped the extension can show an
    /// injector's words over a held question's buttons; when false, do not
    /// answer: open the app.
    pub fn shows_held_question(
        &self,
        question_id: String,
        subtitle: Option<String>,
        body: String,
    ) -> Result<bool, QpError> {
        Ok(self
            .inner
            .shows_held_question(&question_id, subtitle.as_deref(), &body)?)
    }

    /// A resolution push arrived: asks the server. True when it is resolved
    /// there (now recorded here): withdraw or replace the notification.
    /// False when it is still pending: keep the question. A `Network` error
    /// when the server cannot say now: keep it; the next sync decides.
    pub async fn confirm_resolution(&self, question_id: String) -> Result<bool, QpError> {
        Ok(self.inner.confirm_resolution(&question_id).await?)
    }

    /// The categories to register (`setNotificationCategories`): what is
    /// registered, merged with the new one, pruned by what the store knows
    /// (a store that cannot be read now: as `planIosCategoriesWithoutStore`).
    pub fn plan_ios_categories(
        &self,
        registered: Vec<String>,
        new_category: String,
        now: Timestamp,
        max: u32,
    ) -> RegistryPlan {
        self.inner
            .plan_ios_categories(&registered, &new_category, now, max as usize)
    }

    /// A notification action (with typed text or a chosen label): validated
    /// and committed durably before this returns.
    pub fn answer_action(
        &self,
        question_id: String,
        action_id: String,
        text: Option<String>,
    ) -> Result<CommittedAnswer, QpError> {
        self.inner
            .answer_action(&question_id, &action_id, text.as_deref())
            .map_err(|e| self.error(e))
    }

    /// An answer given in the app's feed: exactly one of `value` or `text`.
    pub fn answer_in_app(
        &self,
        question_id: String,
        value: Option<String>,
        text: Option<String>,
    ) -> Result<CommittedAnswer, QpError> {
        self.inner
            .answer_in_app(&question_id, value, text)
            .map_err(|e| self.error(e))
    }

    /// Where this device's answer to a question stands, if it gave one.
    pub fn answer_status(&self, question_id: String) -> Result<Option<MyAnswer>, QpError> {
        Ok(self.inner.answer_status(&question_id)?)
    }

    /// "Approve, by you", "no answer, expired"…; none while pending.
    pub fn resolution(&self, question_id: String) -> Result<Option<String>, QpError> {
        Ok(self.inner.resolution(&question_id)?)
    }

    /// Typed text kept for a question (too long for the lock screen).
    pub fn draft(&self, question_id: String) -> Result<Option<String>, QpError> {
        Ok(self.inner.draft(&question_id)?)
    }

    /// Sends every due answer (safe to call from several places).
    pub async fn flush(&self) -> Result<FlushReport, QpError> {
        Ok(self.inner.flush().await?)
    }

    /// Pulls pending questions and refreshes held ones; returns what to withdraw.
    pub async fn sync(&self) -> Result<SyncReport, QpError> {
        Ok(self.inner.sync().await?)
    }

    /// The feed, newest first.
    pub fn feed(&self) -> Result<Vec<FeedCell>, QpError> {
        Ok(self.inner.feed(chrono::Utc::now())?)
    }

    /// The person tapped "retry" on a waiting answer.
    pub fn retry(&self, question_id: String) -> Result<bool, QpError> {
        Ok(self.inner.retry(&question_id)?)
    }

    /// At app launch: sends cut short by a crash are queued again.
    pub fn requeue_interrupted(&self) -> Result<u32, QpError> {
        Ok(self.inner.requeue_interrupted()?)
    }

    /// Hands every due answer to the system for a background upload (iOS,
    /// an answer from a notification action): give each request to the
    /// background session tagged with its `id`, and report what the session
    /// says with `handedOverOutcome`. The flush leaves them alone meanwhile.
    pub fn hand_over_answers(&self) -> Result<Vec<Handover>, QpError> {
        Ok(self.inner.hand_over_answers()?)
    }

    /// The background session reported on the hand-over `id` (in this
    /// process or after a relaunch): recorded as a flush's outcome would
    /// be. A second report of the same answer changes nothing.
    pub fn handed_over_outcome(
        &self,
        id: String,
        result: HandoverResult,
    ) -> Result<FlushReport, QpError> {
        Ok(self.inner.handed_over_outcome(&id, result.into())?)
    }

    /// At launch, at each return to the foreground and once the background
    /// session has delivered its events, with the ids of the uploads it
    /// still holds: an answer it no longer has and never reported on is
    /// queued again for the next flush once still missing the core's grace
    /// (`LOST_HAND_OVER_GRACE_MS`, 10 s) or more after the first call that
    /// found it missing: its report may be on the way meanwhile, and is
    /// taken then. Returns how many were queued.
    pub fn requeue_lost_hand_overs(&self, in_flight: Vec<String>) -> Result<u32, QpError> {
        Ok(self.inner.requeue_lost_hand_overs(&in_flight)?)
    }

    /// A held question (for the answer sheet).
    pub fn question(&self, question_id: String) -> Result<Option<PushQuestion>, QpError> {
        Ok(self.inner.question(&question_id)?)
    }

    /// Writes the WAL back into the main file (the store stays open).
    pub fn checkpoint(&self) -> Result<(), QpError> {
        Ok(self.inner.checkpoint()?)
    }

    /// Before the process is suspended (iOS: entering the background,
    /// inside a background task; the extension before its content handler):
    /// waits for store work in flight and closes the store, so no file lock
    /// is held in the shared container (`0xdead10cc`). Store calls fail with
    /// `Storage(kind: suspended)` until `resume()`.
    pub fn suspend(&self) -> Result<(), QpError> {
        Ok(self.inner.suspend()?)
    }

    /// Back in the foreground, or launched in the background (an action, a
    /// refresh): opens the store again. Harmless when not suspended.
    pub fn resume(&self) -> Result<(), QpError> {
        Ok(self.inner.resume()?)
    }

    /// The resolved copy of a held question, to replace its notification
    /// (identifier = question id); nil while pending or unknown here.
    pub fn ios_resolved_notification(
        &self,
        question_id: String,
    ) -> Result<Option<IosResolvedNotification>, QpError> {
        Ok(self.inner.ios_resolved_notification(&question_id)?)
    }

    /// What to do with this library's notifications on screen (their
    /// identifiers, which are question ids), after a sync: replace (iOS) or
    /// withdraw (Android) the resolved, remove the unknown, post the missed.
    pub fn reconcile(&self, on_screen: Vec<String>) -> Result<ReconcilePlan, QpError> {
        Ok(self.inner.reconcile(&on_screen, chrono::Utc::now())?)
    }
}
