//! Push benchmark: the fan-out of one room question to N devices, a direct
//! question to a person with two phones, and the round trip a person
//! feels, against the stand-in APNs and FCM of `tests/support/gateways.rs`
//! on loopback (HTTP/2, APNs's stream limits, answering after
//! `--delay-ms`). Runs `qp serve` as its own process, configured for them
//! as for the real gateways (`--apns-base-url`, `--fcm-base-url`).
//!
//!     cargo build --release -p qp --bin qp
//!     cargo build --release -p qp-server --example bench_push
//!     target/release/examples/bench_push --qp target/release/qp
//!
//! Options: --sizes 10,100,1000,10000 (room sizes in devices: half iOS, half
//! Android, every fourth end-to-end encrypted), --delay-ms 40, --round-trips
//! 1000 (0 skips), --direct 50 (direct questions; 0 skips).
//!
//! Fan-out: from the ask's response to each push accepted by a stand-in;
//! the server's CPU time (user + system) over the fan-out and its peak
//! resident memory above idle (VmHWM minus VmRSS before the ask).
//! Round trip: ask -> push accepted at the stand-in -> that payload handed
//! to a `Phone` (receive, record, present: what the extension runs) -> the
//! answer action -> flush -> the asker's long-poll returns, one question at
//! a time, with the delay and with none.

#[path = "../tests/support/gateways.rs"]
mod gateways;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qp_server::store::{self, identity};
use serde_json::{json, Value};

struct Opts {
    qp: String,
    sizes: Vec<usize>,
    delay_ms: u64,
    round_trips: usize,
    direct: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        qp: "target/release/qp".into(),
        sizes: vec![10, 100, 1000, 10_000],
        delay_ms: 40,
        round_trips: 1000,
        direct: 50,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--qp" => o.qp = v,
            "--sizes" => o.sizes = v.split(',').map(|n| n.parse().expect("--sizes")).collect(),
            "--delay-ms" => o.delay_ms = v.parse().expect("--delay-ms N"),
            "--round-trips" => o.round_trips = v.parse().expect("--round-trips N"),
            "--direct" => o.direct = v.parse().expect("--direct N"),
            other => panic!("unknown option {other}"),
        }
    }
    o
}

fn proc_status_kb(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU time of a process.
fn cpu_time(pid: u32) -> Duration {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 (utime, stime), counted after the command name.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

struct Server {
    child: std::process::Child,
    pid: u32,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_server(o: &Opts, db: &Path, dir: &Path, apns: &str, fcm: &str) -> Server {
    let key = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apns-test-key.p8");
    let account = dir.join("fcm-account.json");
    std::fs::write(
        &account,
        json!({
            "type": "service_account",
            "project_id": "qp-test",
            "client_email": "qp-test@example.iam.gserviceaccount.com",
            "private_key": String::from_utf8(gateways::fixture("fcm-test-key.pem")).unwrap(),
            "token_uri": format!("{fcm}/token"),
        })
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(&o.qp)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args([
            "--ask-rate-per-minute",
            "100000000",
            "--ask-burst",
            "100000000",
        ])
        .args(["--max-pending-per-agent", "100000000"])
        .args(["--max-long-polls-per-token", "100000000"])
        .args(["--answer-rate-per-minute", "100000000"])
        .args(["--answer-burst", "100000000"])
        .arg("--apns-key")
        .arg(&key)
        .args([
            "--apns-key-id",
            "KEY1234567",
            "--apns-team-id",
            "TEAM123456",
        ])
        .args(["--apns-base-url", apns])
        .arg("--fcm-service-account")
        .arg(&account)
        .args(["--fcm-base-url", fcm])
        .arg("--db")
        .arg(db)
        .env("QP_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qp serve (build it with --release first)");
    let pid = child.id();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("qp serve exited").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.trim().to_string();
        }
    };
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            if l.contains("ERROR") {
                eprintln!("qp serve: {l}");
            }
        }
    });
    Server { child, pid, base }
}

struct Seeded {
    agent: String,
    /// The round-trip person: user id and token; their phone's APNs token.
    rt_user: String,
    rt_token: String,
    rt_device: String,
    /// The person with two phones.
    duo_user: String,
}

