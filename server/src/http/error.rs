//! The one error shape of the HTTP API:
//! `{"error": {"code": "...", "message": "...", "field": "..." | null}}`,
//! plus `"question"` when the error concerns a question that exists (409).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use qp_core::protocol::{Question, ValidationError};
use serde_json::json;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// A stable machine code (`unauthorized`, `not_found`, `too_long`...).
    pub code: String,
    /// A sentence for a person, naming the field where there is one.
    pub message: String,
    pub field: Option<String>,
    /// The question as it stands, for conflicts.
    pub question: Option<Box<Question>>,
    /// Seconds, for 429.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.to_string(),
            message: message.into(),
            field: None,
            question: None,
            retry_after: None,
        }
    }

    pub fn with_field(mut self, field: &str) -> Self {
        self.field = Some(field.to_string());
        self
    }

    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed_json", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// An invalid field that is not a protocol rule (a query parameter...).
    pub fn invalid(field: &str, code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message).with_field(field)
    }

    pub fn already_resolved(q: Question) -> Self {
        let mut e = Self::new(
            StatusCode::CONFLICT,
            "already_resolved",
            format!("question {} is already {}", q.id, q.state.as_str()),
        );
        e.question = Some(Box::new(q));
        e
    }

    pub fn too_many(code: &str, message: impl Into<String>, retry_after_secs: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, code, message);
        e.retry_after = Some(retry_after_secs.max(1));
        e
    }

    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the server log",
        )
    }

    /// The JSON body of this error.
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({
            "error": { "code": self.code, "message": self.message, "field": self.field }
        });
        if let Some(q) = &self.question {
            body["question"] = serde_json::to_value(q).unwrap_or_default();
        }
        body
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.code.as_str(), e.message)
            .with_field(&e.field)
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        tracing::error!(error = %e, "database error");
        ApiError::internal()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}
