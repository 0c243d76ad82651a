//! Moving a server from its SQLite file to PostgreSQL with the built `qp`:
//! `qp admin --db FILE copy-to-postgres URL`, then `qp serve --db URL` with
//! the same tokens, questions and webhooks; and `qp admin` on PostgreSQL.
//!
//! Needs `QP_TEST_POSTGRES` (`scripts/test` sets it); without it the test
//! says so and checks nothing.

mod common;

use common::{admin, admin_json, answer_at, ask_at, QpServe};

use std::path::Path;
use std::time::Duration;

use qp_server::store::Database;
use serde_json::{json, Value};

#[tokio::test]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn a_sqlite_server_moves_to_postgresql_with_its_tokens_and_questions() {
    common::require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("qp.sqlite").display().to_string();
    let uid = admin_json(&file, &["user", "add", "Federica"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    admin_json(&file, &["room", "add", "Ops", "--code", "OPS123"]);
    assert!(admin(&file, &["room", "add-member", "OPS123", &uid])
        .status
        .success());
    let agent = admin_json(
        &file,
        &["agent", "add", "CI", "--owner", &uid, "--room", "OPS123"],
    );
    let agent_token = agent["token"].as_str().unwrap().to_string();
    let user_token = admin_json(&file, &["token", "add", &uid, "--label", "phone"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let http = reqwest::Client::new();
    let (_, asked) = {
        let serve = QpServe::start(&["--db", &file]);
        let registered = http
            .post(format!("{}/api/devices", serve.base))
            .bearer_auth(&user_token)
            .json(&json!({"platform": "dev", "push_token": "dev-moved", "app_id": "qp.device"}))
            .send()
            .await
            .unwrap();
        assert_eq!(registered.status().as_u16(), 201);
        let body = json!({"prompt": "Deploy?", "options": [{"value": "approve", "label": "Approve"}, {"value": "deny", "label": "Deny"}]});
        ask_at(&http, &serve.base, &agent_token, &body).await
    };
    let id = asked["id"].as_str().unwrap().to_string();

    let Database::Postgres(url) = common::test_database(dir.path()) else {
        unreachable!()
    };
    // More rows than one page of the copy (5,000) in one table.
    {
        let sqlite = qp_server::store::open(Path::new(&file)).unwrap();
        let conn: &qp_server::store::Conn = &sqlite;
        let tx = conn.transaction().unwrap();
        for i in 0..5_003 {
            tx.execute(
                "INSERT INTO answer_keys (user_id, key, question_id, status, response, created_at)
                 VALUES (?1, ?2, ?3, 200, '{}', ?4)",
                qp_server::params![uid, format!("k-{i}"), id, i],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    let copied = admin_json(&file, &["copy-to-postgres", &url]);
    assert_eq!(copied["copied"]["answer_keys"], 5_003, "{copied}");
    assert_eq!(copied["copied"]["users"], 1, "{copied}");
    assert_eq!(copied["copied"]["questions"], 1, "{copied}");
    assert_eq!(copied["copied"]["tokens"], 2, "{copied}");
    // A second copy would mix two servers' data: refused.
    let again = admin(&file, &["copy-to-postgres", &url]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already has data"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    // qp admin works on PostgreSQL.
    let users = admin(&url, &["user", "list"]);
    assert_eq!(
        String::from_utf8_lossy(&users.stdout),
        format!("{uid}\tFederica\n")
    );
    // The device moved still knows the token that registered it.
    let prefix = &qp_server::ids::token_hash(&user_token)[..12];
    let devices = String::from_utf8(admin(&url, &["device", "list"]).stdout).unwrap();
    assert!(
        devices.contains("dev-moved") && devices.contains(&format!("token {prefix}")),
        "{devices}"
    );

    // The server on PostgreSQL: the same tokens, the same question.
    let serve = QpServe::start(&["--db", &url]);
    let (status, body) = answer_at(&http, &serve.base, &user_token, &id, "approve", None)
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let q: Value = http
        .get(format!(
            "{}/api/agent/questions/{id}/wait?timeout=5",
            serve.base
        ))
        .bearer_auth(&agent_token)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(q["state"], "answered", "{q}");
    assert_eq!(q["answer"]["value"], "approve");
    assert_eq!(q["prompt"], "Deploy?");
    // New rows get new keys after the copied ones.
    let (status, _) = ask_at(
        &http,
        &serve.base,
        &agent_token,
        &json!({"prompt": "And staging?"}),
    )
    .await;
    assert_eq!(status, 201);
    let listed: Value = http
        .get(format!("{}/api/agent/questions?all=true", serve.base))
        .bearer_auth(&agent_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let prompts: Vec<&str> = listed["questions"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|q| q["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["And staging?", "Deploy?"], "newest first");
}

#[test]
fn copy_to_postgres_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.sqlite").display().to_string();
    let out = admin(
        &missing,
        &["copy-to-postgres", "postgres://u@127.0.0.1:1/x"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
    let file = dir.path().join("qp.sqlite").display().to_string();
    admin_json(&file, &["user", "add", "Federica"]);
    let out = admin(&file, &["copy-to-postgres", "/tmp/other.sqlite"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be a postgres:// URL"));
    let out = admin(
        &file,
        &["copy-to-postgres", "postgres://u:pw@127.0.0.1:1/x"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains(":pw@"), "the password is not printed: {err}");
}
