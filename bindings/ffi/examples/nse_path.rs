//! The notification extension's whole path in a fresh process, as the Swift
//! glue runs it (QPNotificationService -> QPServiceFlow.process):
//!  1. construct the phone object as the extension does: `PhoneCore::new`
//!     in extension mode (opens and migrates the shared store, builds the
//!     HTTP client with its TLS configuration);
//!  2. `receive_apns`: decode, check every field, record the question;
//!  3. `ios_notification`: the content and the per-question category;
//!  4. `plan_ios_categories`: merge with what is registered, pruned by what
//!     the store knows (reads the store).
//!
//! Prints the time of that path in microseconds and the process's peak
//! resident memory in KiB (VmHWM). Run once per process by
//! scripts/bench-phone:
//!
//!     nse_path STORE_PATH [--sealed | --session]
//!
//! With `--sealed` the push is end-to-end encrypted to the device's key
//! (sealed before the clock starts, as the server would), the phone object
//! is given its key storage, and step 2 opens the payload (HPKE) first.
//!
//! With `--session` the extension opens the phone as the docs' extension
//! does, `PhoneCore::open_session` over a store the app signed in to: who
//! is signed in comes from the store (the push is addressed to that user),
//! nothing is given; the vault is the extension's view of the Keychain (the
//! path reads no token). Over a signed-out store the push is not recorded:
//! it prints `signed-out` and exits with status 3. The two-process tests
//! (the Swift and Kotlin session suites) run it this way.

use std::sync::Arc;
use std::time::Instant;

use qp_ffi::keys::DeviceKeyStore;
use qp_ffi::pairing::SecureStoreError;
use qp_ffi::platform::max_ios_categories;
use qp_ffi::types::{DecodedPush, SessionState, StoreMode};
use qp_ffi::{PhoneCore, TokenProvider, TokenVault};

const PAYLOAD: &str = r#"{"aps":{"alert":{"title":"Release Bot asks you","subtitle":"Build #4821","body":"Deploy v1.4.0 to production?"},"category":"qp.q.Q","mutable-content":1,"thread-id":"qp.room.OPS123","interruption-level":"time-sensitive","sound":"default"},
"qp":{"v":1,"id":"Q","room":{"code":"OPS123","name":"Ops"},"asker":"Release Bot","prompt":"Deploy v1.4.0 to production?","context":"Build #4821",
"options":[{"value":"approve","label":"Approve","style":"primary"},{"value":"deny","label":"Deny","style":"danger"}],"text_input":{"placeholder":"or say why","max_length":60},
"responder_scope":"direct","target_user_id":"u_federica","expires_at":"2030-06-27T11:30:00Z","created_at":"2026-06-27T10:30:00Z"}}"#;

/// The Keychain read the app would do; the extension path does not call it.
struct Keychain;
impl TokenProvider for Keychain {
    fn token(&self) -> Option<String> {
        None
    }
}

/// The extension's view of the shared Keychain: the path reads no token.
struct SharedKeychain;
impl TokenVault for SharedKeychain {
    fn save_token(&self, _user_id: String, _token: String) -> Result<(), SecureStoreError> {
        Err(SecureStoreError::Failed {
            reason: "the extension keeps no token".into(),
        })
    }
    fn token(&self, _user_id: String) -> Option<String> {
        None
    }
    fn forget_token(&self, _user_id: String) {}
}

/// The Keychain item holding the device key (read once by the core).
struct KeychainKey(Vec<u8>);
impl DeviceKeyStore for KeychainKey {
    fn load_device_key(&self) -> Option<Vec<u8>> {
        Some(self.0.clone())
    }
    fn save_device_key(&self, _key: Vec<u8>) -> bool {
        false
    }
}

