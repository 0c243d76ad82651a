//! What the push fan-out and push fault suites share: gateway settings
//! pointing at the stand-ins of `gateways.rs`, a room seeded with devices,
//! `qp serve` processes wired to stand-ins, and the delivery report (who
//! got a question's push, how often). Included by path, beside `common`
//! and `gateways`, by `push_fanout.rs` and `push_faults.rs`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use qp_server::push::apns::ApnsConfig;
use qp_server::push::fcm::{FcmConfig, ServiceAccount};
use qp_server::store::deliveries::push_jobs_of;
use qp_server::store::identity::{self, DeviceRegistration};
use qp_server::store::{Conn, Database};
use serde_json::json;

use crate::common;
use crate::gateways;

pub fn apns_config(url: &str, max_connections: usize) -> ApnsConfig {
    ApnsConfig {
        base_url: url.into(),
        team_id: "TEAM123456".into(),
        key_id: "KEY1234567".into(),
        key_pem: gateways::fixture("apns-test-key.p8").into(),
        key_file: None,
        token_ttl: Duration::from_secs(3000),
        max_connections,
    }
}

pub fn fcm_config(url: &str) -> FcmConfig {
    FcmConfig {
        base_url: url.into(),
        account: ServiceAccount {
            project_id: "qp-test".into(),
            client_email: "qp-test@example.iam.gserviceaccount.com".into(),
            private_key: String::from_utf8(gateways::fixture("fcm-test-key.pem"))
                .unwrap()
                .into(),
            token_uri: format!("{url}/token"),
        },
        account_file: None,
        max_connections: 4,
    }
}

/// APNs device token number `i` (64 hex digits).
pub fn apns_token(i: usize) -> String {
    format!("{i:064x}")
}

/// FCM registration token number `i`.
pub fn fcm_token(i: usize) -> String {
    format!("fcm-token-{i:06}")
}

/// The device tokens a seeding made.
#[derive(Debug, Default)]
pub struct Seeded {
    pub ios: Vec<String>,
    pub android: Vec<String>,
}

impl Seeded {
    pub fn len(&self) -> usize {
        self.ios.len() + self.android.len()
    }
}

/// Adds `users` members to room `room_id`, each with `ios` iPhones and
/// `android` Android phones (tokens numbered from 0 across the room), in
/// one transaction.
pub fn seed_room(conn: &Conn, room_id: &str, users: usize, ios: usize, android: usize) -> Seeded {
    let tx = conn.transaction().unwrap();
    let mut seeded = Seeded::default();
    for u in 0..users {
        let user = identity::create_user(&*tx, &format!("Person {u}"), None).unwrap();
        identity::add_member(&*tx, room_id, &user.id).unwrap();
        identity::create_user_token(&*tx, &user.id, "phone").unwrap();
        for _ in 0..ios {
            let token = apns_token(seeded.ios.len());
            register(&*tx, &user.id, "ios", &token);
            seeded.ios.push(token);
        }
        for _ in 0..android {
            let token = fcm_token(seeded.android.len());
            register(&*tx, &user.id, "android", &token);
            seeded.android.push(token);
        }
    }
    tx.commit().unwrap();
    seeded
}

/// Adds `users` members to the fixture's room, each with one browser
/// subscribed at `service` (subscription ids `web-0`, `web-1`, …).
pub fn seed_web(
    f: &common::Fixture,
    service: &crate::webpush_standin::PushStandIn,
    users: usize,
) -> Vec<String> {
    let conn = f.db();
    let tx = conn.transaction().unwrap();
    let mut ids = Vec::new();
    for u in 0..users {
        let user = identity::create_user(&*tx, &format!("Browser user {u}"), None).unwrap();
        identity::add_member(&*tx, &f.room_id, &user.id).unwrap();
        identity::create_user_token(&*tx, &user.id, "browser").unwrap();
        let id = format!("web-{u}");
        let (_, subscription) = service.subscribe(&id);
        register(&*tx, &user.id, "web", &subscription);
        ids.push(id);
    }
    tx.commit().unwrap();
    ids
}

fn register(conn: &Conn, user_id: &str, platform: &str, token: &str) {
    identity::register_device(
        conn,
        user_id,
        None,
        &DeviceRegistration {
            platform,
            push_token: token,
            app_id: "io.example.app",
            locale: "",
            public_key: None,
            apns_environment: None,
        },
    )
    .unwrap();
}

/// The ops room ([`common::seed_ops_room`]) on `db`, with `users` more
/// people and their phones ([`seed_room`]); its agent's token and the
/// seeded devices. On a thread of its own: the store's calls block, and
/// the tests calling this run on the runtime.
pub fn seed_ops_room_on(
    db: &Database,
    users: usize,
    ios: usize,
    android: usize,
) -> (String, Seeded) {
    let db = db.clone();
    std::thread::spawn(move || {
        let conn = qp_server::store::connect(&db).unwrap();
        let ops = common::seed_ops_room(&conn);
        let seeded = seed_room(&conn, &ops.room_id, users, ios, android);
        (ops.agent, seeded)
    })
    .join()
    .unwrap()
}

/// [`seed_room`] into the fixture's room; returns the iOS tokens.
pub fn seed_devices(f: &common::Fixture, users: usize, ios: usize, android: usize) -> Vec<String> {
    seed_room(&f.db(), &f.room_id, users, ios, android).ios
}

