//! Server benchmark: ask-answer-resolve cycles per second and each cycle's
//! latency (p50, p90, p99, max: what an asker waits), then 10,000
//! long-poll waiters held at once with the answer-to-waiter release latency
//! and the server's resident memory. Runs `qp serve` as its own process.
//!
//!     cargo build --release -p qp --bin qp
//!     cargo build --release -p qp-server --example bench_server
//!     target/release/examples/bench_server --qp target/release/qp
//!
//! Options: --waiters N (10000), --samples N (1000), --cycle-secs S (10),
//! --concurrency N (32), --tls (HTTPS with a throwaway CA; the clients
//! speak HTTP/1.1, one connection per waiter as with plain HTTP, so the two
//! runs compare the cost of TLS itself), --db postgres://… (an empty
//! PostgreSQL database instead of a temporary SQLite file) and --instances N
//! (1; with 2, two `qp serve` processes on that database: each cycle asks and
//! answers on one and long-polls on the other, and the held waiters are split
//! between them, so every release crosses instances). Results go to stdout.

#[path = "support/seed.rs"]
mod seed;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use qp_server::store;
use serde_json::{json, Value};
use tokio::sync::oneshot;

struct Opts {
    qp: String,
    waiters: usize,
    samples: usize,
    cycle_secs: u64,
    concurrency: usize,
    tls: bool,
    db: Option<String>,
    instances: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        qp: "target/release/qp".into(),
        waiters: 10_000,
        samples: 1000,
        cycle_secs: 10,
        concurrency: 32,
        tls: false,
        db: None,
        instances: 1,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        if args[i] == "--tls" {
            o.tls = true;
            i += 1;
            continue;
        }
        match args[i].as_str() {
            "--qp" => o.qp = v,
            "--waiters" => o.waiters = v.parse().expect("--waiters N"),
            "--samples" => o.samples = v.parse().expect("--samples N"),
            "--cycle-secs" => o.cycle_secs = v.parse().expect("--cycle-secs S"),
            "--concurrency" => o.concurrency = v.parse().expect("--concurrency N"),
            "--db" => o.db = Some(v),
            "--instances" => o.instances = v.parse().expect("--instances N"),
            other => panic!("unknown option {other}"),
        }
        i += 2;
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

/// Per thread of every server: CPU time on a core (ns, from `schedstat`:
/// finer than the 10 ms ticks of `stat`) and context switches (voluntary
/// and not).
type ThreadCosts = HashMap<(u32, String), (u64, u64)>;

fn thread_costs(servers: &[Server]) -> ThreadCosts {
    let mut costs = ThreadCosts::new();
    for s in servers {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", s.pid)) else {
            continue;
        };
        for task in tasks.flatten() {
            let read =
                |file: &str| std::fs::read_to_string(task.path().join(file)).unwrap_or_default();
            let cpu_ns = read("schedstat")
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let switches = read("status")
                .lines()
                .filter(|l| {
                    l.starts_with("voluntary_ctxt_switches")
                        || l.starts_with("nonvoluntary_ctxt_switches")
                })
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum();
            let tid = task.file_name().to_string_lossy().into_owned();
            costs.insert((s.pid, tid), (cpu_ns, switches));
        }
    }
    costs
}

/// What the servers' threads spent between two readings: CPU seconds and
/// context switches (a thread that ended in between is left out).
fn spent(before: &ThreadCosts, after: &ThreadCosts) -> (f64, u64) {
    let (mut ns, mut switches) = (0, 0);
    for (thread, (cpu, sw)) in after {
        let (cpu0, sw0) = before.get(thread).copied().unwrap_or((0, 0));
        ns += cpu.saturating_sub(cpu0);
        switches += sw.saturating_sub(sw0);
    }
    (ns as f64 / 1e9, switches)
}

