//! What the question loop costs the database, and the token cache that
//! keeps authentication out of it: the round trips of one ask -> wait ->
//! answer cycle, auth included, pinned per engine (so the figure cannot grow
//! unnoticed); a revoked token refused on the very next request while the
//! cache remembers it (on every instance, on PostgreSQL); a flood of unknown
//! tokens adding nothing to the cache.
//!
//! Runs on SQLite, and on PostgreSQL when `QP_TEST_POSTGRES` is set.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::Fixture;
use qp_server::store::identity;
use qp_server::store::round_trips::Op;
use serde_json::{json, Value};

/// Round trips of one warm cycle (statements prepared, tokens remembered),
/// per operation, at most: SQLite, PostgreSQL.
///
/// - ask: the room/permission/target/token read, then BEGIN, the question
///   (quota in its WHERE), its push jobs, COMMIT; PostgreSQL: BEGIN, the
///   agent's quota lock (shared, far from the quota), one statement for the
///   question and its push jobs, COMMIT (near the quota, an ask that tried
///   the shared lock in vain rolls back and does the four again with the
///   exclusive one: 9); the notice that wakes the other instances' feed
///   long-polls rides in the lock's statement;
/// - wait: one read (the token checked in it); the release comes from the
///   answer's own write, with no read;
/// - answer: one read (question, membership, room, token), then SQLite:
///   BEGIN, the resolution, its resolution pushes, COMMIT; PostgreSQL: one
///   statement (resolution, webhook, pushes, wake-up);
/// - auth: nothing (remembered tokens are checked inside those reads).
const WARM_CYCLE: [(Op, u64, u64); 4] = [
    (Op::Ask, 5, 5),
    (Op::Wait, 1, 1),
    (Op::Answer, 5, 2),
    (Op::Auth, 0, 0),
];

fn loop_round_trips(f: &Fixture) -> [u64; 4] {
    let rt = &f.server.as_ref().unwrap().app.db.round_trips;
    WARM_CYCLE.map(|(op, _, _)| rt.get(op))
}

