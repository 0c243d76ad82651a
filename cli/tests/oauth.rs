//! OAuth for remote MCP clients and `qp login --url`, against a real
//! server on loopback (SQLite, or PostgreSQL with `QP_TEST_POSTGRES`): what
//! the refusals say, and the device flow end to end with the `qp` binary,
//! the phone's answer given by the person's user token. The whole flow with
//! a third-party client is `tests/mcp.rs` (the official MCP Python SDK).

mod common;

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::Fixture;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "http://127.0.0.1:33418/callback";
const VERIFIER: &str = "a-verifier-of-at-least-43-characters-0123456789-abcdef";

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The authorization request a browser posts for `client`, with the
/// test's verifier and redirect.
fn authorization_form(client: &str) -> String {
    let c = challenge(VERIFIER);
    form(&[
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", REDIRECT),
        ("code_challenge", c.as_str()),
        ("code_challenge_method", "S256"),
    ])
}

fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

async fn post_form(f: &Fixture, path: &str, pairs: &[(&str, &str)]) -> (u16, Value) {
    let resp = f
        .http
        .post(format!("{}{path}", f.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(form(pairs))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn register(f: &Fixture, name: &str) -> String {
    let (s, body) = f
        .call(
            "POST",
            "/oauth/register",
            None,
            Some(json!({"client_name": name, "redirect_uris": [REDIRECT]})),
        )
        .await;
    assert_eq!(s, 201, "{body}");
    body["client_id"].as_str().unwrap().to_string()
}

/// Starts a consent for `user` in the fixture's room: the page's handle.
async fn start(f: &Fixture, client: &str, user: &str) -> (u16, Value) {
    let c = challenge(VERIFIER);
    post_form(
        f,
        "/oauth/authorize",
        &[
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &c),
            ("code_challenge_method", "S256"),
            ("state", "st4te"),
            ("user", user),
            ("room", &f.room_code),
        ],
    )
    .await
}

/// The consent question pending for the person with `token`.
async fn consent_question(f: &Fixture, token: &str) -> Value {
    for _ in 0..100 {
        let (_, listed) = f
            .call("GET", "/api/questions/pending", Some(token), None)
            .await;
        if let Some(q) = listed["questions"].as_array().and_then(|qs| {
            qs.iter()
                .find(|q| {
                    q["prompt"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("wants to ask you questions")
                })
                .cloned()
        }) {
            return q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no consent question arrived");
}

async fn status(f: &Fixture, handle: &str) -> Value {
    let (s, body) = f
        .call(
            "POST",
            "/oauth/authorize/status",
            None,
            Some(json!({"request": handle, "wait": 5})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    body
}

fn query_of(url: &str) -> std::collections::HashMap<String, String> {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A client registered, and a code the person approved.
async fn approved_code(f: &Fixture) -> (String, String) {
    let client = register(f, "Negative Tests").await;
    let (s, started) = start(f, &client, &f.alice).await;
    assert_eq!(s, 200, "{started}");
    let q = consent_question(f, &f.alice_token).await;
    let id = q["id"].as_str().unwrap();
    let (s, _) = f
        .answer(&f.alice_token, id, json!({"value": "allow"}))
        .await;
    assert_eq!(s, 200);
    let st = status(f, started["request"].as_str().unwrap()).await;
    assert_eq!(st["state"], "approved", "{st}");
    let q = query_of(st["redirect"].as_str().unwrap());
    assert_eq!(q["state"], "st4te");
    assert_eq!(q["iss"], f.base);
    (client, q["code"].clone())
}

async fn exchange(f: &Fixture, client: &str, code: &str, verifier: &str) -> (u16, Value) {
    post_form(
        f,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("resource", &format!("{}/mcp", f.base)),
        ],
    )
    .await
}

/// How many agents Alice owns, as she sees them (`GET /api/me/agents`).
async fn alices_agents(f: &Fixture) -> usize {
    let (_, v) = f
        .call("GET", "/api/me/agents", Some(&f.alice_token), None)
        .await;
    v["agents"].as_array().unwrap().len()
}

/// A raw `initialize` on /mcp with this token: the status.
async fn mcp_status(f: &Fixture, token: &str) -> u16 {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}});
    f.http
        .post(format!("{}/mcp", f.base))
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_wrong_pkce_verifier_is_refused_and_spends_the_code() {
    let f = Fixture::new().await;
    let before = alices_agents(&f).await;
    let (client, code) = approved_code(&f).await;
    assert_eq!(alices_agents(&f).await, before + 1);
    let (s, body) = exchange(
        &f,
        &client,
        &code,
        "another-verifier-of-at-least-43-characters-0123456789",
    )
    .await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(body["error"], "invalid_grant");
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .starts_with("code_verifier:"));
    let (s, body) = exchange(&f, &client, &code, VERIFIER).await;
    assert_eq!(s, 400, "the code is spent: {body}");
    // Nobody can ever collect that approval: its agent is gone with it.
    assert_eq!(
        alices_agents(&f).await,
        before,
        "the refused exchange left its agent"
    );
}

#[tokio::test]
async fn a_replayed_code_is_refused_and_revokes_what_it_gave() {
    let f = Fixture::new().await;
    let (client, code) = approved_code(&f).await;
    let (s, tokens) = exchange(&f, &client, &code, VERIFIER).await;
    assert_eq!(s, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert!(tokens["expires_in"].as_i64().unwrap() <= 900);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(mcp_status(&f, access).await, 200);
    // Existing agent tokens keep working on /mcp beside OAuth's.
    assert_eq!(mcp_status(&f, &f.agent_token).await, 200);

    let (s, body) = exchange(&f, &client, &code, VERIFIER).await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(body["error"], "invalid_grant");
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .contains("already used"));
    assert_eq!(mcp_status(&f, access).await, 401);
    let (s, body) = post_form(
        &f,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!((s, body["error"].as_str()), (400, Some("invalid_grant")));
    // The agent the approval made went with its grant: disabled, not
    // listed to its owner or the operator as if it still worked.
    let count = |sql: &str| -> i64 { f.db().query_row(sql, &[], |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT COUNT(*) FROM oauth_consents WHERE agent_id IS NOT NULL"),
        1
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM agents a JOIN oauth_consents c ON c.agent_id = a.id
             WHERE a.disabled_at IS NULL"
        ),
        0,
        "the revoked grant's agent is still live"
    );
    // Nothing of it in the database but hashes.
    assert!(!common::database_contains(&f, access));
    assert!(!common::database_contains(&f, &code));
}

#[tokio::test]
async fn expired_access_tokens_and_other_clients_refresh_tokens_are_refused() {
    let f = Fixture::new().await;
    let (client, code) = approved_code(&f).await;
    let (_, tokens) = exchange(&f, &client, &code, VERIFIER).await;
    let access = tokens["access_token"].as_str().unwrap();
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let other = register(&f, "Someone Else").await;
    let (s, body) = post_form(
        &f,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", &other),
        ],
    )
    .await;
    assert_eq!((s, body["error"].as_str()), (400, Some("invalid_grant")));
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .starts_with("client_id:"));
    // The access token's fifteen minutes, passed.
    f.db()
        .execute(
            "UPDATE oauth_tokens SET expires_at = 1 WHERE kind = 'access'",
            &[],
        )
        .unwrap();
    let resp = f
        .http
        .post(format!("{}/mcp", f.base))
        .bearer_auth(access)
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    // The refresh token (not reused: the other client's try did not spend it)
    // gets a new access token.
    let (s, fresh) = post_form(
        &f,
        "/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(s, 200, "{fresh}");
    assert_eq!(
        mcp_status(&f, fresh["access_token"].as_str().unwrap()).await,
        200
    );
}

#[tokio::test]
async fn an_unregistered_redirect_uri_is_shown_not_followed() {
    let f = Fixture::new().await;
    let client = register(&f, "Redirects").await;
    let c = challenge(VERIFIER);
    for uri in [
        "http://127.0.0.1:33418/elsewhere",
        "https://attacker.example/cb",
        "http://127.0.0.1:33418/callback/",
    ] {
        let q = form(&[
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", uri),
            ("code_challenge", &c),
            ("code_challenge_method", "S256"),
        ]);
        let (s, body) = f
            .call("GET", &format!("/oauth/authorize?{q}"), None, None)
            .await;
        assert_eq!(s, 400, "{uri}: {body}");
        assert_eq!(body["error"], "invalid_request");
        assert!(body["error_description"]
            .as_str()
            .unwrap()
            .starts_with("redirect_uri:"));
    }
    // Registering one that is neither https nor loopback http.
    let (s, body) = f
        .call(
            "POST",
            "/oauth/register",
            None,
            Some(json!({"redirect_uris": ["http://example.com/cb"]})),
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(body["error"], "invalid_redirect_uri");
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .starts_with("redirect_uris[0]:"));
}

#[tokio::test]
async fn pkce_is_s256_only_and_resource_must_be_ours() {
    let f = Fixture::new().await;
    let client = register(&f, "PKCE").await;
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let c = challenge(VERIFIER);
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: [Case; 3] = [
        (
            &[
                ("code_challenge", VERIFIER),
                ("code_challenge_method", "plain"),
            ],
            "invalid_request",
            "code_challenge_method",
        ),
        (
            &[("code_challenge_method", "S256")],
            "invalid_request",
            "code_challenge",
        ),
        (
            &[
                ("code_challenge", c.as_str()),
                ("code_challenge_method", "S256"),
                ("resource", "https://other.example/mcp"),
            ],
            "invalid_target",
            "resource",
        ),
    ];
    for (extra, error, field) in cases {
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client.as_str()),
            ("redirect_uri", REDIRECT),
            ("state", "s1"),
        ];
        pairs.extend_from_slice(extra);
        let resp = no_redirect
            .get(format!("{}/oauth/authorize?{}", f.base, form(&pairs)))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 303, "{extra:?}");
        let location = resp.headers()["location"].to_str().unwrap().to_string();
        let q = query_of(&location);
        assert_eq!(q["error"], error, "{location}");
        assert!(q["error_description"].starts_with(field), "{location}");
        assert_eq!(q["state"], "s1");
        assert_eq!(q["iss"], f.base);
    }
    // A review of issue 33: anyone may register a client with any https
    // redirect, so an unverified client's errors are shown, not sent there
    // (qp's address is no open redirector, RFC 9700 §4.11.2).
    let (s, body) = f
        .call(
            "POST",
            "/oauth/register",
            None,
            Some(
                json!({"client_name": "Redirector", "redirect_uris": ["https://evil.example/cb"]}),
            ),
        )
        .await;
    assert_eq!(s, 201, "{body}");
    let evil = body["client_id"].as_str().unwrap().to_string();
    let pairs = [
        ("response_type", "token"),
        ("client_id", evil.as_str()),
        ("redirect_uri", "https://evil.example/cb"),
    ];
    let resp = no_redirect
        .get(format!("{}/oauth/authorize?{}", f.base, form(&pairs)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert!(resp.headers().get("location").is_none());
}

#[tokio::test]
async fn an_expired_consent_says_so_and_sends_the_client_back() {
    let f = Fixture::new().await;
    let client = register(&f, "Slow").await;
    let (_, started) = start(&f, &client, &f.alice).await;
    let q = consent_question(&f, &f.alice_token).await;
    f.set_expiry(q["id"].as_str().unwrap(), -1);
    let st = status(&f, started["request"].as_str().unwrap()).await;
    assert_eq!(st["state"], "expired", "{st}");
    let back = query_of(st["redirect"].as_str().unwrap());
    assert_eq!(back["error"], "access_denied");
    // Answering now changes nothing.
    let (_, _) = f
        .answer(
            &f.alice_token,
            q["id"].as_str().unwrap(),
            json!({"value": "allow"}),
        )
        .await;
    assert_eq!(
        status(&f, started["request"].as_str().unwrap()).await["state"],
        "expired"
    );
}

/// The person's open feed (the web responder's long-poll) shows the
/// consent question the moment it is asked, not when its wait times out:
/// they may be looking at the page that asks them to answer it.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_feed_shows_the_consent_question_at_once() {
    let f = Fixture::new().await;
    let client = register(&f, "Prompt").await;
    let (_, now) = f
        .call(
            "GET",
            "/api/questions/pending/wait",
            Some(&f.alice_token),
            None,
        )
        .await;
    let version = now["version"].as_str().unwrap().to_string();
    let req = f
        .http
        .get(format!(
            "{}/api/questions/pending/wait?since={version}&timeout=20",
            f.base
        ))
        .bearer_auth(&f.alice_token);
    let held = tokio::spawn(async move {
        let t = std::time::Instant::now();
        let body: Value = req.send().await.unwrap().json().await.unwrap();
        (body, t.elapsed())
    });
    f.until_parked(1).await;
    let (s, started) = start(&f, &client, &f.alice).await;
    assert!(s < 300, "{started}");
    let (body, took) = held.await.unwrap();
    assert!(took < Duration::from_secs(5), "woken after {took:?}");
    let consent = body["questions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|q| q["consent"]["name"] == "Prompt");
    assert!(consent, "{body}");
}

#[tokio::test]
async fn only_the_named_person_can_answer_the_consent() {
    let f = Fixture::new().await;
    let client = register(&f, "Careful").await;
    let (_, started) = start(&f, &client, &f.alice).await;
    let handle = started["request"].as_str().unwrap();
    let q = consent_question(&f, &f.alice_token).await;
    let id = q["id"].as_str().unwrap();
    // The code the page shows, to compare, then who asks.
    assert_eq!(
        q["context"],
        format!(
            "code {} · unverified client",
            started["code"].as_str().unwrap()
        )
    );
    assert_eq!(q["asker"]["display_name"], "qp sign-in");
    // Its parts, which phones and the web word in their person's language;
    // the answer values stay allow and deny.
    assert_eq!(
        q["consent"],
        json!({
            "client": "unverified",
            "name": "Careful",
            // REDIRECT is a loopback address.
            "returns_to": "localhost",
            "code": started["code"],
        })
    );
    let values: Vec<&str> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["allow", "deny"]);
    for token in [&f.bob_token, &f.carol_token] {
        let (s, body) = f.answer(token, id, json!({"value": "allow"})).await;
        assert_eq!(s, 403, "{body}");
    }
    assert_eq!(status(&f, handle).await["state"], "pending");
    // The person denies: no agent, the client is told.
    let (s, _) = f.answer(&f.alice_token, id, json!({"value": "deny"})).await;
    assert_eq!(s, 200);
    let st = status(&f, handle).await;
    assert_eq!(st["state"], "denied");
    assert_eq!(
        query_of(st["redirect"].as_str().unwrap())["error"],
        "access_denied"
    );
    // A person who is not in the room cannot be asked for it.
    let (s, body) = start(&f, &client, &f.carol).await;
    assert_eq!(s, 400, "{body}");
    // A browser's form post (no JSON asked for) gets the waiting page.
    let c = challenge(VERIFIER);
    let resp = f
        .http
        .post(format!("{}/oauth/authorize", f.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &c),
            ("code_challenge_method", "S256"),
            ("user", "alice"),
            ("room", &f.room_code),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let page = resp.text().await.unwrap();
    assert!(page.contains("Check your phone"), "{page}");
    // Said as for anyone unknown: the form tells no membership apart.
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .starts_with("user: nobody of that id or name is in that room"));
}

#[tokio::test]
async fn pending_consents_per_person_are_bounded() {
    let f = Fixture::new().await;
    let client = register(&f, "Pushy").await;
    for _ in 0..3 {
        let (s, body) = start(&f, &client, &f.alice).await;
        assert_eq!(s, 200, "{body}");
    }
    let (s, body) = start(&f, &client, &f.alice).await;
    assert_eq!(s, 429, "{body}");
    assert_eq!(body["error"], "temporarily_unavailable");
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .starts_with("user:"));
}

#[tokio::test]
async fn revoking_the_grant_with_qp_admin_ends_its_tokens() {
    let f = Fixture::new().await;
    let (client, code) = approved_code(&f).await;
    let (_, tokens) = exchange(&f, &client, &code, VERIFIER).await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(mcp_status(&f, access).await, 200);
    let db = f.db();
    let grant: String = db
        .query_row(
            "SELECT hash FROM tokens WHERE label = ?1",
            qp_server::params!["OAuth: Negative Tests"],
            |r| r.get(0),
        )
        .unwrap();
    qp_server::store::identity::revoke_token(&*db, &grant[..12]).unwrap();
    assert_eq!(mcp_status(&f, access).await, 401);
}

#[tokio::test]
async fn the_person_lists_and_removes_the_agents_their_approvals_made() {
    let f = Fixture::new().await;
    let (client, code) = approved_code(&f).await;
    let (_, tokens) = exchange(&f, &client, &code, VERIFIER).await;
    let access = tokens["access_token"].as_str().unwrap();
    let (s, mine) = f
        .call("GET", "/api/me/agents", Some(&f.alice_token), None)
        .await;
    assert_eq!(s, 200, "{mine}");
    let made = mine["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Negative Tests")
        .cloned()
        .expect("the approved client's agent is listed");
    assert_eq!(made["rooms"], json!([f.room_code]));
    assert!(mine["agents"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["name"] != "qp sign-in"));
    let path = format!("/api/me/agents/{}", made["id"].as_str().unwrap());
    let (s, _) = f.call("DELETE", &path, Some(&f.bob_token), None).await;
    assert_eq!(s, 404, "not Bob's");
    assert_eq!(mcp_status(&f, access).await, 200);
    let (s, _) = f.call("DELETE", &path, Some(&f.alice_token), None).await;
    assert_eq!(s, 204);
    assert_eq!(mcp_status(&f, access).await, 401);
    let (_, mine) = f
        .call("GET", "/api/me/agents", Some(&f.alice_token), None)
        .await;
    assert!(mine["agents"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["id"] != made["id"]));
}

#[tokio::test]
async fn device_polling_faster_than_the_interval_is_told_to_slow_down() {
    let f = Fixture::new().await;
    let (s, started) = post_form(
        &f,
        "/oauth/device_authorization",
        &[
            ("client_id", "qp-cli"),
            ("user", &f.alice),
            ("room", &f.room_code),
        ],
    )
    .await;
    assert_eq!(s, 200, "{started}");
    let code = started["user_code"].as_str().unwrap();
    assert_eq!(code.len(), 9);
    let q = consent_question(&f, &f.alice_token).await;
    assert_eq!(q["context"], format!("code {code}"));
    let pairs = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ("device_code", started["device_code"].as_str().unwrap()),
        ("client_id", "qp-cli"),
    ];
    let (s, body) = post_form(&f, "/oauth/token", &pairs).await;
    assert_eq!(
        (s, body["error"].as_str()),
        (400, Some("authorization_pending"))
    );
    let (s, body) = post_form(&f, "/oauth/token", &pairs).await;
    assert_eq!((s, body["error"].as_str()), (400, Some("slow_down")));
}

