//! The phone's hot path for one push: decode + validate + present (iOS and
//! Android). Goal: median under 20 µs. With the `e2e` feature, the same for
//! an end-to-end encrypted push: open (HPKE) + decode + validate + present,
//! goal under 50 µs. `cargo bench -p qp-core --features e2e --bench phone_path`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use qp_core::payload::{decode_apns, encode_apns_question, Push};
use qp_core::present::android::android_notification;
use qp_core::present::copy::Copy;
use qp_core::present::ios::ios_notification;
use qp_core::present::PresentOptions;
use qp_core::protocol::{normalize_ask, time, AskContext, Asker, RoomRef};
use serde_json::json;

fn question(ask: serde_json::Value) -> qp_core::protocol::Question {
    let ctx = AskContext {
        now: time::parse("2026-06-27T10:30:00Z").unwrap(),
        default_target_user_id: Some("u_federica".into()),
    };
    let mut q = normalize_ask(&ask, &ctx)
        .unwrap()
        .into_question("q_8t2k9d".into(), ctx.now);
    q.room = Some(RoomRef {
        code: "OPS123".into(),
        name: "Ops".into(),
    });
    q.asker = Some(Asker {
        handle: Some("release-bot".into()),
        kind: "agent".into(),
        id: "a_1".into(),
        display_name: "Release Bot".into(),
    });
    q
}

fn payload(ask: serde_json::Value) -> String {
    encode_apns_question(&question(ask), Copy::english())
        .unwrap()
        .json
}

fn phone_path(json: &str) -> usize {
    let Ok(Push::Question(q)) = decode_apns(json) else {
        panic!("decodes")
    };
    let opts = PresentOptions::default();
    let ios = ios_notification(&q, &opts, Copy::english());
    let android = android_notification(&q, q.created_at, &opts, Copy::english());
    ios.category.actions.len() + android.actions.len()
}

fn bench(c: &mut Criterion) {
    let typical =
        payload(json!({"prompt": "Deploy v1.4.0 to production?", "context": "Build #4821"}));
    let worst = payload(json!({
        "prompt": "🚀".repeat(500),
        "context": "👍".repeat(40),
        "options": (0..4).map(|i| json!({"value": format!("{}{i}", "é".repeat(39)), "label": "🚀".repeat(40)})).collect::<Vec<_>>(),
        "text_input": {"placeholder": "🚀".repeat(60), "max_length": 60},
        "responder_scope": "direct",
    }));
    println!(
        "payload sizes: typical {} bytes, worst case {} bytes",
        typical.len(),
        worst.len()
    );
    c.bench_function("decode+validate+present typical", |b| {
        b.iter(|| phone_path(black_box(&typical)))
    });
    c.bench_function("decode+validate+present worst case", |b| {
        b.iter(|| phone_path(black_box(&worst)))
    });
    #[cfg(feature = "e2e")]
    sealed(c);
}

/// The sealed push of the typical question, opened with the device key and
/// then the same path as a plain one. The key is in memory (with its public
/// half), as after the phone's first read of the key storage in a process.
#[cfg(feature = "e2e")]
fn sealed(c: &mut Criterion) {
    use qp_core::e2e::DeviceSecret;
    use qp_core::payload::{encode_apns_question_sealed, open_apns, Recipient};
    let secret = DeviceSecret::from_bytes(&[0x51; 32]).unwrap();
    let public = secret.public();
    let q = question(json!({"prompt": "Deploy v1.4.0 to production?", "context": "Build #4821"}));
    let to = Recipient {
        device_id: "dev_bench",
        key: &public,
    };
    let json = encode_apns_question_sealed(&q, Copy::english(), &to)
        .unwrap()
        .json;
    println!("sealed payload size: {} bytes", json.len());
    c.bench_function("decrypt+decode+validate+present typical (sealed)", |b| {
        b.iter(|| {
            let Ok(Some(Push::Question(q))) =
                open_apns(black_box(&json), Some(&secret), Some("dev_bench"))
            else {
                panic!("opens")
            };
            let opts = PresentOptions::default();
            let ios = ios_notification(&q, &opts, Copy::english());
            let android = android_notification(&q, q.created_at, &opts, Copy::english());
            ios.category.actions.len() + android.actions.len()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
