//! Push delivery through gateway faults (issue 54), through the real
//! server and worker against the stand-in gateways of
//! `support/gateways.rs` over real HTTP/2 on loopback: a connection that
//! goes silent in the middle of a 1,000-device fan-out, a GOAWAY with an
//! error code, storms of 503s and 429s, APNs provider-token trouble, FCM
//! throttling, a server killed mid fan-out, an instance stalled past its
//! lease.
//!
//! What is asserted holds whatever the machine's load (these run beside
//! builds on a 2-core machine): nothing lost; a push accepted twice only
//! where the gateway may have taken it (and then under the same collapse
//! id); recovery by the mechanism meant (an unanswered PING, a resend at
//! once) rather than by a timeout, shown by the attempts spent and the
//! metrics, not by a wall-clock bound. Each prints its figures (the time
//! to recover, lost, doubled): RELIABILITY.md has them, with the command.

mod common;
#[path = "../../server/tests/support/fanout.rs"]
mod fanout;
#[path = "../../server/tests/support/gateways.rs"]
mod gateways;
#[path = "../../server/tests/support/webpush.rs"]
mod webpush_standin;

use std::collections::HashMap;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use serde_json::json;

use fanout::{
    accepted_per_device, apns_config, attempts, doubled, metric, room_question, seed_devices, sent,
    until,
};

/// The series of pushes sent again that APNs may have taken.
fn resent(cause: &str) -> String {
    format!(r#"qp_push_resent_maybe_delivered_total{{gateway="apns",cause="{cause}"}}"#)
}

/// Devices accepted twice, none of the times on connection `conn` (the
/// faulty one): a double without it is a defect.
fn doubled_elsewhere(apns: &gateways::ApnsStandIn, id: &str, conn: usize) -> Vec<String> {
    let mut by: HashMap<String, Vec<usize>> = HashMap::new();
    for a in apns.state.accepted.lock().unwrap().iter() {
        if a.collapse_id == id {
            by.entry(a.device_token.clone())
                .or_default()
                .push(a.connection);
        }
    }
    by.into_iter()
        // Any order: the stand-in records an acceptance when it answers,
        // and the connection that went away may answer its copy after the
        // new one did.
        .filter(|(_, conns)| conns.len() > 1 && !conns.contains(&conn))
        .map(|(t, _)| t)
        .collect()
}

/// A connection that stops answering in the middle of a
/// 1,000-device fan-out (the stand-in stops reading and writing and never
/// closes, as a NAT that dropped it) is found by an unanswered HTTP/2 PING
/// and its pushes go again at once on a new connection. Whatever the
/// load: every device accepted, none lost; no push waited out the
/// response timeout (no attempt spent, nothing counted as a timeout), the
/// resends counted as dead-connection ones; a push accepted twice only if
/// the silent connection had taken it first, under the same collapse id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_stops_answering_mid_fan_out_is_replaced_without_a_timeout() {
    let apns = gateways::apns(Duration::from_millis(40), 500).await;
    apns.state.freeze_after(300);
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 500, 2, 0);
    let id = room_question(&f).await;
    until("the fault", Duration::from_secs(60), || {
        apns.state.frozen_at.lock().unwrap().is_some()
    })
    .await;
    let frozen_at = apns.state.frozen_at.lock().unwrap().unwrap();
    // Every push answered to the server and recorded (the silent
    // connection's own were taken by the stand-in but never answered).
    until("every push recorded sent", Duration::from_secs(120), || {
        sent(&f.db(), &id) == tokens.len()
    })
    .await;
    let recovered = frozen_at.elapsed();
    let per = accepted_per_device(Some(&apns), None, &id);
    let twice = doubled(&per);
    let dead = metric(&f, &resent("dead_connection")).await;
    let timeouts = metric(&f, &resent("timeout")).await;
    println!(
        "dead connection: recovered in {recovered:?} (fault to every push recorded), {} devices, {} lost, {twice} sent twice, {dead} resent after the dead connection, {} connections",
        tokens.len(),
        tokens.len() - per.len(),
        apns.state.connections.load(SeqCst)
    );
    assert_eq!(per.len(), tokens.len(), "lost");
    // The goal: noticed and re-sent within 5 s. Noticing takes the
    // slow-stream probe's quiet interval, a check's period and the PING's
    // timeout (2 s + 0.25 s + 1.5 s) after the last response. The first
    // resend: the first push the silent connection had taken (never
    // answered) accepted again on another connection. (The other
    // connection goes on accepting its own pushes meanwhile.)
    let frozen = apns.state.frozen_connection.load(SeqCst);
    let first_resend = {
        let accepted = apns.state.accepted.lock().unwrap();
        let taken: std::collections::HashSet<&str> = accepted
            .iter()
            .filter(|a| a.connection == frozen)
            .map(|a| a.device_token.as_str())
            .collect();
        accepted
            .iter()
            .filter(|a| a.connection != frozen && a.at > frozen_at)
            .filter(|a| taken.contains(a.device_token.as_str()))
            .map(|a| a.at - frozen_at)
            .min()
            .expect("nothing the silent connection took was re-sent")
    };
    println!("dead connection: first push re-sent {first_resend:?} after the fault");
    assert!(
        first_resend < Duration::from_secs(5),
        "first resend {first_resend:?} after the fault: the goal is 5 s"
    );
    // The whole recovery (to the last of 1,000 outcomes recorded) with
    // 2.5 s to spare: on the project's 2-core machine, shared with
    // builds, this process is at times starved for a second or more. A
    // detection by the 15 s response timeout fails both.
    assert!(
        recovered < Duration::from_millis(7_500),
        "recovered in {recovered:?}: the goal is 5 s"
    );
    assert!(dead >= 1.0, "no push went again for a dead connection");
    assert_eq!(timeouts, 0.0, "a push waited out the response timeout");
    // Resent by the pool at once, not retried by the worker after a
    // timeout (which spends an attempt).
    let spent = attempts(&f.db(), &id);
    assert!(spent.iter().all(|a| *a == 1), "{spent:?}");
    assert_eq!(doubled_elsewhere(&apns, &id, frozen), Vec::<String>::new());
    assert!(per.values().all(|n| *n <= 2), "{per:?}");
    assert!(twice as f64 <= dead, "{twice} doubled, {dead} counted");
}

/// A fan-out kept busy for seconds (every response arriving 1.2 s after
/// its request, under the slow-stream probe's 2 s) sends no HTTP/2 PING:
/// Google's front ends answer pings sent while frames flow with `GOAWAY
/// ENHANCE_YOUR_CALM "too_many_pings"`, and a connection answering its
/// streams needs no probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_fan_out_with_responses_flowing_sends_no_ping() {
    let apns = gateways::apns(Duration::from_millis(1_200), 100).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 1))).await;
    let tokens = seed_devices(&f, 100, 2, 0);
    // A question a second: streams stay open throughout, and responses
    // keep coming.
    let t0 = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(room_question(&f).await);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    until("every push recorded sent", Duration::from_secs(120), || {
        ids.iter().all(|id| sent(&f.db(), id) == tokens.len())
    })
    .await;
    let took = t0.elapsed();
    let pings = apns.state.pings.load(SeqCst);
    println!(
        "busy fan-out: {} pushes in {took:?}, {pings} PINGs",
        tokens.len() * ids.len()
    );
    assert!(
        took > Duration::from_secs(5),
        "not busy long enough: {took:?}"
    );
    assert_eq!(pings, 0, "PINGs sent while responses flowed");
}

