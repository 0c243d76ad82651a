//! The lifecycle's calls (`came_to_foreground`, `entering_background`,
//! `answered_line`) against the session suite's stand-in server, which can
//! be taken offline. The platforms' glue makes these calls and applies what
//! they return (the Swift and Kotlin suites drive it against `qp serve`).

use std::sync::Arc;

use super::session_tests::{link, session, Fake, Vault};
use super::tests::{block_on, APNS};
use super::*;
use crate::actions::option_action_id;
use crate::protocol::device::Platform;
use crate::store::StoreError;
use ForegroundStep::*;

/// A signed-in session phone holding q_1 (its push arrived).
fn signed_in(dir: &tempfile::TempDir, fake: &Fake) -> Phone {
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    block_on(phone.sign_in(&link(fake), None, "iPhone", None)).unwrap();
    phone.receive_apns(APNS).unwrap();
    phone
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_foreground_runs_its_steps_in_order_and_delivers_a_queued_answer_once() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let phone = signed_in(&dir, &fake);
    // Answered on the lock screen while nothing could be sent.
    phone
        .answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(phone.unsent_answers(), Ok(1));
    fake.state.lock().unwrap().requests.clear();

    // On screen: q_1's notification and one of a question forgotten here.
    let report = block_on(phone.came_to_foreground(&ids(&["q_1", "q_forgotten"]), Utc::now()));
    assert_eq!(report.failures, vec![]);
    assert_eq!(
        report.steps,
        vec![Resume, Requeue, Flush, Sync, Reconcile, Badge, Session],
        "launch: the requeue, then send before pulling"
    );
    assert_eq!(report.requeued, Some(0));
    assert_eq!(report.flushed.as_ref().map(|f| f.answered), Some(1));
    assert_eq!(report.synced.as_ref().map(|s| s.pending), Some(0));
    // The server heard the answer before the pull: send, then sync.
    let requests = fake.state.lock().unwrap().requests.clone();
    let answered = requests
        .iter()
        .position(|r| r == "POST /api/questions/q_1/answer")
        .unwrap();
    let pulled = requests
        .iter()
        .position(|r| r == "GET /api/questions/pending")
        .unwrap();
    assert!(answered < pulled, "{requests:?}");
    // The plan: q_1 answered (its resolved copy), the forgotten one removed.
    let plan = report.plan.unwrap();
    assert_eq!(plan.remove, vec!["q_forgotten"]);
    assert_eq!(plan.resolved.len(), 1);
    assert_eq!(plan.resolved[0].identifier, "q_1");
    assert_eq!(plan.resolved[0].subtitle, "You answered: Approve");
    assert!(plan.post.is_empty());
    assert_eq!(report.badge, Some(0));
    assert_eq!(
        report.session.map(|s| s.state),
        Some(SessionState::SignedIn)
    );

    // The next return to the foreground: no requeue (a send in flight may
    // be the extension's), and the answer is not sent again.
    let again = block_on(phone.came_to_foreground(&[], Utc::now()));
    assert_eq!(again.failures, vec![]);
    assert_eq!(
        again.steps,
        vec![Resume, Flush, Sync, Reconcile, Badge, Session]
    );
    assert_eq!(again.requeued, None);
    assert_eq!(again.flushed.map(|f| f.answered), Some(0));
    assert_eq!(fake.state.lock().unwrap().answers.len(), 1, "sent once");
    assert_eq!(phone.unsent_answers(), Ok(0));
}

/// A requeue that fails (the store's write lock held elsewhere past its
/// busy timeout) is tried again at the next foreground, and only one that
/// ran stops it.
#[test]
fn a_failed_requeue_is_tried_again_at_the_next_foreground() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let phone = signed_in(&dir, &fake);
    let other = rusqlite::Connection::open(dir.path().join("s.sqlite")).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let locked = block_on(phone.came_to_foreground(&[], Utc::now()));
    assert!(locked.steps.contains(&Requeue), "{:?}", locked.steps);
    assert_eq!(locked.requeued, None);
    let failed: Vec<_> = locked.failures.iter().map(|f| f.step).collect();
    assert!(failed.contains(&Requeue), "{failed:?}");
    other.execute_batch("ROLLBACK").unwrap();

    let retried = block_on(phone.came_to_foreground(&[], Utc::now()));
    assert_eq!(retried.failures, vec![]);
    assert_eq!(retried.steps[..2], [Resume, Requeue], "tried again");
    assert_eq!(retried.requeued, Some(0));
    let after = block_on(phone.came_to_foreground(&[], Utc::now()));
    assert!(!after.steps.contains(&Requeue), "done once it ran");
}

