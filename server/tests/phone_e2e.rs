//! End to end: the real server on loopback and the phone side of qp-core
//! (payload decode, store, outbox, flush, sync, feed) on real SQLite files,
//! including process restarts and a process killed mid-flush.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Fixture;
use qp_core::answer::map_action;
use qp_core::feed::feed;
use qp_core::payload::{decode_apns, encode_apns_question, Push};
use qp_core::present::copy::Copy;
use qp_core::protocol::{Question, QuestionState};
use qp_core::store::{AnswerState, Store, StoreMode};
use qp_core::sync::{flush, sync, PhoneClient, TokenProvider};
use serde_json::{json, Value};

struct Token(String);
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some(self.0.clone())
    }
}

fn client(base: &str, user: &str, token: &str) -> PhoneClient {
    PhoneClient::new(
        base,
        user,
        Arc::new(Token(token.to_string())),
        common::phone_net(),
        qp_core::sync::REQUEST_TIMEOUT,
    )
}

/// What the notification extension does with a push: decode, record.
fn receive(store_path: &Path, q: &Value) -> qp_core::payload::CompactQuestion {
    let q: Question = serde_json::from_value(q.clone()).unwrap();
    let payload = encode_apns_question(&q, Copy::english()).unwrap().json;
    let store = Store::open(store_path, StoreMode::Extension).unwrap();
    let Push::Question(cq) = decode_apns(&payload).unwrap() else {
        panic!("a question push")
    };
    store.record_push(&cq).unwrap();
    cq
}