fn qp_login(f: &Fixture, config: &std::path::Path, user: &str) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args([
            "login",
            "--url",
            &f.base,
            "--as",
            user,
            "--room",
            &f.room_code,
        ])
        .env("QP_CONFIG_DIR", config)
        .env_remove("QP_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

async fn finish(child: std::process::Child) -> std::process::Output {
    tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()),
    )
    .await
    .expect("qp login finishes")
    .unwrap()
}

#[tokio::test]
async fn qp_login_with_a_url_is_approved_on_the_phone() {
    let f = Fixture::new().await;
    let config = f.dir.path().join("config");
    let child = qp_login(&f, &config, &f.alice);
    let q = consent_question(&f, &f.alice_token).await;
    assert_eq!(q["target_user_id"], f.alice);
    assert!(q["context"].as_str().unwrap().starts_with("code "));
    let (s, _) = f
        .answer(
            &f.alice_token,
            q["id"].as_str().unwrap(),
            json!({"value": "allow"}),
        )
        .await;
    assert_eq!(s, 200);
    let out = finish(child).await;
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(q["context"].as_str().unwrap().trim_start_matches("code ")),
        "{stderr}"
    );
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(config.join("credentials.json")).unwrap())
            .unwrap();
    assert_eq!(saved["url"], f.base);
    let token = saved["token"].as_str().unwrap();
    assert!(token.starts_with("qpa_"));
    // The token is an agent's of Alice's, allowed in the room: it asks.
    let (s, asked) = f
        .call(
            "POST",
            &format!("/api/agent/rooms/{}/questions", f.room_code),
            Some(token),
            Some(json!({"prompt": "Signed in by a tap?"})),
        )
        .await;
    assert_eq!(s, 201, "{asked}");
    assert_eq!(asked["target_user_id"], f.alice);
    assert!(!common::database_contains(&f, token));

    // Denied: nothing stored, exit 1.
    let config = f.dir.path().join("config2");
    let child = qp_login(&f, &config, &f.alice);
    let q = consent_question(&f, &f.alice_token).await;
    f.answer(
        &f.alice_token,
        q["id"].as_str().unwrap(),
        json!({"value": "deny"}),
    )
    .await;
    let out = finish(child).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("denied"));
    assert!(!config.join("credentials.json").exists());
}

