//! The wire API driven over real HTTP against a real server and SQLite file.

mod common;

use std::future::Future;
use std::time::{Duration, Instant};

use common::{err_code, err_field, Fixture};
use serde_json::{json, Value};

fn qpath(id: &str, rest: &str) -> String {
    format!("/api/agent/questions/{id}{rest}")
}

// ---- ask ----

#[tokio::test(flavor = "multi_thread")]
async fn ask_returns_201_with_id_expiry_and_defaults() {
    let f = Fixture::new().await;
    let q = f
        .ask(json!({"prompt": "Deploy v1.4?", "ttl": 1800, "correlation_id": "deploy-42"}))
        .await;
    assert!(q["id"].as_str().unwrap().starts_with("q_"));
    assert_eq!(q["kind"], "question");
    assert_eq!(q["state"], "pending");
    assert_eq!(q["responder_scope"], "direct");
    assert_eq!(
        q["target_user_id"],
        f.alice.as_str(),
        "direct defaults to the agent's owner"
    );
    assert_eq!(q["options"][0]["value"], "approve");
    assert_eq!(q["options"][1]["style"], "danger");
    assert_eq!(q["correlation_id"], "deploy-42");
    assert_eq!(q["answer"], Value::Null);
    assert_eq!(q["room"]["code"], "OPS123");
    assert_eq!(q["asker"]["display_name"], "Release Bot");
    let created = chrono::DateTime::parse_from_rfc3339(q["created_at"].as_str().unwrap()).unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(q["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!((expires - created).num_seconds(), 1800);
    // Every field of the spec is present on the wire.
    for key in [
        "id",
        "kind",
        "prompt",
        "context",
        "options",
        "text_input",
        "responder_scope",
        "target_user_id",
        "resolution_policy",
        "state",
        "answer",
        "expires_at",
        "resolved_at",
        "correlation_id",
        "reply_to",
        "data",
        "created_at",
    ] {
        assert!(q.get(key).is_some(), "missing {key}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_errors_have_one_shape_and_the_right_status() {
    let f = Fixture::new().await;
    let path = format!("/api/agent/rooms/{}/questions", f.room_code);
    let ok = json!({"prompt": "x"});

    let (s, b) = f.call("POST", &path, None, Some(ok.clone())).await;
    assert_eq!((s, err_code(&b)), (401, "unauthorized"));
    let (s, _) = f
        .call(
            "POST",
            &path,
            Some("qpa_not_a_real_token"),
            Some(ok.clone()),
        )
        .await;
    assert_eq!(s, 401);
    let (s, b) = f
        .call("POST", &path, Some(&f.bob_token), Some(ok.clone()))
        .await;
    assert_eq!((s, err_code(&b)), (403, "wrong_token_kind"));
    let (s, b) = f
        .call(
            "POST",
            "/api/agent/rooms/NOPE42/questions",
            Some(&f.agent_token),
            Some(ok.clone()),
        )
        .await;
    assert_eq!((s, err_code(&b)), (404, "not_found"));
    let other = format!("/api/agent/rooms/{}/questions", f.other_room_code);
    let (s, b) = f
        .call("POST", &other, Some(&f.agent_token), Some(ok.clone()))
        .await;
    assert_eq!((s, err_code(&b)), (403, "room_not_allowed"));

    let (s, b) = f
        .call(
            "POST",
            &path,
            Some(&f.agent_token),
            Some(json!({"prompt": "x", "options": ["a"]})),
        )
        .await;
    assert_eq!(
        (s, err_code(&b), err_field(&b)),
        (422, "too_few", "options")
    );
    assert!(b["error"]["message"].as_str().unwrap().contains("options"));
    let (s, b) = f
        .call(
            "POST",
            &path,
            Some(&f.agent_token),
            Some(json!({"prompt": "x", "resolution_policy": "quorum"})),
        )
        .await;
    assert_eq!((s, err_code(&b)), (422, "unsupported_in_v1"));
    let (s, b) = f
        .call(
            "POST",
            &path,
            Some(&f.agent_token),
            Some(json!({"prompt": "x", "target_user_id": f.carol})),
        )
        .await;
    assert_eq!(
        (s, err_code(&b), err_field(&b)),
        (422, "not_a_member", "target_user_id")
    );

    let resp = f
        .http
        .post(format!("{}{}", f.base, path))
        .bearer_auth(&f.agent_token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let b: Value = resp.json().await.unwrap();
    assert_eq!(err_code(&b), "malformed_json");
}

// ---- fetch, list, cancel ----

#[tokio::test(flavor = "multi_thread")]
async fn agents_see_only_their_own_questions() {
    let f = Fixture::new().await;
    let q = f.ask(json!({"prompt": "mine"})).await;
    let id = q["id"].as_str().unwrap();
    let (s, got) = f
        .call("GET", &qpath(id, ""), Some(&f.agent_token), None)
        .await;
    assert_eq!((s, got["id"].as_str()), (200, Some(id)));
    let (s, _) = f
        .call("GET", &qpath(id, ""), Some(&f.agent2_token), None)
        .await;
    assert_eq!(s, 404);
    let (s, _) = f
        .call(
            "GET",
            &qpath(id, "/wait?timeout=0"),
            Some(&f.agent2_token),
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = f
        .call("POST", &qpath(id, "/cancel"), Some(&f.agent2_token), None)
        .await;
    assert_eq!(s, 404);
    let (_, list) = f
        .call(
            "GET",
            "/api/agent/questions?state=all",
            Some(&f.agent2_token),
            None,
        )
        .await;
    assert_eq!(list["questions"].as_array().unwrap().len(), 0);
    let (s, _) = f
        .call("GET", &qpath("q_missing", ""), Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_filters_by_state_newest_first() {
    let f = Fixture::new().await;
    let a = f.ask(json!({"prompt": "first"})).await;
    let b = f.ask(json!({"prompt": "second"})).await;
    let c = f.ask(json!({"prompt": "third"})).await;
    f.cancel(b["id"].as_str().unwrap()).await;
    let (s, answered) = f
        .answer(
            &f.alice_token,
            c["id"].as_str().unwrap(),
            json!({"value": "deny"}),
        )
        .await;
    assert_eq!(s, 200, "{answered}");

    let ids = |v: &Value| -> Vec<String> {
        v["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, all) = f
        .call(
            "GET",
            "/api/agent/questions?state=all",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(
        ids(&all),
        vec![
            c["id"].as_str().unwrap(),
            b["id"].as_str().unwrap(),
            a["id"].as_str().unwrap()
        ]
    );
    let (_, recent) = f
        .call("GET", "/api/agent/questions", Some(&f.agent_token), None)
        .await;
    assert_eq!(ids(&recent).len(), 3);
    let (_, pending) = f
        .call(
            "GET",
            "/api/agent/questions?state=pending",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(ids(&pending), vec![a["id"].as_str().unwrap()]);
    let (_, cancelled) = f
        .call(
            "GET",
            "/api/agent/questions?state=cancelled",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(ids(&cancelled), vec![b["id"].as_str().unwrap()]);
    let (_, ans) = f
        .call(
            "GET",
            "/api/agent/questions?state=answered",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(ans["questions"][0]["answer"]["value"], "deny");
    let (s, b) = f
        .call(
            "GET",
            "/api/agent/questions?state=done",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!((s, err_field(&b)), (422, "state"));
    let (s, _) = f
        .call(
            "GET",
            "/api/agent/questions?limit=0",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(s, 422);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_pending_then_409_with_the_unchanged_question() {
    let f = Fixture::new().await;
    let q = f.ask(json!({"prompt": "withdraw me"})).await;
    let id = q["id"].as_str().unwrap();
    let (s, c) = f
        .call("POST", &qpath(id, "/cancel"), Some(&f.agent_token), None)
        .await;
    assert_eq!((s, c["state"].as_str()), (200, Some("cancelled")));
    assert!(c["resolved_at"].is_string());
    let (s, b) = f
        .call("POST", &qpath(id, "/cancel"), Some(&f.agent_token), None)
        .await;
    assert_eq!((s, err_code(&b)), (409, "already_resolved"));
    assert_eq!(
        b["question"], c,
        "the conflict carries the question unchanged"
    );

    let q2 = f.ask(json!({"prompt": "answered first"})).await;
    let id2 = q2["id"].as_str().unwrap();
    let (_, answered) = f
        .answer(&f.alice_token, id2, json!({"value": "approve"}))
        .await;
    let (s, b) = f
        .call("POST", &qpath(id2, "/cancel"), Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 409);
    assert_eq!(b["question"], answered);
}

// ---- wait ----

#[tokio::test(flavor = "multi_thread")]
async fn wait_times_out_with_the_pending_question_and_returns_at_once_when_terminal() {
    let f = Fixture::new().await;
    let q = f.ask(json!({"prompt": "slow"})).await;
    let id = q["id"].as_str().unwrap();
    let t = Instant::now();
    let (s, w) = f
        .call(
            "GET",
            &qpath(id, "/wait?timeout=1"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!((s, w["state"].as_str()), (200, Some("pending")));
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "returned after {:?}",
        t.elapsed()
    );
    let (s, b) = f
        .call(
            "GET",
            &qpath(id, "/wait?timeout=abc"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!((s, err_field(&b)), (422, "timeout"));

    f.answer(&f.alice_token, id, json!({"value": "approve"}))
        .await;
    let t = Instant::now();
    let (_, w) = f
        .call(
            "GET",
            &qpath(id, "/wait?timeout=30"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(w["state"], "answered");
    assert!(t.elapsed() < Duration::from_secs(1));
}

async fn spawn_waiters(
    f: &Fixture,
    id: &str,
    n: usize,
) -> Vec<tokio::task::JoinHandle<(Value, Duration)>> {
    let mut handles = Vec::new();
    for _ in 0..n {
        let url = format!("{}{}", f.base, qpath(id, "/wait?timeout=30"));
        let token = f.agent_token.clone();
        let http = f.http.clone();
        handles.push(tokio::spawn(async move {
            let t = Instant::now();
            let v: Value = http
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (v, t.elapsed())
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await; // let them park
    handles
}

#[tokio::test(flavor = "multi_thread")]
async fn many_waiters_are_released_promptly_by_an_answer() {
    let f = Fixture::new().await;
    let q = f
        .ask(json!({"prompt": "room?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap();
    let waiters = spawn_waiters(&f, id, 20).await;
    let (s, _) = f
        .answer(&f.bob_token, id, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    for w in waiters {
        let (v, took) = w.await.unwrap();
        assert_eq!(v["state"], "answered");
        assert_eq!(v["answer"]["responder"]["id"], f.bob.as_str());
        assert!(took < Duration::from_secs(5), "waiter held {took:?}");
    }
    assert_eq!(
        f.server.as_ref().unwrap().app.waiters.slot_count(),
        0,
        "no waiter slot leaks"
    );
}

/// An answer whose request is dropped once its database job is under way
/// (its client went away, a proxy gave up) still commits, and its
/// long-pollers hear of it then, not at the end of their long-poll: the job
/// releases them itself, right after its commit. (On SQLite this was the
/// only way they could hear of it; on PostgreSQL the answer's NOTIFY,
/// heard by this instance too, is a second way.)
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_whose_request_is_dropped_still_releases_its_waiters() {
    let f = Fixture::new().await;
    let q = f
        .ask(json!({"prompt": "room?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap();
    let app = f.server.as_ref().unwrap().app.clone();
    let waiters = spawn_waiters(&f, id, 2).await;
    f.until_parked(2).await;
    // Hold the database's thread, so on SQLite (one thread) the answer's
    // job is still queued when its request goes. (PostgreSQL's other
    // threads run it at once, and its NOTIFY wakes the waiters as well:
    // there the test passed before this change too.)
    let (go, hold) = std::sync::mpsc::channel::<()>();
    let held = app
        .db
        .run(move |_| -> Result<(), qp_server::store::DbError> {
            let _ = hold.recv();
            Ok(())
        });
    let mut held = std::pin::pin!(held);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(held.as_mut().poll(&mut cx).is_pending());
    let bob = qp_server::store::identity::User {
        id: f.bob.clone(),
        display_name: "Bob".into(),
        check_token: None,
    };
    {
        let answer = app.answer(bob, id.to_string(), json!({"value": "approve"}), None);
        let mut answer = std::pin::pin!(answer);
        // One poll hands the answer to the database; then the request is gone.
        let _ = answer.as_mut().poll(&mut cx);
    }
    go.send(()).unwrap();
    held.await.unwrap();
    for w in waiters {
        let (v, took) = w.await.unwrap();
        assert_eq!(v["state"], "answered");
        assert_eq!(v["answer"]["responder"]["id"], f.bob.as_str());
        assert!(
            took < Duration::from_secs(10),
            "waiter held {took:?}: released only at its long-poll's end"
        );
    }
    assert_eq!(app.waiters.slot_count(), 0, "no waiter slot leaks");
}

#[tokio::test(flavor = "multi_thread")]
async fn waiters_are_released_by_cancel_and_by_expiry() {
    let f = Fixture::new().await;
    let q = f.ask(json!({"prompt": "cancel me"})).await;
    let id = q["id"].as_str().unwrap();
    let waiters = spawn_waiters(&f, id, 3).await;
    f.cancel(id).await;
    for w in waiters {
        let (v, took) = w.await.unwrap();
        assert_eq!(v["state"], "cancelled");
        assert!(took < Duration::from_secs(5));
    }

    let q = f.ask(json!({"prompt": "expire me"})).await;
    let id = q["id"].as_str().unwrap();
    f.set_expiry(id, 2);
    let t = Instant::now();
    let (_, v) = f
        .call(
            "GET",
            &qpath(id, "/wait?timeout=30"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(v["state"], "expired");
    assert_eq!(v["answer"], Value::Null);
    assert_eq!(v["resolved_at"], v["expires_at"]);
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "released after {:?}",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_read_shows_an_overdue_question_as_pending() {
    // A sweep interval of an hour: only the read path can expire it.
    let f = Fixture::with(|s| s.sweep_interval = Duration::from_secs(3600)).await;
    let q = f
        .ask(json!({"prompt": "late", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap();
    f.set_expiry(id, -5);
    let (_, pending) = f
        .call("GET", "/api/questions/pending", Some(&f.bob_token), None)
        .await;
    assert_eq!(pending["questions"].as_array().unwrap().len(), 0);
    let (_, listed) = f
        .call(
            "GET",
            "/api/agent/questions?state=pending",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(listed["questions"].as_array().unwrap().len(), 0);
    let (_, got) = f
        .call("GET", &qpath(id, ""), Some(&f.agent_token), None)
        .await;
    assert_eq!(got["state"], "expired");
    let (s, late) = f
        .answer(&f.bob_token, id, json!({"value": "approve"}))
        .await;
    assert_eq!(
        (s, late["state"].as_str()),
        (200, Some("expired")),
        "a late answer is not an error"
    );
}

// ---- responder side ----

#[tokio::test(flavor = "multi_thread")]
async fn pending_lists_direct_to_me_and_room_questions_of_my_rooms() {
    let f = Fixture::new().await;
    let to_alice = f.ask(json!({"prompt": "for alice"})).await;
    let to_bob = f
        .ask(json!({"prompt": "for bob", "target_user_id": f.bob}))
        .await;
    let room = f
        .ask(json!({"prompt": "anyone", "responder_scope": "room"}))
        .await;
    let ids = |v: &Value| -> Vec<String> {
        v["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, bob) = f
        .call("GET", "/api/questions/pending", Some(&f.bob_token), None)
        .await;
    assert_eq!(
        ids(&bob),
        vec![room["id"].as_str().unwrap(), to_bob["id"].as_str().unwrap()]
    );
    let (_, alice) = f
        .call("GET", "/api/questions/pending", Some(&f.alice_token), None)
        .await;
    assert_eq!(
        ids(&alice),
        vec![
            room["id"].as_str().unwrap(),
            to_alice["id"].as_str().unwrap()
        ]
    );
    let (_, carol) = f
        .call("GET", "/api/questions/pending", Some(&f.carol_token), None)
        .await;
    assert!(ids(&carol).is_empty(), "carol is in another room");
    let (s, _) = f
        .call("GET", "/api/questions/pending", Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 403, "an agent token is not a user token");
    let (s, _) = f.call("GET", "/api/questions/pending", None, None).await;
    assert_eq!(s, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn ineligible_users_cannot_answer_or_read() {
    let f = Fixture::new().await;
    let direct = f.ask(json!({"prompt": "for alice"})).await;
    let room = f
        .ask(json!({"prompt": "anyone", "responder_scope": "room"}))
        .await;
    let d = direct["id"].as_str().unwrap();
    let r = room["id"].as_str().unwrap();

    let (s, b) = f.answer(&f.bob_token, d, json!({"value": "approve"})).await;
    assert_eq!(
        (s, err_code(&b)),
        (403, "not_eligible"),
        "bob is not the target"
    );
    let (s, _) = f
        .answer(&f.carol_token, r, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 403, "carol is not in the room");
    let (s, _) = f
        .call(
            "GET",
            &format!("/api/questions/{r}"),
            Some(&f.carol_token),
            None,
        )
        .await;
    assert_eq!(s, 403);
    let (s, _) = f
        .call(
            "GET",
            &format!("/api/questions/{d}"),
            Some(&f.bob_token),
            None,
        )
        .await;
    assert_eq!(s, 403);
    let (s, got) = f
        .call(
            "GET",
            &format!("/api/questions/{r}"),
            Some(&f.bob_token),
            None,
        )
        .await;
    assert_eq!((s, got["id"].as_str()), (200, Some(r)));
    let (_, still) = f
        .call("GET", &qpath(d, ""), Some(&f.agent_token), None)
        .await;
    assert_eq!(still["state"], "pending", "refused answers change nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn answer_errors_and_the_responder_is_the_authenticated_user() {
    let f = Fixture::new().await;
    let q = f
        .ask(json!({"prompt": "go?", "responder_scope": "room", "options": ["go", "stop"]}))
        .await;
    let id = q["id"].as_str().unwrap();
    let (s, b) = f.answer(&f.bob_token, id, json!({"value": "maybe"})).await;
    assert_eq!(
        (s, err_code(&b), err_field(&b)),
        (422, "unknown_option", "value")
    );
    let (s, b) = f.answer(&f.bob_token, id, json!({"text": "hm"})).await;
    assert_eq!((s, err_code(&b)), (422, "text_not_allowed"));
    let (s, b) = f
        .answer(&f.bob_token, id, json!({"value": "go", "text": "x"}))
        .await;
    assert_eq!((s, err_code(&b)), (422, "ambiguous_answer"));
    let (s, _) = f
        .answer(&f.bob_token, "q_nope", json!({"value": "go"}))
        .await;
    assert_eq!(s, 404);
    let (s, _) = f
        .call(
            "POST",
            &format!("/api/questions/{id}/answer"),
            None,
            Some(json!({"value": "go"})),
        )
        .await;
    assert_eq!(s, 401);
    let resp = f
        .http
        .post(format!("{}/api/questions/{id}/answer", f.base))
        .bearer_auth(&f.bob_token)
        .body("value=go")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);

    // A forged responder in the body is ignored: the token decides.
    let (s, a) = f
        .answer(
            &f.bob_token,
            id,
            json!({"value": "go", "responder": {"id": f.alice, "display_name": "Alice"}}),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        a["answer"]["responder"],
        json!({"id": f.bob, "display_name": "Bob"})
    );
    assert_eq!(a["answer"]["label"], "go");
    // Later answers are clean no-ops carrying the winner.
    let (s, late) = f.answer(&f.alice_token, id, json!({"value": "stop"})).await;
    assert_eq!(s, 200);
    assert_eq!(late["answer"], a["answer"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_answer_resolves_with_text() {
    let f = Fixture::new().await;
    let q = f.ask(json!({"prompt": "Why hold?", "text_input": {"placeholder": "reason", "max_length": 20}})).await;
    assert_eq!(q["options"], json!([]));
    let id = q["id"].as_str().unwrap();
    let (s, b) = f
        .answer(&f.alice_token, id, json!({"text": "x".repeat(21)}))
        .await;
    assert_eq!((s, err_code(&b)), (422, "too_long"));
    let (s, a) = f
        .answer(&f.alice_token, id, json!({"text": "  CI is red  "}))
        .await;
    assert_eq!(s, 200);
    assert_eq!(a["answer"]["text"], "CI is red");
    assert_eq!(a["answer"]["value"], Value::Null);
    let (_, w) = f
        .call(
            "GET",
            &qpath(id, "/wait?timeout=0"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(w["answer"]["text"], "CI is red");
}

#[tokio::test(flavor = "multi_thread")]
async fn idempotency_key_returns_the_same_result() {
    let f = Fixture::new().await;
    let q = f
        .ask(json!({"prompt": "once", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap();
    let send = |token: String, key: &'static str, value: &'static str| {
        let url = format!("{}/api/questions/{id}/answer", f.base);
        let http = f.http.clone();
        async move {
            let r = http
                .post(url)
                .bearer_auth(token)
                .header("Idempotency-Key", key)
                .json(&json!({"value": value}))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let first = send(f.bob_token.clone(), "k-1", "approve").await;
    assert_eq!(first.0, 200);
    let retry = send(f.bob_token.clone(), "k-1", "approve").await;
    assert_eq!(retry, first, "a retry returns the stored response verbatim");
    let other = f
        .ask(json!({"prompt": "two", "responder_scope": "room"}))
        .await;
    let r = f
        .http
        .post(format!(
            "{}/api/questions/{}/answer",
            f.base,
            other["id"].as_str().unwrap()
        ))
        .bearer_auth(&f.bob_token)
        .header("Idempotency-Key", "k-1")
        .json(&json!({"value": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let b: Value = r.json().await.unwrap();
    assert_eq!(err_code(&b), "idempotency_key_reused");
    // A refusal is recorded too, and replayed with its status and body.
    let third = f
        .ask(json!({"prompt": "three", "responder_scope": "room"}))
        .await;
    let send_to = |key: &'static str, value: &'static str| {
        let url = format!(
            "{}/api/questions/{}/answer",
            f.base,
            third["id"].as_str().unwrap()
        );
        let (http, token) = (f.http.clone(), f.bob_token.clone());
        async move {
            let r = http
                .post(url)
                .bearer_auth(token)
                .header("Idempotency-Key", key)
                .json(&json!({"value": value}))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let refused = send_to("k-2", "no-such-option").await;
    assert_eq!(refused.0, 422, "{}", refused.1);
    assert_eq!(
        err_code(&serde_json::from_str(&refused.1).unwrap()),
        "unknown_option"
    );
    assert_eq!(
        send_to("k-2", "approve").await,
        refused,
        "the refusal replayed"
    );
    assert_eq!(send_to("k-3", "approve").await.0, 200, "a new key answers");
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_concurrent_answers_have_exactly_one_winner() {
    let f = Fixture::new().await;
    // 50 members of the room, each with a token.
    let conn = f.db();
    let mut tokens = Vec::new();
    for i in 0..50 {
        let u =
            qp_server::store::identity::create_user(&conn, &format!("Member {i}"), None).unwrap();
        qp_server::store::identity::add_member(&conn, &f.room_id, &u.id).unwrap();
        tokens.push(qp_server::store::identity::create_user_token(&conn, &u.id, "").unwrap());
    }
    drop(conn);
    let q = f
        .ask(json!({"prompt": "who first?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(50));
    let mut handles = Vec::new();
    for (i, token) in tokens.into_iter().enumerate() {
        let url = format!("{}/api/questions/{id}/answer", f.base);
        let http = f.http.clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let value = if i % 2 == 0 { "approve" } else { "deny" };
            let r = http
                .post(url)
                .bearer_auth(token)
                .json(&json!({"value": value}))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }));
    }
    let mut answers = Vec::new();
    for h in handles {
        let (s, body) = h.await.unwrap();
        assert_eq!(s, 200, "{body}");
        assert_eq!(body["state"], "answered");
        answers.push(body["answer"].clone());
    }
    assert!(
        answers.iter().all(|a| a == &answers[0]),
        "every caller sees the one winning answer"
    );
    let (_, stored) = f
        .call("GET", &qpath(&id, ""), Some(&f.agent_token), None)
        .await;
    assert_eq!(stored["answer"], answers[0]);
}

// ---- limits ----

#[tokio::test(flavor = "multi_thread")]
async fn asking_is_rate_limited_and_quota_bound_per_agent() {
    let f = Fixture::with(|s| {
        s.ask_burst = 3;
        s.ask_rate_per_minute = 1;
    })
    .await;
    for _ in 0..3 {
        f.ask(json!({"prompt": "burst"})).await;
    }
    let resp = f
        .http
        .post(format!(
            "{}/api/agent/rooms/{}/questions",
            f.base, f.room_code
        ))
        .bearer_auth(&f.agent_token)
        .json(&json!({"prompt": "one too many"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    let b: Value = resp.json().await.unwrap();
    assert_eq!(err_code(&b), "rate_limited");
    // The other agent has its own budget.
    let (s, _) = f
        .call(
            "POST",
            &format!("/api/agent/rooms/{}/questions", f.room_code),
            Some(&f.agent2_token),
            Some(json!({"prompt": "x"})),
        )
        .await;
    assert_eq!(s, 201);

    let f = Fixture::with(|s| s.max_pending_per_agent = 2).await;
    let a = f.ask(json!({"prompt": "1"})).await;
    f.ask(json!({"prompt": "2"})).await;
    let (s, b) = f
        .call(
            "POST",
            &format!("/api/agent/rooms/{}/questions", f.room_code),
            Some(&f.agent_token),
            Some(json!({"prompt": "3"})),
        )
        .await;
    assert_eq!((s, err_code(&b)), (429, "quota_exceeded"));
    f.cancel(a["id"].as_str().unwrap()).await;
    f.ask(json!({"prompt": "3 after a cancel"})).await;
}

// ---- devices and the push queue ----

#[tokio::test(flavor = "multi_thread")]
async fn devices_register_and_questions_queue_push_jobs() {
    let f = Fixture::new().await;
    let (s, dev) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(json!({"platform": "ios", "push_token": "abc123de".repeat(8), "app_id": "io.qp.app"})),
        )
        .await;
    assert_eq!(s, 201, "{dev}");
    let (s, b) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(json!({"platform": "webos", "push_token": "x", "app_id": "a"})),
        )
        .await;
    assert_eq!((s, err_field(&b)), (422, "platform"));
    let (s, _) = f.call("POST", "/api/devices", None, Some(json!({}))).await;
    assert_eq!(s, 401);

    let q = f
        .ask(json!({"prompt": "room q", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap();
    let jobs = qp_server::store::deliveries::push_jobs_of(&f.db(), id).unwrap();
    assert_eq!(
        jobs.len(),
        1,
        "one job for bob's one device (alice has none)"
    );
    // Queued; the worker may already have found that this server has no
    // APNs (an hour's retry would outlive the question: failed then).
    assert_eq!(jobs[0].kind, "question");
    assert!(
        ["queued", "failed"].contains(&jobs[0].state.as_str()),
        "{}",
        jobs[0].state
    );
    f.answer(&f.alice_token, id, json!({"value": "approve"}))
        .await;
    let jobs = qp_server::store::deliveries::push_jobs_of(&f.db(), id).unwrap();
    assert_eq!(
        jobs.iter().map(|j| j.kind.as_str()).collect::<Vec<_>>(),
        vec!["question", "resolved"]
    );

    let dev_id = dev["id"].as_str().unwrap();
    let (s, _) = f
        .call(
            "DELETE",
            &format!("/api/devices/{dev_id}"),
            Some(&f.alice_token),
            None,
        )
        .await;
    assert_eq!(s, 404, "not alice's device");
    let (s, _) = f
        .call(
            "DELETE",
            &format!("/api/devices/{dev_id}"),
            Some(&f.bob_token),
            None,
        )
        .await;
    assert_eq!(s, 204);
}

/// A transport that records what it is given and answers from a script:
/// the interface the APNs and FCM transports implement.
struct ScriptedTransport {
    seen: std::sync::Mutex<Vec<(String, String, String)>>,
    /// Outcomes per device push token, in order; `Sent` once exhausted.
    script: std::sync::Mutex<std::collections::HashMap<String, Vec<qp_server::push::PushOutcome>>>,
}

impl qp_server::push::PushTransport for ScriptedTransport {
    fn send<'a>(&'a self, m: &'a qp_server::push::PushMessage) -> qp_server::push::PushFuture<'a> {
        Box::pin(async move {
            self.seen.lock().unwrap().push((
                m.device.push_token.clone(),
                m.kind.as_str().to_string(),
                m.question.id.clone(),
            ));
            let mut script = self.script.lock().unwrap();
            match script.get_mut(&m.device.push_token) {
                Some(list) if !list.is_empty() => list.remove(0),
                _ => qp_server::push::PushOutcome::Sent,
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_push_worker_sends_retries_and_forgets_dead_devices() {
    use qp_server::push::PushOutcome;
    let transport = std::sync::Arc::new(ScriptedTransport {
        seen: Default::default(),
        script: std::sync::Mutex::new(
            [
                (
                    "bob-phone".to_string(),
                    vec![PushOutcome::Retry {
                        reason: "503".into(),
                        after: Some(Duration::from_millis(50)),
                    }],
                ),
                ("bob-tablet".to_string(), vec![PushOutcome::DeviceGone]),
            ]
            .into_iter()
            .collect(),
        ),
    });
    let f = Fixture::build(|_| {}, Some(transport.clone())).await;
    for token in ["bob-phone", "bob-tablet"] {
        let (s, _) = f
            .call(
                "POST",
                "/api/devices",
                Some(&f.bob_token),
                Some(json!({"platform": "android", "push_token": token, "app_id": "a"})),
            )
            .await;
        assert_eq!(s, 201);
    }
    let q = f
        .ask(json!({"prompt": "push me", "target_user_id": f.bob}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let t = Instant::now();
    loop {
        let jobs = qp_server::store::deliveries::push_jobs_of(&f.db(), &id).unwrap();
        if jobs.iter().all(|j| j.state != "queued") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "jobs stuck: {jobs:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let jobs = qp_server::store::deliveries::push_jobs_of(&f.db(), &id).unwrap();
    // Phone: 503 then sent (2 attempts). Tablet: unregistered -> device removed.
    assert_eq!(jobs[0].state, "sent");
    assert_eq!(jobs[0].attempts, 2);
    assert!(jobs.len() == 1 || jobs[1].state == "failed", "{jobs:?}");
    let devices = qp_server::store::identity::devices_of(&f.db(), &f.bob).unwrap();
    assert_eq!(
        devices
            .iter()
            .map(|d| d.push_token.as_str())
            .collect::<Vec<_>>(),
        vec!["bob-phone"]
    );
    assert_eq!(transport.seen.lock().unwrap().len(), 3);

    // The resolution reaches the device that got the question.
    f.answer(&f.bob_token, &id, json!({"value": "approve"}))
        .await;
    let t = Instant::now();
    while !transport
        .seen
        .lock()
        .unwrap()
        .iter()
        .any(|(_, kind, _)| kind == "resolved")
    {
        assert!(t.elapsed() < Duration::from_secs(10), "no resolution push");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = transport.seen.lock().unwrap();
    let resolved: Vec<_> = seen.iter().filter(|(_, k, _)| k == "resolved").collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].0, "bob-phone");
}
