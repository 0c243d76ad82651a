//! The phone: one type that owns the shared store and the server client and
//! holds every rule of the phone side. The uniffi object that Swift and Kotlin
//! call (`qp-ffi`) forwards to it; `qp device` drives it in a terminal. A rule
//! changed here is seen by the iOS app, its extension, the Android app and the
//! terminal device alike.
//!
//! One `Phone` per process (the app, or each run of the notification
//! extension), over one store file that both processes share.

mod deeplink;
mod error;
mod keys;
mod lifecycle;
mod observe;
mod pair;
pub mod reconcile;
mod session;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};

pub use deeplink::{
    is_library_notification, posted_user_info, question_id_of_fcm, question_id_of_notification,
    shown_notification, ShownNotification,
};
pub use error::PhoneError;
pub use keys::{device_public_key, DeviceKeyStore};
pub use lifecycle::{
    BackgroundReport, ForegroundReport, ForegroundStep, PhoneBudgets, ResolutionPushAction,
    StepFailure, ANSWER_DELIVERY_BUDGET, BUDGETS, EXTENSION_NETWORK_BUDGET, REFRESH_INTERVAL,
    RESOLUTION_PUSH_WITHOUT_STORE,
};
pub use observe::{off_thread, FeedListener};
pub use pair::{DeviceRegistration, PairError, PairErrorKind, PairedAccount, TokenStore};
use reconcile::{OnScreen, ReconcilePlan};
pub use session::{
    SessionState, SessionStatus, SignOutReport, TokenVault, PUSH_TOKEN_SLOT, SIGN_OUT_BUDGET,
    SIGN_OUT_EXPIRY, SIGN_OUT_MIN_TRIES,
};

use crate::answer::{map_action, ActionError};
use crate::copy::Copy;
use crate::feed::{self, FeedCell, MyAnswer};
use crate::http::HttpTransport;
use crate::payload::{self, CompactQuestion, FallbackNotification, PayloadError, Push};
use crate::present::android::{self, AndroidChannel, AndroidNotification};
use crate::present::ios::{self, IosNotification, IosResolvedNotification};
use crate::present::registry::{self, RegistryPlan};
use crate::present::PresentOptions;
use crate::protocol::{validate_answer, AnswerSubmission};
use crate::store::{now_ms, AnswerState, Store, StoreMode, StoredQuestion};
use crate::sync::{self, FlushReport, PhoneClient, Refreshed, SyncReport, TokenProvider};

/// An answer committed on this device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedAnswer {
    pub question_id: String,
    pub state: AnswerState,
    /// False when an earlier answer of this device was kept instead.
    pub is_new: bool,
    /// Where it stands, in one line for the notification or the feed:
    /// "Approve: queued, sends when online".
    pub status: String,
}

/// The categories to register where no store can be read (the extension
/// could not open it, or it is locked): nothing is known of the questions,
/// so ours are kept, newest category first, up to `max`.
pub fn plan_ios_categories_without_store(
    registered: &[String],
    new_category: &str,
    now: DateTime<Utc>,
    max: usize,
) -> RegistryPlan {
    registry::plan_categories(registered, new_category, &[], now, max)
}

/// The time limit of each request: the notification extension's whole
/// network budget at most, the app's [`sync::REQUEST_TIMEOUT`].
fn request_timeout(mode: StoreMode) -> std::time::Duration {
    match mode {
        StoreMode::Extension => EXTENSION_NETWORK_BUDGET.min(sync::REQUEST_TIMEOUT),
        _ => sync::REQUEST_TIMEOUT,
    }
}

