//! Regression tests for what abuse testing found (each reproduces a report):
//! deep `data` poisoning every reader, a push token moving a device with its
//! history, invisible buttons and reversed text.

mod common;

use common::{err_code, Fixture};
use serde_json::{json, Value};

fn nested(depth: usize) -> Value {
    let mut v = json!({"leaf": 1});
    for _ in 1..depth {
        v = json!({ "a": v });
    }
    v
}

#[tokio::test]
async fn deeply_nested_data_is_refused_and_every_reader_keeps_working() {
    let f = Fixture::new().await;
    // The report: 125 levels were accepted, and the pending list (two levels
    // deeper) then failed to parse on every phone for as long as it was pending.
    let (s, b) = f
        .call(
            "POST",
            &format!("/api/agent/rooms/{}/questions", f.room_code),
            Some(&f.agent_token),
            Some(json!({"prompt": "Deploy?", "responder_scope": "room", "data": nested(125)})),
        )
        .await;
    assert_eq!(
        (s, err_code(&b), b["field"].as_str()),
        (422, "too_deep", Some("data"))
    );
    f.ask(json!({"prompt": "Deploy?", "responder_scope": "room", "data": nested(32)}))
        .await;
    // The phone side reads the list with serde, as sync does.
    let resp = f
        .http
        .get(format!("{}/api/questions/pending", f.base))
        .bearer_auth(&f.bob_token)
        .send()
        .await
        .unwrap();
    #[derive(serde::Deserialize)]
    struct Pending {
        questions: Vec<qp_core::protocol::Question>,
    }
    let list: Pending = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(list.questions.len(), 1);
    let (s, _) = f
        .call("GET", "/api/agent/questions", Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 200);
}

async fn inbox(f: &Fixture, token: &str, device: &str) -> (u16, Value) {
    f.call(
        "GET",
        &format!("/api/dev/inbox?device={device}&after=0&timeout=0"),
        Some(token),
        None,
    )
    .await
}

