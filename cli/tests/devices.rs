//! Who a device belongs to. A device is tied to
//! the token that registered it (revoking the token silences the phone);
//! another user cannot take over a push registration; a re-registration
//! never drops the device's key; push tokens are checked per platform.
//! Over real HTTP on loopback, against the in-process server (SQLite, or
//! PostgreSQL with QP_TEST_POSTGRES) and the built `qp serve` / `qp admin`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

use common::{admin, err_field, Fixture, QpServe};
use qp_server::store::{self, deliveries, identity, Database};

/// A valid X25519 public key (RFC 7748's test vector, Alice's).
const PUBLIC_KEY: &str = "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=";

/// What `--db` takes for this database (the URL itself for PostgreSQL).
fn db_arg(db: &Database) -> String {
    match db {
        Database::Sqlite(path) => path.display().to_string(),
        Database::Postgres(url) => url.clone(),
    }
}

async fn post(http: &reqwest::Client, url: String, token: &str, body: Value) -> (u16, Value) {
    let r = http
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or_default())
}

async fn register(f: &Fixture, token: &str, body: Value) -> (u16, Value) {
    post(&f.http, format!("{}/api/devices", f.base), token, body).await
}

/// Waits until the dev transport has delivered at least one push to
/// `device`; returns the payloads (read from the database: the device's
/// own token may be revoked by then).
fn dev_payloads(conn: &store::Conn, device: &str) -> Vec<String> {
    conn.query_map(
        "SELECT payload FROM dev_inbox WHERE device_id = ?1 ORDER BY seq",
        qp_server::params![device],
        |r| r.get(0),
    )
    .unwrap()
}