/// A GOAWAY with an error code in the middle of a fan-out
/// closes the connection; its failed streams go again at once on a new one
/// without spending an attempt. Whatever the load: nothing lost; a push
/// accepted twice only if the connection that went away took it first,
/// each such one counted in `/metrics`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_goaway_mid_fan_out_loses_nothing_and_spends_no_attempt() {
    let apns = gateways::apns(Duration::from_millis(50), 100).await;
    apns.state.goaway_with_error_after(150);
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 500, 2, 0);
    let t0 = Instant::now();
    let id = room_question(&f).await;
    until("every push recorded sent", Duration::from_secs(120), || {
        sent(&f.db(), &id) == tokens.len()
    })
    .await;
    let took = t0.elapsed();
    let per = accepted_per_device(Some(&apns), None, &id);
    let twice = doubled(&per);
    let lost = metric(&f, &resent("connection_lost")).await;
    let dead = metric(&f, &resent("dead_connection")).await;
    println!(
        "error GOAWAY: {} devices in {took:?}, {} lost, {twice} sent twice, {lost} resent after the connection went away, {dead} after a dead connection",
        tokens.len(),
        tokens.len() - per.len(),
    );
    assert_eq!(per.len(), tokens.len(), "lost");
    assert_eq!(apns.state.goaways.load(SeqCst), 1);
    let spent = attempts(&f.db(), &id);
    assert!(spent.iter().all(|a| *a == 1), "{spent:?}");
    let gone = apns.state.goaway_connection.load(SeqCst);
    assert_eq!(doubled_elsewhere(&apns, &id, gone), Vec::<String>::new());
    let counted = lost + dead;
    assert!(
        twice as f64 <= counted,
        "{twice} doubled, {counted} counted"
    );
    assert_eq!(metric(&f, &resent("timeout")).await, 0.0);
}

/// A storm of the whole gateway (for 2 s every request is refused: 503
/// `ServiceUnavailable` with and without Retry-After, 503 `Shutdown`),
/// then every device throttled once (429 `TooManyRequests`, half with
/// Retry-After 1 s, half without: about that device, never the gateway):
/// every push retried until accepted, none failed, none lost, none sent
/// twice.
///
/// The storm is the gateway's, not scripted per device: APNs's 503s are
/// about the service, so the outage circuit treats them as such, and a
/// device scripted to fail again after the gateway answers would make
/// each outage probe that meets it lengthen the next step (1 s doubling
/// to 30 s), which is right for a gateway still down. The outage's first
/// probe after the storm is always a throttled device: APNs answered it,
/// so the outage ends there. (It once said nothing about the gateway, and
/// every held push waited `PROBE_WAIT`, 30 s, for another probe: whether
/// the probe met a throttled device depended on the order of the retries,
/// so this test took 4 s alone and hit its 60 s bound beside others.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_and_429_storm_loses_and_doubles_nothing() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 100, 2, 0);
    for (i, t) in tokens.iter().enumerate() {
        let retry_after = (i % 2 == 0).then_some(1);
        apns.state
            .script(t, vec![(429, "TooManyRequests", retry_after)]);
    }
    let storm = Duration::from_secs(2);
    apns.state.storm(
        storm,
        vec![
            (503, "ServiceUnavailable", None),
            (503, "ServiceUnavailable", Some(1)),
            (503, "Shutdown", None),
        ],
    );
    let started = Instant::now();
    let id = room_question(&f).await;
    // The storm opens the outage circuit: its probes fail until the storm
    // ends, the first one after it releases the held pushes; the throttled
    // devices wait their Retry-After or the push backoff. 5-10 s here.
    until("every push accepted", Duration::from_secs(60), || {
        sent(&f.db(), &id) == tokens.len()
    })
    .await;
    let took = started.elapsed();
    eprintln!("storm of {storm:?} settled in {took:?}");
    assert!(took >= storm, "accepted during the storm? {took:?}");
    // The probes' steps (1 s, 2 s…) and the throttled retries (1 s, or
    // the push backoff from 0.5 s), never a wait for another probe.
    let probe_wait = qp_server::push::outage::PROBE_WAIT;
    assert!(
        took < storm + probe_wait,
        "held pushes waited for another probe: {took:?}"
    );
    let per = accepted_per_device(Some(&apns), None, &id);
    assert_eq!(per.len(), tokens.len(), "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
    // The storm's first faults (before 3 in a row opened the outage) and
    // the throttling spend an attempt each, the acceptance one: the held
    // pushes spend none.
    let spent = attempts(&f.db(), &id);
    assert!(spent.iter().all(|a| (1..=4).contains(a)), "{spent:?}");
    let throttled = r#"qp_push_gateway_errors_total{gateway="apns",reason="TooManyRequests"}"#;
    assert!(metric(&f, throttled).await >= 1.0, "{throttled}");
    let outages = r#"qp_push_gateway_outages_total{gateway="apns"}"#;
    assert!(metric(&f, outages).await >= 1.0, "{outages}");
}

/// A push APNs read in full and never answered (its stream reset with
/// INTERNAL_ERROR, not REFUSED_STREAM) may have been delivered: it spends
/// an attempt, is counted as maybe delivered, and goes again under the
/// same `apns-collapse-id` (the phone shows one notification), at most
/// `NO_ANSWER_RESENDS` (3) times: a device whose every request is reset
/// is sent 4 times in all, then failed, saying the gateway may have it;
/// one reset once is accepted on its second send. The others are
/// accepted once. Before, a reset was a plain retry, resent until the
/// 8 attempts ran out, and not counted as maybe delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_reset_after_it_was_written_goes_again_under_its_collapse_id_at_most_three_times() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 20, 1, 0);
    let (never, once) = (&tokens[0], &tokens[1]);
    apns.state.reset_next(never, usize::MAX);
    apns.state.reset_next(once, 1);
    let started = Instant::now();
    let id = room_question(&f).await;
    until("every push recorded", Duration::from_secs(60), || {
        let by = fanout::states(&f, &id);
        by.get("sent") == Some(&(tokens.len() - 1)) && by.get("failed") == Some(&1)
    })
    .await;
    let settled = started.elapsed();
    let seen = apns.state.reset_seen.lock().unwrap().clone();
    let of = |t: &String| collapse_ids_of(&seen, t);
    assert_eq!(
        of(never),
        vec![id.clone(); 4],
        "sent once, re-sent 3 times, under the question's collapse id"
    );
    assert_eq!(of(once), vec![id.clone()]);
    let per = accepted_per_device(Some(&apns), None, &id);
    assert_eq!(per.len(), tokens.len() - 1, "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
    assert!(!per.contains_key(never.as_str()));
    let (attempts, unanswered, error): (i64, i64, String) = f
        .db()
        .query_row(
            "SELECT j.attempts, j.unanswered, j.last_error FROM push_jobs j \
             JOIN devices d ON d.id = j.device_id WHERE j.question_id = ?1 AND d.push_token = ?2",
            qp_server::params![id, never],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((attempts, unanswered), (4, 4), "{error}");
    assert!(error.contains("may have it"), "{error}");
    assert_eq!(metric(&f, &resent("stream_reset")).await, 5.0);
    println!(
        "stream reset after the request was written: settled in {settled:?}; 0 lost; the always-reset device sent 4 times under one collapse id, then failed; the reset-once device accepted on its 2nd send"
    );
}

/// APNs `429 TooManyRequests` is about one device token (too many pushes
/// to it in a row), not the gateway: each throttled push is retried after
/// its Retry-After, spending an attempt, and however many come in a row
/// they never open the outage circuit (before, 3 in a row held every
/// push of the gateway). A push whose question is resolved before its
/// retry comes due is not sent: recorded failed without spending another
/// attempt, logged, counted as `outcome="skipped"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_is_one_devices_and_a_resolved_questions_retry_is_skipped() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 6, 1, 0);
    for t in &tokens {
        apns.state
            .script(t, vec![(429, "TooManyRequests", Some(3))]);
    }
    let id = room_question(&f).await;
    // The question's pushes (not the one that clears it once resolved).
    let question_jobs = || -> Vec<(String, i64, Option<String>)> {
        f.db()
            .query_map(
                "SELECT state, attempts, last_error FROM push_jobs \
                 WHERE question_id = ?1 AND kind = 'question'",
                qp_server::params![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
    };
    // Recorded as retries (an attempt each), not held for an outage.
    until(
        "every push throttled once, recorded",
        Duration::from_secs(30),
        || {
            let jobs = question_jobs();
            jobs.len() == tokens.len() && jobs.iter().all(|(_, a, _)| *a == 1)
        },
    )
    .await;
    let outages = r#"qp_push_gateway_outages_total{gateway="apns"}"#;
    assert_eq!(
        metric(&f, outages).await,
        0.0,
        "TooManyRequests opened the circuit"
    );
    let (s, b) = f.cancel(&id).await;
    assert_eq!(s, 200, "{b}");
    until("every retry skipped", Duration::from_secs(30), || {
        question_jobs()
            .iter()
            .all(|(state, _, _)| state == "failed")
    })
    .await;
    for (_, attempts, error) in question_jobs() {
        assert_eq!(attempts, 1, "{error:?}");
        let error = error.unwrap_or_default();
        assert!(error.contains("(cancelled): not sent"), "{error}");
    }
    let throttled = apns
        .state
        .answered
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, s)| *s == 429)
        .count();
    assert_eq!(
        throttled,
        tokens.len(),
        "each throttled once, none sent again"
    );
    let skipped = r#"qp_push_outcomes_total{gateway="apns",outcome="skipped",reason="gone"}"#;
    assert_eq!(metric(&f, skipped).await, tokens.len() as f64);
    assert_eq!(metric(&f, outages).await, 0.0);
}

