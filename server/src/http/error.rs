//! The one error shape of the HTTP API, read by both kinds of client:
//! ```json
//! {"code": "...", "message": "...", "field": "..." | null,
//!  "error": {"code": "...", "message": "...", "field": "..." | null}}
//! ```
//! The flat `code` and `message` are what clients of the reference
//! implementation read; the nested `error` object is qp's own (kept for its
//! clients). `"question"` is added when the error concerns a question that
//! exists (409). The `http::layers::JsonErrors` middleware gives the framework's own rejections (405,
//! 413, a path that is not UTF-8…) the same shape, and enforces the URI and
//! header limits with 414 and 431 in that shape.

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use qp_core::protocol::{Question, ValidationError};

use crate::app::{AppError, ErrorBody};
use crate::health::{self, DbTrouble};

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
    /// Seconds, for 429 and 503.
    pub retry_after: Option<u64>,
    /// What a database error says about the server's health, for /readyz
    /// (`http::ready::note_failures` reads it off the response).
    pub trouble: Option<Box<DbTrouble>>,
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
            trouble: None,
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
        Self::new(INVALID, code, message).with_field(field)
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
    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(
            &self.code,
            self.message.clone(),
            self.field.clone(),
            self.question.as_deref().cloned(),
        )
    }
}

/// The status of an invalid request, and of an answer the protocol refused
/// (replayed from its Idempotency-Key record with it).
pub const INVALID: StatusCode = StatusCode::UNPROCESSABLE_ENTITY;

/// The HTTP shape of a domain error: the one place its status codes are
/// chosen.
impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        let status = match &e {
            AppError::Revoked => StatusCode::UNAUTHORIZED,
            AppError::NotFound { .. } => StatusCode::NOT_FOUND,
            AppError::Forbidden { .. } => StatusCode::FORBIDDEN,
            AppError::AlreadyResolved(_) | AppError::Conflict { .. } => StatusCode::CONFLICT,
            AppError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            AppError::Invalid { .. } => INVALID,
            AppError::BadCode(_) => StatusCode::BAD_REQUEST,
            // Shaped by the database error's own conversion (below).
            AppError::Storage(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut out = ApiError::new(status, e.code(), e.to_string());
        out.field = e.field().map(str::to_string);
        match e {
            // What it says about the server's health: 503 and Retry-After
            // for a full disk or an unreachable database, noted for /readyz.
            AppError::Storage(db) => return db.into(),
            AppError::RateLimited {
                retry_after_secs, ..
            } => out.retry_after = Some(retry_after_secs),
            AppError::AlreadyResolved(q) => out.question = Some(q),
            _ => {}
        }
        out
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        AppError::from(e).into()
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        AppError::from(e).into()
    }
}

impl From<crate::store::DbError> for ApiError {
    fn from(e: crate::store::DbError) -> Self {
        let failure = health::DbFailure::of(&e);
        let (status, retry_after, trouble) = match failure {
            health::DbFailure::StorageFull => {
                tracing::error!(error = %e, "database storage full");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some(health::STORAGE_FULL_RETRY_SECS),
                    Some(DbTrouble::StorageFull(e.to_string())),
                )
            }
            health::DbFailure::Unavailable => {
                tracing::warn!(error = %e, "database unavailable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some(1),
                    Some(DbTrouble::Unavailable(e.to_string())),
                )
            }
            health::DbFailure::Other => {
                tracing::error!(error = %e, "database error");
                (StatusCode::INTERNAL_SERVER_ERROR, None, None)
            }
        };
        let mut err = ApiError::new(status, failure.code(), failure.message());
        err.retry_after = retry_after;
        err.trouble = trouble.map(Box::new);
        err
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(trouble) = self.trouble {
            resp.extensions_mut().insert(*trouble);
        }
        resp
    }
}

/// The longest request target served (path and query); longer is 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most request headers, and their total size (names and values); more is
/// 431. Below hyper's own count limit (100), which answers an empty 431.
pub const MAX_HEADERS: usize = 64;
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The largest request body read (the bodies of this API are small JSON).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Reads a request's body whole within `deadline`: a client that announces a
/// body and sends it slowly (or never) gets 408 instead of holding the
/// connection forever; one over [`MAX_BODY_BYTES`] gets 413.
pub(crate) async fn read_body_in_time(
    req: Request,
    deadline: std::time::Duration,
) -> Result<Request, Response> {
    if !has_body(&req) {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, axum::body::Body::from(bytes))),
        Ok(Err(_)) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body is over {MAX_BODY_BYTES} bytes, or was cut off"),
        )
        .into_response()),
        Err(_) => {
            let mut resp = ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                format!(
                    "the request body did not arrive within {} s",
                    deadline.as_secs()
                ),
            )
            .into_response();
            // The rest of that body may never come: do not keep the connection.
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(resp)
        }
    }
}

