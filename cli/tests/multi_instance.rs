//! Two `qp serve` processes on one PostgreSQL database, as a team runs them
//! behind a load balancer: wake-ups cross instances, the first answer wins
//! across them, a killed instance loses no acknowledged answer and its
//! queued webhooks are delivered by the other, and expiry fires once.
//!
//! Needs `QP_TEST_POSTGRES` (`scripts/test` starts a throwaway server and
//! sets it); without it these tests say so and pass nothing.

mod common;
#[path = "../../server/tests/support/fanout.rs"]
mod fanout;
#[path = "../../server/tests/support/gateways.rs"]
mod gateways;
#[path = "../../server/tests/support/webpush.rs"]
mod webpush_standin;

use common::QpServe;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use qp_server::store::{identity, Database};
use serde_json::{json, Value};

/// `qp serve` processes (the real binary) on the shared database.
struct Instance;

impl Instance {
    fn start(db: &Database) -> QpServe {
        Instance::start_with(db, ["1000000", "1000000", "1000000"])
    }

    /// With `[asks per minute, burst, pending per agent]`.
    fn start_with(db: &Database, limits: [&str; 3]) -> QpServe {
        Instance::start_named(db, limits, "qp")
    }

    /// Its connections carry `application_name = name` (to find them in
    /// `pg_stat_activity`).
    fn start_named(db: &Database, limits: [&str; 3], name: &str) -> QpServe {
        let Database::Postgres(url) = db else {
            panic!("these tests run on PostgreSQL")
        };
        let url = format!("{url}?application_name={name}");
        QpServe::start(&[
            "--db",
            &url,
            "--sweep-interval-ms",
            "100",
            "--ask-rate-per-minute",
            limits[0],
            "--ask-burst",
            limits[1],
            "--max-pending-per-agent",
            limits[2],
            "--webhook-retry-base-ms",
            "50",
            "--webhook-timeout-ms",
            "2000",
            // Bob answers a thousand questions in a row here.
            "--answer-rate-per-minute",
            "1000000",
            "--answer-burst",
            "1000000",
        ])
    }
}

/// What the webhook receiver got: (delivery id, event, question id).
type Deliveries = Arc<Mutex<Vec<(String, String, String)>>>;

async fn hook(State(got): State<Deliveries>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let id = headers
        .get("x-qp-delivery")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    got.lock().unwrap().push((
        id,
        body["event"].as_str().unwrap_or("").to_string(),
        body["question_id"].as_str().unwrap_or("").to_string(),
    ));
    StatusCode::OK
}

async fn start_receiver() -> (SocketAddr, Deliveries) {
    let got: Deliveries = Default::default();
    let app = axum::Router::new()
        .route("/hook", post(hook))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, got)
}

/// One database with a room (Alice and Bob in it), an agent, their tokens,
/// and the room's webhook pointed at `hook`.
struct World {
    db: Database,
    agent: String,
    alice: String,
    bob: String,
    _dir: tempfile::TempDir,
}

fn world(hook: Option<SocketAddr>) -> World {
    common::require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let db = common::test_database(dir.path());
    let conn = common::connect(&db);
    let ops = common::seed_ops_room(&conn);
    if let Some(addr) = hook {
        let hook = identity::Webhook {
            url: format!("http://{addr}/hook"),
            secret: "a-webhook-secret-of-some-length".into(),
            events: vec![],
        };
        identity::set_webhook(&conn, &ops.room_id, Some(&hook)).unwrap();
    }
    World {
        agent: ops.agent,
        alice: ops.alice,
        bob: ops.bob,
        db,
        _dir: dir,
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(40))
        .build()
        .unwrap()
}

async fn ask(http: &reqwest::Client, at: &QpServe, agent: &str, body: Value) -> String {
    let (status, q) = common::ask_at(http, &at.base, agent, &body).await;
    assert_eq!(status, 201, "ask failed: {q}");
    q["id"].as_str().unwrap().to_string()
}

async fn answer(
    http: &reqwest::Client,
    at: &str,
    token: &str,
    id: &str,
    value: &str,
) -> reqwest::Result<(u16, Value)> {
    let (status, body) = common::answer_at(http, at, token, id, value, None).await?;
    Ok((
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    ))
}

