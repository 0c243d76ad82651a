//! `/mcp` sessions belong to the agent that opened
//! them and are bounded; issue 34: they live in the database, so they go
//! on across a restart and across instances. Plain JSON-RPC over real HTTP
//! on loopback (the official SDK's suite, tests/mcp.rs, drives the tools
//! themselves).

mod common;

use std::time::Duration;

use common::{err_code, Fixture};
use serde_json::{json, Value};

const PROTOCOL: &str = "2025-06-18";

/// Sends one JSON-RPC message to /mcp; returns the status, the session id
/// the server named, and the body (an SSE stream read to its end, or JSON).
async fn mcp(
    f: &Fixture,
    method: &str,
    token: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> (u16, Option<String>, String) {
    mcp_at(f, &f.base, method, token, session, body).await
}

/// [`mcp`] to the server at `base` (another instance).
async fn mcp_at(
    f: &Fixture,
    base: &str,
    method: &str,
    token: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> (u16, Option<String>, String) {
    let mut req = f
        .http
        .request(method.parse().unwrap(), format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL);
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    (status, id, resp.text().await.unwrap())
}

/// An `initialize` request with these client capabilities.
fn initialize(capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": capabilities,
        "clientInfo": {"name": "limits-test", "version": "1"}}})
}

/// `initialize` then `notifications/initialized`: a ready session's id.
async fn open(f: &Fixture, token: &str) -> String {
    let (s, id, body) = mcp(f, "POST", token, None, Some(initialize(json!({})))).await;
    assert_eq!(s, 200, "{body}");
    let id = id.expect("a session id");
    let (s, _, body) = mcp(
        f,
        "POST",
        token,
        Some(&id),
        Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    )
    .await;
    assert_eq!(s, 202, "{body}");
    id
}

async fn list_tools(f: &Fixture, token: &str, session: &str) -> (u16, String) {
    list_tools_at(f, &f.base, token, session).await
}

async fn list_tools_at(f: &Fixture, base: &str, token: &str, session: &str) -> (u16, String) {
    let (s, _, body) = mcp_at(
        f,
        base,
        "POST",
        token,
        Some(session),
        Some(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
    )
    .await;
    (s, body)
}

#[tokio::test(flavor = "multi_thread")]
async fn another_agent_cannot_use_or_delete_a_session() {
    let f = Fixture::new().await;
    let a = open(&f, &f.agent_token).await;
    let (s, body) = list_tools(&f, &f.agent_token, &a).await;
    assert_eq!(s, 200);
    assert!(body.contains("ask_question"), "{body}");
    // The report: B, with A's session id, called tools in it and deleted it.
    let (s, body) = list_tools(&f, &f.agent2_token, &a).await;
    assert_eq!(s, 404, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err_code(&body), "not_found");
    assert_eq!(body["field"], "Mcp-Session-Id");
    let (s, _, _) = mcp(&f, "DELETE", &f.agent2_token, Some(&a), None).await;
    assert_eq!(s, 404);
    // A's session is untouched, and A may end it.
    let (s, _) = list_tools(&f, &f.agent_token, &a).await;
    assert_eq!(s, 200);
    let (s, _, _) = mcp(&f, "DELETE", &f.agent_token, Some(&a), None).await;
    assert!((200..300).contains(&s), "{s}");
    let (s, _) = list_tools(&f, &f.agent_token, &a).await;
    assert_eq!(s, 404);
}

/// The report: one agent opened 3,000 sessions (+155 MB).
#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_capped_per_agent() {
    let f = Fixture::with(|s| s.mcp_max_sessions_per_agent = 3).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(open(&f, &f.agent_token).await);
    }
    let (s, _, body) = mcp(
        &f,
        "POST",
        &f.agent_token,
        None,
        Some(initialize(json!({}))),
    )
    .await;
    assert_eq!(s, 429, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err_code(&body), "too_many_sessions");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("mcp_max_sessions_per_agent"));
    // Another agent has its own places; closing one frees one.
    open(&f, &f.agent2_token).await;
    let (s, _, _) = mcp(&f, "DELETE", &f.agent_token, Some(&held[0]), None).await;
    assert!((200..300).contains(&s), "{s}");
    open(&f, &f.agent_token).await;
}