/// The phone. See the module documentation.
pub struct Phone {
    store: Store,
    /// The signed-in account's client; none before pairing and after
    /// signing out (see the `session` module).
    client: RwLock<Option<Arc<PhoneClient>>>,
    /// The app's secure storage of tokens, for a phone that signs in and
    /// out itself ([`Phone::open_session`]).
    vault: Option<Arc<dyn TokenVault>>,
    /// Executes every request (the platform's network stack).
    http: Arc<dyn HttpTransport>,
    /// The time limit of each request: the extension's is its budget.
    request_timeout: std::time::Duration,
    /// The person's languages, negotiated; replaced when they change.
    copy: RwLock<Arc<Copy>>,
    /// End-to-end encryption: where the device key is kept, and this
    /// device's id (sealed pushes name the device they are for).
    keys: Option<Arc<dyn DeviceKeyStore>>,
    device_id: RwLock<Option<String>>,
    /// The key, once loaded or made.
    secret: RwLock<Option<crate::e2e::DeviceSecret>>,
    /// Set by the first [`Phone::came_to_foreground`] of this process (its
    /// launch): only then are sends cut short by a crash queued again.
    foregrounded: std::sync::atomic::AtomicBool,
}

impl Phone {
    /// Opens the store shared by the app and its extension (`mode` is
    /// `Extension` inside the notification extension) and prepares the client
    /// of `server_url` for user `user_id`. The token is asked of `tokens` for
    /// each request and never stored by the core. `languages` are the
    /// person's preferred languages, most preferred first (iOS
    /// `Locale.preferredLanguages`, Android `LocaleList`); every string the
    /// phone returns is in the best of them that is bundled, else English.
    /// `http` executes every request (the platform's network stack).
    pub fn open(
        store_path: &Path,
        mode: StoreMode,
        server_url: &str,
        user_id: &str,
        tokens: Arc<dyn TokenProvider>,
        languages: &[String],
        http: Arc<dyn HttpTransport>,
    ) -> Result<Phone, PhoneError> {
        let store = Store::open(store_path, mode)?;
        let request_timeout = request_timeout(mode);
        let client = PhoneClient::new(server_url, user_id, tokens, http.clone(), request_timeout);
        Ok(Phone {
            store,
            client: RwLock::new(Some(Arc::new(client))),
            vault: None,
            http,
            request_timeout,
            copy: RwLock::new(Arc::new(Copy::for_languages(languages))),
            keys: None,
            device_id: RwLock::new(None),
            secret: RwLock::new(None),
            foregrounded: Default::default(),
        })
    }

    /// The person changed their languages: every string from now on follows.
    pub fn set_languages(&self, languages: &[String]) {
        *self.copy.write().unwrap_or_else(|p| p.into_inner()) =
            Arc::new(Copy::for_languages(languages));
    }

    /// The negotiated language (`pt-BR` for `pt-PT`, `en` for unknown ones).
    pub fn language(&self) -> String {
        self.copy().language().to_string()
    }

