//! Concurrent push delivery, through the real server and worker, against
//! the stand-in gateways of `support/gateways.rs` over real HTTP/2 on
//! loopback: many pushes in flight on one APNs connection, the stream
//! limit dropping to 1 after a rejection, GOAWAY in the middle of a
//! fan-out, Retry-After for one device, a hanging device, and per-device
//! order of question and resolution under retries. Time bounds here are
//! generous (they catch one-at-a-time sending, not a goal: the goals are
//! in `scripts/bench-push`).

mod common;
#[path = "../../server/tests/support/fanout.rs"]
mod fanout;
#[path = "../../server/tests/support/gateways.rs"]
mod gateways;
#[path = "../../server/tests/support/webpush.rs"]
mod webpush_standin;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use qp_core::payload::{decode_apns, Push};
use qp_server::store::deliveries::push_jobs_of;

use fanout::{apns_config, fcm_config, room_question, seed_devices, states, until};

/// The gateways' private keys are held as secrets: a settings dump (a log
/// line, a panic, a failed assertion) shows neither.
#[test]
fn a_dump_of_the_gateway_settings_shows_no_private_key() {
    let dump = format!(
        "{:?} {:?}",
        apns_config("https://127.0.0.1:1", 1),
        fcm_config("https://127.0.0.1:1")
    );
    assert!(!dump.contains("PRIVATE KEY"), "{dump}");
    assert!(dump.contains("key_pem: Secret(…)"), "{dump}");
    assert!(dump.contains("private_key: Secret(…)"), "{dump}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_pushes_in_flight_on_one_apns_connection() {
    // 400 iPhones, APNs answering each after 300 ms, one connection
    // allowed: one at a time this takes 120 s.
    let apns = gateways::apns(Duration::from_millis(300), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 1))).await;
    let tokens = seed_devices(&f, 200, 2, 0);
    let t = Instant::now();
    let id = room_question(&f).await;
    until("400 pushes accepted", Duration::from_secs(20), || {
        apns.state.accepted_count() >= tokens.len()
    })
    .await;
    let elapsed = t.elapsed();
    let st = &apns.state;
    assert_eq!(st.connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    let peak = st.peak_streams.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak >= 200, "streams at once on the connection: {peak}");
    assert_eq!(st.violations.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    until("recorded", Duration::from_secs(10), || {
        states(&f, &id).get("sent") == Some(&tokens.len())
    })
    .await;
    // Each device once.
    let mut seen: Vec<String> = st
        .accepted
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.device_token.clone())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), tokens.len());
    // /metrics: the outcomes, the latency histogram, nothing in flight.
    let text = f
        .http
        .get(format!("{}/metrics", f.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        r#"qp_push_outcomes_total{gateway="apns",outcome="sent",reason="ok"} 400"#,
        r#"qp_push_latency_seconds_count{gateway="apns"} 400"#,
        r#"qp_push_in_flight{gateway="apns"} 0"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_limit_drops_to_1_after_a_rejection_and_the_worker_carries_on() {
    use std::sync::atomic::Ordering::SeqCst;
    let apns = gateways::apns(Duration::from_millis(100), 100).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 150, 2, 0);
    // Ten devices are refused once (429, retry at once): each refusal cuts
    // that connection's limit to 1 until the next success.
    for t in tokens.iter().step_by(30) {
        apns.state
            .script(t, vec![(429, "TooManyRequests", Some(0))]);
    }
    let t0 = Instant::now();
    let id = room_question(&f).await;
    until("300 pushes accepted", Duration::from_secs(30), || {
        apns.state.accepted_count() >= tokens.len()
    })
    .await;
    let elapsed = t0.elapsed();
    until("recorded", Duration::from_secs(10), || {
        states(&f, &id).get("sent") == Some(&tokens.len())
    })
    .await;
    let st = &apns.state;
    assert!(st.limit_drops.load(SeqCst) >= 1, "the limit never dropped");
    assert_eq!(st.violations.load(SeqCst), 0, "streams over the limit");
    // One at a time: 30 s; stalled behind the limit of 1: as long.
    assert!(elapsed < Duration::from_secs(12), "{elapsed:?}");
    for job in push_jobs_of(&f.db(), &id).unwrap() {
        assert!(job.attempts <= 2, "{job:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_in_the_middle_of_a_fan_out_every_push_accepted_once() {
    use std::sync::atomic::Ordering::SeqCst;
    let apns = gateways::apns(Duration::from_millis(50), 100).await;
    apns.state.goaway_after(150);
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    // 1,000 iPhones (issue 54's fan-out).
    let tokens = seed_devices(&f, 500, 2, 0);
    let id = room_question(&f).await;
    until("1,000 pushes accepted", Duration::from_secs(60), || {
        apns.state.accepted_count() >= tokens.len()
    })
    .await;
    until("recorded", Duration::from_secs(10), || {
        states(&f, &id).get("sent") == Some(&tokens.len())
    })
    .await;
    // A moment for any duplicate to arrive.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let st = &apns.state;
    assert_eq!(st.goaways.load(SeqCst), 1);
    assert!(st.connections.load(SeqCst) >= 2, "no new connection");
    let mut per: HashMap<String, usize> = HashMap::new();
    for a in st.accepted.lock().unwrap().iter() {
        *per.entry(a.device_token.clone()).or_default() += 1;
    }
    assert_eq!(per.len(), tokens.len(), "every device");
    assert!(per.values().all(|n| *n == 1), "accepted twice: {per:?}");
    assert_eq!(st.violations.load(SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_holds_back_one_device_while_the_others_go_out() {
    let apns = gateways::apns(Duration::from_millis(20), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    // 200 devices: one at a time at 20 ms each, the others would take 4 s.
    let tokens = seed_devices(&f, 100, 2, 0);
    let slow = tokens[7].clone();
    apns.state
        .script(&slow, vec![(429, "TooManyRequests", Some(3))]);
    let t0 = Instant::now();
    let id = room_question(&f).await;
    until("the 199 others accepted", Duration::from_secs(2), || {
        apns.state.accepted_count() >= tokens.len() - 1
    })
    .await;
    let others = t0.elapsed();
    assert!(
        !apns
            .state
            .accepted
            .lock()
            .unwrap()
            .iter()
            .any(|a| a.device_token == slow),
        "the throttled device went early"
    );
    until("the throttled device", Duration::from_secs(10), || {
        apns.state.accepted_count() >= tokens.len()
    })
    .await;
    let last = t0.elapsed();
    assert!(others < Duration::from_millis(2500), "{others:?}");
    assert!(
        last >= Duration::from_secs(3),
        "Retry-After not honoured: {last:?}"
    );
    until("recorded", Duration::from_secs(10), || {
        states(&f, &id).get("sent") == Some(&tokens.len())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hanging_device_never_delays_the_999_others() {
    let apns = gateways::apns(Duration::from_millis(40), 500).await;
    let fcm = gateways::fcm(Duration::from_millis(40)).await;
    let f = common::Fixture::with(|s| {
        s.apns = Some(apns_config(&apns.url, 4));
        s.fcm = Some(fcm_config(&fcm.url));
    })
    .await;
    // 500 people, one iPhone and one Android phone each.
    let tokens = seed_devices(&f, 500, 1, 1);
    apns.state.hang.lock().unwrap().insert(tokens[3].clone());
    let t0 = Instant::now();
    room_question(&f).await;
    until("999 accepted", Duration::from_secs(10), || {
        apns.state.accepted_count() + fcm.state.accepted_count() >= 999
    })
    .await;
    let elapsed = t0.elapsed();
    // One at a time: 40 s, or stuck behind the hanging one for 15 s.
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(
        fcm.state
            .token_requests
            .load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one OAuth token for all"
    );
    assert!(
        fcm.state
            .peak_in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 50
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_device_the_question_push_goes_before_its_resolution_under_retries() {
    let apns = gateways::apns(Duration::from_millis(30), 500).await;
    let f = common::Fixture::with(|s| s.apns = Some(apns_config(&apns.url, 2))).await;
    let tokens = seed_devices(&f, 50, 2, 0);
    // A third of the devices fail their first two attempts (5xx: backoff
    // 0.5 s, then 1 s, and, with that many faults in a row, an outage's
    // holds of 1 s doubling); the question is cancelled at once, so each
    // of those devices has its resolution due long before its question
    // goes.
    for t in tokens.iter().step_by(3) {
        apns.state.script(
            t,
            vec![
                (503, "ServiceUnavailable", None),
                (500, "InternalServerError", None),
            ],
        );
    }
    let id = room_question(&f).await;
    let (s, _) = f.cancel(&id).await;
    assert_eq!(s, 200);
    // A question push still queued when the question is cancelled is not
    // sent (it would show a question no one can answer); its resolution
    // still goes (the phone may have it from an earlier claim), and never
    // before it.
    let resolved = |f: &common::Fixture| {
        push_jobs_of(&f.db(), &id)
            .unwrap()
            .into_iter()
            .filter(|j| j.kind == "resolved" && j.state == "sent")
            .count()
    };
    // How many outage steps the faults make depends on how the answers
    // interleave: about 9 s alone, past 30 s beside the 10,000-device
    // two-instance test on PostgreSQL. The bound is for a hang, not a pace.
    until("the resolution for all", Duration::from_secs(120), || {
        resolved(&f) == tokens.len()
    })
    .await;
    let mut order: HashMap<String, Vec<&'static str>> = HashMap::new();
    for a in apns.state.accepted.lock().unwrap().iter() {
        assert_eq!(a.collapse_id, id);
        let kind = match decode_apns(&a.payload.to_string()).unwrap() {
            Push::Question(_) => "question",
            Push::Resolved(_) => "resolved",
        };
        order.entry(a.device_token.clone()).or_default().push(kind);
    }
    assert_eq!(order.len(), tokens.len());
    for (token, kinds) in &order {
        assert!(
            kinds == &["question", "resolved"] || kinds == &["resolved"],
            "device {token}: {kinds:?}"
        );
    }
    // The devices refused twice were retried after the cancel: their
    // question pushes were not sent.
    for t in tokens.iter().step_by(3) {
        assert_eq!(order[t], ["resolved"], "device {t}");
    }
}

/// Every device that accepted question `id`, with how many times, over
/// both pairs of stand-ins.
fn accepted_per_device(
    pairs: &[(&gateways::ApnsStandIn, &gateways::FcmStandIn)],
    id: &str,
) -> Vec<HashMap<String, usize>> {
    pairs
        .iter()
        .map(|(apns, fcm)| fanout::accepted_per_device(Some(apns), Some(fcm), id))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn two_instances_on_postgres_share_a_10000_device_fan_out() {
    common::require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let db = common::test_database(dir.path());
    // 5,000 people in the room, an iPhone and an Android phone each.
    let (agent, devices) = fanout::seed_ops_room_on(&db, 5000, 1, 1);
    let devices = devices.len();
    // Each instance has its own pair of stand-ins, so each push accepted
    // is known to come from one instance. A second per answer keeps pushes
    // in flight long enough for both to take part (an idle worker on
    // PostgreSQL looks for work every second), and for the kill below to
    // catch some in flight.
    let delay = Duration::from_millis(1000);
    let (apns_a, fcm_a) = (gateways::apns(delay, 500).await, gateways::fcm(delay).await);
    let (apns_b, fcm_b) = (gateways::apns(delay, 500).await, gateways::fcm(delay).await);
    let a = fanout::instance(&db, dir.path(), &apns_a.url, &fcm_a.url, &[]);
    let mut b = fanout::instance(&db, dir.path(), &apns_b.url, &fcm_b.url, &[]);
    let pairs = [(&apns_a, &fcm_a), (&apns_b, &fcm_b)];
    let http = reqwest::Client::new();

    // 1. Both alive: every push accepted exactly once, by one of them.
    let id = fanout::room_question_at(&http, &a.base, &agent, "Deploy?").await;
    let t = Instant::now();
    while accepted_per_device(&pairs, &id)
        .iter()
        .map(|p| p.len())
        .sum::<usize>()
        < devices
    {
        assert!(t.elapsed() < Duration::from_secs(120), "fan-out not done");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A moment for any duplicate to arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per = accepted_per_device(&pairs, &id);
    assert_eq!(per.iter().map(|p| p.len()).sum::<usize>(), devices);
    assert!(
        !per[0].is_empty() && !per[1].is_empty(),
        "one instance did it all: {} / {}",
        per[0].len(),
        per[1].len()
    );
    eprintln!(
        "shared fan-out: instance A sent {}, instance B {}",
        per[0].len(),
        per[1].len()
    );
    for p in &per {
        assert!(p.values().all(|n| *n == 1), "a push accepted twice");
    }
    assert!(
        per[0].keys().all(|k| !per[1].contains_key(k)),
        "a device reached through both instances"
    );

    // 2. Instance B killed (-9) in the middle of a fan-out: A takes B's
    // claimed jobs when their lease ends (60 s) and sends them. Only
    // pushes B had in flight (at most its in-flight bound, 2,048) may be
    // accepted twice.
    let id = fanout::room_question_at(&http, &a.base, &agent, "Roll back?").await;
    let t = Instant::now();
    loop {
        let per = accepted_per_device(&pairs, &id);
        if per[1].len() >= 500 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "B never took part");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    b.kill();
    let killed_at = Instant::now();
    // Done when every job is recorded sent: B's claimed ones only after
    // their lease ends and A sends them.
    let conn = common::connect(&db);
    loop {
        let jobs = push_jobs_of(&*conn, &id).unwrap();
        let sent = jobs.iter().filter(|j| j.state == "sent").count();
        if sent == devices {
            break;
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(150),
            "{sent} of {devices} sent after the kill"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per = accepted_per_device(&pairs, &id);
    // B's stand-in also accepts what B had sent when it died (the request
    // had arrived whole): those are the pushes B had in flight.
    let twice: Vec<&String> = per[0].keys().filter(|k| per[1].contains_key(*k)).collect();
    assert!(per[0].values().all(|n| *n == 1), "A sent a push twice");
    eprintln!(
        "after B's kill -9: A sent {}, B had sent {}; sent twice: {} (B's in flight)",
        per[0].len(),
        per[1].len(),
        twice.len()
    );
    let reached: std::collections::HashSet<&String> = per[0].keys().chain(per[1].keys()).collect();
    assert_eq!(reached.len(), devices, "every device");
    assert!(
        !twice.is_empty() && twice.len() <= 2048,
        "{} pushes repeated after the kill: B had some in flight, at most 2,048",
        twice.len()
    );
    drop(a);
}
