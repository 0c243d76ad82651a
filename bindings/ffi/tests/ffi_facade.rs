//! The uniffi facade, called as Swift and Kotlin call it: the core's records
//! in and out, typed errors (kinds, not strings) for bad input, and the
//! `PhoneCore` object forwarding to the core's `Phone`.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use qp_ffi::platform::*;
use qp_ffi::types::*;
use qp_ffi::{PhoneCore, QpError, TokenProvider};

const APNS: &str = r#"{"aps":{"alert":{"title":"Release Bot asks you","body":"Deploy?"}},
 "qp":{"v":1,"id":"q_1","room":{"code":"OPS123","name":"Ops"},"asker":"Release Bot","prompt":"Deploy?",
 "context":null,"options":[{"value":"approve","label":"Approve","style":"primary"},{"value":"deny","label":"Deny","style":"danger"}],
 "text_input":{"placeholder":null,"max_length":10},"responder_scope":"direct","target_user_id":"u_1",
 "expires_at":"2026-06-27T11:30:00Z","created_at":"2026-06-27T10:30:00Z"}}"#;

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(secs, 0).unwrap()
}

fn question() -> PushQuestion {
    match decode_apns_payload(APNS.into()).unwrap() {
        DecodedPush::Question { question } => question,
        other => panic!("{other:?}"),
    }
}

#[test]
fn decode_and_present_through_the_facade() {
    let q = question();
    assert_eq!(q.options[1].style, OptionStyle::Danger);
    assert_eq!(q.responder_scope, ResponderScope::Direct);
    assert_eq!(q.expires_at, at(1_782_559_800));
    let ios = ios_notification(q.clone(), true, vec![]);
    assert_eq!(ios.category.identifier, ios_category_id("q_1".into()));
    assert_eq!(
        question_id_of_category(ios.category.identifier.clone()).as_deref(),
        Some("q_1")
    );
    assert_eq!(question_id_of_category("app.static".into()), None);
    assert!(ios.category.actions[1].authentication_required);
    let android = android_notification(q.clone(), at(1_782_556_200), false, vec![]);
    assert_eq!(android.actions.len(), 3, "two buttons and Reply");
    assert_eq!(android.timeout_after_ms, 3_600_000);
    assert_eq!(android.channel_id, android_channel(vec![]).id);
    assert_eq!(android_channel(vec![]).name, "Questions");
    assert_eq!(android_channel(vec!["de-AT".into()]).name, "Fragen");
    assert_eq!(max_ios_categories(), 128);
    assert_eq!(protocol_version(), "1.1");
    assert_eq!(
        fallback_notification(None, Some("  ".into()), vec![]).title,
        "New question"
    );
    // An FCM message's words are read by the core, in the person's language
    // where it has none.
    let data = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let words = fcm_fallback_notification(
        data(&[("title", "Release Bot asks you"), ("body", "Deploy?")]),
        vec![],
    );
    assert_eq!(
        (words.title.as_str(), words.body.as_str()),
        ("Release Bot asks you", "Deploy?")
    );
    let none = fcm_fallback_notification(data(&[("qp", "{")]), vec!["de".into()]);
    assert_eq!(none, fallback_notification(None, None, vec!["de".into()]));
    assert_ne!(none.title, "New question", "German, not English");
}

#[test]
fn bad_input_is_a_typed_error_never_a_panic() {
    match decode_apns_payload("{".into()) {
        Err(QpError::Payload { kind, .. }) => assert_eq!(kind, PayloadErrorKind::NotJson),
        other => panic!("{other:?}"),
    }
    match decode_fcm_payload(HashMap::new()) {
        Err(QpError::Payload { kind, field, .. }) => assert_eq!(
            (kind, field.as_deref()),
            (PayloadErrorKind::MissingKey, Some("type"))
        ),
        other => panic!("{other:?}"),
    }
    // A record built by hand with nonsense in it still cannot crash anything.
    let mut q = question();
    q.options.clear();
    q.text_input = None;
    q.id = "../../etc".into();
    let _ = ios_notification(q.clone(), false, vec![]);
    let _ = android_notification(q, at(0), false, vec![]);
}

struct Token(Option<String>);
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        self.0.clone()
    }
}

fn phone_core(dir: &tempfile::TempDir) -> Arc<PhoneCore> {
    PhoneCore::new(
        dir.path().join("shared.sqlite").display().to_string(),
        StoreMode::Extension,
        "http://127.0.0.1:9".into(),
        "u_1".into(),
        Arc::new(Token(None)),
        vec![],
        None,
        None,
    )
    .unwrap()
}