/// Whether the request announces a body.
pub(crate) fn has_body(req: &Request) -> bool {
    req.headers().contains_key(header::TRANSFER_ENCODING)
        || req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v != "0")
}

/// The stable code of a status the framework produced on its own.
fn code_of(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        408 => "request_timeout",
        409 => "conflict",
        413 => "payload_too_large",
        414 => "uri_too_long",
        415 => "unsupported_media_type",
        422 => "unprocessable",
        429 => "rate_limited",
        431 => "headers_too_large",
        s if s >= 500 => "internal",
        _ => "error",
    }
}

fn is_json(resp: &Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

// The middleware (`http::layers::JsonErrors`): requests over the URI or
// header limits are refused with 414 or 431 in the error shape
// ([`over_limits`]); a body is read whole within its deadline
// ([`read_body_in_time`]); any error response the framework wrote itself
// (plain text or empty: a wrong method, a body over the limit, a path that
// is not UTF-8) is rewritten into the error shape ([`reshape`]), keeping
// its status, its headers (`Allow` on 405) and its text as the message.

/// The 414 or 431 of a request over the URI or header limits.
pub(crate) fn over_limits(req: &Request) -> Option<Response> {
    let uri_len = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return Some(
            ApiError::new(
                StatusCode::URI_TOO_LONG,
                "uri_too_long",
                format!(
                    "the request target is {uri_len} bytes; at most {MAX_URI_BYTES} are accepted"
                ),
            )
            .into_response(),
        );
    }
    let headers = req.headers();
    let header_bytes: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if headers.len() > MAX_HEADERS || header_bytes > MAX_HEADER_BYTES {
        return Some(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!(
                "{} headers of {header_bytes} bytes; at most {MAX_HEADERS} headers and {MAX_HEADER_BYTES} bytes are accepted",
                headers.len()
            ),
        )
        .into_response());
    }
    None
}

/// Whether a response is an error the framework wrote itself: neither
/// JSON nor a page of the server's own (a sign-in refusal shown to a
/// person, in their language); the framework's are plain text or empty.
pub(crate) fn needs_shape(resp: &Response) -> bool {
    let status = resp.status();
    let page = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    (status.is_client_error() || status.is_server_error()) && !is_json(resp) && !page
}

/// `resp`, in the error shape when [`needs_shape`].
pub(crate) async fn shaped(resp: Response) -> Response {
    if needs_shape(&resp) {
        reshape(resp).await
    } else {
        resp
    }
}

/// The framework's own error response in the error shape.
pub(crate) async fn reshape(resp: Response) -> Response {
    let status = resp.status();
    let (parts, body) = resp.into_parts();
    // The framework's own text ("Failed to buffer the body: length limit
    // exceeded"); short, so reading it whole is fine.
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let message = if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    } else {
        text
    };
    let mut out = ApiError::new(status, code_of(status), message).into_response();
    for (k, v) in parts.headers.iter() {
        if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_error_keeps_its_code_field_wait_and_question() {
        let e: ApiError = AppError::rate_limited("rate_limited", "slow down", 0).into();
        assert_eq!((e.status.as_u16(), e.retry_after), (429, Some(1)));
        let e: ApiError = AppError::NotFound {
            message: "room: no room with code X".into(),
            field: Some("room"),
        }
        .into();
        assert_eq!(
            (e.status.as_u16(), e.code.as_str(), e.field.as_deref()),
            (404, "not_found", Some("room"))
        );
        let body = serde_json::to_value(e.body()).unwrap();
        assert_eq!(body["error"]["field"], "room");
        assert_eq!(body["code"], "not_found");
        let e: ApiError = AppError::Revoked.into();
        assert_eq!((e.status.as_u16(), e.code.as_str()), (401, "unauthorized"));
    }

    /// A database failure reaching the API keeps its health shape: a full
    /// disk is 503 `storage_full` with Retry-After, noted for /readyz, and
    /// never the database's own words.
    #[test]
    fn a_storage_failure_is_shaped_by_what_it_says_about_health() {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".into()),
        );
        let e: ApiError = AppError::Storage(full.into()).into();
        assert_eq!((e.status.as_u16(), e.code.as_str()), (503, "storage_full"));
        assert_eq!(e.retry_after, Some(health::STORAGE_FULL_RETRY_SECS));
        assert!(matches!(
            e.trouble.as_deref(),
            Some(DbTrouble::StorageFull(_))
        ));
        assert!(!e.message.contains("disk is full"), "{}", e.message);
        let e: ApiError = AppError::Storage(crate::store::DbError::NoRow).into();
        assert_eq!((e.status.as_u16(), e.code.as_str()), (500, "internal"));
    }
}