/// APNs answers every push `503 ServiceUnavailable` with
/// Retry-After 1 s for 12 s from the ask: longer than the whole attempt
/// schedule under those answers (8 attempts, 1 s apart: about 7 s; the
/// same as a one- to two-minute outage without Retry-After, whose
/// schedule is 63–127 s). A gateway fault is not the push's: once the
/// gateway is in an outage (3 faults in a row) its pushes wait without
/// spending attempts, and when it answers again every push is accepted
/// once. Before, every push spent its 8 attempts and failed for good.
/// Meanwhile `/readyz` says APNs is in an outage: degraded, still 200 (the
/// database is fine: no load balancer should pull the instance), and ok
/// again once APNs answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_outage_longer_than_the_attempt_schedule_fails_no_push() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 100, 2, 0);
    let outage = Duration::from_secs(12);
    apns.state
        .outage(outage, (503, "ServiceUnavailable", Some(1)));
    let t0 = Instant::now();
    let id = room_question(&f).await;
    let fx = &f;
    let ready = move || async move {
        let resp = fx
            .http
            .get(format!("{}/readyz", fx.base))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json::<serde_json::Value>().await.unwrap())
    };
    let (status, during) = loop {
        let (status, r) = ready().await;
        if r["checks"]["push_apns"]["ok"] == false || t0.elapsed() > outage {
            break (status, r);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status, 200, "{during}");
    assert_eq!(during["status"], "degraded", "{during}");
    assert_eq!(during["checks"]["database"]["ok"], true, "{during}");
    let apns_check = &during["checks"]["push_apns"];
    assert_eq!(apns_check["state"], "outage", "{during}");
    assert_eq!(apns_check["circuit"], "apns", "{during}");
    assert!(
        apns_check["error"]
            .as_str()
            .unwrap()
            .contains("503 ServiceUnavailable"),
        "{during}"
    );
    assert!(apns_check["since"].is_string(), "{during}");
    // Until every job is over (sent, or failed for good).
    until("every push done", Duration::from_secs(120), || {
        let s = fanout::states(&f, &id);
        s.get("sent").copied().unwrap_or(0) + s.get("failed").copied().unwrap_or(0) == tokens.len()
    })
    .await;
    let took = t0.elapsed();
    let states = fanout::states(&f, &id);
    let per = accepted_per_device(Some(&apns), None, &id);
    let spent = attempts(&f.db(), &id);
    println!(
        "APNs outage of {outage:?}: {} devices done {took:?} after the ask, {} lost, {} sent twice, attempts at most {:?}",
        tokens.len(),
        tokens.len() - per.len(),
        doubled(&per),
        spent.iter().max()
    );
    assert_eq!(states.get("failed"), None, "failed for good: {states:?}");
    assert_eq!(per.len(), tokens.len(), "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
    assert!(took >= outage, "accepted during the outage? {took:?}");
    // The probe that finds it back (at most the 8 s step after the 12 s)
    // releases every held push at once: not one more step (16 s) for the
    // pushes held while it was out.
    assert!(
        took < outage + Duration::from_secs(12),
        "held pushes not released when the probe answered: {took:?}"
    );
    // The attempts went to the pushes, not the outage: only the faults
    // before it was called one (fewer than 3 in a row) spent any.
    let extra: u32 = spent.iter().map(|a| a - 1).sum();
    assert!(extra < 3, "attempts spent on the outage: {spent:?}");
    let outages = r#"qp_push_gateway_outages_total{gateway="apns"}"#;
    assert!(metric(&f, outages).await >= 1.0, "{outages}");
    let held = r#"qp_push_outcomes_total{gateway="apns",outcome="deferred",reason="outage"}"#;
    assert!(metric(&f, held).await >= 1.0, "{held}");
    let open = r#"qp_push_gateway_outage{gateway="apns"}"#;
    assert_eq!(metric(&f, open).await, 0.0, "{open} after it answered");
    let (status, after) = ready().await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(
        after["checks"]["push_apns"],
        serde_json::json!({"ok": true}),
        "{after}"
    );
    assert_eq!(after["status"], "ok", "{after}");
}

/// A browser push service answers every push 503 (Retry-After
/// 1 s) for 12 s, past the attempt schedule under those answers (8
/// attempts, about 7 s). As for APNs and FCM, its pushes wait without
/// spending attempts once it is in an outage (3 faults in a row), and when
/// it answers again every push is accepted once. Before, every push spent
/// its 8 attempts on the 503s and failed for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_service_outage_longer_than_the_attempt_schedule_fails_no_web_push() {
    let service = webpush_standin::webpush().await;
    let host = service.host();
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("vapid-key");
    let f = common::Fixture::with(move |s| {
        s.web_push_allow = vec![host];
        s.vapid_key = Some(key);
    })
    .await;
    let browsers = fanout::seed_web(&f, &service, 40);
    let outage = Duration::from_secs(12);
    service.state.outage(outage);
    let t0 = Instant::now();
    let id = room_question(&f).await;
    loop {
        let s = fanout::states(&f, &id);
        if s.get("sent").copied().unwrap_or(0) + s.get("failed").copied().unwrap_or(0)
            == browsers.len()
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "not every push done: {s:?}, {} delivered, {} 503s, refused {:?}",
            service.delivered().len(),
            service.state.down_answers.load(SeqCst),
            service.state.refused.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = t0.elapsed();
    let states = fanout::states(&f, &id);
    let mut per: HashMap<String, usize> = HashMap::new();
    for d in service.delivered() {
        if d.plaintext.contains(&id) {
            *per.entry(d.subscription).or_insert(0) += 1;
        }
    }
    let spent = attempts(&f.db(), &id);
    println!(
        "Web Push service outage of {outage:?}: {} browsers done {took:?} after the ask, {} lost, {} sent twice, {} 503s, attempts at most {:?}",
        browsers.len(),
        browsers.len() - per.len(),
        doubled(&per),
        service.state.down_answers.load(SeqCst),
        spent.iter().max()
    );
    assert_eq!(states.get("failed"), None, "failed for good: {states:?}");
    assert_eq!(per.len(), browsers.len(), "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
    assert!(took >= outage, "accepted during the outage? {took:?}");
    // The probe that finds it back (at most the 8 s step after the 12 s)
    // releases every held push at once: not one more step (16 s) for the
    // pushes held while it was out.
    assert!(
        took < outage + Duration::from_secs(12),
        "held pushes not released when the probe answered: {took:?}"
    );
    let extra: u32 = spent.iter().map(|a| a - 1).sum();
    assert!(extra < 3, "attempts spent on the outage: {spent:?}");
    let outages = r#"qp_push_gateway_outages_total{gateway="web_push"}"#;
    assert!(metric(&f, outages).await >= 1.0, "{outages}");
    let held = r#"qp_push_outcomes_total{gateway="web_push",outcome="deferred",reason="outage"}"#;
    assert!(metric(&f, held).await >= 1.0, "{held}");
    let open = r#"qp_push_gateway_outage{gateway="web_push"}"#;
    assert_eq!(metric(&f, open).await, 0.0, "{open} after it answered");
}

/// During a 1,000-device fan-out APNs refuses a tenth of the
/// pushes with `429 TooManyProviderTokenUpdates` and a tenth with `403
/// ExpiredProviderToken`: each is retried (the device kept, nothing failed
/// for good), every push accepted once, each shown in `/metrics`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_token_trouble_mid_fan_out_loses_and_doubles_nothing() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 500, 2, 0);
    for (i, t) in tokens.iter().enumerate() {
        match i % 10 {
            0 => apns
                .state
                .script(t, vec![(429, "TooManyProviderTokenUpdates", None)]),
            5 => apns
                .state
                .script(t, vec![(403, "ExpiredProviderToken", None)]),
            _ => {}
        }
    }
    let t0 = Instant::now();
    let id = room_question(&f).await;
    until("every push recorded sent", Duration::from_secs(120), || {
        sent(&f.db(), &id) == tokens.len()
    })
    .await;
    let took = t0.elapsed();
    let per = accepted_per_device(Some(&apns), None, &id);
    println!(
        "provider token trouble: {} devices in {took:?}, {} lost, {} sent twice",
        tokens.len(),
        tokens.len() - per.len(),
        doubled(&per)
    );
    assert_eq!(per.len(), tokens.len(), "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
    // Where docs/operators/push.md says each shows.
    let throttled =
        r#"qp_push_gateway_errors_total{gateway="apns",reason="TooManyProviderTokenUpdates"}"#;
    assert!(metric(&f, throttled).await >= 1.0, "{throttled}");
    let refused = r#"qp_push_auth_failures_total{gateway="apns"}"#;
    assert!(metric(&f, refused).await >= 1.0, "{refused}");
    // A credential refusal is a gateway error too, by its reason.
    let expired = r#"qp_push_gateway_errors_total{gateway="apns",reason="ExpiredProviderToken"}"#;
    assert!(metric(&f, expired).await >= 1.0, "{expired}");
}

/// APNs refuses a new provider token signed within 20 minutes of the last
/// one it took (`429 TooManyProviderTokenUpdates`; the stand-in enforces
/// it on each connection: one here). Here the token is reused for 1 s
/// only, so the second question's pushes carry a new one: APNs refuses
/// it, the worker goes back to the token before it (still valid) and
/// sends them again at once, spending no attempt, and signs no other
/// token during the hold: a third question, past the 1 s again, goes out
/// with the first token too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_token_refreshed_too_soon_gives_way_to_the_previous_one() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let ttl = Duration::from_secs(1);
    let f = common::Fixture::with(|s| {
        s.apns = Some(qp_server::push::apns::ApnsConfig {
            token_ttl: ttl,
            ..apns_config(&apns.url, 1)
        })
    })
    .await;
    let tokens = seed_devices(&f, 20, 1, 0);
    let mut ids = Vec::new();
    for round in 0..3 {
        if round > 0 {
            // Past the token's reuse: the worker would sign a new one.
            tokio::time::sleep(ttl + Duration::from_millis(200)).await;
        }
        let t0 = Instant::now();
        let id = room_question(&f).await;
        until("every push recorded sent", Duration::from_secs(30), || {
            sent(&f.db(), &id) == tokens.len()
        })
        .await;
        println!(
            "round {round}: {} devices sent in {:?}, {} requests refused as a token refresh too soon",
            tokens.len(),
            t0.elapsed(),
            apns.state.token_updates_refused.load(SeqCst)
        );
        ids.push(id);
    }
    // The rule was met, by one new token only: no other was signed.
    assert!(apns.state.token_updates_refused.load(SeqCst) >= 1);
    assert_eq!(apns.state.tokens_refused_too_soon.lock().unwrap().len(), 1);
    assert_eq!(apns.state.tokens_taken(), 1, "a second token taken");
    assert_eq!(apns.state.connections.load(SeqCst), 1);
    for id in &ids {
        let per = accepted_per_device(Some(&apns), None, id);
        assert_eq!(per.len(), tokens.len(), "lost");
        assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
        // The refusal spent no attempt: one each, the acceptance.
        let spent = attempts(&f.db(), id);
        assert!(spent.iter().all(|a| *a == 1), "{spent:?}");
    }
    let refused =
        r#"qp_push_gateway_errors_total{gateway="apns",reason="TooManyProviderTokenUpdates"}"#;
    assert!(metric(&f, refused).await >= 1.0, "{refused}");
    // Neither a credential refusal nor an outage: APNs works, and so
    // does the token before.
    let auth = r#"qp_push_auth_failures_total{gateway="apns"}"#;
    assert_eq!(metric(&f, auth).await, 0.0, "{auth}");
    let outages = r#"qp_push_gateway_outages_total{gateway="apns"}"#;
    assert_eq!(metric(&f, outages).await, 0.0, "{outages}");
}

/// The database refuses the batch of outcomes (SQLite locked by
/// another writer for 1.5 s, past an outcome write's 0.5 s lock wait, so
/// the first try fails) after APNs accepted the pushes: the batch is
/// written again once the lock goes, every push recorded sent with one
/// attempt, none sent twice. (Before, the outcomes were dropped and every
/// push went again when its 60 s lease ended.) SQLite only here: the
/// PostgreSQL bound (`lock_timeout`) is set by the same code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_outcome_write_is_tried_again_not_dropped() {
    let apns = gateways::apns(Duration::from_millis(500), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let qp_server::store::Database::Sqlite(path) = f.database.clone() else {
        return;
    };
    let tokens = seed_devices(&f, 100, 2, 0);
    let id = room_question(&f).await;
    until("the pushes at APNs", Duration::from_secs(30), || {
        apns.state.open_streams() >= tokens.len()
    })
    .await;
    // Another writer holds the database past an outcome write's wait
    // (0.5 s: the first try fails), within one write's budget (tries at
    // 0, 1 and 2.5 s: the second or the third gets through).
    let lock = rusqlite::Connection::open(&path).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    lock.execute_batch("COMMIT").unwrap();
    until("every push recorded sent", Duration::from_secs(20), || {
        sent(&f.db(), &id) == tokens.len()
    })
    .await;
    let spent = attempts(&f.db(), &id);
    assert!(spent.iter().all(|a| *a == 1), "{spent:?}");
    let per = accepted_per_device(Some(&apns), None, &id);
    assert_eq!(per.len(), tokens.len(), "lost");
    assert_eq!(doubled(&per), 0, "sent twice");
    let write_failed =
        r#"qp_push_outcomes_unrecorded_total{gateway="apns",outcome="sent",why="write_failed"}"#;
    assert_eq!(metric(&f, write_failed).await, 0.0);
}

/// `qp serve` killed (-9) in the middle of a 1,000-device
/// fan-out, then started again on the same database: every push accepted,
/// none lost; pushes accepted twice only among those the killed server had
/// not recorded sent when it died (none it had recorded goes again), under
/// the same collapse id, and each counted by the restarted server
/// (`qp_push_resent_maybe_delivered_total{cause="lease_ran_out"}`: it
/// claimed a job whose earlier claim ended without an outcome).
/// The lease is 2 s here (`--push-lease-ms`), so the claimed jobs of the
/// killed server are due again within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_fan_out_and_restarted_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::test_database(dir.path());
    let (agent, seeded) = fanout::seed_ops_room_on(&db, 500, 2, 0);
    // Answers after 300 ms: hundreds in flight when the kill comes.
    let apns = gateways::apns(Duration::from_millis(300), 500).await;
    let fcm = gateways::fcm(Duration::from_millis(5)).await;
    let lease = ["--push-lease-ms", "2000"];
    let mut first = fanout::instance(&db, dir.path(), &apns.url, &fcm.url, &lease);
    let http = reqwest::Client::new();
    let id = fanout::room_question_at(&http, &first.base, &agent, "Deploy?").await;
    until("some pushes accepted", Duration::from_secs(60), || {
        accepted_per_device(Some(&apns), None, &id).len() >= 200
    })
    .await;
    first.kill();
    let killed_at = Instant::now();
    let before = accepted_per_device(Some(&apns), None, &id).len();
    // What the killed server had recorded sent: the restart must not send
    // these again; only the others (claimed, maybe written, not recorded)
    // may go twice.
    let conn = common::connect(&db);
    let recorded_at_kill = sent_tokens(&*conn, &id);
    let second = fanout::instance(&db, dir.path(), &apns.url, &fcm.url, &lease);
    until("every push recorded sent", Duration::from_secs(120), || {
        sent(&conn, &id) == seeded.ios.len()
    })
    .await;
    let recovered = killed_at.elapsed();
    // A moment for a push the killed server had written to be accepted.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per = accepted_per_device(Some(&apns), None, &id);
    let twice = doubled(&per);
    let text = http
        .get(format!("{}/metrics", second.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let counted = fanout::metric_in(&text, &resent("lease_ran_out"));
    println!(
        "kill -9 mid fan-out: {before} accepted before the kill, {} recorded sent, every push recorded {recovered:?} after it (restart and lease included), {} lost, {twice} sent twice, {counted} counted as maybe delivered (lease_ran_out)",
        recorded_at_kill.len(),
        seeded.ios.len() - per.len()
    );
    assert_eq!(per.len(), seeded.ios.len(), "lost");
    // Whatever the stand-in accepted for these devices carried the
    // question's collapse id.
    let accepted = apns.state.accepted.lock().unwrap().len();
    assert_eq!(accepted, per.values().sum::<usize>(), "another collapse id");
    assert!(per.values().all(|n| *n <= 2), "{per:?}");
    let resent_recorded: Vec<&String> = per
        .iter()
        .filter(|(t, n)| **n > 1 && recorded_at_kill.contains(*t))
        .map(|(t, _)| t)
        .collect();
    assert!(
        resent_recorded.is_empty(),
        "{} pushes recorded sent before the kill went again: {resent_recorded:?}",
        resent_recorded.len()
    );
    let unrecorded = seeded.ios.len() - recorded_at_kill.len();
    assert!(
        twice <= unrecorded,
        "{twice} sent twice: more than the {unrecorded} the killed server had not recorded"
    );
    // Every push sent twice is counted, by the server that took it over;
    // only pushes the killed server had claimed and not recorded are.
    assert!(
        twice as f64 <= counted,
        "{twice} sent twice, {counted} counted"
    );
    assert!(counted >= 1.0, "nothing counted after kill -9");
    assert!(
        counted <= unrecorded as f64,
        "{counted} counted: more than the {unrecorded} the killed server had not recorded"
    );
}

/// The device tokens whose push of question `id` is recorded sent.
fn sent_tokens(conn: &qp_server::store::Conn, id: &str) -> std::collections::HashSet<String> {
    conn.query_map(
        "SELECT d.push_token FROM push_jobs p JOIN devices d ON d.id = p.device_id \
         WHERE p.question_id = ?1 AND p.state = 'sent'",
        qp_server::params![id],
        |r| r.get(0),
    )
    .unwrap()
    .into_iter()
    .collect()
}

/// Two instances on PostgreSQL share the queue; one (A) is
/// stalled past its lease (2 s here), the other (B) takes its jobs over
/// and sends them; A then wakes up.
///
/// 1. A stalled (SIGSTOP) with pushes in flight that its APNs never
///    answers: no push is lost, and A, woken, does not undo what B
///    recorded: each device's push accepted once, by B.
/// 2. A's APNs accepts its pushes, but A stalls before recording them
///    (its database calls held, then SIGSTOP) past its lease: B sends
///    them too, and A, woken while B's sends are in flight, records what
///    its gateway accepted (the jobs are still queued, under B's claim).
///    Whatever the order: every push recorded sent once
///    (`qp_push_outcomes_total` of both instances adds up to the
///    devices, each answer recorded or counted unrecorded), and every push
///    accepted twice counted as maybe delivered (`taken_over`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn an_instance_stalled_past_its_lease_is_taken_over_on_postgres() {
    common::require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let db = common::test_database(dir.path());
    let (agent, seeded) = fanout::seed_ops_room_on(&db, 250, 2, 0);
    // A's APNs never answers within the test; B's at once.
    let apns_a = gateways::apns(Duration::from_secs(60), 500).await;
    let apns_b = gateways::apns(Duration::from_millis(5), 500).await;
    let (fcm_a, fcm_b) = (
        gateways::fcm(Duration::ZERO).await,
        gateways::fcm(Duration::ZERO).await,
    );
    let lease = ["--push-lease-ms", "2000"];
    // A reaches PostgreSQL through a relay the test can hold.
    let qp_server::store::Database::Postgres(url) = &db else {
        unreachable!()
    };
    let relay = DbRelay::start(url).await;
    let db_a = qp_server::store::Database::Postgres(relay.url.clone());
    let a = fanout::instance(&db_a, dir.path(), &apns_a.url, &fcm_a.url, &lease);
    let b = fanout::instance(&db, dir.path(), &apns_b.url, &fcm_b.url, &lease);
    let http = reqwest::Client::new();
    let ask = |prompt: &'static str| {
        let (http, base, agent) = (&http, &a.base, &agent);
        async move { fanout::room_question_at(http, base, agent, prompt).await }
    };
    let id = ask("Deploy?").await;
    until("A has pushes in flight", Duration::from_secs(30), || {
        apns_a.state.peak_total.load(SeqCst) >= 50
    })
    .await;
    a.signal("STOP");
    let stalled_at = Instant::now();
    let conn = common::connect(&db);
    until("B sent every push", Duration::from_secs(60), || {
        sent(&conn, &id) == seeded.ios.len()
    })
    .await;
    let taken_over = stalled_at.elapsed();
    // Past its lease by then; woken, A finds its sends cut off.
    a.signal("CONT");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let per_b = accepted_per_device(Some(&apns_b), None, &id);
    println!(
        "stalled instance: B took over and recorded every push {taken_over:?} after the stall; B sent {} ({} twice)",
        per_b.len(),
        doubled(&per_b)
    );
    assert_eq!(sent(&conn, &id), seeded.ios.len(), "A undid B's record");
    assert_eq!(per_b.len(), seeded.ios.len(), "lost");
    assert!(per_b.values().all(|n| *n == 1), "sent twice by B");

    // 2. A's APNs answers after 300 ms (well inside A's cut-off), B's
    // after a second: B's sends are still in flight when A wakes.
    apns_a.state.set_delay(Duration::from_millis(300));
    apns_b.state.set_delay(Duration::from_millis(1000));
    let before = [
        counters(&http, &a.base).await,
        counters(&http, &b.base).await,
    ];
    let asked_ms = chrono::Utc::now().timestamp_millis();
    let id = ask("Roll back?").await;
    until("A's pushes at its APNs", Duration::from_secs(30), || {
        apns_a.state.open_streams() >= 250
    })
    .await;
    // A's answers arrive 300 ms later; its record of them waits on the
    // database, then A stops.
    relay.hold(true);
    tokio::time::sleep(Duration::from_millis(800)).await;
    a.signal("STOP");
    let by_a = accepted_per_device(Some(&apns_a), None, &id);
    // Claimed again once A's lease (2 s from the ask) ran out.
    let reclaimed = || -> i64 {
        conn.query_row(
            "SELECT COUNT(*) FROM push_jobs WHERE question_id = ?1 AND state = 'queued' \
             AND next_attempt_ms > ?2",
            qp_server::params![id, asked_ms + 3000],
            |r| r.get(0),
        )
        .unwrap()
    };
    until("B took A's jobs over", Duration::from_secs(30), || {
        reclaimed() > 0 && apns_b.state.open_streams() > 0
    })
    .await;
    relay.hold(false);
    a.signal("CONT");
    until("every push recorded sent", Duration::from_secs(60), || {
        sent(&conn, &id) == seeded.ios.len()
    })
    .await;
    // B's answers, a second after its sends, and their record.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = [
        counters(&http, &a.base).await,
        counters(&http, &b.base).await,
    ];
    let d = |i: usize, k: usize| after[i][k] - before[i][k];
    let per = {
        let mut per = accepted_per_device(Some(&apns_a), None, &id);
        for (t, n) in accepted_per_device(Some(&apns_b), None, &id) {
            *per.entry(t).or_insert(0) += n;
        }
        per
    };
    let twice = doubled(&per);
    let (recorded, counted_twice) = (d(0, 0) + d(1, 0), d(0, 2) + d(1, 2));
    println!(
        "stalled after its gateway accepted: A's APNs accepted {}, then B sent {}; {} lost, {twice} sent twice, {counted_twice} counted as maybe delivered; recorded sent by A {}, by B {}; unrecorded (sent) A {}, B {}",
        by_a.len(),
        accepted_per_device(Some(&apns_b), None, &id).len(),
        seeded.ios.len() - per.len(),
        d(0, 0),
        d(1, 0),
        d(0, 1),
        d(1, 1),
    );
    assert_eq!(per.len(), seeded.ios.len(), "lost");
    assert!(
        twice >= 1,
        "the scenario did not happen: B sent none of A's accepted pushes"
    );
    assert_eq!(
        recorded,
        seeded.ios.len() as f64,
        "qp_push_outcomes_total sent over both instances"
    );
    assert!(
        twice as f64 <= counted_twice,
        "{twice} sent twice, {counted_twice} counted"
    );
    // Every answer A had is recorded or counted unrecorded.
    assert_eq!(d(0, 0) + d(0, 1), by_a.len() as f64, "A's answers");
    drop(b);
}