async fn parked(http: &reqwest::Client, at: &QpServe) -> f64 {
    let text = http
        .get(format!("{}/metrics", at.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("qp_waiters_parked "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// A long-poll on `at` for question `id`: when it returned, and what.
fn spawn_wait(
    http: &reqwest::Client,
    at: &QpServe,
    agent: &str,
    id: &str,
) -> tokio::task::JoinHandle<(Instant, Value)> {
    let (http, url, agent) = (
        http.clone(),
        format!("{}/api/agent/questions/{id}/wait?timeout=30", at.base),
        agent.to_string(),
    );
    tokio::spawn(async move {
        let q: Value = http
            .get(url)
            .bearer_auth(agent)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (Instant::now(), q)
    })
}

/// Returns once `at` holds a parked long-poll (so an answer then wakes it
/// instead of being read by it).
async fn until_parked(http: &reqwest::Client, at: &QpServe) {
    let t = Instant::now();
    while parked(http, at).await < 1.0 {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{} never parked the wait",
            at.base
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

const TWO_OPTIONS: fn() -> Value = || json!({"prompt": "Deploy?", "options": [{"value": "approve", "label": "Approve"}, {"value": "deny", "label": "Deny"}], "responder_scope": "room"});

/// Ask on A, wait on B, answer on A: B's long-poll is released within
/// 50 ms at the 99th percentile, over 1,000 rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn a_waiter_on_one_instance_is_released_by_an_answer_on_the_other() {
    let w = world(None);
    let (a, b) = (Instance::start(&w.db), Instance::start(&w.db));
    let http = http();
    let mut latencies = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
        let waiter = spawn_wait(&http, &b, &w.agent, &id);
        // Answer only once B holds the long-poll (else it would read the
        // answer instead of being woken by it).
        until_parked(&http, &b).await;
        let (status, _) = answer(&http, &a.base, &w.bob, &id, "approve")
            .await
            .unwrap();
        assert_eq!(status, 200);
        let answered_at = Instant::now();
        let (released_at, q) = waiter.await.unwrap();
        assert_eq!(q["state"], "answered", "{q}");
        assert_eq!(q["answer"]["value"], "approve");
        latencies.push(released_at.saturating_duration_since(answered_at));
    }
    latencies.sort();
    let p99 = percentile(&latencies, 0.99);
    eprintln!(
        "cross-instance release over {} rounds: p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        percentile(&latencies, 0.5),
        p99,
        latencies.last().unwrap()
    );
    assert!(p99 < Duration::from_millis(50), "p99 {p99:?}");
}

/// A person's feed waiting on B is woken by a question for their room
/// asked on A (the ask's notice names the room whose members' feeds it
/// wakes), at once, not at its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn a_feed_on_one_instance_is_woken_by_an_ask_on_the_other() {
    let w = world(None);
    let (a, b) = (Instance::start(&w.db), Instance::start(&w.db));
    let http = http();
    let feed = |since: Option<String>| {
        let url = match since {
            Some(v) => format!("{}/api/questions/pending/wait?since={v}&timeout=20", b.base),
            None => format!("{}/api/questions/pending/wait", b.base),
        };
        http.get(url).bearer_auth(&w.bob).send()
    };
    let now: Value = feed(None).await.unwrap().json().await.unwrap();
    let version = now["version"].as_str().unwrap().to_string();
    let held = tokio::spawn(feed(Some(version.clone())));
    until_parked(&http, &b).await;
    let asked_at = Instant::now();
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let body: Value = held.await.unwrap().unwrap().json().await.unwrap();
    let took = asked_at.elapsed();
    assert_ne!(body["version"], version.as_str(), "{body}");
    assert!(
        body["questions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|q| q["id"] == id.as_str()),
        "{body}"
    );
    assert!(took < Duration::from_secs(2), "woken after {took:?}");
}

/// 200 concurrent answers, half through each instance: one winner, which
/// every caller sees, and one `question.answered` webhook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn two_hundred_concurrent_answers_across_instances_have_one_winner() {
    let (addr, got) = start_receiver().await;
    let w = world(Some(addr));
    let (a, b) = (Instance::start(&w.db), Instance::start(&w.db));
    let http = http();
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let mut calls = Vec::new();
    for i in 0..200 {
        let (http, at) = (
            http.clone(),
            if i % 2 == 0 {
                a.base.clone()
            } else {
                b.base.clone()
            },
        );
        let token = if i % 4 < 2 {
            w.alice.clone()
        } else {
            w.bob.clone()
        };
        let value = if i % 3 == 0 { "approve" } else { "deny" };
        let id = id.clone();
        calls.push(tokio::spawn(async move {
            answer(&http, &at, &token, &id, value).await.unwrap()
        }));
    }
    let mut winners = HashMap::new();
    for c in calls {
        let (status, q) = c.await.unwrap();
        assert_eq!(status, 200, "{q}");
        assert_eq!(q["state"], "answered");
        *winners
            .entry((
                q["answer"]["value"].to_string(),
                q["responder"]["id"].to_string(),
                q["answered_at"].to_string(),
            ))
            .or_insert(0) += 1;
    }
    assert_eq!(
        winners.len(),
        1,
        "every caller sees the same winner: {winners:?}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answered: Vec<_> = got
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, event, q)| event == "question.answered" && *q == id)
        .cloned()
        .collect();
    assert_eq!(answered.len(), 1, "{answered:?}");
}

/// Answers pour into both instances; A is killed (-9) in the middle. Every
/// answer acknowledged with 200 is in the database as answered with that
/// value, and B delivers every webhook A had queued: each delivery id
/// arrives, and none twice except a delivery A was sending when it died.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn killing_an_instance_loses_no_acknowledged_answer_and_no_webhook() {
    let (addr, got) = start_receiver().await;
    let w = world(Some(addr));
    let (mut a, b) = (Instance::start(&w.db), Instance::start(&w.db));
    let http = http();
    let mut ids = Vec::new();
    for i in 0..120 {
        let at = if i % 2 == 0 { &a } else { &b };
        ids.push(ask(&http, at, &w.agent, TWO_OPTIONS()).await);
    }
    // The storm: each question answered once, alternately through A and B.
    let mut calls = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let (http, at, token, id) = (
            http.clone(),
            if i % 2 == 0 {
                a.base.clone()
            } else {
                b.base.clone()
            },
            w.bob.clone(),
            id.clone(),
        );
        let value = if i % 3 == 0 { "approve" } else { "deny" };
        calls.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2 * i as u64)).await;
            (
                id.clone(),
                value,
                answer(&http, &at, &token, &id, value).await,
            )
        }));
    }
    tokio::time::sleep(Duration::from_millis(120)).await;
    a.kill();
    let mut acknowledged = Vec::new();
    for c in calls {
        if let (id, value, Ok((200, q))) = c.await.unwrap() {
            assert_eq!(q["answer"]["value"], value);
            acknowledged.push((id, value));
        }
    }
    assert!(
        acknowledged.len() >= 60,
        "B acknowledged its half: {}",
        acknowledged.len()
    );
    let conn = common::connect(&w.db);
    for (id, value) in &acknowledged {
        let q = qp_server::store::questions::get(&conn, id)
            .unwrap()
            .unwrap();
        assert_eq!(q.question.state.as_str(), "answered", "{id}");
        assert_eq!(
            q.question.answer.as_ref().and_then(|a| a.value.as_deref()),
            Some(*value)
        );
    }
    // Every delivery queued (by A or B) arrives; B takes over A's after
    // A's lease (the webhook timeout + 5 s) ends.
    let queued: Vec<String> = conn
        .query_map("SELECT id FROM webhook_deliveries", &[], |r| r.get(0))
        .unwrap();
    assert!(queued.len() >= acknowledged.len());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pending: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM webhook_deliveries WHERE state <> 'delivered'",
                &[],
                |r| r.get(0),
            )
            .unwrap();
        if pending == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{pending} deliveries never delivered"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let got = got.lock().unwrap().clone();
    let mut per_id: HashMap<&str, usize> = HashMap::new();
    for (delivery, _, _) in &got {
        *per_id.entry(delivery.as_str()).or_default() += 1;
    }
    for id in &queued {
        assert!(
            per_id.contains_key(id.as_str()),
            "delivery {id} never arrived"
        );
    }
    // A delivers one at a time: at most the one in flight at the kill can
    // have arrived twice (receivers dedupe on X-QP-Delivery for that).
    let twice = per_id.values().filter(|n| **n > 1).count();
    assert!(twice <= 1, "{twice} deliveries arrived more than once");
    drop(b);
}

