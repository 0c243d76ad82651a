//! The asker verbs of the built `qp` binary (`ask`, `wait`, `watch`,
//! `list`, `cancel`): their stdout and exit codes, as a shell script would
//! see them.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

mod common;

use common::cli::{finish, setup, QP};

#[test]
fn wait_prints_the_value_and_exits_0_when_answered() {
    let env = setup();
    let child = env
        .qp(&["ask", "OPS123", "Deploy to prod?", "--yes-no", "--wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = env.pending_id();
    env.answer(&id, json!({"value": "approve"}));
    let (code, out, err) = finish(child);
    assert_eq!((code, out.as_str()), (0, "approve\n"), "stderr: {err}");
    assert!(err.contains("answered by Federica"));
}

#[test]
fn the_shell_gate_of_the_spec_works() {
    let env = setup();
    let script = format!(
        "if [ \"$({QP} ask OPS123 'Ship it?' --yes-no --wait)\" = approve ]; then echo SHIPPED; else echo HELD; fi"
    );
    let child = Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("QP_URL", &env.url)
        .env("QP_TOKEN", &env.agent_token)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = env.pending_id();
    env.answer(&id, json!({"value": "deny"}));
    let (_, out, _) = finish(child);
    assert_eq!(out, "HELD\n");
}

#[test]
fn typed_answers_and_options_from_flags() {
    let env = setup();
    let child = env
        .qp(&[
            "ask",
            "Which env and why?",
            "--option",
            "staging",
            "--option",
            "prod:Production:primary",
            "--text",
            "or type",
            "--text-max",
            "30",
            "--context",
            "Release 2.4",
            "--wait",
        ])
        .env("QP_ROOM", "OPS123")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = env.pending_id();
    let q = env.http(
        "GET",
        &format!("/api/questions/{id}"),
        &env.user_token,
        None,
    );
    assert_eq!(
        q["options"][1],
        json!({"value": "prod", "label": "Production", "style": "primary", "primary": true, "destructive": false})
    );
    assert_eq!(
        q["text_input"],
        json!({"placeholder": "or type", "max_length": 30})
    );
    assert_eq!(q["context"], "Release 2.4");
    env.answer(&id, json!({"text": "staging is broken"}));
    let (code, out, _) = finish(child);
    assert_eq!((code, out.as_str()), (0, "staging is broken\n"));
}

#[test]
fn cancelled_exits_4_and_expired_exits_3() {
    let env = setup();
    let (code, out, _) = env.run(&["ask", "OPS123", "Cancel me?"]);
    assert_eq!(code, 0);
    let id = out.trim().to_string();
    assert!(id.starts_with("q_"), "prints only the id: {out:?}");
    let watcher = env
        .qp(&["watch", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (code, out, _) = env.run(&["cancel", &id]);
    assert_eq!((code, out.trim()), (0, format!("{id} cancelled").as_str()));
    let (code, out, err) = finish(watcher);
    assert_eq!((code, out.as_str()), (4, ""), "{err}");
    let (code, _, err) = env.run(&["cancel", &id]);
    assert_eq!(code, 1, "cancelling twice is an error: {err}");

    let (_, out, _) = env.run(&["ask", "OPS123", "Expire me?"]);
    let id = out.trim().to_string();
    let t = chrono::Utc::now().timestamp() + 1;
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    conn.execute(
        "UPDATE questions SET expires_at = ?2, body = json_set(body, '$.expires_at', ?3) WHERE id = ?1",
        rusqlite::params![id, t, qp_core::protocol::time::format(&chrono::DateTime::from_timestamp(t, 0).unwrap())],
    )
    .unwrap();
    let (code, out, err) = env.run(&["watch", &id]);
    assert_eq!((code, out.as_str()), (3, ""), "{err}");
    assert!(err.contains("expired"));
}

#[test]
fn list_json_and_env_room() {
    let env = setup();
    let (code, out, _) = env
        .qp(&[
            "ask",
            "From env room",
            "--json",
            "--correlation-id",
            "c-1",
            "--data",
            "{\"k\":1}",
        ])
        .env("QP_ROOM", "OPS123")
        .output()
        .map(|o| {
            (
                o.status.code().unwrap(),
                String::from_utf8(o.stdout).unwrap(),
                (),
            )
        })
        .unwrap();
    assert_eq!(code, 0);
    let q: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (q["correlation_id"].as_str(), q["data"].clone()),
        (Some("c-1"), json!({"k": 1}))
    );
    let (code, out, _) = env.run(&["list", "--state", "pending"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(q["id"].as_str().unwrap()), "{out}");
    let (code, out, _) = env.run(&["list", "--json"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["questions"][0]["id"], q["id"]);
}

#[test]
fn usage_errors_exit_2_and_errors_exit_1() {
    let env = setup();
    for args in [
        vec!["ask"],
        vec!["ask", "OPS123", "x", "--option", "a:A:loud"],
        vec!["ask", "OPS123", "x", "--yes-no", "--option", "a"],
        vec!["ask", "OPS123", "x", "--data", "[1]"],
        vec!["ask", "OPS123", "x", "--scope", "everyone"],
        vec!["ask", "only-a-prompt"],
        vec!["frobnicate"],
    ] {
        let (code, _, err) = env.run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let (code, _, err) = env
        .qp(&["ask", "OPS123", "x"])
        .env_remove("QP_TOKEN")
        .output()
        .map(|o| {
            (
                o.status.code().unwrap(),
                (),
                String::from_utf8(o.stderr).unwrap(),
            )
        })
        .unwrap();
    assert_eq!(code, 2);
    assert!(err.contains("QP_TOKEN"));

    let (code, _, err) = env.run(&["ask", "NOROOM", "x"]);
    assert_eq!(code, 1);
    assert!(err.contains("no room"), "{err}");
    let long = "p".repeat(501);
    let (code, _, err) = env.run(&["ask", "OPS123", &long]);
    assert_eq!(code, 1);
    assert!(
        err.contains("prompt") && err.contains("500"),
        "the message names the field and the rule: {err}"
    );
    let (code, _, _) = env
        .qp(&["list"])
        .env("QP_URL", "http://127.0.0.1:9")
        .output()
        .map(|o| (o.status.code().unwrap(), (), ()))
        .unwrap();
    assert_eq!(code, 1, "an unreachable server is an error");
}

#[test]
fn ctrl_c_while_waiting_leaves_the_question_and_says_how_to_resume() {
    let env = setup();
    let child = env
        .qp(&["ask", "OPS123", "Interrupt me", "--wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = env.pending_id();
    std::thread::sleep(Duration::from_millis(200));
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let (code, _, err) = finish(child);
    assert_eq!(code, 130);
    assert!(err.contains(&format!("qp watch {id}")), "{err}");
    let q = env.http(
        "GET",
        &format!("/api/agent/questions/{id}"),
        &env.agent_token,
        None,
    );
    assert_eq!(q["state"], "pending");
}

#[test]
fn help_documents_settings_and_exit_codes() {
    let out = Command::new(QP).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "QP_DB",
        "QP_LISTEN",
        "--config",
        "QP_ASK_RATE_PER_MINUTE",
        "127.0.0.1:8750",
    ] {
        assert!(help.contains(needle), "serve --help lacks {needle}");
    }
    let out = Command::new(QP).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("3 expired") && help.contains("4 cancelled"),
        "{help}"
    );
    let out = Command::new(QP)
        .args(["serve", "--config", "/nonexistent/qp.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `qp ask` when no device can receive the question (nobody in
/// the room has registered one) still asks, prints the id on stdout as
/// always, and warns on stderr; `--json` carries `pushed_to_devices`.
#[test]
fn ask_warns_when_no_device_can_receive_the_question() {
    let env = setup();
    let (code, out, err) = env.run(&["ask", "OPS123", "Anyone?", "--yes-no"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.trim().starts_with("q_"), "{out}");
    assert!(err.contains("warning: no device can receive"), "{err}");
    let (code, out, err) = env.run(&["ask", "OPS123", "Anyone?", "--yes-no", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["pushed_to_devices"], 0, "{v}");

    let dev = env.http(
        "POST",
        "/api/devices",
        &env.user_token,
        Some(json!({"platform": "dev", "push_token": "dev-fed-1", "app_id": "qp.device"})),
    );
    assert!(dev["id"].is_string(), "{dev}");
    let (code, _, err) = env.run(&["ask", "OPS123", "Now?", "--yes-no"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
}