/// An instance's push counters: outcomes recorded sent, sent outcomes not
/// recorded (any why), pushes counted as maybe delivered twice (any cause).
async fn counters(http: &reqwest::Client, base: &str) -> [f64; 3] {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let m = |series: &str| fanout::metric_in(&text, series);
    let sent = m(r#"qp_push_outcomes_total{gateway="apns",outcome="sent",reason="ok"}"#);
    let unrecorded = ["claim_lost", "write_failed"]
        .iter()
        .map(|why| {
            m(&format!(
                r#"qp_push_outcomes_unrecorded_total{{gateway="apns",outcome="sent",why="{why}"}}"#
            ))
        })
        .sum();
    let twice = [
        "dead_connection",
        "connection_lost",
        "timeout",
        "taken_over",
        "unrecorded",
    ]
    .iter()
    .map(|cause| m(&resent(cause)))
    .sum();
    [sent, unrecorded, twice]
}

/// A TCP relay between an instance and PostgreSQL that the test can hold:
/// while held, nothing goes either way (the instance's database calls
/// wait, as on a stalled network), and nothing is lost.
struct DbRelay {
    /// The database's URL through the relay.
    url: String,
    held: tokio::sync::watch::Sender<bool>,
}

impl DbRelay {
    async fn start(url: &str) -> DbRelay {
        // postgres://user@host:port/name
        let (head, rest) = url.split_once('@').unwrap();
        let (authority, path) = rest.split_once('/').unwrap();
        let target = authority.to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (held, watch) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = tokio::net::TcpStream::connect(&target).await.unwrap();
                let (c_rd, c_wr) = client.into_split();
                let (s_rd, s_wr) = server.into_split();
                tokio::spawn(relay(c_rd, s_wr, watch.clone()));
                tokio::spawn(relay(s_rd, c_wr, watch.clone()));
            }
        });
        DbRelay {
            url: format!("{head}@127.0.0.1:{port}/{path}"),
            held,
        }
    }

    fn hold(&self, on: bool) {
        self.held.send_replace(on);
    }
}

