//! Exports for the Swift and Kotlin test suites only (feature `testing`):
//! they replay the language-neutral vectors through the bindings, and need
//! the server-side rules (normalize an ask, apply an answer, encode a push)
//! and the copy table as functions. A shipped library is built without
//! them (bindings/package-*), so apps cannot come to depend on them.

use std::collections::HashMap;

use qp_core::answer::map_action;
use qp_core::payload::{self, CompactQuestion, Push, ResolvedNotice};
use qp_core::present::copy::Copy;
use qp_core::protocol::{
    normalize_ask, AnswerOutcome, AnswerSubmission, AskContext, Question, Responder,
};

use crate::error::QpError;
use crate::types::{DecodedPush, PushQuestion, QuestionState, ResponderScope, Timestamp};

fn invalid(message: impl Into<String>) -> QpError {
    QpError::InvalidInput {
        detail: message.into(),
    }
}

fn question_from(json: &str) -> Result<Question, QpError> {
    serde_json::from_str(json).map_err(|e| invalid(format!("not a Question: {e}")))
}

fn to_json(v: &impl serde::Serialize) -> Result<String, QpError> {
    serde_json::to_string(v).map_err(|e| invalid(e.to_string()))
}

/// An answer to send: exactly one of the two is set.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct AnswerBody {
    pub value: Option<String>,
    pub text: Option<String>,
}

/// A tapped action (with typed text or a chosen label) to the answer to send.
#[uniffi::export]
pub fn map_notification_action(
    question: PushQuestion,
    action_id: String,
    text: Option<String>,
) -> Result<AnswerBody, QpError> {
    Ok(match map_action(&question, &action_id, text.as_deref())? {
        AnswerSubmission::Value(v) => AnswerBody {
            value: Some(v),
            text: None,
        },
        AnswerSubmission::Text(t) => AnswerBody {
            value: None,
            text: Some(t),
        },
    })
}

/// Validates and normalizes an ask body (JSON); returns the normalized ask as JSON.
#[uniffi::export]
pub fn normalize_ask_json(
    body_json: String,
    now: Timestamp,
    default_target_user_id: Option<String>,
) -> Result<String, QpError> {
    let body: serde_json::Value =
        serde_json::from_str(&body_json).map_err(|e| invalid(format!("body is not JSON: {e}")))?;
    let ask = normalize_ask(
        &body,
        &AskContext {
            now,
            default_target_user_id,
        },
    )?;
    to_json(&ask)
}

/// The result of applying an answer to a question (JSON in, JSON out).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct AppliedAnswer {
    /// `accepted` or `already_resolved`.
    pub outcome: String,
    pub question_json: String,
}

/// Applies an answer body to a question, as the server does.
#[uniffi::export]
pub fn apply_answer_json(
    question_json: String,
    answer_json: String,
    responder_id: String,
    responder_name: String,
    now: Timestamp,
) -> Result<AppliedAnswer, QpError> {
    let mut q = question_from(&question_json)?;
    let body: serde_json::Value = serde_json::from_str(&answer_json)
        .map_err(|e| invalid(format!("answer is not JSON: {e}")))?;
    let submission = AnswerSubmission::from_json(&body)?;
    let responder = Responder {
        id: responder_id,
        display_name: responder_name,
    };
    let outcome = match q.apply_answer(&submission, responder, now)? {
        AnswerOutcome::Accepted => "accepted",
        AnswerOutcome::AlreadyResolved => "already_resolved",
    };
    Ok(AppliedAnswer {
        outcome: outcome.into(),
        question_json: to_json(&q)?,
    })
}

/// An encoded push (server side), with what the encoder did to fit 4 KB.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct EncodedPayload {
    /// APNs: the JSON body. FCM: empty (see `data`).
    pub json: String,
    /// FCM: the data map. APNs: empty.
    pub data: HashMap<String, String>,
    pub bytes: u32,
    pub omitted: Vec<String>,
    pub shortened: Vec<String>,
}

