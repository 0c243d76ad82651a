//! The uniffi facade: what Swift and Kotlin call. Thin on purpose: plain
//! records in and out, one error enum, no logic beyond converting types;
//! every decision is made by the modules it calls.

mod phone;
pub use phone::{CommittedAnswer, PhoneCore};

use std::collections::HashMap;
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use crate::answer::{map_action, ActionError};
use crate::payload::{
    self, CompactOption, CompactQuestion, CompactRoom, PayloadError, Push, PAYLOAD_VERSION,
};
use crate::present::android::AndroidNotification;
use crate::present::copy::Copy;
use crate::present::ios::IosNotification;
use crate::present::registry::{KnownQuestion, RegistryPlan};
use crate::present::PresentOptions;
use crate::protocol::{
    normalize_ask, AnswerOutcome, AnswerSubmission, AskContext, OptionStyle, Question,
    QuestionState, Responder, ResponderScope, TextInput, ValidationError,
};

/// The one error type of the bindings. `code` is stable (see the README).
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum QpError {
    /// A protocol rule was broken: `field` and `code` as in the conformance vectors.
    #[error("{detail}")]
    Validation {
        field: String,
        code: String,
        detail: String,
    },
    /// A push payload could not be decoded (show the fallback notification).
    #[error("{detail}")]
    Payload {
        code: String,
        field: Option<String>,
        detail: String,
    },
    /// A notification action could not become an answer. For `text_too_long`,
    /// `kept_text` holds the whole text so the app can let the person fix it.
    #[error("{detail}")]
    Action {
        code: String,
        detail: String,
        kept_text: Option<String>,
    },
    /// An argument that is not even well-formed (bad JSON, a bad timestamp).
    #[error("{detail}")]
    InvalidInput { detail: String },
    /// The phone store failed: `code` is locked, corrupt, cannot_open or other.
    #[error("{detail}")]
    Storage { code: String, detail: String },
    /// The server could not be reached or refused the request.
    #[error("{detail}")]
    Network { detail: String },
    #[error("not signed in")]
    NotSignedIn,
}

impl From<ValidationError> for QpError {
    fn from(e: ValidationError) -> Self {
        QpError::Validation {
            field: e.field.clone(),
            code: e.code.as_str().into(),
            detail: e.message,
        }
    }
}

impl From<PayloadError> for QpError {
    fn from(e: PayloadError) -> Self {
        QpError::Payload {
            code: e.code().into(),
            field: e.field().map(String::from),
            detail: e.to_string(),
        }
    }
}

impl From<ActionError> for QpError {
    fn from(e: ActionError) -> Self {
        let kept_text = match &e {
            ActionError::TextTooLong { text, .. } => Some(text.clone()),
            _ => None,
        };
        QpError::Action {
            code: e.code().into(),
            detail: e.to_string(),
            kept_text,
        }
    }
}

fn invalid(message: impl Into<String>) -> QpError {
    QpError::InvalidInput {
        detail: message.into(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PushOption {
    pub value: String,
    pub label: String,
    pub style: OptionStyle,
}

#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PushTextInput {
    pub placeholder: Option<String>,
    pub max_length: u32,
}

/// A question as a push delivered it: enough to show and answer offline.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PushQuestion {
    pub id: String,
    pub room_code: String,
    pub room_name: String,
    pub asker: String,
    pub prompt: String,
    pub context: Option<String>,
    pub options: Vec<PushOption>,
    pub text_input: Option<PushTextInput>,
    pub responder_scope: ResponderScope,
    pub target_user_id: Option<String>,
    pub expires_at: SystemTime,
    pub created_at: SystemTime,
}

/// A question that resolved (from a silent push).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ResolvedPush {
    pub question_id: String,
    pub state: QuestionState,
    pub answer_value: Option<String>,
    pub answer_label: Option<String>,
    pub answer_text: Option<String>,
    pub responder_id: Option<String>,
    pub responder_name: Option<String>,
    pub resolved_at: Option<SystemTime>,
}

#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum DecodedPush {
    Question { question: PushQuestion },
    Resolved { notice: ResolvedPush },
}

/// An answer to send: exactly one of the two is set.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct AnswerBody {
    pub value: Option<String>,
    pub text: Option<String>,
}

/// What the app knows of a question, for the category registry.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct KnownCategoryQuestion {
    pub question_id: String,
    pub state: QuestionState,
    pub expires_at: SystemTime,
    pub created_at: SystemTime,
}

impl From<CompactQuestion> for PushQuestion {
    fn from(q: CompactQuestion) -> Self {
        PushQuestion {
            id: q.id,
            room_code: q.room.code,
            room_name: q.room.name,
            asker: q.asker,
            prompt: q.prompt,
            context: q.context,
            options: q
                .options
                .into_iter()
                .map(|o| PushOption {
                    value: o.value,
                    label: o.label,
                    style: o.style,
                })
                .collect(),
            text_input: q.text_input.map(|t| PushTextInput {
                placeholder: t.placeholder,
                max_length: t.max_length,
            }),
            responder_scope: q.responder_scope,
            target_user_id: q.target_user_id,
            expires_at: q.expires_at.into(),
            created_at: q.created_at.into(),
        }
    }
}

