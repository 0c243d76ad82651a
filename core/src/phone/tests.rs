//! The phone's rules, against a real SQLite file (stand-in servers through
//! a scripted transport; the network paths are tested end to end in
//! qp-server's phone_e2e suite).

use std::collections::HashMap;
use std::sync::Arc;

use super::*;
use crate::actions::{option_action_id, TEXT_ACTION_ID};
use crate::sync::TokenProvider;

struct NoToken;
impl TokenProvider for NoToken {
    fn token(&self) -> Option<String> {
        None
    }
}

pub(super) const APNS: &str = r#"{"aps":{"alert":{"title":"Release Bot asks you","body":"Deploy?"}},
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
        super::test_net::net(),
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
    let plan = p.plan_ios_categories(&registered, "qp.q.q_2", Utc::now(), 128);
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
pub(super) struct MemoryKeys(pub(super) std::sync::Mutex<Option<Vec<u8>>>);
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
pub(super) fn server_question(prompt: &str) -> crate::protocol::Question {
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
    // The same for an FCM message's own words.
    fcm.insert("title".to_string(), "Release Bot asks you".to_string());
    fcm.insert("body".to_string(), "Allow Bash: git status".to_string());
    assert_eq!(p.fcm_fallback_notification(&fcm), shown);
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

// ---- the gap of phones without a key ----
//
// A phone without a device key takes new questions from plain pushes, and a
// plain push may carry the id of a real question the phone has not received
// yet with other words. The answer must not land on the real question: it
// is sent only once the server shows the question the person saw.

/// A scripted server: `GET /api/questions/q_1` answers `question`; an answer
/// to it is taken (answered by u_me) and counted. Every request is kept.
struct Scripted {
    url: String,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
}

fn scripted_server(question: crate::protocol::Question) -> Scripted {
    let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = requests.clone();
    let url = super::test_net::serve(move |request| {
        let line = format!("{} {} HTTP/1.1", request.method.as_str(), request.path());
        seen.lock().unwrap().push(line.clone());
        if line.starts_with("GET /api/questions/q_1 ") {
            return crate::http::Scripted::json(200, &serde_json::to_value(&question).unwrap());
        }
        if line.starts_with("POST /api/questions/q_1/answer ") {
            let sent: serde_json::Value =
                serde_json::from_slice(request.body.as_deref().unwrap_or_default())
                    .unwrap_or_default();
            let mut q = question.clone();
            q.state = crate::protocol::QuestionState::Answered;
            q.answer = Some(crate::protocol::Answer {
                value: sent["value"].as_str().map(String::from),
                label: None,
                text: sent["text"].as_str().map(String::from),
                responder: crate::protocol::Responder {
                    id: "u_me".into(),
                    display_name: "Me".into(),
                },
                answered_at: Utc::now(),
            });
            q.resolved_at = Some(Utc::now());
            return crate::http::Scripted::json(200, &serde_json::to_value(&q).unwrap());
        }
        crate::http::Scripted::json(
            404,
            &serde_json::json!({"error":{"code":"not_found","message":"no"}}),
        )
    });
    Scripted { url, requests }
}

impl Scripted {
    fn answers_sent(&self) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("POST "))
            .count()
    }
}

struct Token;
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some("qpu_test".into())
    }
}

fn phone_of(dir: &tempfile::TempDir, url: &str) -> Phone {
    Phone::open(
        &dir.path().join("shared.sqlite"),
        StoreMode::App,
        url,
        "u_me",
        Arc::new(Token),
        &[],
        super::test_net::net(),
    )
    .unwrap()
}

pub(super) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

const REAL: &str = "Allow Bash: psql prod -c \"DROP TABLE customers\"";