/// A review of issue 33: the per-client quota was charged before the
/// person was looked up, so requests naming nobody used up a client's
/// consents (every `qp login --url` on the server shares `qp-cli`). Now
/// only a request that would ask someone counts.
#[tokio::test]
async fn requests_naming_nobody_do_not_use_up_a_clients_quota() {
    let f = Fixture::new().await;
    for _ in 0..15 {
        let (s, body) = post_form(
            &f,
            "/oauth/device_authorization",
            &[
                ("client_id", "qp-cli"),
                ("user", "nobody"),
                ("room", &f.room_code),
            ],
        )
        .await;
        assert_eq!(s, 400, "{body}");
        assert!(
            body["error_description"]
                .as_str()
                .unwrap()
                .starts_with("user:"),
            "{body}"
        );
    }
    let (s, body) = post_form(
        &f,
        "/oauth/device_authorization",
        &[
            ("client_id", "qp-cli"),
            ("user", &f.alice),
            ("room", &f.room_code),
        ],
    )
    .await;
    assert_eq!(s, 200, "the client's quota was used up by nobody: {body}");
}

/// A review of issue 33: anyone may register clients, and registrations
/// nothing refers to were kept for ever. The retention sweep now deletes
/// those older than 30 days, and keeps a client that has a consent, a code
/// or a token.
#[tokio::test]
async fn registered_clients_nothing_refers_to_are_deleted_after_a_month() {
    use qp_server::store::retention::{run_to_end, Plan, Retention};
    let f = Fixture::new().await;
    let unused = register(&f, "Unused").await;
    let (used, _code) = approved_code(&f).await;
    let db = f.db();
    db.execute(
        "UPDATE oauth_clients SET created_at = created_at - 31 * 86400",
        &[],
    )
    .unwrap();
    let now_ms = chrono::Utc::now().timestamp_millis();
    let plan = Plan::of(
        &Retention::default(),
        std::time::Duration::from_secs(86_400),
        now_ms,
    );
    let purged = run_to_end(&*db, &plan).unwrap();
    assert_eq!(purged.get("oauth_clients"), Some(&1), "{purged:?}");
    let ids: Vec<String> = db
        .query_map("SELECT id FROM oauth_clients", &[], |r| r.get(0))
        .unwrap();
    assert!(!ids.contains(&unused), "{ids:?}");
    assert!(ids.contains(&used), "{ids:?}");
}

