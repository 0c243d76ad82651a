//! qp-client on its own against a stand-in server: a local socket speaking
//! just enough HTTP/1.1 to play the asker routes of the wire API (spec
//! section 7: `POST /api/agent/rooms/{room}/questions`, `GET
//! /api/agent/questions/{id}/wait`, …, and the error body
//! `{"error": {"code", "message", "field"}}`). No qp-server here: this is
//! what a Rust program that asks sees.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use qp_client::protocol::{AskOption, AskRequest, OptionStyle, QuestionState};
use qp_client::{AskerClient, ClientError};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the stand-in server read it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// Path and query, as sent.
    target: String,
    /// Header names in lower case.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// A server that answers each connection with the next scripted reply
/// (status, JSON body) and records what it was sent.
struct StandIn {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl StandIn {
    async fn start(replies: Vec<(u16, Value)>) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    return;
                };
                let (log, replies) = (log.clone(), replies.clone());
                tokio::spawn(async move {
                    let _ = serve_one(conn, log, replies).await;
                });
            }
        });
        StandIn { base, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads one request, writes the next reply and closes the connection.
async fn serve_one(
    mut conn: TcpStream,
    log: Arc<Mutex<Vec<Seen>>>,
    replies: Arc<Mutex<VecDeque<(u16, Value)>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut start = lines.next().unwrap_or_default().split(' ');
    let method = start.next().unwrap_or_default().to_string();
    let target = start.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    while buf.len() < head_end + length {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    log.lock().unwrap().push(Seen {
        method,
        target,
        headers,
        body: buf[head_end..].to_vec(),
    });
    let (status, body) = replies
        .lock()
        .unwrap()
        .pop_front()
        .expect("a reply scripted for every request");
    let body = body.to_string();
    let reply = format!(
        "HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(reply.as_bytes()).await?;
    conn.shutdown().await
}

/// A question as the server writes it.
fn question(id: &str, state: &str) -> Value {
    let mut q = json!({
        "id": id,
        "kind": "question",
        "prompt": "Deploy 2.4 to production?",
        "context": null,
        "options": [
            {"value": "approve", "label": "Approve", "style": "primary",
             "primary": true, "destructive": false},
            {"value": "deny", "label": "Deny", "style": "danger",
             "primary": false, "destructive": true}
        ],
        "text_input": null,
        "responder_scope": "room",
        "target_user_id": null,
        "resolution_policy": "first",
        "state": state,
        "answer": null,
        "expires_at": "2026-06-27T11:30:00Z",
        "resolved_at": null,
        "correlation_id": "rel-2.4",
        "reply_to": null,
        "data": null,
        "created_at": "2026-06-27T10:30:00Z"
    });
    if state == "answered" {
        q["answer"] = json!({
            "value": "approve", "label": "Approve", "text": null,
            "responder": {"id": "u_1", "display_name": "Federica"},
            "answered_at": "2026-06-27T10:31:04Z"
        });
        q["resolved_at"] = json!("2026-06-27T10:31:04Z");
    }
    q
}

/// The error body of the HTTP API (server/src/http/error.rs).
fn error_body(code: &str, message: &str, field: Option<&str>) -> Value {
    json!({
        "code": code, "message": message, "field": field,
        "error": {"code": code, "message": message, "field": field}
    })
}

#[tokio::test]
async fn ask_posts_the_request_with_the_token_and_returns_the_question() {
    let server = StandIn::start(vec![(201, question("q_1", "pending"))]).await;
    // A trailing slash on the URL is fine; the room code is a path segment.
    let client = AskerClient::new(&format!("{}/", server.base), "qpa_secret").unwrap();
    let req = AskRequest {
        prompt: "Deploy 2.4 to production?".into(),
        options: Some(vec![
            AskOption::Bare("approve".into()),
            AskOption::Bare("deny".into()),
        ]),
        ttl: Some(3600),
        correlation_id: Some("rel-2.4".into()),
        ..Default::default()
    };

    let q = client.ask("OPS 12/3", &req).await.unwrap();

    assert_eq!(q.id, "q_1");
    assert_eq!(q.state, QuestionState::Pending);
    assert_eq!(q.correlation_id.as_deref(), Some("rel-2.4"));
    let styles: Vec<_> = q
        .options
        .iter()
        .map(|o| (o.value.as_str(), o.style))
        .collect();
    assert_eq!(
        styles,
        [
            ("approve", OptionStyle::Primary),
            ("deny", OptionStyle::Danger)
        ]
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.target, "/api/agent/rooms/OPS%2012%2F3/questions");
    assert_eq!(r.header("authorization"), Some("Bearer qpa_secret"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json(),
        json!({
            "prompt": "Deploy 2.4 to production?",
            "options": ["approve", "deny"],
            "ttl": 3600,
            "correlation_id": "rel-2.4"
        })
    );
}

#[tokio::test]
async fn the_yes_no_helper_sends_the_prompt_alone() {
    let server = StandIn::start(vec![(201, question("q_2", "pending"))]).await;
    let client = AskerClient::new(&server.base, "qpa_secret").unwrap();

    let q = client.ask_yes_no("OPS123", "Ship it?").await.unwrap();

    assert_eq!(q.id, "q_2");
    let seen = server.seen();
    assert_eq!(seen[0].target, "/api/agent/rooms/OPS123/questions");
    assert_eq!(seen[0].json(), json!({"prompt": "Ship it?"}));
}

#[tokio::test]
async fn await_re_polls_until_the_question_is_resolved() {
    // Still pending twice (each long-poll ran out), a restarting server, then
    // the answer.
    let server = StandIn::start(vec![
        (200, question("q_1", "pending")),
        (200, question("q_1", "pending")),
        (
            503,
            error_body("unavailable", "the server is restarting", None),
        ),
        (200, question("q_1", "answered")),
    ])
    .await;
    let client = AskerClient::new(&server.base, "qpa_secret").unwrap();

    let q = client.await_resolution("q_1").await.unwrap();

    assert_eq!(q.state, QuestionState::Answered);
    let answer = q.answer.expect("an answer");
    assert_eq!(answer.value.as_deref(), Some("approve"));
    assert_eq!(answer.responder.display_name, "Federica");
    let seen = server.seen();
    assert_eq!(seen.len(), 4, "one wait request per reply: {seen:?}");
    for r in &seen {
        assert_eq!(r.method, "GET");
        assert_eq!(r.target, "/api/agent/questions/q_1/wait?timeout=25");
        assert_eq!(r.header("authorization"), Some("Bearer qpa_secret"));
    }
}

#[tokio::test]
async fn an_error_body_becomes_an_api_error() {
    let server = StandIn::start(vec![(
        422,
        error_body("invalid_prompt", "prompt must not be empty", Some("prompt")),
    )])
    .await;
    let client = AskerClient::new(&server.base, "qpa_secret").unwrap();

    let err = client.ask_yes_no("OPS123", "").await.unwrap_err();

    match &err {
        ClientError::Api {
            status,
            code,
            message,
            field,
            question,
        } => {
            assert_eq!(*status, 422);
            assert_eq!(code, "invalid_prompt");
            assert_eq!(message, "prompt must not be empty");
            assert_eq!(field.as_deref(), Some("prompt"));
            assert!(question.is_none());
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert_eq!(err.to_string(), "prompt must not be empty");
    assert!(!err.is_transient());
}

#[tokio::test]
async fn a_conflict_carries_the_question_and_a_5xx_is_transient() {
    let mut conflict = error_body(
        "question_resolved",
        "question q_1 is already answered",
        None,
    );
    conflict["question"] = question("q_1", "answered");
    let server = StandIn::start(vec![
        (409, conflict),
        (503, error_body("unavailable", "try again", None)),
    ])
    .await;
    let client = AskerClient::new(&server.base, "qpa_secret").unwrap();

    let err = client.cancel("q_1").await.unwrap_err();
    let ClientError::Api {
        status, question, ..
    } = &err
    else {
        panic!("expected an API error, got {err:?}");
    };
    assert_eq!(*status, 409);
    let q = question.as_ref().expect("the question as it stands");
    assert_eq!(q.state, QuestionState::Answered);
    assert!(!err.is_transient());

    let err = client.fetch("q_1").await.unwrap_err();
    assert!(
        matches!(err, ClientError::Api { status: 503, .. }),
        "{err:?}"
    );
    assert!(err.is_transient());

    let seen = server.seen();
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].target, "/api/agent/questions/q_1/cancel");
    assert_eq!(seen[1].method, "GET");
    assert_eq!(seen[1].target, "/api/agent/questions/q_1");
}

#[tokio::test]
async fn list_reads_the_questions_of_a_state() {
    let server = StandIn::start(vec![(
        200,
        json!({"questions": [question("q_1", "pending"), question("q_2", "pending")]}),
    )])
    .await;
    let client = AskerClient::new(&server.base, "qpa_secret").unwrap();

    let listed = client.list(Some("pending")).await.unwrap();

    let ids: Vec<&str> = listed.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids, ["q_1", "q_2"]);
    assert_eq!(
        server.seen()[0].target,
        "/api/agent/questions?state=pending"
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_transient_transport_error() {
    // A port that was just free: nothing listens there any more.
    let base = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let client = AskerClient::new(&base, "qpa_secret").unwrap();

    let err = client.fetch("q_1").await.unwrap_err();

    match &err {
        ClientError::Transport { url, source } => {
            assert_eq!(url, &base);
            assert!(source.is_connect(), "{source:?}");
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
    assert!(err.is_transient());
    assert!(
        err.to_string()
            .starts_with(&format!("cannot reach the server at {base}: ")),
        "{err}"
    );
}