/// A question that expires while both instances sweep is expired once and
/// fires one `question.expired` webhook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_expiry_is_swept_once_across_instances() {
    let (addr, got) = start_receiver().await;
    let w = world(Some(addr));
    let (a, b) = (Instance::start(&w.db), Instance::start(&w.db));
    let http = http();
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    // Move the deadline into the past, as a minute's wait would.
    let conn = common::connect(&w.db);
    let body: String = conn
        .query_row(
            "SELECT body FROM questions WHERE id = ?1",
            qp_server::params![id],
            |r| r.get(0),
        )
        .unwrap();
    let mut body: Value = serde_json::from_str(&body).unwrap();
    let past = chrono::Utc::now().timestamp() - 1;
    body["expires_at"] = json!(qp_core::protocol::time::format(
        &chrono::DateTime::from_timestamp(past, 0).unwrap()
    ));
    conn.execute(
        "UPDATE questions SET expires_at = ?2, body = ?3 WHERE id = ?1",
        qp_server::params![id, past, body.to_string()],
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !got
        .lock()
        .unwrap()
        .iter()
        .any(|(_, e, q)| e == "question.expired" && *q == id)
    {
        assert!(Instant::now() < deadline, "no question.expired webhook");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Both keep sweeping (every 100 ms) for a while: still one.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let expired = got
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, e, q)| e == "question.expired" && *q == id)
        .count();
    assert_eq!(expired, 1);
    let queued: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE event = 'question.expired'",
            &[],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(queued, 1);
    drop((a, b));
}

