//! The APNs and FCM transports against local fakes that speak the real wire
//! format: the fake APNs is an HTTP/2 server that checks the provider
//! token's ES256 signature with the public key, the headers and the payload
//! size; the fake FCM checks the OAuth JWT-bearer flow (RS256) and the
//! message shape. Real gateways cannot be reached from this machine.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use qp_core::payload::{decode_apns, decode_fcm, Push};
use qp_server::push::apns::{ApnsConfig, ApnsTransport};
use qp_server::push::fcm::{FcmConfig, FcmTransport, ServiceAccount};
use qp_server::push::{PushMessage, PushOutcome, PushTransport};
use qp_server::store::deliveries::PushKind;
use qp_server::store::identity::Device;
use serde_json::{json, Value};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

fn question(prompt: &str, expires_in: i64) -> qp_core::protocol::Question {
    let now = qp_core::protocol::time::now();
    let ctx = qp_core::protocol::AskContext {
        now,
        default_target_user_id: Some("u_f".into()),
    };
    let mut q = qp_core::protocol::normalize_ask(
        &json!({"prompt": prompt, "ttl": expires_in, "data": {"k": "v"}}),
        &ctx,
    )
    .unwrap()
    .into_question(format!("q_{}", rand_suffix()), now);
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

/// A distinct question id suffix per call.
fn rand_suffix() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "{}x{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn message(
    platform: &str,
    token: &str,
    kind: PushKind,
    q: &qp_core::protocol::Question,
) -> PushMessage {
    PushMessage {
        device: Device {
            id: "dev_1".into(),
            user_id: "u_f".into(),
            platform: platform.into(),
            push_token: token.into(),
            app_id: "io.example.app".into(),
            locale: String::new(),
            public_key: None,
            apns_environment: None,
        },
        kind,
        question: q.clone(),
        encrypt: true,
        attempts: 0,
    }
}

// ---- the fake APNs ----

/// One request the fake received: device token, headers, payload, size, JWT.
type ApnsRequest = (String, HashMap<String, String>, Value, usize, String);
/// A scripted reply: status, reason, Retry-After.
type ApnsReply = (u16, &'static str, Option<u64>);

#[derive(Default)]
struct ApnsLog {
    requests: Vec<ApnsRequest>,
    /// Each request body exactly as it arrived.
    raw: Vec<Vec<u8>>,
    /// Replies by device token, in order; 200 once exhausted.
    script: HashMap<String, Vec<ApnsReply>>,
    bad_tokens: usize,
}

type Shared<T> = Arc<Mutex<T>>;

async fn apns_handler(
    State(log): State<Shared<ApnsLog>>,
    UrlPath(token): UrlPath<String>,
    version: Version,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    assert_eq!(version, Version::HTTP_2, "APNs speaks HTTP/2 only");
    let h: HashMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    // The provider token: ES256, signed by the team's key, with kid and iss.
    let jwt = h
        .get("authorization")
        .and_then(|a| a.strip_prefix("bearer "))
        .unwrap_or("")
        .to_string();
    let key = DecodingKey::from_ec_pem(&fixture("apns-test-key.pub.pem")).unwrap();
    let mut v = Validation::new(Algorithm::ES256);
    v.required_spec_claims.clear();
    v.validate_exp = false;
    let mut log = log.lock().unwrap();
    let valid = match jsonwebtoken::decode::<Value>(&jwt, &key, &v) {
        Ok(t) => {
            t.header.kid.as_deref() == Some("KEY1234567")
                && t.claims["iss"] == "TEAM123456"
                && (chrono::Utc::now().timestamp() - t.claims["iat"].as_i64().unwrap_or(0)).abs()
                    < 3600
        }
        Err(_) => false,
    };
    if !valid {
        log.bad_tokens += 1;
        return (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"reason": "InvalidProviderToken"})),
        )
            .into_response();
    }
    if body.len() > 4096 {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            axum::Json(json!({"reason": "PayloadTooLarge"})),
        )
            .into_response();
    }
    let payload: Value = serde_json::from_slice(&body).unwrap_or_default();
    log.raw.push(body.to_vec());
    log.requests
        .push((token.clone(), h, payload, body.len(), jwt));
    let next = log
        .script
        .get_mut(&token)
        .and_then(|s| (!s.is_empty()).then(|| s.remove(0)));
    match next {
        None => StatusCode::OK.into_response(),
        Some((status, reason, retry)) => {
            let mut r = (
                StatusCode::from_u16(status).unwrap(),
                axum::Json(json!({"reason": reason})),
            )
                .into_response();
            if let Some(s) = retry {
                r.headers_mut().insert("retry-after", s.into());
            }
            r
        }
    }
}

