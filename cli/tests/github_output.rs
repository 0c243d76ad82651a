//! `qp ask --wait` and `qp watch` in a GitHub Actions step: the outcome as
//! step outputs in `$GITHUB_OUTPUT` (or `--github-output FILE`) and one
//! summary line in `$GITHUB_STEP_SUMMARY`, read back the way the runner
//! reads them, by a shell script like a workflow's.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

mod common;

use common::{admin, admin_json, QpServe};

const QP: &str = env!("CARGO_BIN_EXE_qp");

struct Step {
    dir: tempfile::TempDir,
    serve: QpServe,
    agent: String,
    phone: String,
}

fn setup() -> Step {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qp.sqlite");
    admin_json(&db, &["user", "add", "Federica", "--id", "u_federica"]);
    admin_json(&db, &["room", "add", "Ops", "--code", "OPS123"]);
    assert!(admin(&db, &["room", "add-member", "OPS123", "u_federica"])
        .status
        .success());
    let agent = admin_json(
        &db,
        &[
            "agent",
            "add",
            "CI",
            "--owner",
            "u_federica",
            "--room",
            "OPS123",
        ],
    )["token"]
        .as_str()
        .unwrap()
        .to_string();
    let phone = admin_json(&db, &["token", "add", "u_federica", "--label", "phone"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let serve = QpServe::start(&["--db", db.to_str().unwrap(), "--sweep-interval-ms", "100"]);
    Step {
        dir,
        serve,
        agent,
        phone,
    }
}

impl Step {
    fn http(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Value {
        common::http_blocking(&self.serve.base, method, path, token, body)
    }

    /// Waits until the responder has a pending question and returns its id.
    fn pending_id(&self) -> String {
        common::pending_id_blocking(&self.serve.base, &self.phone)
    }

    fn answer(&self, id: &str, body: Value) {
        common::answer_blocking(&self.serve.base, &self.phone, id, body)
    }

    /// A workflow step: `bash -c script` with the runner's two files set.
    fn step(&self, script: &str) -> std::process::Child {
        Command::new("bash")
            .arg("-c")
            .arg(script)
            .env(
                "PATH",
                format!(
                    "{}:/usr/bin:/bin",
                    Path::new(QP).parent().unwrap().display()
                ),
            )
            .env("QP_URL", &self.serve.base)
            .env("QP_TOKEN", &self.agent)
            .env("GITHUB_OUTPUT", self.dir.path().join("output"))
            .env("GITHUB_STEP_SUMMARY", self.dir.path().join("summary"))
            .env_remove("QP_ROOM")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }
}

/// `$GITHUB_OUTPUT` as the Actions runner parses it: `name=value` lines and
/// `name<<DELIMITER` … `DELIMITER` blocks.
fn parse_outputs(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delimiter {
                    break;
                }
                value.push(l);
            }
            out.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            out.insert(name.to_string(), value.to_string());
        }
    }
    out
}

