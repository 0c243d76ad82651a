//! The sealed push format, pinned: payloads sealed once to fixed device keys
//! and checked in (vectors/e2e/sealed.json). Rust, Swift and Kotlin open
//! them through the core (a phone holding the vector's key and device id)
//! and must get the same question, or the same refusal. HPKE is randomized
//! (a fresh ephemeral key per seal), so the vectors are written once by
//! `QP_WRITE_VECTORS=1 cargo test -p qp-core --features phone --test
//! e2e_vectors` and only read afterwards.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use qp_core::e2e::DeviceSecret;
use qp_core::payload::{
    encode_apns_question_sealed, encode_apns_resolved_sealed, encode_fcm_question_sealed, Push,
    Recipient,
};
use qp_core::phone::{DeviceKeyStore, Phone, PhoneError};
use qp_core::present::copy::Copy;
use qp_core::protocol::Question;
use qp_core::store::StoreMode;
use qp_core::sync::TokenProvider;
use serde_json::{json, Value};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/e2e/sealed.json");
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

struct FixedKey(Mutex<Option<Vec<u8>>>);
impl DeviceKeyStore for FixedKey {
    fn load_device_key(&self) -> Option<Vec<u8>> {
        self.0.lock().unwrap().clone()
    }
    fn save_device_key(&self, key: Vec<u8>) -> bool {
        *self.0.lock().unwrap() = Some(key);
        true
    }
}

struct NoToken;
impl TokenProvider for NoToken {
    fn token(&self) -> Option<String> {
        None
    }
}

fn question() -> Question {
    serde_json::from_value(json!({
        "id": "q_e2e_vector", "kind": "question", "prompt": "Rotate the production database password?",
        "context": "INC-2231", "options": [
            {"value": "rotate", "label": "Rotate", "style": "primary"},
            {"value": "wait", "label": "Wait", "style": "default"}],
        "text_input": {"placeholder": "or say why", "max_length": 60},
        "responder_scope": "direct", "target_user_id": "u_federica", "resolution_policy": "first",
        "state": "pending", "answer": null, "expires_at": "2030-06-27T11:30:00Z", "resolved_at": null,
        "correlation_id": null, "reply_to": null, "data": {"ticket": "INC-2231"},
        "created_at": "2026-06-27T10:30:00Z", "room": {"code": "OPS123", "name": "Ops"},
        "asker": {"type": "agent", "id": "a_1", "display_name": "Release Bot"}
    }))
    .unwrap()
}

fn expect_question() -> Value {
    json!({"kind": "question", "id": "q_e2e_vector", "prompt": "Rotate the production database password?",
           "context": "INC-2231", "asker": "Release Bot", "room_name": "Ops", "labels": ["Rotate", "Wait"]})
}