/// The object the apps hold runs the core's `Phone`: what the Phone decides
/// (keep too-long text as a draft, one answer per question, the status
/// line) is what the bindings return, and the same `Phone` read directly
/// agrees. `qp device` drives the same type (cli/tests/cli_device.rs).
#[test]
fn the_phone_object_forwards_to_the_core_phone() {
    let dir = tempfile::tempdir().unwrap();
    let core = phone_core(&dir);
    assert!(matches!(
        core.receive_apns(APNS.into()).unwrap(),
        DecodedPush::Question { .. }
    ));
    match core.answer_action("q_1".into(), "qp.text".into(), Some("x".repeat(11))) {
        Err(QpError::Action {
            kind, kept_text, ..
        }) => {
            assert_eq!(kind, ActionErrorKind::TextTooLong);
            assert_eq!(
                kept_text,
                Some("x".repeat(11)),
                "the typed text is kept whole"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(core.draft("q_1".into()).unwrap(), Some("x".repeat(11)));
    assert_eq!(core.phone().draft("q_1").unwrap(), Some("x".repeat(11)));
    match core.answer_action(
        "q_1".into(),
        "com.apple.UNNotificationDefaultActionIdentifier".into(),
        None,
    ) {
        Err(QpError::Action { kind, .. }) => assert_eq!(kind, ActionErrorKind::UnknownAction),
        other => panic!("{other:?}"),
    }
    let committed = core
        .answer_action("q_1".into(), "qp.v.deny".into(), None)
        .unwrap();
    assert_eq!(committed.state, AnswerState::Queued);
    assert_eq!(
        committed.status,
        "Deny: queued, will send when you’re online"
    );
    assert_eq!(
        core.answer_status("q_1".into()).unwrap(),
        core.phone().answer_status("q_1").unwrap()
    );
    match core.answer_in_app("q_2".into(), Some("approve".into()), None) {
        Err(QpError::UnknownQuestion { question_id }) => assert_eq!(question_id, "q_2"),
        other => panic!("{other:?}"),
    }
    let plan = core.plan_ios_categories(
        vec!["app.static".into()],
        ios_category_id("q_1".into()),
        Utc::now(),
        128,
    );
    assert_eq!(plan.keep, vec!["app.static", "qp.q.q_1"]);
    assert_eq!(core.feed().unwrap().len(), 1);
    core.checkpoint().unwrap();
}

#[test]
fn a_store_that_cannot_open_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("shared.sqlite"),
        b"this is not a database, not at all",
    )
    .unwrap();
    match PhoneCore::new(
        dir.path().join("shared.sqlite").display().to_string(),
        StoreMode::App,
        "http://127.0.0.1:9".into(),
        "u_1".into(),
        Arc::new(Token(None)),
        vec![],
        None,
        None,
    ) {
        Err(QpError::Storage { kind, .. }) => assert_eq!(kind, StoreErrorKind::Corrupt),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("opened a corrupt store"),
    }
}

/// The exports the Swift and Kotlin vector suites use (feature `testing`).
#[cfg(feature = "testing")]
mod testing_exports {
    use super::*;
    use qp_ffi::testing::*;

    #[test]
    fn action_mapping_and_json() {
        let a = map_notification_action(question(), "qp.v.deny".into(), None).unwrap();
        assert_eq!((a.value.as_deref(), a.text), (Some("deny"), None));
        let json = push_question_to_json(question());
        let again = decode_apns_payload(format!("{{\"qp\":{json}}}")).unwrap();
        assert_eq!(
            again,
            DecodedPush::Question {
                question: question()
            }
        );
        match normalize_ask_json(r#"{"prompt": ""}"#.into(), at(0), None) {
            Err(QpError::Validation { field, code, .. }) => {
                assert_eq!((field.as_str(), code), ("prompt", ValidationCode::Empty))
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
            vec![KnownQuestion {
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
            fallback_notification(None, Some("  ".into()), vec![]).title,
            "New question"
        );
    }
}

/// The app's key storage (the Keychain or the Keystore), in memory.
struct MemoryKeys(std::sync::Mutex<Option<Vec<u8>>>);
impl qp_ffi::keys::DeviceKeyStore for MemoryKeys {
    fn load_device_key(&self) -> Option<Vec<u8>> {
        self.0.lock().unwrap().clone()
    }
    fn save_device_key(&self, key: Vec<u8>) -> bool {
        *self.0.lock().unwrap() = Some(key);
        true
    }
}

fn keyed_phone_core(dir: &tempfile::TempDir) -> Arc<PhoneCore> {
    PhoneCore::new(
        dir.path().join("keyed.sqlite").display().to_string(),
        StoreMode::Extension,
        "http://127.0.0.1:9".into(),
        "u_1".into(),
        Arc::new(Token(None)),
        vec![],
        Some(Arc::new(MemoryKeys(Default::default()))),
        Some("dev_1".into()),
    )
    .unwrap()
}

/// APNS's question as the server sends it, sealed to `core`'s key, with
/// `prompt`.
fn sealed_to(core: &PhoneCore, prompt: &str) -> String {
    let mut q = qp_core::payload::CompactQuestion::to_question(&question());
    q.prompt = prompt.to_string();
    let key =
        qp_core::e2e::DevicePublicKey::parse(&core.device_public_key().unwrap(), "key").unwrap();
    let to = qp_core::payload::Recipient {
        device_id: "dev_1",
        key: &key,
    };
    qp_core::payload::encode_apns_question_sealed(&q, qp_core::present::copy::Copy::english(), &to)
        .unwrap()
        .json
}

/// Issue 32, finding 1, as the apps see it: with a device key, a plain push
/// (a forged one with the real question's id and a harmless prompt, or a
/// forged resolution) is a `Payload(kind: unsealed)` error, its words are
/// not shown, and the question held is the one the server sealed.
#[test]
fn with_a_device_key_plain_pushes_are_refused_as_unsealed() {
    let dir = tempfile::tempdir().unwrap();
    let core = keyed_phone_core(&dir);
    let real = "Allow Bash: psql prod -c \"DROP TABLE customers\"";
    match core.receive_apns(sealed_to(&core, real)).unwrap() {
        DecodedPush::Question { question } => assert_eq!(question.prompt, real),
        other => panic!("{other:?}"),
    }
    let forged = APNS.replace("Deploy?", "Allow Bash: git status");
    let resolved = r#"{"aps":{"content-available":1},"qp_resolved":{"v":1,"id":"q_1","state":"cancelled","answer":null,"resolved_at":"2026-06-27T10:40:00Z"}}"#;
    for push in [forged.clone(), resolved.to_string()] {
        match core.receive_apns(push) {
            Err(QpError::Payload { kind, .. }) => assert_eq!(kind, PayloadErrorKind::Unsealed),
            other => panic!("{other:?}"),
        }
    }
    let fcm: HashMap<String, String> = [("type", "question"), ("qp", forged.as_str())]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(matches!(
        core.receive_fcm(fcm),
        Err(QpError::Payload {
            kind: PayloadErrorKind::Unsealed,
            ..
        })
    ));
    let shown = core.fallback_notification(
        Some("Release Bot asks you".into()),
        Some("Allow Bash: git status".into()),
    );
    assert!(!shown.body.contains("git status"), "{shown:?}");
    assert_eq!(core.question("q_1".into()).unwrap().unwrap().prompt, real);
    assert_eq!(core.resolution("q_1".into()).unwrap(), None);
}

/// Without a key, a push still never rewrites a held question, and a
/// resolution push withdraws nothing by itself (the category stays, the
/// question stays answerable) until the server confirms it.
#[test]
fn a_push_neither_rewrites_nor_resolves_a_held_question() {
    let dir = tempfile::tempdir().unwrap();
    let core = phone_core(&dir);
    core.receive_apns(APNS.into()).unwrap();
    let forged = APNS
        .replace("\"prompt\":\"Deploy?\"", "\"prompt\":\"git status\"")
        .replace("\"label\":\"Deny\"", "\"label\":\"Read only\"");
    match core.receive_apns(forged).unwrap() {
        DecodedPush::Question { question } => {
            assert_eq!(question.prompt, "Deploy?");
            assert_eq!(question.options[1].label, "Deny");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        core.question("q_1".into()).unwrap().unwrap().prompt,
        "Deploy?"
    );
    let resolved = r#"{"aps":{"content-available":1},"qp_resolved":{"v":1,"id":"q_1","state":"cancelled","answer":null,"resolved_at":"2026-06-27T10:40:00Z"}}"#;
    assert!(matches!(
        core.receive_apns(resolved.into()).unwrap(),
        DecodedPush::Resolved { .. }
    ));
    assert_eq!(core.resolution("q_1".into()).unwrap(), None);
    assert!(core
        .ios_resolved_notification("q_1".into())
        .unwrap()
        .is_none());
    let plan = core.plan_ios_categories(vec!["qp.q.q_1".into()], "qp.q.q_2".into(), at(0), 128);
    assert_eq!(plan.keep, vec!["qp.q.q_1", "qp.q.q_2"]);
    let committed = core
        .answer_action("q_1".into(), "qp.v.deny".into(), None)
        .unwrap();
    assert_eq!(committed.state, AnswerState::Queued);
    assert!(committed.status.starts_with("Deny"), "{}", committed.status);
}

/// iOS shows a push that skips the extension as it came, with the buttons of
/// the category it names: only a notification showing the held question
/// (its context and prompt) may answer it.
#[test]
fn only_a_notification_showing_the_held_question_may_answer_it() {
    let dir = tempfile::tempdir().unwrap();
    let core = phone_core(&dir);
    core.receive_apns(APNS.into()).unwrap();
    assert!(core
        .shows_held_question("q_1".into(), None, "Deploy?".into())
        .unwrap());
    assert!(!core
        .shows_held_question("q_1".into(), None, "Allow Bash: git status".into())
        .unwrap());
    assert!(!core
        .shows_held_question("q_9".into(), None, "Deploy?".into())
        .unwrap());
}

/// The lifecycle's calls through the facade (issue 26): the budgets, the
/// alert of a payload, the answered line, the background call, and the
/// categories without a store; `cameToForeground` is driven by the Swift
/// and Kotlin suites against `qp serve` (and in qp-core's lifecycle tests).
#[test]
fn the_lifecycle_calls_forward_to_the_core() {
    let budgets = qp_ffi::phone_budgets();
    assert_eq!(
        (budgets.extension_network_ms, budgets.answer_delivery_ms),
        (5_000, 8_000)
    );
    let alert = qp_ffi::apns_alert(APNS.into());
    assert_eq!(alert.title.as_deref(), Some("Release Bot asks you"));
    assert_eq!(alert.body.as_deref(), Some("Deploy?"));
    assert_eq!(qp_ffi::apns_alert("{".into()).body, None);
    let plan = qp_ffi::lifecycle::plan_ios_categories_without_store(
        vec!["app.static".into()],
        "qp.q.q_1".into(),
        Utc::now(),
        128,
    );
    assert_eq!(plan.keep, vec!["app.static", "qp.q.q_1"]);

    let dir = tempfile::tempdir().unwrap();
    let core = phone_core(&dir);
    core.receive_apns(APNS.into()).unwrap();
    // The feed cell's words, whatever the clock says of this question's
    // deadline (past it, "Expired with no answer").
    let cell_line = |core: &PhoneCore| {
        let cell = core.feed().unwrap().into_iter().next().unwrap();
        cell.resolution.or(cell.my_answer.map(|m| m.status))
    };
    assert_eq!(core.answered_line("q_1".into()).unwrap(), cell_line(&core));
    assert_eq!(core.answered_line("q_unknown".into()).unwrap(), None);
    core.answer_action("q_1".into(), "qp.v.approve".into(), None)
        .unwrap();
    assert!(core.answered_line("q_1".into()).unwrap().is_some());
    assert_eq!(core.answered_line("q_1".into()).unwrap(), cell_line(&core));
    let background = core.entering_background(Platform::Android).unwrap();
    assert_eq!(
        (background.unsent_answers, background.store_closed),
        (1, false)
    );
    let background = core.entering_background(Platform::Ios).unwrap();
    assert!(background.store_closed);
    assert!(matches!(
        core.feed(),
        Err(QpError::Storage {
            kind: StoreErrorKind::Suspended,
            ..
        })
    ));
    core.resume().unwrap();
}

/// A failed pairing's line reaches the apps in the person's language (not
/// only under the test-only exports): from the session's `PhoneCore`, which
/// follows a change of language, and from a free function for an app
/// without one; never the English detail.
#[test]
fn a_failed_pairing_says_why_in_the_persons_language() {
    use qp_core::present::copy::Copy;
    let dir = tempfile::tempdir().unwrap();
    let core = phone_core(&dir);
    core.set_languages(vec!["de-DE".into()]);
    let kinds = [
        PairErrorKind::NotACode,
        PairErrorKind::NoServer,
        PairErrorKind::InvalidCode,
        PairErrorKind::TooManyAttempts,
        PairErrorKind::Unreachable,
        PairErrorKind::Refused,
        PairErrorKind::StorageFailed,
    ];
    let de = Copy::for_languages(&["de".to_string()]);
    let mut lines = Vec::new();
    for kind in kinds {
        let line = core.pair_failure(kind);
        assert_eq!(line, de.pair_failure(kind));
        assert_ne!(line, Copy::english().pair_failure(kind), "{kind:?}");
        assert_eq!(
            qp_ffi::pairing::pair_failure_line(kind, vec!["de".into()]),
            line
        );
        lines.push(line);
    }
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len(), kinds.len(), "one line per reason: {lines:?}");
    core.set_languages(vec!["ar".into()]);
    assert_eq!(
        core.pair_failure(PairErrorKind::Unreachable),
        qp_ffi::pairing::pair_failure_line(PairErrorKind::Unreachable, vec!["ar-EG".into()])
    );
    assert_ne!(
        core.pair_failure(PairErrorKind::Unreachable),
        de.pair_failure(PairErrorKind::Unreachable)
    );
}