    fn copy(&self) -> Arc<Copy> {
        self.copy.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A phone error as a person should read it, in their language (a
    /// too-long reply, a tap that is not an answer); others as they are.
    pub fn describe(&self, e: &PhoneError) -> String {
        match e {
            PhoneError::Action(a) => self.copy().action_error(a),
            other => other.to_string(),
        }
    }

    /// Why pairing failed (`kind`, from [`PhoneError::Pairing`]), as the
    /// person reads it in their language: "That pairing code is unknown,
    /// used or expired…". The error's `detail` is the server's or the
    /// network's English, for logs only.
    pub fn pair_failure(&self, kind: PairErrorKind) -> String {
        self.copy().pair_failure(kind)
    }

    /// First run: exchanges a pairing link (`https://HOST/pair#CODE`, from
    /// the QR code) or a bare code (then `server_url` says where) for the
    /// user's token, which goes straight to the app's secure storage
    /// (`tokens`) and nowhere else. With `device`, the push registration is
    /// made in the same call. Then open the phone with the returned server
    /// and user, and a token provider that reads the same storage.
    pub async fn pair(
        link_or_code: &str,
        server_url: Option<&str>,
        device_label: &str,
        device: Option<&DeviceRegistration>,
        tokens: &dyn TokenStore,
        http: &dyn HttpTransport,
    ) -> Result<PairedAccount, PhoneError> {
        Ok(pair::pair(link_or_code, server_url, device_label, device, tokens, http).await?)
    }

    /// The signed-in user's id; empty when signed out.
    pub fn user_id(&self) -> String {
        self.me()
    }

    /// The signed-in user's id, or "" (then no answer is "mine").
    fn me(&self) -> String {
        self.session_client()
            .map(|c| c.user_id.clone())
            .unwrap_or_default()
    }

    /// The signed-in account's client, or `NotSignedIn`.
    fn client(&self) -> Result<Arc<PhoneClient>, PhoneError> {
        self.session_client().ok_or(PhoneError::NotSignedIn)
    }

    /// A session phone nobody is signed in to (the other process may have
    /// signed out) takes no push and no answer: `NotSignedIn`.
    fn refuse_signed_out(&self) -> Result<(), PhoneError> {
        if self.is_signed_out() {
            return Err(PhoneError::NotSignedIn);
        }
        Ok(())
    }

    /// The store, for what the phone does not wrap (tests, diagnostics).
    pub fn store(&self) -> &Store {
        &self.store
    }

    // ---- receiving ----

    /// An APNs payload (the notification's `userInfo` as JSON): decoded,
    /// checked field by field, and recorded in the feed.
    /// An end-to-end encrypted payload is opened with the device key first;
    /// one that cannot be opened is a `CannotOpen` payload error (show the
    /// fallback notification). Once this device has a key, a payload that is
    /// not sealed is an `Unsealed` error: not trusted (show the fallback
    /// notification; the app syncs).
    ///
    /// What is returned is what to show: for a question this device already
    /// holds, the held one (a push never changes it); a resolution is the
    /// push's claim only, recorded nowhere until
    /// [`confirm_resolution`](Self::confirm_resolution) hears it from the server.
    ///
    /// A session phone nobody is signed in to records nothing and shows
    /// nothing of a push: `NotSignedIn` (show the neutral fallback).
    pub fn receive_apns(&self, json: &str) -> Result<Push, PhoneError> {
        self.refuse_signed_out()?;
        // Plain pushes skip the second parse.
        if json.contains("\"qp_e2e\"") {
            let key = self.device_secret();
            if let Some(push) =
                payload::open_apns(json, key.as_ref(), self.my_device_id().as_deref())?
            {
                return Ok(self.accept(push, true));
            }
        }
        self.refuse_unsealed()?;
        Ok(self.accept(payload::decode_apns(json)?, false))
    }

    /// An FCM data message: opened if sealed, decoded, checked and recorded,
    /// as [`receive_apns`](Self::receive_apns).
    pub fn receive_fcm(&self, data: &HashMap<String, String>) -> Result<Push, PhoneError> {
        self.refuse_signed_out()?;
        if data.contains_key(crate::payload::SEALED_KEY) {
            let key = self.device_secret();
            if let Some(push) =
                payload::open_fcm(data, key.as_ref(), self.my_device_id().as_deref())?
            {
                return Ok(self.accept(push, true));
            }
        }
        self.refuse_unsealed()?;
        Ok(self.accept(payload::decode_fcm(data)?, false))
    }

    /// A device with a key is sent sealed pushes only (the server seals for
    /// every device that registered one), so a plain push to it was not
    /// made by the server: its words and buttons are refused before they
    /// are read.
    fn refuse_unsealed(&self) -> Result<(), PhoneError> {
        if self.expects_sealed() {
            return Err(PayloadError::Unsealed.into());
        }
        Ok(())
    }

    /// True once this device has a key: from then on only sealed pushes
    /// are trusted (the server seals for every device that registered one).
    pub fn expects_sealed(&self) -> bool {
        self.device_secret().is_some()
    }

    /// Records a question push and returns what to show (see
    /// [`receive_apns`](Self::receive_apns)); a resolution changes nothing.
    /// A question from a plain push (`sealed` false) is held unverified: an
    /// answer to it is sent only once the server shows the same question.
    fn accept(&self, push: Push, sealed: bool) -> Push {
        let Push::Question(q) = push else {
            return push;
        };
        let recorded = if sealed {
            self.store.record_sealed_push(&q)
        } else {
            self.store.record_push(&q)
        };
        match recorded {
            Ok(Some(held)) => Push::Question(held.question),
            Ok(None) => Push::Question(q),
            // A store that cannot be written right now (locked before the
            // first unlock, busy) must not stop the notification: the
            // question is shown, and the next sync brings it into the feed.
            Err(e) => {
                log::warn!("push not recorded: {e}");
                Push::Question(q)
            }
        }
    }

    /// The plain notification for a push that could not be decoded.
    /// On a device with a key the push's own words are not used: every
    /// genuine push to it is sealed behind the generic alert, so words in
    /// clear next to a push this phone could not use are an injector's.
    pub fn fallback_notification(
        &self,
        title: Option<&str>,
        body: Option<&str>,
    ) -> FallbackNotification {
        // Signed out: nothing of a push is shown, its words neither.
        if self.expects_sealed() || self.is_signed_out() {
            return payload::fallback(None, None, &self.copy());
        }
        payload::fallback(title, body, &self.copy())
    }

    /// [`Phone::fallback_notification`] for an FCM data message that could
    /// not be used: its words are read here, not by the app.
    pub fn fcm_fallback_notification(
        &self,
        data: &HashMap<String, String>,
    ) -> FallbackNotification {
        if self.expects_sealed() || self.is_signed_out() {
            return payload::fallback(None, None, &self.copy());
        }
        payload::fcm_fallback(data, &self.copy())
    }

    // ---- presenting ----

    /// The iOS notification content and its per-question category.
    pub fn ios_notification(&self, q: &CompactQuestion, opts: &PresentOptions) -> IosNotification {
        ios::ios_notification(q, opts, &self.copy())
    }

    /// Whether a notification showing `subtitle` and `body` shows the
    /// question held as `question_id` as this library words it (its context
    /// and prompt). iOS shows a push as it came when the push skips the
    /// extension (no `mutable-content`), with the buttons of whatever
    /// category it names: an injector can put its own words over a held
    /// question's buttons. An action from a notification that does not show
    /// the held question must not become an answer: open the app instead.
    pub fn shows_held_question(
        &self,
        question_id: &str,
        subtitle: Option<&str>,
        body: &str,
    ) -> Result<bool, PhoneError> {
        let Some(q) = self.question(question_id)? else {
            return Ok(false);
        };
        let context = q.context.as_deref().unwrap_or("");
        Ok(q.prompt == body && context == subtitle.unwrap_or(""))
    }

    /// The Android notification and its (at most three) actions.
    pub fn android_notification(
        &self,
        q: &CompactQuestion,
        now: DateTime<Utc>,
        opts: &PresentOptions,
    ) -> AndroidNotification {
        android::android_notification(q, now, opts, &self.copy())
    }

    /// "12 min left", "expired".
    pub fn time_remaining(&self, q: &CompactQuestion, now: DateTime<Utc>) -> String {
        self.copy().time_remaining(q.expires_at, now)
    }

    /// "Open the app to finish your answer" (Android, after a failed action).
    pub fn open_app_to_finish(&self) -> String {
        self.copy().open_app_to_finish()
    }

    /// The Android notification channel to create.
    pub fn android_channel(&self) -> AndroidChannel {
        android::channel(&self.copy())
    }

    /// The full set of categories to register with
    /// `setNotificationCategories`: what is `registered` now, merged with
    /// `new_category`, pruned of resolved, expired and then the oldest of our
    /// questions as this store knows them. A store that cannot be read now
    /// plans as [`plan_ios_categories_without_store`].
    pub fn plan_ios_categories(
        &self,
        registered: &[String],
        new_category: &str,
        now: DateTime<Utc>,
        max: usize,
    ) -> RegistryPlan {
        // Reading four times the bound is enough to judge every category
        // that can be registered, and keeps the extension's read small.
        match self.store.known_questions(max.saturating_mul(4).max(1)) {
            Ok(known) => registry::plan_categories(registered, new_category, &known, now, max),
            Err(e) => {
                // Locked before the first unlock, or suspended: the
                // question still gets its buttons.
                log::warn!("categories planned without the store: {e}");
                plan_ios_categories_without_store(registered, new_category, now, max)
            }
        }
    }

    // ---- answering ----

    /// A notification action (with typed text or a chosen label), validated
    /// and committed durably before this returns. Typed text over the limit
    /// is kept as a draft for the app, and the error carries it whole.
    pub fn answer_action(
        &self,
        question_id: &str,
        action_id: &str,
        text: Option<&str>,
    ) -> Result<CommittedAnswer, PhoneError> {
        self.refuse_signed_out()?;
        let held = self.as_shown(self.held(question_id)?)?;
        match map_action(&held.question, action_id, text) {
            Ok(body) => self.commit(&held, body),
            Err(e) => {
                if let ActionError::TextTooLong { text, .. } = &e {
                    self.store.save_draft(question_id, text, "too long")?;
                }
                Err(e.into())
            }
        }
    }

    /// An answer given in the app's feed: exactly one of `value` or `text`.
    /// Typed text is trimmed, then checked with the protocol's answer rules.
    pub fn answer_in_app(
        &self,
        question_id: &str,
        value: Option<String>,
        text: Option<String>,
    ) -> Result<CommittedAnswer, PhoneError> {
        self.refuse_signed_out()?;
        let held = self.held(question_id)?;
        let body = match (value, text) {
            (Some(v), None) => AnswerSubmission::Value(v),
            (None, Some(t)) => AnswerSubmission::Text(t.trim().to_string()),
            _ => {
                return Err(PhoneError::InvalidInput(
                    "give exactly one of value or text".into(),
                ))
            }
        };
        validate_answer(&held.question.to_question(), &body)?;
        self.commit(&held, body)
    }

    /// Commits an answer to `held`, the question as the person saw it (kept
    /// with the answer when only a plain push said so: see
    /// [`Store::commit_answer_to`]).
    fn commit(
        &self,
        held: &StoredQuestion,
        body: AnswerSubmission,
    ) -> Result<CommittedAnswer, PhoneError> {
        let q = &held.question;
        let before = self.store.answer_for(&q.id)?;
        let entry = self.store.commit_answer_to(held, &body)?;
        let is_new = before.is_none_or(|b| b.id != entry.id);
        let status = feed::my_answer(&entry, q, &q.to_question(), &self.me(), &self.copy()).status;
        Ok(CommittedAnswer {
            question_id: q.id.clone(),
            state: entry.state,
            is_new,
            status,
        })
    }

    fn held(&self, question_id: &str) -> Result<StoredQuestion, PhoneError> {
        self.store
            .question(question_id)?
            .ok_or_else(|| PhoneError::UnknownQuestion(question_id.to_string()))
    }

    /// The question as its notification shows it. A server read may have
    /// replaced the words of a plain push since the notification was drawn
    /// (Android keeps the notification as posted, with its actions): an
    /// action from it answers what it shows, which is then unverified, so
    /// the outbox checks it against the server before sending.
    fn as_shown(&self, held: StoredQuestion) -> Result<StoredQuestion, PhoneError> {
        Ok(match self.store.shown(&held.question.id)? {
            Some(shown) if shown != held.question => StoredQuestion {
                question: shown,
                verified: false,
                ..held
            },
            _ => held,
        })
    }

    /// Where this device's answer to a question stands, if it gave one:
    /// "Approve: sending…", "Approve, by you", "Approve: too late…".
    pub fn answer_status(&self, question_id: &str) -> Result<Option<MyAnswer>, PhoneError> {
        let Some(stored) = self.store.question(question_id)? else {
            return Ok(None);
        };
        let Some(entry) = self.store.answer_for(question_id)? else {
            return Ok(None);
        };
        Ok(Some(feed::my_answer(
            &entry,
            &stored.question,
            &stored.to_question(),
            &self.me(),
            &self.copy(),
        )))
    }

    /// The line of a resolved question as this person reads it: "Approve, by
    /// you", "Deny, by Federica", "no answer, expired"; `None` while pending
    /// or unknown here.
    pub fn resolution(&self, question_id: &str) -> Result<Option<String>, PhoneError> {
        Ok(self
            .store
            .question(question_id)?
            .and_then(|s| self.copy().resolution(&s.to_question(), Some(&self.me()))))
    }

    /// Typed text kept for a question (too long to send from the lock screen).
    pub fn draft(&self, question_id: &str) -> Result<Option<String>, PhoneError> {
        Ok(self.store.draft(question_id)?)
    }

    /// A held question (for the answer sheet).
    pub fn question(&self, question_id: &str) -> Result<Option<CompactQuestion>, PhoneError> {
        Ok(self.store.question(question_id)?.map(|s| s.question))
    }

    // ---- the network ----

    /// Sends every due answer (safe to call from the app and the extension at
    /// once: each answer is leased by one sender).
    ///
    /// A sign-out made offline is told to the server first (see
    /// [`finish_sign_out`](Self::finish_sign_out)), signed in or not.
    pub async fn flush(&self) -> Result<FlushReport, PhoneError> {
        self.retry_sign_out().await;
        let report = sync::flush(&self.store, &*self.client()?).await?;
        self.note_flush(&report);
        Ok(report)
    }

    /// Hands every due answer to the system for a background upload (iOS:
    /// an answer from a notification action) and returns the requests to
    /// give it, each tagged with its id. The answers wait in the
    /// "handed over" state until [`handed_over_outcome`](Self::handed_over_outcome)
    /// records the system's report; the flush leaves them alone meanwhile.
    /// Answers that must be checked against the server first stay queued.
    pub fn hand_over_answers(&self) -> Result<Vec<sync::Handover>, PhoneError> {
        self.refuse_signed_out()?;
        Ok(sync::hand_over(&self.store, &*self.client()?)?)
    }

    /// The system reported on the hand-over `id` (in this process, or in
    /// the one it relaunched for the report): the answer's outcome is
    /// recorded as a flush's would be. A report that comes twice, or for an
    /// answer sent another way meanwhile, changes nothing.
    pub fn handed_over_outcome(
        &self,
        id: &str,
        outcome: sync::HandoverOutcome,
    ) -> Result<FlushReport, PhoneError> {
        let report = sync::handed_over_outcome(&self.store, &self.me(), id, outcome)?;
        self.note_flush(&report);
        Ok(report)
    }

    /// At launch (and whenever the system has delivered its reports), with
    /// the ids of the uploads the system still holds (iOS: the background
    /// session's tasks): answers handed over that it no longer has and never
    /// reported on are queued again, for the next flush. Returns how many.
    /// An answer missing from one snapshot may have been delivered with its
    /// report still on the way: it is queued again only when still missing
    /// [`sync::LOST_HAND_OVER_GRACE_MS`] or more after the first snapshot
    /// that missed it, and its report is taken meanwhile, so it is not sent
    /// twice.
    pub fn requeue_lost_hand_overs(&self, in_flight: &[String]) -> Result<u32, PhoneError> {
        self.requeue_lost_hand_overs_at(in_flight, now_ms())
    }

    /// [`requeue_lost_hand_overs`](Self::requeue_lost_hand_overs) at `now`
    /// (milliseconds since the epoch): the tests' clock.
    pub(crate) fn requeue_lost_hand_overs_at(
        &self,
        in_flight: &[String],
        now: i64,
    ) -> Result<u32, PhoneError> {
        let n =
            self.store
                .requeue_lost_hand_overs(in_flight, now, sync::LOST_HAND_OVER_GRACE_MS)?;
        Ok(n as u32)
    }

    /// Pulls pending questions and refreshes held ones; says what to withdraw.
    pub async fn sync(&self) -> Result<SyncReport, PhoneError> {
        self.retry_sign_out().await;
        let result = sync::sync(&self.store, &*self.client()?).await;
        self.note_auth(&result);
        Ok(result?)
    }

    /// A resolution push arrived for `question_id`: asks the server before
    /// anything is withdrawn, since a push's resolution is only a claim
    /// (anyone who can inject pushes could otherwise hide a pending question
    /// for good). True when the server says it is resolved (or no longer
    /// this person's), now recorded here: withdraw its notification. False
    /// when it is still pending there: keep (or show again) the question. A
    /// `Network` error when the server cannot say now: keep it; the next
    /// sync decides.
    pub async fn confirm_resolution(&self, question_id: &str) -> Result<bool, PhoneError> {
        if let Some(held) = self.store.question(question_id)? {
            // Only a server read makes a held question terminal.
            if held.state.is_terminal() {
                return Ok(true);
            }
        }
        let refreshed = sync::refresh(&self.store, &*self.client()?, question_id).await;
        self.note_auth(&refreshed);
        match refreshed? {
            Refreshed::Resolved { .. } | Refreshed::Gone => Ok(true),
            Refreshed::Pending => Ok(false),
            Refreshed::Unavailable(why) => Err(PhoneError::Network(why)),
        }
    }

    /// The person tapped "retry" on a waiting answer: send it at the next flush.
    pub fn retry(&self, question_id: &str) -> Result<bool, PhoneError> {
        Ok(self.store.retry_now(question_id)?)
    }

    /// At app launch: sends cut short by a crash are queued again.
    pub fn requeue_interrupted(&self) -> Result<u32, PhoneError> {
        Ok(self.store.requeue_interrupted()? as u32)
    }

    // ---- the app ----

    /// The feed at `now`, newest first.
    pub fn feed(&self, now: DateTime<Utc>) -> Result<Vec<FeedCell>, PhoneError> {
        Ok(feed::feed(&self.store, &self.me(), now, &self.copy())?)
    }

    /// Writes the WAL back into the main file (the store stays open).
    pub fn checkpoint(&self) -> Result<(), PhoneError> {
        Ok(self.store.checkpoint()?)
    }

    // ---- the process lifecycle ----

    /// Before the process is suspended (iOS: entering the background, inside
    /// a background task; the extension before it hands its content over):
    /// waits for the store work in flight, then closes the store so no file
    /// lock is held (iOS kills a suspended process holding one in the shared
    /// container: `0xdead10cc`). Until [`resume`](Self::resume), store calls
    /// fail with a `Suspended` store error; decoding still works.
    pub fn suspend(&self) -> Result<(), PhoneError> {
        Ok(self.store.suspend()?)
    }

    /// Back in the foreground (or a background launch: a notification
    /// action, a background refresh): opens the store again.
    pub fn resume(&self) -> Result<(), PhoneError> {
        Ok(self.store.resume()?)
    }

    // ---- reconciling the notifications on screen ----

    /// The resolved copy of a question this device holds (the extension
    /// shows it for a resolution push); `None` while pending or unknown.
    pub fn ios_resolved_notification(
        &self,
        question_id: &str,
    ) -> Result<Option<IosResolvedNotification>, PhoneError> {
        Ok(self.store.question(question_id)?.and_then(|s| {
            ios::ios_resolved_notification(&s.to_question(), Some(&self.me()), &self.copy())
        }))
    }

    /// What to do with the notifications on screen (`on_screen`: the
    /// identifiers of this library's notifications, which are question ids),
    /// from what the store knows: call after [`sync`](Self::sync) at launch
    /// and foreground, or in the extension with what it has. Questions it
    /// says to post are marked shown here, and so are those on screen.
    pub fn reconcile(
        &self,
        on_screen: &[String],
        now: DateTime<Utc>,
    ) -> Result<ReconcilePlan, PhoneError> {
        let stored = on_screen
            .iter()
            .map(|id| self.store.question(id))
            .collect::<Result<Vec<_>, _>>()?;
        let screen: Vec<OnScreen<'_>> = on_screen
            .iter()
            .zip(&stored)
            .map(|(id, s)| OnScreen {
                identifier: id,
                stored: s.as_ref(),
            })
            .collect();
        let unshown = self.store.never_presented()?;
        let plan = reconcile::plan(&screen, &unshown, &self.me(), now, &self.copy());
        let posted: Vec<&str> = plan.post.iter().map(|q| q.id.as_str()).collect();
        self.store.mark_shown(&posted)?;
        let mut shown: Vec<&str> = on_screen.iter().map(String::as_str).collect();
        shown.extend(posted);
        self.store.mark_presented(&shown)?;
        Ok(plan)
    }
}

#[cfg(test)]
mod handover_tests;
#[cfg(test)]
mod lifecycle_tests;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod test_net;
#[cfg(test)]
mod tests;