/// The report: every session was kept 20 minutes. Now an idle one goes
/// after mcp_session_idle, while one whose tool call is waiting stays.
#[tokio::test(flavor = "multi_thread")]
async fn idle_sessions_close_and_waiting_ones_stay() {
    let f = Fixture::with(|s| {
        s.mcp_session_idle = Duration::from_secs(1);
        s.mcp_max_sessions_per_agent = 2;
    })
    .await;
    let idle = open(&f, &f.agent_token).await;
    let busy = open(&f, &f.agent_token).await;
    let q = f.ask(json!({"prompt": "Deploy?"})).await;
    let wait = {
        let (http, base, token, busy) = (
            f.http.clone(),
            f.base.clone(),
            f.agent_token.clone(),
            busy.clone(),
        );
        let args = json!({"question_id": q["id"], "wait": 3});
        tokio::spawn(async move {
            http.post(format!("{base}/mcp"))
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", PROTOCOL)
                .header("mcp-session-id", busy)
                .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "wait_for_answer", "arguments": args}}))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (s, _) = list_tools(&f, &f.agent_token, &idle).await;
    assert_eq!(s, 404, "the idle session is still open");
    let result = wait.await.unwrap();
    assert!(result.contains("still_pending"), "{result}");
    let (s, _) = list_tools(&f, &f.agent_token, &busy).await;
    assert_eq!(s, 200, "the session was closed while its tool call waited");
    // The idle session's place is free again.
    open(&f, &f.agent_token).await;
}

/// A GET on a session opens its stream of
/// server messages, held open like a long-poll. rmcp keeps up to 33 of
/// them per session (one, plus 32 "shadow" streams), so an agent held 33
/// connections per session that no cap counted. Now each counts against
/// max_long_polls_per_token, with the agent's waits; closing one frees it.
#[tokio::test(flavor = "multi_thread")]
async fn streams_of_a_session_count_as_long_polls() {
    let f = Fixture::with(|s| s.max_long_polls_per_token = 2).await;
    let session = open(&f, &f.agent_token).await;
    let get = || {
        f.http
            .get(format!("{}/mcp", f.base))
            .bearer_auth(&f.agent_token)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .header("mcp-session-id", &session)
            .send()
    };
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..6 {
        let resp = get().await.unwrap();
        match resp.status().as_u16() {
            200 => held.push(resp),
            429 => {
                let body: Value = resp.json().await.unwrap();
                assert_eq!(err_code(&body), "too_many_long_polls", "{body}");
                refused += 1;
            }
            s => panic!("GET /mcp: {s} {}", resp.text().await.unwrap()),
        }
    }
    assert_eq!((held.len(), refused), (2, 4), "streams held open, refused");
    // The HTTP waits share the budget.
    let q = f.ask(json!({"prompt": "Deploy?"})).await;
    let (s, body) = f
        .call(
            "GET",
            &format!(
                "/api/agent/questions/{}/wait?timeout=1",
                q["id"].as_str().unwrap()
            ),
            Some(&f.agent_token),
            None,
        )
        .await;
    assert_eq!(s, 429, "{body}");
    // A stream closed gives its place back.
    held.pop();
    let t = std::time::Instant::now();
    loop {
        let resp = get().await.unwrap();
        if resp.status() == 200 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "{}", resp.status());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `ask_question` in `session` at `base`: the result's text.
async fn ask_in(f: &Fixture, base: &str, session: &str, prompt: &str) -> (u16, String) {
    let (s, _, body) = mcp_at(
        f,
        base,
        "POST",
        &f.agent_token,
        Some(session),
        Some(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "ask_question", "arguments": {
                "room": f.room_code, "prompt": prompt, "yes_no": true, "wait": 0}}})),
    )
    .await;
    (s, body)
}

/// Sessions live in the database, not in one process's memory,
/// so a client's session goes on after the server restarts (an upgrade, a
/// crash), still bound to its agent; the database keeps only its hash.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_goes_on_after_a_restart_and_stays_its_agents() {
    let mut f = Fixture::new().await;
    let session = open(&f, &f.agent_token).await;
    assert!(
        !common::database_contains(&f, &session),
        "the session id is stored in clear"
    );
    f.restart(|_| {}).await;
    let (s, body) = list_tools(&f, &f.agent2_token, &session).await;
    assert_eq!(s, 404, "another agent used a restored session: {body}");
    let (s, body) = list_tools(&f, &f.agent_token, &session).await;
    assert_eq!(s, 200, "{body}");
    assert!(body.contains("ask_question"), "{body}");
    let (s, body) = ask_in(&f, &f.base, &session, "Deploy after the restart?").await;
    assert_eq!(s, 200, "{body}");
    assert!(body.contains("Deploy after the restart?"), "{body}");
    // Ended by the client: gone for good, restart or not.
    let (s, _, _) = mcp(&f, "DELETE", &f.agent_token, Some(&session), None).await;
    assert!((200..300).contains(&s), "{s}");
    f.restart(|_| {}).await;
    let (s, _) = list_tools(&f, &f.agent_token, &session).await;
    assert_eq!(s, 404);
}

