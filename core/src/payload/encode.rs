//! Server side: a Question to an APNs payload or an FCM data message, within
//! the 4096-byte limit.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::budget::shrink_to_fit;
use super::compact::{CompactQuestion, ResolvedNotice};
#[cfg(feature = "e2e")]
use super::SEALED_KEY;
use super::{PayloadError, MAX_PAYLOAD_BYTES};
use super::{FCM_BODY_KEY, FCM_TITLE_KEY, QUESTION_KEY, RESOLVED_KEY};
use crate::actions::category_id;
use crate::copy::Copy;
use crate::protocol::Question;

/// What the encoder did to fit the budget.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodeReport {
    /// The encoded size in bytes (APNs: the JSON; FCM: keys plus values).
    pub bytes: usize,
    /// Fields left out entirely (`data`, which stays on the server).
    pub omitted: Vec<String>,
    /// Display fields that were shortened, in the order they were shortened.
    pub shortened: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedApns {
    /// The JSON body to POST to APNs.
    pub json: String,
    pub report: EncodeReport,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedFcm {
    /// The `data` map of an FCM HTTP v1 message (string values only).
    pub data: BTreeMap<String, String>,
    pub report: EncodeReport,
}

/// The push being assembled: the compact question and the visible alert body.
#[derive(Clone)]
struct Draft {
    cq: CompactQuestion,
    body: String,
}

/// Display fields in the order they are shortened. Ids, option values and
/// the text input's presence are never touched.
#[derive(Clone, Copy, Debug)]
enum Field {
    Body,
    Prompt,
    Context,
    RoomName,
    Asker,
    Placeholder,
    Label(usize),
}

impl Field {
    fn name(self, body_name: &str) -> String {
        match self {
            Field::Body => body_name.to_string(),
            Field::Prompt => "qp.prompt".into(),
            Field::Context => "qp.context".into(),
            Field::RoomName => "qp.room.name".into(),
            Field::Asker => "qp.asker".into(),
            Field::Placeholder => "qp.text_input.placeholder".into(),
            Field::Label(i) => format!("qp.options[{i}].label"),
        }
    }

    fn get(self, d: &Draft) -> Option<String> {
        match self {
            Field::Body => Some(d.body.clone()),
            Field::Prompt => Some(d.cq.prompt.clone()),
            Field::Context => d.cq.context.clone(),
            Field::RoomName => Some(d.cq.room.name.clone()),
            Field::Asker => Some(d.cq.asker.clone()),
            Field::Placeholder => d.cq.text_input.as_ref().and_then(|t| t.placeholder.clone()),
            Field::Label(i) => d.cq.options.get(i).map(|o| o.label.clone()),
        }
    }

    fn set(self, d: &mut Draft, v: String) {
        match self {
            Field::Body => d.body = v,
            Field::Prompt => d.cq.prompt = v,
            Field::Context => d.cq.context = Some(v),
            Field::RoomName => d.cq.room.name = v,
            Field::Asker => d.cq.asker = v,
            Field::Placeholder => {
                if let Some(t) = d.cq.text_input.as_mut() {
                    t.placeholder = Some(v)
                }
            }
            Field::Label(i) => {
                if let Some(o) = d.cq.options.get_mut(i) {
                    o.label = v
                }
            }
        }
    }
}

/// Shortens fields of `d` in order until `size(d) <= MAX_PAYLOAD_BYTES`.
fn fit(
    mut d: Draft,
    body_name: &str,
    size: impl Fn(&Draft) -> usize,
) -> Result<(Draft, Vec<String>), PayloadError> {
    let mut shortened = Vec::new();
    if size(&d) <= MAX_PAYLOAD_BYTES {
        return Ok((d, shortened));
    }
    let mut order = vec![
        Field::Body,
        Field::Prompt,
        Field::Context,
        Field::RoomName,
        Field::Asker,
        Field::Placeholder,
    ];
    let mut labels: Vec<usize> = (0..d.cq.options.len()).collect();
    labels.sort_by_key(|i| std::cmp::Reverse(d.cq.options[*i].label.len()));
    order.extend(labels.into_iter().map(Field::Label));
    for field in order {
        let Some(original) = field.get(&d) else {
            continue;
        };
        let fitted = shrink_to_fit(&original, |candidate| {
            let mut probe = d.clone();
            field.set(&mut probe, candidate.to_string());
            size(&probe) <= MAX_PAYLOAD_BYTES
        });
        match fitted {
            Some(text) => {
                if text != original {
                    shortened.push(field.name(body_name));
                }
                field.set(&mut d, text);
                return Ok((d, shortened));
            }
            None => {
                field.set(&mut d, super::budget::truncate_chars(&original, 0));
                shortened.push(field.name(body_name));
            }
        }
    }
    if size(&d) <= MAX_PAYLOAD_BYTES {
        Ok((d, shortened))
    } else {
        Err(PayloadError::Invalid {
            field: "question".into(),
            message: format!("cannot fit in {MAX_PAYLOAD_BYTES} bytes"),
        })
    }
}

fn draft(q: &Question) -> Result<Draft, PayloadError> {
    let cq = CompactQuestion::from_question(q);
    if cq.room.code.is_empty() {
        return Err(PayloadError::MissingKey("question.room".into()));
    }
    Ok(Draft {
        body: cq.prompt.clone(),
        cq,
    })
}

fn omitted(q: &Question) -> Vec<String> {
    if q.data.is_some() {
        vec!["data".to_string()]
    } else {
        Vec::new()
    }
}

/// The visible alert's title, body and subtitle: the question's words, or a
/// sign-in consent's in the device's language (the compact question the
/// push carries keeps the server's words, which the phone compares with
/// the server's question before it answers).
fn alert_words(d: &Draft, copy: &Copy) -> (String, String, Option<String>) {
    if d.cq.consent.is_none() {
        let title = copy.title(d.cq.responder_scope, &d.cq.asker);
        return (title, d.body.clone(), d.cq.context.clone());
    }
    let shown = d.cq.localized(copy);
    let title = copy.title(shown.responder_scope, &shown.asker);
    (title, shown.prompt, shown.context)
}

fn apns_value(d: &Draft, copy: &Copy) -> Value {
    let (title, body, subtitle) = alert_words(d, copy);
    let mut alert = json!({
        "title": title,
        "body": body,
    });
    if let Some(c) = subtitle {
        alert["subtitle"] = json!(c);
    }
    json!({
        "aps": {
            "alert": alert,
            "category": category_id(&d.cq.id),
            "mutable-content": 1,
            "thread-id": format!("qp.room.{}", d.cq.room.code),
            "interruption-level": "time-sensitive",
            "sound": "default",
        },
        QUESTION_KEY: d.cq,
    })
}

fn json_len(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// The APNs payload of a new question (a visible alert the Notification
/// Service Extension completes).
pub fn encode_apns_question(q: &Question, copy: &Copy) -> Result<EncodedApns, PayloadError> {
    apns_question_within(q, copy, |n| n)
}

/// The question's APNs payload, shortened until `outer(its length)` fits
/// the budget (`outer` is the identity for a plain push, and the sealed
/// envelope's size for an encrypted one).
fn apns_question_within(
    q: &Question,
    copy: &Copy,
    outer: impl Fn(usize) -> usize,
) -> Result<EncodedApns, PayloadError> {
    let (d, shortened) = fit(draft(q)?, "aps.alert.body", |d| {
        outer(json_len(&apns_value(d, copy)))
    })?;
    let json = serde_json::to_string(&apns_value(&d, copy)).map_err(|_| PayloadError::NotJson)?;
    Ok(EncodedApns {
        report: EncodeReport {
            bytes: json.len(),
            omitted: omitted(q),
            shortened,
        },
        json,
    })
}

fn fcm_data(d: &Draft, copy: &Copy) -> BTreeMap<String, String> {
    let (title, body, _) = alert_words(d, copy);
    BTreeMap::from([
        ("type".to_string(), "question".to_string()),
        (
            QUESTION_KEY.to_string(),
            serde_json::to_string(&d.cq).unwrap_or_default(),
        ),
        (FCM_TITLE_KEY.to_string(), title),
        (FCM_BODY_KEY.to_string(), body),
    ])
}

/// FCM counts the data payload as its keys plus values.
fn data_len(data: &BTreeMap<String, String>) -> usize {
    super::fcm_data_len(data)
}

/// The FCM data-only message of a new question.
pub fn encode_fcm_question(q: &Question, copy: &Copy) -> Result<EncodedFcm, PayloadError> {
    let (d, shortened) = fit(draft(q)?, "body", |d| data_len(&fcm_data(d, copy)))?;
    let data = fcm_data(&d, copy);
    Ok(EncodedFcm {
        report: EncodeReport {
            bytes: data_len(&data),
            omitted: omitted(q),
            shortened,
        },
        data,
    })
}

/// The APNs push of a resolution: an alert that replaces the question's
/// notification in place (the transport sends it with the question's
/// `apns-collapse-id`), quietly (`passive`, no sound, no category, so no
/// buttons), with `mutable-content` so the extension records the resolution
/// and words it in the person's current language. A silent
/// (`content-available`) push would not do: it never reaches the extension,
/// is throttled, and is not delivered at all to an app the person
/// force-quit. The alert is already the resolved copy in the device's
/// language (`copy`), for `me` (the device's user: "by you"), so it reads
/// right even when the extension cannot run. Shortened to fit 4 KB: the
/// body (the prompt) first, then the subtitle.
pub fn encode_apns_resolved(q: &Question, copy: &Copy, me: Option<&str>) -> EncodedApns {
    apns_resolved_within(q, copy, me, |n| n)
}

/// The alert of a resolved question, as the APNs push carries it and the
/// phone shows it in place of the question's own notification
/// (`present::ios::ios_resolved_notification` is built from it, so the two
/// never differ). `None` while the question is pending; `me` is the user
/// whose phone shows it ("by you").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedAlert {
    /// The question's title, as it was shown ("Release Bot asks").
    pub title: String,
    /// What became of it: "Federica answered: Approve".
    pub subtitle: String,
    /// The prompt.
    pub body: String,
    pub thread_id: String,
}

pub(crate) fn resolved_alert(q: &Question, me: Option<&str>, copy: &Copy) -> Option<ResolvedAlert> {
    let subtitle = copy.resolution(q, me)?;
    let asker = q
        .asker
        .as_ref()
        .map(|a| a.display_name.as_str())
        .unwrap_or("");
    let room = q.room.as_ref().map(|r| r.code.as_str()).unwrap_or("");
    // A sign-in consent reads in the device's language.
    let room_name = q.room.as_ref().map(|r| r.name.as_str()).unwrap_or("");
    let consent = q.consent.as_ref().map(|c| copy.consent(c, room_name));
    Some(ResolvedAlert {
        title: copy.title(
            q.responder_scope,
            consent.as_ref().map_or(asker, |w| w.asker.as_str()),
        ),
        subtitle,
        body: consent.map_or_else(|| q.prompt.clone(), |w| w.prompt),
        thread_id: format!("qp.room.{room}"),
    })
}

fn apns_resolved_within(
    q: &Question,
    copy: &Copy,
    me: Option<&str>,
    outer: impl Fn(usize) -> usize,
) -> EncodedApns {
    let notice = ResolvedNotice::from_question(q);
    let shown = resolved_alert(q, me, copy);
    let (title, subtitle, body, thread) = match shown {
        Some(n) => (n.title, n.subtitle, n.body, n.thread_id),
        // A pending question is not resolved; never sent, but well-formed.
        None => (
            String::new(),
            String::new(),
            q.prompt.clone(),
            String::new(),
        ),
    };
    let value = |title: &str, subtitle: &str, body: &str| {
        json!({
            "aps": {
                "alert": { "title": title, "subtitle": subtitle, "body": body },
                "mutable-content": 1,
                "thread-id": thread,
                "interruption-level": "passive",
            },
            RESOLVED_KEY: notice,
        })
    };
    let fits = |t: &str, s: &str, b: &str| outer(json_len(&value(t, s, b))) <= MAX_PAYLOAD_BYTES;
    let mut shortened = Vec::new();
    // [title, subtitle, body], shortened body first.
    let mut texts = [title, subtitle, body];
    for (i, name) in [
        (2, "aps.alert.body"),
        (1, "aps.alert.subtitle"),
        (0, "aps.alert.title"),
    ] {
        if fits(&texts[0], &texts[1], &texts[2]) {
            break;
        }
        let fitted = shrink_to_fit(&texts[i], |candidate| {
            let mut probe = texts.clone();
            probe[i] = candidate.to_string();
            fits(&probe[0], &probe[1], &probe[2])
        });
        texts[i] = fitted.unwrap_or_default();
        shortened.push(name.to_string());
    }
    let [title, subtitle, body] = texts;
    let json = serde_json::to_string(&value(&title, &subtitle, &body)).unwrap_or_default();
    EncodedApns {
        report: EncodeReport {
            bytes: json.len(),
            omitted: omitted(q),
            shortened,
        },
        json,
    }
}

/// The FCM data message of a resolution.
pub fn encode_fcm_resolved(q: &Question) -> EncodedFcm {
    let data = BTreeMap::from([
        ("type".to_string(), "resolved".to_string()),
        (
            QUESTION_KEY.to_string(),
            serde_json::to_string(&ResolvedNotice::from_question(q)).unwrap_or_default(),
        ),
    ]);
    EncodedFcm {
        report: EncodeReport {
            bytes: data_len(&data),
            omitted: omitted(q),
            shortened: Vec::new(),
        },
        data,
    }
}

// ---- end-to-end encrypted pushes ----

/// The device a sealed payload is for.
#[cfg(feature = "e2e")]
pub struct Recipient<'a> {
    pub device_id: &'a str,
    pub key: &'a crate::e2e::DevicePublicKey,
}