fn report(json: String, data: HashMap<String, String>, r: payload::EncodeReport) -> EncodedPayload {
    EncodedPayload {
        json,
        data,
        bytes: r.bytes as u32,
        omitted: r.omitted,
        shortened: r.shortened,
    }
}

/// Server side: the APNs payload of a question (JSON of the Question object).
#[uniffi::export]
pub fn encode_apns_payload(question_json: String) -> Result<EncodedPayload, QpError> {
    let e = payload::encode_apns_question(&question_from(&question_json)?, Copy::english())?;
    Ok(report(e.json, HashMap::new(), e.report))
}

/// Server side: the FCM data message of a question.
#[uniffi::export]
pub fn encode_fcm_payload(question_json: String) -> Result<EncodedPayload, QpError> {
    let e = payload::encode_fcm_question(&question_from(&question_json)?, Copy::english())?;
    Ok(report(
        String::new(),
        e.data.into_iter().collect(),
        e.report,
    ))
}

/// Server side: the APNs push of a resolution, in English, for the phone of
/// user `me` (who reads "by you" when they answered).
#[uniffi::export(default(me = None))]
pub fn encode_apns_resolved_payload(
    question_json: String,
    me: Option<String>,
) -> Result<EncodedPayload, QpError> {
    let e = payload::encode_apns_resolved(
        &question_from(&question_json)?,
        Copy::english(),
        me.as_deref(),
    );
    Ok(report(e.json, HashMap::new(), e.report))
}

/// Server side: the APNs payload of a question sealed to one device (its
/// id and base64 public key), as the server sends a device with a key.
#[uniffi::export]
pub fn encode_apns_sealed_payload(
    question_json: String,
    device_id: String,
    public_key: String,
) -> Result<EncodedPayload, QpError> {
    let key = qp_core::e2e::DevicePublicKey::parse(&public_key, "public_key").map_err(|e| {
        QpError::InvalidInput {
            detail: e.to_string(),
        }
    })?;
    let to = payload::Recipient {
        device_id: &device_id,
        key: &key,
    };
    let e = payload::encode_apns_question_sealed(
        &question_from(&question_json)?,
        Copy::english(),
        &to,
    )?;
    Ok(report(e.json, HashMap::new(), e.report))
}

/// Server side: the FCM data message of a question sealed to one device.
#[uniffi::export]
pub fn encode_fcm_sealed_payload(
    question_json: String,
    device_id: String,
    public_key: String,
) -> Result<EncodedPayload, QpError> {
    let key = qp_core::e2e::DevicePublicKey::parse(&public_key, "public_key").map_err(|e| {
        QpError::InvalidInput {
            detail: e.to_string(),
        }
    })?;
    let to = payload::Recipient {
        device_id: &device_id,
        key: &key,
    };
    let e =
        payload::encode_fcm_question_sealed(&question_from(&question_json)?, Copy::english(), &to)?;
    Ok(report(
        String::new(),
        e.data.into_iter().collect(),
        e.report,
    ))
}

/// Server side: the FCM data message of a resolution.
#[uniffi::export]
pub fn encode_fcm_resolved_payload(question_json: String) -> Result<EncodedPayload, QpError> {
    let e = payload::encode_fcm_resolved(&question_from(&question_json)?);
    Ok(report(
        String::new(),
        e.data.into_iter().collect(),
        e.report,
    ))
}

/// The question as compact JSON (the `qp` value of a push).
#[uniffi::export]
pub fn push_question_to_json(question: PushQuestion) -> String {
    serde_json::to_string(&question).unwrap_or_default()
}

