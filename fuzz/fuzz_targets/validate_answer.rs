//! The answer validator on arbitrary JSON bodies, against a question with
//! options and a typed reply: never panics; an accepted answer resolves the
//! question once, and a second one is a no-op.
#![no_main]
use chrono::TimeZone;
use libfuzzer_sys::fuzz_target;
use qp_core::protocol::{
    normalize_ask, validate_answer, AnswerOutcome, AnswerSubmission, AskContext, QuestionState,
    Responder,
};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let now = chrono::Utc.with_ymd_and_hms(2026, 6, 27, 10, 30, 0).unwrap();
    let ask = normalize_ask(
        &serde_json::json!({"prompt": "Deploy?", "options": ["approve", "deny"],
                            "text_input": {"max_length": 20}}),
        &AskContext { now, default_target_user_id: Some("u_1".into()) },
    )
    .unwrap();
    let mut q = ask.into_question("q_fuzz".into(), now);
    let Ok(submission) = AnswerSubmission::from_json(&body) else { return };
    if validate_answer(&q, &submission).is_ok() {
        let who = Responder { id: "u_1".into(), display_name: "One".into() };
        assert_eq!(q.apply_answer(&submission, who.clone(), now), Ok(AnswerOutcome::Accepted));
        assert_eq!(q.state, QuestionState::Answered);
        assert_eq!(q.apply_answer(&submission, who, now), Ok(AnswerOutcome::AlreadyResolved));
    }
});
