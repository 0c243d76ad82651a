//! The built `qp` binary as a shell script drives it: a server started with
//! a user, an agent and a room (`setup`), and a child's exit code and output
//! (`finish`). Shared by the `cli_*` suites.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::{admin, admin_json};

pub const QP: &str = env!("CARGO_BIN_EXE_qp");

pub struct Env {
    pub _dir: tempfile::TempDir,
    pub db: PathBuf,
    pub serve: Child,
    pub url: String,
    pub agent_token: String,
    pub user_token: String,
    pub uid: String,
    /// Every line `qp serve` logged.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self.serve.kill();
        let _ = self.serve.wait();
    }
}

pub fn setup() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qp.sqlite");
    let user = admin_json(&db, &["user", "add", "Federica"]);
    let uid = user["id"].as_str().unwrap();
    let room = admin_json(&db, &["room", "add", "Ops", "--code", "ops123"]);
    assert_eq!(room["code"], "OPS123", "codes are upper-cased");
    assert!(admin(&db, &["room", "add-member", "OPS123", uid])
        .status
        .success());
    let agent = admin_json(
        &db,
        &["agent", "add", "CI", "--owner", uid, "--room", "OPS123"],
    );
    let agent_token = agent["token"].as_str().unwrap().to_string();
    let tok = admin_json(&db, &["token", "add", uid, "--label", "phone"]);
    let user_token = tok["token"].as_str().unwrap().to_string();
    // Tokens are stored only as hashes.
    let listed = String::from_utf8(admin(&db, &["token", "list"]).stdout).unwrap();
    assert!(!listed.contains(&agent_token) && !listed.contains(&user_token));
    let raw = std::fs::read(&db).unwrap();
    assert!(!raw
        .windows(agent_token.len())
        .any(|w| w == agent_token.as_bytes()));

    let mut serve = Command::new(QP)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--sweep-interval-ms",
            "100",
        ])
        // The burst test holds 4,000 long-polls with one agent token, all
        // from one address.
        .args(["--max-long-polls-per-token", "100000"])
        .args(["--max-connections-per-address", "100000"])
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(serve.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("qp serve exited").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.trim().to_string();
        }
    };
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = log.clone();
    // Keep draining the log, and keep it for the tests that read it.
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            sink.lock().unwrap().push(l);
        }
    });
    Env {
        _dir: dir,
        db,
        serve,
        url,
        agent_token,
        user_token,
        uid: uid.to_string(),
        log,
    }
}

impl Env {
    pub fn qp(&self, args: &[&str]) -> Command {
        let mut c = Command::new(QP);
        c.args(args)
            .env("QP_URL", &self.url)
            .env("QP_TOKEN", &self.agent_token)
            .env_remove("QP_ROOM");
        c
    }

    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.qp(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub fn http(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Value {
        super::http_blocking(&self.url, method, path, token, body)
    }

    /// Waits until the responder has a pending question and returns its id.
    pub fn pending_id(&self) -> String {
        super::pending_id_blocking(&self.url, &self.user_token)
    }

    pub fn answer(&self, id: &str, body: Value) {
        super::answer_blocking(&self.url, &self.user_token, id, body)
    }
}

pub fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