#[tokio::test]
async fn a_push_token_that_changes_hands_starts_a_clean_history() {
    let f = Fixture::new().await;
    let reg = json!({"platform": "dev", "push_token": "dev-shared-phone", "app_id": "ios"});
    let (s, alice_dev) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.alice_token),
            Some(reg.clone()),
        )
        .await;
    assert_eq!(s, 201);
    let alice_dev = alice_dev["id"].as_str().unwrap().to_string();
    f.ask(json!({"prompt": "Rotate the secret key 42?", "responder_scope": "room"}))
        .await;
    // Wait for the dev transport to deliver it to Alice's device.
    let mut delivered = false;
    for _ in 0..50 {
        let (_, b) = inbox(&f, &f.alice_token, &alice_dev).await;
        if b["pushes"].as_array().is_some_and(|p| !p.is_empty()) {
            delivered = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(delivered);

    // While Alice's device holds the push token, Bob cannot take it (issue
    // 32, finding 5: that would send his questions to her phone).
    let (s, _) = f
        .call(
            "POST",
            "/api/devices",
            Some(&f.bob_token),
            Some(reg.clone()),
        )
        .await;
    assert_eq!(s, 409);
    // The phone changes hands: its old registration is removed first (by
    // Alice here; an operator's `qp admin device remove` or revoking her
    // token does the same), then Bob registers the same push token.
    let (s, _) = f
        .call(
            "DELETE",
            &format!("/api/devices/{alice_dev}"),
            Some(&f.alice_token),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let (s, bob_dev) = f
        .call("POST", "/api/devices", Some(&f.bob_token), Some(reg))
        .await;
    assert_eq!(s, 201);
    let bob_dev = bob_dev["id"].as_str().unwrap().to_string();
    assert_ne!(bob_dev, alice_dev, "a new owner gets a new device");
    let (s, b) = inbox(&f, &f.bob_token, &bob_dev).await;
    assert_eq!(s, 200);
    assert!(
        !b.to_string().contains("Rotate the secret"),
        "the earlier owner's pushes are not readable: {b}"
    );
    let (s, _) = inbox(&f, &f.bob_token, &alice_dev).await;
    assert_eq!(s, 404);
    let left: i64 = f
        .db()
        .query_row("SELECT COUNT(*) FROM dev_inbox", &[], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0, "the old history is gone, not just hidden");
}

#[tokio::test]
async fn invisible_buttons_and_reversed_text_are_refused() {
    let f = Fixture::new().await;
    for (body, field, code) in [
        (
            json!({"prompt": "Deploy?", "options": [{"value": "a", "label": "\u{200B}"}, "b"]}),
            "options[0].label",
            "empty",
        ),
        (
            json!({"prompt": "Deploy?", "options": ["a", {"value": "b", "label": "\u{2800}\u{2800}"}]}),
            "options[1].label",
            "empty",
        ),
        (
            json!({"prompt": "Pay \u{202E}001$"}),
            "prompt",
            "invalid_characters",
        ),
        (
            json!({"prompt": "Deploy?", "options": [{"value": "a", "label": "\u{202E}yneD"}, "b"]}),
            "options[0].label",
            "invalid_characters",
        ),
    ] {
        let (s, b) = f
            .call(
                "POST",
                &format!("/api/agent/rooms/{}/questions", f.room_code),
                Some(&f.agent_token),
                Some(body),
            )
            .await;
        assert_eq!(
            (s, err_code(&b), b["field"].as_str()),
            (422, code, Some(field)),
            "{b}"
        );
    }
}

/// `/metrics` in Prometheus' text format, parsed: every line is a comment or
/// `name{labels} value`, and the listed series are there with the numbers
/// the server's state implies.
#[tokio::test]
async fn metrics_show_questions_waiters_queues_and_latency() {
    let f = Fixture::new().await;
    let q = f
        .ask(json!({"prompt": "Deploy?", "responder_scope": "room"}))
        .await;
    let id = q["id"].as_str().unwrap().to_string();
    let parked = {
        let (http, base, token) = (f.http.clone(), f.base.clone(), f.agent_token.clone());
        tokio::spawn(async move {
            http.get(format!("{base}/api/agent/questions/{id}/wait?timeout=2"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let resp = f
        .http
        .get(format!("{}/metrics", f.base))
        .send()
        .await
        .unwrap();
    assert!(resp
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = resp.text().await.unwrap();
    let mut samples = std::collections::HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
        let name = series.split('{').next().unwrap();
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        samples.insert(series.to_string(), value);
    }
    assert_eq!(samples[r#"qp_questions{state="pending"}"#], 1.0);
    assert_eq!(samples[r#"qp_questions{state="answered"}"#], 0.0);
    assert_eq!(samples["qp_waiters_parked"], 1.0);
    for name in [
        "qp_push_queue_depth",
        "qp_push_failed",
        "qp_webhook_queue_depth",
        "qp_webhook_failed",
    ] {
        assert!(samples.contains_key(name), "{name} missing:\n{text}");
    }
    let ask_count = samples
        .iter()
        .find(|(k, _)| {
            k.starts_with("qp_http_request_duration_seconds_count")
                && k.contains(r#"route="/api/agent/rooms/{room}/questions""#)
                && k.contains(r#"status="201""#)
        })
        .map(|(_, v)| *v);
    assert_eq!(ask_count, Some(1.0), "{text}");
    assert!(!text.contains(&f.agent_token));
    let (s, b) = f.call("GET", "/healthz", None, None).await;
    assert_eq!((s, b.as_str()), (200, Some("ok")));
    parked.await.unwrap();
}

/// Opens a connection that announces a 1,000-byte body and sends 3 bytes.
async fn slow_body(base: &str, token: &str, room: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/agent/rooms/{room}/questions HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"p"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_that_never_arrives_gets_408_and_the_connection_closes() {
    use tokio::io::AsyncReadExt;
    let f = Fixture::with(|s| s.body_timeout = std::time::Duration::from_millis(800)).await;
    let started = std::time::Instant::now();
    let mut s = slow_body(&f.base, &f.agent_token, &f.room_code).await;
    let mut reply = Vec::new();
    // Before the fix the connection was held forever: bound the read.
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        s.read_to_end(&mut reply),
    )
    .await
    .expect("the server closed the connection")
    .unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains(r#""code":"request_timeout""#), "{reply}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

/// Soak (bounded, loopback): 2,000 slow-body connections are held while
/// ordinary requests keep answering (well under the slow bodies' timeout).
#[tokio::test(flavor = "multi_thread")]
async fn two_thousand_slow_bodies_do_not_starve_other_requests() {
    // Client and server share this process: 2 sockets per connection.
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap();
    assert!(
        limit >= 5_000,
        "the open-file limit ({limit}) is too low for this soak"
    );
    // All from this one address: its share is raised to hold them.
    let f = Fixture::with(|s| {
        s.body_timeout = std::time::Duration::from_secs(25);
        s.max_connections_per_address = 4_096;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..2_000 {
        held.push(slow_body(&f.base, &f.agent_token, &f.room_code).await);
    }
    let mut worst = std::time::Duration::ZERO;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut n = 0;
    while std::time::Instant::now() < deadline {
        let t = std::time::Instant::now();
        let (s, _) = f.call("GET", "/healthz", None, None).await;
        assert_eq!(s, 200);
        let (s, _) = f
            .call("GET", "/api/agent/questions", Some(&f.agent_token), None)
            .await;
        assert_eq!(s, 200);
        worst = worst.max(t.elapsed());
        n += 1;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(n > 20);
    // Starved, a request would wait for a slow body's 25 s timeout; 1 s
    // tells that apart from a loaded 2-core machine (where a pair took
    // 207 ms once in a CI run beside other builds).
    assert!(
        worst < std::time::Duration::from_secs(1),
        "slowest pair of requests took {worst:?} with 2,000 slow bodies held"
    );
    drop(held);
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_over_the_cap_get_a_clear_503() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let f = Fixture::with(|s| s.max_connections = 20).await;
    let addr = f.base.trim_start_matches("http://").to_string();
    // Twenty silent connections take every slot (hyper waits for headers),
    // from four addresses (one address may hold at most half of them).
    let mut idle = Vec::new();
    for i in 0..20 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket
            .bind(format!("127.0.0.{}:0", 2 + i % 4).parse().unwrap())
            .unwrap();
        idle.push(socket.connect(addr.parse().unwrap()).await.unwrap());
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(5), s.read_to_end(&mut reply))
        .await
        .unwrap()
        .unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
    assert!(reply.contains(r#""code":"over_capacity""#), "{reply}");
    // A slot frees up, and the server serves again.
    drop(idle);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (s, _) = f.call("GET", "/healthz", None, None).await;
    assert_eq!(s, 200);
}

// ---- /metrics: bounded labels, cheap scrapes, loopback only without a token ----

async fn scrape(f: &Fixture, token: Option<&str>) -> (u16, String) {
    let mut req = f.http.get(format!("{}/metrics", f.base));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// The report: the raw method was a label, so 5,000 custom methods made
/// 5,000 series kept for good (18 MB of /metrics, 60 KB method names kept).
#[tokio::test]
async fn custom_methods_do_not_add_metric_series() {
    let f = Fixture::new().await;
    let (_, before) = scrape(&f, None).await;
    for i in 0..300 {
        let method = format!("XMETHOD{i:04}{}", "Q".repeat(2_000));
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let path = if i % 2 == 0 {
            "/api/me"
        } else {
            "/no/such/path"
        };
        let resp = f
            .http
            .request(method, format!("{}{path}", f.base))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_client_error(), "{}", resp.status());
    }
    let (s, text) = scrape(&f, None).await;
    assert_eq!(s, 200);
    assert!(!text.contains("XMETHOD"), "a custom method became a label");
    assert!(text.contains(r#"method="OTHER""#), "{text}");
    // Two routes and a few statuses: a handful of series, not 300.
    assert!(
        text.len() < before.len() + 20_000,
        "/metrics grew from {} to {} bytes",
        before.len(),
        text.len()
    );
}

#[tokio::test]
async fn metrics_take_their_token_when_one_is_set() {
    let token = "scrape-secret-0123456789";
    let f = Fixture::with(|s| s.metrics_token = Some(token.into())).await;
    let (s, body) = f.call("GET", "/metrics", None, None).await;
    assert_eq!((s, err_code(&body)), (401, "unauthorized"), "{body}");
    assert!(body["message"].as_str().unwrap().contains("metrics_token"));
    let (s, _) = scrape(&f, Some("scrape-secret-0123456788")).await;
    assert_eq!(s, 401);
    let (s, text) = scrape(&f, Some(token)).await;
    assert_eq!(s, 200);
    assert!(text.contains("qp_waiters_parked"));
    assert!(!text.contains(token));
}

/// Behind a proxy every client comes from the proxy's address (often
/// loopback), so without a token /metrics answers nobody there.
#[tokio::test]
async fn behind_a_proxy_metrics_need_a_token() {
    let f = Fixture::with(|s| s.behind_proxy = true).await;
    let (s, body) = f.call("GET", "/metrics", None, None).await;
    assert_eq!((s, err_code(&body)), (403, "metrics_forbidden"), "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("--metrics-token"));
    let (s, _) = f.call("GET", "/healthz", None, None).await;
    assert_eq!(s, 200);
}

/// Finding 3, review: "loopback only" was judged on the address the
/// request is taken from, which is the proxy's own when a proxy on the same
/// host forwards to the loopback listener without --behind-proxy (no flag
/// is needed there), and the client's own claim when a trusted proxy passes
/// its `X-Forwarded-For: 127.0.0.1` through. Without a token, a request a
/// proxy forwarded (it carries Forwarded, X-Forwarded-For or X-Real-IP), or
/// any request when trusted proxies are configured, is refused; a local
/// scraper's plain request still gets its metrics.
#[tokio::test]
async fn metrics_are_not_open_to_clients_a_proxy_forwards() {
    let f = Fixture::new().await;
    let (s, _) = scrape(&f, None).await;
    assert_eq!(s, 200, "a local scraper");
    for (name, value) in [
        ("x-forwarded-for", "203.0.113.7"),
        ("forwarded", "for=203.0.113.7"),
        ("x-real-ip", "203.0.113.7"),
    ] {
        let resp = f
            .http
            .get(format!("{}/metrics", f.base))
            .header(name, value)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 403, "forwarded with {name}");
    }
    let f = Fixture::with(|s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let resp = f
        .http
        .get(format!("{}/metrics", f.base))
        .header("x-forwarded-for", "127.0.0.1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403, "a client claiming loopback");
    let (s, _) = scrape(&f, None).await;
    assert_eq!(s, 403, "from a trusted proxy's address");
}

/// The report: with 1 M questions, 8 parallel scrapers each ran full-table
/// counts on the one database thread and /healthz took about 1 s. Here
/// 500,000 questions and 8 scrapers in a loop: /healthz stays quick (9 ms
/// median here, 228 ms when every scrape counted), since
/// the counts are taken once per COUNTS_MAX_AGE, not once per scrape.
#[tokio::test(flavor = "multi_thread")]
async fn parallel_scrapes_do_not_hold_the_database() {
    // The bulk rows are dated 1970: retention would delete them meanwhile.
    let f = Fixture::with(|s| s.retention.questions = None).await;
    let q = f.ask(json!({"prompt": "Deploy?"})).await;
    let agent_id = q["asker"]["id"].as_str().unwrap().to_string();
    f.db()
        .execute(
            "INSERT INTO questions (id, room_id, agent_id, state, scope, expires_at, created_at, body)
             WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500000)
             SELECT 'q_bulk' || x, ?1, ?2, 'answered', 'room', 0, 0, '{}' FROM c",
            qp_server::params![f.room_id, agent_id],
        )
        .unwrap();
    let (s, text) = scrape(&f, None).await;
    assert_eq!(s, 200);
    assert!(
        text.contains(r#"qp_questions{state="answered"} 500000"#),
        "{text}"
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut scrapers = Vec::new();
    for _ in 0..8 {
        let (http, url, stop) = (f.http.clone(), format!("{}/metrics", f.base), stop.clone());
        scrapers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let resp = http.get(&url).send().await.unwrap();
                assert_eq!(resp.status(), 200);
                resp.bytes().await.unwrap();
                n += 1;
            }
            n
        }));
    }
    let mut times = Vec::new();
    for _ in 0..40 {
        let t = std::time::Instant::now();
        let (s, _) = f.call("GET", "/healthz", None, None).await;
        assert_eq!(s, 200);
        times.push(t.elapsed());
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut scrapes = 0;
    for s in scrapers {
        scrapes += s.await.unwrap();
    }
    times.sort();
    let median = times[times.len() / 2];
    assert!(scrapes >= 8, "the scrapers got {scrapes} answers");
    assert!(
        median < std::time::Duration::from_millis(50),
        "/healthz took {median:?} (median) while 8 scrapers ran {scrapes} scrapes"
    );
}