/// The sealed envelope: who and what it is for in clear (the question id is
/// also the APNs collapse id), the rest opaque. `kind` is `question` or
/// `resolved`.
#[cfg(feature = "e2e")]
fn envelope(kind: &str, question_id: &str, device_id: &str, enc: &str, ct: &str) -> Value {
    json!({
        "v": crate::e2e::SEALED_VERSION, "kind": kind, "id": question_id,
        "device": device_id, "enc": enc, "ct": ct,
    })
}

/// What the gateway carries for a sealed payload: only generic words (in
/// the device's language) and the envelope. `passive` for a resolution.
#[cfg(feature = "e2e")]
fn sealed_apns_value(env: Value, passive: bool, copy: &Copy) -> Value {
    let mut aps = json!({
        "alert": { "title": copy.fallback_title(), "body": copy.fallback_body() },
        "mutable-content": 1,
        "interruption-level": if passive { "passive" } else { "time-sensitive" },
    });
    if !passive {
        aps["sound"] = json!("default");
    }
    json!({ "aps": aps, SEALED_KEY: env })
}

#[cfg(feature = "e2e")]
fn sealed_fcm_data(env: &Value, copy: &Copy) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("type".to_string(), "e2e".to_string()),
        (SEALED_KEY.to_string(), env.to_string()),
        (FCM_TITLE_KEY.to_string(), copy.fallback_title()),
        (FCM_BODY_KEY.to_string(), copy.fallback_body()),
    ])
}