fn wait_for_push(conn: &store::Conn, device: &str) -> Vec<String> {
    let t = Instant::now();
    loop {
        let pushes = dev_payloads(conn, device);
        if !pushes.is_empty() {
            return pushes;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no push reached {device}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hash_prefix(token: &str) -> String {
    qp_server::ids::token_hash(token)[..12].to_string()
}

/// Finding 4, end to end: Bob has a phone and a laptop, each registered with
/// its own token. `qp admin token revoke` of the phone's token: the phone
/// is gone from `qp admin device list`, its token gets 401, and the next
/// question reaches the laptop but sends nothing to the phone.
#[tokio::test(flavor = "multi_thread")]
async fn revoking_a_phones_token_stops_its_pushes() {
    let dir = tempfile::tempdir().unwrap();
    let database = common::test_database(dir.path());
    let db = db_arg(&database);
    let conn = common::connect(&database);
    let ops = common::seed_ops_room(&*conn);
    let laptop_token = identity::create_user_token(&*conn, &ops.bob_id, "laptop").unwrap();
    let serve = QpServe::start(&["--db", &db]);
    let http = reqwest::Client::new();
    let devices = format!("{}/api/devices", serve.base);
    let reg = |push_token: &str| json!({"platform": "dev", "push_token": push_token, "app_id": "qp.device"});
    let (s, phone) = post(&http, devices.clone(), &ops.bob, reg("dev-bobs-phone")).await;
    assert_eq!(s, 201, "{phone}");
    let (s, laptop) = post(&http, devices, &laptop_token, reg("dev-bobs-laptop")).await;
    assert_eq!(s, 201, "{laptop}");
    let (phone, laptop) = (
        phone["id"].as_str().unwrap(),
        laptop["id"].as_str().unwrap(),
    );

    let listed = String::from_utf8(admin(&db, &["device", "list"]).stdout).unwrap();
    assert!(
        listed.contains(phone) && listed.contains(&format!("token {}", hash_prefix(&ops.bob))),
        "{listed}"
    );
    let out = admin(&db, &["token", "revoke", &hash_prefix(&ops.bob)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed =
        String::from_utf8(admin(&db, &["device", "list", "--user", &ops.bob_id]).stdout).unwrap();
    assert!(
        !listed.contains(phone) && listed.contains(laptop),
        "{listed}"
    );

    let me = http
        .get(format!("{}/api/me", serve.base))
        .bearer_auth(&ops.bob)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status().as_u16(), 401);

    let (s, q) = common::ask_at(
        &http,
        &serve.base,
        &ops.agent,
        &json!({"prompt": "Rotate the prod keys?", "target_user_id": ops.bob_id}),
    )
    .await;
    assert_eq!(s, 201, "{q}");
    let to_laptop = wait_for_push(&*conn, laptop);
    assert!(
        to_laptop[0].contains("Rotate the prod keys?"),
        "{to_laptop:?}"
    );
    let jobs = deliveries::push_jobs_of(&*conn, q["id"].as_str().unwrap()).unwrap();
    assert!(jobs.iter().all(|j| j.device_id == laptop), "{jobs:?}");
    assert!(
        dev_payloads(&*conn, phone).is_empty(),
        "the revoked phone got a push"
    );
}

/// Finding 4, review: a device registered before devices were tied to
/// tokens (an upgraded server) is tied to none, so revoking the phone's
/// token keeps it while the user has another token (which token registered
/// it is not known). `qp admin token revoke` says so, naming the device
/// and how to remove it, instead of succeeding in silence.
#[tokio::test(flavor = "multi_thread")]
async fn revoking_a_token_names_the_untied_devices_it_could_not_remove() {
    let f = Fixture::new().await;
    let laptop = identity::create_user_token(&*f.db(), &f.bob, "laptop").unwrap();
    let reg = json!({"platform": "dev", "push_token": "dev-old-phone", "app_id": "qp.device"});
    let (s, old) = register(&f, &f.bob_token, reg).await;
    assert_eq!(s, 201, "{old}");
    let old = old["id"].as_str().unwrap().to_string();
    f.db()
        .execute(
            "UPDATE devices SET token_hash = NULL WHERE id = ?1",
            qp_server::params![old],
        )
        .unwrap();
    let out = admin(
        db_arg(&f.database),
        &["token", "revoke", &hash_prefix(&f.bob_token)],
    );
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&old) && said.contains("qp admin device remove"),
        "revoked in silence: {said}"
    );
    // Revoking the user's last token removes it, as before.
    let out = admin(
        db_arg(&f.database),
        &["token", "revoke", &hash_prefix(&laptop)],
    );
    assert!(out.status.success());
    assert!(identity::device_by_id(&*f.db(), &old).unwrap().is_none());
}

/// Finding 4 through pairing: the device registered with `POST /api/pair`
/// is tied to the token minted there.
#[tokio::test(flavor = "multi_thread")]
async fn a_device_paired_with_a_code_goes_when_its_token_is_revoked() {
    let f = Fixture::new().await;
    let invite = store::invites::create(
        &*f.db(),
        store::invites::InviteKind::User,
        &f.bob,
        600,
        store::now_secs(),
    )
    .unwrap();
    let r = f
        .http
        .post(format!("{}/api/pair", f.base))
        .json(&json!({"code": invite.code, "label": "Bob's phone",
            "device": {"platform": "dev", "push_token": "dev-paired", "app_id": "qp.device"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let paired: Value = r.json().await.unwrap();
    let (token, device) = (
        paired["token"].as_str().unwrap(),
        paired["device"]["id"].as_str().unwrap(),
    );
    identity::revoke_token(&*f.db(), &hash_prefix(token)).unwrap();
    assert!(identity::device_by_id(&*f.db(), device).unwrap().is_none());
    let q = f
        .ask(json!({"prompt": "Still there?", "target_user_id": f.bob}))
        .await;
    let jobs = deliveries::push_jobs_of(&*f.db(), q["id"].as_str().unwrap()).unwrap();
    assert!(jobs.is_empty(), "{jobs:?}");
}

/// Finding 5: Bob registering Alice's push token is refused while her
/// device holds it (her device, its key and her pushes stay as they are);
/// once an operator removes her device, the token may move to Bob, with
/// none of her history.
#[tokio::test(flavor = "multi_thread")]
async fn another_users_push_token_is_refused_until_the_device_is_removed() {
    let f = Fixture::new().await;
    let alices = json!({"platform": "ios", "push_token": "a1".repeat(32), "app_id": "io.qp.app", "public_key": PUBLIC_KEY});
    let (s, alice_dev) = register(&f, &f.alice_token, alices.clone()).await;
    assert_eq!(s, 201, "{alice_dev}");
    let alice_dev = alice_dev["id"].as_str().unwrap().to_string();
    for body in [
        alices.clone(),
        json!({"platform": "ios", "push_token": "a1".repeat(32), "app_id": "io.qp.app"}),
    ] {
        let (s, b) = register(&f, &f.bob_token, body).await;
        assert_eq!(s, 409, "{b}");
        let message = b["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("push_token: "), "{message}");
        assert!(
            !message.contains(&f.alice),
            "who holds it is not said: {message}"
        );
    }
    let device = identity::device_by_id(&*f.db(), &alice_dev)
        .unwrap()
        .unwrap();
    assert_eq!(device.user_id, f.alice);
    assert_eq!(device.public_key.as_deref(), Some(PUBLIC_KEY));

    let out = admin(db_arg(&f.database), &["device", "remove", &alice_dev]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (s, bob_dev) = register(&f, &f.bob_token, alices).await;
    assert_eq!(s, 201, "{bob_dev}");
    assert_ne!(bob_dev["id"].as_str().unwrap(), alice_dev);
    let out = admin(db_arg(&f.database), &["device", "remove", &alice_dev]);
    assert_eq!(out.status.code(), Some(1), "already gone");
}

/// Finding 5, review: an APNs device token is hex, which APNs reads in
/// either letter case, so `AB…` names the same phone as `ab…`. Bob sending
/// Alice's token in capitals (or mixed) is refused like the exact token,
/// and so is Alice's token stored in capitals by an older server when Bob
/// sends it in lower case; Alice herself re-registering in capitals keeps
/// her one device.
#[tokio::test(flavor = "multi_thread")]
async fn another_users_apns_token_in_other_letter_case_is_refused_too() {
    let f = Fixture::new().await;
    let token = "ab".repeat(32);
    let reg = |t: &str| json!({"platform": "ios", "push_token": t, "app_id": "io.qp.app"});
    let (s, alice_dev) = register(&f, &f.alice_token, reg(&token)).await;
    assert_eq!(s, 201, "{alice_dev}");
    for variant in [token.to_uppercase(), format!("Ab{}", "ab".repeat(31))] {
        let (s, b) = register(&f, &f.bob_token, reg(&variant)).await;
        assert_eq!(s, 409, "Bob took Alice's phone as {variant}: {b}");
    }
    let (s, again) = register(&f, &f.alice_token, reg(&token.to_uppercase())).await;
    assert_eq!(s, 201, "{again}");
    assert_eq!(again["id"], alice_dev["id"], "still Alice's one device");

    // A row an older server stored as sent, in capitals.
    let legacy = "cd".repeat(32);
    let (s, carol) = register(&f, &f.alice_token, reg(&legacy)).await;
    assert_eq!(s, 201, "{carol}");
    f.db()
        .execute(
            "UPDATE devices SET push_token = ?1 WHERE id = ?2",
            qp_server::params![legacy.to_uppercase(), carol["id"].as_str().unwrap()],
        )
        .unwrap();
    let (s, b) = register(&f, &f.bob_token, reg(&legacy)).await;
    assert_eq!(s, 409, "Bob took a capitalised registration: {b}");
}

/// Finding 5: re-registering without `public_key` (an app update, a bug, an
/// attacker with the user's token) keeps the key: the next push is still
/// sealed, never the question in clear.
#[tokio::test(flavor = "multi_thread")]
async fn re_registering_without_a_key_keeps_pushes_sealed() {
    let f = Fixture::new().await;
    let reg = json!({"platform": "dev", "push_token": "dev-sealed-phone", "app_id": "ios"});
    let mut with_key = reg.clone();
    with_key["public_key"] = json!(PUBLIC_KEY);
    let (s, first) = register(&f, &f.bob_token, with_key).await;
    assert_eq!(s, 201, "{first}");
    let (s, again) = register(&f, &f.bob_token, reg).await;
    assert_eq!(s, 201, "{again}");
    assert_eq!(first["id"], again["id"], "the same device");
    let device = first["id"].as_str().unwrap();
    f.ask(json!({"prompt": "Wire 40k to ACME?", "target_user_id": f.bob}))
        .await;
    let pushes = wait_for_push(&*f.db(), device);
    assert!(
        !pushes[0].contains("Wire 40k"),
        "sent in clear: {}",
        pushes[0]
    );
}

/// Finding 5: push tokens follow their platform's rule, named in the error
/// (`push_token`, or `device.push_token` inside a pairing).
#[tokio::test(flavor = "multi_thread")]
async fn push_tokens_are_checked_per_platform() {
    let f = Fixture::new().await;
    let hex = "0f".repeat(32);
    let cases: &[(&str, String, u16)] = &[
        ("ios", hex.clone(), 201),
        ("ios", hex.to_uppercase() + "00", 201),
        ("ios", "abc123".into(), 422),
        ("ios", format!("{}/../../3/device/x", &hex[..40]), 422),
        ("ios", format!("{hex}?x=1"), 422),
        ("ios", "zz".repeat(32), 422),
        ("android", "dGVzdA:APA91bH-_x9".into(), 201),
        ("android", "a/b".into(), 422),
        ("android", "a\"b".into(), 422),
        ("dev", "dev-t_01.2:3".into(), 201),
        ("dev", "dev token".into(), 422),
    ];
    for (platform, push_token, want) in cases {
        let (s, b) = register(
            &f,
            &f.bob_token,
            json!({"platform": platform, "push_token": push_token, "app_id": "a"}),
        )
        .await;
        assert_eq!(s, *want, "{platform} {push_token:?}: {b}");
        if *want == 422 {
            assert_eq!(err_field(&b), "push_token", "{b}");
            let message = b["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("push_token: must be "), "{message}");
        }
    }
    let invite = store::invites::create(
        &*f.db(),
        store::invites::InviteKind::User,
        &f.bob,
        600,
        store::now_secs(),
    )
    .unwrap();
    let r = f
        .http
        .post(format!("{}/api/pair", f.base))
        .json(&json!({"code": invite.code,
            "device": {"platform": "ios", "push_token": "apns-abc", "app_id": "a"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let b: Value = r.json().await.unwrap();
    assert_eq!(err_field(&b), "device.push_token", "{b}");
}

/// The ask's response says how many devices its push was queued
/// for (`pushed_to_devices`), so an asker learns at once when nobody can
/// receive the question: 0 with no device, 1 once Bob registers one, 0
/// again after that device's token is revoked.
#[tokio::test(flavor = "multi_thread")]
async fn the_ask_says_how_many_devices_it_was_pushed_to() {
    let f = Fixture::new().await;
    let q = f.ask(json!({"prompt": "Nobody?", "ttl": 600})).await;
    assert_eq!(q["pushed_to_devices"], 0, "{q}");
    assert_eq!(q["state"], "pending", "{q}");
    let (s, dev) = register(
        &f,
        &f.bob_token,
        json!({"platform": "dev", "push_token": "dev-bob-1", "app_id": "qp.device"}),
    )
    .await;
    assert_eq!(s, 201, "{dev}");
    let q = f
        .ask(json!({"prompt": "Bob?", "responder_scope": "room", "ttl": 600}))
        .await;
    assert_eq!(q["pushed_to_devices"], 1, "{q}");
    // Fetched later, the question is the protocol's object alone.
    let (_, fetched) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{}", q["id"].as_str().unwrap()),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert!(fetched.get("pushed_to_devices").is_none(), "{fetched}");
    identity::revoke_token(&*f.db(), &hash_prefix(&f.bob_token)).unwrap();
    let q = f
        .ask(json!({"prompt": "Still Bob?", "responder_scope": "room", "ttl": 600}))
        .await;
    assert_eq!(q["pushed_to_devices"], 0, "{q}");
}

/// `pushed_to_devices` counts only the devices this server has a push
/// route for: an iPhone on a server without APNs is not reached (its job
/// waits, logged "no push route for this device's platform"), so it is
/// not counted; the terminal device is.
#[tokio::test(flavor = "multi_thread")]
async fn a_device_whose_platform_has_no_push_route_is_not_counted_as_pushed_to() {
    let f = Fixture::new().await;
    // The fixture configures no APNs.
    let (s, dev) = register(
        &f,
        &f.bob_token,
        json!({"platform": "ios", "push_token": "0f".repeat(32), "app_id": "a"}),
    )
    .await;
    assert_eq!(s, 201, "{dev}");
    let q = f
        .ask(json!({"prompt": "iPhone only?", "responder_scope": "room", "ttl": 600}))
        .await;
    assert_eq!(q["pushed_to_devices"], 0, "{q}");
    let (s, dev) = register(
        &f,
        &f.bob_token,
        json!({"platform": "dev", "push_token": "dev-bob-2", "app_id": "qp.device"}),
    )
    .await;
    assert_eq!(s, 201, "{dev}");
    let q = f
        .ask(json!({"prompt": "And the terminal?", "responder_scope": "room", "ttl": 600}))
        .await;
    assert_eq!(q["pushed_to_devices"], 1, "{q}");
}