fn answer_keys(f: &Fixture, question_id: &str) -> Vec<(String, String)> {
    f.db()
        .query_map(
            "SELECT user_id, key FROM answer_keys WHERE question_id = ?1",
            qp_server::params![question_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_offline_answer_survives_a_restart_and_reaches_the_asker_once() {
    let mut f = Fixture::new().await;
    let phone = f.dir.path().join("bob-phone.sqlite");
    let q = f
        .ask(json!({"prompt": "Deploy?", "responder_scope": "room", "correlation_id": "rel-9"}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let cq = receive(&phone, &q);

    // Lock-screen tap while the server is unreachable.
    let old_base = f.base.clone();
    f.stop().await;
    {
        let store = Store::open(&phone, StoreMode::App).unwrap();
        let body = map_action(&cq, "qp.v.approve", None).unwrap();
        let entry = store.commit_answer(&id, &body).unwrap();
        assert_eq!(entry.state, AnswerState::Queued);
        let report = flush(&store, &client(&old_base, &f.bob, &f.bob_token))
            .await
            .unwrap();
        assert_eq!(report.will_retry, 1);
        let e = store.answer_for(&id).unwrap().unwrap();
        assert_eq!((e.state, e.attempts), (AnswerState::Queued, 1));
        assert!(e.last_error.is_some());
        let cell = &feed(&store, &f.bob, chrono::Utc::now(), Copy::english()).unwrap()[0];
        assert!(
            cell.my_answer.as_ref().unwrap().can_retry,
            "a failed send offers a retry"
        );
    } // the process ends

    // A new process, the server back.
    f.restart(|_| {}).await;
    let store = Store::open(&phone, StoreMode::App).unwrap();
    let key = store.answer_for(&id).unwrap().unwrap().idempotency_key;
    assert!(store.retry_now(&id).unwrap());
    let report = flush(&store, &client(&f.base, &f.bob, &f.bob_token))
        .await
        .unwrap();
    assert_eq!((report.answered, report.will_retry), (1, 0));
    assert_eq!(report.withdraw, vec![id.clone()]);
    assert!(
        flush(&store, &client(&f.base, &f.bob, &f.bob_token))
            .await
            .unwrap()
            == Default::default(),
        "nothing left to send"
    );

    let (_, w) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{id}/wait?timeout=1"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(w["state"], "answered");
    assert_eq!(w["answer"]["value"], "approve");
    assert_eq!(w["answer"]["responder"]["id"], f.bob.as_str());
    assert_eq!(w["correlation_id"], "rel-9");
    assert_eq!(
        answer_keys(&f, &id),
        vec![(f.bob.clone(), key)],
        "one answer, one key"
    );
    let cell = &feed(&store, &f.bob, chrono::Utc::now(), Copy::english()).unwrap()[0];
    assert_eq!(cell.resolution.as_deref(), Some("You answered: Approve"));
    assert!(!cell.answerable);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_devices_answer_at_once_and_exactly_one_wins() {
    let f = Fixture::new().await;
    let q = f
        .ask(json!({"prompt": "Which?", "responder_scope": "room", "options": ["dev", "prod"]}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let alice_path = f.dir.path().join("alice.sqlite");
    let bob_path = f.dir.path().join("bob.sqlite");
    let cq = receive(&alice_path, &q);
    receive(&bob_path, &q);
    let alice = Store::open(&alice_path, StoreMode::App).unwrap();
    let bob = Store::open(&bob_path, StoreMode::App).unwrap();
    alice
        .commit_answer(&id, &map_action(&cq, "qp.v.dev", None).unwrap())
        .unwrap();
    bob.commit_answer(&id, &map_action(&cq, "qp.v.prod", None).unwrap())
        .unwrap();
    let (ca, cb) = (
        client(&f.base, &f.alice, &f.alice_token),
        client(&f.base, &f.bob, &f.bob_token),
    );
    let (ra, rb) = tokio::join!(flush(&alice, &ca), flush(&bob, &cb));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.answered + rb.answered, 1, "exactly one winner");
    assert_eq!(ra.already_resolved + rb.already_resolved, 1);
    let (winner_label, winner_name, loser, loser_id) = if ra.answered == 1 {
        ("dev", "Alice", &bob, &f.bob)
    } else {
        ("prod", "Bob", &alice, &f.alice)
    };
    let held = loser.question(&id).unwrap().unwrap();
    assert_eq!(held.state, QuestionState::Answered);
    assert_eq!(held.answer.unwrap().label.as_deref(), Some(winner_label));
    let cell = &feed(loser, loser_id, chrono::Utc::now(), Copy::english()).unwrap()[0];
    assert_eq!(
        cell.resolution.as_deref(),
        Some(format!("{winner_name} answered: {winner_label}").as_str())
    );
    assert_eq!(
        cell.my_answer.as_ref().unwrap().state,
        AnswerState::AlreadyResolved
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_answers_are_not_retried_and_sync_learns_outcomes() {
    let f = Fixture::new().await;
    let phone = f.dir.path().join("bob.sqlite");
    // A direct question to Alice reaches Bob's phone (a forged or stale push).
    let not_mine = f.ask(json!({"prompt": "For Alice"})).await;
    let cq = receive(&phone, &not_mine);
    let store = Store::open(&phone, StoreMode::App).unwrap();
    let c = client(&f.base, &f.bob, &f.bob_token);
    store
        .commit_answer(&cq.id, &map_action(&cq, "qp.v.approve", None).unwrap())
        .unwrap();
    let r = flush(&store, &c).await.unwrap();
    assert_eq!(r.rejected, 1);
    let e = store.answer_for(&cq.id).unwrap().unwrap();
    assert_eq!(e.state, AnswerState::Rejected);
    assert!(e.last_error.unwrap().contains("may not answer"));
    assert!(
        store.due_answers(i64::MAX).unwrap().is_empty(),
        "never retried"
    );

    // Sync: a room question answered by someone else and one cancelled are
    // learned and withdrawn; a new pending one appears.
    let answered = f
        .ask(json!({"prompt": "A", "responder_scope": "room"}))
        .await;
    let cancelled = f
        .ask(json!({"prompt": "C", "responder_scope": "room"}))
        .await;
    receive(&phone, &answered);
    receive(&phone, &cancelled);
    f.answer(
        &f.alice_token,
        answered["id"].as_str().unwrap(),
        json!({"value": "deny"}),
    )
    .await;
    f.cancel(cancelled["id"].as_str().unwrap()).await;
    let fresh = f
        .ask(json!({"prompt": "New", "responder_scope": "room"}))
        .await;
    let report = sync(&store, &c).await.unwrap();
    let mut withdraw = report.withdraw.clone();
    withdraw.sort();
    let mut want = vec![
        answered["id"].as_str().unwrap().to_string(),
        cancelled["id"].as_str().unwrap().to_string(),
        not_mine["id"].as_str().unwrap().to_string(),
    ];
    want.sort();
    assert_eq!(
        withdraw, want,
        "resolved and no-longer-visible questions are withdrawn"
    );
    assert_eq!(report.pending, 1);
    assert!(store
        .question(fresh["id"].as_str().unwrap())
        .unwrap()
        .is_some());
    let cells = feed(&store, &f.bob, chrono::Utc::now(), Copy::english()).unwrap();
    let by_id = |id: &Value| {
        cells
            .iter()
            .find(|c| c.question_id == id.as_str().unwrap())
            .unwrap()
            .clone()
    };
    assert_eq!(
        by_id(&answered["id"]).resolution.as_deref(),
        Some("Alice answered: Deny")
    );
    assert_eq!(
        by_id(&cancelled["id"]).resolution.as_deref(),
        Some("Cancelled")
    );
    assert_eq!(
        by_id(&fresh["id"]).room_hint.as_deref(),
        Some("anyone in the room can answer")
    );
    // A late duplicate push never revives a resolved question.
    receive(&phone, &answered);
    assert_eq!(
        store
            .question(answered["id"].as_str().unwrap())
            .unwrap()
            .unwrap()
            .state,
        QuestionState::Answered
    );
}

// ---- child processes: a flush killed mid-flight, and two writers ----

fn child(test: &str, envs: &[(&str, String)]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        test,
        "--nocapture",
        "--test-threads",
        "1",
    ]);
    for (k, v) in envs {
        c.env(k, v);
    }
    c
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "helper: run as a child process by the tests above"]
async fn child_flush_helper() {
    let var = |k: &str| std::env::var(k).unwrap();
    let store = Store::open(Path::new(&var("QP_STORE")), StoreMode::App).unwrap();
    let c = client(&var("QP_URL"), &var("QP_USER"), &var("QP_USER_TOKEN"));
    let _ = flush(&store, &c).await;
}

/// A proxy that forwards an answer to the real server, then never replies:
/// the phone's request has been acted on, but the phone never hears so.
async fn black_hole_proxy(target: String) -> (String, tokio::sync::watch::Receiver<bool>) {
    use axum::body::Bytes;
    use axum::http::HeaderMap;
    let (tx, rx) = tokio::sync::watch::channel(false);
    let tx = Arc::new(tx);
    let app = axum::Router::new().fallback(
        move |uri: axum::http::Uri, headers: HeaderMap, body: Bytes| {
            let (target, tx) = (target.clone(), tx.clone());
            async move {
                let mut req = reqwest::Client::new()
                    .post(format!("{target}{}", uri.path()))
                    .body(body);
                for k in ["authorization", "idempotency-key", "content-type"] {
                    if let Some(v) = headers.get(k) {
                        req = req.header(k, v.to_str().unwrap());
                    }
                }
                let _ = req.send().await.unwrap().bytes().await;
                tx.send_replace(true);
                tokio::time::sleep(Duration::from_secs(3600)).await;
                "never"
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_killed_mid_flush_delivers_the_answer_exactly_once() {
    let f = Fixture::new().await;
    let phone = f.dir.path().join("bob.sqlite");
    let q = f
        .ask(json!({"prompt": "Kill me?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let cq = receive(&phone, &q);
    let key = {
        let store = Store::open(&phone, StoreMode::Extension).unwrap();
        store
            .commit_answer(&id, &map_action(&cq, "qp.v.deny", None).unwrap())
            .unwrap()
            .idempotency_key
    };
    let (proxy, mut forwarded) = black_hole_proxy(f.base.clone()).await;
    let mut kid = child(
        "child_flush_helper",
        &[
            ("QP_STORE", phone.display().to_string()),
            ("QP_URL", proxy),
            ("QP_USER", f.bob.clone()),
            ("QP_USER_TOKEN", f.bob_token.clone()),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    tokio::time::timeout(Duration::from_secs(30), forwarded.wait_for(|f| *f))
        .await
        .unwrap()
        .unwrap();
    kid.kill().unwrap(); // SIGKILL, mid-flush: the server has the answer, the phone does not know
    kid.wait().unwrap();

    let store = Store::open(&phone, StoreMode::App).unwrap();
    assert_eq!(
        store.answer_for(&id).unwrap().unwrap().state,
        AnswerState::Sending
    );
    assert_eq!(store.requeue_interrupted().unwrap(), 1);
    let r = flush(&store, &client(&f.base, &f.bob, &f.bob_token))
        .await
        .unwrap();
    assert_eq!(
        r.answered, 1,
        "the retry with the same key returns the first result: {r:?}"
    );
    let entries = store.outbox().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].state, entries[0].idempotency_key.as_str()),
        (AnswerState::Answered, key.as_str())
    );
    assert_eq!(
        answer_keys(&f, &id),
        vec![(f.bob.clone(), key)],
        "the server saw one answer under one key"
    );
    let (_, got) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{id}"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(got["answer"]["value"], "deny");
}

#[test]
#[ignore = "helper: run as a child process by the tests above"]
fn child_store_writer_helper() {
    let path = PathBuf::from(std::env::var("QP_STORE").unwrap());
    let who = std::env::var("QP_WRITER").unwrap();
    let n: usize = std::env::var("QP_ROUNDS").unwrap().parse().unwrap();
    let mode = if who == "extension" {
        StoreMode::Extension
    } else {
        StoreMode::App
    };
    let store = Store::open(&path, mode).unwrap();
    let template: qp_core::payload::CompactQuestion =
        serde_json::from_str(&std::env::var("QP_TEMPLATE").unwrap()).unwrap();
    for i in 0..n {
        let mut cq = template.clone();
        cq.id = format!("q_{who}_{i}");
        store.record_push(&cq).unwrap();
        let entry = store
            .commit_answer(
                &cq.id,
                &qp_core::protocol::AnswerSubmission::Value("approve".into()),
            )
            .unwrap();
        assert!(store.claim_answer(entry.id, 0).unwrap());
        store
            .finish_answer(entry.id, AnswerState::Answered, None, 0)
            .unwrap();
        let _ = store.recent_questions(20).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn app_and_extension_write_one_store_at_once_without_loss() {
    let f = Fixture::new().await;
    let q = f.ask(json!({"prompt": "template"})).await;
    let phone = f.dir.path().join("shared.sqlite");
    let template = receive(&phone, &q);
    let rounds = 1500;
    let kids: Vec<_> = ["app", "extension"]
        .iter()
        .map(|who| {
            child(
                "child_store_writer_helper",
                &[
                    ("QP_STORE", phone.display().to_string()),
                    ("QP_WRITER", who.to_string()),
                    ("QP_ROUNDS", rounds.to_string()),
                    ("QP_TEMPLATE", serde_json::to_string(&template).unwrap()),
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let t = Instant::now();
    for k in kids {
        let out = k.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let store = Store::open(&phone, StoreMode::App).unwrap();
    assert!(store.is_intact().unwrap());
    let questions = store.recent_questions(10_000).unwrap();
    assert_eq!(
        questions.len(),
        2 * rounds + 1,
        "every row of both writers (took {:?})",
        t.elapsed()
    );
    let outbox = store.outbox().unwrap();
    assert_eq!(outbox.len(), 2 * rounds);
    assert!(outbox.iter().all(|e| e.state == AnswerState::Answered));
}

/// The platform's secure storage, as the app's Keychain would be: the app
/// stores the paired token in it, and the extension's token provider reads
/// it back. Nothing else holds the token.
#[derive(Default)]
struct Keychain(std::sync::Mutex<Option<String>>);

impl qp_core::phone::TokenStore for Keychain {
    fn save_token(&self, _user_id: &str, token: &str) -> Result<(), String> {
        *self.0.lock().unwrap() = Some(token.to_string());
        Ok(())
    }
}

struct KeychainReader(Arc<Keychain>);
impl TokenProvider for KeychainReader {
    fn token(&self) -> Option<String> {
        self.0 .0.lock().unwrap().clone()
    }
}

/// Every log line the core writes during the test, to prove no token is in one.
struct CapturedLog(std::sync::Mutex<Vec<String>>);
impl log::Log for CapturedLog {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        self.0.lock().unwrap().push(record.args().to_string());
    }
    fn flush(&self) {}
}
static LOG: CapturedLog = CapturedLog(std::sync::Mutex::new(Vec::new()));

#[tokio::test(flavor = "multi_thread")]
async fn invite_pair_and_answer_through_the_phone_core() {
    use qp_core::phone::{DeviceRegistration, PairErrorKind, Phone, PhoneError};
    let _ = log::set_logger(&LOG).map(|()| log::set_max_level(log::LevelFilter::Trace));
    let f = Fixture::new().await;
    let admin = qp_server::store::identity::create_admin_token(&f.db(), "ops").unwrap();
    let (s, inv) = f
        .call(
            "POST",
            &format!("/api/admin/users/{}/invites", f.bob),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(s, 201, "{inv}");
    let link = inv["link"].as_str().unwrap().to_string();

    // The app's first run: scan the QR code, pair, keep the token in the Keychain.
    let keychain = Arc::new(Keychain::default());
    // A German phone; the development transport stands in for APNs (same
    // payload), so the push is read back from the dev inbox.
    let device = DeviceRegistration {
        platform: qp_core::protocol::device::Platform::Dev,
        push_token: "dev-bob-1".into(),
        app_id: Some("ios".into()),
        locale: Some("de-DE".into()),
        public_key: None,
        apns_environment: None,
    };
    let account = Phone::pair(
        &link,
        None,
        "Bob's iPhone",
        Some(&device),
        keychain.as_ref(),
        &*common::phone_net(),
    )
    .await
    .unwrap();
    assert_eq!(account.user_id, f.bob);
    assert_eq!(account.server_url, f.base);
    assert!(account.device_id.is_some());
    let token = keychain
        .0
        .lock()
        .unwrap()
        .clone()
        .expect("the token is in the Keychain");
    // The link works once.
    let again = Phone::pair(
        &link,
        None,
        "Bob's iPhone",
        None,
        &Keychain::default(),
        &*common::phone_net(),
    )
    .await;
    assert!(
        matches!(&again, Err(PhoneError::Pairing(e)) if e.kind == PairErrorKind::InvalidCode),
        "{again:?}"
    );

    // A question arrives as the push the German device gets: its visible
    // alert (what shows if the extension cannot run) is German.
    let q = f
        .ask(json!({"prompt": "Roll back?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let device_id = account.device_id.clone().unwrap();
    let (s, inbox) = f
        .call(
            "GET",
            &format!("/api/dev/inbox?device={device_id}&after=0&timeout=5"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(s, 200, "{inbox}");
    let payload = inbox["pushes"][0]["payload"].as_str().unwrap().to_string();
    let pushed: Value = serde_json::from_str(&payload).unwrap();
    let alert = &pushed["aps"]["alert"];
    assert!(
        alert["title"]
            .as_str()
            .unwrap()
            .ends_with("fragt alle im Raum"),
        "{alert}"
    );
    assert_eq!(
        alert["body"], "Roll back?",
        "the asker's text is not translated"
    );

    // The extension (its own process, its own Phone, the person's languages)
    // reads the token the app stored, records the push; the answer is sent.
    let store = f.dir.path().join("bob-paired.sqlite");
    let extension = Phone::open(
        &store,
        StoreMode::Extension,
        &account.server_url,
        &account.user_id,
        Arc::new(KeychainReader(keychain.clone())),
        &["de-DE".to_string(), "en".to_string()],
        common::phone_net(),
    )
    .unwrap();
    extension.receive_apns(&payload).unwrap();
    let cell = extension.feed(chrono::Utc::now()).unwrap().remove(0);
    assert!(cell.title.ends_with("fragt alle im Raum"), "{}", cell.title);
    assert_eq!(
        cell.room_hint.as_deref(),
        Some("alle im Raum können antworten")
    );
    assert!(cell.time_remaining.unwrap().starts_with("noch "));
    let committed = extension.answer_action(&id, "qp.v.approve", None).unwrap();
    assert_eq!(
        committed.status,
        "Approve: wird gesendet, sobald du online bist"
    );
    let flushed = extension.flush().await.unwrap();
    assert_eq!(flushed.answered, 1, "{flushed:?}");
    let (_, resolved) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{id}"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(resolved["answer"]["responder"]["id"], f.bob);
    assert_eq!(
        extension.feed(chrono::Utc::now()).unwrap()[0]
            .resolution
            .as_deref(),
        Some("Deine Antwort: Approve")
    );
    assert_eq!(
        extension.feed(chrono::Utc::now()).unwrap()[0]
            .resolution
            .as_deref(),
        Some("Deine Antwort: Approve")
    );

    // The token is in no file of the phone and in no log line of the core.
    for entry in std::fs::read_dir(f.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("bob-paired")
        {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "{} holds the token",
                path.display()
            );
        }
    }
    let logged = LOG.0.lock().unwrap();
    assert!(
        logged.iter().any(|l| l.contains("paired as")),
        "the core logged: {logged:?}"
    );
    assert!(!logged.iter().any(|l| l.contains(&token)));
}
