//! A person's history (`GET /api/questions/history`) over the real HTTP
//! API, on SQLite and (with QP_TEST_POSTGRES) PostgreSQL: the questions they
//! could see, resolved included with the answer and who gave it, newest
//! first, a page at a time; never anyone else's.

mod common;

use common::{err_field, Fixture};
use serde_json::{json, Value};

async fn history(f: &Fixture, token: &str, query: &str) -> Value {
    let (s, body) = f
        .call(
            "GET",
            &format!("/api/questions/history{query}"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(s, 200, "{body}");
    body
}

fn prompts(body: &Value) -> Vec<&str> {
    body["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["prompt"].as_str().unwrap())
        .collect()
}

fn id(q: &Value) -> String {
    q["id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn history_shows_what_the_person_could_see_resolved_included() {
    let f = Fixture::new().await;
    let answered = f
        .ask(json!({"prompt": "Room, answered", "responder_scope": "room"}))
        .await;
    let (s, _) = f
        .answer(&f.alice_token, &id(&answered), json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    let cancelled = f
        .ask(json!({"prompt": "Room, cancelled", "responder_scope": "room"}))
        .await;
    assert_eq!(f.cancel(&id(&cancelled)).await.0, 200);
    let expired = f
        .ask(json!({"prompt": "Room, expired", "responder_scope": "room"}))
        .await;
    f.set_expiry(&id(&expired), -1);
    f.ask(json!({"prompt": "For the owner"})).await;
    f.ask(json!({"prompt": "For Bob", "target_user_id": f.bob}))
        .await;
    f.ask(json!({"prompt": "Room, pending", "responder_scope": "room"}))
        .await;

    let bob = history(&f, &f.bob_token, "").await;
    assert_eq!(
        prompts(&bob),
        [
            "Room, pending",
            "For Bob",
            "Room, expired",
            "Room, cancelled",
            "Room, answered"
        ]
    );
    let qs = bob["questions"].as_array().unwrap();
    // The answer and who gave it; the states as they are now.
    assert_eq!(qs[4]["state"], "answered");
    assert_eq!(qs[4]["answer"]["value"], "approve");
    assert_eq!(qs[4]["answer"]["responder"]["id"], f.alice.as_str());
    assert_eq!(qs[3]["state"], "cancelled");
    assert_eq!(qs[2]["state"], "expired");
    assert_eq!(qs[0]["state"], "pending");
    assert!(bob["next"].is_null(), "{bob}");

    let alice = history(&f, &f.alice_token, "").await;
    assert_eq!(
        prompts(&alice),
        [
            "Room, pending",
            "For the owner",
            "Room, expired",
            "Room, cancelled",
            "Room, answered"
        ]
    );
    // Carol is in another room: nothing of Ops.
    let carol = history(&f, &f.carol_token, "").await;
    assert_eq!(prompts(&carol), Vec::<&str>::new());
    // An agent's token is not a person's.
    let (s, _) = f
        .call("GET", "/api/questions/history", Some(&f.agent_token), None)
        .await;
    assert_eq!(s, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn history_pages_newest_first_without_gaps_or_repeats() {
    let f = Fixture::new().await;
    for i in 1..=5 {
        f.ask(json!({"prompt": format!("Q{i}"), "responder_scope": "room"}))
            .await;
    }
    let mut seen = Vec::new();
    let mut query = "?limit=2".to_string();
    let mut pages = 0;
    loop {
        let page = history(&f, &f.bob_token, &query).await;
        pages += 1;
        seen.extend(prompts(&page).iter().map(|p| p.to_string()));
        match page["next"].as_str() {
            Some(next) => query = format!("?limit=2&before={next}"),
            None => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(seen, ["Q5", "Q4", "Q3", "Q2", "Q1"]);
    // A question asked meanwhile does not shift the pages already read.
    let first = history(&f, &f.bob_token, "?limit=2").await;
    let next = first["next"].as_str().unwrap().to_string();
    f.ask(json!({"prompt": "Q6", "responder_scope": "room"}))
        .await;
    let second = history(&f, &f.bob_token, &format!("?limit=2&before={next}")).await;
    assert_eq!(prompts(&second), ["Q3", "Q2"]);
    // Bounds, each naming its field.
    for (query, field) in [
        ("?limit=0", "limit"),
        ("?limit=201", "limit"),
        ("?limit=many", "limit"),
        ("?before=q_1", "before"),
        ("?before=-3", "before"),
    ] {
        let (s, body) = f
            .call(
                "GET",
                &format!("/api/questions/history{query}"),
                Some(&f.bob_token),
                None,
            )
            .await;
        assert_eq!((s, err_field(&body)), (422, field), "{query}: {body}");
    }
}

/// A reloaded page keeps the history page it read and sends its `ETag`
/// back: while the page is the same the server sends no body (the web
/// responder's reload stays within its bytes), and any change to what it
/// holds (an answer, a new question) is a new page with a new `ETag`.
#[tokio::test(flavor = "multi_thread")]
async fn history_revalidates_to_a_bodiless_304_until_it_changes() {
    let f = Fixture::new().await;
    f.ask(json!({"prompt": "For Bob", "target_user_id": f.bob}))
        .await;
    let q = f
        .ask(json!({"prompt": "Kept", "responder_scope": "room"}))
        .await;
    let get = |etag: Option<String>| {
        let mut req = f
            .http
            .get(format!("{}/api/questions/history", f.base))
            .bearer_auth(&f.bob_token);
        if let Some(etag) = etag {
            req = req.header("if-none-match", etag);
        }
        req.send()
    };
    let first = get(None).await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["cache-control"], "private, no-cache");
    let etag = first.headers()["etag"].to_str().unwrap().to_string();
    assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");
    assert_eq!(
        prompts(&first.json::<Value>().await.unwrap()),
        ["Kept", "For Bob"]
    );

    let again = get(Some(etag.clone())).await.unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag.as_str());
    assert!(again.bytes().await.unwrap().is_empty());
    // Another person's page (without Bob's own question) is not this one.
    let alice = f
        .http
        .get(format!("{}/api/questions/history", f.base))
        .bearer_auth(&f.alice_token)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(alice.status(), 200);

    let (s, _) = f
        .answer(&f.alice_token, &id(&q), json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    let changed = get(Some(etag.clone())).await.unwrap();
    assert_eq!(changed.status(), 200);
    assert_ne!(changed.headers()["etag"], etag.as_str());
    let body: Value = changed.json().await.unwrap();
    assert_eq!(body["questions"][0]["state"], "answered");
}

/// A page of history goes out Brotli- or gzip-coded to a client that
/// accepts it (a browser always does): 50 questions are several times
/// smaller on the wire, and the kept page still revalidates to a 304 with
/// the (now weak) `ETag` the coded response carried. Fails before the API's
/// JSON was coded (no Content-Encoding).
#[tokio::test(flavor = "multi_thread")]
async fn a_page_of_history_is_compressed_for_a_browser_and_still_revalidates() {
    let f = Fixture::with(|s| s.ask_burst = 60).await;
    for i in 0..50 {
        f.ask(json!({"prompt": format!("Deploy release candidate {i} to the staging cluster?"), "responder_scope": "room"}))
            .await;
    }
    let get = |coding: &'static str, etag: Option<String>| {
        let mut req = f
            .http
            .get(format!("{}/api/questions/history", f.base))
            .bearer_auth(&f.bob_token)
            .header("accept-encoding", coding);
        if let Some(etag) = etag {
            req = req.header("if-none-match", etag);
        }
        req.send()
    };
    let plain = get("identity", None).await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let plain = plain.bytes().await.unwrap();
    for (coding, decode) in [
        (
            "gzip",
            (|b: &[u8]| {
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(b), &mut out).unwrap();
                out
            }) as fn(&[u8]) -> Vec<u8>,
        ),
        ("gzip, deflate, br, zstd", |b: &[u8]| {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut brotli::Decompressor::new(b, 4096), &mut out).unwrap();
            out
        }),
    ] {
        let resp = get(coding, None).await.unwrap();
        assert_eq!(resp.status(), 200);
        let want = if coding == "gzip" { "gzip" } else { "br" };
        assert_eq!(resp.headers()["content-encoding"], want, "{coding}");
        assert_eq!(resp.headers()["vary"], "accept-encoding");
        let etag = resp.headers()["etag"].to_str().unwrap().to_string();
        assert!(etag.starts_with("W/\""), "{etag}");
        let coded = resp.bytes().await.unwrap();
        assert_eq!(decode(&coded), plain.to_vec(), "{coding}");
        assert!(
            coded.len() * 4 < plain.len(),
            "{coding}: {} bytes of {}",
            coded.len(),
            plain.len()
        );
        let again = get(coding, Some(etag.clone())).await.unwrap();
        assert_eq!(again.status(), 304, "{coding}");
        // The 304 names the validator as the 200 did (weak), not strong.
        assert_eq!(again.headers()["etag"], etag.as_str(), "{coding}");
    }
    // A small body goes out as it is.
    let small = f
        .http
        .get(format!("{}/api/questions/history?limit=1", f.base))
        .bearer_auth(&f.bob_token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert!(small.headers().get("content-encoding").is_none());
}

/// The history's index, (room_id, seq), is made by a migration on both
/// engines (the SQLite plan is checked in store/questions.rs).
#[tokio::test(flavor = "multi_thread")]
async fn the_history_index_exists_on_this_engine() {
    let f = Fixture::new().await;
    let sql = if f.on_postgres() {
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'questions_by_room_seq'"
    } else {
        "SELECT sql FROM sqlite_master WHERE name = 'questions_by_room_seq'"
    };
    let def: String = f
        .db()
        .query_row(sql, qp_server::params![], |r| r.get(0))
        .unwrap();
    assert!(def.contains("(room_id, seq)"), "{def}");
}

/// Someone who left a room no longer sees its questions in their history
/// (the history follows membership now, both ways: a new member sees the
/// room's whole past, as docs/agents/wire-api.md says).
#[tokio::test(flavor = "multi_thread")]
async fn someone_who_left_a_room_no_longer_sees_its_history() {
    let f = Fixture::new().await;
    let asked = f
        .ask(json!({"prompt": "Room, before Bob left", "responder_scope": "room"}))
        .await;
    let (s, _) = f
        .answer(&f.alice_token, &id(&asked), json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    let body = history(&f, &f.bob_token, "").await;
    assert!(prompts(&body).contains(&"Room, before Bob left"), "{body}");
    assert!(qp_server::store::offboard::remove_member(&f.db(), &f.room_id, &f.bob).unwrap());
    let body = history(&f, &f.bob_token, "").await;
    assert!(
        !prompts(&body).contains(&"Room, before Bob left"),
        "Bob still sees a room he left: {body}"
    );
    // Alice, still a member, does.
    let body = history(&f, &f.alice_token, "").await;
    assert!(prompts(&body).contains(&"Room, before Bob left"), "{body}");
}