/// The pending-question quota is in the database: it holds exactly across
/// instances, even for asks racing on both. The ask rate limit is each
/// instance's own (documented): an agent gets at most the burst from each,
/// so N instances allow N times the burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn the_quota_holds_across_instances_and_the_rate_limit_is_per_instance() {
    let w = world(None);
    let http = http();
    {
        let (a, b) = (
            Instance::start_with(&w.db, ["1000000", "1000000", "5"]),
            Instance::start_with(&w.db, ["1000000", "1000000", "5"]),
        );
        let mut calls = Vec::new();
        for i in 0..40 {
            let (http, at, agent) = (
                http.clone(),
                if i % 2 == 0 {
                    a.base.clone()
                } else {
                    b.base.clone()
                },
                w.agent.clone(),
            );
            calls.push(tokio::spawn(async move {
                common::ask_at(&http, &at, &agent, &TWO_OPTIONS()).await
            }));
        }
        let mut created = 0;
        for c in calls {
            match c.await.unwrap() {
                (201, _) => created += 1,
                (429, e) => assert_eq!(e["code"], "quota_exceeded", "{e}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(created, 5, "exactly the quota, across both instances");
    }
    // Free the quota, then the rate limit: burst 3 on each instance.
    let conn = common::connect(&w.db);
    conn.execute("UPDATE questions SET state = 'cancelled'", &[])
        .unwrap();
    let (a, b) = (
        Instance::start_with(&w.db, ["1", "3", "1000000"]),
        Instance::start_with(&w.db, ["1", "3", "1000000"]),
    );
    for at in [&a, &b] {
        let mut statuses = Vec::new();
        for _ in 0..6 {
            let (status, body) = common::ask_at(&http, &at.base, &w.agent, &TWO_OPTIONS()).await;
            if status == 429 {
                assert_eq!(body["code"], "rate_limited", "{body}");
            }
            statuses.push(status);
        }
        assert_eq!(statuses, [201, 201, 201, 429, 429, 429], "{}", at.base);
    }
}

// How asks hold the quota on PostgreSQL without waiting for each other
// (store/questions.rs, `insert_asked_pg`): far from the quota an ask takes
// the agent's lock shared and keeps `max_connections` of headroom; near it,
// the ask takes the lock exclusive and counts exactly.

/// The server's `max_connections`: the headroom asks far from the quota keep.
fn max_connections(conn: &qp_server::store::Conn) -> i64 {
    conn.query_row(
        "SELECT CAST(current_setting('max_connections') AS BIGINT)",
        &[],
        |r| r.get(0),
    )
    .unwrap()
}

/// A transaction held open on a connection of its own (a thread of its
/// own: the sync client cannot run inside the test's runtime), with `sql`
/// (one text parameter) run in it. Dropped, it rolls back.
struct Held(std::sync::mpsc::Sender<Then>);

type Then = (&'static str, String, std::sync::mpsc::Sender<()>);

impl Held {
    fn open(db: &Database, sql: &'static str, arg: String) -> Held {
        let (then, next) = std::sync::mpsc::channel::<Then>();
        let (ready, started) = std::sync::mpsc::channel();
        let db = db.clone();
        std::thread::spawn(move || {
            let conn = qp_server::store::connect(&db).unwrap();
            let tx = conn.transaction().unwrap();
            tx.execute(sql, qp_server::params![arg]).unwrap();
            ready.send(()).unwrap();
            if let Ok((sql, arg, done)) = next.recv() {
                tx.execute(sql, qp_server::params![arg]).unwrap();
                tx.commit().unwrap();
                let _ = done.send(());
            } // else dropped: rolled back
        });
        started.recv().unwrap();
        Held(then)
    }

    /// Runs one more statement in the transaction, and commits it.
    fn commit_after(self, sql: &'static str, arg: String) {
        let (done, committed) = std::sync::mpsc::channel();
        self.0.send((sql, arg, done)).unwrap();
        committed.recv().expect("the held transaction failed");
    }
}

/// Returns once `n` connections named `name` wait on a lock of this kind
/// (`pg_stat_activity.wait_event`: `advisory`, or `transactionid` for a row
/// another transaction holds).
async fn until_waiting(conn: &qp_server::store::Conn, name: &str, event: &str, n: i64) {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let waiting: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = ?1
                   AND wait_event_type = 'Lock' AND wait_event = ?2",
                qp_server::params![name, event],
                |r| r.get(0),
            )
            .unwrap();
        if waiting >= n {
            return;
        }
        assert!(Instant::now() < until, "never {n} asks waiting on {event}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What an ask near the quota takes.
const EXCLUSIVE: &str = "SELECT pg_advisory_xact_lock(hashtextextended(?1, 0))";

/// Connections named `name` waiting on a lock that have written something
/// (a transaction id is assigned at the first write).
fn writers_waiting(conn: &qp_server::store::Conn, name: &str) -> i64 {
    conn.query_row(
        "SELECT COUNT(*) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = ?1
           AND wait_event_type = 'Lock' AND backend_xid IS NOT NULL",
        qp_server::params![name],
        |r| r.get(0),
    )
    .unwrap()
}

fn spawn_ask(
    http: &reqwest::Client,
    at: &QpServe,
    room_code: &str,
    agent: &str,
) -> tokio::task::JoinHandle<(u16, Value)> {
    let (http, url, agent) = (
        http.clone(),
        format!("{}/api/agent/rooms/{room_code}/questions", at.base),
        agent.to_string(),
    );
    tokio::spawn(async move {
        let r = http
            .post(url)
            .bearer_auth(agent)
            .json(&TWO_OPTIONS())
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    })
}

fn pending_questions(conn: &qp_server::store::Conn) -> i64 {
    conn.query_row(
        "SELECT COUNT(*) FROM questions WHERE state = 'pending'",
        &[],
        |r| r.get(0),
    )
    .unwrap()
}

fn assert_quota_exceeded(status: u16, body: &Value) {
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("quota_exceeded")),
        "{body}"
    );
}

fn agent_id(conn: &qp_server::store::Conn) -> String {
    conn.query_row("SELECT id FROM agents", &[], |r| r.get(0))
        .unwrap()
}

/// An ask far from the quota still takes the agent's lock (shared): while an
/// ask near the quota holds it exclusive, counting, the ask waits instead of
/// writing a row that count would miss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_ask_far_from_the_quota_waits_while_one_near_it_counts() {
    let w = world(None);
    let conn = common::connect(&w.db);
    let a = Instance::start_named(&w.db, ["1000000", "1000000", "1000000"], "asker");
    let http = http();
    // What an ask near the quota holds while it counts.
    let counting = Held::open(&w.db, EXCLUSIVE, agent_id(&conn));
    let far = spawn_ask(&http, &a, "OPS123", &w.agent);
    until_waiting(&conn, "asker", "advisory", 1).await;
    assert_eq!(
        writers_waiting(&conn, "asker"),
        0,
        "the ask wrote before it took the lock"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!far.is_finished(), "the ask wrote while an exact count ran");
    drop(counting);
    let (status, body) = far.await.unwrap();
    assert_eq!(status, 201, "{body}");
}

/// An ask that waited for the lock counts what committed while it waited:
/// exclusive asks fill the quota meanwhile (here, one transaction writing
/// that many), and the ask is refused instead of writing on a count taken
/// before it waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_ask_counts_what_committed_while_it_waited_for_the_lock() {
    ask_while_the_quota_fills(None, Way::Shared).await;
}

/// The same when the database's default isolation is REPEATABLE READ (a
/// transaction's snapshot would then be taken at its first statement, the
/// lock's, before the wait): the store says READ COMMITTED itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_ask_counts_what_committed_while_it_waited_whatever_the_default_isolation() {
    for way in [Way::Shared, Way::Exclusive] {
        ask_while_the_quota_fills(Some("repeatable read"), way).await;
    }
}

/// Which lock the ask that waits takes first.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    /// Shared: the quota is above `max_connections`, nothing is pending.
    Shared,
    /// Exclusive: the quota is at most `max_connections` and the instance
    /// has seen it (one ask before), so it goes straight to exclusive.
    Exclusive,
}