/// Behind a load balancer without stickiness, a session opened
/// on instance A is served by instance B (its tools act as the agent
/// there), the per-agent cap counts the sessions held on both, and a
/// DELETE on B ends the session on A too. PostgreSQL only: two servers
/// never share one SQLite file.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn a_session_opened_on_one_instance_is_served_by_the_other() {
    let f = Fixture::with(|s| s.mcp_max_sessions_per_agent = 2).await;
    assert!(
        f.on_postgres(),
        "needs QP_TEST_POSTGRES: two instances on one PostgreSQL database"
    );
    let mut settings = common::settings_for(f.database.clone());
    settings.mcp_max_sessions_per_agent = 2;
    let b = qp_server::serve::start(settings, None).await.unwrap();
    let b_base = format!("http://{}", b.addr);

    let session = open(&f, &f.agent_token).await;
    let (s, body) = list_tools_at(&f, &b_base, &f.agent_token, &session).await;
    assert_eq!(s, 200, "B does not know A's session: {body}");
    let (s, body) = ask_in(&f, &b_base, &session, "Asked through B?").await;
    assert_eq!(s, 200, "{body}");
    assert!(body.contains("Asked through B?"), "{body}");
    let (s, _) = list_tools_at(&f, &b_base, &f.agent2_token, &session).await;
    assert_eq!(s, 404, "another agent used the session on B");
    // Back and forth: still the one session.
    let (s, _) = list_tools(&f, &f.agent_token, &session).await;
    assert_eq!(s, 200);

    // The cap (2) counts both instances: one more on A, then none on B.
    let _second = open(&f, &f.agent_token).await;
    let (s, _, body) = mcp_at(
        &f,
        &b_base,
        "POST",
        &f.agent_token,
        None,
        Some(initialize(json!({}))),
    )
    .await;
    assert_eq!(s, 429, "{body}");

    // Ended on B: A refuses it as well.
    let (s, _, _) = mcp_at(&f, &b_base, "DELETE", &f.agent_token, Some(&session), None).await;
    assert!((200..300).contains(&s), "{s}");
    // A hears of it by NOTIFY (or at its next stamp): at once, give or
    // take the notification's trip.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        let (s, _) = list_tools(&f, &f.agent_token, &session).await;
        if s == 404 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "A still serves a session ended on B ({s})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (s, _) = list_tools_at(&f, &b_base, &f.agent_token, &session).await;
    assert_eq!(s, 404);
    b.stop().await;
}

/// An agent must not park megabytes per session in the database (its
/// `initialize` parameters are stored for restores): an `initialize` whose
/// parameters exceed 16 KiB is refused, naming the rule, and leaves no
/// session behind.
#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_initialize_is_refused_and_keeps_no_session() {
    let f = Fixture::with(|s| s.mcp_max_sessions_per_agent = 1).await;
    let padding = "x".repeat(32 * 1024);
    let (s, id, body) = mcp(
        &f,
        "POST",
        &f.agent_token,
        None,
        Some(initialize(json!({"experimental": {"pad": {"p": padding}}}))),
    )
    .await;
    assert_eq!(s, 422, "{body}");
    assert!(body.contains("16384"), "{body}");
    assert_eq!(id, None, "a session id for a session that cannot go on");
    let stored: i64 = f
        .db()
        .query_row("SELECT COUNT(*) FROM mcp_sessions", &[], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 0);
    // Its place is free again (the cap is 1): a normal session opens.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (s, _, _) = mcp(
            &f,
            "POST",
            &f.agent_token,
            None,
            Some(initialize(json!({}))),
        )
        .await;
        if s == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place was not freed ({s})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `ask_question` when no device can receive the question
/// answers at once (not after its wait) with the question still pending,
/// `pushed_to_devices: 0` and a warning a model can pass on.
#[tokio::test(flavor = "multi_thread")]
async fn ask_question_says_when_no_device_can_receive_it() {
    let f = Fixture::new().await;
    let session = open(&f, &f.agent_token).await;
    let t = std::time::Instant::now();
    let (s, _, body) = mcp(
        &f,
        "POST",
        &f.agent_token,
        Some(&session),
        Some(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "ask_question", "arguments": {
                "room": f.room_code, "prompt": "Anyone?", "yes_no": true, "wait": 1}}})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    // It waited as asked (someone may answer in the web responder), then
    // said that no push went out.
    assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(body.contains("\"pushed_to_devices\":0"), "{body}");
    assert!(
        body.contains("no device can receive this question"),
        "{body}"
    );
    assert!(body.contains("\"still_pending\":true"), "{body}");
}
