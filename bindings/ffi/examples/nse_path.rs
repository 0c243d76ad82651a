//! The notification extension's path in a fresh process: open the shared
//! store (extension mode), decode the push, build the iOS notification and
//! plan the category registry, persist the question. Prints the time of
//! that path and the process's peak resident memory.
//!
//!     nse_path STORE_PATH   (run by scripts/bench-phone, once per process)

use std::time::Instant;

use qp_core::payload::{decode_apns, Push};
use qp_core::present::copy::Copy;
use qp_core::present::ios::ios_notification;
use qp_core::present::registry::{plan_categories, DEFAULT_MAX_CATEGORIES};
use qp_core::present::PresentOptions;
use qp_core::store::{Store, StoreMode};

const PAYLOAD: &str = r#"{"aps":{"alert":{"title":"Release Bot asks you","subtitle":"Build #4821","body":"Deploy v1.4.0 to production?"},"category":"qp.q.Q","mutable-content":1,"thread-id":"qp.room.OPS123","interruption-level":"time-sensitive","sound":"default"},
"qp":{"v":1,"id":"Q","room":{"code":"OPS123","name":"Ops"},"asker":"Release Bot","prompt":"Deploy v1.4.0 to production?","context":"Build #4821",
"options":[{"value":"approve","label":"Approve","style":"primary"},{"value":"deny","label":"Deny","style":"danger"}],"text_input":{"placeholder":"or say why","max_length":60},
"responder_scope":"direct","target_user_id":"u_federica","expires_at":"2030-06-27T11:30:00Z","created_at":"2026-06-27T10:30:00Z"}}"#;

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: nse_path STORE_PATH");
    // A new question id per run, as a real push would carry.
    let id = format!("q_{}", std::process::id());
    let payload = PAYLOAD
        .replace("\"Q\"", &format!("\"{id}\""))
        .replace("qp.q.Q", &format!("qp.q.{id}"));

    let t = Instant::now();
    let store = Store::open(std::path::Path::new(&path), StoreMode::Extension).expect("store");
    let t_open = t.elapsed();
    let Ok(Push::Question(q)) = decode_apns(&payload) else {
        panic!("decode")
    };
    let n = ios_notification(&q, &PresentOptions::default(), &Copy::EN);
    let registered = vec!["app.static".to_string()];
    let plan = plan_categories(
        &registered,
        &n.category.identifier,
        &[],
        q.created_at,
        DEFAULT_MAX_CATEGORIES,
    );
    let t_present = t.elapsed();
    store.record_push(&q).expect("persist");
    let elapsed = t.elapsed();
    // QP_PHASES=1 prints where the time went.
    if std::env::var_os("QP_PHASES").is_some() {
        eprintln!(
            "open {:?} present {:?} persist {:?}",
            t_open,
            t_present - t_open,
            elapsed - t_present
        );
    }
    assert_eq!(plan.keep.len(), 2);
    println!("{} {}", elapsed.as_micros(), vm_hwm_kb());
}
