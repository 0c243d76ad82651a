//! The one error type of the protocol rules: which field broke which rule.

use serde::{Deserialize, Serialize};

/// A stable, machine-readable name for the rule that was broken.
/// These strings are part of the public API (the server's error body, the
/// conformance vectors, the Swift and Kotlin errors): add, never rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A required field is missing or null.
    Required,
    /// The field has the wrong JSON type (a number where a string belongs...).
    InvalidType,
    /// A string is empty (or only white space where it is trimmed).
    Empty,
    /// A string has more characters than allowed.
    TooLong,
    /// Fewer entries than allowed (options).
    TooFew,
    /// More entries than allowed (options).
    TooMany,
    /// A number outside its allowed range (that is not clamped).
    OutOfRange,
    /// A string that is not one of the allowed words.
    InvalidValue,
    /// Two options share a value.
    DuplicateValue,
    /// An option's `style` and its legacy flags disagree.
    ConflictingStyle,
    /// More than one option has the `primary` style.
    MultiplePrimary,
    /// A field that is not allowed in this combination (a target on a room question).
    NotAllowed,
    /// A value reserved by the protocol but not supported in v1 (`quorum`, `all`).
    UnsupportedInV1,
    /// A JSON value larger than its byte cap (`data`).
    TooLarge,
    /// A JSON value nested deeper than allowed (`data`).
    TooDeep,
    /// Control characters where they would break a button or an identifier.
    InvalidCharacters,
    /// An answer's `value` is not one of the question's options.
    UnknownOption,
    /// A typed answer on a question that did not ask for one.
    TextNotAllowed,
    /// An answer with both `value` and `text`.
    AmbiguousAnswer,
    /// An answer with neither `value` nor `text`.
    MissingAnswer,
}

impl ErrorCode {
    /// The wire string of this code, e.g. `"too_long"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Required => "required",
            ErrorCode::InvalidType => "invalid_type",
            ErrorCode::Empty => "empty",
            ErrorCode::TooLong => "too_long",
            ErrorCode::TooFew => "too_few",
            ErrorCode::TooMany => "too_many",
            ErrorCode::OutOfRange => "out_of_range",
            ErrorCode::InvalidValue => "invalid_value",
            ErrorCode::DuplicateValue => "duplicate_value",
            ErrorCode::ConflictingStyle => "conflicting_style",
            ErrorCode::MultiplePrimary => "multiple_primary",
            ErrorCode::NotAllowed => "not_allowed",
            ErrorCode::UnsupportedInV1 => "unsupported_in_v1",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::TooDeep => "too_deep",
            ErrorCode::InvalidCharacters => "invalid_characters",
            ErrorCode::UnknownOption => "unknown_option",
            ErrorCode::TextNotAllowed => "text_not_allowed",
            ErrorCode::AmbiguousAnswer => "ambiguous_answer",
            ErrorCode::MissingAnswer => "missing_answer",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken rule: the field (a JSON path such as `options[2].label`, or
/// `body` for the request as a whole), the rule's code, and a sentence for a
/// person that names both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ValidationError {
    pub field: String,
    pub code: ErrorCode,
    pub message: String,
}

impl ValidationError {
    pub fn new(field: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        let field = field.into();
        let message = format!("{field}: {}", message.into());
        ValidationError {
            field,
            code,
            message,
        }
    }
}