/// The share of the machine's CPU time the host stole between two
/// [`cpu_and_steal`] readings, in percent.
fn steal_percent(before: (u64, u64), after: (u64, u64)) -> f64 {
    100.0 * after.1.saturating_sub(before.1) as f64 / after.0.saturating_sub(before.0).max(1) as f64
}

/// The machine's CPU time so far, all and stolen by the host (clock ticks,
/// from /proc/stat): a run the host disturbed shows it, on a shared VM.
fn cpu_and_steal() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        // user nice system idle iowait irq softirq steal; guest time is
        // counted in user and nice already.
        .take(8)
        .filter_map(|n| n.parse().ok())
        .collect();
    (ticks.iter().sum(), ticks.get(7).copied().unwrap_or(0))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    base: String,
    agent: String,
    user: String,
}

impl Api {
    async fn ask(&self) -> String {
        let q: Value = self
            .http
            .post(format!("{}/api/agent/rooms/BENCH1/questions", self.base))
            .bearer_auth(&self.agent)
            .json(&json!({"prompt": "Deploy?", "responder_scope": "room", "ttl": 3600}))
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

    async fn answer(&self, id: &str) {
        let r = self
            .http
            .post(format!("{}/api/questions/{id}/answer", self.base))
            .bearer_auth(&self.user)
            .json(&json!({"value": "approve"}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
        let _ = r.bytes().await;
    }

    /// Long-polls until the question is terminal.
    async fn wait_terminal(&self, id: &str) {
        loop {
            let sent = self
                .http
                .get(format!(
                    "{}/api/agent/questions/{id}/wait?timeout=30",
                    self.base
                ))
                .bearer_auth(&self.agent)
                .send()
                .await;
            // At the end the server is killed under the remaining waiters.
            let Ok(resp) = sent else { return };
            let Ok(q) = resp.json::<Value>().await else {
                return;
            };
            if q["state"] != "pending" {
                return;
            }
        }
    }
}

/// A `qp serve` process under test.
struct Server {
    child: std::process::Child,
    pid: u32,
    base: String,
}

fn spawn_server(o: &Opts, db: &str, tls_args: &[std::ffi::OsString]) -> Server {
    let mut child = Command::new(&o.qp)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--ask-rate-per-minute",
            "100000000",
            "--ask-burst",
            "100000000",
        ])
        .args(["--max-pending-per-agent", "100000000"])
        // One agent holds every waiter and one user answers every question:
        // the per-token limits would measure themselves, not the server.
        .args(["--max-long-polls-per-token", "100000000"])
        .args(["--max-connections-per-address", "100000000"])
        .args(["--answer-rate-per-minute", "100000000"])
        .args(["--answer-burst", "100000000"])
        .args(tls_args)
        .args(["--db", db])
        .env("QP_LOG", "warn")
        .envs(std::env::vars().filter(|(k, _)| k.starts_with("MALLOC_")))
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
    std::thread::spawn(move || for _ in lines {});
    Server { child, pid, base }
}

/// Resident memory of every server, in KB: each, and the sum.
fn rss_kb(servers: &[Server], key: &str) -> (Vec<u64>, u64) {
    let each: Vec<u64> = servers.iter().map(|s| proc_status_kb(s.pid, key)).collect();
    let total = each.iter().sum();
    (each, total)
}

#[tokio::main]
async fn main() {
    let o = opts();
    assert!(o.instances >= 1, "--instances must be at least 1");
    let dir = tempfile::tempdir().unwrap();
    let db = match &o.db {
        Some(url) => url.clone(),
        None => dir.path().join("bench.sqlite").display().to_string(),
    };
    assert!(
        o.instances == 1 || o.db.is_some(),
        "several instances share a PostgreSQL database: give --db postgres://…"
    );
    let database: store::Database = db.parse().unwrap();
    let (agent, user) = seed::bench_room(database);
    let ca = qp_server::tls::devcert::DevCa::new("bench CA").unwrap();
    let mut tls_args = Vec::new();
    if o.tls {
        let cert = ca.server_cert(&["127.0.0.1".into()]).unwrap();
        std::fs::write(dir.path().join("cert.pem"), cert.cert_pem).unwrap();
        std::fs::write(dir.path().join("key.pem"), cert.key_pem).unwrap();
        tls_args.push("--tls-cert".into());
        tls_args.push(dir.path().join("cert.pem").into_os_string());
        tls_args.push("--tls-key".into());
        tls_args.push(dir.path().join("key.pem").into_os_string());
    }
    let mut servers: Vec<Server> = (0..o.instances)
        .map(|_| spawn_server(&o, &db, &tls_args))
        .collect();
    let trust = match o.tls {
        true => qp_client::ExtraCa::from_pem(ca.ca_pem.as_bytes()).unwrap(),
        false => qp_client::ExtraCa::none(),
    };
    let http = trust
        .builder()
        .http1_only()
        .timeout(Duration::from_secs(45))
        .build()
        .unwrap();
    let apis: Vec<Api> = servers
        .iter()
        .map(|s| Api {
            http: http.clone(),
            base: s.base.clone(),
            agent: agent.clone(),
            user: user.clone(),
        })
        .collect();
    // Asked and answered on `apis[i % n]`, waited on the next instance.
    let n = apis.len();
    let asker = |i: usize| apis[i % n].clone();
    let waiter_of = |i: usize| apis[(i + 1) % n].clone();
    let (_, rss_idle) = rss_kb(&servers, "VmRSS:");
    // RSS counts the binary's own code pages mapped in (file-backed,
    // shared with the page cache and given back under pressure) beside
    // the heap: the split says which of the two an idle figure is.
    let (_, anon_idle) = rss_kb(&servers, "RssAnon:");
    let (_, file_idle) = rss_kb(&servers, "RssFile:");
    println!(
        "{} qp serve process(es) on {} ({}); idle RSS {rss_idle} KB \
         ({anon_idle} KB anonymous, {file_idle} KB mapped files)",
        o.instances,
        if o.db.is_some() {
            "PostgreSQL"
        } else {
            "SQLite"
        },
        if o.tls {
            "HTTPS, HTTP/1.1"
        } else {
            "plain HTTP/1.1"
        }
    );

    // ---- 1. ask -> wait -> answer -> released, in a closed loop ----
    let deadline = Instant::now() + Duration::from_secs(o.cycle_secs);
    let mut tasks = Vec::new();
    for k in 0..o.concurrency {
        let (api, waits) = (asker(k), waiter_of(k));
        tasks.push(tokio::spawn(async move {
            // Each cycle's latency: what an asker waits from its ask to its
            // waiter's release.
            let mut took = Vec::new();
            while Instant::now() < deadline {
                let started = Instant::now();
                let id = api.ask().await;
                let waiter = {
                    let waits = waits.clone();
                    let id = id.clone();
                    tokio::spawn(async move { waits.wait_terminal(&id).await })
                };
                api.answer(&id).await;
                waiter.await.unwrap();
                took.push(started.elapsed());
            }
            took
        }));
    }
    let t = Instant::now();
    let machine_at_start = cpu_and_steal();
    let mut cycle_lat = Vec::new();
    for t in tasks {
        cycle_lat.extend(t.await.unwrap());
    }
    let secs = t.elapsed().as_secs_f64();
    let cycles = cycle_lat.len();
    cycle_lat.sort();
    println!(
        "cycles: {cycles} ask+wait+answer cycles in {secs:.1} s with {} concurrent askers = {:.0} cycles/s (the host stole {:.1}% of this machine's CPU)",
        o.concurrency,
        cycles as f64 / secs,
        steal_percent(machine_at_start, cpu_and_steal())
    );
    let ms = |q: f64| match cycle_lat.is_empty() {
        true => 0.0,
        false => percentile(&cycle_lat, q).as_secs_f64() * 1e3,
    };
    println!(
        "cycle latency over {cycles} cycles (ask to the waiter's release): cycle p50 {:.2} ms, cycle p90 {:.2} ms, cycle p99 {:.2} ms, cycle max {:.2} ms",
        ms(0.5),
        ms(0.9),
        ms(0.99),
        cycle_lat.last().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    );

    // ---- 2. hold N waiters, then answer a sample one by one ----
    let mut ids = Vec::with_capacity(o.waiters);
    let mut asks = Vec::new();
    for chunk in (0..o.waiters).collect::<Vec<_>>().chunks(64) {
        for i in chunk {
            let api = asker(*i);
            asks.push(tokio::spawn(async move { api.ask().await }));
        }
        for a in asks.drain(..) {
            ids.push(a.await.unwrap());
        }
    }
    let mut released: HashMap<String, oneshot::Receiver<Instant>> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        let (tx, rx) = oneshot::channel();
        released.insert(id.clone(), rx);
        let api = waiter_of(i);
        let id = id.clone();
        tokio::spawn(async move {
            api.wait_terminal(&id).await;
            let _ = tx.send(Instant::now());
        });
        if i % 500 == 499 {
            tokio::time::sleep(Duration::from_millis(50)).await; // ramp, not a SYN flood
        }
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (each, rss_held) = rss_kb(&servers, "VmRSS:");
    println!(
        "held: {} waiters parked; server RSS {} KB ({:.1} MB{}); {:.1} KB per parked waiter above idle",
        o.waiters,
        rss_held,
        rss_held as f64 / 1024.0,
        if n > 1 {
            format!(
                ", per instance {}",
                each.iter()
                    .map(|kb| format!("{:.1} MB", *kb as f64 / 1024.0))
                    .collect::<Vec<_>>()
                    .join(" + ")
            )
        } else {
            String::new()
        },
        rss_held.saturating_sub(rss_idle) as f64 / o.waiters as f64
    );

    let mut lat = Vec::with_capacity(o.samples);
    let before = thread_costs(&servers);
    let machine_before = cpu_and_steal();
    for (i, id) in ids.iter().enumerate().take(o.samples) {
        let rx = released.remove(id).unwrap();
        let t0 = Instant::now();
        asker(i).answer(id).await;
        let at = rx.await.unwrap();
        lat.push(at.saturating_duration_since(t0));
    }
    let (cpu, switches) = spent(&before, &thread_costs(&servers));
    let machine_after = cpu_and_steal();
    lat.sort();
    println!(
        "release latency over {} answers with {}..{} waiters held{}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        o.waiters,
        o.waiters - o.samples,
        if n > 1 { " (answered on one instance, waiting on the other)" } else { "" },
        percentile(&lat, 0.5).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3,
        lat.last().unwrap().as_secs_f64() * 1e3
    );
    println!(
        "server cost of one release (the answer and the waiter's response): {:.0} us of CPU, {:.1} context switches; the host stole {:.1}% of this machine's CPU meanwhile",
        cpu * 1e6 / o.samples as f64,
        switches as f64 / o.samples as f64,
        steal_percent(machine_before, machine_after)
    );
    println!(
        "server peak RSS (VmHWM) {} KB",
        rss_kb(&servers, "VmHWM:").1
    );

    // The burst ends: every other waiter is released; the server should give
    // the memory back (malloc_trim after bursts, server/src/serve.rs).
    for (i, id) in ids.iter().enumerate().skip(o.samples) {
        asker(i).answer(id).await;
    }
    for (_, rx) in released {
        let _ = rx.await;
    }
    // The askers go away: their keep-alive connections close.
    drop(apis);
    drop(http);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (_, after) = rss_kb(&servers, "VmRSS:");
    println!(
        "after the burst (all {} released, 6 s later): server RSS {} KB ({:.1} MB)",
        o.waiters,
        after,
        after as f64 / 1024.0
    );
    for s in &mut servers {
        let _ = s.child.kill();
        let _ = s.child.wait();
    }
}