#[test]
fn an_answer_to_a_forged_plain_push_is_not_sent_and_the_real_question_shows_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = scripted_server(server_question(REAL));
    let p = phone_of(&dir, &server.url);
    // The injector's push: q_1's id (unseen here), a harmless prompt.
    let forged = APNS.replace("Deploy?", "Allow Bash: git status");
    let Push::Question(shown) = p.receive_apns(&forged).unwrap() else {
        panic!("a question")
    };
    assert_eq!(shown.prompt, "Allow Bash: git status");
    assert!(!p.store().question("q_1").unwrap().unwrap().verified);
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();

    let report = block_on(p.flush()).unwrap();
    assert_eq!(report.rejected, 1, "{report:?}");
    assert_eq!(server.answers_sent(), 0, "{:?}", server.requests);
    // The server's question is held now (the feed shows it), verified.
    let held = p.store().question("q_1").unwrap().unwrap();
    assert_eq!(held.question.prompt, REAL);
    assert!(held.verified);
    let status = p.answer_status("q_1").unwrap().unwrap();
    assert_eq!(status.state, AnswerState::Rejected);
    assert_eq!(
        status.status,
        "Approve: not sent, the question differs from what was shown; read it again"
    );
    // Nothing is sent on a later flush either.
    block_on(p.flush()).unwrap();
    assert_eq!(server.answers_sent(), 0);

    // Answered again, now that the real question is what is shown: sent.
    let again = p
        .answer_action("q_1", &option_action_id("deny"), None)
        .unwrap();
    assert!(again.is_new);
    let report = block_on(p.flush()).unwrap();
    assert_eq!(report.answered, 1, "{report:?}");
    assert_eq!(server.answers_sent(), 1);
}

#[test]
fn an_answer_to_a_genuine_plain_push_is_sent_after_the_server_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = scripted_server(server_question("Deploy?"));
    let p = phone_of(&dir, &server.url);
    p.receive_apns(APNS).unwrap();
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    let report = block_on(p.flush()).unwrap();
    assert_eq!(report.answered, 1, "{report:?}");
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        requests[0].starts_with("GET /api/questions/q_1 "),
        "{requests:?}"
    );
    assert!(
        requests[1].starts_with("POST /api/questions/q_1/answer "),
        "{requests:?}"
    );
    assert!(p.store().question("q_1").unwrap().unwrap().verified);
}

#[test]
fn a_sync_between_the_answer_and_the_send_does_not_make_a_forged_push_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let real = server_question(REAL);
    let server = scripted_server(real.clone());
    let p = phone_of(&dir, &server.url);
    p.receive_apns(&APNS.replace("Deploy?", "Allow Bash: git status"))
        .unwrap();
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    // A sync (the app came to the foreground) reads the real question
    // before the outbox is flushed: the answer was still given to the
    // forged words, and is not sent.
    p.store().record_server(&real).unwrap();
    assert!(p.store().question("q_1").unwrap().unwrap().verified);
    let report = block_on(p.flush()).unwrap();
    assert_eq!(report.rejected, 1, "{report:?}");
    assert_eq!(server.answers_sent(), 0);
}

#[test]
fn a_push_shortened_by_the_server_is_still_the_question_the_person_saw() {
    let dir = tempfile::tempdir().unwrap();
    // Every field at its longest, in characters of four bytes: cut.
    let wide = |n: usize| "🚀".repeat(n);
    let mut real = server_question(&format!("Allow Bash: {}", wide(488)));
    real.context = Some(wide(40));
    for o in &mut real.options {
        o.label = wide(40);
    }
    if let Some(t) = real.text_input.as_mut() {
        t.placeholder = Some(wide(60));
    }
    if let Some(r) = real.room.as_mut() {
        r.name = wide(80);
    }
    if let Some(a) = real.asker.as_mut() {
        a.display_name = wide(80);
    }
    let encoded = payload::encode_apns_question(&real, Copy::english()).unwrap();
    assert!(
        encoded.report.shortened.contains(&"qp.prompt".to_string()),
        "{:?}",
        encoded.report
    );
    let server = scripted_server(real.clone());
    let p = phone_of(&dir, &server.url);
    let Push::Question(shown) = p.receive_apns(&encoded.json).unwrap() else {
        panic!("a question")
    };
    assert_ne!(shown.prompt, real.prompt);
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(block_on(p.flush()).unwrap().answered, 1);

    // Cut where the server would not have cut it: another question.
    let dir = tempfile::tempdir().unwrap();
    let short = server_question(REAL);
    let server = scripted_server(short);
    let p = phone_of(&dir, &server.url);
    p.receive_apns(&APNS.replace("Deploy?", "Allow Bash: psql prod…"))
        .unwrap();
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(block_on(p.flush()).unwrap().rejected, 1);
    assert_eq!(server.answers_sent(), 0);
}

