//! The phone's lifecycle, as both platforms live it: one call when the app
//! comes to the foreground (and at launch), one before it goes to the
//! background, the line an answered notification shows, and the time each
//! platform gives its short-lived work. The glue (iOS `QPAppLifecycle`,
//! Android `QuestionLifecycle`) makes these calls and applies what they
//! return; the order of the steps and what each one means live here.
//!
//! Coming to the foreground is, in this order:
//! 1. **resume** the store (closed while the app was in the background);
//! 2. **requeue** what a crash cut short (the first time in this process:
//!    the app's launch; later a send in flight may be the extension's own);
//! 3. **flush** the outbox (answers given offline, or in the background);
//! 4. **sync** with the server (pushes are lossy: pull what was missed);
//! 5. **reconcile** the notifications on screen with the store;
//! 6. the **badge** and the **session**'s line, as they stand afterwards.
//!
//! Every step runs whatever the others did: signed out, offline or with a
//! revoked sign-in the report says so (`failures`), nothing is thrown.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::reconcile::ReconcilePlan;
use super::{Phone, PhoneError, SessionStatus};
use crate::feed;
use crate::payload::CompactQuestion;
use crate::protocol::device::Platform;
use crate::sync::{FlushReport, SyncReport};

/// The network time of the notification extension (iOS) per push: sending
/// what the outbox holds, confirming a resolution. Well inside the ~30 s
/// iOS gives the extension, which must hand its content over in time.
pub const EXTENSION_NETWORK_BUDGET: Duration = Duration::from_secs(5);

/// The time an answer given on the lock screen has to reach the server
/// before the platform's handler completes: an Android broadcast receiver
/// runs about 10 s (`goAsync` included), and iOS may suspend the app as
/// soon as the action's completion handler runs. What is not sent by then
/// stays queued for background work, the next push or the next launch.
pub const ANSWER_DELIVERY_BUDGET: Duration = Duration::from_secs(8);

/// How soon the system may run the next background refresh (iOS
/// `BGAppRefreshTaskRequest.earliestBeginDate`): pushes are lossy, so a
/// refresh pulls what was missed; the system decides when it really runs.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(15 * 60);

/// The platform time budgets, in milliseconds, as the glue reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhoneBudgets {
    /// [`EXTENSION_NETWORK_BUDGET`]; also the bound of a resolution push's
    /// confirmation on Android (`onMessageReceived` has about 10 s).
    pub extension_network_ms: u64,
    /// [`ANSWER_DELIVERY_BUDGET`].
    pub answer_delivery_ms: u64,
    /// [`REFRESH_INTERVAL`].
    pub refresh_interval_ms: u64,
}

/// The budgets the glue uses (see [`PhoneBudgets`]).
pub const BUDGETS: PhoneBudgets = PhoneBudgets {
    extension_network_ms: EXTENSION_NETWORK_BUDGET.as_millis() as u64,
    answer_delivery_ms: ANSWER_DELIVERY_BUDGET.as_millis() as u64,
    refresh_interval_ms: REFRESH_INTERVAL.as_millis() as u64,
};

/// What becomes of a question's notification after a resolution push, on
/// both platforms ([`Phone::resolution_push`]).
// Made once per push and handed straight to the bindings (which mirror
// this enum as it is): a box would save nothing worth the indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ResolutionPushAction {
    /// Resolved (the server says so, or this device already knew), or not a
    /// question pending here: iOS shows the resolved copy in its place,
    /// Android cancels it.
    Withdraw,
    /// Not confirmed in time and still pending here: the question stays,
    /// with its buttons (iOS shows it again, since the push replaced it;
    /// Android leaves its notification as it is). A push's resolution is
    /// only a claim: a forged one must not hide a pending question.
    KeepQuestion { question: CompactQuestion },
    /// Not confirmed, and no store could say whether the question is
    /// pending here (it could not be read, or the glue has no core: see
    /// [`RESOLUTION_PUSH_WITHOUT_STORE`]): nothing is withdrawn on an
    /// unconfirmed claim. Android leaves its notification as it is; iOS,
    /// where the push already replaced it, shows the generic notification
    /// under the question's id (it opens the app, whose reconcile puts the
    /// notification right).
    KeepUnconfirmed,
}

