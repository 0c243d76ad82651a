//! Push delivery through gateway faults (issue 54), through the real
//! server and worker against the stand-in APNs of `support/gateways.rs`
//! over real HTTP/2 on loopback: a connection that goes silent in the
//! middle of a 1,000-device fan-out, a GOAWAY with an error code, a storm
//! of 503s and 429s. Apart from `push_fanout` (its own binary, so never
//! run beside that suite's 10,000-device test on a 2-core machine: the
//! times here are goals). The figures are in RELIABILITY.md.

mod common;
#[path = "support/gateways.rs"]
mod gateways;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use qp_server::push::apns::ApnsConfig;
use qp_server::store::deliveries::push_jobs_of;
use qp_server::store::identity::{self, DeviceRegistration};
use serde_json::json;

fn apns_config(url: &str, max_connections: usize) -> ApnsConfig {
    ApnsConfig {
        base_url: url.into(),
        team_id: "TEAM123456".into(),
        key_id: "KEY1234567".into(),
        key_pem: gateways::fixture("apns-test-key.p8").into(),
        key_file: None,
        token_ttl: Duration::from_secs(3000),
        max_connections,
    }
}

/// APNs device token number `i` (64 hex digits).
fn apns_token(i: usize) -> String {
    format!("{i:064x}")
}

/// Adds `users` members to the fixture's room, each with `ios` iPhones
/// (tokens numbered from 0 across the room), in one transaction; returns
/// their tokens.
fn seed_devices(f: &common::Fixture, users: usize, ios: usize) -> Vec<String> {
    let conn = f.db();
    let tx = conn.transaction().unwrap();
    let (mut n_ios, mut tokens) = (0, vec![]);
    for u in 0..users {
        let user = identity::create_user(&*tx, &format!("Person {u}"), None).unwrap();
        identity::add_member(&*tx, &f.room_id, &user.id).unwrap();
        identity::create_user_token(&*tx, &user.id, "phone").unwrap();
        for _ in 0..ios {
            let token = apns_token(n_ios);
            n_ios += 1;
            identity::register_device(
                &*tx,
                &user.id,
                None,
                &DeviceRegistration {
                    platform: "ios",
                    push_token: &token,
                    app_id: "io.example.app",
                    locale: "",
                    public_key: None,
                    apns_environment: None,
                },
            )
            .unwrap();
            tokens.push(token);
        }
    }
    tx.commit().unwrap();
    tokens
}

async fn until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn room_question(f: &common::Fixture) -> String {
    let q = f
        .ask(json!({"prompt": "Deploy v1.4.0 to production?", "responder_scope": "room"}))
        .await;
    q["id"].as_str().unwrap().to_string()
}

/// Every job of the question, by state.
fn states(f: &common::Fixture, id: &str) -> HashMap<String, usize> {
    let mut by = HashMap::new();
    for j in push_jobs_of(&f.db(), id).unwrap() {
        *by.entry(j.state).or_insert(0) += 1;
    }
    by
}

/// Every device's accepted count for question `id`, and its jobs' attempts.
fn delivery_report(
    apns: &gateways::ApnsStandIn,
    f: &common::Fixture,
    id: &str,
) -> (HashMap<String, usize>, Vec<u32>) {
    let mut per: HashMap<String, usize> = HashMap::new();
    for a in apns.state.accepted.lock().unwrap().iter() {
        if a.collapse_id == id {
            *per.entry(a.device_token.clone()).or_default() += 1;
        }
    }
    let attempts = push_jobs_of(&f.db(), id)
        .unwrap()
        .into_iter()
        .map(|j| j.attempts)
        .collect();
    (per, attempts)
}