#[test]
fn an_answer_to_a_sealed_push_is_sent_without_a_read() {
    let dir = tempfile::tempdir().unwrap();
    let real = server_question(REAL);
    let server = scripted_server(real.clone());
    let p = phone_of(&dir, &server.url).with_device_keys(
        Arc::new(MemoryKeys(Default::default())),
        Some("dev_1".into()),
    );
    let public =
        crate::e2e::DevicePublicKey::parse(&p.device_public_key().unwrap(), "key").unwrap();
    let to = payload::Recipient {
        device_id: "dev_1",
        key: &public,
    };
    let sealed = payload::encode_apns_question_sealed(&real, Copy::english(), &to).unwrap();
    p.receive_apns(&sealed.json).unwrap();
    assert!(p.store().question("q_1").unwrap().unwrap().verified);
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(block_on(p.flush()).unwrap().answered, 1);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(requests[0].starts_with("POST "), "{requests:?}");
}

#[test]
fn a_store_of_an_older_version_trusts_none_of_its_pushed_questions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    {
        // The store as version 2 left it: a question from a plain push (its
        // prompt possibly rewritten by another push) and an answer to send.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(&format!(
            "CREATE TABLE questions (id TEXT PRIMARY KEY, compact TEXT NOT NULL, state TEXT NOT NULL,
                answer TEXT, resolved_at INTEGER, expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL,
                updated_ms INTEGER NOT NULL, presented_ms INTEGER);
             CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, question_id TEXT NOT NULL,
                idempotency_key TEXT NOT NULL UNIQUE, body TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'answered', 'already_resolved', 'rejected')),
                attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ms INTEGER NOT NULL, last_error TEXT,
                created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
             CREATE TABLE drafts (question_id TEXT PRIMARY KEY, text TEXT NOT NULL, reason TEXT NOT NULL,
                updated_ms INTEGER NOT NULL);
             INSERT INTO questions VALUES ('q_1', '{}', 'pending', NULL, NULL, 1908955800, 1782556200, 0, 0);
             INSERT INTO outbox (question_id, idempotency_key, body, state, next_attempt_ms, created_ms, updated_ms)
                VALUES ('q_1', 'k1', '{{\"value\":\"approve\"}}', 'queued', 0, 0, 0);
             PRAGMA user_version = 2;",
            serde_json::to_string(&CompactQuestion::from_question(&server_question(
                "Allow Bash: git status"
            )))
            .unwrap()
            .replace('\'', "''")
        ))
        .unwrap();
    }
    let server = scripted_server(server_question(REAL));
    let p = phone_of(&dir, &server.url);
    assert!(!p.store().question("q_1").unwrap().unwrap().verified);
    assert!(p.store().outbox().unwrap()[0].unverified_seen.is_some());
    assert_eq!(block_on(p.flush()).unwrap().rejected, 1);
    assert_eq!(server.answers_sent(), 0);
    assert_eq!(p.question("q_1").unwrap().unwrap().prompt, REAL);
}

#[test]
fn an_action_from_a_notification_drawn_from_a_forged_push_answers_what_it_showed() {
    // Android keeps a notification as posted: a sync that reads the real
    // question afterwards does not change its words or its buttons.
    let dir = tempfile::tempdir().unwrap();
    let real = server_question(REAL);
    let server = scripted_server(real.clone());
    let p = phone_of(&dir, &server.url);
    let Push::Question(q) = p
        .receive_fcm(&HashMap::from([
            ("type".to_string(), "question".to_string()),
            (
                "qp".to_string(),
                serde_json::to_string(&CompactQuestion {
                    prompt: "Allow Bash: git status".into(),
                    ..CompactQuestion::from_question(&real)
                })
                .unwrap(),
            ),
        ]))
        .unwrap()
    else {
        panic!("a question")
    };
    let posted = p.android_notification(&q, Utc::now(), &PresentOptions::default());
    assert!(posted.text.contains("git status"), "{posted:?}");
    // The app syncs: the real question is held (and verified) now.
    p.store().record_server(&real).unwrap();
    assert!(p.store().question("q_1").unwrap().unwrap().verified);
    // The person taps Approve on the notification still showing git status.
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    let report = block_on(p.flush()).unwrap();
    assert_eq!(report.rejected, 1, "{report:?}");
    assert_eq!(server.answers_sent(), 0, "{:?}", server.requests);
}