async fn relay(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut held: tokio::sync::watch::Receiver<bool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if held.wait_for(|h| !*h).await.is_err() {
            break;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// FCM faults in a 400-device fan-out: the whole service throttled and
/// down for 2 s (`429 QUOTA_EXCEEDED` with and without Retry-After, `503
/// UNAVAILABLE`, in turn, whatever the device, as FCM's project quota and
/// outages come): every message retried until accepted, none lost, none
/// sent twice. (Scripted per device, a second fault after the service
/// answered again made each outage probe that met it lengthen the next
/// step, and the test took anywhere from 10 to over 60 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fcm_throttling_and_unavailability_mid_fan_out_lose_and_double_nothing() {
    let fcm = gateways::fcm(Duration::from_millis(5)).await;
    let f = common::Fixture::with(|s| s.fcm = Some(fanout::fcm_config(&fcm.url))).await;
    let seeded = fanout::seed_room(&f.db(), &f.room_id, 200, 0, 2);
    let quota = |retry: Option<u64>| {
        let mut v = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{
            "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
            "errorCode": "QUOTA_EXCEEDED"}]}});
        if let Some(s) = retry {
            v["retry_after_s"] = json!(s);
        }
        (429, v)
    };
    let unavailable = (
        503,
        json!({"error": {"code": 503, "status": "UNAVAILABLE"}}),
    );
    let storm = Duration::from_secs(2);
    fcm.state
        .storm(storm, vec![quota(Some(1)), quota(Some(2)), unavailable]);
    let t0 = Instant::now();
    let id = room_question(&f).await;
    // Held through the outage, released by the first probe after the
    // storm; the storm's first faults (before 3 in a row opened the
    // outage) wait their Retry-After or Google's first backoff step (10 s
    // for the 503, ±25%); the no-Retry-After quota wait (60 s) is
    // `fcm::retry_wait`'s unit test's. 12-13 s here.
    until(
        "every message recorded sent",
        Duration::from_secs(60),
        || sent(&f.db(), &id) == seeded.android.len(),
    )
    .await;
    let took = t0.elapsed();
    let per = accepted_per_device(None, Some(&fcm), &id);
    println!(
        "FCM storm of {storm:?}: {} devices in {took:?}, {} lost, {} sent twice",
        seeded.android.len(),
        seeded.android.len() - per.len(),
        doubled(&per)
    );
    assert!(took >= storm, "accepted during the storm? {took:?}");
    assert_eq!(per.len(), seeded.android.len(), "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
    for reason in ["QUOTA_EXCEEDED", "UNAVAILABLE"] {
        let series = format!(r#"qp_push_gateway_errors_total{{gateway="fcm",reason="{reason}"}}"#);
        assert!(metric(&f, &series).await >= 1.0, "{series}");
    }
    let outages = r#"qp_push_gateway_outages_total{gateway="fcm"}"#;
    assert!(metric(&f, outages).await >= 1.0, "{outages}");
}

/// The push job of question `id` to the device of push token `token`:
/// state, attempts, sends without an answer, when it is due next, the
/// error kept.
fn job_of(f: &common::Fixture, id: &str, token: &str) -> (String, i64, i64, i64, Option<String>) {
    f.db()
        .query_row(
            "SELECT j.state, j.attempts, j.unanswered, j.next_attempt_ms, j.last_error \
             FROM push_jobs j JOIN devices d ON d.id = j.device_id \
             WHERE j.question_id = ?1 AND d.push_token = ?2 AND j.kind = 'question'",
            qp_server::params![id, token],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap()
}

/// An FCM message written and never answered may have been delivered:
/// it goes again under the same `android.collapse_key` (the question's
/// id: the phone shows one notification), at most `NO_ANSWER_RESENDS` (3)
/// times. Against the FCM stand-in, with a 2 s lease (its cut-off, 1.5 s
/// after the claim, ends each unanswered send): a device never answered
/// is sent 4 times in all, each under the question's collapse key, then
/// failed, saying FCM may have it; one left unanswered once is accepted
/// on its second send, under the same key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_fcm_message_unanswered_goes_again_under_its_collapse_key_at_most_three_times() {
    let fcm = gateways::fcm(Duration::from_millis(5)).await;
    let f = common::Fixture::with(|s| {
        s.fcm = Some(fanout::fcm_config(&fcm.url));
        s.push_lease = Duration::from_secs(4);
    })
    .await;
    let tokens = fanout::seed_room(&f.db(), &f.room_id, 4, 0, 1).android;
    let (never, once) = (&tokens[0], &tokens[1]);
    fcm.state.hang_next(never, usize::MAX);
    fcm.state.hang_next(once, 1);
    let started = Instant::now();
    let id = room_question(&f).await;
    until("every push recorded", Duration::from_secs(90), || {
        let by = fanout::states(&f, &id);
        by.get("sent") == Some(&(tokens.len() - 1)) && by.get("failed") == Some(&1)
    })
    .await;
    let settled = started.elapsed();
    let seen = fcm.state.seen.lock().unwrap().clone();
    let of = |t: &String| collapse_ids_of(&seen, t);
    assert_eq!(
        of(never),
        vec![id.clone(); 4],
        "sent once, re-sent 3 times, under the question's collapse key"
    );
    assert_eq!(of(once), vec![id.clone(); 2]);
    let per = accepted_per_device(None, Some(&fcm), &id);
    assert_eq!(per.len(), tokens.len() - 1, "lost");
    assert!(per.values().all(|n| *n == 1), "doubled: {per:?}");
    assert!(!per.contains_key(never.as_str()));
    let (state, attempts, unanswered, _, error) = job_of(&f, &id, never);
    let error = error.unwrap_or_default();
    assert_eq!(
        (state.as_str(), attempts, unanswered),
        ("failed", 4, 4),
        "{error}"
    );
    assert!(error.contains("may have it"), "{error}");
    let (state, attempts, unanswered, _, error) = job_of(&f, &id, once);
    assert_eq!(
        (state.as_str(), attempts, unanswered),
        ("sent", 2, 1),
        "{error:?}"
    );
    println!(
        "FCM message never answered: settled in {settled:?}; 0 lost; the never-answered device sent 4 times under one collapse key, then failed; the unanswered-once device accepted on its 2nd send, same key"
    );
}

/// A gateway's `Retry-After` is honoured up to 10 minutes
/// (`RETRY_AFTER_MAX`) and never past the question's expiry: APNs `429
/// TooManyRequests` and FCM `429 QUOTA_EXCEEDED` with Retry-After 120 s
/// for a question with 60 s to live fail the push at once (one attempt,
/// not held to a retry no one could answer); with Retry-After 3600 s for
/// a question with an hour to live, the retry is due 10 minutes after the
/// answer, not an hour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_is_held_at_most_ten_minutes_and_never_past_the_questions_expiry() {
    let apns = gateways::apns(Duration::from_millis(5), 500).await;
    let fcm = gateways::fcm(Duration::from_millis(5)).await;
    let f = common::Fixture::with(|s| {
        s.apns = Some(apns_config(&apns.url, 2));
        s.fcm = Some(fanout::fcm_config(&fcm.url));
    })
    .await;
    let seeded = fanout::seed_room(&f.db(), &f.room_id, 1, 1, 1);
    let (ios, android) = (&seeded.ios[0], &seeded.android[0]);
    let throttle = |retry_after: u64| {
        apns.state
            .script(ios, vec![(429, "TooManyRequests", Some(retry_after))]);
        let quota = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{
            "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
            "errorCode": "QUOTA_EXCEEDED"}]}, "retry_after_s": retry_after});
        fcm.state
            .script
            .lock()
            .unwrap()
            .insert(android.clone(), vec![(429, quota)].into());
    };
    // 1. Retry-After longer than the question's remaining life.
    throttle(120);
    let asked = Instant::now();
    let q = f
        .ask(json!({"prompt": "Deploy?", "responder_scope": "room", "ttl": 60}))
        .await;
    let short = q["id"].as_str().unwrap().to_string();
    until("both pushes failed", Duration::from_secs(30), || {
        [ios, android]
            .iter()
            .all(|t| job_of(&f, &short, t).0 == "failed")
    })
    .await;
    let failed_in = asked.elapsed();
    for t in [ios, android] {
        let (_, attempts, _, _, error) = job_of(&f, &short, t);
        let error = error.unwrap_or_default();
        assert_eq!(attempts, 1, "{error}");
        assert!(error.contains("past the push's deadline"), "{error}");
    }
    // Counted as what they are now: failed, not retried.
    for gw in ["apns", "fcm"] {
        let failed = format!(
            r#"qp_push_outcomes_total{{gateway="{gw}",outcome="failed",reason="rate_limited"}}"#
        );
        let retried = format!(
            r#"qp_push_outcomes_total{{gateway="{gw}",outcome="retry",reason="rate_limited"}}"#
        );
        // Counted just after the write the loop above saw.
        let mut counted = metric(&f, &failed).await;
        for _ in 0..20 {
            if counted > 0.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            counted = metric(&f, &failed).await;
        }
        assert_eq!(counted, 1.0, "{failed}");
        assert_eq!(metric(&f, &retried).await, 0.0, "{retried}");
    }
    // 2. Retry-After past the cap, for a question with an hour to live.
    throttle(3600);
    let before_ms = chrono::Utc::now().timestamp_millis();
    let q = f
        .ask(json!({"prompt": "Roll back?", "responder_scope": "room", "ttl": 3600}))
        .await;
    let long = q["id"].as_str().unwrap().to_string();
    until("both pushes throttled", Duration::from_secs(30), || {
        [ios, android].iter().all(|t| job_of(&f, &long, t).1 == 1)
    })
    .await;
    let after_ms = chrono::Utc::now().timestamp_millis();
    let cap_ms = qp_server::push::RETRY_AFTER_MAX.as_millis() as i64;
    assert_eq!(cap_ms, 600_000);
    let mut held = Vec::new();
    for t in [ios, android] {
        let (state, _, _, next_ms, error) = job_of(&f, &long, t);
        assert_eq!(state, "queued", "{error:?}");
        assert!(
            next_ms <= after_ms + cap_ms,
            "held {} s: past the 10-minute cap",
            (next_ms - before_ms) / 1000
        );
        assert!(
            next_ms >= before_ms + cap_ms,
            "held {} s: the Retry-After not honoured",
            (next_ms - before_ms) / 1000
        );
        held.push(next_ms - before_ms);
    }
    println!(
        "Retry-After: 120 s for a question with 60 s to live: APNs and FCM pushes failed {failed_in:?} after the ask, 1 attempt each; 3600 s: due again {held:?} ms after the ask (cap {cap_ms} ms)"
    );
}