/// The size of the gateway payload that seals `plaintext_len` bytes
/// (exact: base64 lengths are known before sealing).
#[cfg(feature = "e2e")]
fn sealed_len(
    kind: &str,
    question_id: &str,
    to: &Recipient<'_>,
    passive: bool,
    fcm: bool,
    copy: &Copy,
    plaintext_len: usize,
) -> usize {
    let enc = "A".repeat(crate::e2e::ENC_B64_LEN);
    let ct = "A".repeat(crate::e2e::sealed_b64_len(plaintext_len));
    let env = envelope(kind, question_id, to.device_id, &enc, &ct);
    if fcm {
        data_len(&sealed_fcm_data(&env, copy))
    } else {
        json_len(&sealed_apns_value(env, passive, copy))
    }
}

/// Seals `inner` (a plain APNs payload: the phone decodes what it opens
/// exactly as a plain push, so both present the same notification).
#[cfg(feature = "e2e")]
fn seal(
    kind: &str,
    question_id: &str,
    to: &Recipient<'_>,
    inner: &str,
) -> Result<Value, PayloadError> {
    let aad = crate::e2e::aad(kind, question_id, to.device_id);
    let (enc, ct) = to
        .key
        .seal(inner.as_bytes(), &aad)
        .map_err(|e| PayloadError::Invalid {
            field: SEALED_KEY.into(),
            message: e.to_string(),
        })?;
    Ok(envelope(kind, question_id, to.device_id, &enc, &ct))
}

