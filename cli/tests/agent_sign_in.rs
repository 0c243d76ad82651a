//! Agent sign-in (an MCP client's OAuth, `qp login --url`) under the
//! operator's rules, against a real server on loopback (SQLite, or
//! PostgreSQL with `QP_TEST_POSTGRES`): who may approve one, how its agent
//! is shown to the people it asks and whom it may ask, what the consent
//! question lets a client write, and the audit log of every surface that
//! makes or removes an agent or a token.

mod common;

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::Fixture;
use qp_server::sign_in_policy::{Approvers, Audience};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "http://127.0.0.1:33418/callback";
const VERIFIER: &str = "a-verifier-of-at-least-43-characters-0123456789-abcdef";

async fn post_form(f: &Fixture, path: &str, pairs: &[(&str, &str)]) -> (u16, Value) {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let resp = f
        .http
        .post(format!("{}{path}", f.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(body)
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

async fn register(f: &Fixture, name: &str) -> (u16, Value) {
    f.call(
        "POST",
        "/oauth/register",
        None,
        Some(json!({"client_name": name, "redirect_uris": [REDIRECT]})),
    )
    .await
}

/// Starts the authorization page's consent for `user` in the fixture's room.
async fn authorize(f: &Fixture, client: &str, user: &str) -> (u16, Value) {
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    post_form(
        f,
        "/oauth/authorize",
        &[
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "st4te"),
            ("user", user),
            ("room", &f.room_code),
        ],
    )
    .await
}

/// Starts `qp login --url`'s device flow for `user`, labelled `label`.
async fn device_start(f: &Fixture, user: &str, label: &str) -> (u16, Value) {
    post_form(
        f,
        "/oauth/device_authorization",
        &[
            ("client_id", "qp-cli"),
            ("user", user),
            ("room", &f.room_code),
            ("label", label),
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
                .find(|q| q["asker"]["display_name"] == "qp sign-in")
                .cloned()
        }) {
            return q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no consent question arrived");
}

/// Answers the pending consent of the person with `token`: Allow.
async fn allow(f: &Fixture, token: &str) {
    let q = consent_question(f, token).await;
    let (s, body) = f
        .answer(token, q["id"].as_str().unwrap(), json!({"value": "allow"}))
        .await;
    assert_eq!(s, 200, "{body}");
}

/// The device flow for `user` (phone token `token`) labelled `label`,
/// approved: the agent's token.
async fn signed_in_by_device(f: &Fixture, user: &str, token: &str, label: &str) -> String {
    let (s, started) = device_start(f, user, label).await;
    assert_eq!(s, 200, "{started}");
    allow(f, token).await;
    let (s, body) = post_form(
        f,
        "/oauth/token",
        &[
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ("device_code", started["device_code"].as_str().unwrap()),
            ("client_id", "qp-cli"),
        ],
    )
    .await;
    assert_eq!(s, 200, "{body}");
    body["access_token"].as_str().unwrap().to_string()
}

async fn ask_as(f: &Fixture, token: &str, body: Value) -> (u16, Value) {
    f.call(
        "POST",
        &format!("/api/agent/rooms/{}/questions", f.room_code),
        Some(token),
        Some(body),
    )
    .await
}

/// What `qp admin --db` takes for the fixture's database.
fn db_arg(f: &Fixture) -> std::ffi::OsString {
    match &f.database {
        qp_server::store::Database::Sqlite(path) => path.clone().into(),
        qp_server::store::Database::Postgres(url) => url.into(),
    }
}

/// The audit log: (actor, action, subject, detail), oldest first.
fn audit(f: &Fixture) -> Vec<(String, String, String, String)> {
    qp_server::store::audit::since(&*f.db(), 0, 1000)
        .unwrap()
        .into_iter()
        .map(|e| (e.actor, e.action, e.subject, e.detail))
        .collect()
}

/// The finding: a member approved their own `qp login --url`
/// labelled "Release Bot" and got an agent whose handle and name were the
/// operator's Release Bot's, able to ask anyone in the room. Now its handle
/// is its own, everyone it asks reads who signed it in, and by default it
/// asks only that person.
#[tokio::test]
async fn a_members_sign_in_cannot_pass_for_the_operators_agent() {
    let f = Fixture::new().await;
    let operators = f.ask(json!({"prompt": "The real one"})).await;
    assert_eq!(operators["asker"]["handle"], "release-bot");
    assert_eq!(operators["asker"]["display_name"], "Release Bot");

    let bobs = signed_in_by_device(&f, &f.bob, &f.bob_token, "Release Bot").await;
    // It asks Bob, who signed it in: shown as such, with a handle of its own.
    let (s, q) = ask_as(&f, &bobs, json!({"prompt": "Your password?"})).await;
    assert_eq!(s, 201, "{q}");
    assert_eq!(q["target_user_id"], f.bob);
    assert_eq!(
        q["asker"]["display_name"], "Release Bot · signed in by Bob",
        "{q}"
    );
    assert_ne!(q["asker"]["handle"], "release-bot", "{q}");
    // Bob's phone reads the same.
    let (_, pending) = f
        .call("GET", "/api/questions/pending", Some(&f.bob_token), None)
        .await;
    let seen = pending["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == q["id"])
        .cloned()
        .unwrap();
    assert_eq!(seen["asker"], q["asker"]);

    // Nobody else: not Alice by name, not the room.
    let (s, body) = ask_as(
        &f,
        &bobs,
        json!({"prompt": "Your password?", "target_user_id": f.alice}),
    )
    .await;
    assert_eq!(s, 403, "{body}");
    assert_eq!(common::err_field(&body), "target_user_id", "{body}");
    let (s, body) = ask_as(
        &f,
        &bobs,
        json!({"prompt": "Your password?", "responder_scope": "room"}),
    )
    .await;
    assert_eq!(s, 403, "{body}");
    assert_eq!(common::err_field(&body), "responder_scope", "{body}");
    let (_, pending) = f
        .call("GET", "/api/questions/pending", Some(&f.alice_token), None)
        .await;
    assert!(
        pending["questions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["prompt"] != "Your password?"),
        "{pending}"
    );

    // A second sign-in of the same name gets yet another handle.
    let again = signed_in_by_device(&f, &f.alice, &f.alice_token, "Release Bot").await;
    let (s, q2) = ask_as(&f, &again, json!({"prompt": "Mine"})).await;
    assert_eq!(s, 201, "{q2}");
    assert_ne!(q2["asker"]["handle"], q["asker"]["handle"]);
    assert_ne!(q2["asker"]["handle"], "release-bot");
    assert_eq!(
        q2["asker"]["display_name"],
        "Release Bot · signed in by Alice"
    );

    // Nor the handle of the agent that asks the sign-in questions.
    let named = signed_in_by_device(&f, &f.alice, &f.alice_token, "qp sign-in").await;
    let (s, q3) = ask_as(&f, &named, json!({"prompt": "Allow?"})).await;
    assert_eq!(s, 201, "{q3}");
    assert_ne!(q3["asker"]["handle"], "qp-sign-in", "{q3}");
    assert_eq!(
        q3["asker"]["display_name"],
        "qp sign-in · signed in by Alice"
    );
}

/// `sign_in_agents_ask = room`: the operator widens what such agents may
/// ask; they are still shown as signed in by their person.
#[tokio::test]
async fn the_operator_may_let_signed_in_agents_ask_the_room() {
    let f = Fixture::with(|s| s.sign_in_agents_ask = Audience::Room).await;
    let bobs = signed_in_by_device(&f, &f.bob, &f.bob_token, "CI").await;
    let (s, q) = ask_as(
        &f,
        &bobs,
        json!({"prompt": "Ship it?", "responder_scope": "room"}),
    )
    .await;
    assert_eq!(s, 201, "{q}");
    assert_eq!(q["asker"]["display_name"], "CI · signed in by Bob");
}

/// `agent_sign_in`: off refuses every sign-in before anyone is asked;
/// admins lets only a room's admins approve (`qp admin room add-member
/// --admin`); members (the default) lets any member.
#[tokio::test]
async fn the_operator_decides_who_may_approve_agent_sign_ins() {
    assert_eq!(
        qp_server::config::Settings::default().agent_sign_in,
        Approvers::Members
    );
    let f = Fixture::with(|s| s.agent_sign_in = Approvers::Off).await;
    let (s, body) = device_start(&f, &f.alice, "CI").await;
    assert_eq!(s, 403, "{body}");
    assert_eq!(body["error"], "access_denied");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("agent_sign_in = off"),
        "{body}"
    );
    let (s, client) = register(&f, "Claude").await;
    assert_eq!(s, 201, "{client}");
    let (s, body) = authorize(&f, client["client_id"].as_str().unwrap(), &f.alice).await;
    assert_eq!(s, 403, "{body}");
    let (_, pending) = f
        .call("GET", "/api/questions/pending", Some(&f.alice_token), None)
        .await;
    assert_eq!(pending["questions"], json!([]), "nobody was asked");

    let f = Fixture::with(|s| s.agent_sign_in = Approvers::Admins).await;
    let (s, body) = device_start(&f, &f.bob, "CI").await;
    assert_eq!(s, 403, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("room admin"),
        "{body}"
    );
    // Made an admin the way the operator does it.
    let out = common::admin(
        db_arg(&f),
        &["room", "add-member", &f.room_code, &f.bob, "--admin"],
    );
    assert!(out.status.success(), "{out:?}");
    let out = common::admin(db_arg(&f), &["room", "members", &f.room_code]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains(&format!("{}\tBob\tadmin", f.bob)),
        "{listed}"
    );
    let token = signed_in_by_device(&f, &f.bob, &f.bob_token, "CI").await;
    let (s, q) = ask_as(&f, &token, json!({"prompt": "Hello"})).await;
    assert_eq!(s, 201, "{q}");

    // Demoted between the question and the answer: the approval makes no agent.
    let (s, started) = device_start(&f, &f.bob, "CI 2").await;
    assert_eq!(s, 200, "{started}");
    let out = common::admin(db_arg(&f), &["room", "add-member", &f.room_code, &f.bob]);
    assert!(out.status.success(), "{out:?}");
    allow(&f, &f.bob_token).await;
    let (s, body) = post_form(
        &f,
        "/oauth/token",
        &[
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
            ("device_code", started["device_code"].as_str().unwrap()),
            ("client_id", "qp-cli"),
        ],
    )
    .await;
    assert_eq!(s, 403, "{body}");
    assert!(body.get("access_token").is_none(), "{body}");
}

/// A client's name and a sign-in's label are shown to a person inside the
/// server's sentence: line breaks, separators, bidi and zero-width
/// characters and quotes are refused, naming the field and the rule.
#[tokio::test]
async fn client_supplied_names_that_could_shape_the_consent_are_refused() {
    let f = Fixture::new().await;
    for bad in [
        "Claude\u{2028}Verified at claude.ai",
        "Claude\u{2029}x",
        "Cla\u{200B}ude",
        "Claude\u{202E}ia.edualc",
        "\"Claude\"",
        "Claude\nAllow?",
        &"n".repeat(61),
    ] {
        let (s, body) = register(&f, bad).await;
        assert_eq!(s, 400, "{bad:?}: {body}");
        assert_eq!(body["error"], "invalid_client_metadata");
        let d = body["error_description"].as_str().unwrap();
        assert!(d.starts_with("client_name: must be one line"), "{d}");
    }
    for bad in [
        "Release\nBot",
        "Release Bot\" wants to ask you. \"Allow",
        "Release\u{2028}Bot",
        "Bot\u{200D}",
    ] {
        let (s, body) = device_start(&f, &f.alice, bad).await;
        assert_eq!(s, 400, "{bad:?}: {body}");
        let d = body["error_description"].as_str().unwrap();
        assert!(d.starts_with("label: must be one line"), "{d}");
    }
    let (_, pending) = f
        .call("GET", "/api/questions/pending", Some(&f.alice_token), None)
        .await;
    assert_eq!(pending["questions"], json!([]), "nobody was asked");
}

/// The example: a name written as the server's sentence read as
/// the server's words when placed first. The server's words now come
/// first; the name follows, quoted and bidi-isolated, as does the room's.
#[tokio::test]
async fn the_consent_question_says_the_servers_words_first() {
    let f = Fixture::new().await;
    let name = "Claude wants to ask you questions in Ops. Allow? Verified.";
    let (s, client) = register(&f, name).await;
    assert_eq!(s, 201, "{client}");
    let (s, body) = authorize(&f, client["client_id"].as_str().unwrap(), &f.alice).await;
    assert_eq!(s, 200, "{body}");
    let q = consent_question(&f, &f.alice_token).await;
    assert_eq!(
        q["prompt"],
        format!(
            "An unverified client wants to ask you questions in \u{2068}Ops\u{2069}. Allow? \
             It calls itself “\u{2068}{name}\u{2069}”. It signs in on the computer it runs on (localhost)."
        ),
    );
    let (s, _) = device_start(&f, &f.bob, "Deploy laptop").await;
    assert_eq!(s, 200);
    let q = consent_question(&f, &f.bob_token).await;
    assert_eq!(
        q["prompt"],
        "A terminal (qp login) wants to ask you questions in \u{2068}Ops\u{2069}. Allow? \
         It calls itself “\u{2068}Deploy laptop\u{2069}”, unverified."
    );
}

/// Every surface that makes or removes an agent or a token writes the
/// audit log, with whoever acted: an MCP client's sign-in (OAuth) and the
/// client's tokens (exchanged, revoked by the client, ended by the server
/// for a replayed code), `qp login --url` (the device flow), a person
/// removing an agent the operator made for them, and a person signing out
/// of the web responder.
#[tokio::test]
async fn every_surface_that_makes_or_removes_an_agent_or_token_is_audited() {
    let f = Fixture::new().await;
    let alice = format!("user:{}", f.alice);
    let bob = format!("user:{}", f.bob);

    // OAuth: the authorization page, approved, the code exchanged.
    let (_, client) = register(&f, "Claude").await;
    let client_id = client["client_id"].as_str().unwrap();
    let (s, started) = authorize(&f, client_id, &f.alice).await;
    assert_eq!(s, 200, "{started}");
    allow(&f, &f.alice_token).await;
    let (s, st) = f
        .call(
            "POST",
            "/oauth/authorize/status",
            None,
            Some(json!({"request": started["request"], "wait": 5})),
        )
        .await;
    assert_eq!((s, &st["state"]), (200, &json!("approved")), "{st}");
    let (_, mine) = f
        .call("GET", "/api/me/agents", Some(&f.alice_token), None)
        .await;
    let claude = mine["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Claude")
        .cloned()
        .expect("the approval made Claude's agent");
    let claude_id = claude["id"].as_str().unwrap();
    let log = audit(&f);
    assert!(
        log.iter()
            .any(|(actor, action, subject, detail)| actor == &alice
                && action == "agent.sign_in"
                && subject == claude_id
                && detail.contains(client_id)),
        "{log:#?}"
    );
    // The client exchanges its code for tokens, then revokes one (RFC
    // 7009); a replayed code ends the grant.
    let code = reqwest::Url::parse(st["redirect"].as_str().unwrap())
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    let (s, tokens) = post_form(&f, "/oauth/token", &exchange).await;
    assert_eq!(s, 200, "{tokens}");
    let by_client = format!("oauth-client:{client_id}");
    let (s, _) = post_form(
        &f,
        "/oauth/revoke",
        &[("token", tokens["access_token"].as_str().unwrap())],
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = post_form(&f, "/oauth/token", &exchange).await;
    assert_eq!(s, 400);
    let log = audit(&f);
    for (who, action) in [
        (by_client.as_str(), "token.create"),
        (by_client.as_str(), "token.revoke"),
        ("server", "token.revoke"),
    ] {
        assert!(
            log.iter()
                .any(|(actor, a, subject, _)| actor == who && a == action && subject == claude_id),
            "{who} {action}: {log:#?}"
        );
    }

    // The device flow.
    signed_in_by_device(&f, &f.bob, &f.bob_token, "Deploy laptop").await;
    let log = audit(&f);
    assert!(
        log.iter().any(|(actor, action, _, detail)| actor == &bob
            && action == "agent.sign_in"
            && detail.contains("Deploy laptop")
            && detail.contains("qp login --url")),
        "{log:#?}"
    );

    // A person removes the agent the operator made for them.
    let operators = mine["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Release Bot")
        .cloned()
        .expect("the operator's agent is Alice's");
    let id = operators["id"].as_str().unwrap();
    let (s, _) = f
        .call(
            "DELETE",
            &format!("/api/me/agents/{id}"),
            Some(&f.alice_token),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let log = audit(&f);
    assert!(
        log.iter().any(|(actor, action, subject, _)| actor == &alice
            && action == "agent.remove"
            && subject == id),
        "{log:#?}"
    );

    // A person signs out: their token is revoked.
    let (s, _) = f
        .call("DELETE", "/api/me/token", Some(&f.bob_token), None)
        .await;
    assert_eq!(s, 204);
    let prefix = &qp_server::ids::token_hash(&f.bob_token)[..12];
    let log = audit(&f);
    assert!(
        log.iter().any(|(actor, action, subject, _)| actor == &bob
            && action == "token.revoke"
            && subject == prefix),
        "{log:#?}"
    );
    // The token is in none of it.
    assert!(log.iter().all(|e| !format!("{e:?}").contains(&f.bob_token)));
}