/// A push whose claim's cut-off comes before its request is written goes
/// back to the queue at once, spending no attempt (nothing reached the
/// gateway). APNs here is slow to accept connections (its accept queue
/// full: the connect hangs) and the lease is 4 s, so every claim is cut
/// off at 3 s while connecting: for as long as that lasts every push stays
/// queued with 0 attempts, none counted unanswered. Once APNs accepts
/// connections each is accepted, every attempt spent by a send that
/// reached it: one, plus one for each send written and cut off before its
/// answer (a connect that completed just before a cut-off; rare).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_cut_off_before_it_is_written_goes_back_without_spending_an_attempt() {
    let (apns, release) = gateways::apns_slow_to_accept(Duration::from_millis(5), 500).await;
    let f = common::Fixture::with(|s| {
        s.apns = Some(apns_config(&apns.url, 1));
        s.push_lease = Duration::from_secs(4);
    })
    .await;
    let tokens = seed_devices(&f, 5, 1, 0);
    let id = room_question(&f).await;
    let cut_off = |t: &String| {
        let (_, _, _, _, error) = job_of(&f, &id, t);
        error.as_deref() == Some(qp_server::push::CUT_OFF_NOT_SENT)
    };
    until("every push cut off", Duration::from_secs(30), || {
        tokens.iter().all(cut_off)
    })
    .await;
    // More cut-offs (one per 3 s claim) while it stays unreachable.
    tokio::time::sleep(Duration::from_secs(7)).await;
    for t in &tokens {
        let (state, attempts, unanswered, _, error) = job_of(&f, &id, t);
        assert_eq!(
            (state.as_str(), attempts, unanswered),
            ("queued", 0, 0),
            "{error:?}"
        );
    }
    assert_eq!(apns.state.accepted_count(), 0);
    let released_at = Instant::now();
    release.send(()).unwrap();
    until("every push recorded sent", Duration::from_secs(30), || {
        sent(&f.db(), &id) == tokens.len()
    })
    .await;
    let took = released_at.elapsed();
    let per = accepted_per_device(Some(&apns), None, &id);
    assert_eq!(per.len(), tokens.len(), "lost");
    let mut written_unanswered = 0;
    for t in &tokens {
        let (state, attempts, unanswered, _, error) = job_of(&f, &id, t);
        assert_eq!(state, "sent", "{error:?}");
        assert_eq!(
            attempts,
            1 + unanswered,
            "an attempt spent unsent: {error:?}"
        );
        assert!(per[t.as_str()] as i64 <= 1 + unanswered, "{per:?}");
        written_unanswered += unanswered;
    }
    println!(
        "cut off before written: {} pushes held with 0 attempts through 7 s of 3 s cut-offs; all sent {took:?} after APNs accepted connections; attempts {:?}, {written_unanswered} written and cut off after the release, {} doubled",
        tokens.len(),
        attempts(&f.db(), &id),
        doubled(&per)
    );
}

