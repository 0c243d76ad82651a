//! The one error of the bindings. Each variant carries a typed kind (a uniffi
//! enum) so Swift `switch` and Kotlin `when` match on cases, never on strings.
//! The whole mapping from the core's errors is here, in one place.

use qp_core::answer::ActionError;
use qp_core::payload::PayloadError;
use qp_core::phone::PhoneError;
use qp_core::protocol::ValidationError;

use crate::types::{
    ActionErrorKind, PairErrorKind, PayloadErrorKind, StoreErrorKind, ValidationCode,
};

#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum QpError {
    /// A protocol rule was broken: `field` and `code` as in the conformance vectors.
    #[error("{detail}")]
    Validation {
        field: String,
        code: ValidationCode,
        detail: String,
    },
    /// A push payload could not be decoded (show the fallback notification).
    #[error("{detail}")]
    Payload {
        kind: PayloadErrorKind,
        field: Option<String>,
        detail: String,
    },
    /// A notification action could not become an answer. `UnknownAction` is
    /// not an answer at all (the default tap): open the app as usual. For
    /// `TextTooLong`, `kept_text` holds the whole text, also kept as a draft.
    #[error("{detail}")]
    Action {
        kind: ActionErrorKind,
        detail: String,
        kept_text: Option<String>,
    },
    /// The question is not held on this device (never pushed nor synced).
    #[error("question {question_id} is not on this device")]
    UnknownQuestion { question_id: String },
    /// An argument that is not well-formed (bad JSON, neither value nor text).
    #[error("{detail}")]
    InvalidInput { detail: String },
    /// The shared store failed.
    #[error("{detail}")]
    Storage {
        kind: StoreErrorKind,
        detail: String,
    },
    /// The server could not be reached or refused the request.
    #[error("{detail}")]
    Network { detail: String },
    #[error("not signed in")]
    NotSignedIn,
    /// The server no longer takes this phone's token (revoked, expired):
    /// show `sessionStatus().line` and let the person pair again
    /// (`signIn`). Answers wait in the outbox meanwhile.
    #[error("{detail}")]
    Unauthorized { detail: String },
    /// Pairing failed: `kind` says why (an unknown, used or expired code, too
    /// many attempts, no network, the secure storage refused).
    #[error("{detail}")]
    Pairing { kind: PairErrorKind, detail: String },
}

impl From<ValidationError> for QpError {
    fn from(e: ValidationError) -> Self {
        QpError::Validation {
            field: e.field.clone(),
            code: e.code,
            detail: e.message,
        }
    }
}

impl From<PayloadError> for QpError {
    fn from(e: PayloadError) -> Self {
        QpError::Payload {
            kind: e.kind(),
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
            kind: e.kind(),
            detail: e.to_string(),
            kept_text,
        }
    }
}

impl From<PhoneError> for QpError {
    fn from(e: PhoneError) -> Self {
        match e {
            PhoneError::Validation(v) => v.into(),
            PhoneError::Payload(p) => p.into(),
            PhoneError::Action(a) => a.into(),
            PhoneError::Store(s) => QpError::Storage {
                kind: s.kind(),
                detail: s.to_string(),
            },
            PhoneError::NotSignedIn => QpError::NotSignedIn,
            e @ PhoneError::Unauthorized(_) => QpError::Unauthorized {
                detail: e.to_string(),
            },
            PhoneError::Network(detail) => QpError::Network { detail },
            PhoneError::UnknownQuestion(question_id) => QpError::UnknownQuestion { question_id },
            PhoneError::InvalidInput(detail) => QpError::InvalidInput { detail },
            PhoneError::Pairing(p) => QpError::Pairing {
                kind: p.kind,
                detail: p.detail,
            },
        }
    }
}

/// A failing foreign callback (the app's token provider threw) is a
/// network-level failure for the core: nothing is lost, the send is retried.
impl From<uniffi::UnexpectedUniFFICallbackError> for QpError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        QpError::Network {
            detail: format!("the app's callback failed: {}", e.reason),
        }
    }
}
