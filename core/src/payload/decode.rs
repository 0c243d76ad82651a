//! Phone side: an APNs `userInfo` (as JSON) or an FCM data map to a
//! validated compact question or resolved notice. Never panics; every field
//! is a claim checked with the protocol's own rules.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::compact::{CompactQuestion, CompactRoom, ResolvedNotice, PAYLOAD_VERSION};
use super::{
    PayloadError, FCM_BODY_KEY, FCM_TITLE_KEY, MAX_DECODE_BYTES, QUESTION_KEY, RESOLVED_KEY,
    SEALED_KEY,
};
use crate::copy::Copy;
use crate::protocol::{identity, normalize_ask, time, AskContext};

/// What a push carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Push {
    Question(CompactQuestion),
    Resolved(ResolvedNotice),
}

/// Decodes an APNs payload (the notification's `userInfo` as JSON).
pub fn decode_apns(json: &str) -> Result<Push, PayloadError> {
    if json.len() > MAX_DECODE_BYTES {
        return Err(PayloadError::TooLarge(json.len()));
    }
    let v: Value = serde_json::from_str(json).map_err(|_| PayloadError::NotJson)?;
    let obj = v
        .as_object()
        .ok_or_else(|| PayloadError::NotAnObject("payload".into()))?;
    if let Some(q) = obj.get(QUESTION_KEY) {
        return decode_compact(q, QUESTION_KEY).map(Push::Question);
    }
    if let Some(r) = obj.get(RESOLVED_KEY) {
        return decode_resolved(r, RESOLVED_KEY).map(Push::Resolved);
    }
    if obj.contains_key(SEALED_KEY) {
        return Err(PayloadError::CannotOpen("this device has no key".into()));
    }
    Err(PayloadError::NotQuestionProtocol)
}

/// Decodes an FCM data message (`RemoteMessage.data`).
pub fn decode_fcm(data: &HashMap<String, String>) -> Result<Push, PayloadError> {
    let size = super::fcm_data_len(data);
    if size > MAX_DECODE_BYTES {
        return Err(PayloadError::TooLarge(size));
    }
    let kind = data
        .get("type")
        .ok_or_else(|| PayloadError::MissingKey("type".into()))?;
    let inner = || -> Result<Value, PayloadError> {
        let raw = data
            .get(QUESTION_KEY)
            .ok_or_else(|| PayloadError::MissingKey(QUESTION_KEY.into()))?;
        serde_json::from_str(raw).map_err(|_| PayloadError::NotJson)
    };
    match kind.as_str() {
        "question" => decode_compact(&inner()?, QUESTION_KEY).map(Push::Question),
        "resolved" => decode_resolved(&inner()?, QUESTION_KEY).map(Push::Resolved),
        "e2e" => Err(PayloadError::CannotOpen("this device has no key".into())),
        _ => Err(PayloadError::NotQuestionProtocol),
    }
}

/// What to show when a push cannot be decoded: a plain notification that
/// opens the app (which then syncs from the server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FallbackNotification {
    pub title: String,
    pub body: String,
}

/// The alert an APNs payload carries (`aps.alert`: its title, subtitle and
/// body, or a plain string as the body): the words iOS shows when the
/// extension does not replace them. Read for the fallback notification and
/// for a resolution this device does not hold; never trusted as a question.
/// All `None` when there is none, or the payload is not a JSON object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApnsAlert {
    pub title: Option<String>,
    pub subtitle: Option<String>,
    pub body: Option<String>,
}

/// The alert of an APNs payload (its `userInfo` as JSON); see [`ApnsAlert`].
pub fn apns_alert(json: &str) -> ApnsAlert {
    if json.len() > MAX_DECODE_BYTES {
        return ApnsAlert::default();
    }
    let Ok(v) = serde_json::from_str::<Value>(json) else {
        return ApnsAlert::default();
    };
    let text = |a: &Value, k: &str| a.get(k).and_then(Value::as_str).map(String::from);
    match v
        .get("aps")
        .filter(|a| a.is_object())
        .and_then(|a| a.get("alert"))
    {
        Some(alert @ Value::Object(_)) => ApnsAlert {
            title: text(alert, "title"),
            subtitle: text(alert, "subtitle"),
            body: text(alert, "body"),
        },
        Some(Value::String(body)) => ApnsAlert {
            body: Some(body.clone()),
            ..ApnsAlert::default()
        },
        _ => ApnsAlert::default(),
    }
}

/// A fallback notification, using the push's own title/body when they are
/// usable strings, else the generic copy.
pub fn fallback(title: Option<&str>, body: Option<&str>, copy: &Copy) -> FallbackNotification {
    let usable = |s: Option<&str>| {
        s.map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| super::budget::truncate_chars(s, 200))
    };
    FallbackNotification {
        title: usable(title).unwrap_or_else(|| copy.fallback_title()),
        body: usable(body).unwrap_or_else(|| copy.fallback_body()),
    }
}