/// Rooms BENCH1 (the fan-out: `devices` devices) and SOLO1 (the round-trip
/// person, one iPhone; the person with an iPhone and an Android phone).
fn seed(db: &Path, devices: usize) -> Seeded {
    let database = store::Database::Sqlite(db.to_path_buf());
    let conn = store::connect(&database).unwrap();
    let tx = conn.transaction().unwrap();
    let room = identity::create_room(&*tx, "Bench", Some("BENCH1")).unwrap();
    let solo = identity::create_room(&*tx, "Solo", Some("SOLO11")).unwrap();
    let owner = identity::create_user(&*tx, "Owner", None).unwrap();
    let (_, agent) = identity::create_agent(
        &*tx,
        "bench",
        &owner.id,
        &["ask".into()],
        &[room.id.clone(), solo.id.clone()],
    )
    .unwrap();
    let reg = |user: &str, platform: &'static str, token: &str, key: Option<&str>| {
        identity::register_device(
            &*tx,
            user,
            None,
            &identity::DeviceRegistration {
                platform,
                push_token: token,
                app_id: "io.example.app",
                locale: "",
                public_key: key,
                apns_environment: None,
            },
        )
        .unwrap();
    };
    let key = qp_core::e2e::DeviceSecret::generate()
        .unwrap()
        .public()
        .to_base64();
    for u in 0..devices.div_ceil(2) {
        let user = identity::create_user(&*tx, &format!("Person {u}"), None).unwrap();
        identity::add_member(&*tx, &room.id, &user.id).unwrap();
        identity::create_user_token(&*tx, &user.id, "phone").unwrap();
        // Every fourth device sealed to its key.
        let sealed = |i: usize| (i % 4 == 3).then_some(key.as_str());
        reg(&user.id, "ios", &format!("{:064x}", 2 * u), sealed(2 * u));
        if 2 * u + 1 < devices {
            reg(
                &user.id,
                "android",
                &format!("fcm-{:08}", 2 * u + 1),
                sealed(2 * u + 1),
            );
        }
    }
    let rt = identity::create_user(&*tx, "Round Trip", None).unwrap();
    identity::add_member(&*tx, &solo.id, &rt.id).unwrap();
    let rt_token = identity::create_user_token(&*tx, &rt.id, "phone").unwrap();
    let rt_device = format!("{:064x}", u64::MAX);
    reg(&rt.id, "ios", &rt_device, None);
    let duo = identity::create_user(&*tx, "Two Phones", None).unwrap();
    identity::add_member(&*tx, &solo.id, &duo.id).unwrap();
    identity::create_user_token(&*tx, &duo.id, "phone").unwrap();
    reg(&duo.id, "ios", &format!("{:064x}", u64::MAX - 1), None);
    reg(&duo.id, "android", "fcm-duo-android", None);
    tx.commit().unwrap();
    Seeded {
        agent,
        rt_user: rt.id,
        rt_token,
        rt_device,
        duo_user: duo.id,
    }
}

async fn ask(http: &reqwest::Client, base: &str, agent: &str, room: &str, body: Value) -> String {
    let q: Value = http
        .post(format!("{base}/api/agent/rooms/{room}/questions"))
        .bearer_auth(agent)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    q["id"]
        .as_str()
        .unwrap_or_else(|| panic!("ask failed: {q}"))
        .to_string()
}

/// Every accepted push (both stand-ins) of question `id`, as (device, when).
fn accepted_of(
    apns: &gateways::ApnsState,
    fcm: &gateways::FcmState,
    id: &str,
) -> Vec<(String, Instant)> {
    let mut out: Vec<(String, Instant)> = apns
        .accepted
        .lock()
        .unwrap()
        .iter()
        .filter(|a| a.collapse_id == id)
        .map(|a| (a.device_token.clone(), a.at))
        .collect();
    out.extend(
        fcm.accepted
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.3 == id)
            .map(|a| (a.0.clone(), a.2)),
    );
    out
}

struct Tokens(String);
impl qp_core::sync::TokenProvider for Tokens {
    fn token(&self) -> Option<String> {
        Some(self.0.clone())
    }
}

