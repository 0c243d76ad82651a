//! The server's log as an operator ships it: `qp serve --log-format json`
//! (the built binary, stderr a pipe) writes one JSON object per line, each
//! request's line with its id (taken from `X-Request-Id`, and answered in
//! it; made up when absent), the client's address and the acting agent or
//! user; one line per answer with the question and responder; no ANSI
//! colours into a pipe; the filter read from QP_LOG, else RUST_LOG.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use qp_server::store::Database;
use serde_json::{json, Value};

struct Serve {
    child: Child,
    lines: mpsc::Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `qp serve` on a seeded database with `args` and `env`; its room.
fn serve(args: &[&str], env: &[(&str, &str)]) -> (Serve, common::OpsRoom) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qp.sqlite");
    let conn = common::connect(&Database::Sqlite(db.clone()));
    let room = common::seed_ops_room(&conn);
    drop(conn);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_qp"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .args(args)
        .env_remove("QP_LOG")
        .env_remove("RUST_LOG")
        .env_remove("QP_LOG_FORMAT")
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    (
        Serve {
            child,
            lines,
            _dir: dir,
        },
        room,
    )
}

/// Lines until `until` says stop (then that line is the last), within 20 s.
fn read_until(s: &Serve, mut until: impl FnMut(&str) -> bool) -> Vec<String> {
    let mut out = vec![];
    loop {
        let line = s
            .lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no such line; got:\n{}", out.join("\n")));
        let stop = until(&line);
        out.push(line);
        if stop {
            return out;
        }
    }
}

#[tokio::test]
async fn json_logs_carry_request_id_client_actor_and_one_line_per_answer() {
    let (s, room) = serve(
        &["--log-format", "json"],
        // QP_LOG wins over RUST_LOG.
        &[("QP_LOG", "info"), ("RUST_LOG", "error")],
    );
    let mut lines = read_until(&s, |l| l.contains("qp serve: listening"));
    let started: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let base = started["fields"]["url"].as_str().unwrap().to_string();
    let http = reqwest::Client::new();

    let resp = http
        .post(format!("{base}/api/agent/rooms/OPS123/questions"))
        .bearer_auth(&room.agent)
        .header("x-request-id", "ops-test-42")
        .json(&json!({"prompt": "Ship it?", "options": ["yes", "no"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["x-request-id"], "ops-test-42");
    let q: Value = resp.json().await.unwrap();
    let id = q["id"].as_str().unwrap();

    // An id that could forge a log field is replaced by one of ours.
    let resp = http
        .post(format!("{base}/api/questions/{id}/answer"))
        .bearer_auth(&room.alice)
        .header("x-request-id", "a\"}{\"level\":\"ERROR")
        .json(&json!({"value": "yes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let made = resp.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(made.len(), 16, "{made}");
    assert!(made.bytes().all(|b| b.is_ascii_hexdigit()), "{made}");

    lines.extend(read_until(&s, |l| {
        l.contains(&made) && l.contains("finished processing request")
    }));
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        lines.iter().all(|l| !l.contains('\u{1b}')),
        "ANSI escapes into a pipe"
    );

    let finished = |rid: &str| {
        parsed
            .iter()
            .find(|v| {
                v["fields"]["message"] == "finished processing request"
                    && v["span"]["request_id"] == rid
            })
            .unwrap_or_else(|| panic!("no request line for {rid} in\n{}", lines.join("\n")))
    };
    let ask = finished("ops-test-42");
    assert_eq!(ask["level"], "INFO");
    assert_eq!(ask["fields"]["status"], 201);
    assert_eq!(ask["span"]["client"], "127.0.0.1");
    assert_eq!(ask["span"]["route"], "/api/agent/rooms/{room}/questions");
    assert!(
        ask["span"]["actor"]
            .as_str()
            .unwrap()
            .starts_with("agent:a"),
        "{ask}"
    );
    let answered = finished(&made);
    assert_eq!(answered["span"]["actor"], format!("user:{}", room.alice_id));
    let answer = parsed
        .iter()
        .find(|v| v["fields"]["message"] == "answer")
        .unwrap_or_else(|| panic!("no answer line in\n{}", lines.join("\n")));
    assert_eq!(answer["fields"]["question"], id);
    assert_eq!(answer["fields"]["responder"], room.alice_id.as_str());
    assert_eq!(answer["span"]["request_id"], made.as_str());
    // Never a token in the log.
    for token in [&room.agent, &room.alice] {
        assert!(!lines.iter().any(|l| l.contains(token.as_str())));
    }
}

#[test]
fn rust_log_is_read_when_qp_log_is_not_and_text_has_no_colours_into_a_pipe() {
    let (s, _) = serve(&[], &[("RUST_LOG", "warn")]);
    let quiet = read_until(&s, |l| l.contains("qp serve: listening on"));
    assert!(
        !quiet.iter().any(|l| l.contains("INFO")),
        "RUST_LOG=warn ignored:\n{}",
        quiet.join("\n")
    );
    drop(s);
    let (s, _) = serve(&[], &[]);
    let lines = read_until(&s, |l| l.contains("qp serve: listening on"));
    assert!(
        lines.iter().any(|l| l.contains(" INFO ")),
        "{}",
        lines.join("\n")
    );
    assert!(
        lines.iter().all(|l| !l.contains('\u{1b}')),
        "{}",
        lines.join("\n")
    );
}