async fn ask_while_the_quota_fills(default_isolation: Option<&str>, way: Way) {
    let w = world(None);
    let conn = common::connect(&w.db);
    if let Some(level) = default_isolation {
        set_default_isolation(&conn, level);
    }
    let quota = match way {
        Way::Shared => max_connections(&conn) + 1,
        Way::Exclusive => 3,
    };
    let a = Instance::start_named(&w.db, ["1000000", "1000000", &quota.to_string()], "asker");
    let http = http();
    let mut filled = quota;
    if way == Way::Exclusive {
        let (status, body) = spawn_ask(&http, &a, "OPS123", &w.agent).await.unwrap();
        assert_eq!(status, 201, "{body}");
        filled -= 1;
    }
    let counting = Held::open(&w.db, EXCLUSIVE, agent_id(&conn));
    // Under the quota when it starts.
    let far = spawn_ask(&http, &a, "OPS123", &w.agent);
    until_waiting(&conn, "asker", "advisory", 1).await;
    counting.commit_after(
        "INSERT INTO questions (id, room_id, agent_id, state, scope, expires_at, created_at, body)
         SELECT 'filled-' || g, r.id, a.id, 'pending', 'room', 4102444800, 0, '{}'
         FROM generate_series(CAST(1 AS BIGINT), CAST(CAST(?1 AS TEXT) AS BIGINT)) g, rooms r, agents a
         WHERE r.code = 'OPS123'",
        filled.to_string(),
    );
    let (status, body) = far.await.unwrap();
    assert_quota_exceeded(status, &body);
    assert_eq!(pending_questions(&conn), quota);
}

/// Makes `level` the default isolation of the connections opened from now
/// on to the test's database, as an operator might have set it.
fn set_default_isolation(conn: &qp_server::store::Conn, level: &str) {
    let db: String = conn
        .query_row("SELECT current_database()", &[], |r| r.get(0))
        .unwrap();
    conn.batch(&format!(
        "ALTER DATABASE \"{db}\" SET default_transaction_isolation TO '{level}'"
    ))
    .unwrap();
}

/// The isolation the store works at, whatever a database defaults to: each
/// connection sets READ COMMITTED for its session, and each transaction
/// says it again in its BEGIN (which is what holds behind a pooler in
/// transaction mode, where a session setting may not follow the client).
#[test]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
fn the_store_works_at_read_committed_whatever_the_default_isolation() {
    let w = world(None);
    set_default_isolation(&common::connect(&w.db), "serializable");
    let isolation = |c: &qp_server::store::Conn| -> String {
        c.query_row(
            "SELECT current_setting('transaction_isolation')",
            &[],
            |r| r.get(0),
        )
        .unwrap()
    };
    let conn = common::connect(&w.db);
    assert_eq!(isolation(&conn), "read committed", "a single statement");
    // As if the session setting had not followed the client.
    conn.batch("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        .unwrap();
    assert_eq!(isolation(&conn), "serializable");
    let tx = conn.transaction().unwrap();
    assert_eq!(isolation(&*tx), "read committed", "a transaction");
}

/// A database whose default isolation is not READ COMMITTED is named at
/// start, with the setting that fixes it: behind a pooler in transaction
/// mode the session setting does not hold for single statements.
#[test]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
fn a_default_isolation_other_than_read_committed_is_warned_about_at_start() {
    let w = world(None);
    let warning = |qp: &QpServe| {
        qp.startup_log
            .iter()
            .find(|l| l.contains("default_transaction_isolation"))
            .cloned()
    };
    let conn = common::connect(&w.db);
    // READ UNCOMMITTED is READ COMMITTED in PostgreSQL: nothing to say.
    for level in ["read committed", "read uncommitted"] {
        set_default_isolation(&conn, level);
        let quiet = Instance::start(&w.db);
        assert_eq!(warning(&quiet), None, "{level}: {:?}", quiet.startup_log);
    }
    set_default_isolation(&conn, "repeatable read");
    let warned = Instance::start(&w.db);
    let line = warning(&warned).unwrap_or_else(|| panic!("no warning in {:?}", warned.startup_log));
    let role: String = conn
        .query_row("SELECT CAST(current_user AS TEXT)", &[], |r| r.get(0))
        .unwrap();
    for says in [
        "WARN",
        "is repeatable read, not read committed",
        "pool_mode = transaction",
        &format!("ALTER ROLE \"{role}\" SET default_transaction_isolation = 'read committed'"),
    ] {
        assert!(line.contains(says), "{says:?} not in {line}");
    }
}

/// An answer whose question's row another transaction changed while the
/// answer waited for it, on a database defaulting to REPEATABLE READ: the
/// answer's single statement must re-read the row (READ COMMITTED) instead
/// of failing with a serialization error, a 500 to the person answering.
/// Asserts that the answer gets 200 and the question in `expected_state`,
/// and that the database holds it in that state.
async fn answer_after_a_racing_write(racing_write: &'static str, expected_state: &str) {
    let w = world(None);
    let conn = common::connect(&w.db);
    set_default_isolation(&conn, "repeatable read");
    let a = Instance::start_named(&w.db, ["1000000", "1000000", "1000"], "answerer");
    let http = http();
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let racing = Held::open(&w.db, racing_write, id.clone());
    let answering = {
        let (http, base, alice, id) = (http.clone(), a.base.clone(), w.alice.clone(), id.clone());
        tokio::spawn(async move { answer(&http, &base, &alice, &id, "approve").await.unwrap() })
    };
    until_waiting(&conn, "answerer", "transactionid", 1).await;
    racing.commit_after("SELECT CAST(?1 AS TEXT)", String::new());
    let (status, body) = answering.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let stored: String = conn
        .query_row(
            "SELECT state FROM questions WHERE id = ?1",
            qp_server::params![id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        (body["state"].as_str(), stored.as_str()),
        (Some(expected_state), expected_state),
        "the answer's reply, then the database"
    );
}

/// The racing write left the question pending: the answer wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_answer_that_waited_for_the_row_answers_whatever_the_default_isolation() {
    answer_after_a_racing_write("UPDATE questions SET body = body WHERE id = ?1", "answered").await;
}

/// The racing write resolved the question (cancelled it, as a racing cancel
/// or answer on another instance would): the answer loses cleanly, told the
/// question's state, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_answer_that_lost_the_race_while_waiting_loses_cleanly_whatever_the_default_isolation() {
    answer_after_a_racing_write(
        "UPDATE questions SET state = 'cancelled',
                body = replace(body, '\"state\":\"pending\"', '\"state\":\"cancelled\"')
         WHERE id = ?1",
        "cancelled",
    )
    .await;
}

