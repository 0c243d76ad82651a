//! Which question a notification is about, for a tap that opens the app:
//! the deep link. Read from what the notification carries, without
//! decoding, opening or recording anything (a tap on a fallback or a
//! resolution, or on a push this phone could not open, still names its
//! question). The id is only a claim of the push: it says where to open
//! the app, never what to answer.

use std::collections::HashMap;

use serde_json::Value;

use crate::payload::{QUESTION_KEY, RESOLVED_KEY, SEALED_KEY};
use crate::protocol::identity::check_id;

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
        .or_else(|| id_of(obj.get("qp_question_id")))
        .or_else(|| id_of(obj.get("qp_resolved_id")))
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
