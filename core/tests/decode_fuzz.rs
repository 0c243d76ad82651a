//! Fuzz-style: a large number of random and mutated payloads thrown at the
//! decoders. None may panic, and whatever decodes must satisfy the protocol's
//! invariants (a phone never shows a question it could not answer).

use std::collections::HashMap;

use qp_core::payload::{decode_apns, decode_fcm, encode_apns_question, encode_fcm_question, Push};
use qp_core::present::copy::Copy;
use qp_core::protocol::{normalize_ask, time, AskContext, Asker, RoomRef};
use serde_json::{json, Value};

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn seeds() -> Vec<String> {
    let ctx = AskContext {
        now: time::parse("2026-06-27T10:30:00Z").unwrap(),
        default_target_user_id: Some("u_federica".into()),
    };
    let asks = [
        json!({"prompt": "Deploy?", "context": "Build #4821"}),
        json!({"prompt": "Which env?", "responder_scope": "room", "options": ["dev", "staging", "prod", {"value": "x", "label": "🚀 X", "style": "danger"}]}),
        json!({"prompt": "Why?", "text_input": {"placeholder": "reason", "max_length": 20}}),
        json!({"prompt": "נשר?", "options": ["a", "b"], "text_input": {}}),
    ];
    let mut out = Vec::new();
    for (i, a) in asks.iter().enumerate() {
        let mut q = normalize_ask(a, &ctx)
            .unwrap()
            .into_question(format!("q_seed{i}"), ctx.now);
        q.room = Some(RoomRef {
            code: "OPS123".into(),
            name: "Ops".into(),
        });
        // The server always names the asker (an agent); the decoder requires it.
        q.asker = Some(Asker {
            handle: Some("release-bot".into()),
            kind: "agent".into(),
            id: "a_release".into(),
            display_name: "Release Bot".into(),
        });
        out.push(encode_apns_question(&q, Copy::english()).unwrap().json);
        out.push(encode_fcm_question(&q, Copy::english()).unwrap().data["qp"].clone());
    }
    out
}

fn random_json(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 2 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.next() as i64),
        3 => json!((rng.next() as f64) / 7.0),
        4 => {
            let pool = [
                "",
                "q_1",
                "approve",
                "🚀",
                "\u{0}",
                "a\nb",
                "2026-06-27T10:30:00Z",
                "direct",
                "room",
                "primary",
            ];
            let mut s = pool[rng.below(pool.len())].to_string();
            if rng.below(10) == 0 {
                s = s.repeat(rng.below(2000));
            }
            json!(s)
        }
        5 => Value::Array(
            (0..rng.below(6))
                .map(|_| random_json(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "v",
                "id",
                "room",
                "code",
                "name",
                "asker",
                "prompt",
                "options",
                "value",
                "label",
                "style",
                "text_input",
                "max_length",
                "responder_scope",
                "target_user_id",
                "expires_at",
                "created_at",
                "qp",
                "x",
            ];
            Value::Object(
                (0..rng.below(6))
                    .map(|_| {
                        (
                            keys[rng.below(keys.len())].to_string(),
                            random_json(rng, depth + 1),
                        )
                    })
                    .collect(),
            )
        }
    }
}

/// Replaces one random node of `v` with random JSON.
fn mutate_tree(v: &mut Value, rng: &mut Rng) {
    match v {
        Value::Object(m) if !m.is_empty() && rng.below(4) != 0 => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = &keys[rng.below(keys.len())];
            match rng.below(5) {
                0 => {
                    m.remove(k);
                }
                _ => mutate_tree(m.get_mut(k).unwrap(), rng),
            }
        }
        Value::Array(a) if !a.is_empty() && rng.below(4) != 0 => {
            let i = rng.below(a.len());
            mutate_tree(&mut a[i], rng)
        }
        other => *other = random_json(rng, 0),
    }
}

fn mutate_bytes(s: &str, rng: &mut Rng) -> String {
    let mut b = s.as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        if b.is_empty() {
            break;
        }
        let i = rng.below(b.len());
        match rng.below(4) {
            0 => b[i] = rng.next() as u8,
            1 => b.truncate(i),
            2 => b.insert(i, b"{}[]\",:\\0u"[rng.below(10)]),
            _ => {
                b.remove(i);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn check_invariants(p: Push) {
    if let Push::Question(q) = p {
        assert!(q.options.len() <= 4 && q.options.len() != 1);
        assert!(!q.options.is_empty() || q.text_input.is_some());
        let mut values: Vec<&str> = q.options.iter().map(|o| o.value.as_str()).collect();
        values.sort();
        values.dedup();
        assert_eq!(values.len(), q.options.len(), "duplicate values decoded");
        assert!(q
            .id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        assert!(q
            .text_input
            .as_ref()
            .is_none_or(|t| (1..=60).contains(&t.max_length)));
        assert!(!q.prompt.is_empty() && q.prompt.chars().count() <= 500);
    }
}

#[test]
fn decoders_never_panic_on_random_and_mutated_payloads() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let seeds = seeds();
    let mut decoded_ok = 0;
    for i in 0..60_000 {
        let seed = &seeds[i % seeds.len()];
        let input = match i % 3 {
            0 => mutate_bytes(seed, &mut rng),
            1 => {
                let mut v: Value = serde_json::from_str(seed).unwrap();
                for _ in 0..=rng.below(3) {
                    mutate_tree(&mut v, &mut rng);
                }
                v.to_string()
            }
            _ => random_json(&mut rng, 0).to_string(),
        };
        // The same input through both decoders: APNs as userInfo, FCM as the qp value.
        if let Ok(p) = decode_apns(&input) {
            decoded_ok += 1;
            check_invariants(p);
        }
        let data = HashMap::from([
            ("type".to_string(), "question".to_string()),
            ("qp".to_string(), input),
        ]);
        if let Ok(p) = decode_fcm(&data) {
            check_invariants(p);
        }
    }
    // The mutations are not all destructive: some inputs must still decode,
    // or this test would only be exercising the JSON parser.
    assert!(
        decoded_ok > 100,
        "only {decoded_ok} mutated payloads decoded"
    );
}