#[tokio::main]
async fn main() {
    let o = opts();
    let delay = Duration::from_millis(o.delay_ms);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    println!(
        "stand-in delay {} ms; APNs: {} streams per connection (1 after a rejection)",
        o.delay_ms, 500
    );
    let mut first = true;
    for &n in &o.sizes {
        let apns = gateways::apns(delay, 500).await;
        let fcm = gateways::fcm(delay).await;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("bench.sqlite");
        let seeded = {
            let db = db.clone();
            std::thread::spawn(move || seed(&db, n)).join().unwrap()
        };
        let server = spawn_server(&o, &db, dir.path(), &apns.url, &fcm.url);
        // Warm-up: connections, the provider token, the OAuth token.
        let warm = ask(
            &http,
            &server.base,
            &seeded.agent,
            "SOLO11",
            json!({"prompt": "Warm up?", "target_user_id": seeded.duo_user, "ttl": 3600}),
        )
        .await;
        let t = Instant::now();
        while accepted_of(&apns.state, &fcm.state, &warm).len() < 2 {
            assert!(t.elapsed() < Duration::from_secs(30), "warm-up pushes");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;

        if first && o.direct > 0 {
            // A direct question to a person with two phones.
            let mut both = vec![];
            for _ in 0..o.direct {
                let sent = Instant::now();
                let id = ask(
                    &http,
                    &server.base,
                    &seeded.agent,
                    "SOLO11",
                    json!({"prompt": "Direct?", "target_user_id": seeded.duo_user, "ttl": 3600}),
                )
                .await;
                let returned = Instant::now();
                let got = loop {
                    let got = accepted_of(&apns.state, &fcm.state, &id);
                    if got.len() >= 2 {
                        break got;
                    }
                    assert!(sent.elapsed() < Duration::from_secs(60), "direct pushes");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                };
                let last = got.iter().map(|(_, at)| *at).max().unwrap();
                both.push(last.saturating_duration_since(returned));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            both.sort();
            println!(
                "direct question, 2 devices (iPhone + Android), {} questions: both accepted after the ask returned: p50 {}, p99 {}, max {}",
                o.direct,
                ms(pct(&both, 0.5)),
                ms(pct(&both, 0.99)),
                ms(*both.last().unwrap())
            );
        }

        // The fan-out.
        let idle_kb = proc_status_kb(server.pid, "VmRSS:");
        let hwm_before = proc_status_kb(server.pid, "VmHWM:");
        let cpu0 = cpu_time(server.pid);
        let sent = Instant::now();
        let id = ask(
            &http,
            &server.base,
            &seeded.agent,
            "BENCH1",
            json!({"prompt": "Deploy v1.4.0 to production?", "responder_scope": "room", "ttl": 3600}),
        )
        .await;
        let returned = Instant::now();
        let limit = Duration::from_secs(60 + n as u64 / 20);
        let got = loop {
            let got = accepted_of(&apns.state, &fcm.state, &id);
            if got.len() >= n {
                break got;
            }
            if sent.elapsed() > limit {
                println!(
                    "N = {n}: only {} of {n} accepted after {:?}",
                    got.len(),
                    sent.elapsed()
                );
                break got;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let cpu = cpu_time(server.pid).saturating_sub(cpu0);
        let hwm = proc_status_kb(server.pid, "VmHWM:");
        let mut lat: Vec<Duration> = got
            .iter()
            .map(|(_, at)| at.saturating_duration_since(returned))
            .collect();
        lat.sort();
        let mut per: HashMap<&str, usize> = HashMap::new();
        for (d, _) in &got {
            *per.entry(d.as_str()).or_default() += 1;
        }
        let dup = per.values().filter(|c| **c > 1).count();
        use std::sync::atomic::Ordering::SeqCst;
        println!(
            "fan-out N = {n:>5}: ask {} | last push accepted {} after the ask returned | per device p50 {}, p99 {} | peak in flight: APNs {} streams on {} connection(s), FCM {} | server CPU {} | server memory idle {:.1} MB, peak {:.1} MB (+{:.1} MB) | duplicates {dup}, stream-limit violations {}",
            ms(returned - sent),
            ms(*lat.last().unwrap_or(&Duration::ZERO)),
            ms(pct(&lat, 0.5)),
            ms(pct(&lat, 0.99)),
            apns.state.peak_total.load(SeqCst),
            apns.state.connections.load(SeqCst),
            fcm.state.peak_in_flight.load(SeqCst),
            ms(cpu),
            idle_kb as f64 / 1024.0,
            hwm.max(hwm_before) as f64 / 1024.0,
            hwm.saturating_sub(idle_kb.max(hwm_before.min(idle_kb))) as f64 / 1024.0,
            apns.state.violations.load(SeqCst),
        );

        if first && o.round_trips > 0 {
            for d in [delay, Duration::ZERO] {
                apns.state.set_delay(d);
                fcm.state.set_delay(d);
                round_trips(&o, &http, &server, &seeded, &apns.state, dir.path(), d).await;
            }
            apns.state.set_delay(delay);
            fcm.state.set_delay(delay);
        }
        first = false;
        drop(server);
    }
}

async fn round_trips(
    o: &Opts,
    http: &reqwest::Client,
    server: &Server,
    seeded: &Seeded,
    apns: &gateways::ApnsState,
    dir: &Path,
    delay: Duration,
) {
    let store = dir.join(format!("phone-{}.sqlite", delay.as_millis()));
    let phone = Arc::new(
        qp_core::phone::Phone::open(
            &store,
            qp_core::store::StoreMode::Extension,
            &server.base,
            &seeded.rt_user,
            Arc::new(Tokens(seeded.rt_token.clone())),
            &["en".to_string()],
            std::sync::Arc::new(
                qp_client::ReqwestTransport::new(&qp_client::ExtraCa::none()).unwrap(),
            ),
        )
        .unwrap(),
    );
    let mut pushes = apns.subscribe();
    let mut total = vec![];
    let mut to_push = vec![];
    let mut on_phone = vec![];
    for _ in 0..o.round_trips {
        let t0 = Instant::now();
        let id = ask(
            http,
            &server.base,
            &seeded.agent,
            "SOLO11",
            json!({"prompt": "Ship it?", "target_user_id": seeded.rt_user, "ttl": 600,
                   "options": [{"value": "approve", "label": "Approve", "style": "primary"},
                               {"value": "deny", "label": "Deny", "style": "danger"}]}),
        )
        .await;
        // The asker's long-poll, from the moment the ask returned.
        let wait = {
            let http = http.clone();
            let url = format!("{}/api/agent/questions/{id}/wait?timeout=30", server.base);
            let agent = seeded.agent.clone();
            tokio::spawn(async move {
                loop {
                    let q: Value = http
                        .get(&url)
                        .bearer_auth(&agent)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    if q["state"] != "pending" {
                        return Instant::now();
                    }
                }
            })
        };
        // The push for this question, as the stand-in accepted it.
        let push = loop {
            let a = pushes.recv().await.expect("the stand-in");
            if a.device_token == seeded.rt_device && a.collapse_id == id {
                break a;
            }
        };
        let pushed = Instant::now();
        to_push.push(push.at.saturating_duration_since(t0));
        // The extension's path: receive (decode, check, record), present,
        // then the tapped action, committed, then flushed to the server.
        let p = phone.clone();
        let payload = push.payload.to_string();
        let qid = id.clone();
        let presented = tokio::task::spawn_blocking(move || {
            let qp_core::payload::Push::Question(cq) = p.receive_apns(&payload).unwrap() else {
                panic!("a question push")
            };
            let _n = p.ios_notification(&cq, &Default::default());
            p.answer_action(&qid, "qp.v.approve", None).unwrap();
        });
        presented.await.unwrap();
        on_phone.push(pushed.elapsed());
        let flushed = phone.flush().await.unwrap();
        assert_eq!(flushed.answered, 1, "{flushed:?}");
        let done = wait.await.unwrap();
        total.push(done.saturating_duration_since(t0));
    }
    total.sort();
    to_push.sort();
    on_phone.sort();
    println!(
        "round trip, stand-in delay {} ms, {} questions: ask -> long-poll returns p50 {}, p99 {} | ask -> push accepted p50 {}, p99 {} | receive+present+answer on the phone p50 {}, p99 {}",
        delay.as_millis(),
        o.round_trips,
        ms(pct(&total, 0.5)),
        ms(pct(&total, 0.99)),
        ms(pct(&to_push, 0.5)),
        ms(pct(&to_push, 0.99)),
        ms(pct(&on_phone, 0.5)),
        ms(pct(&on_phone, 0.99)),
    );
}
