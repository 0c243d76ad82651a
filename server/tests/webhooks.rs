//! Outgoing webhooks against a real receiver on loopback that checks the
//! signature with its own HMAC code; durability across a server restart.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::Fixture;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

const SECRET: &str = "a-webhook-secret-of-some-length";

#[derive(Default)]
struct Received {
    /// Delivery id of every request that reached the receiver.
    attempts: Vec<String>,
    /// (delivery id, body) of every accepted request.
    accepted: Vec<(String, Value)>,
    /// Requests still to fail with 500 before accepting.
    fail_first: usize,
    bad_signatures: usize,
}

/// The receiver's own check, written from the documented scheme (not the
/// server's code): `X-QP-Signature: v2=` + hex
/// HMAC-SHA256(secret, "v2\n{timestamp}\n{delivery}\n" + body).
fn signature_ok(headers: &HeaderMap, body: &[u8]) -> bool {
    let get = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (ts, id, sig) = (
        get("x-qp-timestamp"),
        get("x-qp-delivery"),
        get("x-qp-signature"),
    );
    let Some(hex_sig) = sig.strip_prefix("v2=") else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("v2\n{ts}\n{id}\n").as_bytes());
    mac.update(body);
    let fresh = ts
        .parse::<i64>()
        .map(|t| (chrono::Utc::now().timestamp() - t).abs() < 300)
        .unwrap_or(false);
    fresh
        && mac
            .verify_slice(&hex::decode(hex_sig).unwrap_or_default())
            .is_ok()
}

