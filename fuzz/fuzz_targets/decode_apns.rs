//! The APNs decoder on arbitrary bytes: never panics, and whatever decodes
//! is a question the protocol's rules accept (presented without panicking).
#![no_main]
use libfuzzer_sys::fuzz_target;
use qp_core::payload::{decode_apns, Push};
use qp_core::present::copy::Copy;
use qp_core::present::{android::android_notification, ios::ios_notification, PresentOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(Push::Question(q)) = decode_apns(text) {
        assert!(q.options.len() <= 4);
        let copy = Copy::english();
        let _ = ios_notification(&q, &PresentOptions::default(), copy);
        let n = android_notification(&q, q.created_at, &PresentOptions::default(), copy);
        assert!(n.actions.len() <= 3);
    }
});