/// One ask -> wait -> answer cycle over HTTP.
async fn cycle(f: &Fixture) {
    let q = f
        .ask(json!({"prompt": "Ship it?", "responder_scope": "room", "ttl": 600}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let app = f.server.as_ref().unwrap().app.clone();
    let parked_before = app.metrics.parked.load(Ordering::Relaxed);
    let waiter = {
        let (http, base, token, id) = (
            f.http.clone(),
            f.base.clone(),
            f.agent_token.clone(),
            id.clone(),
        );
        tokio::spawn(async move {
            let r = http
                .get(format!("{base}/api/agent/questions/{id}/wait?timeout=20"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.json::<Value>().await.unwrap()
        })
    };
    f.until_parked(parked_before + 1).await;
    let (s, a) = f
        .answer(&f.alice_token, &id, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200, "{a}");
    let released = waiter.await.unwrap();
    assert_eq!(released["state"], "answered", "{released}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_warm_cycle_costs_the_round_trips_recorded_here() {
    let f = Fixture::new().await;
    let pg = f.on_postgres();
    // Cold: each token is read once (one statement), then remembered.
    let before = loop_round_trips(&f);
    cycle(&f).await;
    let cold = loop_round_trips(&f);
    // One read per token (agent, user), and each one's first use stamped.
    assert_eq!(cold[3] - before[3], 4, "auth round trips of the cold cycle");

    let before = loop_round_trips(&f);
    cycle(&f).await;
    let after = loop_round_trips(&f);
    let mut total = 0;
    let mut said = Vec::new();
    for (i, (op, sqlite, postgres)) in WARM_CYCLE.iter().enumerate() {
        let got = after[i] - before[i];
        total += got;
        said.push(format!("{}={got}", op.as_str()));
        let limit = if pg { *postgres } else { *sqlite };
        assert!(
            got <= limit,
            "{}: {got} round trips, at most {limit} recorded ({})",
            op.as_str(),
            said.join(" ")
        );
    }
    let limit: u64 = WARM_CYCLE.iter().map(|w| if pg { w.2 } else { w.1 }).sum();
    println!("warm cycle: {total} round trips ({})", said.join(" "));
    assert!(total <= limit);
    if pg {
        assert!(
            total <= 8,
            "the goal on PostgreSQL: at most 8 ({})",
            said.join(" ")
        );
    }

    // /metrics shows them by operation.
    let text = f
        .http
        .get(format!("{}/metrics", f.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for op in ["ask", "wait", "answer", "auth", "push_claim", "cancel"] {
        assert!(
            text.contains(&format!("qp_db_round_trips_total{{operation=\"{op}\"}}")),
            "{op} missing in:\n{text}"
        );
    }
}

fn hash_prefix(token: &str) -> String {
    qp_server::ids::token_hash(token)[..12].to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_token_is_refused_on_the_very_next_request_while_remembered() {
    let f = Fixture::new().await;
    let app = f.server.as_ref().unwrap().app.clone();
    // Remembered: the agent has asked and waited, the user has answered.
    cycle(&f).await;
    assert!(app.tokens.len() >= 2);
    let q = f
        .ask(json!({"prompt": "Again?", "responder_scope": "room", "ttl": 600}))
        .await;
    let id = q["id"].as_str().unwrap();
    // Revoked from another connection, as `qp admin token revoke` does.
    identity::revoke_token(&*f.db(), &hash_prefix(&f.agent_token)).unwrap();
    identity::revoke_token(&*f.db(), &hash_prefix(&f.alice_token)).unwrap();
    let (s, body) = f
        .call(
            "POST",
            &format!("/api/agent/rooms/{}/questions", f.room_code),
            Some(&f.agent_token),
            Some(json!({"prompt": "Still?"})),
        )
        .await;
    assert_eq!(s, 401, "ask: {body}");
    let (s, body) = f
        .call(
            "GET",
            &format!("/api/agent/questions/{id}/wait?timeout=0"),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(s, 401, "wait: {body}");
    let (s, body) = f
        .answer(&f.alice_token, id, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 401, "answer: {body}");
    // Unanswered: the refused answer wrote nothing.
    let (s, q) = f.answer(&f.bob_token, id, json!({"value": "deny"})).await;
    assert_eq!(
        (s, q["answer"]["value"].as_str()),
        (200, Some("deny")),
        "{q}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_unknown_tokens_adds_nothing_to_the_cache() {
    let f = Fixture::new().await;
    let app = f.server.as_ref().unwrap().app.clone();
    cycle(&f).await;
    let remembered = app.tokens.len();
    let auth_before = app.db.round_trips.get(Op::Auth);
    for i in 0..300 {
        let (s, _) = f
            .call(
                "GET",
                "/api/agent/questions/q_x/wait?timeout=0",
                Some(&format!("qpa_unknown{i}")),
                None,
            )
            .await;
        assert_eq!(s, 401);
    }
    assert_eq!(app.tokens.len(), remembered, "unknown tokens are not kept");
    // Each costs the one statement it cost before the cache.
    assert_eq!(app.db.round_trips.get(Op::Auth) - auth_before, 300);
}

/// Makes requests with `requests` until every app remembers `hash`. One
/// round may not do: an instance does not keep what it read while a
/// revocation came in (here the wake-up of the agent's, arriving after its
/// 401s), and that is as it should be.
async fn until_warm_on_all<F, Fut>(
    apps: &[std::sync::Arc<qp_server::app::App>],
    hash: &str,
    mut requests: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        requests().await;
        if apps.iter().all(|a| a.tokens.remembers(hash)) {
            return;
        }
        assert!(Instant::now() < until, "never remembered on every instance");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two instances on one PostgreSQL database, both remembering the agent's
/// token: revoked, it is refused by both on the next request, and both
/// forget it (the `revoked:` wake-up).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn a_revocation_holds_on_every_instance_at_once() {
    common::require_postgres();
    let f = Fixture::new().await;
    let other = qp_server::serve::start(common::settings_for(f.database.clone()), None)
        .await
        .unwrap();
    let other_base = format!("http://{}", other.addr);
    let apps = [f.server.as_ref().unwrap().app.clone(), other.app.clone()];
    let bases = [f.base.clone(), other_base.clone()];
    let q = f
        .ask(json!({"prompt": "Both?", "responder_scope": "room", "ttl": 600}))
        .await;
    let id = q["id"].as_str().unwrap();
    let wait = |base: &str| {
        f.http
            .get(format!("{base}/api/agent/questions/{id}/wait?timeout=0"))
            .bearer_auth(&f.agent_token)
            .send()
    };
    let hash = qp_server::ids::token_hash(&f.agent_token);
    until_warm_on_all(&apps, &hash, || async {
        for base in &bases {
            assert_eq!(wait(base).await.unwrap().status().as_u16(), 200);
        }
    })
    .await;
    identity::revoke_token(&*f.db(), &hash_prefix(&f.agent_token)).unwrap();
    for base in &bases {
        assert_eq!(wait(base).await.unwrap().status().as_u16(), 401, "{base}");
    }

    // The `revoked:` wake-up alone makes every instance forget a token:
    // Alice's, remembered by both (an answer to nothing still reads her
    // token), revoked, forgotten with no request made.
    let alice = qp_server::ids::token_hash(&f.alice_token);
    until_warm_on_all(&apps, &alice, || async {
        for base in &bases {
            let r = f
                .http
                .post(format!("{base}/api/questions/q_nothing/answer"))
                .bearer_auth(&f.alice_token)
                .json(&json!({"value": "approve"}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 404);
        }
    })
    .await;
    identity::revoke_token(&*f.db(), &hash_prefix(&f.alice_token)).unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while apps.iter().any(|a| a.tokens.remembers(&alice)) {
        assert!(Instant::now() < until, "an instance still remembers it");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    other.stop().await;
}