async fn hook(
    State(rx): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let mut r = rx.lock().unwrap();
    let id = headers
        .get("x-qp-delivery")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    r.attempts.push(id.clone());
    if !signature_ok(&headers, &body) {
        r.bad_signatures += 1;
        return StatusCode::UNAUTHORIZED;
    }
    if r.fail_first > 0 {
        r.fail_first -= 1;
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    // A receiver dedupes on the delivery id; we count what it accepted.
    r.accepted
        .push((id, serde_json::from_slice(&body).unwrap()));
    StatusCode::OK
}

async fn start_receiver(addr: SocketAddr, fail_first: usize) -> Arc<Mutex<Received>> {
    let state = Arc::new(Mutex::new(Received {
        fail_first,
        ..Default::default()
    }));
    let app = axum::Router::new()
        .route("/hook", post(hook))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    state
}

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

fn set_hook(f: &Fixture, addr: SocketAddr, events: &[&str]) {
    let hook = qp_server::store::identity::Webhook {
        url: format!("http://{addr}/hook"),
        secret: SECRET.into(),
        events: events.iter().map(|e| e.to_string()).collect(),
    };
    qp_server::store::identity::set_webhook(&f.db(), &f.room_id, Some(&hook)).unwrap();
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_event_arrives_signed_and_exactly_once_after_transient_failures() {
    let f = Fixture::new().await;
    let addr = free_port();
    let rx = start_receiver(addr, 3).await;
    set_hook(&f, addr, &[]);

    let answered = f
        .ask(json!({"prompt": "ship?", "correlation_id": "rel-2.4", "data": {"pipeline": "deploy"}, "reply_to": "wf:1"}))
        .await;
    let cancelled = f
        .ask(json!({"prompt": "cancel", "responder_scope": "room"}))
        .await;
    let expired = f
        .ask(json!({"prompt": "expire", "responder_scope": "room"}))
        .await;
    let (s, _) = f
        .answer(
            &f.alice_token,
            answered["id"].as_str().unwrap(),
            json!({"value": "approve"}),
        )
        .await;
    assert_eq!(s, 200);
    f.cancel(cancelled["id"].as_str().unwrap()).await;
    f.set_expiry(expired["id"].as_str().unwrap(), -1);

    until("three accepted events", || {
        rx.lock().unwrap().accepted.len() >= 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await; // anything extra would show up now
    let r = rx.lock().unwrap();
    assert_eq!(r.bad_signatures, 0);
    assert_eq!(r.accepted.len(), 3, "each event exactly once");
    assert!(
        r.attempts.len() >= 6,
        "the first three attempts failed and were retried"
    );
    let mut ids: Vec<&String> = r.accepted.iter().map(|(id, _)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "stable, distinct delivery ids");
    assert!(r.accepted.iter().all(|(id, _)| r.attempts.contains(id)));

    let by_question = |q: &Value| -> Value {
        r.accepted
            .iter()
            .find(|(_, b)| b["question_id"] == q["id"])
            .map(|(_, b)| b.clone())
            .expect("event for question")
    };
    let a = by_question(&answered);
    assert_eq!(a["event"], "question.answered");
    assert_eq!(a["state"], "answered");
    assert_eq!(a["room"], json!({"name": "Ops", "code": "OPS123"}));
    assert_eq!(a["answer"]["value"], "approve");
    assert_eq!(a["answer"]["label"], "Approve");
    assert_eq!(a["answer"]["text"], Value::Null);
    assert_eq!(
        a["answer"]["responder"],
        json!({"id": f.alice, "display_name": "Alice"})
    );
    assert_eq!(a["correlation_id"], "rel-2.4");
    assert_eq!(a["reply_to"], "wf:1");
    assert_eq!(a["data"], json!({"pipeline": "deploy"}));
    assert_eq!(a["timestamp"], a["answer"]["answered_at"]);
    let mut keys: Vec<&str> = a.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "answer",
            "correlation_id",
            "data",
            "event",
            "question_id",
            "reply_to",
            "room",
            "state",
            "timestamp"
        ],
        "the envelope of spec section 7 exactly"
    );
    let c = by_question(&cancelled);
    assert_eq!(
        (c["event"].as_str(), c["answer"].clone()),
        (Some("question.cancelled"), Value::Null)
    );
    let e = by_question(&expired);
    assert_eq!(
        (e["event"].as_str(), e["state"].as_str()),
        (Some("question.expired"), Some("expired"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_room_filter_forwards_only_named_events() {
    let f = Fixture::new().await;
    let addr = free_port();
    let rx = start_receiver(addr, 0).await;
    set_hook(&f, addr, &["question.cancelled"]);
    let a = f.ask(json!({"prompt": "answer me"})).await;
    let c = f.ask(json!({"prompt": "cancel me"})).await;
    f.answer(
        &f.alice_token,
        a["id"].as_str().unwrap(),
        json!({"value": "deny"}),
    )
    .await;
    f.cancel(c["id"].as_str().unwrap()).await;
    until("the cancelled event", || {
        !rx.lock().unwrap().accepted.is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = rx.lock().unwrap();
    assert_eq!(r.accepted.len(), 1);
    assert_eq!(r.accepted[0].1["event"], "question.cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_keeps_pending_questions_answers_and_undelivered_webhooks() {
    let mut f = Fixture::new().await;
    let addr = free_port(); // nothing listens here yet: the receiver is down
    set_hook(&f, addr, &[]);
    let pending = f
        .ask(json!({"prompt": "survive a restart", "responder_scope": "room"}))
        .await;
    let answered = f
        .ask(json!({"prompt": "answered before", "responder_scope": "room"}))
        .await;
    let (_, before) = f
        .answer(
            &f.bob_token,
            answered["id"].as_str().unwrap(),
            json!({"value": "approve"}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await; // a few failed attempts

    f.restart(|_| {}).await;
    let p = pending["id"].as_str().unwrap();
    let (_, got) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{p}"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(got["state"], "pending");
    let (_, after) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{}", answered["id"].as_str().unwrap()),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(after, before, "the answer survived the restart unchanged");
    let (s, _) = f.answer(&f.alice_token, p, json!({"value": "deny"})).await;
    assert_eq!(s, 200);

    let rx = start_receiver(addr, 0).await;
    until("both events", || rx.lock().unwrap().accepted.len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = rx.lock().unwrap();
    assert_eq!(r.accepted.len(), 2, "nothing lost, nothing doubled");
    let mut qids: Vec<String> = r
        .accepted
        .iter()
        .map(|(_, b)| b["question_id"].as_str().unwrap().to_string())
        .collect();
    qids.sort();
    let mut want = vec![p.to_string(), answered["id"].as_str().unwrap().to_string()];
    want.sort();
    assert_eq!(qids, want);
}
