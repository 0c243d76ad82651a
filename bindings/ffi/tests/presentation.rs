//! Presentation through the facade, as Swift and Kotlin call it: the app's
//! options on the iOS content and the Android channel, the badge as the
//! pending count of a real store, a room's group summary, and the feed's
//! reply field under its new name.

use std::sync::Arc;

use qp_ffi::platform::decode_apns_payload;
use qp_ffi::present::*;
use qp_ffi::types::*;
use qp_ffi::{PhoneCore, TokenProvider};

fn apns(id: &str) -> String {
    format!(
        r#"{{"aps":{{"alert":{{"title":"Release Bot asks you","body":"Deploy?"}}}},
 "qp":{{"v":1,"id":"{id}","room":{{"code":"OPS123","name":"Ops"}},"asker":"Release Bot","prompt":"Deploy?",
 "context":null,"options":[{{"value":"approve","label":"Approve","style":"primary"}},{{"value":"deny","label":"Deny","style":"danger"}}],
 "text_input":{{"placeholder":null,"max_length":10}},"responder_scope":"direct","target_user_id":"u_1",
 "expires_at":"2099-06-27T11:30:00Z","created_at":"2026-06-27T10:30:00Z"}}}}"#
    )
}

struct Token;
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        None
    }
}

fn phone_core(dir: &tempfile::TempDir) -> Arc<PhoneCore> {
    PhoneCore::new(
        dir.path().join("shared.sqlite").display().to_string(),
        StoreMode::App,
        "http://127.0.0.1:9".into(),
        "u_1".into(),
        Arc::new(Token),
        vec!["de".into()],
        None,
        None,
    )
    .unwrap()
}

#[test]
fn the_badge_is_the_pending_count_of_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let core = phone_core(&dir);
    assert_eq!(core.badge_count().unwrap(), 0);
    core.receive_apns(apns("q_1")).unwrap();
    core.receive_apns(apns("q_2")).unwrap();
    assert_eq!(core.badge_count().unwrap(), 2);
    assert_eq!(
        core.ios_presentation(PresentOptions::default(), false)
            .badge,
        Some(2)
    );
    // An answer given here, even only queued (the server is a closed port),
    // is no longer waiting.
    core.answer_action("q_1".into(), "qp.v.approve".into(), None)
        .unwrap();
    assert_eq!(core.badge_count().unwrap(), 1);
    // Without a store there is nothing to count: the badge is left alone.
    assert_eq!(
        ios_presentation(PresentOptions::default(), false).badge,
        None
    );
    // The reply field crosses as `ReplyField` (SwiftUI owns `TextField`).
    let cell = core
        .feed()
        .unwrap()
        .into_iter()
        .find(|c| c.question_id == "q_2")
        .unwrap();
    let field: Option<ReplyField> = cell.text_field;
    assert_eq!(field.map(|f| f.max_length), Some(10));
}

#[test]
fn the_apps_options_reach_ios_content_and_the_android_channel() {
    let dir = tempfile::tempdir().unwrap();
    let core = phone_core(&dir);
    let DecodedPush::Question { question } = decode_apns_payload(apns("q_1")).unwrap() else {
        panic!("a question")
    };
    let opts = PresentOptions {
        require_unlock_for_danger: true,
        interruption_level: Some(InterruptionLevel::Active),
        sound: Some(NotificationSound::Named {
            name: "ping.caf".into(),
        }),
        channel_importance: Some(ChannelImportance::Low),
    };
    let n = core.ios_notification_with(question.clone(), opts.clone());
    assert!(
        n.category.actions[1].authentication_required,
        "danger needs the unlock"
    );
    let p = core.ios_presentation(opts.clone(), false);
    assert_eq!(p.interruption_level, InterruptionLevel::Active);
    assert_eq!(
        p.sound,
        NotificationSound::Named {
            name: "ping.caf".into()
        }
    );
    let quiet = core.ios_presentation(opts.clone(), true);
    assert_eq!(
        (quiet.interruption_level, quiet.sound),
        (InterruptionLevel::Passive, NotificationSound::Silent)
    );

    let channel = core.android_channel_with(opts.clone());
    assert_eq!(channel.importance, ChannelImportance::Low);
    assert_eq!(channel.name, "Fragen", "still in the person's language");
    let plain = android_channel_with(PresentOptions::default(), vec![]);
    assert_eq!(
        (plain.importance, plain.sound),
        (ChannelImportance::High, NotificationSound::Default)
    );
    let a = core.android_notification_with(question, chrono::Utc::now(), opts);
    assert!(a.actions.iter().any(|x| x.authentication_required));
}

#[test]
fn a_rooms_summary_counts_its_questions() {
    let s = android_group_summary(
        "qp.room.OPS123".into(),
        "Ops".into(),
        vec!["Deploy?".into(), "Merge?".into()],
    )
    .expect("a summary");
    assert_eq!(
        (s.group.as_str(), s.title.as_str(), s.number),
        ("qp.room.OPS123", "Ops", 2)
    );
    assert_ne!(
        s.notification_id,
        qp_ffi::platform::android_notification_id(s.tag.clone())
    );
    assert!(android_group_summary("qp.room.OPS123".into(), "Ops".into(), vec![]).is_none());
}
