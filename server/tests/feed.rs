//! A person's feed long-poll (`GET /api/questions/pending/wait`) over the
//! real HTTP API, on SQLite and (with QP_TEST_POSTGRES) PostgreSQL: it
//! returns the moment a question is asked, answered, cancelled or expires;
//! it holds while nothing the person may see changed; it is bounded per
//! person like every long-poll.

mod common;

use std::time::{Duration, Instant};

use common::{err_code, err_field, Fixture};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// The list now and its version (a wait without `since` returns at once).
async fn feed(f: &Fixture, token: &str) -> (Vec<String>, String) {
    let (s, body) = f
        .call("GET", "/api/questions/pending/wait", Some(token), None)
        .await;
    assert_eq!(s, 200, "{body}");
    (ids(&body), body["version"].as_str().unwrap().to_string())
}

fn ids(body: &Value) -> Vec<String> {
    body["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_string())
        .collect()
}

/// A wait from `since`, in the background: its status, body and how long
/// it was held.
fn wait(f: &Fixture, token: &str, since: &str, timeout: u64) -> JoinHandle<(u16, Value, Duration)> {
    let req = f
        .http
        .get(format!(
            "{}/api/questions/pending/wait?since={since}&timeout={timeout}",
            f.base
        ))
        .bearer_auth(token);
    tokio::spawn(async move {
        let t = Instant::now();
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap(), t.elapsed())
    })
}

/// Parks a wait of `token` from its list's current version, then runs
/// `change`, and returns what the wait saw: the change must end it long
/// before its 20 s timeout.
async fn woken_by<F: std::future::Future>(
    f: &Fixture,
    token: &str,
    change: impl FnOnce() -> F,
) -> Vec<String> {
    let (_, version) = feed(f, token).await;
    let held = wait(f, token, &version, 20);
    f.until_parked(1).await;
    change().await;
    let (s, body, took) = held.await.unwrap();
    assert_eq!(s, 200, "{body}");
    assert_ne!(body["version"], version.as_str(), "the list changed");
    assert!(took < Duration::from_secs(5), "woken after {took:?}");
    ids(&body)
}