fn utc(t: SystemTime) -> DateTime<Utc> {
    crate::protocol::time::whole_seconds(DateTime::<Utc>::from(t))
}

impl From<PushQuestion> for CompactQuestion {
    fn from(q: PushQuestion) -> Self {
        CompactQuestion {
            v: PAYLOAD_VERSION,
            id: q.id,
            room: CompactRoom {
                code: q.room_code,
                name: q.room_name,
            },
            asker: q.asker,
            prompt: q.prompt,
            context: q.context,
            options: q
                .options
                .into_iter()
                .map(|o| CompactOption {
                    value: o.value,
                    label: o.label,
                    style: o.style,
                })
                .collect(),
            text_input: q.text_input.map(|t| TextInput {
                placeholder: t.placeholder,
                max_length: t.max_length,
            }),
            responder_scope: q.responder_scope,
            target_user_id: q.target_user_id,
            expires_at: utc(q.expires_at),
            created_at: utc(q.created_at),
        }
    }
}

fn decoded(push: Push) -> DecodedPush {
    match push {
        Push::Question(q) => DecodedPush::Question { question: q.into() },
        Push::Resolved(r) => DecodedPush::Resolved {
            notice: ResolvedPush {
                question_id: r.id,
                state: r.state,
                answer_value: r.answer.as_ref().and_then(|a| a.value.clone()),
                answer_label: r.answer.as_ref().and_then(|a| a.label.clone()),
                answer_text: r.answer.as_ref().and_then(|a| a.text.clone()),
                responder_id: r.answer.as_ref().map(|a| a.responder.id.clone()),
                responder_name: r.answer.as_ref().map(|a| a.responder.display_name.clone()),
                resolved_at: r.resolved_at.map(Into::into),
            },
        },
    }
}

/// The protocol version this library implements ("1.1").
#[uniffi::export]
pub fn protocol_version() -> String {
    crate::protocol::PROTOCOL_VERSION.to_string()
}

/// Decodes an APNs `userInfo` serialized as JSON.
#[uniffi::export]
pub fn decode_apns_payload(json: String) -> Result<DecodedPush, QpError> {
    Ok(decoded(payload::decode_apns(&json)?))
}

/// Decodes an FCM data message (`RemoteMessage.data`).
#[uniffi::export]
pub fn decode_fcm_payload(data: HashMap<String, String>) -> Result<DecodedPush, QpError> {
    Ok(decoded(payload::decode_fcm(&data)?))
}

/// The plain notification to show when a push cannot be decoded.
#[uniffi::export]
pub fn fallback_notification(
    title: Option<String>,
    body: Option<String>,
) -> payload::FallbackNotification {
    payload::fallback(title.as_deref(), body.as_deref(), &Copy::EN)
}

/// The question as compact JSON (the `qp` value of a push).
#[uniffi::export]
pub fn push_question_to_json(question: PushQuestion) -> String {
    serde_json::to_string(&CompactQuestion::from(question)).unwrap_or_default()
}

/// The iOS notification content and its per-question category.
#[uniffi::export]
pub fn ios_notification(
    question: PushQuestion,
    require_unlock_for_danger: bool,
) -> IosNotification {
    let opts = PresentOptions {
        require_unlock_for_danger,
    };
    crate::present::ios::ios_notification(&question.into(), &opts, &Copy::EN)
}

/// The Android notification and its (at most three) actions.
#[uniffi::export]
pub fn android_notification(
    question: PushQuestion,
    now: SystemTime,
    require_unlock_for_danger: bool,
) -> AndroidNotification {
    let opts = PresentOptions {
        require_unlock_for_danger,
    };
    crate::present::android::android_notification(&question.into(), utc(now), &opts, &Copy::EN)
}

/// The full set of categories to register with `setNotificationCategories`.
#[uniffi::export]
pub fn plan_ios_categories(
    registered: Vec<String>,
    new_category: String,
    known: Vec<KnownCategoryQuestion>,
    now: SystemTime,
    max: u32,
) -> RegistryPlan {
    let known: Vec<KnownQuestion> = known
        .into_iter()
        .map(|k| KnownQuestion {
            question_id: k.question_id,
            state: k.state,
            expires_at: utc(k.expires_at),
            created_at: utc(k.created_at),
        })
        .collect();
    crate::present::registry::plan_categories(
        &registered,
        &new_category,
        &known,
        utc(now),
        max as usize,
    )
}

/// A tapped action (with typed text or a chosen label) to the answer to send.
#[uniffi::export]
pub fn map_notification_action(
    question: PushQuestion,
    action_id: String,
    text: Option<String>,
) -> Result<AnswerBody, QpError> {
    Ok(
        match map_action(&question.into(), &action_id, text.as_deref())? {
            AnswerSubmission::Value(v) => AnswerBody {
                value: Some(v),
                text: None,
            },
            AnswerSubmission::Text(t) => AnswerBody {
                value: None,
                text: Some(t),
            },
        },
    )
}