/// Writes the vector file (run once; the bytes are then fixed).
fn write() {
    let secret = DeviceSecret::from_bytes(&[0x51; 32]).unwrap();
    let other = DeviceSecret::from_bytes(&[0x52; 32]).unwrap();
    let public = secret.public();
    let to = Recipient {
        device_id: "dev_vector",
        key: &public,
    };
    let q = question();
    let apns = encode_apns_question_sealed(&q, Copy::english(), &to)
        .unwrap()
        .json;
    let fcm = encode_fcm_question_sealed(&q, Copy::english(), &to)
        .unwrap()
        .data;
    let mut answered = q.clone();
    answered.state = qp_core::protocol::QuestionState::Answered;
    answered.resolved_at = Some(q.created_at + chrono::Duration::minutes(1));
    answered.answer = Some(
        serde_json::from_value(json!({"value": "rotate", "label": "Rotate", "text": null,
            "responder": {"id": "u_federica", "display_name": "Federica"},
            "answered_at": "2026-06-27T10:31:00Z"}))
        .unwrap(),
    );
    let resolved = encode_apns_resolved_sealed(&answered, Copy::english(), None, &to)
        .unwrap()
        .json;
    let edit = |json: &str, f: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_json::from_str(json).unwrap();
        f(&mut v);
        v.to_string()
    };
    let tampered = edit(&apns, &|v| {
        let ct = B64.decode(v["qp_e2e"]["ct"].as_str().unwrap()).unwrap();
        let mut ct = ct.clone();
        ct[10] ^= 0x01;
        v["qp_e2e"]["ct"] = json!(B64.encode(ct));
    });
    let replayed = edit(&apns, &|v| v["qp_e2e"]["id"] = json!("q_another"));
    let key = B64.encode(secret.to_bytes());
    let other_key = B64.encode(other.to_bytes());
    let cannot = json!({"error": "cannot_open"});
    let vectors = json!([
        {"name": "question_apns", "format": "apns", "payload": apns, "device_secret": key, "device_id": "dev_vector", "expect": expect_question()},
        {"name": "question_fcm", "format": "fcm", "payload": fcm, "device_secret": key, "device_id": "dev_vector", "expect": expect_question()},
        {"name": "resolution_apns", "format": "apns", "payload": resolved, "device_secret": key, "device_id": "dev_vector",
         "expect": {"kind": "resolved", "id": "q_e2e_vector", "state": "answered"}},
        {"name": "another_devices_key", "format": "apns", "payload": apns, "device_secret": other_key, "device_id": "dev_vector", "expect": cannot},
        {"name": "another_device_id", "format": "apns", "payload": apns, "device_secret": key, "device_id": "dev_other", "expect": cannot},
        {"name": "tampered_ciphertext", "format": "apns", "payload": tampered, "device_secret": key, "device_id": "dev_vector", "expect": cannot},
        {"name": "replayed_to_another_question", "format": "apns", "payload": replayed, "device_secret": key, "device_id": "dev_vector", "expect": cannot},
        {"name": "no_device_key", "format": "apns", "payload": apns, "device_secret": null, "device_id": "dev_vector", "expect": cannot},
    ]);
    let doc = json!({
        "description": "End-to-end encrypted pushes: payloads sealed once (HPKE base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305; info 'question-protocol push v1'; AAD 'qp-e2e/1' NUL kind NUL question id NUL device id) to fixed device keys. A phone holding `device_secret` (base64, null: no key) as device `device_id` receives `payload` (APNs: the userInfo JSON; FCM: the data map) and gets `expect`: the question's shown fields, the resolution, or the error code.",
        "vectors": vectors,
    });
    std::fs::create_dir_all(std::path::Path::new(FILE).parent().unwrap()).unwrap();
    std::fs::write(FILE, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
}

fn replay(v: &Value, dir: &std::path::Path) -> Result<(), String> {
    let secret = v["device_secret"].as_str().map(|k| B64.decode(k).unwrap());
    let phone = Phone::open(
        &dir.join(format!("{}.sqlite", v["name"].as_str().unwrap())),
        StoreMode::Extension,
        "http://127.0.0.1:9",
        "u_federica",
        Arc::new(NoToken),
        &["en".to_string()],
        Arc::new(qp_core::http::ScriptedTransport::offline()),
    )
    .unwrap()
    .with_device_keys(
        Arc::new(FixedKey(Mutex::new(secret))),
        v["device_id"].as_str().map(String::from),
    );
    let got = match v["format"].as_str().unwrap() {
        "apns" => phone.receive_apns(v["payload"].as_str().unwrap()),
        _ => {
            let data: HashMap<String, String> =
                serde_json::from_value(v["payload"].clone()).unwrap();
            phone.receive_fcm(&data)
        }
    };
    let got = match got {
        Ok(Push::Question(q)) => json!({"kind": "question", "id": q.id, "prompt": q.prompt,
            "context": q.context, "asker": q.asker, "room_name": q.room.name,
            "labels": q.options.iter().map(|o| o.label.clone()).collect::<Vec<_>>()}),
        Ok(Push::Resolved(n)) => json!({"kind": "resolved", "id": n.id, "state": n.state}),
        Err(PhoneError::Payload(e)) => json!({"error": e.code()}),
        Err(e) => json!({"error": e.to_string()}),
    };
    if got == v["expect"] {
        Ok(())
    } else {
        Err(format!("got {got}, want {}", v["expect"]))
    }
}

#[test]
fn sealed_vectors_open_as_pinned() {
    if std::env::var("QP_WRITE_VECTORS").is_ok() {
        write();
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(FILE).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vectors = doc["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 8);
    let failures: Vec<String> = vectors
        .iter()
        .filter_map(|v| {
            replay(v, dir.path())
                .err()
                .map(|e| format!("{}: {e}", v["name"]))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}