#[tokio::test(flavor = "multi_thread")]
async fn feed_wait_wakes_at_once_on_ask_answer_cancel_and_expiry() {
    let f = Fixture::new().await;
    // Asked: the wait returns with the new question.
    let mut asked = None;
    let seen = woken_by(&f, &f.bob_token, || async {
        asked = Some(
            f.ask(json!({"prompt": "Deploy?", "responder_scope": "room"}))
                .await,
        );
    })
    .await;
    let id = asked.unwrap()["id"].as_str().unwrap().to_string();
    assert_eq!(seen, vec![id.clone()]);
    // Answered by someone else in the room: it leaves Bob's list.
    let seen = woken_by(&f, &f.bob_token, || async {
        let (s, body) = f
            .answer(&f.alice_token, &id, json!({"value": "approve"}))
            .await;
        assert_eq!(s, 200, "{body}");
    })
    .await;
    assert!(seen.is_empty(), "{seen:?}");
    // Cancelled by the asker.
    let id = f
        .ask(json!({"prompt": "Roll back?", "responder_scope": "room"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let seen = woken_by(&f, &f.bob_token, || async {
        assert_eq!(f.cancel(&id).await.0, 200);
    })
    .await;
    assert!(seen.is_empty(), "{seen:?}");
    // Expired: nothing wakes the wait but the deadline of the question
    // itself, which the wait watches.
    let id = f
        .ask(json!({"prompt": "Restart?", "responder_scope": "room"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    f.set_expiry(&id, 3);
    let (list, version) = feed(&f, &f.bob_token).await;
    assert_eq!(list, vec![id.clone()]);
    let (s, body, took) = wait(&f, &f.bob_token, &version, 20).await.unwrap();
    assert_eq!(s, 200, "{body}");
    assert!(ids(&body).is_empty(), "{body}");
    assert!(took < Duration::from_secs(5), "woken after {took:?}");
    let (s, q) = f
        .call(
            "GET",
            &format!("/api/questions/{id}"),
            Some(&f.bob_token),
            None,
        )
        .await;
    assert_eq!((s, q["state"].as_str()), (200, Some("expired")), "{q}");
}

#[tokio::test(flavor = "multi_thread")]
async fn feed_wait_holds_while_nothing_the_person_may_see_changes() {
    let f = Fixture::new().await;
    // Carol is in another room; Bob is not the agent's owner, whom a
    // question asks by default. Neither list changes, so neither wait
    // returns early.
    let (carol_list, carol_v) = feed(&f, &f.carol_token).await;
    let (bob_list, bob_v) = feed(&f, &f.bob_token).await;
    assert!(carol_list.is_empty() && bob_list.is_empty());
    let carol = wait(&f, &f.carol_token, &carol_v, 2);
    let bob = wait(&f, &f.bob_token, &bob_v, 2);
    f.until_parked(2).await;
    let for_alice = f.ask(json!({"prompt": "For the owner"})).await;
    for held in [carol, bob] {
        let (s, body, took) = held.await.unwrap();
        assert_eq!(s, 200, "{body}");
        assert!(ids(&body).is_empty(), "{body}");
        assert!(
            took >= Duration::from_millis(1900),
            "returned after {took:?}"
        );
    }
    // The list itself follows the same rule as /api/questions/pending.
    let (alice_list, _) = feed(&f, &f.alice_token).await;
    assert_eq!(
        alice_list,
        vec![for_alice["id"].as_str().unwrap().to_string()]
    );
    let (s, pending) = f
        .call("GET", "/api/questions/pending", Some(&f.alice_token), None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(ids(&pending), alice_list);
    // The version names the list: the same list, the same version; a wait
    // from an older version returns at once.
    let (_, v1) = feed(&f, &f.alice_token).await;
    let (_, v2) = feed(&f, &f.alice_token).await;
    assert_eq!(v1, v2);
    let (s, body, took) = wait(&f, &f.alice_token, "stale", 20).await.unwrap();
    assert_eq!((s, body["version"].as_str()), (200, Some(v1.as_str())));
    assert!(took < Duration::from_secs(2), "{took:?}");
}

/// A change wakes only the feeds of the people it concerns: a question
/// asked of a person wakes that person's, one for the room its members'.
/// The feed of someone outside the room is not woken at all (it reads
/// nothing again) and runs to its timeout.
#[tokio::test(flavor = "multi_thread")]
async fn feed_wait_wakes_only_the_people_concerned() {
    let f = Fixture::new().await;
    let app = &f.server.as_ref().expect("a running server").app;
    let settle = || tokio::time::sleep(Duration::from_millis(300));
    // Carol is in another room: neither question is hers to see.
    let (_, carol_v) = feed(&f, &f.carol_token).await;
    let carol = wait(&f, &f.carol_token, &carol_v, 3);
    f.until_parked(1).await;
    let before = app.feed_wake.woken();
    f.ask(json!({"prompt": "For the owner"})).await;
    f.ask(json!({"prompt": "For the room", "responder_scope": "room"}))
        .await;
    settle().await;
    assert_eq!(
        app.feed_wake.woken(),
        before,
        "a question in a room Carol is not in woke her feed"
    );
    let (s, body, took) = carol.await.unwrap();
    assert_eq!(s, 200, "{body}");
    assert!(ids(&body).is_empty(), "{body}");
    assert!(
        took >= Duration::from_millis(2900),
        "returned after {took:?}"
    );
    // Bob, a member of the room, is woken by the room's question only.
    let (_, bob_v) = feed(&f, &f.bob_token).await;
    let bob = wait(&f, &f.bob_token, &bob_v, 20);
    f.until_parked(1).await;
    let before = app.feed_wake.woken();
    f.ask(json!({"prompt": "For the owner again"})).await;
    settle().await;
    assert_eq!(app.feed_wake.woken(), before, "Alice's question woke Bob");
    let asked = f
        .ask(json!({"prompt": "For the room again", "responder_scope": "room"}))
        .await;
    let (s, body, took) = bob.await.unwrap();
    assert_eq!(s, 200, "{body}");
    assert!(
        ids(&body).contains(&asked["id"].as_str().unwrap().to_string()),
        "{body}"
    );
    assert!(took < Duration::from_secs(5), "woken after {took:?}");
    assert!(app.feed_wake.woken() > before);
}

#[tokio::test(flavor = "multi_thread")]
async fn feed_wait_is_bounded_per_person() {
    let f = Fixture::with(|s| s.max_long_polls_per_token = 1).await;
    let (_, v) = feed(&f, &f.bob_token).await;
    let held = wait(&f, &f.bob_token, &v, 20);
    f.until_parked(1).await;
    // A second wait of the same person is refused, whichever token: Bob
    // paired a second device, and its wait meets the same bound.
    let bob_laptop =
        qp_server::store::identity::create_user_token(&f.db(), &f.bob, "laptop").unwrap();
    let (s, body, _) = wait(&f, &bob_laptop, &v, 20).await.unwrap();
    assert_eq!(s, 429, "{body}");
    assert_eq!(err_code(&body), "too_many_long_polls");
    assert!(
        body["message"].as_str().unwrap().contains("this person"),
        "{body}"
    );
    // A read without `since` returns at once and takes no place: a page
    // opened while Bob's waits are all held still reads its list.
    let (ids_now, _) = feed(&f, &bob_laptop).await;
    assert!(ids_now.is_empty(), "{ids_now:?}");
    // A wait that returns at once takes no place; another person has her
    // own budget.
    let (s, _, _) = wait(&f, &f.bob_token, &v, 0).await.unwrap();
    assert_eq!(s, 200);
    let (_, carol_v) = feed(&f, &f.carol_token).await;
    let carol = wait(&f, &f.carol_token, &carol_v, 1);
    // The timeout is bounded as the agents' wait is.
    let (s, body) = f
        .call(
            "GET",
            "/api/questions/pending/wait?timeout=31",
            Some(&f.bob_token),
            None,
        )
        .await;
    assert_eq!((s, err_field(&body)), (422, "timeout"), "{body}");
    // An agent's token is not a person's.
    let (s, _) = f
        .call(
            "GET",
            "/api/questions/pending/wait",
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(s, 403);
    f.ask(json!({"prompt": "Deploy?", "responder_scope": "room"}))
        .await;
    assert_eq!(held.await.unwrap().0, 200);
    assert_eq!(carol.await.unwrap().0, 200);
    // Its place is free again.
    let (s, _, _) = wait(&f, &f.bob_token, "stale", 20).await.unwrap();
    assert_eq!(s, 200);
}
