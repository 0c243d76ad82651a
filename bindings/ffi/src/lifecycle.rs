//! The phone's lifecycle (`qp_core::phone`'s `lifecycle` module): the one
//! call the app makes at launch and on every return to the foreground, the
//! one before the background, the line of an answered notification, and
//! the platform time budgets. Forwards to the core, where the order and the
//! rules live; the glue applies what comes back.

use qp_core::payload;
use qp_core::phone;

use crate::error::QpError;
use crate::phone::PhoneCore;
use crate::types::{
    FlushReport, Platform, PushQuestion, ReconcilePlan, RegistryPlan, SessionStatus, SyncReport,
    Timestamp,
};

pub type PhoneBudgets = qp_core::phone::PhoneBudgets;
#[uniffi::remote(Record)]
pub struct PhoneBudgets {
    pub extension_network_ms: u64,
    pub answer_delivery_ms: u64,
    pub refresh_interval_ms: u64,
}

pub type ResolutionPushAction = qp_core::phone::ResolutionPushAction;
#[uniffi::remote(Enum)]
pub enum ResolutionPushAction {
    Withdraw,
    KeepQuestion { question: PushQuestion },
    KeepUnconfirmed,
}

pub type ForegroundStep = qp_core::phone::ForegroundStep;
#[uniffi::remote(Enum)]
pub enum ForegroundStep {
    Resume,
    Requeue,
    Flush,
    Sync,
    Reconcile,
    Badge,
    Session,
}

pub type BackgroundReport = qp_core::phone::BackgroundReport;
#[uniffi::remote(Record)]
pub struct BackgroundReport {
    pub unsent_answers: u32,
    pub store_closed: bool,
}

pub type ApnsAlert = qp_core::payload::ApnsAlert;
#[uniffi::remote(Record)]
pub struct ApnsAlert {
    pub title: Option<String>,
    pub subtitle: Option<String>,
    pub body: Option<String>,
}

/// A step of `cameToForeground` that failed: its error as the bindings
/// throw it elsewhere (`QpError`), so the glue matches it the same way.
#[derive(Debug, uniffi::Record)]
pub struct StepFailure {
    pub step: ForegroundStep,
    pub error: QpError,
}

/// What coming to the foreground did (the core's `ForegroundReport`, its
/// errors as `QpError`). A step that failed is nil here and in `failures`.
#[derive(Debug, uniffi::Record)]
pub struct ForegroundReport {
    /// Steps run, in order (the requeue only at launch).
    pub steps: Vec<ForegroundStep>,
    /// Sends cut short by a crash, queued again (at launch).
    pub requeued: Option<u32>,
    pub flushed: Option<FlushReport>,
    pub synced: Option<SyncReport>,
    /// Apply it: replace (iOS) or withdraw (Android) the resolved, remove
    /// the unknown, post the missed.
    pub plan: Option<ReconcilePlan>,
    /// The app icon's badge afterwards.
    pub badge: Option<u32>,
    /// The session afterwards; its `line` is what to tell the person.
    pub session: Option<SessionStatus>,
    pub failures: Vec<StepFailure>,
}

impl From<phone::ForegroundReport> for ForegroundReport {
    fn from(r: phone::ForegroundReport) -> Self {
        ForegroundReport {
            steps: r.steps,
            requeued: r.requeued,
            flushed: r.flushed,
            synced: r.synced,
            plan: r.plan,
            badge: r.badge,
            session: r.session,
            failures: r
                .failures
                .into_iter()
                .map(|f| StepFailure {
                    step: f.step,
                    error: QpError::from(f.error),
                })
                .collect(),
        }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl PhoneCore {
    /// At launch and at every return to the foreground, in this order:
    /// resume the store, queue again what a crash cut short (the first
    /// call in this process), send the outbox, sync, reconcile `onScreen`
    /// (this library's notifications on screen: their identifiers, the
    /// question ids), then the badge and the session. Never throws: each
    /// step's error is in `failures`. Apply `plan` and `badge`.
    pub async fn came_to_foreground(&self, on_screen: Vec<String>) -> ForegroundReport {
        self.phone()
            .came_to_foreground(&on_screen, chrono::Utc::now())
            .await
            .into()
    }

    /// Before the app goes to the background: on iOS the store is closed
    /// (no file lock held while suspended: `0xdead10cc`) until
    /// `cameToForeground` or `resume`; on Android it stays open, its WAL
    /// written back. `unsentAnswers`: schedule background work for them.
    pub fn entering_background(&self, platform: Platform) -> Result<BackgroundReport, QpError> {
        Ok(self.phone().entering_background(platform)?)
    }

    /// A resolution push arrived: asks the server for at most `within_ms`
    /// (never more than the core's `extensionNetworkMs`) and says what the
    /// notification becomes, the same on iOS and Android: `withdraw`
    /// (iOS: the resolved copy in its place; Android: cancel it) or
    /// `keepQuestion` (not confirmed, still pending here: iOS shows the
    /// question again, Android leaves it) or `keepUnconfirmed` (not
    /// confirmed, the store unreadable: Android leaves it, iOS shows the
    /// generic notification). Never throws.
    pub async fn resolution_push(
        &self,
        question_id: String,
        within_ms: u64,
    ) -> ResolutionPushAction {
        self.phone()
            .resolution_push(&question_id, std::time::Duration::from_millis(within_ms))
            .await
    }

    /// The line of a question's notification once answered here: "You
    /// answered: Approve" when resolved, else where this device's answer
    /// stands ("Approve: queued, sends when online"); the feed cell's
    /// words. Nil when not held here, or pending without an answer here.
    pub fn answered_line(&self, question_id: String) -> Result<Option<String>, QpError> {
        Ok(self
            .phone()
            .answered_line(&question_id, chrono::Utc::now())?)
    }
}

/// The platform time budgets (milliseconds): the notification extension's
/// network time per push, the time a lock-screen answer has to reach the
/// server before the handler completes, and how soon the next background
/// refresh may run.
#[uniffi::export]
pub fn phone_budgets() -> PhoneBudgets {
    phone::BUDGETS
}

/// What a resolution push does where the glue cannot ask the core (no
/// `PhoneCore`: its store or vault could not be opened; or the call failed
/// unexpectedly): `keepUnconfirmed`, as for a store the core cannot read.
#[uniffi::export]
pub fn resolution_push_without_store() -> ResolutionPushAction {
    phone::RESOLUTION_PUSH_WITHOUT_STORE
}

/// The alert an APNs payload carries (its `userInfo` as JSON): title,
/// subtitle, body (a plain string alert is the body). For the fallback
/// notification and a resolution this device does not hold; never a
/// question's words.
#[uniffi::export]
pub fn apns_alert(user_info_json: String) -> ApnsAlert {
    payload::apns_alert(&user_info_json)
}

/// The categories to register where no store can be read (no `PhoneCore`):
/// ours kept, newest first, up to `max`.
#[uniffi::export]
pub fn plan_ios_categories_without_store(
    registered: Vec<String>,
    new_category: String,
    now: Timestamp,
    max: u32,
) -> RegistryPlan {
    phone::plan_ios_categories_without_store(&registered, &new_category, now, max as usize)
}