/// The plain payload sealed to the device key, as the server sends it.
fn seal(plain: &str, id: &str, secret: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_str(plain).unwrap();
    let q: qp_core::protocol::Question = {
        let c: qp_core::payload::CompactQuestion = serde_json::from_value(v["qp"].clone()).unwrap();
        c.to_question()
    };
    assert_eq!(q.id, id);
    let key = qp_core::e2e::DeviceSecret::from_bytes(secret)
        .unwrap()
        .public();
    let to = qp_core::payload::Recipient {
        device_id: "dev_bench",
        key: &key,
    };
    qp_core::payload::encode_apns_question_sealed(&q, qp_core::present::copy::Copy::english(), &to)
        .unwrap()
        .json
}

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
    let path = std::env::args()
        .nth(1)
        .expect("usage: nse_path STORE_PATH [--sealed | --session]");
    let mode = std::env::args().nth(2);
    let sealed = mode.as_deref() == Some("--sealed");
    if mode.as_deref() == Some("--session") {
        return session(&path);
    }
    // A new question id per run, as a real push would carry.
    let id = format!("q_{}", std::process::id());
    let mut payload = PAYLOAD
        .replace("\"Q\"", &format!("\"{id}\""))
        .replace("qp.q.Q", &format!("qp.q.{id}"));
    let secret = vec![0x51u8; 32];
    if sealed {
        payload = seal(&payload, &id, &secret);
    }
    // What the app registered before (its static category and earlier questions').
    let registered = vec!["app.static".to_string()];

    let t = Instant::now();
    let core = PhoneCore::new(
        path,
        StoreMode::Extension,
        "https://qp.example.com".into(),
        "u_federica".into(),
        Arc::new(Keychain),
        vec!["de-DE".into(), "en".into()],
        sealed.then(|| Arc::new(KeychainKey(secret.clone())) as Arc<dyn DeviceKeyStore>),
        sealed.then(|| "dev_bench".to_string()),
    )
    .expect("the shared store");
    let t_open = t.elapsed();
    let DecodedPush::Question { question } = core.receive_apns(payload).expect("decode") else {
        panic!("a question")
    };
    let t_receive = t.elapsed();
    let n = core.ios_notification(question.clone(), false);
    let plan = core.plan_ios_categories(
        registered,
        n.category.identifier.clone(),
        chrono::Utc::now(),
        max_ios_categories(),
    );
    let elapsed = t.elapsed();
    // QP_PHASES=1 prints where the time went.
    if std::env::var_os("QP_PHASES").is_some() {
        eprintln!(
            "construct {:?} receive (decode + persist) {:?} present + plan {:?}",
            t_open,
            t_receive - t_open,
            elapsed - t_receive
        );
    }
    assert_eq!(plan.keep.last(), Some(&n.category.identifier));
    println!("{} {}", elapsed.as_micros(), vm_hwm_kb());
}

/// The docs' extension over the app's signed-in store: the session from
/// the store, the push addressed to whoever is signed in.
fn session(path: &str) {
    let core = PhoneCore::open_session(
        path.into(),
        StoreMode::Extension,
        Arc::new(SharedKeychain),
        vec!["en".into()],
        None,
    )
    .expect("the shared store");
    let status = core.session_status().expect("the session");
    let Some(user) = status
        .user_id
        .filter(|_| status.state != SessionState::SignedOut)
    else {
        // The neutral fallback: nothing recorded, nothing shown.
        assert!(
            core.receive_apns(PAYLOAD.into()).is_err(),
            "signed out, a push is refused"
        );
        println!("signed-out");
        std::process::exit(3);
    };
    let id = format!("q_{}", std::process::id());
    let payload = PAYLOAD
        .replace("\"Q\"", &format!("\"{id}\""))
        .replace("qp.q.Q", &format!("qp.q.{id}"))
        .replace("u_federica", &user);
    let DecodedPush::Question { question } = core.receive_apns(payload).expect("decode") else {
        panic!("a question")
    };
    let n = core.ios_notification(question, false);
    println!("{} {}", n.category.identifier, user);
}
