//! Pairing over the real HTTP API: admin invites, one-time codes for phones
//! and agents, expiry, the per-invite and per-address guessing bounds, and
//! that a minted token is stored only as a hash and listed with its label.

mod common;

use common::{err_code, Fixture};
use qp_server::store::identity;
use serde_json::{json, Value};

async fn admin_token(fx: &Fixture) -> String {
    identity::create_admin_token(&fx.db(), "ops").unwrap()
}

async fn invite(fx: &Fixture, admin: &str, kind: &str, id: &str) -> Value {
    let (s, b) = fx
        .call(
            "POST",
            &format!("/api/admin/{kind}/{id}/invites"),
            Some(admin),
            None,
        )
        .await;
    assert_eq!(s, 201, "{b}");
    b
}

async fn pair(fx: &Fixture, code: &str, device: Option<Value>) -> (u16, Value) {
    fx.call(
        "POST",
        "/api/pair",
        None,
        Some(json!({ "code": code, "label": "Alice's iPhone", "device": device })),
    )
    .await
}

#[tokio::test]
async fn a_phone_pairs_once_with_an_invite_and_gets_its_own_token() {
    let fx = Fixture::new().await;
    let admin = admin_token(&fx).await;
    let inv = invite(&fx, &admin, "users", &fx.alice).await;
    let code = inv["code"].as_str().unwrap();
    assert!(
        inv["link"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/pair#{code}")),
        "{inv}"
    );

    // Lower case and without dashes, as people type it, with the push registration.
    let typed = code.replace('-', "").to_lowercase();
    let (s, b) = pair(
        &fx,
        &typed,
        Some(json!({"platform": "ios", "push_token": "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90", "app_id": "com.example.qp"})),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["user"]["id"], fx.alice);
    assert_eq!(b["device"]["platform"], "ios");
    let token = b["token"].as_str().unwrap().to_string();
    let (s, me) = fx.call("GET", "/api/me", Some(&token), None).await;
    assert_eq!((s, me["id"].as_str()), (200, Some(fx.alice.as_str())));

    // Once only.
    let (s, again) = pair(&fx, code, None).await;
    assert_eq!((s, err_code(&again)), (400, "invalid_code"));
    assert!(
        again["message"].as_str().unwrap().contains("already used"),
        "{again}"
    );

    // Stored as a hash only, listed with its label and its last use.
    assert!(
        !common::database_contains(&fx, &token),
        "the token is stored as a hash only"
    );
    let listed = identity::list_tokens(&fx.db()).unwrap();
    let t = listed.iter().find(|t| t.label == "Alice's iPhone").unwrap();
    assert_eq!(
        (t.kind.as_str(), t.subject_id.as_str()),
        ("user", fx.alice.as_str())
    );
    assert!(t.last_used_at.is_some(), "GET /api/me was a use");
}

#[tokio::test]
async fn expired_unknown_and_misdirected_codes_fail_clearly() {
    let fx = Fixture::new().await;
    let admin = admin_token(&fx).await;
    let inv = invite(&fx, &admin, "users", &fx.bob).await;
    let code = inv["code"].as_str().unwrap();
    fx.db()
        .execute("UPDATE invites SET expires_at = 0", &[])
        .unwrap();
    let (s, b) = pair(&fx, code, None).await;
    assert_eq!((s, err_code(&b)), (400, "invalid_code"));
    assert!(b["message"].as_str().unwrap().contains("expired"), "{b}");

    let (s, b) = pair(&fx, "not a code", None).await;
    assert_eq!(
        (s, err_code(&b), b["field"].as_str()),
        (400, "invalid_code", Some("code"))
    );

    // An agent's code is refused at the phone endpoint and stays usable.
    let agent_id: String = fx
        .db()
        .query_row(
            "SELECT id FROM agents ORDER BY created_at LIMIT 1",
            &[],
            |r| r.get(0),
        )
        .unwrap();
    let inv = invite(&fx, &admin, "agents", &agent_id).await;
    let code = inv["code"].as_str().unwrap();
    let (s, _) = pair(&fx, code, None).await;
    assert_eq!(s, 400);
    let (s, b) = fx
        .call(
            "POST",
            "/api/agent/login",
            None,
            Some(json!({"code": code})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["agent"]["id"], agent_id);
    let agent_token = b["token"].as_str().unwrap();
    let (s, _) = fx
        .call("GET", "/api/agent/questions", Some(agent_token), None)
        .await;
    assert_eq!(s, 200, "the minted agent token asks and lists");

    // Only an admin token creates invites.
    let (s, b) = fx
        .call(
            "POST",
            &format!("/api/admin/users/{}/invites", fx.alice),
            Some(&fx.alice_token),
            None,
        )
        .await;
    assert_eq!((s, err_code(&b)), (403, "wrong_token_kind"));
    let (s, _) = fx
        .call(
            "POST",
            "/api/admin/users/u_nobody/invites",
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn wrong_guesses_burn_the_invite_and_then_block_the_address() {
    let fx = Fixture::new().await;
    let admin = admin_token(&fx).await;
    let inv = invite(&fx, &admin, "users", &fx.alice).await;
    let code = inv["code"].as_str().unwrap().to_string();
    // Five wrong secrets against this invite's id burn it.
    let wrong = format!("{}-0000-0000-0000", &code[..4]);
    for _ in 0..5 {
        let (s, _) = pair(&fx, &wrong, None).await;
        assert_eq!(s, 400);
    }
    let (s, b) = pair(&fx, &code, None).await;
    assert_eq!((s, err_code(&b)), (400, "invalid_code"));
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("too many wrong attempts"),
        "{b}"
    );

    // That was six failures from this address; four more unknown codes and
    // the address is blocked, even for a valid code.
    let fresh = invite(&fx, &admin, "users", &fx.bob).await;
    for i in 0..4 {
        let (s, _) = pair(&fx, &format!("ZZZ{i}-0000-0000-0000"), None).await;
        assert_eq!(s, 400);
    }
    let resp = fx
        .http
        .post(format!("{}/api/pair", fx.base))
        .json(&json!({"code": fresh["code"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert!(resp.headers().get("retry-after").is_some());
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["code"], "too_many_attempts");
}

#[tokio::test]
async fn devices_register_their_language_and_a_bad_tag_is_refused() {
    let fx = Fixture::new().await;
    let reg = |locale: Value| json!({"platform": "android", "push_token": "fcm-1", "app_id": "io.example", "locale": locale});
    let (s, b) = fx
        .call(
            "POST",
            "/api/devices",
            Some(&fx.alice_token),
            Some(reg(json!("not a tag!"))),
        )
        .await;
    assert_eq!((s, b["field"].as_str()), (422, Some("locale")), "{b}");
    let (s, _) = fx
        .call(
            "POST",
            "/api/devices",
            Some(&fx.alice_token),
            Some(reg(json!("pt-BR"))),
        )
        .await;
    assert_eq!(s, 201);
    // Registering again updates the language.
    let (s, _) = fx
        .call(
            "POST",
            "/api/devices",
            Some(&fx.alice_token),
            Some(reg(json!("de"))),
        )
        .await;
    assert_eq!(s, 201);
    let devices = identity::devices_of(&fx.db(), &fx.alice).unwrap();
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0].locale, "de");
}

/// The limiter counted each IPv6 address on its own, so
/// one /64 (which one host may use whole) gave unlimited guesses. Behind a
/// trusted proxy on loopback, the forwarded addresses are plain data here:
/// nothing is sent anywhere but 127.0.0.1.
#[tokio::test]
async fn failures_from_one_ipv6_64_share_one_budget() {
    let fx = Fixture::with(|s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let admin = admin_token(&fx).await;
    let fresh = invite(&fx, &admin, "users", &fx.bob).await;
    let from = |addr: String, code: Value| {
        fx.http
            .post(format!("{}/api/pair", fx.base))
            .header("x-forwarded-for", addr)
            .json(&json!({ "code": code }))
            .send()
    };
    for i in 1..=qp_server::pairing::MAX_FAILURES_PER_ADDRESS {
        let resp = from(format!("2001:db8:7:7::{i:x}"), json!("ZZZZ-0000-0000-0000"))
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 400);
    }
    // Another address of the same /64, with a valid code: blocked.
    let resp = from("2001:db8:7:7:abcd::1".into(), fresh["code"].clone())
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert!(resp.headers().get("retry-after").is_some());
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["code"], "too_many_attempts");
    // The next /64 is somebody else, and pairs.
    let resp = from("2001:db8:7:8::1".into(), fresh["code"].clone())
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

/// Two IPv6 forms carry an IPv4 address that
/// names the host. A 6to4 address (2002:AABB:CCDD::/48) gives whoever holds
/// one IPv4 address 65,536 /64s, so ten failures from each; a Teredo
/// address (2001:0:SERVER:…:CLIENT) has the Teredo server in its /64, so
/// one client's failures blocked every client of that server. Each is
/// counted as the IPv4 address it carries, its host's.
#[tokio::test]
async fn six_to_four_and_teredo_are_counted_as_their_ipv4_host() {
    let fx = Fixture::with(|s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let admin = admin_token(&fx).await;
    let from = |addr: String, code: Value| {
        fx.http
            .post(format!("{}/api/pair", fx.base))
            .header("x-forwarded-for", addr)
            .json(&json!({ "code": code }))
            .send()
    };
    let wrong = || json!("ZZZZ-0000-0000-0000");
    // 6to4 of 192.0.2.7: a different /64 each time.
    for i in 1..=qp_server::pairing::MAX_FAILURES_PER_ADDRESS {
        let resp = from(format!("2002:c000:207:{i:x}::1"), wrong())
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 400);
    }
    for addr in ["2002:c000:207:ffff::1", "192.0.2.7"] {
        let fresh = invite(&fx, &admin, "users", &fx.bob).await;
        let resp = from(addr.into(), fresh["code"].clone()).await.unwrap();
        assert_eq!(resp.status().as_u16(), 429, "{addr}: the same host");
    }
    // Teredo through server 192.0.2.45: ten clients fail once each (their
    // IPv4 addresses 203.0.113.i, inverted in the last 32 bits)...
    let teredo = |client: u32| {
        let c = !client;
        format!("2001:0:c000:22d:0:f227:{:x}:{:x}", c >> 16, c & 0xffff)
    };
    let client = |i: u32| u32::from(std::net::Ipv4Addr::new(203, 0, 113, i as u8));
    for i in 1..=qp_server::pairing::MAX_FAILURES_PER_ADDRESS {
        let resp = from(teredo(client(i)), wrong()).await.unwrap();
        assert_eq!(resp.status().as_u16(), 400);
    }
    // ...and another client of that server still pairs.
    let fresh = invite(&fx, &admin, "users", &fx.bob).await;
    let resp = from(teredo(client(200)), fresh["code"].clone())
        .await
        .unwrap();
    assert_eq!(
        resp.status().as_u16(),
        200,
        "one Teredo client locked out all"
    );
    // One Teredo client failing ten times is blocked, as its IPv4 address.
    for _ in 1..qp_server::pairing::MAX_FAILURES_PER_ADDRESS {
        from(teredo(client(1)), wrong()).await.unwrap();
    }
    let fresh = invite(&fx, &admin, "users", &fx.bob).await;
    let resp = from("203.0.113.1".into(), fresh["code"].clone())
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
}

async fn preview(fx: &Fixture, code: &str) -> (u16, Value) {
    fx.call(
        "POST",
        "/api/pair/preview",
        None,
        Some(json!({ "code": code })),
    )
    .await
}

fn count(fx: &Fixture, table: &str) -> i64 {
    fx.db()
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), &[], |r| r.get(0))
        .unwrap()
}

/// A pairing link names the account it signs in to before anything is
/// spent: the web responder shows that name and waits for the person's
/// click (a link redeemed on load switched a browser to another account).
#[tokio::test]
async fn a_preview_names_the_account_and_leaves_the_code_unspent() {
    let fx = Fixture::new().await;
    let admin = admin_token(&fx).await;
    let inv = invite(&fx, &admin, "users", &fx.alice).await;
    let code = inv["code"].as_str().unwrap();
    let (tokens, audit) = (count(&fx, "tokens"), count(&fx, "audit_log"));

    // Twice, as typed: the same answer, nothing minted, nothing audited.
    for typed in [code.to_string(), code.replace('-', "").to_lowercase()] {
        let (s, b) = preview(&fx, &typed).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["user"]["id"], fx.alice);
        assert_eq!(b["user"]["display_name"], "Alice");
        assert_eq!(b["server"], fx.base);
        assert_eq!(b["expires_at"], inv["expires_at"]);
        assert!(b.get("token").is_none(), "{b}");
    }
    assert_eq!(count(&fx, "tokens"), tokens, "a preview mints no token");
    assert_eq!(count(&fx, "audit_log"), audit, "a preview changes nothing");

    // The code still pairs, once; then the preview says it was used.
    let (s, b) = pair(&fx, code, None).await;
    assert_eq!(
        (s, b["user"]["id"].as_str()),
        (200, Some(fx.alice.as_str()))
    );
    let (s, b) = preview(&fx, code).await;
    assert_eq!((s, err_code(&b)), (400, "invalid_code"));
    assert!(
        b["message"].as_str().unwrap().contains("already used"),
        "{b}"
    );

    // An agent's code is not a browser's: refused, and not spent.
    let agent_id: String = fx
        .db()
        .query_row(
            "SELECT id FROM agents ORDER BY created_at LIMIT 1",
            &[],
            |r| r.get(0),
        )
        .unwrap();
    let inv = invite(&fx, &admin, "agents", &agent_id).await;
    let (s, b) = preview(&fx, inv["code"].as_str().unwrap()).await;
    assert_eq!((s, err_code(&b)), (400, "invalid_code"));
    assert!(b.get("user").is_none(), "{b}");
    let (s, _) = fx
        .call(
            "POST",
            "/api/agent/login",
            None,
            Some(json!({"code": inv["code"]})),
        )
        .await;
    assert_eq!(s, 200);

    // No code, or not a string: the field is named.
    let (s, b) = fx
        .call("POST", "/api/pair/preview", None, Some(json!({})))
        .await;
    assert_eq!((s, b["field"].as_str()), (422, Some("code")), "{b}");
}

/// Looking up codes is no easier a way to guess one than pairing: wrong
/// secrets burn the invite and count against the address, and one address
/// may look up only so many codes, right or wrong.
#[tokio::test]
async fn previews_are_bounded_like_pairing_and_rate_limited_per_address() {
    let fx = Fixture::with(|s| s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let admin = admin_token(&fx).await;
    let from = |addr: &str, code: &Value| {
        fx.http
            .post(format!("{}/api/pair/preview", fx.base))
            .header("x-forwarded-for", addr)
            .json(&json!({ "code": code }))
            .send()
    };
    // Five wrong secrets against one invite's id, by preview: burned.
    let inv = invite(&fx, &admin, "users", &fx.alice).await;
    let code = inv["code"].as_str().unwrap();
    let wrong = json!(format!("{}-0000-0000-0000", &code[..4]));
    for _ in 0..5 {
        let resp = from("192.0.2.1", &wrong).await.unwrap();
        assert_eq!(resp.status().as_u16(), 400);
    }
    let (s, b) = pair(&fx, code, None).await;
    assert_eq!(s, 400, "{b}");
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("too many wrong attempts"),
        "{b}"
    );
    // Five more failures: that address is blocked, for a valid code too.
    let fresh = invite(&fx, &admin, "users", &fx.bob).await;
    for i in 0..5 {
        let resp = from("192.0.2.1", &json!(format!("ZZZ{i}-0000-0000-0000")))
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 400);
    }
    let resp = from("192.0.2.1", &fresh["code"]).await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);

    // A valid code looked up over and over from one address: refused past
    // the budget, with Retry-After; another address still looks it up.
    for _ in 0..qp_server::pairing::MAX_PREVIEWS_PER_ADDRESS {
        let resp = from("192.0.2.2", &fresh["code"]).await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
    }
    let resp = from("192.0.2.2", &fresh["code"]).await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert!(resp.headers().get("retry-after").is_some());
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["code"], "too_many_attempts");
    let resp = from("192.0.2.3", &fresh["code"]).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // Looking did not spend it.
    let (s, b) = pair(&fx, fresh["code"].as_str().unwrap(), None).await;
    assert_eq!((s, b["user"]["id"].as_str()), (200, Some(fx.bob.as_str())));
}