/// Issue 54: a connection that stops answering in the middle of a
/// 1,000-device fan-out (the stand-in stops reading and writing and never
/// closes, as a NAT that dropped it) is found by an unanswered HTTP/2 PING
/// and its pushes go again on a new connection: every device accepted
/// within 5 s of the fault, none lost, and pushes sent twice only among
/// those the dead connection had taken (same collapse id: one
/// notification on the phone).
#[ignore = "timing under fault injection: on a busy 2-core machine recovery, doubles and attempts vary; run on an idle machine with --ignored (RELIABILITY.md)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_stops_answering_mid_fan_out_is_replaced_within_5_s() {
    use std::sync::atomic::Ordering::SeqCst;
    let apns = gateways::apns(Duration::from_millis(40), 500).await;
    apns.state.freeze_after(300);
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 500, 2);
    let id = room_question(&f).await;
    until("the fault", Duration::from_secs(20), || {
        apns.state.frozen_at.lock().unwrap().is_some()
    })
    .await;
    let frozen_at = apns.state.frozen_at.lock().unwrap().unwrap();
    // Recovered: every push answered to the server (the silent
    // connection's own were taken by the stand-in but never answered).
    until(
        "every push accepted and recorded",
        Duration::from_secs(20),
        || states(&f, &id).get("sent") == Some(&tokens.len()),
    )
    .await;
    let recovered = frozen_at.elapsed();
    let (per, attempts) = delivery_report(&apns, &f, &id);
    let doubled: usize = per.values().map(|n| n - 1).sum();
    println!(
        "dead connection: recovered in {recovered:?}, {} devices, 0 lost, {doubled} sent twice, {} connections",
        tokens.len(),
        apns.state.connections.load(SeqCst)
    );
    assert!(recovered < Duration::from_secs(5), "{recovered:?}");
    assert!(
        apns.state.connections.load(SeqCst) >= 2,
        "no new connection"
    );
    // Only a push the silent connection had taken can go twice: at most
    // one connection's streams.
    assert!(doubled <= 500, "{doubled}");
    assert!(per.values().all(|n| *n <= 2), "{per:?}");
    // Sent again by the pool, not retried by the worker.
    assert!(attempts.iter().all(|a| *a == 1), "{attempts:?}");
}

/// Issue 54: a GOAWAY with an error code in the middle of a fan-out
/// closes the connection; its failed streams go again at once on a new one
/// without spending an attempt, and nothing is lost.
#[ignore = "timing under fault injection: on a busy 2-core machine recovery, doubles and attempts vary; run on an idle machine with --ignored (RELIABILITY.md)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_goaway_mid_fan_out_loses_nothing_and_spends_no_attempt() {
    use std::sync::atomic::Ordering::SeqCst;
    let apns = gateways::apns(Duration::from_millis(50), 100).await;
    apns.state.goaway_with_error_after(150);
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 500, 2);
    let t0 = Instant::now();
    let id = room_question(&f).await;
    until("every device accepted", Duration::from_secs(30), || {
        delivery_report(&apns, &f, &id).0.len() == tokens.len()
    })
    .await;
    let took = t0.elapsed();
    // Recording trails the gateway's acceptance (each outcome is a write on
    // the database thread), more so on PostgreSQL on a busy machine.
    until("recorded", Duration::from_secs(30), || {
        states(&f, &id).get("sent") == Some(&tokens.len())
    })
    .await;
    let (per, attempts) = delivery_report(&apns, &f, &id);
    let doubled: usize = per.values().map(|n| n - 1).sum();
    println!(
        "error GOAWAY: {} devices in {took:?}, 0 lost, {doubled} sent twice",
        tokens.len()
    );
    assert_eq!(apns.state.goaways.load(SeqCst), 1);
    assert!(attempts.iter().all(|a| *a == 1), "{attempts:?}");
}

/// Issue 54: a storm of 503s (every device refused three times, some with
/// Retry-After, some without) and 429s: every push retried until accepted,
/// none failed, none lost, none sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_and_429_storm_loses_and_doubles_nothing() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 100, 2);
    for (i, t) in tokens.iter().enumerate() {
        let replies = match i % 4 {
            0 => vec![(503, "ServiceUnavailable", None); 3],
            1 => vec![(503, "ServiceUnavailable", Some(1)); 2],
            2 => vec![(429, "TooManyRequests", Some(1))],
            _ => vec![(429, "TooManyRequests", None), (503, "Shutdown", None)],
        };
        apns.state.script(t, replies);
    }
    let id = room_question(&f).await;
    until("every push accepted", Duration::from_secs(30), || {
        states(&f, &id).get("sent") == Some(&tokens.len())
    })
    .await;
    let (per, _) = delivery_report(&apns, &f, &id);
    assert_eq!(per.len(), tokens.len(), "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
}
