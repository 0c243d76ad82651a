//! The ask validator on arbitrary JSON: never panics; an accepted ask obeys
//! the protocol's limits and becomes a question that survives a JSON trip.
#![no_main]
use chrono::TimeZone;
use libfuzzer_sys::fuzz_target;
use qp_core::protocol::{normalize_ask, AskContext, Question};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let now = chrono::Utc.with_ymd_and_hms(2026, 6, 27, 10, 30, 0).unwrap();
    let ctx = AskContext { now, default_target_user_id: Some("u_owner".into()) };
    if let Ok(ask) = normalize_ask(&body, &ctx) {
        let q = ask.into_question("q_fuzz".into(), now);
        assert!(q.options.len() <= 4 && q.options.len() != 1);
        assert!(q.prompt.chars().count() <= 500);
        let json = serde_json::to_string(&q).unwrap();
        let back: Question = serde_json::from_str(&json).unwrap();
        assert_eq!(back.options, q.options);
    }
});
