//! Whoever can inject pushes (the gateway,
//! a leaked APNs key, an FCM account) must not make a person approve what
//! they never saw, nor hide a question from them. `qp device` (the terminal
//! phone, with its end-to-end key, as by default) runs against a real
//! `qp serve`, both on loopback, through a "gateway" that relays every
//! request and adds forged pushes to the device's push inbox
//! (`/api/dev/inbox`, the terminal's APNs).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use common::{admin_json, QpServe};
use qp_core::e2e::DeviceSecret;
use qp_core::payload::{encode_apns_question, encode_apns_resolved, encode_apns_resolved_sealed};
use qp_core::present::copy::Copy;
use qp_core::protocol::{Question, QuestionState};
use serde_json::{json, Value};

const QP: &str = env!("CARGO_BIN_EXE_qp");
const REAL: &str = "Allow Bash: psql prod -c \"DROP TABLE customers\"";

/// The gateway: relays to the server, and hands the device forged pushes
/// ahead of whatever the server has for it.
struct Gateway {
    upstream: String,
    http: reqwest::Client,
    forged: Mutex<Vec<Value>>,
    wake: tokio::sync::Notify,
    /// The genuine pushes it carried (their envelopes are in clear).
    carried: Mutex<Vec<Value>>,
    /// When set, the prompt it puts in every plain question push it carries
    /// (instead of the server's): a forged push with a real question's id,
    /// arriving before the phone has ever seen that question.
    substitute: Mutex<Option<String>>,
}

impl Gateway {
    fn forge(&self, format: &str, payload: String) {
        self.forged
            .lock()
            .unwrap()
            .push(json!({"format": format, "payload": payload}));
        self.wake.notify_one();
    }

    /// The queued forgeries, numbered as the device's last push so its
    /// place in the inbox does not move.
    fn take_forged(&self, after: i64) -> Option<Response> {
        let mut forged = std::mem::take(&mut *self.forged.lock().unwrap());
        if forged.is_empty() {
            return None;
        }
        for p in &mut forged {
            p["seq"] = json!(after);
        }
        Some(axum::Json(json!({ "pushes": forged })).into_response())
    }

    async fn forward(
        &self,
        method: Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Response {
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.upstream))
            .body(body);
        for name in ["authorization", "content-type", "idempotency-key"] {
            if let Some(v) = headers.get(name) {
                req = req.header(name, v);
            }
        }
        let Ok(resp) = req.send().await else {
            return StatusCode::BAD_GATEWAY.into_response();
        };
        let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
        let mut bytes = resp.bytes().await.unwrap_or_default();
        if uri.path() == "/api/dev/inbox" {
            if let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) {
                let pushes = v["pushes"].as_array().cloned().unwrap_or_default();
                self.carried.lock().unwrap().extend(pushes);
                if let Some(prompt) = self.substitute.lock().unwrap().clone() {
                    for p in v["pushes"].as_array_mut().into_iter().flatten() {
                        let Some(mut payload) = p["payload"]
                            .as_str()
                            .and_then(|t| serde_json::from_str::<Value>(t).ok())
                        else {
                            continue;
                        };
                        if payload.get("qp").is_some() {
                            payload["qp"]["prompt"] = json!(prompt);
                            payload["aps"]["alert"]["body"] = json!(prompt);
                            p["payload"] = json!(payload.to_string());
                        }
                    }
                    bytes = Bytes::from(v.to_string());
                }
            }
        }
        (status, [("content-type", "application/json")], bytes).into_response()
    }
}

async fn relay(
    State(g): State<Arc<Gateway>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if uri.path() != "/api/dev/inbox" {
        return g.forward(method, &uri, &headers, body).await;
    }
    let after = uri
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("after=")))
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    // Listen first, so a forgery queued while the long-poll is parked at
    // the server is handed over at once.
    let woke = g.wake.notified();
    if let Some(r) = g.take_forged(after) {
        return r;
    }
    tokio::select! {
        r = g.forward(method, &uri, &headers, body) => r,
        _ = woke => g.take_forged(after).unwrap_or_else(|| axum::Json(json!({"pushes": []})).into_response()),
    }
}

