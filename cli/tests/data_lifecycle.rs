//! A clean stop leaves a complete database file,
//! `qp admin backup` under load restores into a server that serves the old
//! tokens, one server per SQLite file, retention deletes only what is old
//! (in batches, while serving), an upgrade from the previous schema with
//! data in it, and offboarding with its audit trail. The engine-neutral
//! ones run on PostgreSQL too when `QP_TEST_POSTGRES` is set.

mod common;

use std::time::{Duration, Instant};

use common::*;
use qp_server::store::{self, offboard, retention, versions, Database};
use serde_json::{json, Value};

fn count(conn: &store::Conn, sql: &str) -> i64 {
    conn.query_row(sql, &[], |r| r.get(0)).unwrap()
}

/// SIGTERM (a clean stop), then the exit.
fn terminate(serve: &mut QpServe) {
    let status = serve.terminate(Duration::from_secs(20));
    assert!(status.success(), "qp serve exited with {status}");
}

#[test]
fn a_file_copy_after_a_clean_stop_has_every_committed_question() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qp.sqlite");
    let ops = seed_ops_room(&store::connect(&Database::Sqlite(db.clone())).unwrap());
    let mut serve = QpServe::start(&[
        "--db",
        db.to_str().unwrap(),
        "--ask-burst",
        "1000",
        "--ask-rate-per-minute",
        "100000",
    ]);
    let mut asked = Vec::new();
    for i in 0..300 {
        let q = http_blocking(
            &serve.base,
            "POST",
            "/api/agent/rooms/OPS123/questions",
            &ops.agent,
            Some(json!({ "prompt": format!("q{i}") })),
        );
        asked.push(q["id"].as_str().unwrap().to_string());
    }
    terminate(&mut serve);
    // A plain copy of the main file only (no -wal, no -shm).
    let copy = dir.path().join("copy.sqlite");
    std::fs::copy(&db, &copy).unwrap();
    let c = rusqlite::Connection::open(&copy).unwrap();
    let n: i64 = c
        .query_row("SELECT COUNT(*) FROM questions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n as usize, asked.len());
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    // And the lock was released: a new server starts on the file.
    let again = QpServe::start(&["--db", db.to_str().unwrap()]);
    drop(again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_server_on_one_sqlite_file_is_refused_with_the_file_and_pid() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qp.sqlite");
    let first = qp_server::serve::start(settings_for(Database::Sqlite(db.clone())), None)
        .await
        .unwrap();
    let e = qp_server::serve::start(settings_for(Database::Sqlite(db.clone())), None)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(&db.display().to_string()), "{e}");
    assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
    assert!(e.contains("one server per SQLite file"), "{e}");
    // The binary says the same and exits non-zero.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in use by another qp serve (pid"),
        "{stderr}"
    );
    // A clean stop releases it.
    first.stop().await;
    let again = qp_server::serve::start(settings_for(Database::Sqlite(db)), None)
        .await
        .unwrap();
    again.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_taken_under_load_restores_into_a_server_that_serves_the_old_tokens() {
    let f = Fixture::with(|s| {
        s.ask_burst = 10_000;
        s.ask_rate_per_minute = 100_000;
        s.answer_burst = 10_000;
        s.answer_rate_per_minute = 100_000;
    })
    .await;
    if f.on_postgres() {
        // The documented way there is pg_dump: the command says so.
        let out = admin(db_arg(&f.database), &["backup", "/nonexistent/x"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("pg_dump"));
        return;
    }
    let Database::Sqlite(path) = f.database.clone() else {
        unreachable!()
    };
    // Load: asks and answers running while the backup is taken.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut load = Vec::new();
    for _ in 0..3 {
        let (http, base, agent, alice) = (
            f.http.clone(),
            f.base.clone(),
            f.agent_token.clone(),
            f.alice_token.clone(),
        );
        let (stop, acked) = (stop.clone(), acked.clone());
        load.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (s, q) = ask_at(&http, &base, &agent, &json!({"prompt": "load"})).await;
                assert_eq!(s, 201, "{q}");
                let id = q["id"].as_str().unwrap().to_string();
                let (s, _) = answer_at(&http, &base, &alice, &id, "approve", None)
                    .await
                    .unwrap();
                assert_eq!(s, 200);
                acked.lock().unwrap().push(id);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before: Vec<String> = acked.lock().unwrap().clone();
    let backup = f.dir.path().join("backup.sqlite");
    let (p, b) = (path.clone(), backup.clone());
    let out = tokio::task::spawn_blocking(move || admin(&p, &["backup", b.to_str().unwrap()]))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for l in load {
        l.await.unwrap();
    }
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["questions"].as_i64().unwrap() >= before.len() as i64);
    assert!(!before.is_empty());
    // Never over an existing file.
    let again = admin(&path, &["backup", backup.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    // Restore: a new server on the copy, the old tokens.
    let restored = qp_server::serve::start(settings_for(Database::Sqlite(backup)), None)
        .await
        .unwrap();
    let base = format!("http://{}", restored.addr);
    for id in &before {
        let r = f
            .http
            .get(format!("{base}/api/agent/questions/{id}"))
            .bearer_auth(&f.agent_token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{id} missing from the backup");
        let q: Value = r.json().await.unwrap();
        assert_eq!(q["state"], "answered", "{q}");
        assert_eq!(q["answer"]["responder"]["id"], f.alice.as_str());
    }
    let (s, q) = ask_at(
        &f.http,
        &base,
        &f.agent_token,
        &json!({"prompt": "after restore"}),
    )
    .await;
    assert_eq!(s, 201, "{q}");
    let (s, _) = answer_at(
        &f.http,
        &base,
        &f.alice_token,
        q["id"].as_str().unwrap(),
        "approve",
        None,
    )
    .await
    .unwrap();
    assert_eq!(s, 200);
    restored.stop().await;
}

fn db_arg(db: &Database) -> String {
    match db {
        Database::Sqlite(p) => p.display().to_string(),
        Database::Postgres(url) => url.clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retention_deletes_only_what_is_old_in_batches_while_serving() {
    let f = Fixture::with(|s| {
        s.sweep_interval = Duration::from_millis(20); // retention every 1.2 s
        s.retention.questions = Some(Duration::from_secs(86_400));
        s.retention.push_jobs = Some(Duration::from_secs(86_400));
        s.retention.webhook_deliveries = Some(Duration::from_secs(86_400));
        s.retention.dev_inbox = Some(Duration::from_secs(86_400));
        s.retention.batch_size = 3;
        s.ask_burst = 1000;
        s.ask_rate_per_minute = 100_000;
    })
    .await;
    let conn = f.db();
    let mut old_answered = Vec::new();
    let mut recent_answered = Vec::new();
    let mut old_pending = Vec::new();
    for i in 0..14 {
        let q = f.ask(json!({"prompt": format!("q{i}")})).await;
        let id = q["id"].as_str().unwrap().to_string();
        match i % 3 {
            0 | 1 if i < 10 => {
                f.answer(&f.alice_token, &id, json!({"value": "approve"}))
                    .await;
                if i % 3 == 0 {
                    old_answered.push(id);
                } else {
                    recent_answered.push(id);
                }
            }
            _ => old_pending.push(id),
        }
    }
    let two_days_ago = qp_server::store::now_secs() - 2 * 86_400;
    for id in old_answered.iter().chain(&old_pending) {
        conn.execute(
            "UPDATE questions SET created_at = ?2 WHERE id = ?1",
            qp_server::params![id, two_days_ago],
        )
        .unwrap();
    }
    // Old and new rows of the queues (a device to hang them on).
    conn.execute(
        "INSERT INTO devices (id, user_id, platform, push_token, app_id, created_at, token_hash) VALUES ('dev_old', ?1, 'dev', 'tok-old', 'app', 0, 'no-such-token')",
        qp_server::params![f.alice],
    )
    .unwrap();
    let old_ms = two_days_ago * 1000;
    let now_ms = qp_server::store::now_ms();
    for (state, at) in [
        ("sent", old_ms),
        ("failed", old_ms),
        ("queued", old_ms),
        ("sent", now_ms),
    ] {
        conn.execute(
            "INSERT INTO push_jobs (device_id, question_id, kind, state, next_attempt_ms, created_at) VALUES ('dev_old', 'q_x', 'question', ?1, ?2, ?3)",
            qp_server::params![state, i64::MAX / 2, at],
        )
        .unwrap();
    }
    for (i, (state, at)) in [
        ("delivered", old_ms),
        ("failed", old_ms),
        ("pending", old_ms),
        ("delivered", now_ms),
    ]
    .into_iter()
    .enumerate()
    {
        conn.execute(
            "INSERT INTO webhook_deliveries (id, room_id, event, body, state, next_attempt_ms, created_at) VALUES (?1, ?2, 'question.answered', '{}', ?3, ?4, ?4)",
            qp_server::params![format!("d_{i}"), f.room_id, state, if state == "pending" { i64::MAX / 2 } else { at }],
        )
        .unwrap();
    }
    for at in [old_ms, old_ms, now_ms] {
        conn.execute(
            "INSERT INTO dev_inbox (device_id, format, payload, created_ms) VALUES ('dev_old', 'apns', '{}', ?1)",
            qp_server::params![at],
        )
        .unwrap();
    }
    // One batch deletes at most batch_size rows.
    let plan = retention::Plan::older_than(Duration::from_secs(86_400), 2, now_ms);
    let (_, n) = plan.step(&*conn).unwrap().unwrap();
    assert!(n <= 2, "{n}");

    // The sweep, while asks and answers go on.
    let t = Instant::now();
    loop {
        let q = f.ask(json!({"prompt": "during"})).await;
        let (s, _) = f
            .answer(
                &f.alice_token,
                q["id"].as_str().unwrap(),
                json!({"value": "approve"}),
            )
            .await;
        assert_eq!(s, 200);
        let left = count(
            &*conn,
            &format!(
                "SELECT COUNT(*) FROM questions WHERE id IN ({})",
                old_answered
                    .iter()
                    .map(|i| format!("'{i}'"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        );
        let old = |sql: &str| {
            conn.query_row(sql, qp_server::params![old_ms], |r| r.get::<i64>(0))
                .unwrap()
        };
        let queues = old("SELECT COUNT(*) FROM push_jobs WHERE created_at = ?1 AND state <> 'queued'")
            + old("SELECT COUNT(*) FROM dev_inbox WHERE created_ms = ?1")
            + old("SELECT COUNT(*) FROM webhook_deliveries WHERE created_at = ?1 AND state <> 'pending'");
        if left == 0 && queues == 0 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "old rows left: {left} questions, {queues} queue rows"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // What is recent or pending is untouched, however old.
    for id in recent_answered.iter().chain(&old_pending) {
        let (s, q) = f
            .call(
                "GET",
                &format!("/api/agent/questions/{id}"),
                Some(&f.agent_token),
                None,
            )
            .await;
        assert_eq!(s, 200, "{id}: {q}");
    }
    assert_eq!(
        count(
            &*conn,
            "SELECT COUNT(*) FROM push_jobs WHERE state = 'queued'"
        ),
        1
    );
    assert_eq!(count(&*conn, "SELECT COUNT(*) FROM push_jobs"), 2);
    assert_eq!(count(&*conn, "SELECT COUNT(*) FROM webhook_deliveries"), 2);
    assert_eq!(count(&*conn, "SELECT COUNT(*) FROM dev_inbox"), 1);

    // `qp admin purge --older-than` deletes the same way, on demand.
    let q = f.ask(json!({"prompt": "to purge"})).await;
    let id = q["id"].as_str().unwrap();
    f.answer(&f.alice_token, id, json!({"value": "approve"}))
        .await;
    conn.execute(
        "UPDATE questions SET created_at = ?2 WHERE id = ?1",
        qp_server::params![id, qp_server::store::now_secs() - 3 * 3600],
    )
    .unwrap();
    let out = admin_json(
        db_arg(&f.database),
        &["purge", "--older-than", "2h", "--batch-size", "1"],
    );
    assert_eq!(out["deleted"]["questions"], 1, "{out}");
    let bad = admin(db_arg(&f.database), &["purge", "--older-than", "2y"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("s, m, h, d or w"));
    for id in &old_pending {
        let (s, _) = f
            .call(
                "GET",
                &format!("/api/agent/questions/{id}"),
                Some(&f.agent_token),
                None,
            )
            .await;
        assert_eq!(s, 200);
    }
}

/// The schema before issue 34's migration (SQLite 9, PostgreSQL 4): what
/// the binary before it made.
fn previous_schema(db: &Database) -> usize {
    match db {
        Database::Sqlite(_) => 9,
        Database::Postgres(_) => 4,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_of_the_previous_schema_with_data_upgrades_and_serves() {
    let dir = tempfile::tempdir().unwrap();
    let db = test_database(dir.path());
    let previous = previous_schema(&db);
    let agent_token = qp_server::ids::new_token(qp_server::ids::AGENT_TOKEN_PREFIX);
    let user_token = qp_server::ids::new_token(qp_server::ids::USER_TOKEN_PREFIX);
    // On a thread of its own: the sync PostgreSQL client runs its own runtime.
    let (seed_db, a_tok, u_tok) = (db.clone(), agent_token.clone(), user_token.clone());
    std::thread::spawn(move || {
        let (db, agent_token, user_token) = (seed_db, a_tok, u_tok);
        let old = versions::create_at_version(&db, previous).unwrap();
        assert_eq!(versions::version_of(&*old).unwrap(), previous);
        let p = |sql: &str, params: &[qp_server::store::sql::Param]| {
            old.execute(sql, params).unwrap();
        };
        use qp_server::params;
        p(
            "INSERT INTO users (id, display_name, created_at) VALUES ('u_ann', 'Ann', 1)",
            &[],
        );
        p(
            "INSERT INTO rooms (id, code, name, created_at) VALUES ('r_ops', 'OPS123', 'Ops', 1)",
            &[],
        );
        p(
            "INSERT INTO memberships (room_id, user_id) VALUES ('r_ops', 'u_ann')",
            &[],
        );
        p("INSERT INTO agents (id, name, owner_user_id, scopes, created_at, handle) VALUES ('a_bot', 'Bot', 'u_ann', 'ask', 1, 'bot')", &[]);
        p(
            "INSERT INTO agent_rooms (agent_id, room_id) VALUES ('a_bot', 'r_ops')",
            &[],
        );
        for (token, kind, subject) in [
            (&agent_token, "agent", "a_bot"),
            (&user_token, "user", "u_ann"),
        ] {
            p(
                "INSERT INTO tokens (hash, kind, subject_id, label, created_at) VALUES (?1, ?2, ?3, 'old', 1)",
                params![qp_server::ids::token_hash(token), kind, subject],
            );
        }
        let now = chrono::Utc::now();
        let at = |d: chrono::Duration| qp_core::protocol::time::format(&(now + d));
        let answered = json!({
            "id": "q_old_answered", "prompt": "Deploy?", "state": "answered", "responder_scope": "room",
            "options": [{"value": "approve", "label": "Approve", "style": "default"}],
            "answer": {"value": "approve", "label": "Approve", "text": null,
                       "responder": {"id": "u_ann", "display_name": "Ann"}, "answered_at": at(chrono::Duration::seconds(-50))},
            "expires_at": at(chrono::Duration::hours(1)), "resolved_at": at(chrono::Duration::seconds(-50)),
            "created_at": at(chrono::Duration::seconds(-60)),
        });
        let pending = json!({
            "id": "q_old_pending", "prompt": "Restart?", "state": "pending", "responder_scope": "room",
            "options": [{"value": "approve", "label": "Approve", "style": "default"}],
            "expires_at": at(chrono::Duration::hours(1)), "created_at": at(chrono::Duration::seconds(-30)),
        });
        for (q, state) in [(&answered, "answered"), (&pending, "pending")] {
            p(
                "INSERT INTO questions (id, room_id, agent_id, state, scope, expires_at, created_at, body) VALUES (?1, 'r_ops', 'a_bot', ?2, 'room', ?3, ?4, ?5)",
                params![q["id"].as_str().unwrap(), state, now.timestamp() + 3600, now.timestamp() - 60, q.to_string()],
            );
        }
    })
    .join()
    .unwrap();
    // --no-migrate refuses it, naming what to run.
    let mut settings = settings_for(db.clone());
    settings.migration = store::Migration::Require;
    let e = qp_server::serve::start(settings.clone(), None)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&format!("version {previous}")) && e.contains("qp migrate"),
        "{e}"
    );
    // `qp migrate`, then the same start works.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args(["migrate", "--db", &db_arg(&db)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["from"], previous);
    let current = m["to"].as_u64().unwrap() as usize;
    assert!(current > previous);
    let server = qp_server::serve::start(settings, None).await.unwrap();
    let base = format!("http://{}", server.addr);
    let http = reqwest::Client::new();
    let q: Value = http
        .get(format!("{base}/api/agent/questions/q_old_answered"))
        .bearer_auth(&agent_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(q["answer"]["responder"]["display_name"], "Ann", "{q}");
    let (s, done) = answer_at(&http, &base, &user_token, "q_old_pending", "approve", None)
        .await
        .unwrap();
    assert_eq!(s, 200, "{done}");
    let (s, q) = ask_at(&http, &base, &agent_token, &json!({"prompt": "new"})).await;
    assert_eq!(s, 201, "{q}");
    // The build and schema are in /metrics.
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("qp_build_info{"))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("schema=\"{current}\"")) && line.contains("commit="),
        "{line}"
    );
    server.stop().await;

    // A database a newer qp migrated further still runs (additive
    // migrations): simulated by recording one more version than this build has.
    {
        let c = connect(&db);
        match &db {
            Database::Sqlite(_) => c
                .batch(&format!("PRAGMA user_version = {}", current + 1))
                .unwrap(),
            Database::Postgres(_) => {
                c.execute(
                    "INSERT INTO qp_schema_migrations (version, applied_at) VALUES (?1, 0)",
                    qp_server::params![(current + 1) as i64],
                )
                .unwrap();
            }
        }
    }
    let server = qp_server::serve::start(settings_for(db.clone()), None)
        .await
        .unwrap();
    let base = format!("http://{}", server.addr);
    let (s, q) = ask_at(
        &http,
        &base,
        &agent_token,
        &json!({"prompt": "newer schema"}),
    )
    .await;
    assert_eq!(s, 201, "{q}");
    server.stop().await;

    let v = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .arg("--version")
        .output()
        .unwrap();
    let v = String::from_utf8_lossy(&v.stdout);
    assert!(v.contains("commit ") && v.contains("schema "), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offboarding_refuses_tokens_and_answers_and_every_step_is_audited() {
    let f = Fixture::new().await;
    let db = db_arg(&f.database);
    // Disable: Alice's token is refused at once, and comes back on enable.
    let out = admin_json(&db, &["user", "disable", &f.alice]);
    assert_eq!(out["state"], "disabled");
    assert!(out["changed"]["tokens"].as_u64().unwrap() >= 1);
    let (s, _) = f
        .call("GET", "/api/questions/pending", Some(&f.alice_token), None)
        .await;
    assert_eq!(s, 401);
    let refused = admin(&db, &["token", "add", &f.alice]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is disabled"));
    admin_json(&db, &["user", "enable", &f.alice]);
    let (s, _) = f
        .call("GET", "/api/questions/pending", Some(&f.alice_token), None)
        .await;
    assert_eq!(s, 200);

    // A removed member cannot answer; a member still can.
    let q = f.ask(json!({"prompt": "who may answer?"})).await;
    let id = q["id"].as_str().unwrap();
    let out = admin(&db, &["room", "remove-member", &f.room_code, &f.bob]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (s, body) = f
        .answer(&f.bob_token, id, json!({"value": "approve"}))
        .await;
    assert_eq!((s, err_code(&body)), (403, "not_eligible"));
    let again = admin(&db, &["room", "remove-member", &f.room_code, &f.bob]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("not a member"));

    // Agent disable and remove.
    admin_json(&db, &["agent", "disable", &agent_id(&f)]);
    let (s, _) = f
        .call("GET", "/api/agent/questions", Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 401);
    admin_json(&db, &["agent", "enable", &agent_id(&f)]);
    let (s, _) = f
        .call("GET", "/api/agent/questions", Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 200);
    let (s, _) = f
        .answer(&f.alice_token, id, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    admin_json(&db, &["agent", "remove", &agent_id(&f)]);
    let (s, _) = f
        .call("GET", "/api/agent/questions", Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 401);
    let enabled = admin_json(&db, &["agent", "enable", &agent_id(&f)]);
    assert_eq!(
        enabled["changed"]["tokens"], 0,
        "a removed agent's tokens are gone"
    );

    // User remove: tokens and devices gone, the name kept for history.
    let removed = admin_json(&db, &["user", "remove", &f.carol]);
    assert_eq!(removed["state"], "removed");
    let (s, _) = f
        .call("GET", "/api/questions/pending", Some(&f.carol_token), None)
        .await;
    assert_eq!(s, 401);
    assert!(offboard::is_disabled(&*f.db(), offboard::Subject::User, &f.carol).unwrap());

    // The export: who answered what.
    let out = admin(&db, &["questions", "export", "--since", "1h"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let row = lines.iter().find(|l| l["id"] == id).unwrap();
    assert_eq!(row["responder"]["id"], f.alice.as_str());
    assert_eq!(row["state"], "answered");
    assert_eq!(row["room"], f.room_code.as_str());
    assert!(row["responder_devices"].is_array());

    // A pairing and a token creation are audited too (a disabled user
    // cannot pair: the code is refused).
    let invite = admin_json(&db, &["user", "invite", &f.alice, "--json"]);
    let (s, paired) = f
        .call(
            "POST",
            "/api/pair",
            None,
            Some(json!({"code": invite["code"]})),
        )
        .await;
    assert_eq!(s, 200, "{paired}");
    admin_json(&db, &["token", "add", &f.bob, "--label", "laptop"]);
    let invite = admin_json(&db, &["user", "invite", &f.bob, "--json"]);
    admin_json(&db, &["user", "disable", &f.bob]);
    let (s, refused) = f
        .call(
            "POST",
            "/api/pair",
            None,
            Some(json!({"code": invite["code"]})),
        )
        .await;
    assert!(s >= 400, "{refused}");

    // An invite made over the admin endpoint names the admin token's label;
    // none is made for a disabled user.
    let operator = admin_json(&db, &["token", "add-admin", "--label", "ops-console"]);
    let operator = operator["token"].as_str().unwrap();
    let (s, made) = f
        .call(
            "POST",
            &format!("/api/admin/users/{}/invites", f.alice),
            Some(operator),
            None,
        )
        .await;
    assert_eq!(s, 201, "{made}");
    let (s, refused) = f
        .call(
            "POST",
            &format!("/api/admin/users/{}/invites", f.bob),
            Some(operator),
            None,
        )
        .await;
    assert_eq!((s, err_code(&refused)), (409, "disabled"), "{refused}");

    // The audit log: each change, with its actor.
    let out = admin(&db, &["audit"]);
    let entries: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let actions: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["subject"].as_str().unwrap(),
            )
        })
        .collect();
    for want in [
        ("user.disable", f.alice.as_str()),
        ("user.enable", f.alice.as_str()),
        ("room.remove_member", f.bob.as_str()),
        ("agent.remove", agent_id(&f).as_str()),
        ("user.remove", f.carol.as_str()),
    ] {
        assert!(actions.contains(&want), "{want:?} not in {actions:?}");
    }
    let pairing = entries.iter().find(|e| e["action"] == "pairing").unwrap();
    assert_eq!(pairing["actor"], format!("user:{}", f.alice));
    assert!(actions.contains(&("token.create", f.bob.as_str())));
    assert_eq!(
        entries.iter().filter(|e| e["action"] == "pairing").count(),
        1,
        "the disabled user's pairing is not recorded as done"
    );
    let over_http: Vec<&Value> = entries
        .iter()
        .filter(|e| e["actor"] == "admin-token:ops-console")
        .collect();
    assert_eq!(over_http.len(), 1, "{over_http:?}");
    assert_eq!(over_http[0]["action"], "invite.create");
    assert_eq!(over_http[0]["subject"], f.alice.as_str());
    assert!(entries
        .iter()
        .filter(|e| e["action"] != "pairing" && e["actor"] != "admin-token:ops-console")
        .all(|e| e["actor"].as_str().unwrap().starts_with("admin-cli:")));
    // A refused command is not audited as done.
    assert!(!actions.contains(&("token.create", f.alice.as_str())));
}

fn agent_id(f: &Fixture) -> String {
    let c = f.db();
    c.query_row(
        "SELECT id FROM agents WHERE name = 'Release Bot'",
        &[],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn the_data_settings_come_from_the_file_and_bad_ones_name_their_setting() {
    use qp_server::config::PartialSettings;
    let dir = tempfile::tempdir().unwrap();
    let file = |text: &str| {
        let p = dir.path().join("qp.toml");
        std::fs::write(&p, text).unwrap();
        PartialSettings::from_file(&p).unwrap()
    };
    let s = PartialSettings::default()
        .resolve(file(
            "no_migrate = true\nretention_questions_days = 0\nretention_push_jobs_days = 2\n\
             retention_batch_size = 50",
        ))
        .unwrap();
    assert_eq!(s.migration, store::Migration::Require);
    assert_eq!(s.retention.questions, None, "0 keeps questions forever");
    assert_eq!(s.retention.push_jobs, Some(Duration::from_secs(2 * 86_400)));
    assert_eq!(s.retention.batch_size, 50);
    let d = PartialSettings::default()
        .resolve(PartialSettings::default())
        .unwrap();
    assert_eq!(d.migration, store::Migration::Apply);
    assert_eq!(d.retention, retention::Retention::default());
    let flags = PartialSettings {
        retention_batch_size: Some(0),
        ..Default::default()
    };
    let e = flags.resolve(file("")).unwrap_err().to_string();
    assert!(e.contains("retention_batch_size"), "{e}");
}

/// `qp migrate` on an empty database (the operator's first step before
/// starting instances with --no-migrate) creates the whole schema. On
/// PostgreSQL it failed: reading the recorded version named a table that
/// did not exist yet.
#[test]
fn qp_migrate_creates_the_schema_of_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = test_database(dir.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args(["migrate", "--db", &db_arg(&db)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["from"], 0, "{m}");
    assert_eq!(
        m["to"].as_u64().unwrap() as usize,
        versions::this_version(match db {
            Database::Sqlite(_) => store::Backend::Sqlite,
            Database::Postgres(_) => store::Backend::Postgres,
        })
    );
}
