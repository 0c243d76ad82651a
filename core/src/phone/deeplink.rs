//! Which question a notification is about, for a tap that opens the app:
//! the deep link. Read from what the notification carries, without
//! decoding, opening or recording anything (a tap on a fallback or a
//! resolution, or on a push this phone could not open, still names its
//! question). The id is only a claim of the push: it says where to open
//! the app, never what to answer.
//!
//! Also, from the same userInfo, what a notification on screen is to this
//! library (ours or not, a question or a resolution: reconciliation and
//! sign-out), and the keys the glue gives the notifications it posts, so
//! that no platform code reads or writes a `qp` key itself.

use std::collections::HashMap;

use serde_json::Value;

use crate::payload::{QUESTION_KEY, RESOLVED_KEY, SEALED_KEY};
use crate::protocol::identity::check_id;

/// The userInfo key of a question notification the glue posted itself
/// (reconciliation, a missed question); its value is the question's id.
pub const POSTED_QUESTION_KEY: &str = "qp_question_id";
/// The same for a resolution the glue posted in its question's place.
pub const POSTED_RESOLUTION_KEY: &str = "qp_resolved_id";

/// What a notification on screen is to this library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownNotification {
    /// The question it names, when it names one (a push too broken to
    /// name one is still this library's: sign-out removes it).
    pub question_id: Option<String>,
    /// A resolution (pushed or posted) rather than a question with its
    /// buttons.
    pub resolution: bool,
}

/// Whether a notification on screen is this library's, and which kind,
/// from its `userInfo` as JSON: any `qp` or `qp_…` key makes it ours (a
/// push as it came, as the extension showed it with the push's userInfo
/// kept, sealed or plain, its fallback, or one the glue posted). A
/// resolution is one with `qp_resolved`, the glue's resolution key, or a
/// sealed envelope of kind `resolved`. `None`: not ours (or not JSON).
pub fn shown_notification(user_info_json: &str) -> Option<ShownNotification> {
    if user_info_json.len() > crate::payload::MAX_DECODE_BYTES {
        return None;
    }
    let v: Value = serde_json::from_str(user_info_json).ok()?;
    let obj = v.as_object()?;
    if !is_library_notification(obj.keys().map(String::as_str)) {
        return None;
    }
    let sealed_resolution = obj
        .get(SEALED_KEY)
        .and_then(|e| e.get("kind"))
        .and_then(Value::as_str)
        == Some("resolved");
    Some(ShownNotification {
        question_id: question_id_of_notification(user_info_json),
        resolution: sealed_resolution
            || obj.contains_key(RESOLVED_KEY)
            || obj.contains_key(POSTED_RESOLUTION_KEY),
    })
}

/// Whether a notification is this library's, by its `userInfo`'s keys alone
/// (a `qp` or `qp_…` key): what sign-out removes, decided without reading a
/// value, so that no userInfo the glue cannot turn into JSON, and no size,
/// keeps one of ours on screen.
pub fn is_library_notification<'a>(keys: impl IntoIterator<Item = &'a str>) -> bool {
    keys.into_iter()
        .any(|k| k == QUESTION_KEY || k.starts_with("qp_"))
}

/// The `userInfo` the glue gives a notification it posts itself, so that
/// [`shown_notification`] and [`question_id_of_notification`] know it.
pub fn posted_user_info(question_id: &str, resolution: bool) -> HashMap<String, String> {
    let key = if resolution {
        POSTED_RESOLUTION_KEY
    } else {
        POSTED_QUESTION_KEY
    };
    HashMap::from([(key.to_string(), question_id.to_string())])
}

/// The id, when it is one (the protocol's id rule).
fn id_of(v: Option<&Value>) -> Option<String> {
    let id = v?.as_str()?;
    check_id(id).ok()?;
    Some(id.to_string())
}

/// The question an iOS notification is about, from its `userInfo` as JSON:
/// a question push (`qp.id`), a resolution (`qp_resolved.id`), a sealed
/// push (`qp_e2e.id`, in clear), or a notification this library posted
/// itself (`qp_question_id`, `qp_resolved_id`). `None` when it names none
/// (not ours, or not readable).
pub fn question_id_of_notification(user_info_json: &str) -> Option<String> {
    if user_info_json.len() > crate::payload::MAX_DECODE_BYTES {
        return None;
    }
    let v: Value = serde_json::from_str(user_info_json).ok()?;
    let obj = v.as_object()?;
    [QUESTION_KEY, RESOLVED_KEY, SEALED_KEY]
        .iter()
        .find_map(|k| id_of(obj.get(*k).and_then(|o| o.get("id"))))
        .or_else(|| id_of(obj.get(POSTED_QUESTION_KEY)))
        .or_else(|| id_of(obj.get(POSTED_RESOLUTION_KEY)))
}