#[test]
fn offline_the_foreground_reports_the_failed_sync_and_still_reconciles() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let phone = signed_in(&dir, &fake);
    phone
        .answer_action("q_1", &option_action_id("deny"), None)
        .unwrap();
    fake.set_offline(true);
    let report = block_on(phone.came_to_foreground(&ids(&["q_1"]), Utc::now()));
    // The flush reports what waits; the sync cannot reach the server.
    assert_eq!(report.flushed.map(|f| f.will_retry), Some(1));
    assert_eq!(report.synced, None);
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    assert_eq!(report.failures[0].step, Sync);
    assert!(matches!(report.failures[0].error, PhoneError::Network(_)));
    // Reconciled with what the store knows: q_1 is still pending, on screen.
    assert_eq!(report.plan, Some(reconcile::ReconcilePlan::default()));
    assert_eq!(
        report.badge,
        Some(0),
        "an answer queued offline counts as given"
    );
    assert!(fake.state.lock().unwrap().answers.is_empty());
    assert_eq!(
        phone.answered_line("q_1", Utc::now()).unwrap().as_deref(),
        Some("Deny: not sent yet, server unreachable; will retry")
    );
}

#[test]
fn a_question_answered_elsewhere_is_withdrawn_at_the_next_foreground() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let phone = signed_in(&dir, &fake);
    // Its notification stays on screen; the resolution push was lost.
    fake.state.lock().unwrap().answered_elsewhere = true;
    let report = block_on(phone.came_to_foreground(&ids(&["q_1"]), Utc::now()));
    assert_eq!(report.failures, vec![]);
    assert_eq!(report.synced.unwrap().withdraw, vec!["q_1"]);
    let plan = report.plan.unwrap();
    assert_eq!(
        plan.resolved
            .iter()
            .map(|n| &n.identifier)
            .collect::<Vec<_>>(),
        vec!["q_1"]
    );
    assert_eq!(plan.resolved[0].subtitle, "Federica answered: Deny");
    assert_eq!(report.badge, Some(0));
    assert_eq!(
        phone.answered_line("q_1", Utc::now()).unwrap().as_deref(),
        Some("Federica answered: Deny"),
        "the line of its notification, as the feed words it"
    );
}

#[test]
fn signed_out_the_foreground_reports_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    let report = block_on(phone.came_to_foreground(&ids(&["q_old"]), Utc::now()));
    let failed: Vec<_> = report.failures.iter().map(|f| f.step).collect();
    assert_eq!(failed, vec![Flush, Sync]);
    assert!(report
        .failures
        .iter()
        .all(|f| f.error == PhoneError::NotSignedIn));
    // Reconciled all the same: a notification of the last session goes.
    assert_eq!(report.plan.unwrap().remove, vec!["q_old"]);
    assert_eq!(report.badge, Some(0));
    assert_eq!(
        report.session.map(|s| s.state),
        Some(SessionState::SignedOut)
    );
}

