//! Two phones, one question: an iOS-shaped device (Bob's) and an
//! Android-shaped one (Alice's), both registered with the real server, which
//! encodes for each exactly what APNs and FCM would carry (the dev
//! transport, read back from `GET /api/dev/inbox`). When the question is
//! answered on one, expires, or is cancelled, the other's notification is
//! replaced in place (iOS: the resolution is an alert under the question's
//! collapse id, which the extension words from its store once the server
//! confirms it: a push's resolution is only a claim) or withdrawn (Android),
//! and each feed shows the resolved cell. Each "lock screen" here is what the
//! platform keeps: notifications by identifier, where a new one with the
//! same identifier replaces the old (APNs `apns-collapse-id`, Android's
//! notification tag).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use common::Fixture;
use qp_core::payload::Push;
use qp_core::phone::Phone;
use qp_core::present::PresentOptions;
use qp_core::store::StoreMode;
use qp_core::sync::TokenProvider;
use serde_json::{json, Value};

struct Token(String);
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some(self.0.clone())
    }
}

/// What a lock screen shows for one notification.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    subtitle: String,
    /// Buttons (iOS: the category's actions; none once resolved).
    actions: usize,
}

struct Device {
    id: String,
    token: String,
    phone: Phone,
    after: i64,
    screen: BTreeMap<String, Shown>,
}