#[test]
fn a_question_posted_by_reconciliation_from_the_server_is_answered_without_a_read() {
    let dir = tempfile::tempdir().unwrap();
    let real = server_question(REAL);
    let server = scripted_server(real.clone());
    let p = phone_of(&dir, &server.url);
    p.store().record_server(&real).unwrap();
    let plan = p.reconcile(&[], Utc::now()).unwrap();
    assert_eq!(plan.post.len(), 1);
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(block_on(p.flush()).unwrap().answered, 1);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
}

#[test]
fn the_answered_line_is_the_feed_cells_words() {
    let dir = tempfile::tempdir().unwrap();
    let p = phone(&dir, StoreMode::App);
    let now = Utc::now();
    assert_eq!(p.answered_line("q_1", now).unwrap(), None, "not held");
    p.receive_apns(APNS).unwrap();
    assert_eq!(p.answered_line("q_1", now).unwrap(), None, "no answer yet");
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    let line = p.answered_line("q_1", now).unwrap();
    assert_eq!(
        line.as_deref(),
        Some("Approve: queued, will send when you’re online")
    );
    let cell = p.feed(now).unwrap().into_iter().next().unwrap();
    assert_eq!(line, cell.my_answer.map(|m| m.status));
    // Past its deadline, unanswered there: the resolution, as the feed says.
    let late = chrono::DateTime::parse_from_rfc3339("2031-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let cell = p.feed(late).unwrap().into_iter().next().unwrap();
    assert_eq!(
        p.answered_line("q_1", late).unwrap(),
        cell.resolution.or(cell.my_answer.map(|m| m.status))
    );
}

#[test]
fn the_alert_of_an_apns_payload_is_read_by_the_core() {
    let alert = payload::apns_alert(APNS);
    assert_eq!(alert.title.as_deref(), Some("Release Bot asks you"));
    assert_eq!(alert.subtitle, None);
    assert_eq!(alert.body.as_deref(), Some("Deploy?"));
    let plain = payload::apns_alert(r#"{"aps":{"alert":"Approve, by Federica"}}"#);
    assert_eq!(plain.body.as_deref(), Some("Approve, by Federica"));
    assert_eq!(plain.title, None);
    for none in [
        "{broken",
        "[]",
        r#"{"aps":{"content-available":1}}"#,
        r#"{"aps":"x"}"#,
    ] {
        assert_eq!(
            payload::apns_alert(none),
            payload::ApnsAlert::default(),
            "{none}"
        );
    }
    // Without a store, the categories are planned from nothing known.
    let plan = plan_ios_categories_without_store(
        &["app.static".to_string(), "qp.q.q_0".to_string()],
        "qp.q.q_1",
        Utc::now(),
        128,
    );
    assert_eq!(plan.keep, vec!["app.static", "qp.q.q_0", "qp.q.q_1"]);
}

/// The platform transports never follow a redirect (a captive
/// portal, a proxy or a moved server answering 301/302/307): the 3xx reaches
/// the core as a response, and the core does not take it for the server's
/// answer. A sync fails naming the status; an answer stays queued for a
/// retry with the status in its record.
#[test]
fn a_redirect_is_not_followed_and_is_reported_with_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let requests = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = requests.clone();
    let url = super::test_net::serve(move |request| {
        seen.lock().unwrap().push(request.url.clone());
        crate::http::Scripted::Reply(crate::http::HttpResponse {
            status: 302,
            body: b"<html>Sign in to the hotel wifi</html>".to_vec(),
        })
    });
    let p = phone_of(&dir, &url);
    let err = block_on(p.sync()).unwrap_err().to_string();
    assert!(err.contains("302"), "{err}");

    p.receive_apns(APNS).unwrap();
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    let report = block_on(p.flush()).unwrap();
    assert_eq!((report.answered, report.will_retry), (0, 1), "{report:?}");
    let record = format!("{:?}", p.store().outbox().unwrap());
    assert!(record.contains("302"), "{record}");
    assert!(!requests.lock().unwrap().is_empty());
}
