//! Localization: the asker's own text (prompt, context, labels, placeholder)
//! reaches the person unchanged in every bundled language, and sentences of
//! right-to-left languages isolate the names and labels embedded in them.

use chrono::{TimeZone, Utc};
use qp_core::payload::{decode_apns, encode_apns_question, Push};
use qp_core::present::android::android_notification;
use qp_core::present::copy::{available_languages, Copy};
use qp_core::present::ios::ios_notification;
use qp_core::present::PresentOptions;
use qp_core::protocol::{normalize_ask, AskContext, Asker, RoomRef};
use serde_json::json;

const PROMPT: &str = "Déployer v1.4 — שחרור? 🚀";
const CONTEXT: &str = "Build #4821 (مراجعة)";
const LABELS: [&str; 2] = ["Approve ✓", "Отклонить"];
const PLACEHOLDER: &str = "raison / סיבה";

#[test]
fn the_askers_text_is_never_translated_or_altered() {
    let now = Utc.with_ymd_and_hms(2026, 6, 27, 10, 30, 0).unwrap();
    let ask = normalize_ask(
        &json!({
            "prompt": PROMPT, "context": CONTEXT,
            "options": [{"value": "a", "label": LABELS[0]}, {"value": "b", "label": LABELS[1]}],
            "text_input": {"placeholder": PLACEHOLDER, "max_length": 40}
        }),
        &AskContext {
            now,
            default_target_user_id: Some("u_1".into()),
        },
    )
    .unwrap();
    let mut q = ask.into_question("q_i18n".into(), now);
    q.room = Some(RoomRef {
        code: "OPS123".into(),
        name: "Ops".into(),
    });
    q.asker = Some(Asker {
        kind: "agent".into(),
        id: "a_1".into(),
        handle: None,
        display_name: "Release Bot".into(),
    });
    let languages = available_languages();
    assert!(languages.len() >= 10, "{languages:?}");
    for lang in languages {
        let copy = Copy::for_languages(&[lang]);
        assert_eq!(copy.language(), lang);
        let payload = encode_apns_question(&q, &copy).unwrap().json;
        let Ok(Push::Question(cq)) = decode_apns(&payload) else {
            panic!("{lang}")
        };
        let ios = ios_notification(&cq, &PresentOptions::default(), &copy);
        assert_eq!(ios.body, PROMPT, "{lang}");
        assert_eq!(ios.subtitle.as_deref(), Some(CONTEXT), "{lang}");
        let titles: Vec<_> = ios
            .category
            .actions
            .iter()
            .map(|a| a.title.as_str())
            .collect();
        assert_eq!(titles, LABELS, "{lang}");
        assert_eq!(
            ios.category.text_action.as_ref().unwrap().placeholder,
            PLACEHOLDER,
            "{lang}"
        );
        let android = android_notification(&cq, now, &PresentOptions::default(), &copy);
        assert_eq!(android.text, PROMPT, "{lang}");
        assert_eq!(android.actions[0].title, LABELS[0], "{lang}");
        assert_eq!(android.actions[1].title, LABELS[1], "{lang}");
        // The push's visible alert is localized around the asker's text.
        let v: serde_json::Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(v["aps"]["alert"]["body"], PROMPT, "{lang}");
        assert!(
            v["aps"]["alert"]["title"]
                .as_str()
                .unwrap()
                .contains("Release Bot"),
            "{lang}"
        );
        if copy.is_rtl() {
            assert!(
                ios.title.contains("\u{2068}Release Bot\u{2069}"),
                "{lang}: the name is isolated in {:?}",
                ios.title
            );
        }
    }
}

#[test]
fn rtl_sentences_isolate_names_and_labels() {
    for lang in ["ar", "he"] {
        let copy = Copy::for_languages(&[lang]);
        assert!(copy.is_rtl());
        let embedded = copy.embed("Approve");
        assert_eq!(embedded, "\u{2068}Approve\u{2069}");
        // Isolates only wrap: the text inside is the asker's, unchanged.
        assert_eq!(embedded.trim_matches(['\u{2068}', '\u{2069}']), "Approve");
    }
    // In a left-to-right language only right-to-left text is isolated.
    let en = Copy::english();
    assert_eq!(en.embed("Approve"), "Approve");
    assert_eq!(en.embed("אשר"), "\u{2068}אשר\u{2069}");
}
