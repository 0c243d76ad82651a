//! The session the app holds (qp-core's `Phone::open_session`) against the
//! real server on loopback: a phone before pairing, signing in, the push
//! token's life (a change re-registered once, the old device removed),
//! a revoked sign-in (401) that keeps the answer and says to sign in again,
//! then sends it once after pairing again, and signing out (store empty,
//! device gone on the server, token forgotten).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::Fixture;
use qp_core::phone::{DeviceRegistration, Phone, PhoneError, SessionState, TokenVault};
use qp_core::protocol::device::{ApnsEnvironment, Platform};
use qp_core::store::{AnswerState, StoreMode};
use serde_json::json;

/// The app's Keychain, in memory; `revoked` stands for a token the server
/// no longer takes.
#[derive(Default)]
struct Keychain {
    tokens: Mutex<HashMap<String, String>>,
    forgotten: Mutex<Vec<String>>,
}

impl TokenVault for Keychain {
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String> {
        self.tokens
            .lock()
            .unwrap()
            .insert(user_id.into(), token.into());
        Ok(())
    }
    fn token(&self, user_id: &str) -> Option<String> {
        self.tokens.lock().unwrap().get(user_id).cloned()
    }
    fn forget_token(&self, user_id: &str) {
        self.tokens.lock().unwrap().remove(user_id);
        self.forgotten.lock().unwrap().push(user_id.into());
    }
}

async fn invite(f: &Fixture, admin: &str) -> String {
    let (s, inv) = f
        .call(
            "POST",
            &format!("/api/admin/users/{}/invites", f.bob),
            Some(admin),
            None,
        )
        .await;
    assert_eq!(s, 201, "{inv}");
    inv["link"].as_str().unwrap().to_string()
}