#[test]
fn the_background_closes_the_store_on_ios_only_and_the_foreground_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let phone = signed_in(&dir, &fake);
    phone
        .answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    // Android: the process goes on receiving pushes and actions.
    let android = phone.entering_background(Platform::Android).unwrap();
    assert_eq!(
        android,
        BackgroundReport {
            unsent_answers: 1,
            store_closed: false
        }
    );
    assert!(phone.feed(Utc::now()).is_ok());
    // iOS: no file lock held while suspended.
    let ios = phone.entering_background(Platform::Ios).unwrap();
    assert_eq!(
        ios,
        BackgroundReport {
            unsent_answers: 1,
            store_closed: true
        }
    );
    assert!(matches!(
        phone.feed(Utc::now()),
        Err(PhoneError::Store(StoreError::Suspended))
    ));
    let report = block_on(phone.came_to_foreground(&[], Utc::now()));
    assert_eq!(report.steps[0], Resume);
    assert_eq!(report.failures, vec![]);
    assert_eq!(report.flushed.map(|f| f.answered), Some(1));
    assert!(phone.feed(Utc::now()).is_ok());
}

#[test]
fn the_budgets_are_the_platforms() {
    assert_eq!(BUDGETS.extension_network_ms, 5_000);
    assert_eq!(BUDGETS.answer_delivery_ms, 8_000);
    assert_eq!(BUDGETS.refresh_interval_ms, 15 * 60 * 1000);
    assert_eq!(
        std::time::Duration::from_millis(BUDGETS.answer_delivery_ms),
        ANSWER_DELIVERY_BUDGET
    );
    assert_eq!(
        std::time::Duration::from_millis(BUDGETS.extension_network_ms),
        EXTENSION_NETWORK_BUDGET
    );
}

#[test]
fn a_resolution_push_withdraws_what_the_server_confirms_and_keeps_a_pending_question_otherwise() {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let phone = signed_in(&dir, &fake);
    let budget = Duration::from_millis(BUDGETS.extension_network_ms);
    let keep = |p: &Phone| ResolutionPushAction::KeepQuestion {
        question: p.question("q_1").unwrap().unwrap(),
    };

    // Still pending on the server: a forged claim, the question stays.
    let still = block_on(phone.resolution_push("q_1", budget));
    assert_eq!(still, keep(&phone));

    // The server takes the connection and never answers: decided within
    // the bound, from the store (pending here: kept).
    fake.hang.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let hung = block_on(phone.resolution_push("q_1", Duration::from_millis(300)));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(hung, keep(&phone));
    // Never longer than the core's budget, whatever the glue asks.
    let started = Instant::now();
    let capped = block_on(phone.resolution_push("q_1", Duration::from_secs(60)));
    assert!(
        started.elapsed() < budget + Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(capped, keep(&phone));
    fake.hang.store(false, Ordering::SeqCst);

    // A question this device does not hold: nothing to keep.
    assert_eq!(
        block_on(phone.resolution_push("q_unknown", budget)),
        ResolutionPushAction::Withdraw
    );

    // Answered on another phone: confirmed, withdrawn.
    fake.state.lock().unwrap().answered_elsewhere = true;
    assert_eq!(
        block_on(phone.resolution_push("q_1", budget)),
        ResolutionPushAction::Withdraw
    );
    // Known resolved here, the server out of reach: still withdrawn.
    fake.set_offline(true);
    assert_eq!(
        block_on(phone.resolution_push("q_1", budget)),
        ResolutionPushAction::Withdraw
    );
}

#[test]
fn a_resolution_push_the_store_cannot_judge_hides_nothing_and_says_so_as_without_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let phone = signed_in(&dir, &fake);
    let budget = std::time::Duration::from_millis(BUDGETS.extension_network_ms);
    // The question is pending (the server says so too); the store is closed
    // (iOS suspends it in the background), so neither the held question nor
    // the server's answer can be read or recorded.
    phone.suspend().unwrap();
    let action = block_on(phone.resolution_push("q_1", budget));
    // Kept unconfirmed: the platforms do not withdraw a claim they could not
    // check (Android leaves the notification, iOS shows the generic one),
    // the same decision the glue takes with no core at all.
    assert_eq!(action, ResolutionPushAction::KeepUnconfirmed);
    assert_eq!(action, RESOLUTION_PUSH_WITHOUT_STORE);
    // Open again, the store decides the same way.
    phone.resume().unwrap();
    assert!(matches!(
        block_on(phone.resolution_push("q_1", budget)),
        ResolutionPushAction::KeepQuestion { .. }
    ));
}