/// The decoded push as the JSON of its wire form.
#[uniffi::export]
pub fn decoded_push_to_json(push: DecodedPush) -> String {
    let push = match push {
        DecodedPush::Question { question } => Push::Question(question),
        DecodedPush::Resolved { notice } => Push::Resolved(notice),
    };
    match push {
        Push::Question(q) => serde_json::to_string::<CompactQuestion>(&q),
        Push::Resolved(n) => serde_json::to_string::<ResolvedNotice>(&n),
    }
    .unwrap_or_default()
}

/// Reads a Question object and writes it back in the protocol's form.
#[uniffi::export]
pub fn normalize_question_json(question_json: String) -> Result<String, QpError> {
    to_json(&question_from(&question_json)?)
}

/// The state machine: whether `from` may become `to`.
#[uniffi::export]
pub fn state_transition_allowed(from: QuestionState, to: QuestionState) -> bool {
    from.can_become(to)
}

/// "Release Bot asks you" / "… asks the room".
#[uniffi::export]
pub fn copy_title(scope: ResponderScope, asker: String) -> String {
    Copy::english().title(scope, &asker)
}

/// The resolution line of a question ("You answered: Approve"...), none while pending.
#[uniffi::export]
pub fn copy_resolution(
    question_json: String,
    me: Option<String>,
) -> Result<Option<String>, QpError> {
    Ok(Copy::english().resolution(&question_from(&question_json)?, me.as_deref()))
}

/// "12 min left".
#[uniffi::export]
pub fn copy_time_remaining(expires_at: Timestamp, now: Timestamp) -> String {
    Copy::english().time_remaining(expires_at, now)
}