/// [`fallback`] for an FCM data message: its own words, where it has them.
pub fn fcm_fallback(data: &HashMap<String, String>, copy: &Copy) -> FallbackNotification {
    fallback(
        data.get(FCM_TITLE_KEY).map(String::as_str),
        data.get(FCM_BODY_KEY).map(String::as_str),
        copy,
    )
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, PayloadError> {
    v.as_object()
        .ok_or_else(|| PayloadError::NotAnObject(path.to_string()))
}

fn get<'a>(obj: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a Value, PayloadError> {
    obj.get(key)
        .ok_or_else(|| PayloadError::MissingKey(format!("{path}.{key}")))
}

fn string<'a>(obj: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a str, PayloadError> {
    get(obj, key, path)?
        .as_str()
        .ok_or_else(|| PayloadError::WrongType {
            field: format!("{path}.{key}"),
            expected: "a string".into(),
        })
}

fn invalid(field: String, message: impl Into<String>) -> PayloadError {
    PayloadError::Invalid {
        field,
        message: message.into(),
    }
}

/// A question id is used in notification identifiers (the identity rule).
fn check_id(id: &str, field: String) -> Result<(), PayloadError> {
    identity::check_id(id).map_err(|e| invalid(field, e.to_string()))
}

fn check_version(obj: &Map<String, Value>, path: &str) -> Result<(), PayloadError> {
    let v = get(obj, "v", path)?
        .as_i64()
        .ok_or_else(|| PayloadError::WrongType {
            field: format!("{path}.v"),
            expected: "an integer".into(),
        })?;
    if v != PAYLOAD_VERSION {
        return Err(PayloadError::UnsupportedVersion(v));
    }
    Ok(())
}

fn display_name(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String, PayloadError> {
    let s = string(obj, key, path)?;
    identity::check_display_name(s).map_err(|e| invalid(format!("{path}.{key}"), e.to_string()))?;
    Ok(s.to_string())
}

fn timestamp(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<chrono::DateTime<chrono::Utc>, PayloadError> {
    time::parse(string(obj, key, path)?)
        .map_err(|_| invalid(format!("{path}.{key}"), "must be an RFC 3339 timestamp"))
}

fn decode_compact(v: &Value, path: &str) -> Result<CompactQuestion, PayloadError> {
    let obj = object(v, path)?;
    check_version(obj, path)?;
    let id = string(obj, "id", path)?;
    check_id(id, format!("{path}.id"))?;
    let room_path = format!("{path}.room");
    let room = object(get(obj, "room", path)?, &room_path)?;
    let code = string(room, "code", &room_path)?;
    identity::check_room_code(code)
        .map_err(|e| invalid(format!("{room_path}.code"), e.to_string()))?;
    let room_name = display_name(room, "name", &room_path)?;
    let asker = display_name(obj, "asker", path)?;
    let expires_at = timestamp(obj, "expires_at", path)?;
    let created_at = timestamp(obj, "created_at", path)?;

    // The displayed and answerable parts are judged by the protocol's own
    // ask rules, so a phone accepts exactly what a server may send.
    let options = get(obj, "options", path)?;
    let has_text = obj.get("text_input").is_some_and(|t| !t.is_null());
    if options.as_array().is_some_and(|a| a.is_empty()) && !has_text {
        return Err(invalid(
            format!("{path}.options"),
            "a question needs options or a text input",
        ));
    }
    let mut ask = json!({
        "prompt": get(obj, "prompt", path)?,
        "options": options,
        "responder_scope": get(obj, "responder_scope", path)?,
    });
    for key in ["context", "text_input", "target_user_id"] {
        if let Some(x) = obj.get(key) {
            ask[key] = x.clone();
        }
    }
    let ctx = AskContext {
        now: created_at,
        default_target_user_id: None,
    };
    let n = normalize_ask(&ask, &ctx).map_err(|e| PayloadError::Invalid {
        field: format!("{path}.{}", e.field),
        message: e.message,
    })?;
    // A consent's parts become the sentence the person reads: judged as
    // the server's rule makes them.
    let consent = match obj.get("consent").filter(|c| !c.is_null()) {
        None => None,
        Some(c) => {
            let c: crate::protocol::ConsentRequest = serde_json::from_value(c.clone())
                .map_err(|e| invalid(format!("{path}.consent"), e.to_string()))?;
            crate::protocol::client_text::check_consent(&c)
                .map_err(|e| invalid(format!("{path}.consent"), e))?;
            Some(c)
        }
    };
    Ok(CompactQuestion {
        v: PAYLOAD_VERSION,
        id: id.to_string(),
        room: CompactRoom {
            code: code.to_string(),
            name: room_name,
        },
        asker,
        prompt: n.prompt,
        context: n.context,
        options: n.options.into_iter().map(Into::into).collect(),
        text_input: n.text_input,
        responder_scope: n.responder_scope,
        target_user_id: n.target_user_id,
        expires_at,
        created_at,
        consent,
    })
}

fn decode_resolved(v: &Value, path: &str) -> Result<ResolvedNotice, PayloadError> {
    let obj = object(v, path)?;
    check_version(obj, path)?;
    check_id(string(obj, "id", path)?, format!("{path}.id"))?;
    let notice: ResolvedNotice =
        serde_json::from_value(v.clone()).map_err(|e| invalid(path.to_string(), e.to_string()))?;
    if !notice.state.is_terminal() {
        return Err(invalid(
            format!("{path}.state"),
            "must be answered, expired or cancelled",
        ));
    }
    Ok(notice)
}