/// The question an FCM data message is about (`qp`'s or `qp_e2e`'s `id`,
/// both JSON text), as [`question_id_of_notification`].
pub fn question_id_of_fcm(data: &HashMap<String, String>) -> Option<String> {
    [QUESTION_KEY, SEALED_KEY].iter().find_map(|k| {
        let raw = data.get(*k)?;
        if raw.len() > crate::payload::MAX_DECODE_BYTES {
            return None;
        }
        let v: Value = serde_json::from_str(raw).ok()?;
        id_of(v.get("id"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which notifications on screen are ours and which are resolutions:
    /// a sealed question shown by the extension (its push's userInfo kept)
    /// is a question on screen like a plain one.
    #[test]
    fn a_notification_on_screen_is_ours_and_a_question_or_a_resolution() {
        let question = |id: Option<&str>| {
            Some(ShownNotification {
                question_id: id.map(str::to_string),
                resolution: false,
            })
        };
        let resolution = |id: &str| {
            Some(ShownNotification {
                question_id: Some(id.to_string()),
                resolution: true,
            })
        };
        let posted = |id: &str, r: bool| serde_json::to_string(&posted_user_info(id, r)).unwrap();
        let cases = [
            (r#"{"aps":{},"qp":{"id":"q_1"}}"#.to_string(), question(Some("q_1"))),
            (
                r#"{"aps":{},"qp_e2e":{"v":1,"kind":"question","id":"q_2","device":"d","enc":"x","ct":"y"}}"#.into(),
                question(Some("q_2")),
            ),
            (
                r#"{"aps":{},"qp_e2e":{"v":1,"kind":"resolved","id":"q_3","device":"d","enc":"x","ct":"y"}}"#.into(),
                resolution("q_3"),
            ),
            (
                r#"{"aps":{},"qp_resolved":{"id":"q_4","state":"answered"}}"#.into(),
                resolution("q_4"),
            ),
            (posted("q_5", false), question(Some("q_5"))),
            (posted("q_6", true), resolution("q_6")),
            // Ours though it names nothing readable (sign-out removes it).
            (r#"{"qp":"{}"}"#.into(), question(None)),
            // Not ours.
            (r#"{"aps":{"alert":"hi"},"chat":"1"}"#.into(), None),
            (r#"{"qpx":1}"#.into(), None),
            ("not json".into(), None),
        ];
        for (json, want) in cases {
            assert_eq!(shown_notification(&json), want, "{json}");
        }
        // By keys alone, whatever the values.
        assert!(is_library_notification(["aps", "qp_e2e"]));
        assert!(is_library_notification(["qp"]));
        assert!(!is_library_notification(["aps", "qpx", "chat"]));
    }

    #[test]
    fn every_kind_of_notification_names_its_question() {
        let cases = [
            (r#"{"aps":{},"qp":{"id":"q_1"}}"#, Some("q_1")),
            (
                r#"{"aps":{},"qp_resolved":{"id":"q_2","state":"answered"}}"#,
                Some("q_2"),
            ),
            (
                r#"{"aps":{},"qp_e2e":{"v":1,"kind":"question","id":"q_3","device":"d","enc":"x","ct":"y"}}"#,
                Some("q_3"),
            ),
            (r#"{"qp_question_id":"q_4"}"#, Some("q_4")),
            (r#"{"qp_resolved_id":"q_5"}"#, Some("q_5")),
            // Not ours, not an id, not JSON: none (never a panic).
            (r#"{"aps":{"alert":"hi"}}"#, None),
            (r#"{"qp":{"id":"../../etc"}}"#, None),
            (r#"{"qp":{"id":7}}"#, None),
            (r#"{"qp":"q_1"}"#, None),
            ("[1,2]", None),
            ("not json", None),
            ("", None),
        ];
        for (json, want) in cases {
            assert_eq!(question_id_of_notification(json).as_deref(), want, "{json}");
        }
        let fcm = |k: &str, v: &str| HashMap::from([(k.to_string(), v.to_string())]);
        assert_eq!(
            question_id_of_fcm(&fcm("qp", r#"{"id":"q_6"}"#)).as_deref(),
            Some("q_6")
        );
        assert_eq!(
            question_id_of_fcm(&fcm("qp_e2e", r#"{"id":"q_7","kind":"question"}"#)).as_deref(),
            Some("q_7")
        );
        assert_eq!(question_id_of_fcm(&fcm("qp", "{")), None);
        assert_eq!(question_id_of_fcm(&fcm("title", "x")), None);
        let huge = format!(r#"{{"qp":{{"id":"q_1","pad":"{}"}}}}"#, "x".repeat(20_000));
        assert_eq!(question_id_of_notification(&huge), None);
    }
}