/// One i18n vector (core/tests/vectors/i18n): the string the core writes for
/// `kind` with `args_json` in `languages`. Kinds: `language`, `title`,
/// `resolution`, `time_remaining`, `choose_answer`, `message`,
/// `answer_line`, `action_error`, `fallback`.
#[uniffi::export]
pub fn localized_copy(
    languages: Vec<String>,
    kind: String,
    args_json: String,
) -> Result<String, QpError> {
    use qp_core::answer::ActionError;
    use qp_core::present::copy::{AnswerLine, SendFailure};
    let copy = Copy::for_languages(&languages);
    let a: serde_json::Value =
        serde_json::from_str(&args_json).map_err(|e| invalid(format!("args: {e}")))?;
    let s = |k: &str| a[k].as_str().unwrap_or_default().to_string();
    let n = |k: &str| a[k].as_i64().unwrap_or_default();
    Ok(match kind.as_str() {
        "language" => copy.language().to_string(),
        "title" => {
            let scope = if s("scope") == "room" {
                qp_core::protocol::ResponderScope::Room
            } else {
                qp_core::protocol::ResponderScope::Direct
            };
            copy.title(scope, &s("asker"))
        }
        "resolution" => {
            let q: Question = serde_json::from_value(a["question"].clone())
                .map_err(|e| invalid(format!("question: {e}")))?;
            copy.resolution(&q, a["me"].as_str()).unwrap_or_default()
        }
        "time_remaining" => {
            let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
            copy.time_remaining(now + chrono::Duration::seconds(n("seconds")), now)
        }
        "choose_answer" => copy.choose_answer(n("count") as usize),
        "message" => match s("id").as_str() {
            "choose-action" => copy.choose_action(),
            "reply-action" => copy.reply_action(),
            "reply-send" => copy.reply_send(),
            "reply-placeholder" => copy.reply_placeholder(),
            "or-type-reply" => copy.or_type_reply(),
            "anyone-can-answer" => copy.anyone_can_answer(),
            "fallback-title" => copy.fallback_title(),
            "fallback-body" => copy.fallback_body(),
            "open-app-to-finish" => copy.open_app_to_finish(),
            "sign-in-again" => copy.sign_in_again(),
            "channel-name" => copy.channel_name(),
            "channel-description" => copy.channel_description(),
            other => return Err(invalid(format!("unknown message {other}"))),
        },
        "answer_line" => {
            // `error`: the outbox's stored failure, read back as its cause;
            // `state`: the question's, for the too-late line.
            let failure = SendFailure::from_record(&s("error"));
            let line = match s("line").as_str() {
                "queued" => AnswerLine::Queued,
                "sending" => AnswerLine::Sending,
                "retrying" => AnswerLine::Retrying(failure),
                "rejected" if failure == SendFailure::QuestionChanged => {
                    AnswerLine::QuestionChanged
                }
                "rejected" => AnswerLine::Rejected {
                    code: match failure {
                        SendFailure::Refused(code) => code,
                        _ => None,
                    },
                },
                _ => AnswerLine::TooLate(match s("state").as_str() {
                    "answered" => qp_core::protocol::QuestionState::Answered,
                    "expired" => qp_core::protocol::QuestionState::Expired,
                    "cancelled" => qp_core::protocol::QuestionState::Cancelled,
                    _ => qp_core::protocol::QuestionState::Pending,
                }),
            };
            let answer = match a["text"].as_str() {
                Some(t) => copy.typed(t),
                None => copy.embed(&s("label")),
            };
            copy.answer_line(line, &answer)
        }
        "action_error" => copy.action_error(&match s("error").as_str() {
            "text_not_allowed" => ActionError::TextNotAllowed,
            "empty_text" => ActionError::EmptyText,
            "unknown_choice" => ActionError::UnknownChoice(String::new()),
            "unknown_action" => ActionError::UnknownAction(String::new()),
            _ => ActionError::TextTooLong {
                text: String::new(),
                max_length: n("max") as u32,
                length: n("length") as u32,
            },
        }),
        "pair_failure" => {
            use qp_core::pairing::PairErrorKind as K;
            let kind = match s("reason").as_str() {
                "not-a-code" => K::NotACode,
                "no-server" => K::NoServer,
                "invalid-code" => K::InvalidCode,
                "too-many-attempts" => K::TooManyAttempts,
                "unreachable" => K::Unreachable,
                "storage-failed" => K::StorageFailed,
                // `status`: what POST /api/pair answered.
                _ if a["status"].is_u64() => K::of_status(n("status") as u16),
                _ => K::Refused,
            };
            copy.pair_failure(kind)
        }
        "consent" => {
            // The sign-in consent question's words: `part` is asker,
            // prompt, context, allow or deny; the rest are its parts.
            let c: qp_core::protocol::ConsentRequest =
                serde_json::from_value(a.clone()).map_err(|e| invalid(format!("consent: {e}")))?;
            let words = copy.consent(&c, &s("room"));
            match s("part").as_str() {
                "asker" => words.asker,
                "prompt" => words.prompt,
                "context" => words.context,
                "allow" => words.allow,
                "deny" => words.deny,
                other => return Err(invalid(format!("unknown consent part {other}"))),
            }
        }
        "fallback" => {
            let f = payload::fallback(None, None, &copy);
            format!("{} / {}", f.title, f.body)
        }
        other => return Err(invalid(format!("unknown kind {other}"))),
    })
}

/// Another process's transaction on the store at `path` (the extension in
/// the middle of a write): holds the write lock (`BEGIN IMMEDIATE`) until
/// [`release`](Self::release).
#[derive(uniffi::Object)]
pub struct StoreWriteLock {
    conn: std::sync::Mutex<Option<rusqlite::Connection>>,
}

#[uniffi::export]
impl StoreWriteLock {
    #[uniffi::constructor]
    pub fn new(path: String) -> Result<std::sync::Arc<Self>, QpError> {
        let conn = rusqlite::Connection::open(&path).map_err(|e| invalid(e.to_string()))?;
        conn.execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| invalid(e.to_string()))?;
        Ok(std::sync::Arc::new(Self {
            conn: std::sync::Mutex::new(Some(conn)),
        }))
    }

    /// Rolls back and closes (harmless twice).
    pub fn release(&self) {
        let taken = self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(conn) = taken {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
}
