//! An answer submission (spec 7, Answer body) and its validation against the
//! question it answers. The same check runs on the server (authoritative) and
//! on the phone (to tell the person at once, before anything is queued).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{ErrorCode, ValidationError};
use super::json::{char_len, opt_str, wrong_type};
use super::model::Question;

/// What a person sent: a tapped option's value, or typed text. Exactly one.
/// Serializes as `{"value": "..."}` or `{"text": "..."}`, the answer body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerSubmission {
    Value(String),
    Text(String),
}

impl AnswerSubmission {
    /// Reads an answer body. `null` counts as absent; unknown keys are ignored.
    pub fn from_json(body: &Value) -> Result<Self, ValidationError> {
        let obj = body
            .as_object()
            .ok_or_else(|| wrong_type("body", "a JSON object", body))?;
        let value = opt_str(obj, "value", "value")?;
        let text = opt_str(obj, "text", "text")?;
        match (value, text) {
            (Some(_), Some(_)) => Err(ValidationError::new(
                "body",
                ErrorCode::AmbiguousAnswer,
                "must carry exactly one of \"value\" or \"text\", not both",
            )),
            (Some(v), None) => Ok(AnswerSubmission::Value(v.to_string())),
            (None, Some(t)) => Ok(AnswerSubmission::Text(t.to_string())),
            (None, None) => Err(ValidationError::new(
                "body",
                ErrorCode::MissingAnswer,
                "must carry exactly one of \"value\" (a tapped option) or \"text\" (a typed answer)",
            )),
        }
    }
}

/// A validated choice, ready to go into the answer envelope: either
/// `value` + `label` (text `None`) or `text` (value and label `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerChoice {
    pub value: Option<String>,
    pub label: Option<String>,
    pub text: Option<String>,
}

/// How long typed text counts against `text_input.max_length`: Unicode
/// scalar values (not UTF-16 units, not bytes) once trimmed, so five emoji
/// fit a five-character limit. Every responder counts with this.
pub fn typed_length(text: &str) -> usize {
    char_len(text.trim())
}

/// Checks a submission against the question's options and `text_input`.
/// Typed text is trimmed, must not be empty, and must fit `max_length`
/// characters; it is never truncated.
pub fn validate_answer(
    question: &Question,
    submission: &AnswerSubmission,
) -> Result<AnswerChoice, ValidationError> {
    match submission {
        AnswerSubmission::Value(v) => match question.option(v) {
            Some(option) => Ok(AnswerChoice {
                value: Some(option.value.clone()),
                label: Some(option.label.clone()),
                text: None,
            }),
            None => {
                let allowed: Vec<&str> =
                    question.options.iter().map(|o| o.value.as_str()).collect();
                let message = if allowed.is_empty() {
                    "this question takes a typed answer (\"text\"), not an option value".to_string()
                } else {
                    format!(
                        "must be one of the question's option values: {}",
                        allowed.join(", ")
                    )
                };
                Err(ValidationError::new(
                    "value",
                    ErrorCode::UnknownOption,
                    message,
                ))
            }
        },
        AnswerSubmission::Text(t) => {
            let input = question.text_input.as_ref().ok_or_else(|| {
                ValidationError::new(
                    "text",
                    ErrorCode::TextNotAllowed,
                    "this question does not invite a typed answer; send an option \"value\"",
                )
            })?;
            let text = t.trim();
            if text.is_empty() {
                return Err(ValidationError::new(
                    "text",
                    ErrorCode::Empty,
                    "must not be empty",
                ));
            }
            let n = typed_length(text);
            if n > input.max_length as usize {
                return Err(ValidationError::new(
                    "text",
                    ErrorCode::TooLong,
                    format!("must be at most {} characters, got {n}", input.max_length),
                ));
            }
            Ok(AnswerChoice {
                value: None,
                label: None,
                text: Some(text.to_string()),
            })
        }
    }
}