struct World {
    _dir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    _serve: QpServe,
    server: String,
    gateway: Arc<Gateway>,
    gateway_url: String,
    agent: String,
    user_token: String,
    store: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qp.sqlite");
    let user = admin_json(&db, &["user", "add", "Federica"]);
    let uid = user["id"].as_str().unwrap();
    admin_json(&db, &["room", "add", "Ops", "--code", "OPS123"]);
    assert!(common::admin(&db, &["room", "add-member", "OPS123", uid])
        .status
        .success());
    let agent = admin_json(
        &db,
        &["agent", "add", "CI", "--owner", uid, "--room", "OPS123"],
    );
    let token = admin_json(&db, &["token", "add", uid, "--label", "phone"]);
    let serve = QpServe::start(&["--db", db.to_str().unwrap(), "--sweep-interval-ms", "100"]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let gateway = Arc::new(Gateway {
        upstream: serve.base.clone(),
        http: reqwest::Client::new(),
        forged: Mutex::new(Vec::new()),
        wake: tokio::sync::Notify::new(),
        carried: Mutex::new(Vec::new()),
        substitute: Mutex::new(None),
    });
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let gateway_url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .fallback(relay)
        .with_state(gateway.clone());
    rt.spawn(async move { axum::serve(listener, app).await });
    World {
        store: dir.path().join("phone.sqlite"),
        _dir: dir,
        rt,
        server: serve.base.clone(),
        _serve: serve,
        gateway,
        gateway_url,
        agent: agent["token"].as_str().unwrap().to_string(),
        user_token: token["token"].as_str().unwrap().to_string(),
    }
}

/// `qp device` (with its key), reached through the gateway.
struct Device {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Device {
    fn start(w: &World) -> Device {
        Device::start_with(w, &[])
    }

    fn start_with(w: &World, extra: &[&str]) -> Device {
        let mut child = Command::new(QP)
            .args(["device", "--url", &w.gateway_url, "--store"])
            .arg(&w.store)
            .args(extra)
            .env("QP_DEVICE_TOKEN", &w.user_token)
            .env_remove("QP_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut d = Device {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        };
        d.wait_for("waiting for questions");
        d
    }

    /// The first line from now on containing `needle`.
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(needle) {
                        return l;
                    }
                }
                Err(_) => panic!(
                    "no {needle:?} from qp device; it printed:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn key(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
    }

