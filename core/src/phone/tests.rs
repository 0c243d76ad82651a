//! The phone's rules, against a real SQLite file (no server: the network
//! paths are tested end to end in qp-server's phone_e2e suite).

use std::collections::HashMap;
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
    assert_eq!(
        first.status,
        "Approve: queued, will send when you’re online"
    );
    // A second tap (or the app) keeps the first answer: one answer, one key.
    let second = p
        .answer_action("q_1", &option_action_id("deny"), None)
        .unwrap();
    assert!(!second.is_new);
    assert_eq!(
        p.answer_status("q_1").unwrap().unwrap().status,
        "Approve: queued, will send when you’re online"
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
    assert_eq!(ok.status, "“ship it”: queued, will send when you’re online");
    assert!(matches!(
        p.answer_in_app("q_unknown", None, Some("x".into())),
        Err(PhoneError::UnknownQuestion(_))
    ));
}

/// A resolution push for q_1 (a claim: anyone who can inject pushes can send it).
const RESOLVED: &str = r#"{"aps":{"content-available":1},"qp_resolved":{"v":1,"id":"q_1","state":"cancelled","answer":null,"resolved_at":"2026-06-27T10:40:00Z"}}"#;

#[test]
fn a_resolution_push_changes_nothing_until_the_server_confirms_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::Extension);
    p.receive_apns(APNS).unwrap();
    let Push::Resolved(n) = p.receive_apns(RESOLVED).unwrap() else {
        panic!("a resolution")
    };
    assert_eq!(n.id, "q_1");
    // Still pending here: still answerable, its category still registered.
    assert_eq!(p.resolution("q_1").unwrap(), None);
    assert_eq!(p.store().pending_ids().unwrap(), vec!["q_1"]);
    let registered = vec!["app.static".to_string(), "qp.q.q_1".to_string()];
    let plan = p
        .plan_ios_categories(&registered, "qp.q.q_2", Utc::now(), 128)
        .unwrap();
    assert_eq!(plan.keep, vec!["app.static", "qp.q.q_1", "qp.q.q_2"]);
    assert!(p
        .answer_action("q_1", &option_action_id("approve"), None)
        .is_ok());
    // The server cannot be asked (signed out): not confirmed, so nothing
    // is withdrawn.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let confirmed = rt.block_on(p.confirm_resolution("q_1"));
    assert!(
        matches!(confirmed, Err(PhoneError::NotSignedIn)),
        "{confirmed:?}"
    );
    assert_eq!(p.resolution("q_1").unwrap(), None);
}

#[test]
fn a_push_never_changes_a_question_the_phone_holds() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::Extension);
    p.receive_apns(APNS).unwrap();
    // The same id, another prompt and other buttons: what an injector sends.
    let forged = APNS
        .replace("\"prompt\":\"Deploy?\"", "\"prompt\":\"git status\"")
        .replace("\"label\":\"Approve\"", "\"label\":\"Read only\"");
    let Push::Question(shown) = p.receive_apns(&forged).unwrap() else {
        panic!("a question")
    };
    // What is shown, held and answered is the question first received.
    assert_eq!(shown.prompt, "Deploy?");
    assert_eq!(shown.options[0].label, "Approve");
    let held = p.question("q_1").unwrap().unwrap();
    assert_eq!(
        (held.prompt.as_str(), held.options[0].label.as_str()),
        ("Deploy?", "Approve")
    );
    let answered = p
        .answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(answered.state, AnswerState::Queued);
    assert!(
        answered.status.starts_with("Approve"),
        "{}",
        answered.status
    );
}

#[test]
fn only_a_notification_showing_the_held_question_may_answer_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::App);
    p.receive_apns(APNS).unwrap();
    let n = p.ios_notification(
        &p.question("q_1").unwrap().unwrap(),
        &PresentOptions::default(),
    );
    assert!(p
        .shows_held_question("q_1", n.subtitle.as_deref(), &n.body)
        .unwrap());
    // An alert shown without the extension, naming q_1's category: its own words.
    assert!(!p
        .shows_held_question("q_1", None, "Allow Bash: git status")
        .unwrap());
    assert!(!p.shows_held_question("q_1", Some("x"), "Deploy?").unwrap());
    assert!(!p.shows_held_question("q_2", None, "Deploy?").unwrap());
}

/// A device key kept in memory (the app's Keychain or Keystore).
struct MemoryKeys(std::sync::Mutex<Option<Vec<u8>>>);
impl DeviceKeyStore for MemoryKeys {
    fn load_device_key(&self) -> Option<Vec<u8>> {
        self.0.lock().unwrap().clone()
    }
    fn save_device_key(&self, key: Vec<u8>) -> bool {
        *self.0.lock().unwrap() = Some(key);
        true
    }
}

/// The question of [`APNS`], as the server holds it.
fn server_question(prompt: &str) -> crate::protocol::Question {
    let Push::Question(q) = payload::decode_apns(APNS).unwrap() else {
        panic!("a question")
    };
    let mut q = q.to_question();
    q.prompt = prompt.to_string();
    q
}

#[test]
fn a_device_with_a_key_trusts_only_sealed_pushes() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::Extension).with_device_keys(
        Arc::new(MemoryKeys(Default::default())),
        Some("dev_1".into()),
    );
    let public =
        crate::e2e::DevicePublicKey::parse(&p.device_public_key().unwrap(), "key").unwrap();
    let to = payload::Recipient {
        device_id: "dev_1",
        key: &public,
    };
    let real = server_question("Allow Bash: psql prod -c \"DROP TABLE customers\"");
    let sealed = payload::encode_apns_question_sealed(&real, Copy::english(), &to).unwrap();
    let Push::Question(q) = p.receive_apns(&sealed.json).unwrap() else {
        panic!("a question")
    };
    assert_eq!(q.prompt, real.prompt);
    // A plain push with the same id and a harmless prompt: refused, before
    // or after the real one, and its words are not shown either.
    let forged = APNS.replace("Deploy?", "Allow Bash: git status");
    for push in [forged.as_str(), RESOLVED] {
        let err = p.receive_apns(push).unwrap_err();
        assert_eq!(err, PhoneError::Payload(PayloadError::Unsealed), "{push}");
    }
    let mut fcm = HashMap::new();
    fcm.insert("type".to_string(), "question".to_string());
    fcm.insert("qp".to_string(), forged.clone());
    assert_eq!(
        p.receive_fcm(&fcm).unwrap_err(),
        PhoneError::Payload(PayloadError::Unsealed)
    );
    let shown =
        p.fallback_notification(Some("Release Bot asks you"), Some("Allow Bash: git status"));
    assert!(!shown.body.contains("git status"), "{shown:?}");
    assert_eq!(shown, payload::fallback(None, None, Copy::english()));
    // The answer is recorded against the prompt the server sent.
    assert_eq!(p.question("q_1").unwrap().unwrap().prompt, real.prompt);
    assert_eq!(p.resolution("q_1").unwrap(), None);
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(p.store().outbox().unwrap()[0].question_id, "q_1");
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