/// A sealed question: `(gateway payload, report)`. The plaintext is the
/// question's plain APNs payload, shortened by the same rules until the
/// sealed payload fits 4 KB.
#[cfg(feature = "e2e")]
fn sealed_question(
    q: &Question,
    copy: &Copy,
    to: &Recipient<'_>,
    fcm: bool,
) -> Result<(Value, EncodeReport), PayloadError> {
    let inner = apns_question_within(q, copy, |n| {
        sealed_len("question", &q.id, to, false, fcm, copy, n)
    })?;
    Ok((seal("question", &q.id, to, &inner.json)?, inner.report))
}

#[cfg(feature = "e2e")]
fn sealed_resolved(
    q: &Question,
    copy: &Copy,
    me: Option<&str>,
    to: &Recipient<'_>,
    fcm: bool,
) -> Result<(Value, EncodeReport), PayloadError> {
    let inner = apns_resolved_within(q, copy, me, |n| {
        sealed_len("resolved", &q.id, to, true, fcm, copy, n)
    });
    Ok((seal("resolved", &q.id, to, &inner.json)?, inner.report))
}

/// The APNs payload of a question sealed to one device.
#[cfg(feature = "e2e")]
pub fn encode_apns_question_sealed(
    q: &Question,
    copy: &Copy,
    to: &Recipient<'_>,
) -> Result<EncodedApns, PayloadError> {
    let (env, mut report) = sealed_question(q, copy, to, false)?;
    let json = sealed_apns_value(env, false, copy).to_string();
    report.bytes = json.len();
    Ok(EncodedApns { json, report })
}