fn finish(child: std::process::Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ask_wait_writes_the_step_outputs_and_a_summary_line_a_workflow_reads() {
    let s = setup();
    // The documented deploy gate: the step asks, a later step reads the outputs.
    let child = s.step(
        r#"set -e
        qp ask OPS123 'Deploy v1.4.0 to production?' --yes-no --wait >/dev/null
        while IFS= read -r line; do printf '%s\n' "$line"; done < "$GITHUB_OUTPUT" >/dev/null
        echo "gate passed""#,
    );
    let id = s.pending_id();
    s.answer(&id, json!({"value": "approve"}));
    let (code, out, err) = finish(child);
    assert_eq!((code, out.trim()), (0, "gate passed"), "{err}");
    let o = parse_outputs(&s.read("output"));
    assert_eq!(o["id"], id);
    assert_eq!(o["state"], "answered");
    assert_eq!(o["value"], "approve");
    assert_eq!(o["label"], "Approve");
    assert_eq!(o["text"], "");
    assert_eq!(o["responder"], "Federica");
    assert_eq!(o["responder_id"], "u_federica");
    let summary = s.read("summary");
    assert_eq!(summary.lines().count(), 1, "{summary}");
    assert!(
        summary.starts_with("💬 Deploy v1\\.4\\.0 to production?: **Approve** by Federica at "),
        "{summary}"
    );
    assert!(
        summary.trim_end().ends_with(&format!("(`{id}`)")),
        "{summary}"
    );
}

#[test]
fn a_typed_answer_cannot_forge_an_output_or_markdown() {
    let s = setup();
    let child = s.step("qp ask OPS123 'Why hold?' --text --wait --print text");
    let id = s.pending_id();
    let typed = "no<<EOF value=approve **x** <img src=y>";
    s.answer(&id, json!({ "text": typed }));
    let (code, out, err) = finish(child);
    assert_eq!((code, out.trim()), (0, typed), "{err}");
    let o = parse_outputs(&s.read("output"));
    assert_eq!(o["text"], typed);
    assert_eq!(o["value"], "", "the typed text set no other output");
    assert_eq!(o["state"], "answered");
    let summary = s.read("summary");
    assert!(
        summary.contains(r#"typed "no&lt;&lt;EOF value=approve \*\*x\*\* &lt;img src=y&gt;""#),
        "{summary}"
    );
    assert!(!summary.contains("<img"), "{summary}");
}

#[test]
fn watch_writes_expired_and_cancelled_and_the_flag_names_a_file() {
    let s = setup();
    let (code, out, _) = finish(s.step("qp ask OPS123 'Cancel me?'"));
    assert_eq!(code, 0);
    let id = out.trim().to_string();
    let o = parse_outputs(&s.read("output"));
    assert_eq!(
        (o["id"].as_str(), o["state"].as_str()),
        (id.as_str(), "pending")
    );

    let file = s.dir.path().join("explicit");
    let child = s.step(&format!(
        "GITHUB_OUTPUT= qp watch {id} --github-output {}",
        file.display()
    ));
    std::thread::sleep(Duration::from_millis(300));
    let c = s.http(
        "POST",
        &format!("/api/agent/questions/{id}/cancel"),
        &s.agent,
        None,
    );
    assert_eq!(c["state"], "cancelled");
    let (code, _, err) = finish(child);
    assert_eq!(code, 4, "{err}");
    let o = parse_outputs(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(o["state"], "cancelled");
    assert_eq!((o["value"].as_str(), o["responder"].as_str()), ("", ""));
    assert!(s
        .read("summary")
        .lines()
        .last()
        .unwrap()
        .starts_with("🚫 Cancel me?: cancelled"));

    // Expired, from `qp watch` with the runner's variables.
    let (_, out, _) = finish(s.step("GITHUB_OUTPUT= qp ask OPS123 'Expire me?'"));
    let expiring = out.trim().to_string();
    let t = chrono::Utc::now().timestamp() + 1;
    let db = rusqlite::Connection::open(s.dir.path().join("qp.sqlite")).unwrap();
    db.execute(
        "UPDATE questions SET expires_at = ?2, body = json_set(body, '$.expires_at', ?3) WHERE id = ?1",
        rusqlite::params![
            expiring,
            t,
            qp_core::protocol::time::format(&chrono::DateTime::from_timestamp(t, 0).unwrap())
        ],
    )
    .unwrap();
    std::fs::remove_file(s.dir.path().join("output")).unwrap();
    let (code, _, err) = finish(s.step(&format!("qp watch {expiring}")));
    assert_eq!(code, 3, "{err}");
    let o = parse_outputs(&s.read("output"));
    assert_eq!(
        (o["id"].as_str(), o["state"].as_str()),
        (expiring.as_str(), "expired")
    );
    assert!(s
        .read("summary")
        .lines()
        .last()
        .unwrap()
        .starts_with("⏰ Expire me?: expired with no answer"));

    // Outside Actions (the variables empty) nothing is written and nothing fails.
    let (code, out, err) =
        finish(s.step("GITHUB_OUTPUT= GITHUB_STEP_SUMMARY= qp ask OPS123 'Quiet?'"));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("q_"));
    // An unwritable output file is an error, not a silent gate.
    let (code, _, err) = finish(s.step(&format!(
        "qp watch {id} --github-output {}",
        s.dir.path().join("no/such/dir/out").display()
    )));
    assert_eq!(code, 1);
    assert!(err.contains("cannot write --github-output"), "{err}");
}
