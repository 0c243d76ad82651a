//! Issue 32's resource limits over the real HTTP API (findings 12 and 8's
//! neighbours): answers are rate-limited per user, Idempotency-Keys expire
//! and are purged, and one token may hold only so many long-polls.

mod common;

use std::time::Duration;

use common::{err_code, Fixture};
use serde_json::{json, Value};

fn answer_keys(f: &Fixture) -> i64 {
    f.db()
        .query_row("SELECT COUNT(*) FROM answer_keys", &[], |r| r.get(0))
        .unwrap()
}

async fn keyed_answer(f: &Fixture, token: &str, id: &str, key: &str) -> reqwest::Response {
    f.http
        .post(format!("{}/api/questions/{id}/answer", f.base))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(&json!({"value": "approve"}))
        .send()
        .await
        .unwrap()
}

/// The report: 200 fresh Idempotency-Keys on an answered question stored
/// 201 rows, with no limit on how many more.
#[tokio::test]
async fn answers_are_rate_limited_per_user() {
    let f = Fixture::with(|s| {
        s.answer_rate_per_minute = 60;
        s.answer_burst = 20;
    })
    .await;
    let q = f
        .ask(json!({"prompt": "Deploy?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap();
    let mut refused = None;
    for i in 0..200 {
        let resp = keyed_answer(&f, &f.bob_token, id, &format!("key-{i}")).await;
        match resp.status().as_u16() {
            200 => continue,
            429 => {
                let wait = resp.headers().get("retry-after").cloned();
                refused = Some((i, wait, resp.json::<Value>().await.unwrap()));
                break;
            }
            other => panic!("answer {i}: {other}"),
        }
    }
    let (i, wait, body) = refused.expect("200 answers in a row were all accepted");
    assert_eq!(i, 20, "the burst is 20");
    assert!(wait.is_some(), "a 429 says when to retry");
    assert_eq!(err_code(&body), "rate_limited");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("answer_rate_per_minute"),
        "{body}"
    );
    assert_eq!(answer_keys(&f), 20);
    // The limit is Bob's, not everyone's.
    let resp = keyed_answer(&f, &f.alice_token, id, "alice-1").await;
    assert_eq!(resp.status(), 200);
    // Review: it is Bob's, not his token's; a new token of his has no
    // fresh budget.
    let other = qp_server::store::identity::create_user_token(&*f.db(), &f.bob, "second").unwrap();
    let resp = keyed_answer(&f, &other, id, "bob-second-token").await;
    assert_eq!(resp.status(), 429);
}

#[tokio::test]
async fn idempotency_keys_expire_and_are_purged() {
    let f = Fixture::with(|s| s.idempotency_key_ttl = Duration::from_secs(2)).await;
    let q = f
        .ask(json!({"prompt": "Deploy?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap();
    let resp = keyed_answer(&f, &f.bob_token, id, "retry-me").await;
    assert_eq!(resp.status(), 200);
    // Within its lifetime a retry gets the stored response.
    let resp = keyed_answer(&f, &f.bob_token, id, "retry-me").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(answer_keys(&f), 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while answer_keys(&f) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "an expired Idempotency-Key is still stored"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // After expiry the key is fresh again: the answer is judged anew (the
    // question is answered, so it returns the winner) and stored again.
    let resp = keyed_answer(&f, &f.bob_token, id, "retry-me").await;
    assert_eq!(resp.status(), 200);
    let q: Value = resp.json().await.unwrap();
    assert_eq!(q["state"], "answered");
}

async fn ask_as(f: &Fixture, token: &str) -> String {
    let (s, q) = f
        .call(
            "POST",
            &format!("/api/agent/rooms/{}/questions", f.room_code),
            Some(token),
            Some(json!({"prompt": "Deploy?", "responder_scope": "room"})),
        )
        .await;
    assert_eq!(s, 201, "{q}");
    q["id"].as_str().unwrap().to_string()
}

fn spawn_wait(f: &Fixture, token: &str, id: &str) -> tokio::task::JoinHandle<u16> {
    let req = f
        .http
        .get(format!(
            "{}/api/agent/questions/{id}/wait?timeout=20",
            f.base
        ))
        .bearer_auth(token);
    tokio::spawn(async move { req.send().await.unwrap().status().as_u16() })
}

async fn parked(f: &Fixture) -> usize {
    let (_, text) = f.call("GET", "/metrics", None, None).await;
    text.as_str()
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("qp_waiters_parked "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The report: no cap on concurrent long-polls per token, so one token
/// could fill --max-connections with 30 s waits (900 s over MCP).
#[tokio::test(flavor = "multi_thread")]
async fn long_polls_are_capped_per_token() {
    let f = Fixture::with(|s| s.max_long_polls_per_token = 3).await;
    let id = ask_as(&f, &f.agent_token).await;
    let waits: Vec<_> = (0..3)
        .map(|_| spawn_wait(&f, &f.agent_token, &id))
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while parked(&f).await < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the waits did not park"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let resp = f
        .http
        .get(format!(
            "{}/api/agent/questions/{id}/wait?timeout=20",
            f.base
        ))
        .bearer_auth(&f.agent_token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().get("retry-after").is_some());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(err_code(&body), "too_many_long_polls");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("max_long_polls_per_token"),
        "{body}"
    );
    // A wait that returns at once takes no slot; another agent has its own.
    let (s, _) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{id}/wait?timeout=0"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(s, 200);
    let other = ask_as(&f, &f.agent2_token).await;
    let other_wait = spawn_wait(&f, &f.agent2_token, &other);
    // The answer releases the three; their slots are free again.
    let (s, _) = f
        .answer(&f.bob_token, &id, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    for w in waits {
        assert_eq!(w.await.unwrap(), 200);
    }
    let next = ask_as(&f, &f.agent_token).await;
    let again = spawn_wait(&f, &f.agent_token, &next);
    let (s, _) = f
        .answer(&f.bob_token, &next, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    assert_eq!(again.await.unwrap(), 200);
    let (s, _) = f
        .call(
            "POST",
            &format!("/api/agent/questions/{other}/cancel"),
            Some(&f.agent2_token),
            None,
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(other_wait.await.unwrap(), 200);
}

/// The terminal device's inbox is a long-poll too, counted per user.
#[tokio::test(flavor = "multi_thread")]
async fn dev_inbox_long_polls_are_capped_per_user() {
    let f = Fixture::with(|s| s.max_long_polls_per_token = 1).await;
    let (s, dev) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(
                json!({"platform": "dev", "push_token": "dev-bob-terminal", "app_id": "qp-device"}),
            ),
        )
        .await;
    assert_eq!(s, 201, "{dev}");
    let url = format!(
        "{}/api/dev/inbox?device={}&after=0&timeout=20",
        f.base,
        dev["id"].as_str().unwrap()
    );
    let held = {
        let req = f.http.get(&url).bearer_auth(&f.bob_token);
        tokio::spawn(async move { req.send().await.unwrap().status().as_u16() })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while parked(&f).await < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the inbox did not park"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let resp = f
        .http
        .get(&url)
        .bearer_auth(&f.bob_token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(err_code(&body), "too_many_long_polls");
    // A push ends the held wait.
    f.ask(json!({"prompt": "Deploy?", "responder_scope": "room"}))
        .await;
    assert_eq!(held.await.unwrap(), 200);
}