/// What a resolution push does where no store can be read: the glue has no
/// core (the store or the vault could not be opened), or the core's call
/// failed unexpectedly. The same rule as a store that fails inside
/// [`Phone::resolution_push`]: an unconfirmed claim hides nothing.
pub const RESOLUTION_PUSH_WITHOUT_STORE: ResolutionPushAction =
    ResolutionPushAction::KeepUnconfirmed;

/// One step of [`Phone::came_to_foreground`], in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForegroundStep {
    Resume,
    Requeue,
    Flush,
    Sync,
    Reconcile,
    Badge,
    Session,
}

/// A step that failed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    pub step: ForegroundStep,
    pub error: PhoneError,
}

/// What coming to the foreground did. A step that failed is `None` here and
/// in `failures` (in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForegroundReport {
    /// Steps run, in order (a skipped requeue is not listed).
    pub steps: Vec<ForegroundStep>,
    /// Sends cut short by a crash, queued again (at launch only; `None`
    /// later in the process, or when it failed).
    pub requeued: Option<u32>,
    /// The outbox sent (`None` before pairing: `NotSignedIn`). Offline it
    /// still reports: what could not be sent waits (`will_retry`).
    pub flushed: Option<FlushReport>,
    /// The server's pending questions pulled (`None` offline, signed out).
    pub synced: Option<SyncReport>,
    /// What to do with the notifications on screen: replace (iOS) or
    /// withdraw (Android) the resolved, remove the unknown, post the missed.
    pub plan: Option<ReconcilePlan>,
    /// The app icon's badge afterwards: the questions the person can still
    /// answer here.
    pub badge: Option<u32>,
    /// Where the session stands afterwards (its `line`: what to tell the
    /// person, in their language, when it needs them).
    pub session: Option<SessionStatus>,
    /// Each failed step's error, in order: `NotSignedIn` while signed out,
    /// `Network` offline, `Unauthorized` once the server refused the sign-in.
    pub failures: Vec<StepFailure>,
}

/// What going to the background did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackgroundReport {
    /// Answers still waiting to be sent: schedule background work for them
    /// (Android: `scheduleFlush`, WorkManager with a network constraint; iOS
    /// schedules its background refresh anyway). 0 when the store cannot
    /// say (already closed).
    pub unsent_answers: u32,
    /// The store was closed ([`Phone::suspend`]): iOS, whose suspended
    /// process must hold no file lock in the shared container
    /// (`0xdead10cc`). Android keeps it open (its process goes on receiving
    /// pushes and actions), with the WAL written back.
    pub store_closed: bool,
}

/// Records a step's outcome: its value, or its error in `failures`.
fn keep<T>(
    failures: &mut Vec<StepFailure>,
    steps: &mut Vec<ForegroundStep>,
    step: ForegroundStep,
    result: Result<T, PhoneError>,
) -> Option<T> {
    steps.push(step);
    match result {
        Ok(v) => Some(v),
        Err(error) => {
            failures.push(StepFailure { step, error });
            None
        }
    }
}