/// An ask near the quota waits for the asks in flight far from it (their
/// rows are not visible to its count until they commit), then counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_ask_near_the_quota_waits_for_the_asks_in_flight() {
    let w = world(None);
    let conn = common::connect(&w.db);
    let agent = agent_id(&conn);
    let two = identity::create_room(&*conn, "Two", Some("TWO123")).unwrap();
    identity::allow_agent_room(&*conn, &agent, &two.id).unwrap();
    let ops: String = conn
        .query_row("SELECT id FROM rooms WHERE code = 'OPS123'", &[], |r| {
            r.get(0)
        })
        .unwrap();
    // The quota leaves room for exactly one ask at a count of 0 on the
    // shared path (0 + max_connections < quota), none from 1 on.
    let quota = (max_connections(&conn) + 1).to_string();
    let a = Instance::start_named(&w.db, ["1000000", "1000000", &quota], "asker");
    let http = http();
    // An ask in flight: its row is written, and the foreign key check at the
    // end of its statement waits for the room's row, locked here.
    let room_locked = Held::open(&w.db, "SELECT id FROM rooms WHERE id = ?1 FOR UPDATE", ops);
    let in_flight = spawn_ask(&http, &a, "OPS123", &w.agent);
    until_waiting(&conn, "asker", "transactionid", 1).await;
    // One more, in the other room, committed: the next ask counts 1, so it
    // is near the quota and counts exactly.
    let (status, body) = spawn_ask(&http, &a, "TWO123", &w.agent).await.unwrap();
    assert_eq!(status, 201, "{body}");
    let near = spawn_ask(&http, &a, "TWO123", &w.agent);
    until_waiting(&conn, "asker", "advisory", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !near.is_finished(),
        "the exact count ran with an ask in flight"
    );
    drop(room_locked);
    for ask in [in_flight, near] {
        let (status, body) = ask.await.unwrap();
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(pending_questions(&conn), 3);
}

/// Asks racing on two instances across the line between the two ways (the
/// first few far from the quota, the rest near it) stop exactly at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn racing_asks_stop_exactly_at_a_quota_above_max_connections() {
    use futures_util::StreamExt;
    let w = world(None);
    let conn = common::connect(&w.db);
    let quota = max_connections(&conn) + 8;
    let limits = ["1000000", "1000000", &quota.to_string()];
    let (a, b) = (
        Instance::start_with(&w.db, limits),
        Instance::start_with(&w.db, limits),
    );
    let http = http();
    let statuses: Vec<u16> = futures_util::stream::iter(0..quota + 24)
        .map(|i| {
            let at = if i % 2 == 0 { &a } else { &b };
            let ask = spawn_ask(&http, at, "OPS123", &w.agent);
            async move {
                let (status, body) = ask.await.unwrap();
                if status != 201 {
                    assert_quota_exceeded(status, &body);
                }
                status
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let created = statuses.iter().filter(|s| **s == 201).count() as i64;
    assert_eq!(created, quota, "exactly the quota, across both instances");
    assert_eq!(pending_questions(&conn), quota);
}

/// B loses every database connection (PostgreSQL terminates them, as a
/// failover or a restart would) while a long-poll is parked on it, and the
/// answer is given on A meanwhile: B reconnects, listens again, re-checks
/// its parked question and releases the waiter; then serves as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_instance_that_loses_its_database_reconnects_without_losing_wake_ups() {
    let w = world(None);
    let limits = ["1000000", "1000000", "1000000"];
    let a = Instance::start(&w.db);
    let b = Instance::start_named(&w.db, limits, "qp_b");
    let http = http();
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let waiter = spawn_wait(&http, &b, &w.agent, &id);
    until_parked(&http, &b).await;
    let conn = common::connect(&w.db);
    let killed: i64 = conn
        .query_row(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'qp_b'",
            &[],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        killed >= 2,
        "B's listener and its pool connection: {killed}"
    );
    // Answered while B hears nothing.
    let (status, _) = answer(&http, &a.base, &w.bob, &id, "approve")
        .await
        .unwrap();
    assert_eq!(status, 200);
    let answered_at = Instant::now();
    let (released_at, q) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter on B was never released")
        .unwrap();
    assert_eq!(q["state"], "answered", "{q}");
    eprintln!(
        "released after the reconnect in {:?}",
        released_at.saturating_duration_since(answered_at)
    );
    // B's database threads connect again: each pool connection that was
    // cut (all but the listener's) fails at most the one request that
    // meets it (503 with Retry-After: the client retries), and then B
    // works as before.
    let mut statuses = Vec::new();
    while !statuses.ends_with(&[201, 201, 201, 201]) {
        assert!(statuses.len() < 40, "B did not recover: {statuses:?}");
        let r = http
            .post(format!("{}/api/agent/rooms/OPS123/questions", b.base))
            .bearer_auth(&w.agent)
            .json(&TWO_OPTIONS())
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    let failed = statuses.iter().filter(|s| **s == 503).count();
    let cut_pool = usize::try_from(killed - 1).unwrap();
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 503) && failed <= cut_pool,
        "{failed} failed with {cut_pool} pool connections cut: {statuses:?}"
    );
}

async fn keyed_answer(
    http: &reqwest::Client,
    at: &str,
    token: &str,
    id: &str,
    value: &str,
    key: &str,
) -> (u16, String) {
    common::answer_at(http, at, token, id, value, Some(key))
        .await
        .unwrap()
}

