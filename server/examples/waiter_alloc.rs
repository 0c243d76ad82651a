//! Experiment: where the heap bytes of a parked long-poll go. Runs the
//! server in-process under a counting allocator, parks N raw HTTP/1.1
//! long-polls (std sockets, no client allocations), and prints the live
//! allocations they added, by size.
//!
//!   cargo run --release -p qp-server --example waiter_alloc -- [N]

#[path = "support/seed.rs"]
mod seed;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::time::Duration;

use qp_server::store;

const MAXSZ: usize = 65536;
struct Counting;
static LIVE: AtomicI64 = AtomicI64::new(0);
static BY_SIZE: [AtomicI64; MAXSZ + 1] = [const { AtomicI64::new(0) }; MAXSZ + 1];

fn idx(size: usize) -> usize {
    size.min(MAXSZ)
}

static TRACE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static WATCH: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());
static TRACES: std::sync::Mutex<Vec<(usize, String)>> = std::sync::Mutex::new(Vec::new());
thread_local! { static IN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) }; }

fn maybe_trace(size: usize) {
    if !TRACE.load(Relaxed) || IN.with(|i| i.get()) {
        return;
    }
    IN.with(|i| i.set(true));
    let take = {
        let mut w = WATCH.lock().unwrap();
        match w.iter_mut().find(|(s, left)| *s == size && *left > 0) {
            Some((_, left)) => {
                *left -= 1;
                true
            }
            None => false,
        }
    };
    if take {
        let bt = std::backtrace::Backtrace::force_capture().to_string();
        let short: Vec<&str> = bt
            .lines()
            .filter(|l| !l.trim_start().starts_with("at "))
            .skip(4)
            .take(28)
            .collect();
        TRACES.lock().unwrap().push((size, short.join("\n")));
    }
    IN.with(|i| i.set(false));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as i64, Relaxed);
        BY_SIZE[idx(l.size())].fetch_add(1, Relaxed);
        maybe_trace(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Relaxed);
        BY_SIZE[idx(l.size())].fetch_sub(1, Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as i64 - l.size() as i64, Relaxed);
        BY_SIZE[idx(l.size())].fetch_sub(1, Relaxed);
        BY_SIZE[idx(new)].fetch_add(1, Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn snapshot() -> (i64, Vec<i64>) {
    (
        LIVE.load(Relaxed),
        BY_SIZE.iter().map(|a| a.load(Relaxed)).collect(),
    )
}

fn rss_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(2000);
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    if std::env::var("QP_LOG").is_err() {
        std::env::set_var("QP_LOG", "warn");
    }
    qp_server::logging::init(qp_server::logging::LogFormat::Text);
    let dir = tempfile::tempdir().unwrap();
    let db = store::Database::Sqlite(dir.path().join("x.sqlite"));
    let (agent, _user) = seed::bench_room(db.clone());
    let settings = qp_server::config::Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        db,
        ask_rate_per_minute: 100_000_000,
        ask_burst: 100_000_000,
        max_pending_per_agent: 100_000_000,
        max_long_polls_per_token: 100_000_000,
        ..Default::default()
    };
    let server = qp_server::serve::start(settings, None).await.unwrap();
    let base = format!("http://{}", server.addr);
    let mut ids = Vec::new();
    {
        let http = reqwest::Client::new();
        for _ in 0..n {
            let q: serde_json::Value = http
                .post(format!("{base}/api/agent/rooms/BENCH1/questions"))
                .bearer_auth(&agent)
                .json(&serde_json::json!({"prompt": "Deploy?", "responder_scope": "room", "ttl": 3600}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            ids.push(q["id"].as_str().unwrap().to_string());
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let addr = server.addr;
    let reqs: Vec<Vec<u8>> = ids
        .iter()
        .map(|id| {
            format!(
                "GET /api/agent/questions/{id}/wait?timeout=30 HTTP/1.1\r\nauthorization: Bearer {agent}\r\naccept: */*\r\nhost: {addr}\r\n\r\n"
            )
            .into_bytes()
        })
        .collect();
    // Warm-up: one parked waiter, so lazily-initialised state is not counted.
    let mut warm = std::net::TcpStream::connect(addr).unwrap();
    warm.write_all(&reqs[0]).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    if let Ok(w) = std::env::var("WATCH") {
        *WATCH.lock().unwrap() = w
            .split(',')
            .map(|x| {
                (
                    x.parse().unwrap(),
                    std::env::var("PER")
                        .ok()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(2),
                )
            })
            .collect();
    }
    let (live0, by0) = snapshot();
    let rss0 = rss_kb();
    TRACE.store(true, Relaxed);
    let (socks, reqs) = tokio::task::spawn_blocking(move || {
        let mut socks = Vec::with_capacity(reqs.len());
        for r in reqs.iter().skip(1) {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(r).unwrap();
            socks.push(s);
        }
        (socks, reqs)
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    TRACE.store(false, Relaxed);
    let (live1, by1) = snapshot();
    let rss1 = rss_kb();
    let k = socks.len() as f64;
    println!(
        "parked {}: live heap +{:.0} B per waiter; RSS +{:.2} KB per waiter",
        socks.len(),
        (live1 - live0) as f64 / k,
        (rss1 - rss0) as f64 / k
    );
    let mut rows: Vec<(usize, f64)> = (0..=MAXSZ)
        .map(|s| (s, (by1[s] - by0[s]) as f64 / k))
        .filter(|(_, c)| c.abs() >= 0.5)
        .collect();
    rows.sort_by(|a, b| ((b.1 * b.0 as f64).abs()).total_cmp(&(a.1 * a.0 as f64).abs()));
    for (s, c) in rows {
        println!("  size {s:>6}: {c:+.2} per waiter = {:+.0} B", c * s as f64);
    }
    for (size, t) in TRACES.lock().unwrap().iter() {
        println!("--- {size} bytes:\n{t}");
    }
    drop(socks);
    drop(reqs);
    drop(warm);
}
