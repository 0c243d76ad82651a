//! What an unauthenticated caller (or one person's token) could use up or
//! learn, against a real server on loopback (SQLite, or PostgreSQL with
//! `QP_TEST_POSTGRES`): client registrations (their size, how many sit
//! unused, how long), the authorization form's refusals, where Web Push
//! may connect, connections per address, and devices per person. Other
//! addresses are other loopback addresses (127.0.0.2: all of 127/8 is this
//! machine); the only name used is `localhost`, from the hosts file.

mod common;
#[path = "support/webpush.rs"]
mod webpush_standin;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use common::{err_code, err_field, Fixture};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const REDIRECT: &str = "http://127.0.0.1:33418/callback";

/// An HTTP client whose connections come from `from` (a loopback address).
fn client_from(from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(from.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

async fn register_from(http: &reqwest::Client, f: &Fixture, body: Value) -> (u16, Value) {
    let r = http
        .post(format!("{}/oauth/register", f.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn post_form(f: &Fixture, path: &str, pairs: &[(&str, &str)]) -> (u16, Value) {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let r = f
        .http
        .post(format!("{}{path}", f.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn clients_stored(f: &Fixture) -> i64 {
    f.db()
        .query_row("SELECT COUNT(*) FROM oauth_clients", &[], |r| r.get(0))
        .unwrap()
}

// Dynamic Client Registration (RFC 7591) is open to anyone.

#[tokio::test]
async fn a_registrations_metadata_is_capped_at_2_kb_naming_the_field() {
    let f = Fixture::new().await;
    let long = |i: usize| format!("https://app.example/{}/{i}", "p".repeat(1900));
    let cases = [
        // Ten URIs of 2,000 characters each: 20 KB, before.
        (0..10).map(long).collect::<Vec<_>>(),
        vec![long(1), long(2)],
    ];
    for uris in cases {
        let (s, body) = register_from(
            &f.http,
            &f,
            json!({"client_name": "Big", "redirect_uris": uris}),
        )
        .await;
        assert_eq!(s, 400, "{} URIs taken: {body}", uris.len());
        assert_eq!(body["error"], "invalid_redirect_uri", "{body}");
        let said = body["error_description"].as_str().unwrap();
        assert!(
            said.starts_with("redirect_uris:") && said.contains("2048 bytes"),
            "{said}"
        );
    }
    assert_eq!(clients_stored(&f), 0);
    // Within it: one long URI, several short ones.
    for uris in [
        vec![long(1)],
        (0..10).map(|i| format!("{REDIRECT}{i}")).collect(),
    ] {
        let (s, body) = register_from(
            &f.http,
            &f,
            json!({"client_name": "Fits", "redirect_uris": uris}),
        )
        .await;
        assert_eq!(s, 201, "{body}");
    }
}

#[tokio::test]
async fn a_flood_of_unused_registrations_from_one_address_does_not_stop_another() {
    let f = Fixture::new().await;
    let flood = client_from("127.0.0.1");
    let mut refused = None;
    for i in 0..25 {
        let (s, body) = register_from(
            &flood,
            &f,
            json!({"client_name": format!("Flood {i}"), "redirect_uris": [REDIRECT]}),
        )
        .await;
        if s != 201 {
            refused = Some((i, s, body));
            break;
        }
    }
    let (i, s, body) = refused.expect("25 unused registrations from one address were all kept");
    assert_eq!((i, s), (20, 429), "{body}");
    let said = body["error_description"].as_str().unwrap();
    assert!(
        said.contains("not used yet") && said.contains("at most 20"),
        "{said}"
    );
    assert_eq!(clients_stored(&f), 20);
    // Another address registers, and its client works.
    let other = client_from("127.0.0.2");
    let (s, body) = register_from(
        &other,
        &f,
        json!({"client_name": "Real client", "redirect_uris": [REDIRECT]}),
    )
    .await;
    assert_eq!(s, 201, "{body}");
}

#[tokio::test]
async fn the_oldest_unused_registration_makes_room_at_the_total_cap() {
    use qp_server::store::oauth::{client, put_registered_client, Client, UnusedCaps};
    let f = Fixture::new().await;
    let db = f.db();
    let caps = UnusedCaps {
        per_address: 2,
        total: 3,
    };
    let make = |id: &str| Client {
        id: id.into(),
        kind: "dcr".into(),
        name: id.into(),
        redirect_uris: vec![REDIRECT.into()],
        host: String::new(),
        fetched_at: None,
    };
    for (id, from) in [("c1", "10.0.0.1"), ("c2", "10.0.0.2"), ("c3", "10.0.0.3")] {
        assert!(put_registered_client(&*db, &make(id), from, caps).unwrap());
        // Oldest first, by a second at least.
        db.execute(
            "UPDATE oauth_clients SET created_at = created_at - 10 WHERE id <> ?1",
            qp_server::params![id],
        )
        .unwrap();
    }
    // A fourth address: the oldest unused one goes, the newcomer is kept.
    assert!(put_registered_client(&*db, &make("c4"), "10.0.0.4", caps).unwrap());
    assert!(client(&*db, "c1").unwrap().is_none());
    for id in ["c2", "c3", "c4"] {
        assert!(client(&*db, id).unwrap().is_some(), "{id}");
    }
    // One address at its own cap is refused, and nothing else goes.
    assert!(put_registered_client(&*db, &make("c5"), "10.0.0.4", caps).unwrap());
    assert!(!put_registered_client(&*db, &make("c6"), "10.0.0.4", caps).unwrap());
    assert!(client(&*db, "c6").unwrap().is_none());
}

#[tokio::test]
async fn a_registration_never_used_is_deleted_within_hours_and_a_used_one_kept() {
    use qp_server::store::retention::{run_to_end, Plan, Retention};
    let f = Fixture::new().await;
    let (_, unused) = register_from(
        &f.http,
        &f,
        json!({"client_name": "Unused", "redirect_uris": [REDIRECT]}),
    )
    .await;
    let (_, used) = register_from(
        &f.http,
        &f,
        json!({"client_name": "Used", "redirect_uris": [REDIRECT]}),
    )
    .await;
    let (unused, used) = (
        unused["client_id"].as_str().unwrap().to_string(),
        used["client_id"].as_str().unwrap().to_string(),
    );
    // The used one: a sign-in started with it (a consent asked).
    let (s, body) = post_form(
        &f,
        "/oauth/authorize",
        &[
            ("response_type", "code"),
            ("client_id", &used),
            ("redirect_uri", REDIRECT),
            (
                "code_challenge",
                "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            ),
            ("code_challenge_method", "S256"),
            ("user", &f.alice),
            ("room", &f.room_code),
        ],
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let db = f.db();
    db.execute(
        "UPDATE oauth_clients SET created_at = created_at - 3 * 3600",
        &[],
    )
    .unwrap();
    let plan = Plan::of(
        &Retention::default(),
        Duration::from_secs(86_400),
        chrono::Utc::now().timestamp_millis(),
    );
    let purged = run_to_end(&*db, &plan).unwrap();
    assert_eq!(purged.get("oauth_clients"), Some(&1), "{purged:?}");
    let ids: Vec<String> = db
        .query_map("SELECT id FROM oauth_clients", &[], |r| r.get(0))
        .unwrap();
    assert_eq!(ids, vec![used], "{unused} should be gone");
}

// The authorization form, before anyone signs in.

#[tokio::test]
async fn the_authorization_form_refuses_unknown_people_rooms_and_memberships_alike() {
    let f = Fixture::new().await;
    let (_, reg) = register_from(
        &f.http,
        &f,
        json!({"client_name": "Prober", "redirect_uris": [REDIRECT]}),
    )
    .await;
    let client = reg["client_id"].as_str().unwrap().to_string();
    // Nobody of that name; a room that does not exist; a person who
    // exists (Carol) in a room that exists but is not hers; a person in
    // a room by id but the wrong room code.
    let cases = [
        ("Nobody At All".to_string(), f.room_code.clone()),
        (f.alice.clone(), "NOROOM9".to_string()),
        ("Carol".to_string(), f.room_code.clone()),
        (f.carol.clone(), f.room_code.clone()),
        (f.alice.clone(), f.other_room_code.clone()),
    ];
    let mut said = Vec::new();
    for (user, room) in &cases {
        let (s, body) = post_form(
            &f,
            "/oauth/authorize",
            &[
                ("response_type", "code"),
                ("client_id", &client),
                ("redirect_uri", REDIRECT),
                (
                    "code_challenge",
                    "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                ),
                ("code_challenge_method", "S256"),
                ("user", user),
                ("room", room),
            ],
        )
        .await;
        said.push((s, body["error"].clone(), body["error_description"].clone()));
        let (s, body) = post_form(
            &f,
            "/oauth/device_authorization",
            &[("client_id", "qp-cli"), ("user", user), ("room", room)],
        )
        .await;
        said.push((s, body["error"].clone(), body["error_description"].clone()));
    }
    let first = said[0].clone();
    assert_eq!(first.0, 400, "{first:?}");
    for (i, s) in said.iter().enumerate() {
        assert_eq!(s, &first, "case {i} is told apart: {said:#?}");
    }
    let text = first.2.as_str().unwrap();
    for leak in ["Nobody", "NOROOM9", "Carol", "Alice", "ELSE99", "OPS123"] {
        assert!(!text.contains(leak), "{text}");
    }
}

// Web Push: where the server connects.

async fn register_web(f: &Fixture, subscription: &str) -> (u16, Value) {
    let r = f
        .http
        .post(format!("{}/api/devices", f.base))
        .bearer_auth(&f.alice_token)
        .json(&json!({"platform": "web", "push_token": subscription,
            "app_id": "http://127.0.0.1", "locale": "en"}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn web_push_endpoints_on_another_port_or_this_machine_are_refused() {
    let service = webpush_standin::webpush().await;
    let (_, good) = service.subscribe("x");
    let endpoint = format!("http://{}/push/x", service.host());
    // The default allow-list: its hosts, on 443 only.
    let f = Fixture::new().await;
    for port in ["22", "8443"] {
        let sub = good.replace(&endpoint, &format!("https://fcm.googleapis.com:{port}/x"));
        let (s, body) = register_web(&f, &sub).await;
        assert_eq!(s, 422, "{sub}: {body}");
        assert_eq!(err_field(&body), "push_token");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("port must be 443"),
            "{body}"
        );
    }
    // Allow-listed by name, `localhost` is still this machine.
    let listed = Fixture::with(|s| {
        s.web_push_allow = vec!["localhost".into(), "localhost:8443".into()];
    })
    .await;
    for url in ["https://localhost/push/x", "https://localhost:8443/push/x"] {
        let sub = good.replace(&endpoint, url);
        let (s, body) = register_web(&listed, &sub).await;
        assert_eq!(s, 422, "{url}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains("this machine"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_push_to_a_name_that_resolves_to_loopback_connects_nowhere() {
    // What the push would reach: a listener counting connections.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = reached.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("vapid");
    let f = Fixture::with(move |s| {
        s.web_push_allow = vec![format!("localhost:{port}")];
        s.vapid_key = Some(key);
    })
    .await;
    // Stored as an older server took it (the store does not judge hosts).
    let subscriber = webpush_standin::Subscriber::new();
    let sub = subscriber.subscription(&format!("https://localhost:{port}/push/1"));
    let device = qp_server::store::identity::register_device(
        &*f.db(),
        &f.alice,
        None,
        &qp_server::store::identity::DeviceRegistration {
            platform: "web",
            push_token: &sub,
            app_id: "http://127.0.0.1",
            locale: "en",
            public_key: None,
            apns_environment: None,
        },
    )
    .unwrap();
    f.ask(json!({"prompt": "Deploy?"})).await;
    let mut outcome = None;
    for _ in 0..200 {
        outcome = f
            .db()
            .query_opt(
                "SELECT state, last_error FROM push_jobs WHERE device_id = ?1 AND state <> 'queued'",
                qp_server::params![device.id],
                |r| Ok((r.get::<String>(0)?, r.get::<Option<String>>(1)?)),
            )
            .unwrap();
        if outcome.is_some() || reached.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the server connected to localhost:{port}"
    );
    let (state, error) = outcome.expect("the push was neither sent nor given up");
    assert_eq!(state, "failed");
    assert!(error.unwrap_or_default().contains("this machine"));
}

// Connections per address.

/// A raw `GET path` from `from`: the status line and body.
async fn get_from(from: &str, to: SocketAddr, path: &str) -> String {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(from.parse().unwrap(), 0))
        .unwrap();
    let mut stream = socket.connect(to).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn one_address_holding_idle_sockets_does_not_shut_out_another() {
    // The smallest server-wide cap; the per-address default is at most half.
    let f = Fixture::with(|s| s.max_connections = 16).await;
    let addr: SocketAddr = f.base.trim_start_matches("http://").parse().unwrap();
    let mut idle = Vec::new();
    for _ in 0..16 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        idle.push(socket.connect(addr).await.unwrap());
    }
    // The server has taken them all in (served, or answered and closed).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let more = get_from("127.0.0.1", addr, "/healthz").await;
    assert!(
        more.starts_with("HTTP/1.1 503") && more.contains("too_many_connections"),
        "{more}"
    );
    let other = get_from("127.0.0.2", addr, "/healthz").await;
    assert!(other.starts_with("HTTP/1.1 200"), "{other}");
    let metrics = get_from("127.0.0.3", addr, "/metrics").await;
    let refused: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("qp_connections_refused_per_address_total "))
        .unwrap_or_else(|| panic!("no metric in {metrics}"))
        .trim()
        .parse()
        .unwrap();
    assert!(refused >= 9.0, "{refused}");
    drop(idle);
}

#[tokio::test]
async fn the_per_address_cap_is_a_setting() {
    let f = Fixture::with(|s| s.max_connections_per_address = 3).await;
    let addr: SocketAddr = f.base.trim_start_matches("http://").parse().unwrap();
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let more = get_from("127.0.0.1", addr, "/healthz").await;
    assert!(more.contains("too_many_connections"), "{more}");
    assert!(more.contains("3 connections"), "{more}");
    // Closing one frees its place.
    drop(idle.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let again = get_from("127.0.0.1", addr, "/healthz").await;
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
}

// Devices per person.

async fn register_dev(f: &Fixture, token: &str, push_token: &str, app: &str) -> (u16, Value) {
    let r = f
        .http
        .post(format!("{}/api/devices", f.base))
        .bearer_auth(token)
        .json(&json!({"platform": "dev", "push_token": push_token, "app_id": app}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn devices_per_person_are_capped_and_the_same_device_may_always_come_back() {
    use qp_server::store::identity::MAX_DEVICES_PER_USER;
    let f = Fixture::new().await;
    let cap = MAX_DEVICES_PER_USER as usize;
    let mut first = String::new();
    for i in 0..cap {
        let (s, body) = register_dev(&f, &f.alice_token, &format!("tok-{i}"), "app.one").await;
        assert_eq!(s, 201, "{i}: {body}");
        if i == 0 {
            first = body["id"].as_str().unwrap().to_string();
        }
    }
    // Another token of hers (another phone): a new device is refused.
    let other_phone =
        qp_server::store::identity::create_user_token(&*f.db(), &f.alice, "tablet").unwrap();
    let (s, body) = register_dev(&f, &other_phone, "tok-new", "app.one").await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(err_field(&body), "push_token");
    assert_eq!(err_code(&body), "limit_reached");
    let said = body["message"].as_str().unwrap();
    assert!(said.contains(&format!("is {cap}")), "{said}");
    // The same device again, by its push token: updated, not refused.
    let (s, body) = register_dev(&f, &f.alice_token, "tok-0", "app.one").await;
    assert_eq!(s, 201, "{body}");
    assert_eq!(body["id"], first.as_str());
    // A device of hers with a new push token (the service rotated it)
    // takes over its own registration.
    let (s, body) = register_dev(&f, &f.alice_token, "tok-rotated", "app.one").await;
    assert_eq!(s, 201, "{body}");
    let count: i64 = f
        .db()
        .query_row(
            "SELECT COUNT(*) FROM devices WHERE user_id = ?1",
            qp_server::params![f.alice],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(count, MAX_DEVICES_PER_USER);
    // Someone else is not affected.
    let (s, body) = register_dev(&f, &f.bob_token, "tok-bob", "app.one").await;
    assert_eq!(s, 201, "{body}");
}