/// Validates and normalizes an ask body (JSON); returns the normalized ask as JSON.
#[uniffi::export]
pub fn normalize_ask_json(
    body_json: String,
    now: SystemTime,
    default_target_user_id: Option<String>,
) -> Result<String, QpError> {
    let body: serde_json::Value =
        serde_json::from_str(&body_json).map_err(|e| invalid(format!("body is not JSON: {e}")))?;
    let ask = normalize_ask(
        &body,
        &AskContext {
            now: utc(now),
            default_target_user_id,
        },
    )?;
    serde_json::to_string(&ask).map_err(|e| invalid(e.to_string()))
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
    now: SystemTime,
) -> Result<AppliedAnswer, QpError> {
    let mut q: Question = serde_json::from_str(&question_json)
        .map_err(|e| invalid(format!("question is not a Question: {e}")))?;
    let body: serde_json::Value = serde_json::from_str(&answer_json)
        .map_err(|e| invalid(format!("answer is not JSON: {e}")))?;
    let submission = AnswerSubmission::from_json(&body)?;
    let responder = Responder {
        id: responder_id,
        display_name: responder_name,
    };
    let outcome = match q.apply_answer(&submission, responder, utc(now))? {
        AnswerOutcome::Accepted => "accepted",
        AnswerOutcome::AlreadyResolved => "already_resolved",
    };
    Ok(AppliedAnswer {
        outcome: outcome.into(),
        question_json: serde_json::to_string(&q).map_err(|e| invalid(e.to_string()))?,
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

fn question_from(json: &str) -> Result<Question, QpError> {
    serde_json::from_str(json).map_err(|e| invalid(format!("not a Question: {e}")))
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
    let e = payload::encode_apns_question(&question_from(&question_json)?, &Copy::EN)?;
    Ok(report(e.json, HashMap::new(), e.report))
}

/// Server side: the FCM data message of a question.
#[uniffi::export]
pub fn encode_fcm_payload(question_json: String) -> Result<EncodedPayload, QpError> {
    let e = payload::encode_fcm_question(&question_from(&question_json)?, &Copy::EN)?;
    Ok(report(
        String::new(),
        e.data.into_iter().collect(),
        e.report,
    ))
}

/// Server side: the silent APNs push of a resolution.
#[uniffi::export]
pub fn encode_apns_resolved_payload(question_json: String) -> Result<EncodedPayload, QpError> {
    let e = payload::encode_apns_resolved(&question_from(&question_json)?);
    Ok(report(e.json, HashMap::new(), e.report))
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

/// The decoded push as the JSON of its wire form (the compact question or
/// the resolved notice).
#[uniffi::export]
pub fn decoded_push_to_json(push: DecodedPush) -> String {
    match push {
        DecodedPush::Question { question } => push_question_to_json(question),
        DecodedPush::Resolved { notice } => {
            let answer = notice
                .responder_id
                .as_ref()
                .map(|id| crate::protocol::Answer {
                    value: notice.answer_value.clone(),
                    label: notice.answer_label.clone(),
                    text: notice.answer_text.clone(),
                    responder: Responder {
                        id: id.clone(),
                        display_name: notice.responder_name.clone().unwrap_or_default(),
                    },
                    answered_at: notice.resolved_at.map(utc).unwrap_or_default(),
                });
            serde_json::to_string(&payload::ResolvedNotice {
                v: PAYLOAD_VERSION,
                id: notice.question_id,
                state: notice.state,
                answer,
                resolved_at: notice.resolved_at.map(utc),
            })
            .unwrap_or_default()
        }
    }
}

/// Reads a Question object and writes it back in the protocol's form.
#[uniffi::export]
pub fn normalize_question_json(question_json: String) -> Result<String, QpError> {
    serde_json::to_string(&question_from(&question_json)?).map_err(|e| invalid(e.to_string()))
}

/// The state machine: whether `from` may become `to`.
#[uniffi::export]
pub fn state_transition_allowed(from: QuestionState, to: QuestionState) -> bool {
    from.can_become(to)
}

/// "Release Bot asks you" / "… asks the room".
#[uniffi::export]
pub fn copy_title(scope: ResponderScope, asker: String) -> String {
    Copy::EN.title(scope, &asker)
}

/// The resolution line of a question ("Approve, by you"...), none while pending.
#[uniffi::export]
pub fn copy_resolution(
    question_json: String,
    me: Option<String>,
) -> Result<Option<String>, QpError> {
    Ok(Copy::EN.resolution(&question_from(&question_json)?, me.as_deref()))
}

/// "12 min left".
#[uniffi::export]
pub fn copy_time_remaining(expires_at: SystemTime, now: SystemTime) -> String {
    Copy::EN.time_remaining(utc(expires_at), utc(now))
}

/// Android: the notification id of a question (the tag is its id).
#[uniffi::export]
pub fn android_notification_id(question_id: String) -> i32 {
    crate::present::android::notification_id(&question_id)
}

/// Android: the PendingIntent request code of a question's slot (0 the
/// content intent, 1..3 the actions).
#[uniffi::export]
pub fn android_request_code(question_id: String, slot: u32) -> i32 {
    crate::present::android::request_code(&question_id, slot)
}
