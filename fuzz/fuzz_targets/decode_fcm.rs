//! The FCM decoder on arbitrary data maps: the input is a JSON object of
//! strings when it parses as one, else the `qp` value of a question message.
#![no_main]
use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use qp_core::payload::{decode_fcm, Push};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let map: HashMap<String, String> = serde_json::from_str(text).unwrap_or_else(|_| {
        HashMap::from([
            ("type".to_string(), "question".to_string()),
            ("qp".to_string(), text.to_string()),
        ])
    });
    if let Ok(Push::Question(q)) = decode_fcm(&map) {
        assert!(!q.id.is_empty());
    }
});
