//! What an operation of the server can fail with, in the domain's words.
//!
//! `app` (and `pairing`, and the MCP tools through it) return [`AppError`];
//! each front end turns it into its own shape: `http::error` into a status
//! code and the JSON error body, `mcp::backend` into a tool failure. No
//! status code or header is chosen here.

use qp_core::protocol::{Question, ValidationError};
use serde::Serialize;

use crate::store::{DbError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The token that authenticated the call was revoked meanwhile (found
    /// by the operation's own check, in the statement it runs anyway).
    #[error("unknown or revoked token")]
    Revoked,
    /// Nothing by that name, or nothing the caller may know of.
    #[error("{message}")]
    NotFound {
        message: String,
        field: Option<&'static str>,
    },
    /// The caller is known but may not do this (`code` says why:
    /// `missing_scope`, `not_eligible`, `room_not_allowed`…).
    #[error("{message}")]
    Forbidden {
        code: &'static str,
        message: String,
        field: Option<&'static str>,
    },
    /// The question is resolved already; it is returned as it stands.
    #[error("question {} is already {}", .0.id, .0.state.as_str())]
    AlreadyResolved(Box<Question>),
    /// The state of something else forbids it (`code`: `conflict`,
    /// `already_paired`…).
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// Too many of something; retry after `retry_after_secs` (at least 1).
    #[error("{message}")]
    RateLimited {
        code: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    /// A value broke a rule: the field, the rule's code and a sentence
    /// naming both. Protocol rules arrive as [`ValidationError`]s.
    #[error("{message}")]
    Invalid {
        field: Option<String>,
        code: String,
        message: String,
    },
    /// A malformed pairing code (the pairing endpoints' own 400).
    #[error("{0}")]
    BadCode(String),
    /// The database failed (full, unreachable, or an error).
    #[error("database error: {0}")]
    Storage(#[from] DbError),
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn not_found(message: impl Into<String>) -> Self {
        AppError::NotFound {
            message: message.into(),
            field: None,
        }
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        AppError::Forbidden {
            code,
            message: message.into(),
            field: None,
        }
    }

    /// An invalid field that is not a protocol rule (a query parameter…).
    pub fn invalid(field: &str, code: &str, message: impl Into<String>) -> Self {
        AppError::Invalid {
            field: Some(field.to_string()),
            code: code.to_string(),
            message: message.into(),
        }
    }

    pub fn rate_limited(code: &'static str, message: impl Into<String>, wait_secs: u64) -> Self {
        AppError::RateLimited {
            code,
            message: message.into(),
            retry_after_secs: wait_secs.max(1),
        }
    }

    pub fn already_resolved(q: Question) -> Self {
        AppError::AlreadyResolved(Box::new(q))
    }

    /// The field at fault, when there is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            AppError::NotFound { field, .. } | AppError::Forbidden { field, .. } => *field,
            AppError::Invalid { field, .. } => field.as_deref(),
            AppError::BadCode(_) => Some("code"),
            _ => None,
        }
    }

    /// The stable machine code clients read (`not_found`, `too_long`…).
    pub fn code(&self) -> &str {
        match self {
            AppError::Revoked => "unauthorized",
            AppError::NotFound { .. } => "not_found",
            AppError::Forbidden { code, .. }
            | AppError::Conflict { code, .. }
            | AppError::RateLimited { code, .. } => code,
            AppError::AlreadyResolved(_) => "already_resolved",
            AppError::Invalid { code, .. } => code,
            AppError::BadCode(_) => "invalid_code",
            AppError::Storage(e) => crate::health::DbFailure::of(e).code(),
        }
    }

    /// The question as it stands, for a conflict.
    pub fn question(&self) -> Option<&Question> {
        match self {
            AppError::AlreadyResolved(q) => Some(q),
            _ => None,
        }
    }

    /// This error as the wire's error body (a database failure in words
    /// for clients, never the database's own).
    pub fn body(&self) -> ErrorBody {
        let message = match self {
            AppError::Storage(e) => crate::health::DbFailure::of(e).message().to_string(),
            other => other.to_string(),
        };
        ErrorBody::new(
            self.code(),
            message,
            self.field().map(str::to_string),
            self.question().cloned(),
        )
    }
}

impl From<ValidationError> for AppError {
    fn from(e: ValidationError) -> Self {
        AppError::Invalid {
            field: Some(e.field),
            code: e.code.as_str().to_string(),
            message: e.message,
        }
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(m) => AppError::not_found(m),
            StoreError::Conflict(m) => AppError::Conflict {
                code: "conflict",
                message: m,
            },
            StoreError::Invalid(m) => AppError::Invalid {
                field: None,
                code: "invalid_value".into(),
                message: m,
            },
            StoreError::Limit { field, message } => AppError::Invalid {
                field: Some(field.to_string()),
                code: "limit_reached".into(),
                message,
            },
            StoreError::Db(e) => AppError::Storage(e),
        }
    }
}

/// The detail of an error body (the nested `error` object).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// A stable machine code: `unauthorized`, `not_found`, `too_long`, …
    pub code: String,
    /// A sentence for a person, naming the field and the rule.
    pub message: String,
    /// The field at fault, when there is one.
    pub field: Option<String>,
}

/// Every error response's body, on HTTP and as an Idempotency-Key's
/// recorded answer. The flat `code`/`message`/`field` are what the
/// reference implementation's clients read; `error` is the same, nested.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    pub field: Option<String>,
    pub error: ErrorDetail,
    /// The question as it stands, on 409 (already resolved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<Question>,
}

impl ErrorBody {
    pub fn new(
        code: &str,
        message: String,
        field: Option<String>,
        question: Option<Question>,
    ) -> Self {
        ErrorBody {
            code: code.to_string(),
            message: message.clone(),
            field: field.clone(),
            error: ErrorDetail {
                code: code.to_string(),
                message,
                field,
            },
            question,
        }
    }
}
