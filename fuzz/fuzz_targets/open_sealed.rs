//! Opening an end-to-end encrypted push on arbitrary bytes, with a real
//! device key (the one the e2e vectors are sealed to, so the seeds open and
//! their mutations reach the decryption and the decoder behind it): never
//! panics; whatever opens is a question or resolution that the protocol's
//! rules accept, about the question the envelope names.
#![no_main]
use libfuzzer_sys::fuzz_target;
use qp_core::e2e::DeviceSecret;
use qp_core::payload::{open_apns, Push};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let key = DeviceSecret::from_bytes(&[0x51; 32]).expect("a valid key");
    if let Ok(Some(push)) = open_apns(text, Some(&key), Some("dev_vector")) {
        let id = match &push {
            Push::Question(q) => {
                assert!(q.options.len() <= 4);
                q.id.clone()
            }
            Push::Resolved(n) => n.id.clone(),
        };
        let envelope: serde_json::Value = serde_json::from_str(text).expect("it parsed once");
        assert_eq!(envelope["qp_e2e"]["id"].as_str(), Some(id.as_str()));
    }
});
