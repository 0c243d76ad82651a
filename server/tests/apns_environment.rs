//! The APNs environment per device: a development build's token works only
//! on the APNs sandbox and a release build's only on production, so each
//! device says which it has (`apns_environment`) and the transport sends it
//! there; a device that says nothing goes to the server's default
//! (`--apns-sandbox`). The two APNs are loopback stand-ins speaking HTTP/2
//! (support/gateways.rs); the registration is checked at `POST /api/devices`.

mod common;
#[path = "support/gateways.rs"]
mod gateways;

use std::time::Duration;

use common::{err_code, err_field, Fixture};
use qp_server::push::apns::{ApnsConfig, ApnsTransport};
use qp_server::push::{PushMessage, PushOutcome, PushTransport};
use qp_server::store::deliveries::PushKind;
use qp_server::store::identity::Device;
use serde_json::json;

fn question() -> qp_core::protocol::Question {
    let now = qp_core::protocol::time::now();
    let ctx = qp_core::protocol::AskContext {
        now,
        default_target_user_id: Some("u_f".into()),
    };
    let mut q = qp_core::protocol::normalize_ask(&json!({"prompt": "Deploy?", "ttl": 600}), &ctx)
        .unwrap()
        .into_question("q_env".into(), now);
    q.room = Some(qp_core::protocol::RoomRef {
        code: "OPS123".into(),
        name: "Ops".into(),
    });
    q.asker = Some(qp_core::protocol::Asker {
        handle: Some("release-bot".into()),
        kind: "agent".into(),
        id: "a".into(),
        display_name: "Bot".into(),
    });
    q
}

fn message(token: &str, environment: Option<&str>) -> PushMessage {
    PushMessage {
        device: Device {
            id: format!("dev_{token}"),
            user_id: "u_f".into(),
            platform: "ios".into(),
            push_token: token.into(),
            app_id: "io.example.app".into(),
            locale: String::new(),
            public_key: None,
            apns_environment: environment.map(String::from),
        },
        kind: PushKind::Question,
        question: question(),
        encrypt: false,
        attempts: 0,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_device_goes_to_the_apns_of_its_token() {
    let production = gateways::apns(Duration::ZERO, 100).await;
    let sandbox = gateways::apns(Duration::ZERO, 100).await;
    // The server's default is the sandbox (`--apns-sandbox`).
    let apns = ApnsTransport::new(ApnsConfig {
        base_url: sandbox.url.clone(),
        team_id: "TEAM123456".into(),
        key_id: "KEY1234567".into(),
        key_pem: gateways::fixture("apns-test-key.p8").into(),
        key_file: None,
        token_ttl: Duration::from_secs(3000),
        max_connections: 2,
    })
    .unwrap()
    .with_environment_hosts(&production.url, &sandbox.url)
    .unwrap();

    let release = "a".repeat(64);
    assert_eq!(
        apns.send(&message(&release, Some("production"))).await,
        PushOutcome::Sent
    );
    assert_eq!(
        production.state.accepted_count(),
        1,
        "a release build's token: production"
    );
    assert_eq!(sandbox.state.accepted_count(), 0);

    let debug = "b".repeat(64);
    assert_eq!(
        apns.send(&message(&debug, Some("sandbox"))).await,
        PushOutcome::Sent
    );
    assert_eq!(
        sandbox.state.accepted_count(),
        1,
        "a debug build's token: the sandbox"
    );
    assert_eq!(production.state.accepted_count(), 1);

    let unsaid = "c".repeat(64);
    assert_eq!(apns.send(&message(&unsaid, None)).await, PushOutcome::Sent);
    assert_eq!(
        sandbox.state.accepted_count(),
        2,
        "no environment: the server's default"
    );
    assert_eq!(production.state.accepted_count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_environment_is_checked_and_kept_per_device() {
    let f = Fixture::new().await;
    let body = |env: serde_json::Value, platform: &str, token: &str| json!({"platform": platform, "push_token": token, "app_id": "io.example.app", "apns_environment": env});
    let hex = "d".repeat(64);
    let (s, e) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(body(json!("staging"), "ios", &hex)),
        )
        .await;
    assert_eq!(s, 422, "{e}");
    assert_eq!(
        (err_field(&e), err_code(&e)),
        ("apns_environment", "invalid_value")
    );
    assert!(
        e.to_string().contains("production"),
        "the message says the rule: {e}"
    );
    let (s, e) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(body(json!(1), "ios", &hex)),
        )
        .await;
    assert_eq!((s, err_field(&e)), (422, "apns_environment"), "{e}");
    let (s, e) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(body(json!("sandbox"), "android", "fcm-1")),
        )
        .await;
    assert_eq!(
        (s, err_field(&e)),
        (422, "apns_environment"),
        "only for ios: {e}"
    );

    let (s, d) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(body(json!("sandbox"), "ios", &hex)),
        )
        .await;
    assert_eq!(s, 201, "{d}");
    let stored = || -> Option<String> {
        f.db()
            .query_row(
                "SELECT apns_environment FROM devices WHERE id = ?1",
                qp_server::params![d["id"].as_str().unwrap()],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(stored().as_deref(), Some("sandbox"));
    // Registering the same token again (a TestFlight build now) changes it.
    let (s, _) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(body(json!("production"), "ios", &hex)),
        )
        .await;
    assert_eq!(s, 201);
    assert_eq!(stored().as_deref(), Some("production"));
    // Inside a pairing, the field is named where it sits.
    let admin = qp_server::store::identity::create_admin_token(&f.db(), "ops").unwrap();
    let (_, inv) = f
        .call(
            "POST",
            &format!("/api/admin/users/{}/invites", f.bob),
            Some(&admin),
            None,
        )
        .await;
    let (s, e) = f
        .call(
            "POST",
            "/api/pair",
            None,
            Some(json!({"code": inv["code"], "label": "x", "device": body(json!("beta"), "ios", &"e".repeat(64))})),
        )
        .await;
    assert_eq!((s, err_field(&e)), (422, "device.apns_environment"), "{e}");
}
