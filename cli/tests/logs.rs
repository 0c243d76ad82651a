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

/// Every OAuth consent decision is a log line with the client id; no code,
/// token or consent handle is ever in the log.
#[tokio::test]
async fn oauth_consent_decisions_are_logged_with_the_client_id_and_no_secret() {
    use base64::Engine as _;
    use sha2::Digest as _;
    let (s, room) = serve(&["--log-format", "json"], &[("QP_LOG", "info")]);
    let mut lines = read_until(&s, |l| l.contains("qp serve: listening"));
    let started: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let base = started["fields"]["url"].as_str().unwrap().to_string();
    let http = reqwest::Client::new();
    let redirect = "http://127.0.0.1:33418/callback";
    let reg: Value = http
        .post(format!("{base}/oauth/register"))
        .json(&json!({"client_name": "Logged Client", "redirect_uris": [redirect]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client = reg["client_id"].as_str().unwrap().to_string();
    let verifier = "a-verifier-of-at-least-43-characters-0123456789-abcdef";
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    let form = |pairs: &[(&str, &str)]| {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    };
    let started: Value = http
        .post(format!("{base}/oauth/authorize"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(form(&[
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", redirect),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("user", &room.alice_id),
            ("room", "OPS123"),
        ]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let handle = started["request"].as_str().unwrap().to_string();
    let pending: Value = http
        .get(format!("{base}/api/questions/pending"))
        .bearer_auth(&room.alice)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let qid = pending["questions"][0]["id"].as_str().unwrap().to_string();
    let resp = http
        .post(format!("{base}/api/questions/{qid}/answer"))
        .bearer_auth(&room.alice)
        .json(&json!({"value": "allow"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let status: Value = http
        .post(format!("{base}/oauth/authorize/status"))
        .json(&json!({"request": handle, "wait": 5}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let redirect_to = reqwest::Url::parse(status["redirect"].as_str().unwrap()).unwrap();
    let code = redirect_to
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let tokens: Value = http
        .post(format!("{base}/oauth/token"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
        ]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(tokens["access_token"].is_string(), "{tokens}");
    lines.extend(read_until(&s, |l| l.contains("oauth tokens issued")));
    let parsed: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let decided = parsed
        .iter()
        .find(|v| v["fields"]["message"] == "oauth consent decided")
        .unwrap_or_else(|| panic!("no decision line in\n{}", lines.join("\n")));
    assert_eq!(decided["fields"]["client_id"], client.as_str());
    assert_eq!(decided["fields"]["decision"], "approved");
    assert_eq!(decided["fields"]["user"], room.alice_id.as_str());
    for secret in [
        handle.as_str(),
        code.as_str(),
        tokens["access_token"].as_str().unwrap(),
        tokens["refresh_token"].as_str().unwrap(),
        verifier,
    ] {
        assert!(
            !lines.iter().any(|l| l.contains(secret)),
            "a secret in the log: {secret}"
        );
    }
}

/// Lines that arrive within `quiet` of each other, until a pause.
fn drain(s: &Serve, quiet: Duration) -> Vec<String> {
    let mut out = vec![];
    while let Ok(line) = s.lines.recv_timeout(quiet) {
        out.push(line);
    }
    out
}

/// A client-supplied value with a line break cannot write a line of its
/// own into the text log: `/oauth/token` logs the `client_id` it was given
/// (a refused exchange, a replayed code), and a client's name is logged at
/// registration. Each event stays one line, the breaks written as escapes.
#[tokio::test]
async fn client_supplied_values_cannot_forge_lines_in_the_text_log() {
    use base64::Engine as _;
    use sha2::Digest as _;
    let (s, room) = serve(&[], &[("QP_LOG", "info")]);
    let started = read_until(&s, |l| l.contains("qp serve: listening on"));
    let base = started
        .last()
        .unwrap()
        .split("listening on ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let http = reqwest::Client::new();
    let forged =
        "\n2026-01-01T00:00:00.000000Z  INFO qp_server::http::responder: answer value=\"approve\"";
    let payloads = [
        format!("qpc_x{forged}"),
        format!("qpc_y\r{forged}\r\n"),
        format!("qpc_z\u{1b}[2K\u{2028}{forged}\u{85}"),
    ];
    let redirect = "http://127.0.0.1:33418/callback";
    let form = |pairs: &[(&str, &str)]| {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    };
    // A name with a line separator (a newline is refused outright).
    let _ = http
        .post(format!("{base}/oauth/register"))
        .json(&json!({"client_name": format!("Name\u{2028}{}", &forged[1..]), "redirect_uris": [redirect]}))
        .send()
        .await
        .unwrap();
    let reg: Value = http
        .post(format!("{base}/oauth/register"))
        .json(&json!({"client_name": "Logged Client", "redirect_uris": [redirect]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client = reg["client_id"].as_str().unwrap().to_string();
    let verifier = "a-verifier-of-at-least-43-characters-0123456789-abcdef";
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    for payload in &payloads {
        // A fresh approved code for each: refused for its client_id, then
        // replayed with it.
        let started: Value = http
            .post(format!("{base}/oauth/authorize"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json")
            .body(form(&[
                ("response_type", "code"),
                ("client_id", &client),
                ("redirect_uri", redirect),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("user", &room.alice_id),
                ("room", "OPS123"),
            ]))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let handle = started["request"].as_str().unwrap().to_string();
        let pending: Value = http
            .get(format!("{base}/api/questions/pending"))
            .bearer_auth(&room.alice)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let qid = pending["questions"][0]["id"].as_str().unwrap().to_string();
        let resp = http
            .post(format!("{base}/api/questions/{qid}/answer"))
            .bearer_auth(&room.alice)
            .json(&json!({"value": "allow"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let status: Value = http
            .post(format!("{base}/oauth/authorize/status"))
            .json(&json!({"request": handle, "wait": 5}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let code = reqwest::Url::parse(status["redirect"].as_str().unwrap())
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "code")
            .unwrap()
            .1
            .into_owned();
        for _ in 0..2 {
            let r = http
                .post(format!("{base}/oauth/token"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(form(&[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("client_id", payload),
                    ("redirect_uri", redirect),
                    ("code_verifier", verifier),
                ]))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 400);
        }
    }
    let lines = drain(&s, Duration::from_secs(2));
    let all = lines.join("\n");
    // Each line is an event of its own: a time, a level, then the rest.
    let event = |l: &str| {
        let mut parts = l.split_whitespace();
        let time = parts.next().unwrap_or_default();
        let level = parts.next().unwrap_or_default();
        time.len() >= 20
            && time.as_bytes()[4] == b'-'
            && time.ends_with('Z')
            && ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level)
    };
    for l in &lines {
        assert!(event(l), "a line that is no event: {l:?}\nin:\n{all}");
        assert!(!l.starts_with("2026-01-01T00:00:00"), "forged: {l:?}");
    }
    let count = |what: &str| lines.iter().filter(|l| l.contains(what)).count();
    assert_eq!(count("oauth code exchange refused"), 3, "{all}");
    assert_eq!(count("oauth code used twice"), 3, "{all}");
    // The values are there, escaped.
    assert!(all.contains("qpc_x\\n2026-01-01T00:00:00"), "{all}");
    assert!(
        all.contains("qpc_y\\r\\n2026-01-01") || all.contains("qpc_y\\r"),
        "{all}"
    );
    assert!(
        all.contains("qpc_z\\x1b[2K") || all.contains("qpc_z\\u{1b}"),
        "{all}"
    );
}