async fn register(f: &Fixture, token: &str, shape: &str) -> String {
    let (status, body) = f
        .call(
            "POST",
            "/api/devices",
            Some(token),
            Some(json!({"platform": "dev", "push_token": format!("dev-{shape}-{token}"), "app_id": shape, "locale": "en"})),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    body["id"].as_str().unwrap().to_string()
}

fn open_phone(f: &Fixture, name: &str, url: &str, user: &str, token: &str) -> Phone {
    Phone::open(
        &f.dir.path().join(format!("{name}.sqlite")),
        StoreMode::Extension,
        url,
        user,
        Arc::new(Token(token.to_string())),
        &["en".to_string()],
        common::phone_net(),
    )
    .unwrap()
}

impl Device {
    fn new(id: String, token: String, phone: Phone) -> Device {
        Device {
            id,
            token,
            phone,
            after: 0,
            screen: BTreeMap::new(),
        }
    }

    /// The pushes the gateway would have delivered since the last call.
    async fn pushes(&mut self, f: &Fixture, want: usize) -> Vec<(String, String)> {
        let mut out = Vec::new();
        while out.len() < want {
            let (status, body) = f
                .call(
                    "GET",
                    &format!(
                        "/api/dev/inbox?device={}&after={}&timeout=10",
                        self.id, self.after
                    ),
                    Some(&self.token),
                    None,
                )
                .await;
            assert_eq!(status, 200, "{body}");
            let pushes = body["pushes"].as_array().unwrap();
            assert!(!pushes.is_empty(), "no push arrived for {}", self.id);
            for p in pushes {
                self.after = p["seq"].as_i64().unwrap();
                out.push((
                    p["format"].as_str().unwrap().to_string(),
                    p["payload"].as_str().unwrap().to_string(),
                ));
            }
        }
        assert_eq!(out.len(), want, "{out:?}");
        out
    }

    /// The iOS extension's work for one APNs payload: decode and record
    /// through the core, then present (a question with its buttons, or the
    /// resolved copy, which replaces the notification with the same
    /// identifier, the question id).
    async fn ios_receive(&mut self, payload: &str) -> String {
        let aps: Value = serde_json::from_str(payload).unwrap();
        match self.phone.receive_apns(payload).unwrap() {
            Push::Question(q) => {
                let n = self.phone.ios_notification(&q, &PresentOptions::default());
                let actions = n.category.actions.len() + n.category.text_action.iter().count();
                self.screen.insert(
                    q.id.clone(),
                    Shown {
                        subtitle: n.subtitle.unwrap_or_default(),
                        actions,
                    },
                );
                q.id
            }
            Push::Resolved(notice) => {
                assert!(self.phone.confirm_resolution(&notice.id).await.unwrap());
                // Quiet, no buttons: what the system shows even if the
                // extension could not run.
                assert_eq!(aps["aps"]["interruption-level"], "passive");
                assert!(aps["aps"].get("category").is_none() && aps["aps"].get("sound").is_none());
                let n = self
                    .phone
                    .ios_resolved_notification(&notice.id)
                    .unwrap()
                    .unwrap();
                assert_eq!(n.identifier, notice.id);
                // A sealed push's alert is generic; a plain one already reads as the
                // extension words it.
                if aps.get("qp_e2e").is_none() {
                    assert_eq!(
                        n.subtitle, aps["aps"]["alert"]["subtitle"],
                        "the server's alert and the extension's copy agree"
                    );
                }
                self.screen.insert(
                    n.identifier.clone(),
                    Shown {
                        subtitle: n.subtitle,
                        actions: 0,
                    },
                );
                notice.id
            }
        }
    }

    /// The Android receiver's work for one FCM data message: a question is
    /// posted with its actions; a resolution withdraws the notification.
    async fn android_receive(&mut self, payload: &str) -> String {
        let data: HashMap<String, String> = serde_json::from_str(payload).unwrap();
        match self.phone.receive_fcm(&data).unwrap() {
            Push::Question(q) => {
                let n = self.phone.android_notification(
                    &q,
                    chrono::Utc::now(),
                    &PresentOptions::default(),
                );
                self.screen.insert(
                    q.id.clone(),
                    Shown {
                        subtitle: q.context.clone().unwrap_or_default(),
                        actions: n.actions.len(),
                    },
                );
                q.id
            }
            Push::Resolved(notice) => {
                assert!(self.phone.confirm_resolution(&notice.id).await.unwrap());
                self.screen.remove(&notice.id);
                notice.id
            }
        }
    }

    fn feed_line(&self, id: &str) -> String {
        let feed = self.phone.feed(chrono::Utc::now()).unwrap();
        let cell = feed
            .iter()
            .find(|c| c.question_id == id)
            .expect("in the feed");
        assert!(!cell.answerable, "a resolved cell cannot be answered");
        cell.resolution.clone().expect("a resolved cell")
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resolution_reaches_the_other_phone_answered_expired_or_cancelled() {
    let f = Fixture::new().await;
    // Bob's phone shows a resolution once the server confirms it.
    let mut bob = Device::new(
        register(&f, &f.bob_token, "ios").await,
        f.bob_token.clone(),
        open_phone(&f, "bob-ios", &f.base, &f.bob, &f.bob_token),
    );
    let mut alice = Device::new(
        register(&f, &f.alice_token, "android").await,
        f.alice_token.clone(),
        open_phone(&f, "alice-android", &f.base, &f.alice, &f.alice_token),
    );
    let ask = |prompt: &str| {
        json!({"prompt": prompt, "context": "Build #4821", "responder_scope": "room",
               "options": [{"value": "approve", "label": "Approve"}, {"value": "deny", "label": "Deny", "style": "danger"}]})
    };

    // 1. Answered on Android: Bob's iPhone shows "Alice answered: Approve", no buttons.
    let q1 = f.ask(ask("Deploy v1.4.0?")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, p) = &bob.pushes(&f, 1).await[0];
    assert_eq!(bob.ios_receive(p).await, q1);
    let (_, p) = &alice.pushes(&f, 1).await[0];
    assert_eq!(alice.android_receive(p).await, q1);
    assert_eq!(
        bob.screen[&q1],
        Shown {
            subtitle: "Build #4821".into(),
            actions: 2
        }
    );
    alice
        .phone
        .answer_action(&q1, "qp.v.approve", None)
        .unwrap();
    let report = alice.phone.flush().await.unwrap();
    assert_eq!(report.answered, 1);
    let (format, p) = bob.pushes(&f, 1).await.remove(0);
    assert_eq!(format, "apns");
    bob.ios_receive(&p).await;
    assert_eq!(
        bob.screen[&q1],
        Shown {
            subtitle: "Alice answered: Approve".into(),
            actions: 0
        }
    );
    assert_eq!(bob.screen.len(), 1, "replaced in place, not added");
    assert_eq!(bob.feed_line(&q1), "Alice answered: Approve");
    // Alice's own phone gets the resolution too and withdraws it.
    let (_, p) = &alice.pushes(&f, 1).await[0];
    alice.android_receive(p).await;
    assert!(alice.screen.is_empty());
    assert_eq!(alice.feed_line(&q1), "You answered: Approve");

    // 2. Answered on the iPhone (Bob's phone now online): Alice's Android
    //    notification is withdrawn, and her feed shows who answered.
    let bob_online = open_phone(&f, "bob-ios", &f.base, &f.bob, &f.bob_token);
    let q2 = f.ask(ask("Roll back v1.3.9?")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, p) = &bob.pushes(&f, 1).await[0];
    bob.ios_receive(p).await;
    let (_, p) = &alice.pushes(&f, 1).await[0];
    alice.android_receive(p).await;
    assert!(alice.screen.contains_key(&q2));
    bob_online.answer_action(&q2, "qp.v.deny", None).unwrap();
    assert_eq!(bob_online.flush().await.unwrap().answered, 1);
    let (format, p) = alice.pushes(&f, 1).await.remove(0);
    assert_eq!(format, "fcm");
    assert_eq!(alice.android_receive(&p).await, q2);
    assert!(!alice.screen.contains_key(&q2), "withdrawn");
    assert_eq!(alice.feed_line(&q2), "Bob answered: Deny");
    let (_, p) = &bob.pushes(&f, 1).await[0];
    bob.ios_receive(p).await;
    assert_eq!(bob.screen[&q2].subtitle, "You answered: Deny");

    // 3. Expired and 4. cancelled: both phones learn it from the push (and
    //    the server's confirmation).
    let q3 = f.ask(ask("Rotate the keys?")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let q4 = f.ask(ask("Restart the queue?")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    for p in bob.pushes(&f, 2).await {
        bob.ios_receive(&p.1).await;
    }
    for p in alice.pushes(&f, 2).await {
        alice.android_receive(&p.1).await;
    }
    f.set_expiry(&q3, -1);
    let (status, _) = f.cancel(&q4).await;
    assert_eq!(status, 200);
    for p in bob.pushes(&f, 2).await {
        bob.ios_receive(&p.1).await;
    }
    for p in alice.pushes(&f, 2).await {
        alice.android_receive(&p.1).await;
    }
    assert_eq!(
        bob.screen[&q3],
        Shown {
            subtitle: "Expired with no answer".into(),
            actions: 0
        }
    );
    assert_eq!(
        bob.screen[&q4],
        Shown {
            subtitle: "Cancelled".into(),
            actions: 0
        }
    );
    assert!(!alice.screen.contains_key(&q3) && !alice.screen.contains_key(&q4));
    assert_eq!(bob.feed_line(&q3), "Expired with no answer");
    assert_eq!(alice.feed_line(&q4), "Cancelled");
}

/// Reconciliation at launch: pushes are lossy (APNs keeps only the newest
/// notification per app while a phone is off; FCM delivers nothing to a
/// force-stopped app). After a sync, the app compares what is on screen
/// with the store: a question whose push never came is posted, a resolved
/// one still on screen is replaced, and a dismissed one is not shown again.
#[tokio::test(flavor = "multi_thread")]
async fn reconciliation_posts_what_was_missed_and_replaces_what_resolved() {
    let f = Fixture::new().await;
    let phone = open_phone(&f, "bob", &f.base, &f.bob, &f.bob_token);
    let body = |p: &str| json!({"prompt": p, "responder_scope": "room"});
    let shown_q = f.ask(body("Deploy?")).await;
    let shown_id = shown_q["id"].as_str().unwrap().to_string();
    // Its push arrived and is on screen.
    let q: qp_core::protocol::Question = serde_json::from_value(shown_q).unwrap();
    let payload =
        qp_core::payload::encode_apns_question(&q, qp_core::present::copy::Copy::english())
            .unwrap()
            .json;
    phone.receive_apns(&payload).unwrap();
    // This one's push never came.
    let missed = f.ask(body("Rotate the keys?")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The first is answered elsewhere, and its resolution push is lost too.
    let (s, _) = f
        .answer(&f.alice_token, &shown_id, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);

    // Launch: sync, then reconcile with what is on screen.
    let report = phone.sync().await.unwrap();
    assert_eq!(report.withdraw, vec![shown_id.clone()]);
    let plan = phone
        .reconcile(std::slice::from_ref(&shown_id), chrono::Utc::now())
        .unwrap();
    assert_eq!(
        plan.post.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(),
        vec![missed.as_str()]
    );
    assert_eq!(plan.resolved.len(), 1);
    assert_eq!(plan.resolved[0].identifier, shown_id);
    assert_eq!(plan.resolved[0].subtitle, "Alice answered: Approve");
    assert!(plan.remove.is_empty());

    // The next launch: the missed one was posted, then dismissed by the
    // person; it is not posted again. A notification the store no longer
    // knows (its question was forgotten) is removed.
    let plan = phone
        .reconcile(&["q_gone".to_string()], chrono::Utc::now())
        .unwrap();
    assert!(plan.post.is_empty(), "{plan:?}");
    assert_eq!(plan.remove, vec!["q_gone".to_string()]);

    // One past its deadline but still pending here (no sync yet) is replaced
    // by the expired copy.
    let late = f.ask(body("Restart the queue?")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    phone.sync().await.unwrap();
    let plan = phone.reconcile(&[], chrono::Utc::now()).unwrap();
    assert_eq!(plan.post.len(), 1);
    let in_an_hour = chrono::Utc::now() + chrono::Duration::hours(2);
    let plan = phone
        .reconcile(std::slice::from_ref(&late), in_an_hour)
        .unwrap();
    assert_eq!(plan.resolved[0].subtitle, "Expired with no answer");
}

/// A sealed payload with its ciphertext fields (`enc`, `ct`) emptied: what
/// a gateway can read. Base64 ciphertext is random text and, by chance,
/// contains a short word such as "Ops" about once in 200 pushes, so the
/// words are looked for only outside it (the ciphertext opening to the
/// question is what the phone's open proves).
fn outside_the_ciphertext(payload: &str) -> String {
    fn blank(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if k == "enc" || k == "ct" {
                        *v = Value::String(String::new());
                    } else {
                        blank(v);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(blank),
            Value::String(s) => {
                // The envelope may travel as a JSON string inside the payload.
                if let Ok(mut inner @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                    blank(&mut inner);
                    *s = inner.to_string();
                }
            }
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_str(payload).expect("a push payload is JSON");
    blank(&mut v);
    v.to_string()
}

/// Through the whole server: a device registers its public key, and every
/// push it gets (question, then resolution) is sealed to it: none of the
/// question's words cross the gateway, and the phone shows them all. A
/// device without a key, at the same time, still gets plain pushes. A key
/// that is not an X25519 key is refused at registration, naming the field.
#[tokio::test(flavor = "multi_thread")]
async fn a_device_with_a_key_gets_sealed_pushes_through_the_server() {
    let f = Fixture::new().await;
    let phone = open_phone(&f, "bob-sealed", &f.base, &f.bob, &f.bob_token)
        .with_device_keys(Arc::new(common::MemoryKeys::default()), None);
    let public_key = phone.device_public_key().unwrap();
    let (status, body) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(json!({"platform": "dev", "push_token": "dev-sealed", "app_id": "ios", "public_key": public_key})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let device_id = body["id"].as_str().unwrap().to_string();
    phone.set_device_id(Some(device_id.clone()));
    let mut bob = Device::new(device_id, f.bob_token.clone(), phone);
    let mut alice = Device::new(
        register(&f, &f.alice_token, "android").await,
        f.alice_token.clone(),
        open_phone(&f, "alice-plain", &f.base, &f.alice, &f.alice_token),
    );

    let q = f
        .ask(json!({"prompt": "Rotate the SecretPrompt password?", "context": "SecretContext",
                    "responder_scope": "room",
                    "options": [{"value": "yes", "label": "SecretYes"}, {"value": "no", "label": "SecretNo"}]}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, sealed) = bob.pushes(&f, 1).await.remove(0);
    let clear = outside_the_ciphertext(&sealed);
    for word in [
        "SecretPrompt",
        "SecretContext",
        "SecretYes",
        "SecretNo",
        "Ops",
        "Release Bot",
    ] {
        assert!(!clear.contains(word), "{word} readable in {sealed}");
    }
    assert_eq!(bob.ios_receive(&sealed).await, q);
    assert_eq!(bob.screen[&q].subtitle, "SecretContext");
    let (_, plain) = alice.pushes(&f, 1).await.remove(0);
    assert!(plain.contains("SecretPrompt"), "no key: a plain push");
    assert!(
        outside_the_ciphertext(&plain).contains("SecretPrompt"),
        "the check above would see a push that is not sealed"
    );
    alice.android_receive(&plain).await;
    alice.phone.answer_action(&q, "qp.v.yes", None).unwrap();
    assert_eq!(alice.phone.flush().await.unwrap().answered, 1);
    let (_, resolved) = bob.pushes(&f, 1).await.remove(0);
    let clear = outside_the_ciphertext(&resolved);
    assert!(
        !clear.contains("SecretYes") && !clear.contains("Alice"),
        "{resolved}"
    );
    bob.ios_receive(&resolved).await;
    assert_eq!(bob.screen[&q].subtitle, "Alice answered: SecretYes");

    let (status, body) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(
                json!({"platform": "ios", "push_token": "ab".repeat(32), "app_id": "a", "public_key": "AAAA"}),
            ),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(common::err_field(&body), "public_key");
    assert_eq!(
        body["error"]["message"],
        "public_key: must be a 32-byte X25519 public key, not 3 bytes"
    );
}

/// A new phone's first sync shows the person's history, not only what is
/// pending: what was answered (and by whom), what was cancelled, from the
/// server's `GET /api/questions/history`.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_phones_first_sync_shows_the_resolved_history() {
    let f = Fixture::new().await;
    let answered = f
        .ask(json!({"prompt": "Answered before", "responder_scope": "room"}))
        .await;
    let (s, _) = f
        .answer(
            &f.alice_token,
            answered["id"].as_str().unwrap(),
            json!({"value": "approve"}),
        )
        .await;
    assert_eq!(s, 200);
    let cancelled = f
        .ask(json!({"prompt": "Cancelled before", "responder_scope": "room"}))
        .await;
    assert_eq!(f.cancel(cancelled["id"].as_str().unwrap()).await.0, 200);
    f.ask(json!({"prompt": "Pending now", "responder_scope": "room"}))
        .await;

    let phone = open_phone(&f, "bob-new", &f.base, &f.bob, &f.bob_token);
    phone.sync().await.unwrap();
    let feed = phone.feed(chrono::Utc::now()).unwrap();
    let cell = |p: &str| {
        feed.iter()
            .find(|c| c.prompt == p)
            .unwrap_or_else(|| panic!("no cell for {p:?} in {feed:#?}"))
    };
    assert!(cell("Pending now").answerable);
    let a = cell("Answered before");
    assert_eq!(a.state, qp_core::protocol::QuestionState::Answered);
    let said = a.resolution.clone().unwrap_or_default();
    assert!(said.contains("Approve"), "{said}");
    assert!(said.contains("Alice"), "who answered: {said}");
    assert_eq!(
        cell("Cancelled before").state,
        qp_core::protocol::QuestionState::Cancelled
    );
}

/// A person with no history yet: the phone's store stays empty sync after
/// sync, and the history is read on the first sync only (remembered in
/// the store), not on every one while nothing has been asked. Fails before:
/// three syncs, three reads. Counted by the server's own request metrics.
#[tokio::test(flavor = "multi_thread")]
async fn an_empty_history_is_read_once_not_on_every_sync() {
    let f = Fixture::new().await;
    let reads = || async {
        let text = f
            .http
            .get(format!("{}/metrics", f.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .filter(|l| {
                l.starts_with("qp_http_request_duration_seconds_count")
                    && l.contains(r#"route="/api/questions/history""#)
            })
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum::<f64>()
    };
    let phone = open_phone(&f, "bob-empty", &f.base, &f.bob, &f.bob_token);
    for _ in 0..3 {
        phone.sync().await.unwrap();
    }
    assert_eq!(reads().await, 1.0, "the history read on every sync");
    // Signed out and in again: a new empty store reads it again, once.
    let again = open_phone(&f, "bob-again", &f.base, &f.bob, &f.bob_token);
    again.sync().await.unwrap();
    again.sync().await.unwrap();
    assert_eq!(reads().await, 2.0);
}