    fn printed(&self) -> String {
        self.seen.join("\n")
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl World {
    /// Asks the DROP question (as `qp hook` would): the server's question.
    fn ask(&self) -> Question {
        let body = json!({"prompt": REAL, "responder_scope": "room", "options": [
            {"value": "allow", "label": "Allow", "style": "primary"},
            {"value": "deny", "label": "Deny", "style": "danger"}]});
        let v = self.call(
            Method::POST,
            "/api/agent/rooms/OPS123/questions",
            Some(body),
        );
        serde_json::from_value(v).unwrap()
    }

    fn question(&self, id: &str) -> Value {
        self.call(Method::GET, &format!("/api/agent/questions/{id}"), None)
    }

    fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        self.rt.block_on(async {
            let mut req = reqwest::Client::new()
                .request(method, format!("{}{path}", self.server))
                .bearer_auth(&self.agent);
            if let Some(b) = body {
                req = req.json(&b);
            }
            req.send().await.unwrap().json().await.unwrap()
        })
    }

    /// The device id the genuine sealed push named (in clear, as the
    /// gateway sees it).
    fn device_id(&self) -> String {
        let carried = self.gateway.carried.lock().unwrap();
        let payload: Value = serde_json::from_str(carried[0]["payload"].as_str().unwrap()).unwrap();
        payload["qp_e2e"]["device"].as_str().unwrap().to_string()
    }
}

/// The device key the terminal keeps next to its store.
fn device_secret(store: &Path) -> DeviceSecret {
    let mut name = store.as_os_str().to_owned();
    name.push(".device-key");
    DeviceSecret::from_bytes(&std::fs::read(PathBuf::from(name)).unwrap()).unwrap()
}

/// The attacker's report: the real sealed question is on screen; a plain
/// push with the same id and `Allow Bash: git status` arrives; the person
/// answers `1`. It must not be drawn (nor its words shown), and the answer
/// is recorded against the prompt the server sent, which is what was drawn.
#[test]
fn a_forged_plain_push_with_the_real_id_is_never_shown_or_answered() {
    let w = world();
    let mut phone = Device::start(&w);
    let real = w.ask();
    phone.wait_for("end-to-end encrypted push");
    phone.wait_for("DROP TABLE customers");

    let mut forged = real.clone();
    forged.prompt = "Allow Bash: git status".into();
    w.gateway.forge(
        "apns",
        encode_apns_question(&forged, Copy::english()).unwrap().json,
    );
    phone.wait_for("push not used");
    phone.wait_for("synced");

    phone.key("1");
    phone.wait_for("delivered:");
    assert!(
        !phone.printed().contains("git status"),
        "{}",
        phone.printed()
    );
    let drawn: Vec<&String> = phone
        .seen
        .iter()
        .filter(|l| l.contains("Allow Bash"))
        .collect();
    assert!(
        drawn.iter().all(|l| l.contains("DROP TABLE customers")),
        "{drawn:?}"
    );
    let q = w.question(&real.id);
    assert_eq!(q["state"], "answered");
    assert_eq!(q["answer"]["value"], "allow");
    assert_eq!(q["prompt"], REAL);
}

/// A forged resolution, plain or even sealed to the device (by someone who
/// learned its public key), does not withdraw a pending question: the
/// phone asks the server first, and the person can still answer it.
#[test]
fn a_forged_resolution_push_does_not_withdraw_a_pending_question() {
    let w = world();
    let mut phone = Device::start(&w);
    let real = w.ask();
    phone.wait_for("DROP TABLE customers");

    let mut cancelled = real.clone();
    cancelled.state = QuestionState::Cancelled;
    cancelled.resolved_at = Some(chrono::Utc::now());
    let plain = encode_apns_resolved(&cancelled, Copy::english(), None).json;
    w.gateway.forge("apns", plain);
    phone.wait_for("push not used");
    phone.wait_for("synced");

    let key = device_secret(&w.store).public();
    let device = w.device_id();
    let to = qp_core::payload::Recipient {
        device_id: &device,
        key: &key,
    };
    let sealed = encode_apns_resolved_sealed(&cancelled, Copy::english(), None, &to)
        .unwrap()
        .json;
    w.gateway.forge("apns", sealed);
    phone.wait_for("the server says it is still pending");

    phone.key("1");
    phone.wait_for("delivered:");
    assert!(
        !phone.printed().contains("withdrawn"),
        "{}",
        phone.printed()
    );
    assert_eq!(w.question(&real.id)["answer"]["value"], "allow");
}

/// A phone without a device key (`--no-e2e`, as older apps) takes new
/// questions from plain pushes. The injector sends the id of a real question
/// the phone has not received yet, with a harmless prompt; the person answers
/// `1` (Allow) to what they saw. That answer must not be recorded on the real
/// question: the phone reads the question from the server before sending,
/// finds other words, does not send, and draws the real question; answered
/// then, it is delivered.
#[test]
fn a_forged_plain_push_with_an_unseen_real_id_does_not_answer_the_real_question() {
    let w = world();
    let mut phone = Device::start_with(&w, &["--no-e2e"]);
    *w.gateway.substitute.lock().unwrap() = Some("Allow Bash: git status".into());
    let real = w.ask();
    phone.wait_for("Allow Bash: git status");
    assert!(
        !phone.printed().contains("DROP TABLE customers"),
        "{}",
        phone.printed()
    );
    *w.gateway.substitute.lock().unwrap() = None;

    phone.key("1");
    let line = phone.wait_for("not sent:");
    assert!(line.contains("the question differs"), "{line}");
    let q = w.question(&real.id);
    assert_eq!(q["state"], "pending", "{q}");
    assert!(q["answer"].is_null(), "{q}");
    // The real question is drawn now, and an answer to it is delivered.
    phone.wait_for("DROP TABLE customers");
    phone.key("2");
    phone.wait_for("delivered:");
    let q = w.question(&real.id);
    assert_eq!(q["state"], "answered");
    assert_eq!(q["answer"]["value"], "deny");
    assert_eq!(q["prompt"], REAL);
}