/// Waits until `done`, failing after `limit`.
pub async fn until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A question to the whole room of the fixture; its id.
pub async fn room_question(f: &common::Fixture) -> String {
    let q = f
        .ask(json!({"prompt": "Deploy v1.4.0 to production?", "responder_scope": "room"}))
        .await;
    q["id"].as_str().unwrap().to_string()
}

/// A question `prompt` to the whole ops room, asked by `agent` through the
/// instance at `base`; its id.
pub async fn room_question_at(
    http: &reqwest::Client,
    base: &str,
    agent: &str,
    prompt: &str,
) -> String {
    let (s, q) = common::ask_at(
        http,
        base,
        agent,
        &json!({"prompt": prompt, "responder_scope": "room"}),
    )
    .await;
    assert_eq!(s, 201, "{q}");
    q["id"].as_str().unwrap().to_string()
}

/// Every push job of question `id`, by state.
pub fn states_in(conn: &Conn, id: &str) -> HashMap<String, usize> {
    let mut by = HashMap::new();
    for j in push_jobs_of(conn, id).unwrap() {
        *by.entry(j.state).or_insert(0) += 1;
    }
    by
}

/// [`states_in`] the fixture's database.
pub fn states(f: &common::Fixture, id: &str) -> HashMap<String, usize> {
    states_in(&f.db(), id)
}

/// How many of question `id`'s jobs are recorded sent.
pub fn sent(conn: &Conn, id: &str) -> usize {
    states_in(conn, id).get("sent").copied().unwrap_or(0)
}

/// The attempts each of question `id`'s jobs spent.
pub fn attempts(conn: &Conn, id: &str) -> Vec<u32> {
    push_jobs_of(conn, id)
        .unwrap()
        .into_iter()
        .map(|j| j.attempts)
        .collect()
}

/// How often each device's push of question `id` was accepted by the
/// stand-ins (APNs and FCM); a push of another question fails the test
/// only if it carries `id`'s device under `id`'s collapse id, which is
/// all the phone sees.
pub fn accepted_per_device(
    apns: Option<&gateways::ApnsStandIn>,
    fcm: Option<&gateways::FcmStandIn>,
    id: &str,
) -> HashMap<String, usize> {
    let mut per = HashMap::new();
    if let Some(apns) = apns {
        for a in apns.state.accepted.lock().unwrap().iter() {
            if a.collapse_id == id {
                *per.entry(a.device_token.clone()).or_insert(0) += 1;
            }
        }
    }
    if let Some(fcm) = fcm {
        for a in fcm.state.accepted.lock().unwrap().iter() {
            if a.3 == id {
                *per.entry(a.0.clone()).or_insert(0) += 1;
            }
        }
    }
    per
}

/// Pushes accepted more than once (each one beyond the first).
pub fn doubled(per: &HashMap<String, usize>) -> usize {
    per.values().map(|n| n.saturating_sub(1)).sum()
}

/// One `/metrics` sample's value (0 when absent): `line` is the series
/// as `/metrics` writes it, without the value.
pub async fn metric(f: &common::Fixture, series: &str) -> f64 {
    let text = f
        .http
        .get(format!("{}/metrics", f.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    metric_in(&text, series)
}

/// [`metric`] in a `/metrics` text already read.
pub fn metric_in(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// `qp serve` (the built binary) on `db` with its APNs and FCM at the
/// stand-ins, and `extra` flags.
pub fn instance(
    db: &Database,
    dir: &std::path::Path,
    apns: &str,
    fcm: &str,
    extra: &[&str],
) -> common::QpServe {
    instance_with(db, dir, Some(apns), fcm, extra)
}

/// [`instance`], with APNs only when `apns` names a stand-in.
pub fn instance_with(
    db: &Database,
    dir: &std::path::Path,
    apns: Option<&str>,
    fcm: &str,
    extra: &[&str],
) -> common::QpServe {
    let db_arg = match db {
        Database::Postgres(url) => url.clone(),
        Database::Sqlite(path) => path.display().to_string(),
    };
    let key = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../server/tests/fixtures/apns-test-key.p8")
        .display()
        .to_string();
    // One file per instance (named by its FCM stand-in's port): the
    // server reads the file again when it changes, so a file shared by
    // both instances would hand A the account B's stand-in issues tokens
    // for.
    let port = fcm.rsplit(':').next().unwrap_or_default();
    let account = dir.join(format!("fcm-{port}.json"));
    std::fs::write(
        &account,
        json!({
            "project_id": "qp-test",
            "client_email": "qp-test@example.iam.gserviceaccount.com",
            "private_key": String::from_utf8(gateways::fixture("fcm-test-key.pem")).unwrap(),
            "token_uri": format!("{fcm}/token"),
        })
        .to_string(),
    )
    .unwrap();
    let account = account.display().to_string();
    let mut args = vec![
        "--db",
        &db_arg,
        "--ask-rate-per-minute",
        "1000000",
        "--ask-burst",
        "1000000",
        "--fcm-service-account",
        &account,
        "--fcm-base-url",
        fcm,
    ];
    if let Some(apns) = apns {
        args.extend_from_slice(&[
            "--apns-key",
            &key,
            "--apns-key-id",
            "KEY1234567",
            "--apns-team-id",
            "TEAM123456",
            "--apns-base-url",
            apns,
        ]);
    }
    args.extend_from_slice(extra);
    common::QpServe::start(&args)
}
