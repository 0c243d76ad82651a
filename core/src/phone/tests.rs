//! The phone's rules, against a real SQLite file (no server: the network
//! paths are tested end to end in qp-server's phone_e2e suite).

use std::sync::Arc;

use super::*;
use crate::present::ios::{option_action_id, TEXT_ACTION_ID};
use crate::sync::TokenProvider;

struct NoToken;
impl TokenProvider for NoToken {
    fn token(&self) -> Option<String> {
        None
    }
}

const APNS: &str = r#"{"aps":{"alert":{"title":"Release Bot asks you","body":"Deploy?"}},
 "qp":{"v":1,"id":"q_1","room":{"code":"OPS123","name":"Ops"},"asker":"Release Bot","prompt":"Deploy?",
 "context":null,"options":[{"value":"approve","label":"Approve","style":"primary"},{"value":"deny","label":"Deny","style":"danger"}],
 "text_input":{"placeholder":null,"max_length":10},"responder_scope":"direct","target_user_id":"u_me",
 "expires_at":"2030-06-27T11:30:00Z","created_at":"2026-06-27T10:30:00Z"}}"#;

fn phone(dir: &tempfile::TempDir, mode: StoreMode) -> Phone {
    Phone::open(
        &dir.path().join("shared.sqlite"),
        mode,
        "http://127.0.0.1:9",
        "u_me",
        Arc::new(NoToken),
        &[],
        &crate::sync::Trust::platform(),
    )
    .unwrap()
}

#[test]
fn a_received_push_is_held_and_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::Extension);
    let Push::Question(q) = p.receive_apns(APNS).unwrap() else {
        panic!("a question")
    };
    assert_eq!(p.question("q_1").unwrap().unwrap(), q);
    let first = p
        .answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert!(first.is_new);
    assert_eq!(first.state, AnswerState::Queued);
    assert_eq!(first.status, "Approve: queued, sends when online");
    // A second tap (or the app) keeps the first answer: one answer, one key.
    let second = p
        .answer_action("q_1", &option_action_id("deny"), None)
        .unwrap();
    assert!(!second.is_new);
    assert_eq!(
        p.answer_status("q_1").unwrap().unwrap().status,
        "Approve: queued, sends when online"
    );
}

#[test]
fn too_long_text_becomes_a_draft_and_nothing_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::App);
    p.receive_apns(APNS).unwrap();
    let err = p
        .answer_action("q_1", TEXT_ACTION_ID, Some("far too long for ten"))
        .unwrap_err();
    assert!(matches!(
        err,
        PhoneError::Action(ActionError::TextTooLong { .. })
    ));
    assert_eq!(
        p.draft("q_1").unwrap().as_deref(),
        Some("far too long for ten")
    );
    assert!(p.answer_status("q_1").unwrap().is_none());
}

#[test]
fn in_app_answers_are_trimmed_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::App);
    p.receive_apns(APNS).unwrap();
    assert!(matches!(
        p.answer_in_app("q_1", Some("maybe".into()), None),
        Err(PhoneError::Validation(_))
    ));
    assert!(matches!(
        p.answer_in_app("q_1", None, None),
        Err(PhoneError::InvalidInput(_))
    ));
    // Eleven characters with the spaces, nine without: accepted as trimmed.
    let ok = p
        .answer_in_app("q_1", None, Some("  ship it  ".into()))
        .unwrap();
    assert_eq!(ok.status, "“ship it”: queued, sends when online");
    assert!(matches!(
        p.answer_in_app("q_unknown", None, Some("x".into())),
        Err(PhoneError::UnknownQuestion(_))
    ));
}

#[test]
fn categories_are_planned_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::Extension);
    p.receive_apns(APNS).unwrap();
    // q_1 resolves (a resolution push); its category is pruned.
    p.receive_apns(
        r#"{"aps":{"content-available":1},"qp_resolved":{"v":1,"id":"q_1","state":"cancelled","answer":null,"resolved_at":"2026-06-27T10:40:00Z"}}"#,
    )
    .unwrap();
    let registered = vec!["app.static".to_string(), "qp.q.q_1".to_string()];
    let plan = p
        .plan_ios_categories(&registered, "qp.q.q_2", Utc::now(), 128)
        .unwrap();
    assert_eq!(plan.keep, vec!["app.static", "qp.q.q_2"]);
    assert_eq!(plan.removed, vec!["qp.q.q_1"]);
    assert_eq!(p.resolution("q_1").unwrap().as_deref(), Some("cancelled"));
}

#[test]
fn a_locked_store_does_not_stop_the_notification() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::Extension);
    // Another process holds the write lock longer than the busy timeout would
    // allow us to wait; the push still decodes.
    let other = rusqlite::Connection::open(dir.path().join("shared.sqlite")).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    other.busy_timeout(std::time::Duration::ZERO).unwrap();
    let started = std::time::Instant::now();
    assert!(matches!(p.receive_apns(APNS), Ok(Push::Question(_))));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