impl Phone {
    /// At launch and at every return to the foreground (see the module
    /// documentation for the steps and their order). `on_screen`: the
    /// identifiers of this library's notifications on screen (question
    /// ids), read by the glue; apply the returned plan to them and set the
    /// badge. Never fails: each step's error is in `failures`.
    pub async fn came_to_foreground(
        &self,
        on_screen: &[String],
        now: DateTime<Utc>,
    ) -> ForegroundReport {
        let mut failures = Vec::new();
        let mut steps = Vec::new();
        let f = &mut failures;
        let s = &mut steps;
        keep(f, s, ForegroundStep::Resume, self.resume());
        // Once per process, at its first foreground (a send interrupted by
        // the process's end is requeued then), and again at the next one
        // when it failed: only a requeue that ran marks it done.
        let launch = !self.foregrounded.load(std::sync::atomic::Ordering::SeqCst);
        let requeued = if launch {
            let done = keep(f, s, ForegroundStep::Requeue, self.requeue_interrupted());
            if done.is_some() {
                self.foregrounded
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            done
        } else {
            None
        };
        let flushed = keep(f, s, ForegroundStep::Flush, self.flush().await);
        let synced = keep(f, s, ForegroundStep::Sync, self.sync().await);
        let plan = keep(
            f,
            s,
            ForegroundStep::Reconcile,
            self.reconcile(on_screen, now),
        );
        let badge = keep(f, s, ForegroundStep::Badge, self.badge_count(now));
        let session = keep(f, s, ForegroundStep::Session, self.session_status());
        ForegroundReport {
            steps,
            requeued,
            flushed,
            synced,
            plan,
            badge,
            session,
            failures,
        }
    }

    /// Before the app goes to the background (iOS `didEnterBackground`,
    /// inside a background task; Android `onStop`). On iOS the store is
    /// closed ([`suspend`](Self::suspend)): the next store call needs
    /// [`came_to_foreground`](Self::came_to_foreground) or
    /// [`resume`](Self::resume). On Android it stays open (pushes and
    /// actions go on arriving in this process) and its WAL is written back.
    /// The report counts the answers still to send.
    pub fn entering_background(&self, platform: Platform) -> Result<BackgroundReport, PhoneError> {
        let unsent_answers = self.unsent_answers().unwrap_or(0);
        let store_closed = match platform {
            Platform::Ios => {
                self.suspend()?;
                true
            }
            Platform::Android | Platform::Dev => {
                self.checkpoint()?;
                false
            }
        };
        Ok(BackgroundReport {
            unsent_answers,
            store_closed,
        })
    }

    /// A resolution push arrived for `question_id`: asks the server
    /// ([`confirm_resolution`](Self::confirm_resolution)) for at most
    /// `within`, never longer than [`EXTENSION_NETWORK_BUDGET`] (the iOS
    /// extension's network time; Android's `onMessageReceived` has about
    /// 10 s), and decides what the notification becomes. Offline, signed
    /// out or out of time, the store decides: a question pending here is
    /// kept. A store that cannot be read (suspended, locked, damaged)
    /// decides nothing: [`RESOLUTION_PUSH_WITHOUT_STORE`]. Never fails.
    pub async fn resolution_push(
        &self,
        question_id: &str,
        within: Duration,
    ) -> ResolutionPushAction {
        let within = within.min(EXTENSION_NETWORK_BUDGET);
        let confirmed = matches!(
            tokio::time::timeout(within, self.confirm_resolution(question_id)).await,
            Ok(Ok(true))
        );
        if confirmed {
            return ResolutionPushAction::Withdraw;
        }
        match self.store.question(question_id) {
            Ok(Some(held)) if !held.state.is_terminal() => ResolutionPushAction::KeepQuestion {
                question: held.question,
            },
            Ok(_) => ResolutionPushAction::Withdraw,
            Err(e) => {
                log::warn!("resolution push for {question_id}: the store cannot be read: {e}");
                RESOLUTION_PUSH_WITHOUT_STORE
            }
        }
    }

    /// The line a notification shows once its question was answered on this
    /// device (Android replaces the question's notification with it after a
    /// lock-screen answer): the resolution when the question is resolved
    /// ("You answered: Approve", "Expired with no answer"), else where this
    /// device's answer stands ("Approve: queued, sends when online"). The
    /// same words as the question's feed cell at `now`. `None` when the
    /// question is not held here, or pending with no answer of this device.
    pub fn answered_line(
        &self,
        question_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, PhoneError> {
        let cell = feed::cell_for(&self.store, question_id, &self.me(), now, &self.copy())?;
        Ok(cell.and_then(|c| c.resolution.or(c.my_answer.map(|m| m.status))))
    }

    /// The app icon's badge at `now`: the questions the person can still
    /// answer here (pending, not answered; one queued offline counts as
    /// given).
    pub fn badge_count(&self, now: DateTime<Utc>) -> Result<u32, PhoneError> {
        Ok(feed::pending_count(&self.feed(now)?))
    }
}