/// An answer retried with its Idempotency-Key through the other instance
/// gets the stored response, byte for byte, even when the two race.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn idempotency_keys_hold_across_instances() {
    let w = world(None);
    let (a, b) = (Instance::start(&w.db), Instance::start(&w.db));
    let http = http();
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let first = keyed_answer(&http, &a.base, &w.bob, &id, "approve", "k-1").await;
    assert_eq!(first.0, 200);
    let replay = keyed_answer(&http, &b.base, &w.bob, &id, "deny", "k-1").await;
    assert_eq!(replay, first, "the stored response, not a new answer");
    let other = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let reused = keyed_answer(&http, &b.base, &w.bob, &other, "approve", "k-1").await;
    assert_eq!(reused.0, 422, "{}", reused.1);
    // The same retry sent to both at once.
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let (x, y) = tokio::join!(
        keyed_answer(&http, &a.base, &w.bob, &id, "deny", "k-2"),
        keyed_answer(&http, &b.base, &w.bob, &id, "deny", "k-2"),
    );
    assert_eq!((x.0, y.0), (200, 200));
    let (x, y): (Value, Value) = (
        serde_json::from_str(&x.1).unwrap(),
        serde_json::from_str(&y.1).unwrap(),
    );
    assert_eq!(x, y);
    assert_eq!(x["answer"]["value"], "deny");
}

/// One phone registering through both instances at once (a retry racing
/// the first try): every call succeeds and the phone is one device.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn one_phone_registering_through_both_instances_at_once_is_one_device() {
    let w = world(None);
    let (a, b) = (Instance::start(&w.db), Instance::start(&w.db));
    let http = http();
    for round in 0..10 {
        // An APNs token is hex: 64 digits, one set per round.
        let token = format!("{round:02x}").repeat(32);
        let mut calls = Vec::new();
        for at in [&a.base, &b.base, &a.base, &b.base] {
            let (http, url, user, token) = (
                http.clone(),
                format!("{at}/api/devices"),
                w.bob.clone(),
                token.clone(),
            );
            calls.push(tokio::spawn(async move {
                let r = http
                    .post(url)
                    .bearer_auth(user)
                    .json(&json!({"platform": "ios", "push_token": token, "app_id": "io.qp.app"}))
                    .send()
                    .await
                    .unwrap();
                (r.status().as_u16(), r.json::<Value>().await.unwrap())
            }));
        }
        let mut ids = std::collections::HashSet::new();
        for c in calls {
            let (status, device) = c.await.unwrap();
            assert!(status == 200 || status == 201, "{status} {device}");
            ids.insert(device["id"].as_str().unwrap().to_string());
        }
        assert_eq!(ids.len(), 1, "one device: {ids:?}");
    }
}

/// Issue 34 (PgBouncer): `--db-direct` names the same database reached
/// without a pooler, and the instance LISTENs there, never through `--db`
/// (a transaction-mode pooler would swallow LISTEN, and waits would end
/// only at their timeout). The two URLs carry different application names,
/// so PostgreSQL shows which connection listens; a waiter on that instance
/// is released at once by an answer on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn with_db_direct_the_wake_ups_are_heard_on_the_direct_connection() {
    let w = world(None);
    let Database::Postgres(url) = &w.db else {
        unreachable!()
    };
    let a = Instance::start_named(&w.db, ["1000000", "1000000", "1000000"], "qp-a");
    let direct = format!("{url}?application_name=qp-direct");
    let pooled = format!("{url}?application_name=qp-pooled");
    let b = QpServe::start(&["--db", &pooled, "--db-direct", &direct]);
    let conn = common::connect(&w.db);
    let listeners: Vec<String> = conn
        .query_map(
            "SELECT application_name FROM pg_stat_activity
             WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
            &[],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        listeners.iter().any(|n| n == "qp-direct"),
        "no LISTEN on the direct URL: {listeners:?}"
    );
    assert!(
        !listeners.iter().any(|n| n == "qp-pooled"),
        "a LISTEN went through --db: {listeners:?}"
    );
    let pool: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'qp-pooled'",
            &[],
            |r| r.get(0),
        )
        .unwrap();
    assert!(pool >= 1, "the requests do not use --db");

    let http = http();
    let id = ask(&http, &a, &w.agent, TWO_OPTIONS()).await;
    let waiter = spawn_wait(&http, &b, &w.agent, &id);
    until_parked(&http, &b).await;
    let (status, _) = answer(&http, &a.base, &w.bob, &id, "approve")
        .await
        .unwrap();
    assert_eq!(status, 200);
    let answered = Instant::now();
    let (released, q) = waiter.await.unwrap();
    assert_eq!(q["state"], "answered", "{q}");
    assert!(
        released.saturating_duration_since(answered) < Duration::from_secs(10),
        "released only at the long-poll's timeout: the wake-up was not heard"
    );
}

/// `db_direct` naming another database than `db` would start fine, and its
/// waits would then end only at their timeout. At start-up a NOTIFY sent
/// through `db` must reach the LISTEN on `db_direct`; when it does not,
/// `qp serve` refuses to start, saying so.
#[test]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
fn db_direct_naming_another_database_is_refused_at_start_up() {
    let w = world(None);
    let other_dir = tempfile::tempdir().unwrap();
    let Database::Postgres(other) = common::test_database(other_dir.path()) else {
        unreachable!()
    };
    let Database::Postgres(url) = &w.db else {
        unreachable!()
    };
    let stderr = refused_start(&["--db", url, "--db-direct", &other]);
    assert!(
        stderr.contains("db_direct") && stderr.contains("must name the same database"),
        "{stderr}"
    );
}