/// A review of issue 33: a decision was settled (and logged with its
/// client id) only when the page or the CLI polled, so a request the person
/// denied and nobody polled (an attacker's, a closed page) left no trace.
/// Now the server settles it by itself within seconds.
#[tokio::test]
async fn a_consent_nobody_polls_is_settled_once_answered() {
    let f = Fixture::new().await;
    let client = register(&f, "Abandoned").await;
    let (s, started) = start(&f, &client, &f.alice).await;
    assert_eq!(s, 200, "{started}");
    let q = consent_question(&f, &f.alice_token).await;
    let (s, body) = f
        .answer(
            &f.alice_token,
            q["id"].as_str().unwrap(),
            json!({"value": "deny"}),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let state: String = f
            .db()
            .query_row("SELECT state FROM oauth_consents", &[], |r| r.get(0))
            .unwrap();
        if state == "denied" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the denied consent is still {state}: never settled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A review of issue 33: the token endpoint required `redirect_uri` though
/// OAuth 2.1 does not (PKCE binds the code); left out it is accepted, and
/// when given it must still be the authorization request's.
#[tokio::test]
async fn the_token_request_may_leave_out_the_redirect_uri_but_not_change_it() {
    let f = Fixture::new().await;
    let (client, code) = approved_code(&f).await;
    let (s, body) = post_form(
        &f,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("redirect_uri", "http://127.0.0.1:33418/elsewhere"),
            ("code_verifier", VERIFIER),
        ],
    )
    .await;
    assert_eq!(
        (s, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .starts_with("redirect_uri:"));
    let (client, code) = approved_code(&f).await;
    let (s, body) = post_form(
        &f,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("code_verifier", VERIFIER),
        ],
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert!(body["access_token"].is_string());
}

/// A review of issue 33: another site could auto-post the authorization
/// form naming its visitor (a more convincing consent phish on qp's own
/// page). A browser's cross-site post is refused; the same form from the
/// page itself (same origin) works.
#[tokio::test]
async fn the_authorization_form_is_refused_when_posted_from_another_site() {
    let f = Fixture::new().await;
    let client = register(&f, "Form").await;
    let c = challenge(VERIFIER);
    let pairs = [
        ("response_type", "code"),
        ("client_id", client.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_challenge", c.as_str()),
        ("code_challenge_method", "S256"),
        ("user", f.alice.as_str()),
        ("room", f.room_code.as_str()),
    ];
    let post = |origin: &'static str, site: &'static str| {
        f.http
            .post(format!("{}/oauth/authorize", f.base))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json")
            .header("Origin", origin)
            .header("Sec-Fetch-Site", site)
            .body(form(&pairs))
            .send()
    };
    for (origin, site) in [
        ("https://evil.example", "cross-site"),
        ("https://sub.127.0.0.1.example", "same-site"),
        ("null", "cross-site"),
    ] {
        let resp = post(origin, site).await.unwrap();
        assert_eq!(resp.status().as_u16(), 403, "{origin} {site}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"], "access_denied", "{body}");
    }
    // A browser without Fetch Metadata or Origin: its Referer decides.
    for (referer, want) in [
        ("https://evil.example/page".to_string(), 403),
        (format!("{}/oauth/authorize?x=1", f.base), 200),
    ] {
        let resp = f
            .http
            .post(format!("{}/oauth/authorize", f.base))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json")
            .header("Referer", referer.as_str())
            .body(form(&pairs))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), want, "{referer}");
    }
    // What Chromium sends from a page served with a strict referrer policy:
    // `Origin: null`, and Fetch Metadata saying it is this origin's own.
    let resp = post("null", "same-origin").await.unwrap();
    assert_eq!(resp.status().as_u16(), 200, "{:?}", resp.text().await);
    let ours = f.base.clone();
    let resp = f
        .http
        .post(format!("{}/oauth/authorize", f.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .header("Origin", ours)
        .header("Sec-Fetch-Site", "same-origin")
        .body(form(&pairs))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200, "{:?}", resp.text().await);
}

/// A sign-in page's long-poll must not count against a budget every
/// sign-in of the person shares (one page holding it would stall every
/// other): each consent waits on its own budget.
#[tokio::test]
async fn a_sign_in_pages_long_poll_does_not_use_up_another_ones() {
    let f = Fixture::with(|s| s.max_long_polls_per_token = 1).await;
    let client = register(&f, "Budget").await;
    let (_, first) = start(&f, &client, &f.alice).await;
    let (_, second) = start(&f, &client, &f.alice).await;
    let first = first["request"].as_str().unwrap().to_string();
    let held = {
        let (http, base) = (f.http.clone(), f.base.clone());
        tokio::spawn(async move {
            http.post(format!("{base}/oauth/authorize/status"))
                .json(&json!({"request": first, "wait": 3}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (s, body) = f
        .call(
            "POST",
            "/oauth/authorize/status",
            None,
            Some(json!({"request": second["request"], "wait": 1})),
        )
        .await;
    assert_eq!(
        (s, body["state"].as_str()),
        (200, Some("pending")),
        "{body}"
    );
    assert_eq!(held.await.unwrap(), 200);
}

/// The registration and fetch budgets are shared out by address: with
/// the server's budget alone, one caller could use it up for everyone.
#[tokio::test]
async fn one_address_cannot_use_up_the_servers_registrations() {
    let f = Fixture::new().await;
    let mut refused = None;
    for i in 0..40 {
        let (s, body) = f
            .call(
                "POST",
                "/oauth/register",
                None,
                Some(json!({"client_name": format!("Flood {i}"), "redirect_uris": [REDIRECT]})),
            )
            .await;
        if s == 429 {
            refused = Some((i, body));
            break;
        }
        assert_eq!(s, 201, "{body}");
    }
    let (i, body) = refused.expect("40 registrations from one address were all taken");
    // Unused registrations from one address stop at 20 (below the
    // address's burst of 30 requests).
    assert!(i >= 20, "refused after {i}");
    assert_eq!(body["error"], "temporarily_unavailable", "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("from your address"),
        "{body}"
    );
}

/// RFC 9728 §3.3: the root metadata names the server
/// (its origin), `/mcp`'s names `/mcp`; both list the scopes. A token asked
/// for the origin is a token for `/mcp`.
#[tokio::test]
async fn the_root_metadata_names_the_server_and_a_token_for_it_works_on_mcp() {
    let f = Fixture::new().await;
    let (_, root) = f
        .call("GET", "/.well-known/oauth-protected-resource", None, None)
        .await;
    assert_eq!(root["resource"], f.base, "{root}");
    assert_eq!(root["scopes_supported"], json!(["ask", "read"]));
    let (_, mcp) = f
        .call(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            None,
            None,
        )
        .await;
    assert_eq!(mcp["resource"], format!("{}/mcp", f.base), "{mcp}");
    let (_, auth) = f
        .call("GET", "/.well-known/oauth-authorization-server", None, None)
        .await;
    assert_eq!(auth["scopes_supported"], json!(["ask", "read"]), "{auth}");
    let (client, code) = approved_code(&f).await;
    let (s, body) = post_form(
        &f,
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client),
            ("code_verifier", VERIFIER),
            ("resource", &f.base),
        ],
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        mcp_status(&f, body["access_token"].as_str().unwrap()).await,
        200
    );
}

/// A scope, when asked for, is both of an agent's (granting more than
/// asked would surprise the client; values that are not scopes here are
/// ignored); a parameter given twice is refused
/// (RFC 6749 §3.1), on the page as in the form.
#[tokio::test]
async fn scopes_and_repeated_parameters_on_the_authorization_page() {
    let f = Fixture::new().await;
    let client = register(&f, "Scopes").await;
    let c = challenge(VERIFIER);
    let page = |extra: Vec<(&'static str, String)>| {
        let mut pairs = vec![
            ("response_type", "code".to_string()),
            ("client_id", client.clone()),
            ("redirect_uri", REDIRECT.to_string()),
            ("code_challenge", c.clone()),
            ("code_challenge_method", "S256".to_string()),
        ];
        pairs.extend(extra);
        let q = form(
            &pairs
                .iter()
                .map(|(k, v)| (*k, v.as_str()))
                .collect::<Vec<_>>(),
        );
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let url = format!("{}/oauth/authorize?{q}", f.base);
        async move { http.get(url).send().await.unwrap() }
    };
    // Both, or values that are not scopes here (ignored, RFC 6749 §3.3).
    for fine in ["read ask", "admin", "ask read offline_access", "openid"] {
        let r = page(vec![("scope", fine.into())]).await;
        assert_eq!(r.status().as_u16(), 200, "{fine}");
    }
    for narrow in ["read", "ask openid"] {
        // A loopback redirect: the error goes back to the client.
        let r = page(vec![("scope", narrow.into())]).await;
        assert_eq!(r.status().as_u16(), 303, "{narrow}");
        let to = r.headers()["location"].to_str().unwrap().to_string();
        let q = query_of(&to);
        assert_eq!(q["error"], "invalid_scope", "{narrow}: {to}");
        assert!(q["error_description"].starts_with("scope:"), "{to}");
    }
    let twice = page(vec![("client_id", "another".into())]).await;
    assert_eq!(twice.status().as_u16(), 400);
    let body: Value = twice.json().await.unwrap();
    assert_eq!(
        body["error_description"], "client_id: given more than once",
        "{body}"
    );
}

/// An approval whose code the client never exchanged must not leave its
/// agent listed (and its grant live) for good: once the code has expired,
/// the agent is disabled and no longer the person's.
#[tokio::test]
async fn an_approval_never_exchanged_leaves_no_agent() {
    let f = Fixture::new().await;
    let (_client, _code) = approved_code(&f).await;
    // The fixture's own bot, and the approval's.
    let before = alices_agents(&f).await;
    assert!(before >= 1);
    // The code's minute has passed.
    f.db()
        .execute(
            "UPDATE oauth_codes SET expires_at = 1",
            qp_server::params![],
        )
        .unwrap();
    let mut left = before;
    for _ in 0..60 {
        left = alices_agents(&f).await;
        if left < before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(
        left,
        before - 1,
        "the unexchanged approval's agent is still there"
    );
}

/// Browser-based MCP clients call the metadata, registration, the token
/// endpoint and `/mcp` from their own origin; the person's pages are not
/// opened to other origins.
#[tokio::test]
async fn browser_clients_may_call_the_oauth_endpoints_and_mcp_across_origins() {
    let f = Fixture::new().await;
    let preflight = |path: &str, method: &str| {
        f.http
            .request(reqwest::Method::OPTIONS, format!("{}{path}", f.base))
            .header("Origin", "https://client.example")
            .header("Access-Control-Request-Method", method)
            .header(
                "Access-Control-Request-Headers",
                "authorization, content-type, mcp-protocol-version",
            )
            .send()
    };
    for (path, method) in [
        ("/mcp", "POST"),
        ("/oauth/token", "POST"),
        ("/oauth/register", "POST"),
        ("/.well-known/oauth-protected-resource/mcp", "GET"),
    ] {
        let r = preflight(path, method).await.unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        assert_eq!(
            r.headers()
                .get("access-control-allow-origin")
                .map(|v| v.to_str().unwrap()),
            Some("*"),
            "{path}"
        );
    }
    // The 401 a browser client reads names the metadata (exposed).
    let r = f
        .http
        .post(format!("{}/mcp", f.base))
        .header("Origin", "https://client.example")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let exposed = r.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("www-authenticate"), "{exposed}");
    for path in ["/oauth/authorize", "/oauth/authorize/status"] {
        let r = preflight(path, "POST").await.unwrap();
        assert!(
            r.headers().get("access-control-allow-origin").is_none(),
            "{path} is the person's page, not for other origins"
        );
    }
}

/// `qp login --url` naming nobody asks the server's default owner
/// (`--default-owner`); without one, on a server of several people, it
/// says how to name someone.
#[tokio::test]
async fn the_device_flow_asks_the_default_owner() {
    let f = Fixture::new().await;
    let pairs = [("client_id", "qp-cli"), ("room", f.room_code.as_str())];
    let (s, body) = post_form(&f, "/oauth/device_authorization", &pairs).await;
    assert_eq!(s, 400, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("--default-owner"),
        "{body}"
    );
    // By name, as an operator would write it (ids differ per fixture).
    let f = Fixture::with(|s| s.default_owner = Some("alice".into())).await;
    let pairs = [("client_id", "qp-cli"), ("room", f.room_code.as_str())];
    let (s, body) = post_form(&f, "/oauth/device_authorization", &pairs).await;
    assert_eq!(s, 200, "{body}");
    consent_question(&f, &f.alice_token).await;
}

/// The pages run only the scripts the server wrote (a nonce per response,
/// and the web responder's own files for a person signed in there); the
/// waiting page knows the consent question, so a browser signed in as
/// that person can answer it there.
#[tokio::test]
async fn the_sign_in_pages_run_only_their_own_scripts() {
    let f = Fixture::new().await;
    let client = register(&f, "</script><script>alert(1)</script>").await;
    let c = challenge(VERIFIER);
    let pairs = [
        ("response_type", "code"),
        ("client_id", client.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_challenge", c.as_str()),
        ("code_challenge_method", "S256"),
        ("user", f.alice.as_str()),
        ("room", f.room_code.as_str()),
    ];
    let r = f
        .http
        .get(format!("{}/oauth/authorize?{}", f.base, form(&pairs[..5])))
        .send()
        .await
        .unwrap();
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    let html = r.text().await.unwrap();
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|n| n.split('\'').next())
        .expect("a nonce in the CSP");
    let script_src = csp
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .unwrap();
    assert!(!script_src.contains("unsafe-inline"), "{csp}");
    assert!(
        html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"),
        "the name is text"
    );
    for script in html.split("<script").skip(1) {
        assert!(
            script.starts_with(&format!(" nonce=\"{nonce}\"")),
            "{script}"
        );
    }
    assert!(html.contains("src=\"/app/store.js\""));
    let (s, started) = start(&f, &client, &f.alice).await;
    assert_eq!(s, 200, "{started}");
    let q = consent_question(&f, &f.alice_token).await;
    assert_eq!(started["question"], q["id"], "{started}");
}

/// The sign-in pages' words, by language, from `server/locales/`.
fn page_words() -> Vec<(String, std::collections::HashMap<String, String>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../server/locales");
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ftl"))
        .map(|p| {
            let tag = p.file_stem().unwrap().to_string_lossy().to_string();
            let msgs = std::fs::read_to_string(&p)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.split_once(" = "))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (tag, msgs)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(out.len(), 10);
    out
}

/// The English words a page in another language must not hold: each
/// message's literal runs of three words or more (names and codes, the
/// placeables, left out).
fn english_runs(en: &std::collections::HashMap<String, String>) -> Vec<String> {
    en.values()
        .flat_map(|v| {
            v.split('{')
                .map(|part| part.split_once('}').map_or(part, |(_, rest)| rest))
                .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
                .collect::<Vec<_>>()
        })
        .filter(|t| t.split_whitespace().count() >= 3)
        .collect()
}

async fn page_in(
    f: &Fixture,
    method: &str,
    path: &str,
    lang: &str,
    body: Option<String>,
) -> (u16, String) {
    let mut r = f
        .http
        .request(method.parse().unwrap(), format!("{}{path}", f.base))
        .header("Accept", "text/html,application/xhtml+xml")
        .header("Accept-Language", format!("{lang};q=0.9, en;q=0.5"));
    if let Some(b) = body {
        r = r
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(b);
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Every sign-in page, and a refusal on the form, in each of the ten
/// languages a browser can ask for: `lang` and `dir` set, the title and
/// the words of that language, no English sentence left; the status lines
/// the waiting page shows in the language of its calls.
#[tokio::test]
async fn the_sign_in_pages_speak_the_browsers_language() {
    let f = Fixture::new().await;
    let client = register(&f, "Release Bot").await;
    let request = authorization_form(&client);
    let words = page_words();
    let en = &words.iter().find(|(t, _)| t == "en").unwrap().1;
    let english = english_runs(en);
    assert!(english.len() >= 25, "{english:?}");
    for (tag, msgs) in &words {
        let dir = if matches!(tag.as_str(), "ar" | "he") {
            "rtl"
        } else {
            "ltr"
        };
        let head = format!("<html lang=\"{tag}\" dir=\"{dir}\">");
        let title = |id: &str| format!("<title>{}</title>", msgs[id].replace('\'', "&#39;"));
        let (s, authorize) =
            page_in(&f, "GET", &format!("/oauth/authorize?{request}"), tag, None).await;
        assert_eq!(s, 200, "{tag}: {authorize}");
        let (s, device) = page_in(&f, "GET", "/oauth/device", tag, None).await;
        assert_eq!(s, 200, "{tag}");
        // Naming nobody is refused without using up anyone's quota.
        let nobody = format!(
            "{request}&{}",
            form(&[("user", "nobody"), ("room", &f.room_code)])
        );
        let (s, refused) = page_in(&f, "POST", "/oauth/authorize", tag, Some(nobody)).await;
        assert_eq!(s, 400, "{tag}: {refused}");
        for (page, html, title_id) in [
            ("authorize", &authorize, "signin-connect-title"),
            ("device", &device, "signin-device-title"),
            ("refusal", &refused, "signin-error-title"),
        ] {
            assert!(
                html.contains(&head),
                "{tag} {page}: {}",
                &html[..200.min(html.len())]
            );
            assert!(html.contains(&title(title_id)), "{tag} {page}: {html}");
            if tag != "en" {
                // The refusal's details for the client's developer are
                // English, marked so; nothing else is.
                let shown = html.split("<details>").next().unwrap();
                for e in &english {
                    assert!(
                        !shown.contains(e.as_str()),
                        "{tag} {page}: English {e:?} in {shown}"
                    );
                }
            }
        }
        let not_found = msgs["signin-error-not-found"].replace('\'', "&#39;");
        assert!(refused.contains(&not_found), "{tag}: {refused}");
        assert!(
            refused.contains("<details>") && refused.contains("lang=en"),
            "{tag}"
        );
    }

    // The waiting page in Arabic: its words, the consent's question and
    // buttons as the phone words them in Arabic, right to left.
    let asking = format!(
        "{request}&{}",
        form(&[("user", &f.alice), ("room", &f.room_code)])
    );
    let (s, waiting) = page_in(&f, "POST", "/oauth/authorize", "ar", Some(asking)).await;
    assert_eq!(s, 200, "{waiting}");
    assert!(waiting.contains("<html lang=\"ar\" dir=\"rtl\">"));
    assert!(
        waiting.contains("<title>تحقّق من هاتفك</title>"),
        "{waiting}"
    );
    let allow_ar = qp_core::present::copy::Copy::for_languages(&["ar".to_string()])
        .consent_label("allow")
        .unwrap();
    assert!(
        waiting.contains(&format!(
            "<button id=allow type=button aria-disabled=true>{allow_ar}</button>"
        )),
        "{waiting}"
    );
    for e in &english {
        assert!(!waiting.contains(e.as_str()), "English {e:?} in {waiting}");
    }
    let handle = waiting
        .split("\"request\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the page's consent handle")
        .to_string();

    // Denied on the phone: the page's status call, in German, says so.
    let q = consent_question(&f, &f.alice_token).await;
    let (s, body) = f
        .answer(
            &f.alice_token,
            q["id"].as_str().unwrap(),
            json!({"value": "deny"}),
        )
        .await;
    assert!(s == 200 || s == 201, "{body}");
    let r = f
        .http
        .post(format!("{}/oauth/authorize/status", f.base))
        .header("Accept-Language", "de-DE,de;q=0.9")
        .json(&json!({"request": handle, "wait": 5}))
        .send()
        .await
        .unwrap();
    let said: Value = r.json().await.unwrap();
    assert_eq!(said["state"], "denied", "{said}");
    let de = &words.iter().find(|(t, _)| t == "de").unwrap().1;
    assert_eq!(said["message"], de["signin-denied"].as_str(), "{said}");
}

/// A browser that used up its address's budget at the
/// authorization page got the client's English JSON; it reads a page in
/// its language, with the status and Retry-After a client gets.
#[tokio::test]
async fn the_address_limit_at_the_authorization_page_is_a_page_in_the_browsers_language() {
    let f = Fixture::new().await;
    let client = register(&f, "Release Bot").await;
    let request = authorization_form(&client);
    let words = page_words();
    let de = &words.iter().find(|(t, _)| t == "de").unwrap().1;
    let mut refused = None;
    for _ in 0..80 {
        let r = f
            .http
            .get(format!("{}/oauth/authorize?{request}", f.base))
            .header("Accept", "text/html,application/xhtml+xml")
            .header("Accept-Language", "de-DE,de;q=0.9")
            .send()
            .await
            .unwrap();
        if r.status().as_u16() == 429 {
            let retry = r.headers().get("retry-after").cloned();
            let kind = r.headers().get("content-type").cloned();
            refused = Some((retry, kind, r.text().await.unwrap()));
            break;
        }
        assert_eq!(r.status().as_u16(), 200);
    }
    let (retry, kind, html) = refused.expect("80 page loads from one address were all served");
    assert!(retry.is_some(), "a Retry-After");
    assert!(
        kind.unwrap().to_str().unwrap().starts_with("text/html"),
        "{html}"
    );
    assert!(html.contains("<html lang=\"de\" dir=\"ltr\">"), "{html}");
    let too_many = de["signin-error-too-many"].replace('\'', "&#39;");
    assert!(html.contains(&too_many), "{html}");
    // A client (no HTML asked for) still gets the JSON error.
    let (s, body) = f
        .call("GET", &format!("/oauth/authorize?{request}"), None, None)
        .await;
    assert_eq!(s, 429, "{body}");
    assert_eq!(body["error"], "temporarily_unavailable", "{body}");
}

/// The core's English consent question (the words a phone in English
/// reads: prompt, context, buttons' sentence) as runs of three words or
/// more, names and codes (isolated) left out: a page in another language
/// must not hold them.
fn core_consent_english(room: &str) -> Vec<String> {
    use qp_core::present::copy::Copy;
    use qp_core::protocol::ConsentRequest;
    let mut out = Vec::new();
    for client in ["verified", "unverified", "terminal"] {
        let parts = ConsentRequest {
            client: client.into(),
            name: "Release Bot".into(),
            host: (client == "verified").then(|| "claude.ai".into()),
            returns_to: Some("localhost".into()),
            code: "WDJB-MJHT".into(),
        };
        let t = Copy::english().consent(&parts, room);
        for s in [t.prompt, t.context] {
            // Drop what is isolated (the client's and the room's names).
            let mut ours = String::new();
            let mut depth = 0;
            for c in s.chars() {
                match c {
                    '\u{2068}' | '\u{2066}' | '\u{2067}' => depth += 1,
                    '\u{2069}' => depth -= 1,
                    _ if depth == 0 => ours.push(c),
                    _ => ours.push('|'),
                }
            }
            out.extend(
                ours.split(|c: char| {
                    matches!(
                        c,
                        '|' | '.' | ',' | ';' | ':' | '?' | '·' | '“' | '”' | '(' | ')'
                    )
                })
                .map(|p| p.trim().to_string())
                .filter(|p| p.split_whitespace().count() >= 3),
            );
        }
    }
    out.sort();
    out.dedup();
    assert!(out.len() >= 4, "{out:?}");
    out
}

/// The waiting page (the consent question as the
/// phone words it, its buttons, the page's own words) in each of the ten
/// languages, `lang` and `dir` set, with no English sentence of the
/// server's pages or of the core's consent question.
#[tokio::test]
async fn the_waiting_page_speaks_every_language() {
    use qp_core::present::copy::Copy;
    let words = page_words();
    let en = &words.iter().find(|(t, _)| t == "en").unwrap().1;
    let mut english = english_runs(en);
    // The fixture's room is "Ops".
    english.extend(core_consent_english("Ops"));
    for (tag, msgs) in &words {
        // A server of its own per language: a person may have only a few
        // sign-ins waiting.
        let f = Fixture::new().await;
        let client = register(&f, "Release Bot").await;
        let c = challenge(VERIFIER);
        let asking = form(&[
            ("response_type", "code"),
            ("client_id", client.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_challenge", c.as_str()),
            ("code_challenge_method", "S256"),
            ("user", &f.alice),
            ("room", &f.room_code),
        ]);
        let (s, waiting) = page_in(&f, "POST", "/oauth/authorize", tag, Some(asking)).await;
        assert_eq!(s, 200, "{tag}: {waiting}");
        let dir = if matches!(tag.as_str(), "ar" | "he") {
            "rtl"
        } else {
            "ltr"
        };
        assert!(
            waiting.contains(&format!("<html lang=\"{tag}\" dir=\"{dir}\">")),
            "{tag}"
        );
        let title = msgs["signin-check-title"].replace('\'', "&#39;");
        assert!(
            waiting.contains(&format!("<title>{title}</title>")),
            "{tag}"
        );
        let copy = Copy::for_languages(&[tag.to_string()]);
        let allow = copy.consent_label("allow").unwrap();
        assert!(
            waiting.contains(&format!("aria-disabled=true>{allow}</button>")),
            "{tag}: {waiting}"
        );
        if tag != "en" {
            for e in &english {
                assert!(
                    !waiting.contains(e.as_str()),
                    "{tag}: English {e:?} in {waiting}"
                );
            }
        }
    }
}
