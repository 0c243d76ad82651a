//! Issue 32, finding 8: `/mcp` sessions belong to the agent that opened
//! them and are bounded. Plain JSON-RPC over real HTTP on loopback (the
//! official SDK's suite, tests/mcp.rs, drives the tools themselves).

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
    let mut req = f
        .http
        .request(method.parse().unwrap(), format!("{}/mcp", f.base))
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

/// `initialize` then `notifications/initialized`: a ready session's id.
async fn open(f: &Fixture, token: &str) -> String {
    let (s, id, body) = mcp(
        f,
        "POST",
        token,
        None,
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "limits-test", "version": "1"}}}),
        ),
    )
    .await;
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
    let (s, _, body) = mcp(
        f,
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
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "limits-test", "version": "1"}}}),
        ),
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

/// Issue 32, finding 12, review: a GET on a session opens its stream of
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