/// Instance A has no APNs, B has: the iPhones' pushes of a question asked
/// through A are claimed and delivered by B, none claimed (and parked or
/// failed) by A; the Android phones' go through either.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_instance_without_apns_leaves_the_iphones_pushes_to_one_with_it_on_postgres() {
    common::require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let db = common::test_database(dir.path());
    let (agent, seeded) = fanout::seed_ops_room_on(&db, 20, 1, 1);
    let apns = gateways::apns(Duration::from_millis(5), 100).await;
    let (fcm_a, fcm_b) = (
        gateways::fcm(Duration::ZERO).await,
        gateways::fcm(Duration::ZERO).await,
    );
    let a = fanout::instance_with(&db, dir.path(), None, &fcm_a.url, &[]);
    assert!(
        a.startup_log
            .iter()
            .any(|l| l.contains("delivers pushes for: android")
                && l.contains("not ios (no APNs configured)")
                && l.contains("another instance must")),
        "{:#?}",
        a.startup_log
    );
    // A alone: it claims none of the iPhones' pushes while B is not there.
    let http = http();
    let id = fanout::room_question_at(&http, &a.base, &agent, "Deploy?").await;
    let conn = common::connect(&db);
    fanout::until("A sent the Android pushes", Duration::from_secs(30), || {
        fanout::sent(&conn, &id) == seeded.android.len()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let jobs = qp_server::store::deliveries::push_jobs_of(&conn, &id).unwrap();
    assert!(
        jobs.iter().all(|j| j.state != "failed" && j.attempts <= 1),
        "A tried an iPhone's push: {jobs:#?}"
    );
    let b = fanout::instance(&db, dir.path(), &apns.url, &fcm_b.url, &[]);
    fanout::until(
        "B sent the iPhones' pushes",
        Duration::from_secs(30),
        || fanout::sent(&conn, &id) == seeded.len(),
    )
    .await;
    let per = fanout::accepted_per_device(Some(&apns), None, &id);
    assert_eq!(per.len(), seeded.ios.len(), "iPhones not reached");
    assert!(per.values().all(|n| *n == 1), "an iPhone got it twice");
    let jobs = qp_server::store::deliveries::push_jobs_of(&conn, &id).unwrap();
    assert!(
        jobs.iter().all(|j| j.state == "sent" && j.attempts == 1),
        "{jobs:#?}"
    );
    drop((a, b));
}

/// A push no instance routes is not left queued for good: an iPhone's,
/// with only an instance without APNs, is left alone while another
/// instance may come for it, then claimed and given up by that one once it
/// has waited `UNROUTED_AFTER`, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn a_push_no_instance_routes_is_given_up_not_left_queued_on_postgres() {
    use qp_server::store::sql::{Param, Sql};
    common::require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let db = common::test_database(dir.path());
    let (agent, seeded) = fanout::seed_ops_room_on(&db, 3, 1, 1);
    let fcm = gateways::fcm(Duration::ZERO).await;
    let a = fanout::instance_with(&db, dir.path(), None, &fcm.url, &[]);
    let id = fanout::room_question_at(&http(), &a.base, &agent, "Deploy?").await;
    let conn = common::connect(&db);
    fanout::until("the Android pushes sent", Duration::from_secs(30), || {
        fanout::sent(&conn, &id) == seeded.android.len()
    })
    .await;
    let untried = |conn: &qp_server::store::Conn| {
        qp_server::store::deliveries::push_jobs_of(conn, &id)
            .unwrap()
            .into_iter()
            .filter(|j| j.state == "queued" && j.attempts == 0)
            .count()
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        untried(&conn),
        seeded.ios.len(),
        "an iPhone's push was tried"
    );
    // Queued longer ago than an instance leaves them to the others.
    let past = qp_server::store::deliveries::UNROUTED_AFTER.as_millis() as i64 + 1_000;
    conn.execute(
        "UPDATE push_jobs SET created_at = created_at - ?1 WHERE question_id = ?2",
        &[Param::Int(past), Param::Text(&id)],
    )
    .unwrap();
    fanout::until("the iPhones' pushes tried", Duration::from_secs(30), || {
        untried(&conn) == 0
    })
    .await;
    let errors: Vec<String> = conn
        .query(
            "SELECT last_error FROM push_jobs WHERE question_id = ?1 AND last_error IS NOT NULL",
            &[Param::Text(&id)],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0).unwrap())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no ios transport configured")),
        "{errors:#?}"
    );
    drop(a);
}

/// Browsers subscribe with the VAPID public key of the instance they
/// reached: a second instance with another key would sign pushes their
/// push services refuse, so it is refused at start, naming the setting;
/// one with a copy of the first's key starts.
#[test]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
fn a_second_instance_with_another_vapid_key_is_refused_on_postgres() {
    common::require_postgres();
    let w = world(None);
    let Database::Postgres(url) = &w.db else {
        unreachable!()
    };
    let dir = tempfile::tempdir().unwrap();
    let key = |name: &str| dir.path().join(name).display().to_string();
    let serve = |vapid: &str| QpServe::start(&["--db", url, "--vapid-key", vapid]);
    let first = serve(&key("a.vapid"));
    let stderr = refused_start(&["--db", url, "--vapid-key", &key("b.vapid")]);
    assert!(
        stderr.contains("vapid_key")
            && stderr.contains("is not the key the other instances on this database use")
            && stderr.contains("same key file"),
        "{stderr}"
    );
    // A copy of the first instance's key is the same key.
    std::fs::copy(key("a.vapid"), key("copy.vapid")).unwrap();
    let second = serve(&key("copy.vapid"));
    drop((first, second));
}

/// `qp serve` (on an ephemeral loopback port) with `args`, which must
/// refuse to start; what it said on stderr.
fn refused_start(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("QP_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "qp serve started: {stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
    stderr
}