fn device_ids(f: &Fixture) -> Vec<(String, String, Option<String>)> {
    f.db()
        .query_map(
            "SELECT id, push_token, apns_environment FROM devices WHERE user_id = ?1 ORDER BY created_at, id",
            qp_server::params![f.bob],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
}

fn file_contains(path: &std::path::Path, needle: &str) -> bool {
    [path.to_path_buf(), path.with_extension("sqlite-wal")]
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .any(|raw| raw.windows(needle.len()).any(|w| w == needle.as_bytes()))
}

fn apns_token(byte: char) -> String {
    std::iter::repeat_n(byte, 64).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_from_before_pairing_to_sign_out() {
    let f = Fixture::new().await;
    let admin = qp_server::store::identity::create_admin_token(&f.db(), "ops").unwrap();
    let store = f.dir.path().join("session.sqlite");
    let keychain = Arc::new(Keychain::default());
    let phone = Phone::open_session(
        &store,
        StoreMode::App,
        keychain.clone(),
        &["de-DE".to_string()],
        common::phone_net(),
    )
    .unwrap();

    // Before pairing: an object to hold, signed out, a feed that is empty.
    let status = phone.session_status().unwrap();
    assert_eq!(status.state, SessionState::SignedOut);
    assert_eq!(status.user_id, None);
    assert!(phone.feed(chrono::Utc::now()).unwrap().is_empty());
    assert!(matches!(phone.sync().await, Err(PhoneError::NotSignedIn)));

    // Sign in with a registration: the token is in the Keychain only.
    let device = DeviceRegistration {
        platform: Platform::Ios,
        push_token: apns_token('a'),
        app_id: Some("io.example.app".into()),
        locale: None,
        public_key: None,
        apns_environment: Some(ApnsEnvironment::Sandbox),
    };
    let link = invite(&f, &admin).await;
    let account = phone
        .sign_in(&link, None, "Bob's iPhone", Some(&device))
        .await
        .unwrap();
    assert_eq!(account.user_id, f.bob);
    let token = keychain
        .token(&f.bob)
        .expect("the token is in the Keychain");
    assert!(
        !file_contains(&store, &token),
        "no token in the phone's store"
    );
    let status = phone.session_status().unwrap();
    assert_eq!(status.state, SessionState::SignedIn);
    assert_eq!(status.device_id, account.device_id);
    let first = device_ids(&f);
    assert_eq!(first.len(), 1);
    assert_eq!(
        first[0].2.as_deref(),
        Some("sandbox"),
        "the environment is kept per device"
    );

    // The extension (another process) opens the same store: signed in too.
    let extension = Phone::open_session(
        &store,
        StoreMode::Extension,
        keychain.clone(),
        &[],
        common::phone_net(),
    )
    .unwrap();
    assert_eq!(
        extension.session_status().unwrap().user_id.as_deref(),
        Some(f.bob.as_str())
    );
    drop(extension);

    // The push token's life: the same token sends nothing; a new one is
    // registered once and replaces the old device.
    assert!(!phone.update_push_token(&apns_token('a')).await.unwrap());
    assert!(phone.update_push_token(&apns_token('b')).await.unwrap());
    assert!(!phone.update_push_token(&apns_token('b')).await.unwrap());
    let now = device_ids(&f);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].1, apns_token('b'));
    assert_eq!(
        now[0].2.as_deref(),
        Some("sandbox"),
        "the same fields, the new token"
    );
    assert_eq!(
        phone.session_status().unwrap().device_id.as_deref(),
        Some(now[0].0.as_str())
    );

    // A question, answered while the server has stopped taking the token.
    let q = f
        .ask(json!({"prompt": "Ship it?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    phone.sync().await.unwrap();
    keychain
        .save_token(&f.bob, "qpu_revoked0000000000000000000000")
        .unwrap();
    let committed = phone
        .answer_in_app(&id, Some("approve".into()), None)
        .unwrap();
    assert_eq!(committed.state, AnswerState::Queued);
    let report = phone.flush().await.unwrap();
    assert!(report.unauthorized, "{report:?}");
    assert_eq!(report.answered, 0);
    let status = phone.session_status().unwrap();
    assert_eq!(status.state, SessionState::Unauthorized);
    assert_eq!(
        status.line.as_deref(),
        Some("Deine Anmeldung ist abgelaufen. Kopple dieses Telefon erneut, um deine Antworten zu senden.")
    );
    let mine = phone.answer_status(&id).unwrap().unwrap();
    assert_eq!(mine.state, AnswerState::Queued, "the answer is kept");
    assert!(
        mine.status.contains("kopple das Telefon neu"),
        "{}",
        mine.status
    );
    assert!(matches!(
        phone.sync().await,
        Err(PhoneError::Unauthorized(_))
    ));

    // Pairing again sends it, once.
    let link = invite(&f, &admin).await;
    phone
        .sign_in(&link, None, "Bob's iPhone", None)
        .await
        .unwrap();
    assert_eq!(
        phone.session_status().unwrap().state,
        SessionState::SignedIn
    );
    assert_eq!(
        phone.answer_status(&id).unwrap().unwrap().state,
        AnswerState::Answered
    );
    let (s, seen) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{id}"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(seen["answer"]["value"], "approve");
    assert_eq!(seen["answer"]["responder"]["id"], f.bob.as_str());
    assert_eq!(
        phone.flush().await.unwrap(),
        Default::default(),
        "nothing left to send"
    );
    // Signing in again registered the kept token already (issue 31's
    // review: after a real revoke the device is gone with the token, and
    // the OS may never hand the token over again).
    assert!(
        !phone.update_push_token(&apns_token('b')).await.unwrap(),
        "signing in again registered the kept token already"
    );
    assert_eq!(
        device_ids(&f).len(),
        1,
        "one registration, the old one removed"
    );

    // Signing out: the device is removed on the server, the store is
    // empty, the Keychain forgot the token; the phone is signed out.
    let device_before = device_ids(&f);
    assert_eq!(device_before.len(), 1);
    let out = phone.sign_out().await.unwrap();
    assert!(out.device_removed);
    assert!(
        device_ids(&f).is_empty(),
        "the device is gone on the server"
    );
    assert!(phone.store().is_empty().unwrap());
    assert_eq!(keychain.token(&f.bob), None);
    assert_eq!(*keychain.forgotten.lock().unwrap(), vec![f.bob.clone()]);
    assert_eq!(
        phone.session_status().unwrap().state,
        SessionState::SignedOut
    );
    assert!(matches!(phone.flush().await, Err(PhoneError::NotSignedIn)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_stays_a_refusal_not_a_sign_in_problem() {
    let f = Fixture::new().await;
    let admin = qp_server::store::identity::create_admin_token(&f.db(), "ops").unwrap();
    let keychain = Arc::new(Keychain::default());
    let phone = Phone::open_session(
        &f.dir.path().join("p.sqlite"),
        StoreMode::App,
        keychain,
        &[],
        common::phone_net(),
    )
    .unwrap();
    phone
        .sign_in(&invite(&f, &admin).await, None, "p", None)
        .await
        .unwrap();
    // A question for Alice alone: Bob's answer is refused (403), for good.
    let q = f
        .ask(json!({"prompt": "Yours?", "responder_scope": "direct", "target_user_id": f.alice}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let cq = qp_core::payload::CompactQuestion::from_question(
        &serde_json::from_value(q.clone()).unwrap(),
    );
    phone.store().record_server(&cq.to_question()).unwrap();
    phone
        .answer_in_app(&id, Some("approve".into()), None)
        .unwrap();
    let report = phone.flush().await.unwrap();
    assert_eq!(
        (report.rejected, report.unauthorized),
        (1, false),
        "{report:?}"
    );
    assert_eq!(
        phone.session_status().unwrap().state,
        SessionState::SignedIn
    );
    assert_eq!(
        phone.answer_status(&id).unwrap().unwrap().state,
        AnswerState::Rejected
    );
}
