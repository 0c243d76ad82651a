//! The platform's network stack, as the core's HTTP interface
//! ([`qp_core::http`]). The app registers one [`HttpTransport`] per process
//! at launch ([`set_http_transport`]: the glue's `URLSession` or
//! `HttpURLConnection` implementation, or the app's own over OkHttp or
//! Ktor); every phone of the process sends through it. The transport only
//! executes the request it is given, within its `timeout_ms`: which
//! requests, their retries, idempotency keys and tokens are the core's.
//!
//! Also here: the records of a background hand-over (iOS), whose outcome
//! the app reports back with [`HandoverResult`].

use std::sync::{Arc, RwLock};

use qp_core::http as core;

pub type HttpMethod = core::HttpMethod;
#[uniffi::remote(Enum)]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Delete,
}

pub type HttpHeader = core::HttpHeader;
#[uniffi::remote(Record)]
pub struct HttpHeader {
    pub name: String,
    pub value: String,
}

pub type HttpRequest = core::HttpRequest;
#[uniffi::remote(Record)]
pub struct HttpRequest {
    pub method: HttpMethod,
    pub url: String,
    pub headers: Vec<HttpHeader>,
    pub body: Option<Vec<u8>>,
    pub timeout_ms: u32,
}

pub type HttpResponse = core::HttpResponse;
#[uniffi::remote(Record)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

pub type HttpFailure = core::HttpFailure;
#[uniffi::remote(Enum)]
pub enum HttpFailure {
    Offline,
    TimedOut,
    Unreachable,
}

pub type Handover = qp_core::sync::Handover;
#[uniffi::remote(Record)]
pub struct Handover {
    pub id: String,
    pub question_id: String,
    pub request: HttpRequest,
}

/// No response came (any status, 4xx and 5xx included, is a response).
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum HttpError {
    /// The device has no network.
    #[error("offline: {reason}")]
    Offline { reason: String },
    /// The request took longer than its `timeout_ms`.
    #[error("timed out: {reason}")]
    TimedOut { reason: String },
    /// Anything else (no such host, refused, TLS: an untrusted certificate).
    #[error("{reason}")]
    Unreachable { reason: String },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for HttpError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        HttpError::Unreachable { reason: e.reason }
    }
}

impl From<HttpError> for core::HttpError {
    fn from(e: HttpError) -> Self {
        let (failure, reason) = match e {
            HttpError::Offline { reason } => (core::HttpFailure::Offline, reason),
            HttpError::TimedOut { reason } => (core::HttpFailure::TimedOut, reason),
            HttpError::Unreachable { reason } => (core::HttpFailure::Unreachable, reason),
        };
        core::HttpError { failure, reason }
    }
}

/// Executes the core's requests with the platform's network stack.
#[uniffi::export(foreign)]
#[async_trait::async_trait]
pub trait HttpTransport: Send + Sync {
    /// Sends `request` (within its `timeout_ms`) and returns the response,
    /// whatever its status; throws only when no response came.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError>;
}

static TRANSPORT: RwLock<Option<Arc<dyn HttpTransport>>> = RwLock::new(None);

/// Registers the transport every phone of this process sends through
/// (replacing an earlier one). Call it at launch, in the app and in the
/// notification extension, before the first network call.
#[uniffi::export]
pub fn set_http_transport(transport: Arc<dyn HttpTransport>) {
    *TRANSPORT.write().unwrap_or_else(|p| p.into_inner()) = Some(transport);
}

/// The registered transport, as the core's port: read at each request, so
/// a phone opened before the registration uses it too.
pub(crate) struct Registered;

#[async_trait::async_trait]
impl core::HttpTransport for Registered {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, core::HttpError> {
        let transport = TRANSPORT.read().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(transport) = transport else {
            return Err(core::HttpError::unreachable(
                "no HTTP transport: the app registers one at launch (setHttpTransport)",
            ));
        };
        Ok(transport.send(request).await?)
    }
}

/// What the system reported of a hand-over ([`Handover`]).
#[derive(Debug, Clone, uniffi::Enum)]
pub enum HandoverResult {
    /// The server's response (any status).
    Response { response: HttpResponse },
    /// No response came: why.
    Failed {
        failure: HttpFailure,
        reason: String,
    },
}

impl From<HandoverResult> for qp_core::sync::HandoverOutcome {
    fn from(r: HandoverResult) -> Self {
        match r {
            HandoverResult::Response { response } => Ok(response),
            HandoverResult::Failed { failure, reason } => Err(core::HttpError { failure, reason }),
        }
    }
}