/// The APNs payload of a resolution sealed to one device (an alert that
/// replaces the question's, as the plain one does).
#[cfg(feature = "e2e")]
pub fn encode_apns_resolved_sealed(
    q: &Question,
    copy: &Copy,
    me: Option<&str>,
    to: &Recipient<'_>,
) -> Result<EncodedApns, PayloadError> {
    let (env, mut report) = sealed_resolved(q, copy, me, to, false)?;
    let json = sealed_apns_value(env, true, copy).to_string();
    report.bytes = json.len();
    Ok(EncodedApns { json, report })
}

/// The FCM data message of a question sealed to one device.
#[cfg(feature = "e2e")]
pub fn encode_fcm_question_sealed(
    q: &Question,
    copy: &Copy,
    to: &Recipient<'_>,
) -> Result<EncodedFcm, PayloadError> {
    let (env, mut report) = sealed_question(q, copy, to, true)?;
    let data = sealed_fcm_data(&env, copy);
    report.bytes = data_len(&data);
    Ok(EncodedFcm { data, report })
}

/// The FCM data message of a resolution sealed to one device.
#[cfg(feature = "e2e")]
pub fn encode_fcm_resolved_sealed(
    q: &Question,
    copy: &Copy,
    me: Option<&str>,
    to: &Recipient<'_>,
) -> Result<EncodedFcm, PayloadError> {
    let (env, mut report) = sealed_resolved(q, copy, me, to, true)?;
    let data = sealed_fcm_data(&env, copy);
    report.bytes = data_len(&data);
    Ok(EncodedFcm { data, report })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Answer, Asker, QuestionState, Responder, RoomRef};

    /// The worst resolution: the longest prompt in characters that JSON
    /// escapes to six bytes each, the longest names and typed reply.
    #[test]
    fn the_worst_resolution_still_fits_and_decodes() {
        let control = "\u{1}".repeat(crate::protocol::limits::PROMPT_MAX_CHARS);
        let name = "\u{2}".repeat(crate::protocol::limits::NAME_MAX_CHARS);
        let now = chrono::Utc::now();
        let mut q = crate::payload::CompactQuestion {
            v: 1,
            id: "q_".to_string() + &"a".repeat(60),
            room: crate::payload::CompactRoom {
                code: "OPS123".into(),
                name: name.clone(),
            },
            asker: name.clone(),
            prompt: control,
            context: None,
            options: vec![],
            text_input: None,
            responder_scope: crate::protocol::ResponderScope::Room,
            target_user_id: None,
            expires_at: now,
            created_at: now,
            consent: None,
        }
        .to_question();
        q.room = Some(RoomRef {
            code: "OPS123".into(),
            name: name.clone(),
        });
        q.asker = Some(Asker {
            handle: None,
            kind: "agent".into(),
            id: "a_1".into(),
            display_name: name.clone(),
        });
        q.state = QuestionState::Answered;
        q.resolved_at = Some(now);
        q.answer = Some(Answer {
            value: None,
            label: None,
            text: Some("\u{3}".repeat(60)),
            responder: Responder {
                id: "u_".to_string() + &"b".repeat(62),
                display_name: name,
            },
            answered_at: now,
        });
        let e = encode_apns_resolved(&q, Copy::english(), None);
        assert!(e.json.len() <= MAX_PAYLOAD_BYTES, "{} bytes", e.json.len());
        assert_eq!(
            e.report.shortened.first().map(String::as_str),
            Some("aps.alert.body")
        );
        let crate::payload::Push::Resolved(n) = crate::payload::decode_apns(&e.json).unwrap()
        else {
            panic!("a resolution")
        };
        assert_eq!((n.id, n.state), (q.id, QuestionState::Answered));
    }
}