async fn fake_apns() -> (String, Shared<ApnsLog>) {
    let log: Shared<ApnsLog> = Default::default();
    let app = axum::Router::new()
        .route("/3/device/{token}", post(apns_handler))
        .with_state(log.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, log)
}

fn apns_config(base_url: &str, ttl: Duration) -> ApnsConfig {
    ApnsConfig {
        base_url: base_url.into(),
        team_id: "TEAM123456".into(),
        key_id: "KEY1234567".into(),
        key_pem: fixture("apns-test-key.p8").into(),
        key_file: None,
        token_ttl: ttl,
        max_connections: 4,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn apns_sends_signed_http2_requests_with_the_right_headers() {
    let (url, log) = fake_apns().await;
    let apns = ApnsTransport::new(apns_config(&url, Duration::from_secs(3000))).unwrap();
    // The worst case: a 500-emoji prompt still fits in 4 KB.
    let q = question(&"🚀".repeat(500), 600);
    assert_eq!(
        apns.send(&message("ios", "tok-a", PushKind::Question, &q))
            .await,
        PushOutcome::Sent
    );
    let mut cancelled = q.clone();
    cancelled.state = qp_core::protocol::QuestionState::Cancelled;
    cancelled.resolved_at = Some(chrono::Utc::now());
    assert_eq!(
        apns.send(&message("ios", "tok-a", PushKind::Resolved, &cancelled))
            .await,
        PushOutcome::Sent
    );
    let log = log.lock().unwrap();
    assert_eq!(log.bad_tokens, 0);
    let (token, h, body, size, jwt1) = &log.requests[0];
    assert_eq!(token, "tok-a");
    assert!(*size <= 4096);
    assert_eq!(h["apns-topic"], "io.example.app");
    assert_eq!(h["apns-push-type"], "alert");
    assert_eq!(h["apns-priority"], "10");
    assert_eq!(h["apns-expiration"], q.expires_at.timestamp().to_string());
    assert_eq!(h["apns-collapse-id"], q.id);
    assert_eq!(body["aps"]["category"], format!("qp.q.{}", q.id));
    assert_eq!(body["aps"]["mutable-content"], 1);
    let Ok(Push::Question(cq)) = decode_apns(&body.to_string()) else {
        panic!("the phone decodes it")
    };
    assert_eq!(cq.id, q.id);
    assert!(
        body.get("data").is_none() && body["qp"].get("data").is_none(),
        "data stays on the server"
    );
    // The resolution replaces the question's notification in place: an
    // alert (a silent push never reaches the extension and is dropped for a
    // force-quit app) under the same collapse id, quiet and without buttons,
    // kept by APNs for a phone that is off.
    let (_, h2, body2, size2, jwt2) = &log.requests[1];
    assert!(*size2 <= 4096);
    assert_eq!(
        (h2["apns-push-type"].as_str(), h2["apns-priority"].as_str()),
        ("alert", "10")
    );
    assert_eq!(h2["apns-collapse-id"], q.id);
    let kept_for = h2["apns-expiration"].parse::<i64>().unwrap() - chrono::Utc::now().timestamp();
    assert!((23 * 3600..=24 * 3600).contains(&kept_for), "{kept_for}");
    let aps = &body2["aps"];
    assert_eq!(aps["mutable-content"], 1);
    assert_eq!(aps["interruption-level"], "passive");
    assert!(aps.get("sound").is_none() && aps.get("category").is_none());
    assert!(aps.get("content-available").is_none());
    assert_eq!(aps["alert"]["subtitle"], "Cancelled");
    assert_eq!(aps["thread-id"], body["aps"]["thread-id"]);
    let Ok(Push::Resolved(n)) = decode_apns(&body2.to_string()) else {
        panic!("the phone decodes the resolution")
    };
    assert_eq!(n.id, q.id);
    assert_eq!(jwt1, jwt2, "the provider token is reused");
}

#[tokio::test(flavor = "multi_thread")]
async fn apns_refreshes_its_token_and_maps_every_outcome() {
    let (url, log) = fake_apns().await;
    let apns = ApnsTransport::new(apns_config(&url, Duration::from_millis(1200))).unwrap();
    let errors = qp_server::push::metrics::GatewayErrors::default();
    apns.report_errors_to(&errors);
    let q = question("Deploy?", 600);
    {
        let mut l = log.lock().unwrap();
        l.script
            .insert("gone".into(), vec![(410, "Unregistered", None)]);
        l.script
            .insert("bad".into(), vec![(400, "BadDeviceToken", None)]);
        l.script
            .insert("busy".into(), vec![(429, "TooManyRequests", Some(7))]);
        l.script
            .insert("down".into(), vec![(503, "ServiceUnavailable", None)]);
        l.script
            .insert("topic".into(), vec![(400, "BadTopic", None)]);
    }
    let send = |t: &'static str| {
        let m = message("ios", t, PushKind::Question, &q);
        let apns = &apns;
        async move { apns.send(&m).await }
    };
    assert_eq!(send("gone").await, PushOutcome::DeviceGone);
    // Every error answer is counted by its row, a dead device's too.
    assert_eq!(errors.get("apns", "Unregistered"), 1);
    // Also Apple's answer for a token of the other environment: the push
    // fails, the device stays.
    assert!(
        matches!(send("bad").await, PushOutcome::Failed(r) if r.starts_with("APNs 400 BadDeviceToken"))
    );
    // Too many pushes to this one device: its retry, not the gateway's
    // fault (it never feeds the outage circuit).
    assert_eq!(
        send("busy").await,
        PushOutcome::Retry {
            reason: "APNs 429 TooManyRequests".into(),
            after: Some(Duration::from_secs(7))
        }
    );
    assert!(matches!(
        send("down").await,
        PushOutcome::Unavailable { after: None, .. }
    ));
    assert!(matches!(send("topic").await, PushOutcome::Failed(r) if r.contains("BadTopic")));
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(send("ok").await, PushOutcome::Sent);
    let log = log.lock().unwrap();
    let first = &log.requests[0].4;
    let last = &log.requests.last().unwrap().4;
    assert_ne!(first, last, "an old provider token is replaced");
    assert_eq!(
        log.requests.iter().filter(|r| &r.4 == first).count(),
        5,
        "and reused until then"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn through_the_server_410_removes_the_device_bad_device_token_keeps_it_and_429_is_retried() {
    let (url, log) = fake_apns().await;
    // APNs device tokens are hex (the server refuses anything else).
    let (retry_me, dead, bad) = ("a0".repeat(32), "de".repeat(32), "bd".repeat(32));
    // BadDeviceToken is also what a token of the other APNs environment
    // gets (a sandbox token sent to production): a server set wrong would
    // remove every iPhone if it meant "gone".
    log.lock()
        .unwrap()
        .script
        .insert(bad.clone(), vec![(400, "BadDeviceToken", None)]);
    log.lock().unwrap().script.insert(
        retry_me.clone(),
        vec![
            (429, "TooManyRequests", Some(0)),
            (500, "InternalServerError", None),
        ],
    );
    log.lock()
        .unwrap()
        .script
        .insert(dead.clone(), vec![(410, "Unregistered", None)]);
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&url, Duration::from_secs(3000))))
        .await;
    for token in [&retry_me, &dead, &bad] {
        let (s, _) = f
            .call(
                "POST",
                "/api/devices",
                Some(&f.bob_token),
                Some(json!({"platform": "ios", "push_token": token, "app_id": "io.example.app"})),
            )
            .await;
        assert_eq!(s, 201);
    }
    let q = f
        .ask(json!({"prompt": "Ship?", "target_user_id": f.bob}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let t = Instant::now();
    loop {
        let jobs = qp_server::store::deliveries::push_jobs_of(&f.db(), &id).unwrap();
        let sent: Vec<_> = jobs.iter().filter(|j| j.state == "sent").collect();
        let failed: Vec<_> = jobs.iter().filter(|j| j.state == "failed").collect();
        if sent.len() == 1 && failed.len() == 1 && jobs.len() == 2 {
            assert_eq!(sent[0].attempts, 3, "429, 500, then sent");
            assert_eq!(failed[0].attempts, 1, "BadDeviceToken: failed, not retried");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "{jobs:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let devices = qp_server::store::identity::devices_of(&f.db(), &f.bob).unwrap();
    let mut kept: Vec<&str> = devices.iter().map(|d| d.push_token.as_str()).collect();
    kept.sort();
    assert_eq!(
        kept,
        vec![retry_me.as_str(), bad.as_str()],
        "410 removed its device, BadDeviceToken kept its own"
    );
}

// ---- the fake FCM (OAuth token endpoint + messages:send) ----

#[derive(Default)]
struct FcmLog {
    token_requests: usize,
    issued: Vec<String>,
    sends: Vec<(String, Value)>,
    /// Each send's body exactly as it arrived.
    raw: Vec<Vec<u8>>,
    script: HashMap<String, Vec<(u16, Value)>>,
    expires_in: u64,
}

async fn fcm_token(State(log): State<Shared<FcmLog>>, body: String) -> Response {
    let form: HashMap<String, String> = url_decode_form(&body);
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    // The assertion: RS256 with the service account's key, for this endpoint.
    let key = DecodingKey::from_rsa_pem(&fixture("fcm-test-key.pub.pem")).unwrap();
    let mut v = Validation::new(Algorithm::RS256);
    v.set_audience(&[form_aud(&form["assertion"])]);
    let mut log = log.lock().unwrap();
    log.token_requests += 1;
    let claims = match jsonwebtoken::decode::<Value>(&form["assertion"], &key, &v) {
        Ok(t) => t.claims,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": format!("invalid_grant: {e}")})),
            )
                .into_response()
        }
    };
    assert_eq!(claims["iss"], "qp-test@example.iam.gserviceaccount.com");
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/firebase.messaging"
    );
    assert!(claims["aud"].as_str().unwrap().ends_with("/token"));
    let token = format!("ya29.test-{}", log.token_requests);
    log.issued.push(token.clone());
    let expires_in = if log.expires_in == 0 {
        3600
    } else {
        log.expires_in
    };
    axum::Json(json!({"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}))
        .into_response()
}

/// The audience the assertion names (checked to be the token endpoint above).
fn form_aud(jwt: &str) -> String {
    let payload = jwt.split('.').nth(1).unwrap();
    let bytes = base64_url_decode(payload);
    serde_json::from_slice::<Value>(&bytes).unwrap()["aud"]
        .as_str()
        .unwrap()
        .to_string()
}

fn base64_url_decode(s: &str) -> Vec<u8> {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = Vec::new();
    let (mut buf, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let v = A.iter().position(|x| *x == c).unwrap() as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    out
}

fn url_decode_form(body: &str) -> HashMap<String, String> {
    body.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

async fn fcm_send(State(log): State<Shared<FcmLog>>, headers: HeaderMap, body: Bytes) -> Response {
    let mut log = log.lock().unwrap();
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !log.issued.iter().any(|t| bearer == format!("Bearer {t}")) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": {"code": 401, "status": "UNAUTHENTICATED"}})),
        )
            .into_response();
    }
    let msg: Value = serde_json::from_slice(&body).unwrap();
    log.raw.push(body.to_vec());
    let token = msg["message"]["token"].as_str().unwrap().to_string();
    log.sends.push((bearer, msg));
    match log
        .script
        .get_mut(&token)
        .and_then(|s| (!s.is_empty()).then(|| s.remove(0)))
    {
        None => axum::Json(json!({"name": "projects/qp-test/messages/1"})).into_response(),
        Some((status, err)) => {
            (StatusCode::from_u16(status).unwrap(), axum::Json(err)).into_response()
        }
    }
}

async fn fake_fcm(expires_in: u64) -> (String, Shared<FcmLog>) {
    let log: Shared<FcmLog> = Arc::new(Mutex::new(FcmLog {
        expires_in,
        ..Default::default()
    }));
    let app = axum::Router::new()
        .route("/token", post(fcm_token))
        .route("/v1/projects/qp-test/messages:send", post(fcm_send))
        .with_state(log.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, log)
}

fn fcm(url: &str) -> FcmTransport {
    FcmTransport::new(FcmConfig {
        base_url: url.into(),
        account: ServiceAccount {
            project_id: "qp-test".into(),
            client_email: "qp-test@example.iam.gserviceaccount.com".into(),
            private_key: String::from_utf8(fixture("fcm-test-key.pem"))
                .unwrap()
                .into(),
            token_uri: format!("{url}/token"),
        },
        account_file: None,
        max_connections: 4,
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn fcm_gets_an_oauth_token_caches_it_and_sends_data_only_messages() {
    let (url, log) = fake_fcm(0).await;
    let t = fcm(&url);
    let q = question(&"é".repeat(500), 900);
    assert_eq!(
        t.send(&message("android", "fcm-a", PushKind::Question, &q))
            .await,
        PushOutcome::Sent
    );
    assert_eq!(
        t.send(&message("android", "fcm-a", PushKind::Resolved, &q))
            .await,
        PushOutcome::Sent
    );
    let log = log.lock().unwrap();
    assert_eq!(log.token_requests, 1, "the access token is cached");
    let m = &log.sends[0].1["message"];
    assert!(m.get("notification").is_none(), "data-only");
    assert_eq!(m["android"]["priority"], "HIGH");
    let ttl: i64 = m["android"]["ttl"]
        .as_str()
        .unwrap()
        .trim_end_matches('s')
        .parse()
        .unwrap();
    assert!(
        (898..=900).contains(&ttl),
        "TTL matches the question: {ttl}"
    );
    let data: HashMap<String, String> =
        serde_json::from_value(m["data"].clone()).expect("string values only");
    assert!(data.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() <= 4096);
    let Ok(Push::Question(cq)) = decode_fcm(&data) else {
        panic!("the phone decodes it")
    };
    assert_eq!(cq.id, q.id);
    assert_eq!(log.sends[1].1["message"]["data"]["type"], "resolved");
    assert_eq!(log.sends[1].1["message"]["android"]["priority"], "NORMAL");
}

#[tokio::test(flavor = "multi_thread")]
async fn fcm_refreshes_near_expiry_and_maps_every_outcome() {
    let (url, log) = fake_fcm(2).await; // tokens live 2 s: renewed after 1 s
    let t = fcm(&url);
    let q = question("Deploy?", 600);
    let unregistered = json!({"error": {"code": 404, "status": "NOT_FOUND", "details": [
        {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}});
    {
        let mut l = log.lock().unwrap();
        l.script.insert("gone".into(), vec![(404, unregistered)]);
        l.script
            .insert("busy".into(), vec![(429, json!({"error": {"code": 429}}))]);
        l.script
            .insert("down".into(), vec![(503, json!({"error": {"code": 503}}))]);
        l.script.insert(
            "bad".into(),
            vec![(
                400,
                json!({"error": {"code": 400, "message": "Invalid registration"}}),
            )],
        );
    }
    let send = |token: &'static str| {
        let m = message("android", token, PushKind::Question, &q);
        let t = &t;
        async move { t.send(&m).await }
    };
    assert_eq!(send("gone").await, PushOutcome::DeviceGone);
    assert!(matches!(
        send("busy").await,
        PushOutcome::Unavailable { .. }
    ));
    assert!(matches!(
        send("down").await,
        PushOutcome::Unavailable { .. }
    ));
    assert!(matches!(send("bad").await, PushOutcome::Failed(r) if r.contains("400")));
    assert_eq!(log.lock().unwrap().token_requests, 1);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(send("ok").await, PushOutcome::Sent);
    let l = log.lock().unwrap();
    assert_eq!(l.token_requests, 2, "renewed before it expired");
    assert_eq!(l.sends.last().unwrap().0, "Bearer ya29.test-2");
}

// ---- end-to-end encrypted pushes ----

struct NoToken;
impl qp_core::sync::TokenProvider for NoToken {
    fn token(&self) -> Option<String> {
        None
    }
}

/// A phone (no network) with a device key, registered as `device_id`.
fn keyed_phone(dir: &Path, name: &str, device_id: &str) -> qp_core::phone::Phone {
    qp_core::phone::Phone::open(
        &dir.join(format!("{name}.sqlite")),
        qp_core::store::StoreMode::Extension,
        "http://127.0.0.1:9",
        "u_f",
        Arc::new(NoToken),
        &["en".to_string()],
        common::phone_net(),
    )
    .unwrap()
    .with_device_keys(
        Arc::new(common::MemoryKeys::default()),
        Some(device_id.into()),
    )
}

/// A question whose every displayed part is a distinct word to look for.
fn secret_question() -> qp_core::protocol::Question {
    let now = qp_core::protocol::time::now();
    let ctx = qp_core::protocol::AskContext {
        now,
        default_target_user_id: Some("u_f".into()),
    };
    let mut q = qp_core::protocol::normalize_ask(
        &json!({"prompt": "Rotate the PromptSecret database password?", "context": "ContextSecret 4821",
                "options": [{"value": "approve", "label": "LabelSecretYes"}, {"value": "deny", "label": "LabelSecretNo", "style": "danger"}],
                "text_input": {"placeholder": "PlaceholderSecret"},
                "data": {"commit": "DataSecret"}}),
        &ctx,
    )
    .unwrap()
    .into_question(format!("q_{}", rand_suffix()), now);
    q.room = Some(qp_core::protocol::RoomRef {
        code: "OPS123".into(),
        name: "RoomSecret".into(),
    });
    q.asker = Some(qp_core::protocol::Asker {
        handle: None,
        kind: "agent".into(),
        id: "a".into(),
        display_name: "AskerSecret Bot".into(),
    });
    q
}

const SECRETS: &[&str] = &[
    "PromptSecret",
    "ContextSecret",
    "LabelSecretYes",
    "LabelSecretNo",
    "PlaceholderSecret",
    "DataSecret",
    "RoomSecret",
    "AskerSecret",
    "Federica",
];

fn assert_opaque(raw: &[u8]) {
    let text = String::from_utf8_lossy(raw);
    for s in SECRETS {
        assert!(
            !text.contains(s),
            "{s} is readable in what the gateway got: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sealed_pushes_are_opaque_to_the_gateways_and_present_as_plain_ones() {
    let dir = tempfile::tempdir().unwrap();
    let phone = keyed_phone(dir.path(), "a", "dev_1");
    let key = phone.device_public_key().unwrap();
    let q = secret_question();
    let mut answered = q.clone();
    answered.state = qp_core::protocol::QuestionState::Answered;
    answered.resolved_at = Some(chrono::Utc::now());
    answered.answer = Some(qp_core::protocol::Answer {
        value: Some("approve".into()),
        label: Some("LabelSecretYes".into()),
        text: None,
        responder: qp_core::protocol::Responder {
            id: "u_fed".into(),
            display_name: "Federica".into(),
        },
        answered_at: chrono::Utc::now(),
    });
    let sealed = |kind, q: &qp_core::protocol::Question| {
        let mut m = message("ios", "tok-e2e", kind, q);
        m.device.public_key = Some(key.clone());
        m
    };

    let (url, log) = fake_apns().await;
    let apns = ApnsTransport::new(apns_config(&url, Duration::from_secs(3000))).unwrap();
    assert_eq!(
        apns.send(&sealed(PushKind::Question, &q)).await,
        PushOutcome::Sent
    );
    assert_eq!(
        apns.send(&sealed(PushKind::Resolved, &answered)).await,
        PushOutcome::Sent
    );
    let (furl, flog) = fake_fcm(3600).await;
    let fcm = fcm(&furl);
    let mut android = sealed(PushKind::Question, &q);
    android.device.platform = "android".into();
    assert_eq!(fcm.send(&android).await, PushOutcome::Sent);

    let log = log.lock().unwrap();
    for raw in log.raw.iter().chain(flog.lock().unwrap().raw.iter()) {
        assert_opaque(raw);
    }
    let (_, h, body, size, _) = &log.requests[0];
    assert!(*size <= 4096);
    assert_eq!(
        h["apns-collapse-id"], q.id,
        "the id stays in clear: it is the collapse id"
    );
    assert_eq!(
        body["aps"]["alert"]["title"], "New question",
        "a generic alert"
    );
    assert_eq!(body["aps"]["mutable-content"], 1);
    assert!(body["aps"].get("category").is_none() && body.get("qp").is_none());

    // The phone opens it and presents exactly what the plain push presents.
    let plain = qp_core::payload::encode_apns_question(&q, qp_core::present::copy::Copy::english())
        .unwrap()
        .json;
    let Push::Question(from_plain) = decode_apns(&plain).unwrap() else {
        panic!()
    };
    let Push::Question(opened) = phone.receive_apns(&body.to_string()).unwrap() else {
        panic!("a question")
    };
    assert_eq!(opened, from_plain);
    let opts = qp_core::present::PresentOptions::default();
    assert_eq!(
        phone.ios_notification(&opened, &opts),
        phone.ios_notification(&from_plain, &opts)
    );
    assert_eq!(
        phone.ios_notification(&opened, &opts).subtitle.as_deref(),
        Some("ContextSecret 4821")
    );
    // The resolution opens too; it is a claim until the server confirms it
    // (a forged resolution must not hide a question), so the store still
    // holds the question pending.
    let (_, h2, body2, _, _) = &log.requests[1];
    assert_eq!(h2["apns-collapse-id"], q.id);
    assert_eq!(body2["aps"]["interruption-level"], "passive");
    let Push::Resolved(n) = phone.receive_apns(&body2.to_string()).unwrap() else {
        panic!("a resolution")
    };
    assert_eq!(n.id, q.id);
    assert_eq!(
        n.answer.as_ref().and_then(|a| a.label.as_deref()),
        Some("LabelSecretYes")
    );
    assert!(phone.ios_resolved_notification(&q.id).unwrap().is_none());
    // FCM: the same, through the data map.
    let sends = flog.lock().unwrap().sends.clone();
    let data: HashMap<String, String> =
        serde_json::from_value(sends[0].1["message"]["data"].clone()).unwrap();
    assert_eq!(data["type"], "e2e");
    let Push::Question(via_fcm) = phone.receive_fcm(&data).unwrap() else {
        panic!("a question")
    };
    assert_eq!(via_fcm, from_plain);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sealed_push_opens_only_on_its_device_for_its_question_and_falls_back_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let a = keyed_phone(dir.path(), "a", "dev_a");
    let b = keyed_phone(dir.path(), "b", "dev_b");
    let q = secret_question();
    let mut m = message("ios", "tok", PushKind::Question, &q);
    m.device.id = "dev_a".into();
    m.device.public_key = Some(a.device_public_key().unwrap());
    let payload = m.apns_payload().unwrap();
    assert!(matches!(a.receive_apns(&payload), Ok(Push::Question(_))));

    let cannot = |p: &qp_core::phone::Phone, json: &str| match p.receive_apns(json) {
        Err(qp_core::phone::PhoneError::Payload(e)) => e.code(),
        other => panic!("expected a payload error, got {other:?}"),
    };
    // For device A, shown on device B (its own key, its own id).
    assert_eq!(cannot(&b, &payload), "cannot_open");
    // Tampered: one byte of the ciphertext changed.
    let mut v: Value = serde_json::from_str(&payload).unwrap();
    let ct = v["qp_e2e"]["ct"].as_str().unwrap().to_string();
    let (first, rest) = ct.split_at(1);
    let flipped = format!("{}{rest}", if first == "A" { "B" } else { "A" });
    v["qp_e2e"]["ct"] = json!(flipped);
    assert_eq!(cannot(&a, &v.to_string()), "cannot_open");
    // Replayed as another question (the id in clear changed).
    let mut v: Value = serde_json::from_str(&payload).unwrap();
    v["qp_e2e"]["id"] = json!("q_other");
    assert_eq!(cannot(&a, &v.to_string()), "cannot_open");
    // Re-addressed to B with B's id: still A's key, so B cannot open it.
    let mut v: Value = serde_json::from_str(&payload).unwrap();
    v["qp_e2e"]["device"] = json!("dev_b");
    assert_eq!(cannot(&b, &v.to_string()), "cannot_open");
    // A reinstall (a new key) cannot open what was sealed to the old one.
    a.rotate_device_key().unwrap();
    assert_eq!(cannot(&a, &payload), "cannot_open");
    // Every failure falls back to the generic words the push carries.
    let aps: Value = serde_json::from_str(&payload).unwrap();
    let f = a.fallback_notification(
        aps["aps"]["alert"]["title"].as_str(),
        aps["aps"]["alert"]["body"].as_str(),
    );
    assert_eq!(
        (f.title.as_str(), f.body.as_str()),
        ("New question", "Open the app to answer.")
    );
    // A phone without a key says so (and falls back the same way).
    let plain_phone = qp_core::phone::Phone::open(
        &dir.path().join("c.sqlite"),
        qp_core::store::StoreMode::Extension,
        "http://127.0.0.1:9",
        "u_f",
        Arc::new(NoToken),
        &[],
        common::phone_net(),
    )
    .unwrap();
    assert_eq!(cannot(&plain_phone, &payload), "cannot_open");
    // Devices without a key, or a server with encryption off, get plain pushes.
    let mut plain = message("ios", "tok", PushKind::Question, &q);
    assert!(plain.apns_payload().unwrap().contains("PromptSecret"));
    plain.device.public_key = m.device.public_key.clone();
    plain.encrypt = false;
    assert!(plain.apns_payload().unwrap().contains("PromptSecret"));
    // A stored key that no longer parses (a damaged database) fails the
    // push instead of downgrading it to plain.
    plain.device.public_key = Some("not a key".into());
    plain.encrypt = true;
    let e = plain.apns_payload().unwrap_err();
    assert!(e.contains("unusable device key"), "{e}");
    assert!(plain.fcm_data().is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_worst_question_sealed_still_fits_4_kb_and_opens() {
    let dir = tempfile::tempdir().unwrap();
    let a = keyed_phone(dir.path(), "a", "dev_1");
    let q = question(&"🚀".repeat(500), 600);
    let mut m = message("ios", "tok", PushKind::Question, &q);
    m.device.public_key = Some(a.device_public_key().unwrap());
    let apns = m.apns_payload().unwrap();
    assert!(apns.len() <= 4096, "{}", apns.len());
    let Push::Question(opened) = a.receive_apns(&apns).unwrap() else {
        panic!()
    };
    assert_eq!(opened.id, q.id);
    m.device.platform = "android".into();
    let data = m.fcm_data().unwrap();
    assert!(data.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() <= 4096);
    let data: HashMap<String, String> = data.into_iter().collect();
    assert!(matches!(a.receive_fcm(&data), Ok(Push::Question(_))));
}

/// `429 TooManyProviderTokenUpdates` means "slow down your token
/// refreshes", not "this device is gone" nor "this push is bad": the push
/// is held without spending an attempt, and no new provider token is
/// signed meanwhile, even past the token's usual lifetime. Refused with no
/// token before it, the one token is kept and APNs's pushes wait a
/// credential backoff step (1 s) before one tries it again.
#[tokio::test(flavor = "multi_thread")]
async fn apns_too_many_token_updates_retries_and_holds_the_token() {
    let (url, log) = fake_apns().await;
    let apns = ApnsTransport::new(apns_config(&url, Duration::from_millis(300))).unwrap();
    let q = question("Deploy?", 600);
    log.lock().unwrap().script.insert(
        "slow".into(),
        vec![(429, "TooManyProviderTokenUpdates", None)],
    );
    let m = message("ios", "slow", PushKind::Question, &q);
    let held = apns.send(&m).await;
    assert!(
        matches!(held, PushOutcome::Deferred { ref reason, .. } if reason.contains("TooManyProviderTokenUpdates")),
        "{held:?}"
    );
    tokio::time::sleep(qp_server::push::credentials::CREDENTIAL_BACKOFF.delay(1)).await;
    let m = message("ios", "ok", PushKind::Question, &q);
    assert_eq!(apns.send(&m).await, PushOutcome::Sent);
    let log = log.lock().unwrap();
    assert_eq!(
        log.requests[0].4,
        log.requests.last().unwrap().4,
        "a new provider token was signed while APNs asked to slow down"
    );
}

/// FCM's documented codes take their documented action:
/// `QUOTA_EXCEEDED` and `UNAVAILABLE` are retried, `PERMISSION_DENIED` is
/// the credential's (held and backed off, loud on /readyz), not one failed
/// push after another.
#[tokio::test(flavor = "multi_thread")]
async fn fcm_errors_take_their_documented_action() {
    let (url, log) = fake_fcm(3600).await;
    let t = fcm(&url);
    let q = question("Deploy?", 600);
    let fcm_error = |code: u16, status: &str, error_code: &str| {
        json!({"error": {"code": code, "status": status, "details": [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code}]}})
    };
    {
        let mut l = log.lock().unwrap();
        l.script.insert(
            "quota".into(),
            vec![(429, fcm_error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"))],
        );
        l.script.insert(
            "down".into(),
            vec![(503, fcm_error(503, "UNAVAILABLE", "UNAVAILABLE"))],
        );
        l.script.insert(
            "third-party".into(),
            vec![(
                401,
                fcm_error(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
            )],
        );
        l.script.insert(
            "denied".into(),
            vec![(
                403,
                json!({"error": {"code": 403, "status": "PERMISSION_DENIED"}}),
            )],
        );
    }
    let send = |token: &'static str| {
        let m = message("android", token, PushKind::Question, &q);
        let t = &t;
        async move { t.send(&m).await }
    };
    // Without a Retry-After, Google's backoff's first step (not the push
    // backoff's 0.5 s): 60 s for a quota, 10 s for a 5xx, ±25%.
    let within = |after: Option<Duration>, secs: f64| {
        after.is_some_and(|a| (secs * 0.75..=secs * 1.25).contains(&a.as_secs_f64()))
    };
    assert!(
        matches!(send("quota").await, PushOutcome::Unavailable { ref reason, after } if reason.contains("QUOTA_EXCEEDED") && within(after, 60.0))
    );
    assert!(
        matches!(send("down").await, PushOutcome::Unavailable { ref reason, after } if reason.contains("UNAVAILABLE") && within(after, 10.0))
    );
    // The APNs or Web Push key stored in Firebase for that device's app:
    // that push fails with a hint; the credential is not held, so the
    // next push goes.
    let third = send("third-party").await;
    assert!(
        matches!(third, PushOutcome::Failed(ref reason)
            if reason.contains("THIRD_PARTY_AUTH_ERROR") && reason.contains("stored in the Firebase project")),
        "{third:?}"
    );
    assert_eq!(send("ok").await, PushOutcome::Sent);
    let denied = send("denied").await;
    assert!(
        matches!(denied, PushOutcome::Deferred { ref reason, .. } if reason.contains("credential refused")),
        "{denied:?}"
    );
    // Held: the next push waits out the step without a request, and
    // without spending an attempt (deferred, not retried).
    let before = log.lock().unwrap().sends.len();
    assert!(matches!(send("ok").await, PushOutcome::Deferred { .. }));
    assert_eq!(log.lock().unwrap().sends.len(), before);
}
