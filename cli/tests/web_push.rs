//! Web Push end to end at the wire: a real server sends to a stand-in push
//! service on loopback (allow-listed for the test) that checks the VAPID
//! JWT and decrypts the RFC 8291 body with the subscription keys this test
//! made, as a browser would have; the message is what the web responder's
//! service worker shows. Registration refuses bad subscriptions (422 naming
//! the field) and push services off the allow-list; a 410 removes the device.
//!
//! `in_chromium` (ignored here; scripts/test-web runs it after building the
//! web app) hands the decrypted messages to the service worker in a real
//! headless Chromium (web/tests/push.mjs).

mod common;
#[path = "../../server/tests/support/webpush.rs"]
mod webpush_standin;

use common::{err_code, err_field, Fixture};
use qp_core::payload::{decode_apns, Push};
use serde_json::{json, Value};
use webpush_standin::{webpush, PushStandIn};

async fn register(f: &Fixture, token: &str, subscription: &str) -> (u16, Value) {
    let r = f
        .http
        .post(format!("{}/api/devices", f.base))
        .bearer_auth(token)
        .json(&json!({"platform": "web", "push_token": subscription,
            "app_id": "http://127.0.0.1", "locale": "en"}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The stand-in push service, the fixture, and the folder of the VAPID key
/// (removed when the test drops it).
async fn setup() -> (PushStandIn, Fixture, tempfile::TempDir) {
    let service = webpush().await;
    let host = service.host();
    // The VAPID key in a file of its own: on PostgreSQL there is no SQLite
    // file to keep it beside.
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("vapid.pem");
    let f = Fixture::with(move |s| {
        s.web_push_allow = vec![host];
        s.vapid_key = Some(key);
    })
    .await;
    (service, f, keys)
}

#[tokio::test]
async fn a_question_reaches_the_browser_encrypted_signed_and_within_4_kb() {
    let (service, f, _keys) = setup().await;
    let (sub, subscription) = service.subscribe("alice-1");
    let _ = sub;
    let (status, body) = register(&f, &f.alice_token, &subscription).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["platform"], "web");

    // The key browsers subscribe with is the one the pushes are signed with.
    let key: Value = f
        .http
        .get(format!("{}/api/webpush/key", f.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();

    let q = f
        .ask(json!({"prompt": "Deploy v1.4?", "context": "Build 7",
            "options": [{"value": "approve", "label": "Approve", "style": "primary"},
                        {"value": "deny", "label": "Deny", "style": "danger"}]}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let got = service.wait_for(1).await;
    let d = &got[0];
    assert_eq!(d.subscription, "alice-1");
    assert_eq!(d.vapid_key, key["public_key"].as_str().unwrap());
    assert_eq!(
        d.subject, f.base,
        "the VAPID sub is the server's public URL"
    );
    assert_eq!(d.urgency.as_deref(), Some("high"));
    assert_eq!(d.topic.as_deref(), Some(id.as_str()));
    assert!(d.ttl >= 60 && d.ttl <= 12 * 3600, "{}", d.ttl);
    let Ok(Push::Question(cq)) = decode_apns(&d.plaintext) else {
        panic!("not a question: {}", d.plaintext)
    };
    assert_eq!(cq.id, id);
    assert_eq!(cq.prompt, "Deploy v1.4?");
    // As the service worker reads it: two buttons, tag = the question id.
    let r = qp_web::Responder::new(vec!["en".into()], f.alice.clone());
    let n: Value = serde_json::from_str(&r.push(&d.plaintext, 2).unwrap()).unwrap();
    assert_eq!(n["notification"]["tag"], id.as_str());
    assert_eq!(n["notification"]["title"], "Release Bot asks you");
    assert_eq!(n["notification"]["actions"][0]["action"], "qp.v.approve");

    // The resolution follows, and replaces the notification.
    let (status, _) = f
        .answer(&f.alice_token, &id, json!({"value": "approve"}))
        .await;
    assert_eq!(status, 200);
    let got = service.wait_for(2).await;
    let Ok(Push::Resolved(notice)) = decode_apns(&got[1].plaintext) else {
        panic!("not a resolution: {}", got[1].plaintext)
    };
    assert_eq!(notice.id, id);
    let shown = n["question"].to_string();
    let replaced: Value = serde_json::from_str(
        &r.resolved(&serde_json::to_string(&notice).unwrap(), &shown)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(replaced["title"], "You answered: Approve");
    assert_eq!(replaced["tag"], id.as_str());

    // The largest question the protocol allows still fits one record.
    // 4-byte characters at every length limit: the encoder's cuts apply.
    let r4 = |n: usize| "🚀".repeat(n);
    let option = |i: usize| json!({"value": format!("v{i}{}", "x".repeat(30)), "label": r4(40)});
    f.ask(json!({"prompt": r4(500), "context": r4(40),
        "options": [option(1), option(2), option(3), option(4)],
        "text_input": {"placeholder": r4(60)}}))
        .await;
    let got = service.wait_for(3).await;
    assert!(
        got[2].ciphertext_bytes <= 4096,
        "{}",
        got[2].ciphertext_bytes
    );
    assert!(matches!(
        decode_apns(&got[2].plaintext),
        Ok(Push::Question(_))
    ));
    assert!(service.state.refused.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_bad_subscription_is_a_422_naming_the_field_and_only_allowed_services_are_used() {
    let (service, f, _keys) = setup().await;
    let (_, good) = service.subscribe("x");
    let cases = [
        ("not json".to_string(), "PushSubscription"),
        (
            good.replace("\"auth\":\"", "\"auth\":\"!!"),
            "keys.auth must be",
        ),
        (
            serde_json::to_string(
                &json!({"endpoint": "https://fcm.googleapis.com/x", "keys": {"auth": "x"}}),
            )
            .unwrap(),
            "keys.p256dh",
        ),
        // Off the allow-list, an address the test did not allow, plain http.
        (
            good.replace(&service.host(), "push.example.com"),
            "not a push service",
        ),
        (good.replace(&service.host(), "127.0.0.1:9"), "loopback"),
        (
            good.replace(&service.host(), "169.254.169.254"),
            "link-local",
        ),
        (good.replace(&service.host(), "10.1.2.3"), "private"),
    ];
    for (subscription, says) in cases {
        let (status, body) = register(&f, &f.alice_token, &subscription).await;
        assert_eq!(status, 422, "{subscription}: {body}");
        assert_eq!(err_field(&body), "push_token", "{body}");
        assert_eq!(err_code(&body), "invalid_value");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(says), "{message} should say {says}");
    }
    // Nothing was registered, so nothing is sent.
    f.ask(json!({"prompt": "Anyone?"})).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(service.delivered().is_empty());
}

#[tokio::test]
async fn the_default_allow_list_refuses_a_loopback_stand_in() {
    let service = webpush().await;
    let f = Fixture::new().await;
    let (_, subscription) = service.subscribe("y");
    let (status, body) = register(&f, &f.alice_token, &subscription).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("loopback"),
        "{body}"
    );
}

#[tokio::test]
async fn a_subscription_the_service_says_is_gone_is_removed() {
    let (service, f, _keys) = setup().await;
    let (_, subscription) = service.subscribe("gone-1");
    let (status, body) = register(&f, &f.alice_token, &subscription).await;
    assert_eq!(status, 201, "{body}");
    let device = body["id"].as_str().unwrap().to_string();
    service.state.gone.lock().unwrap().insert("gone-1".into());
    f.ask(json!({"prompt": "Still there?"})).await;
    for _ in 0..200 {
        let left = qp_server::store::identity::device_by_id(&*f.db(), &device).unwrap();
        if left.is_none() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the device was not removed after 410");
}

/// The browser half: the service worker in a real Chromium shows, answers
/// and replaces. Needs the web app built (scripts/build-web) and Chromium
/// with puppeteer-core (scripts/test-web sets NODE_PATH).
#[tokio::test]
#[ignore = "needs the built web app and Chromium: scripts/test-web runs it"]
async fn in_chromium() {
    let (service, f, _keys) = setup().await;
    let (_, subscription) = service.subscribe("chromium");
    let (status, body) = register(&f, &f.alice_token, &subscription).await;
    assert_eq!(status, 201, "{body}");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/tests/push.mjs");
    let (base, push, token, user, agent, room) = (
        f.base.clone(),
        format!("http://{}", service.addr),
        f.alice_token.clone(),
        f.alice.clone(),
        f.agent_token.clone(),
        f.room_code.clone(),
    );
    // Blocking, off the runtime's thread: the server keeps serving meanwhile.
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .arg(script)
            .env("QP_URL", base)
            .env("PUSH_URL", push)
            .env("USER_TOKEN", token)
            .env("USER_ID", user)
            .env("AGENT_TOKEN", agent)
            .env("ROOM", room)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "push.mjs failed:\n{stdout}\n{stderr}");
    println!("{stdout}");
    assert!(service.state.refused.lock().unwrap().is_empty());
}

/// A restore onto a new host keeps every browser reachable: `qp admin
/// backup` carries the VAPID key made beside the database, and a server
/// started on the restored files (a fresh data dir) serves the same key
/// and still pushes to a subscription made before the backup.
#[tokio::test]
async fn a_backup_restored_onto_a_fresh_data_dir_still_pushes_to_browsers() {
    let service = webpush().await;
    let host = service.host();
    let allow = host.clone();
    let mut f = Fixture::with(move |s| s.web_push_allow = vec![allow]).await;
    if f.on_postgres() {
        return; // pg_dump's way: the key lives in a file named by --vapid-key
    }
    let (_, subscription) = service.subscribe("alice-kept");
    let (status, body) = register(&f, &f.alice_token, &subscription).await;
    assert_eq!(status, 201, "{body}");
    let key_before: Value = f
        .http
        .get(format!("{}/api/webpush/key", f.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();

    let backups = tempfile::tempdir().unwrap();
    let file = backups.path().join("qp-backup.sqlite");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args(["admin", "backup"])
        .arg(&file)
        .env("QP_DB", f.database.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key_copy = backups.path().join("qp-backup.sqlite.vapid-key");
    assert_eq!(said["vapid_key"], key_copy.to_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key_copy).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the key copy is owner-only");

    // The new host: the two files, put in place as the backup chapter says.
    let fresh = tempfile::tempdir().unwrap();
    let db = fresh.path().join("qp.sqlite");
    std::fs::copy(&file, &db).unwrap();
    std::fs::copy(&key_copy, fresh.path().join("qp.sqlite.vapid-key")).unwrap();
    f.stop().await;
    f.restart(move |s| {
        s.db = qp_server::store::Database::Sqlite(db);
        s.web_push_allow = vec![host];
    })
    .await;

    let key_after: Value = f
        .http
        .get(format!("{}/api/webpush/key", f.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(key_after, key_before, "the restored server's key");
    f.ask(json!({"prompt": "Still reaches the browser?"})).await;
    let got = service.wait_for(1).await;
    assert_eq!(got[0].subscription, "alice-kept");
    assert_eq!(got[0].vapid_key, key_before["public_key"].as_str().unwrap());
    let Ok(Push::Question(q)) = decode_apns(&got[0].plaintext) else {
        panic!("not a question: {}", got[0].plaintext)
    };
    assert_eq!(q.prompt, "Still reaches the browser?");
}

/// The key browsers subscribe with is read once, at start: removing the
/// key file while the server runs changes nothing (before, each request
/// read it, and a removed file meant a new key: every browser subscribed
/// again and no push reached one meanwhile). Without Web Push configured
/// (PostgreSQL without --vapid-key) the endpoint says so with a 404, which
/// the page reads as "this server sends no notifications".
#[tokio::test]
async fn the_vapid_key_is_held_from_the_start_not_read_per_request() {
    let (_service, f, keys) = setup().await;
    let key = || async {
        let r = f
            .http
            .get(format!("{}/api/webpush/key", f.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap()["public_key"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let before = key().await;
    let file = keys.path().join("vapid.pem");
    std::fs::remove_file(&file).unwrap();
    assert_eq!(key().await, before, "a new key appeared");
    assert!(!file.exists(), "a key file was made by a request");

    let plain = Fixture::new().await;
    let r = plain
        .http
        .get(format!("{}/api/webpush/key", plain.base))
        .send()
        .await
        .unwrap();
    if plain.on_postgres() {
        assert_eq!(r.status(), 404);
        let body: Value = r.json().await.unwrap();
        assert_eq!(err_code(&body), "not_found", "{body}");
    } else {
        assert_eq!(r.status(), 200, "SQLite keeps a key beside the database");
    }
}
