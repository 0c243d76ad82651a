//! The uniffi facade, called as Swift and Kotlin call it: plain records in
//! and out, typed errors for bad input.
#![cfg(feature = "ffi")]

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use qp_core::ffi::*;
use qp_core::protocol::{OptionStyle, QuestionState, ResponderScope};

const APNS: &str = r#"{"aps":{"alert":{"title":"Release Bot asks you","body":"Deploy?"}},
 "qp":{"v":1,"id":"q_1","room":{"code":"OPS123","name":"Ops"},"asker":"Release Bot","prompt":"Deploy?",
 "context":null,"options":[{"value":"approve","label":"Approve","style":"primary"},{"value":"deny","label":"Deny","style":"danger"}],
 "text_input":{"placeholder":null,"max_length":10},"responder_scope":"direct","target_user_id":"u_1",
 "expires_at":"2026-06-27T11:30:00Z","created_at":"2026-06-27T10:30:00Z"}}"#;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn question() -> PushQuestion {
    match decode_apns_payload(APNS.into()).unwrap() {
        DecodedPush::Question { question } => question,
        other => panic!("{other:?}"),
    }
}

#[test]
fn decode_present_and_answer_through_the_facade() {
    let q = question();
    assert_eq!(q.options[1].style, OptionStyle::Danger);
    assert_eq!(q.responder_scope, ResponderScope::Direct);
    assert_eq!(q.expires_at, at(1_782_559_800));
    let ios = ios_notification(q.clone(), true);
    assert_eq!(ios.category.identifier, "qp.q.q_1");
    assert!(ios.category.actions[1].authentication_required);
    let android = android_notification(q.clone(), at(1_782_556_200), false);
    assert_eq!(android.actions.len(), 3, "two buttons and Reply");
    assert_eq!(android.timeout_after_ms, 3_600_000);
    let a = map_notification_action(q.clone(), "qp.v.deny".into(), None).unwrap();
    assert_eq!((a.value.as_deref(), a.text), (Some("deny"), None));
    // The JSON of a decoded question decodes to the same question.
    let json = push_question_to_json(q.clone());
    let again = decode_apns_payload(format!("{{\"qp\":{json}}}")).unwrap();
    assert_eq!(again, DecodedPush::Question { question: q });
}

#[test]
fn bad_input_is_a_typed_error_never_a_panic() {
    match decode_apns_payload("{".into()) {
        Err(QpError::Payload { code, .. }) => assert_eq!(code, "not_json"),
        other => panic!("{other:?}"),
    }
    match decode_fcm_payload(HashMap::new()) {
        Err(QpError::Payload { code, field, .. }) => assert_eq!(
            (code.as_str(), field.as_deref()),
            ("missing_key", Some("type"))
        ),
        other => panic!("{other:?}"),
    }
    match map_notification_action(question(), "qp.text".into(), Some("x".repeat(11))) {
        Err(QpError::Action {
            code, kept_text, ..
        }) => {
            assert_eq!(code, "text_too_long");
            assert_eq!(
                kept_text,
                Some("x".repeat(11)),
                "the typed text is kept whole"
            );
        }
        other => panic!("{other:?}"),
    }
    match normalize_ask_json(r#"{"prompt": ""}"#.into(), at(0), None) {
        Err(QpError::Validation { field, code, .. }) => {
            assert_eq!((field.as_str(), code.as_str()), ("prompt", "empty"))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        normalize_ask_json("nope".into(), at(0), None),
        Err(QpError::InvalidInput { .. })
    ));
    assert!(matches!(
        apply_answer_json("{}".into(), "{}".into(), "u".into(), "U".into(), at(0)),
        Err(QpError::InvalidInput { .. })
    ));
    // A record built by hand with nonsense in it still cannot crash anything.
    let mut q = question();
    q.options.clear();
    q.text_input = None;
    q.id = "../../etc".into();
    let _ = ios_notification(q.clone(), false);
    let _ = android_notification(q.clone(), at(0), false);
    assert!(map_notification_action(q, "qp.v.approve".into(), None).is_err());
}

#[test]
fn ask_and_answer_json_round_trip() {
    let ask = normalize_ask_json(
        r#"{"prompt":"Go?","responder_scope":"room"}"#.into(),
        at(1_782_556_200),
        None,
    )
    .unwrap();
    let ask: serde_json::Value = serde_json::from_str(&ask).unwrap();
    assert_eq!(ask["expires_at"], "2026-06-27T11:30:00Z");
    let mut q = ask.clone();
    q["id"] = "q_9".into();
    q["state"] = "pending".into();
    q["created_at"] = "2026-06-27T10:30:00Z".into();
    let r = apply_answer_json(
        q.to_string(),
        r#"{"value":"deny"}"#.into(),
        "u_1".into(),
        "Ann".into(),
        at(1_782_556_300),
    )
    .unwrap();
    assert_eq!(r.outcome, "accepted");
    let resolved: serde_json::Value = serde_json::from_str(&r.question_json).unwrap();
    assert_eq!(resolved["answer"]["responder"]["display_name"], "Ann");
    let again = apply_answer_json(
        r.question_json,
        r#"{"value":"approve"}"#.into(),
        "u_2".into(),
        "Bo".into(),
        at(1_782_556_400),
    )
    .unwrap();
    assert_eq!(again.outcome, "already_resolved");
    let plan = plan_ios_categories(
        vec!["app.static".into(), "qp.q.q_old".into()],
        "qp.q.q_9".into(),
        vec![KnownCategoryQuestion {
            question_id: "q_old".into(),
            state: QuestionState::Answered,
            expires_at: at(0),
            created_at: at(0),
        }],
        at(10),
        128,
    );
    assert_eq!(plan.keep, vec!["app.static", "qp.q.q_9"]);
    assert_eq!(protocol_version(), "1.1");
    assert_eq!(
        fallback_notification(None, Some("  ".into())).title,
        "New question"
    );
}
