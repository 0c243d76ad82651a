//! What an operator relies on when something breaks: a push credential that
//! is refused (the FCM stand-in's token endpoint answering `400
//! invalid_grant`) costs one token request per backoff step, not one per
//! job, is logged and counted, and shows on `/readyz` with since when; a
//! full database (SQLite's page limit, `PRAGMA max_page_count`, which makes
//! SQLite answer SQLITE_FULL exactly as a full disk does) answers 503
//! `storage_full` with `Retry-After` and makes `/readyz` 503 until a write
//! succeeds again.

mod common;
#[path = "support/gateways.rs"]
mod gateways;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use qp_server::push::fcm::{FcmConfig, ServiceAccount};
use serde_json::{json, Value};

fn fcm_config(url: &str) -> FcmConfig {
    FcmConfig {
        base_url: url.into(),
        account: ServiceAccount {
            project_id: "qp-test".into(),
            client_email: "qp-test@example.iam.gserviceaccount.com".into(),
            private_key: String::from_utf8(gateways::fixture("fcm-test-key.pem"))
                .unwrap()
                .into(),
            token_uri: format!("{url}/token"),
        },
        account_file: None,
        max_connections: 4,
    }
}

async fn get(f: &common::Fixture, path: &str) -> (u16, Value, reqwest::header::HeaderMap) {
    let resp = f
        .http
        .get(format!("{}{path}", f.base))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        headers,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_fcm_credential_backs_off_per_step_and_shows_on_readyz() {
    let fcm = gateways::fcm(Duration::ZERO).await;
    *fcm.state.refuse_tokens.lock().unwrap() = Some((400, json!({"error": "invalid_grant"})));
    let url = fcm.url.clone();
    let f = common::Fixture::with(move |s| s.fcm = Some(fcm_config(&url))).await;
    let (status, ready, _) = get(&f, "/readyz").await;
    assert_eq!(
        (status, ready["status"].as_str()),
        (200, Some("ok")),
        "{ready}"
    );
    assert_eq!(ready["checks"]["push_fcm"]["ok"], true, "{ready}");

    // Ten Android phones, and a question every 200 ms for 3 s: 150 push
    // jobs, each wanting a token.
    for i in 0..10 {
        let (status, body) = f
            .call(
                "POST",
                "/api/devices",
                Some(&f.alice_token),
                Some(json!({"platform": "android", "push_token": format!("fcm-token-{i}"), "app_id": "io.example.app"})),
            )
            .await;
        assert!(status == 200 || status == 201, "{status} {body}");
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(3_000) {
        f.ask(json!({"prompt": "Deploy?", "options": ["yes", "no"], "ttl": 600}))
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let window = started.elapsed();
    let attempts = fcm.state.token_attempts.load(Ordering::SeqCst);
    // Steps of 1 s, 2 s, 4 s: requests at about 0, 1 and 3 s.
    assert!(
        (2..=4).contains(&attempts),
        "{attempts} token requests in {window:?}: one per backoff step expected"
    );
    assert_eq!(fcm.state.accepted_count(), 0);

    let (status, ready, _) = get(&f, "/readyz").await;
    assert_eq!(
        status, 200,
        "a push credential alone does not take the instance out: {ready}"
    );
    assert_eq!(ready["status"], "degraded", "{ready}");
    let check = &ready["checks"]["push_fcm"];
    assert_eq!(check["ok"], false, "{ready}");
    assert!(
        check["error"].as_str().unwrap().contains("invalid_grant"),
        "{ready}"
    );
    let since: chrono::DateTime<chrono::Utc> = check["since"].as_str().unwrap().parse().unwrap();
    assert!(
        chrono::Utc::now() - since < chrono::TimeDelta::seconds(10),
        "{since}"
    );
    assert_eq!(ready["checks"]["database"]["ok"], true);

    let (_, metrics, _) = get(&f, "/metrics").await;
    let metrics = metrics.as_str().unwrap().to_string();
    let failures: f64 = metrics
        .lines()
        .find(|l| l.starts_with("qp_push_auth_failures_total{gateway=\"fcm\"}"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no auth failure counter in\n{metrics}"))
        .parse()
        .unwrap();
    // Every refused token request counted once. A step can fall between
    // the count above and this scrape (the third one is at about 3 s):
    // the gateway's count from before and after the scrape brackets it.
    let attempts_now = fcm.state.token_attempts.load(Ordering::SeqCst);
    assert!(
        (attempts..=attempts_now).contains(&(failures as usize)),
        "{failures} failures counted, {attempts}..{attempts_now} token requests: {metrics}"
    );
    assert!(
        metrics.contains("qp_push_credential_failing{gateway=\"fcm\"} 1"),
        "{metrics}"
    );

    // The key is fixed: the next step's request gets a token, the queued
    // pushes go, and readiness is ok again.
    *fcm.state.refuse_tokens.lock().unwrap() = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, ready, _) = get(&f, "/readyz").await;
        if ready["status"] == "ok" && fcm.state.accepted_count() > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "not recovered: {ready}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_full_database_answers_503_with_retry_after_and_readyz_says_since_when() {
    let f = common::Fixture::with(|s| s.ask_burst = 1000).await;
    if f.on_postgres() {
        // PostgreSQL's disk_full (53100) maps the same way (http::ready);
        // a full disk cannot be made on the shared test server.
        return;
    }
    f.ask(json!({"prompt": "Before"})).await;
    let app = f.server.as_ref().unwrap().app.clone();
    // The server's one SQLite connection may grow the file no further.
    let limit = |extra: i64| {
        let app = app.clone();
        async move {
            app.db
                .run(move |c| {
                    let pages = c.query_row("PRAGMA page_count", &[], |r| r.get::<i64>(0))?;
                    c.query_row(
                        &format!("PRAGMA max_page_count = {}", pages + extra),
                        &[],
                        |r| r.get::<i64>(0),
                    )
                })
                .await
                .unwrap()
        }
    };
    limit(0).await;
    let blob = "x".repeat(7_000);
    let mut full = None;
    for _ in 0..50 {
        let resp = f
            .http
            .post(format!(
                "{}/api/agent/rooms/{}/questions",
                f.base, f.room_code
            ))
            .bearer_auth(&f.agent_token)
            .json(&json!({"prompt": "Full?", "data": {"blob": blob}}))
            .send()
            .await
            .unwrap();
        if resp.status() != 201 {
            full = Some(resp);
            break;
        }
    }
    let resp = full.expect("the page limit never refused a write");
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "30");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(common::err_code(&body), "storage_full", "{body}");

    let (status, ready, _) = get(&f, "/readyz").await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["status"], "unavailable");
    let storage = &ready["checks"]["storage"];
    assert_eq!(storage["ok"], false, "{ready}");
    assert!(storage["since"].as_str().is_some(), "{ready}");
    assert!(
        storage["error"].as_str().unwrap().contains("full"),
        "{ready}"
    );
    // Liveness is not readiness: the process and database still answer.
    assert_eq!(get(&f, "/healthz").await.0, 200);

    // Room made: the next write goes through and readiness clears.
    limit(100_000).await;
    f.ask(json!({"prompt": "After"})).await;
    let (status, ready, _) = get(&f, "/readyz").await;
    assert_eq!(
        (status, ready["status"].as_str()),
        (200, Some("ok")),
        "{ready}"
    );
}

/// The push keys are read again when their files change, as the
/// TLS files are. Here the APNs key on disk is the wrong one: the stand-in
/// APNs refuses its provider tokens (403 InvalidProviderToken) and the
/// credential backs off (1, 2, 4, then 8 s). Replacing the file with the
/// right key ends the backoff: the next question's push is signed with it
/// and accepted at once, not after the 8 s step, with no restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_apns_key_file_is_used_without_a_restart() {
    use qp_server::push::apns::ApnsConfig;
    use qp_server::push::key_file::WatchedFile;
    let apns = gateways::apns(Duration::ZERO, 100).await;
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("AuthKey.p8");
    let wrong = rcgen::KeyPair::generate().unwrap().serialize_pem();
    assert!(
        wrong.contains("BEGIN PRIVATE KEY"),
        "a PKCS#8 key, as .p8 files are"
    );
    std::fs::write(&key_path, &wrong).unwrap();
    let (key_file, key_pem) =
        WatchedFile::read_every(&key_path, Duration::from_millis(100)).unwrap();
    let config = ApnsConfig {
        base_url: apns.url.clone(),
        team_id: "TEAM123456".into(),
        key_id: "KEY1234567".into(),
        key_pem: key_pem.into(),
        key_file: Some(key_file),
        token_ttl: qp_server::push::apns::TOKEN_TTL,
        max_connections: 2,
    };
    let f = common::Fixture::with(move |s| s.apns = Some(config)).await;
    let (status, body) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.alice_token),
            Some(json!({"platform": "ios", "push_token": "ab".repeat(32), "app_id": "io.example.app"})),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    f.ask(json!({"prompt": "Deploy?", "ttl": 600})).await;
    // Refusals at about 0, 1, 3 and 7 s: the step is now 8 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    while apns.state.bad_provider_tokens.load(Ordering::SeqCst) < 4 {
        assert!(Instant::now() < deadline, "APNs was not tried four times");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, ready, _) = get(&f, "/readyz").await;
    assert_eq!(ready["checks"]["push_apns"]["ok"], false, "{ready}");
    assert_eq!(apns.state.accepted_count(), 0);

    std::fs::write(&key_path, gateways::fixture("apns-test-key.p8")).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = Instant::now();
    f.ask(json!({"prompt": "Roll back?", "ttl": 600})).await;
    while apns.state.accepted_count() == 0 {
        assert!(
            asked.elapsed() < Duration::from_secs(4),
            "the new key waited out the old key's 8 s backoff"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        apns.state.bad_provider_tokens.load(Ordering::SeqCst),
        4,
        "a token signed with the old key was sent after the file changed"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, ready, _) = get(&f, "/readyz").await;
        if ready["checks"]["push_apns"]["ok"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "still failing: {ready}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One request on a raw keep-alive connection; the response's status line.
async fn get_on(c: &mut tokio::net::TcpStream, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: qp\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = c.read(&mut buf).await.unwrap();
        assert!(
            n > 0,
            "closed mid-response: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .expect("a content-length");
            if body.len() >= len {
                return head.lines().next().unwrap().to_string();
            }
        }
    }
}

/// A keep-alive connection left idle is closed after
/// `idle_timeout_secs` (75 s by default, above load balancers' 60 s, so the
/// balancer closes first and never sends into a closing connection); one in
/// use is kept however long it lives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_close_after_the_idle_timeout_and_busy_ones_stay() {
    use tokio::io::AsyncReadExt;
    let idle = Duration::from_secs(2);
    let f = common::Fixture::with(move |s| s.idle_timeout = idle).await;
    let addr = f.base.strip_prefix("http://").unwrap().to_string();
    let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // Used every second for 4 s: twice the idle timeout, never idle that long.
    for _ in 0..5 {
        assert_eq!(get_on(&mut c, "/healthz").await, "HTTP/1.1 200 OK");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(get_on(&mut c, "/healthz").await, "HTTP/1.1 200 OK");
    let last = Instant::now();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(idle * 3, c.read(&mut buf))
        .await
        .expect("the idle connection was not closed")
        .unwrap_or(0);
    assert_eq!(n, 0, "the server sent something on an idle connection");
    let after = last.elapsed();
    assert!(
        after >= idle - Duration::from_millis(300),
        "closed after {after:?}, before the idle timeout"
    );
}

/// The FCM service account is read again when its file changes:
/// here the first file names a token endpoint nobody answers (the
/// credential backs off), the replaced one the stand-in's; the next push
/// takes a token from the new account at once, with no restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_fcm_service_account_file_is_used_without_a_restart() {
    use qp_server::push::key_file::WatchedFile;
    let fcm = gateways::fcm(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("service-account.json");
    let account = |token_uri: &str| {
        json!({
            "type": "service_account",
            "project_id": "qp-test",
            "client_email": "qp-test@example.iam.gserviceaccount.com",
            "private_key": String::from_utf8(gateways::fixture("fcm-test-key.pem")).unwrap(),
            "token_uri": token_uri,
        })
        .to_string()
    };
    // Port 9 (discard) on loopback: nothing answers there.
    std::fs::write(&path, account("http://127.0.0.1:9/token")).unwrap();
    let (account_file, json) = WatchedFile::read_every(&path, Duration::from_millis(100)).unwrap();
    let mut config = fcm_config(&fcm.url);
    config.account = qp_server::push::fcm::FcmTransport::account_from_bytes(&json).unwrap();
    config.account_file = Some(account_file);
    let f = common::Fixture::with(move |s| s.fcm = Some(config)).await;
    let (status, body) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.alice_token),
            Some(json!({"platform": "android", "push_token": "fcm-token-reload", "app_id": "io.example.app"})),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    f.ask(json!({"prompt": "Deploy?", "ttl": 600})).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, ready, _) = get(&f, "/readyz").await;
        if ready["checks"]["push_fcm"]["ok"] == false {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the bad account was never refused: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(fcm.state.token_attempts.load(Ordering::SeqCst), 0);

    std::fs::write(&path, account(&format!("{}/token", fcm.url))).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = Instant::now();
    f.ask(json!({"prompt": "Roll back?", "ttl": 600})).await;
    while fcm.state.accepted_count() == 0 {
        assert!(
            asked.elapsed() < Duration::from_secs(4),
            "the new service account was not used"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(fcm.state.token_requests.load(Ordering::SeqCst), 1);
}

/// `/readyz` names the configured push routes. On SQLite Web
/// Push is always there (its key beside the database); on PostgreSQL with
/// no APNs, FCM or VAPID key there is none, which degrades readiness with
/// an error saying no phone or browser is notified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_reports_the_push_routes_and_degrades_without_any() {
    let f = common::Fixture::new().await;
    let (status, ready, _) = get(&f, "/readyz").await;
    assert_eq!(status, 200, "{ready}");
    let routes = &ready["checks"]["push_routes"];
    if f.on_postgres() {
        assert_eq!(routes["ok"], false, "{ready}");
        assert_eq!(routes["routes"], json!([]), "{ready}");
        assert!(
            routes["error"].as_str().unwrap().contains("no push route"),
            "{ready}"
        );
        assert_eq!(ready["status"], "degraded", "{ready}");
    } else {
        assert_eq!(routes["ok"], true, "{ready}");
        assert_eq!(routes["routes"], json!(["web_push"]), "{ready}");
        assert_eq!(ready["status"], "ok", "{ready}");
    }
    let fcm = fcm_config("http://127.0.0.1:9");
    let f = common::Fixture::with(|s| s.fcm = Some(fcm)).await;
    let (_, ready, _) = get(&f, "/readyz").await;
    let routes = &ready["checks"]["push_routes"]["routes"];
    assert!(
        routes.as_array().unwrap().contains(&json!("fcm")),
        "{ready}"
    );
}

/// An operator's change and its audit row commit together: while the
/// audit log cannot be written, the change is refused and nothing of it
/// stays; once it can, both appear.
#[tokio::test]
async fn an_admin_change_and_its_audit_row_commit_together_or_not_at_all() {
    use qp_server::app::admin;
    use qp_server::store::{audit, identity, sql::Sql};
    let f = common::Fixture::new().await;
    let db = f.db();
    let before = audit::since(&*db, 0, 1000).unwrap().len();
    // A trigger refusing every audit insert, on either engine, stands for
    // a log that cannot be written.
    let refuse = if f.on_postgres() {
        "CREATE FUNCTION refuse_audit() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'no audit'; END $$ LANGUAGE plpgsql;
         CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit();"
    } else {
        "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'no audit'); END;"
    };
    db.batch(refuse).unwrap();
    let refused = admin::add_room(&*db, "admin-cli:test", "Unlogged", Some("unlogged"));
    assert!(
        refused.is_err(),
        "the change went through without its audit row"
    );
    assert!(
        identity::require_room(&*db, "unlogged").is_err(),
        "the room stayed although its audit row was refused"
    );
    db.batch(if f.on_postgres() {
        "DROP TRIGGER refuse_audit ON audit_log; DROP FUNCTION refuse_audit();"
    } else {
        "DROP TRIGGER refuse_audit;"
    })
    .unwrap();
    admin::add_room(&*db, "admin-cli:test", "Logged", Some("logged")).unwrap();
    identity::require_room(&*db, "logged").unwrap();
    let log = audit::since(&*db, 0, 1000).unwrap();
    assert_eq!(log.len(), before + 1);
    let last = log.last().unwrap();
    assert_eq!(
        (
            last.actor.as_str(),
            last.action.as_str(),
            last.detail.as_str()
        ),
        ("admin-cli:test", "room.add", "Logged")
    );
}