/// The collapse ids (APNs) or keys (FCM) a stand-in saw for `token`, in
/// the order the sends came, from its `(token, collapse id)` record.
fn collapse_ids_of(seen: &[(String, String)], token: &str) -> Vec<String> {
    seen.iter()
        .filter(|(t, _)| t == token)
        .map(|(_, c)| c.clone())
        .collect()
}

/// FCM's `400 INVALID_ARGUMENT` whose `BadRequest` detail names the field
/// `message.token` says the registration token itself is malformed: that
/// device is removed, its push not retried; another device's
/// `INVALID_ARGUMENT` (about some other field) fails its push alone and
/// keeps the device; the rest are accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_fcm_token_refused_as_malformed_removes_its_device() {
    let fcm = gateways::fcm(Duration::from_millis(5)).await;
    let f = common::Fixture::with(|s| s.fcm = Some(fanout::fcm_config(&fcm.url))).await;
    let tokens = fanout::seed_room(&f.db(), &f.room_id, 4, 0, 1).android;
    let (malformed, other_field) = (&tokens[0], &tokens[1]);
    let invalid = |field: &str| {
        (
            400,
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": "The registration token is not a valid FCM registration token",
                "details": [
                    {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                     "errorCode": "INVALID_ARGUMENT"},
                    {"@type": "type.googleapis.com/google.rpc.BadRequest",
                     "fieldViolations": [{"field": field, "description": "Invalid"}]}]}}),
        )
    };
    {
        let mut script = fcm.state.script.lock().unwrap();
        script.insert(malformed.clone(), vec![invalid("message.token")].into());
        script.insert(
            other_field.clone(),
            vec![invalid("message.android.ttl")].into(),
        );
    }
    let id = room_question(&f).await;
    until(
        "the other devices' pushes sent",
        Duration::from_secs(30),
        || sent(&f.db(), &id) == tokens.len() - 2,
    )
    .await;
    let devices_with = |token: &str| -> i64 {
        f.db()
            .query_row(
                "SELECT COUNT(*) FROM devices WHERE push_token = ?1",
                qp_server::params![token],
                |r| r.get(0),
            )
            .unwrap()
    };
    until(
        "the malformed token's device removed",
        Duration::from_secs(30),
        || devices_with(malformed) == 0,
    )
    .await;
    until(
        "the other field's push failed",
        Duration::from_secs(30),
        || job_of(&f, &id, other_field).0 == "failed",
    )
    .await;
    assert_eq!(
        devices_with(other_field),
        1,
        "a request fault removed its device"
    );
    let (_, attempts, ..) = job_of(&f, &id, other_field);
    assert_eq!(attempts, 1, "a request fault was retried");
    let per = accepted_per_device(None, Some(&fcm), &id);
    assert!(!per.contains_key(malformed.as_str()));
    assert_eq!(per.len(), tokens.len() - 2);
    for (reason, n) in [
        ("INVALID_ARGUMENT:message.token", 1.0),
        ("INVALID_ARGUMENT", 1.0),
    ] {
        let series = format!(r#"qp_push_gateway_errors_total{{gateway="fcm",reason="{reason}"}}"#);
        assert_eq!(metric(&f, &series).await, n, "{series}");
    }
}
