//! The phone core's HTTP interface ([`qp_core::http::HttpTransport`]) over
//! reqwest, for the phone outside a phone: `qp device`, the tests and any
//! desktop use. The phone library itself carries no HTTP client: on iOS and
//! Android the platform's own stack executes the same requests.

use std::time::Duration;

use qp_core::http::{HttpError, HttpFailure, HttpMethod, HttpRequest, HttpResponse, HttpTransport};

use crate::{CaError, ExtraCa};

/// Executes the phone core's requests with reqwest, trusting the web's
/// roots and an [`ExtraCa`]. One client (one connection pool) for all.
#[derive(Clone)]
pub struct ReqwestTransport {
    http: reqwest::Client,
}

impl ReqwestTransport {
    /// A transport trusting the web's roots and `ca`.
    pub fn new(ca: &ExtraCa) -> Result<ReqwestTransport, CaError> {
        let http = ca
            .builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| CaError::Client(qp_core::logging::error_chain(&e)))?;
        Ok(ReqwestTransport { http })
    }
}

#[async_trait::async_trait]
impl HttpTransport for ReqwestTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let method = match request.method {
            HttpMethod::Get => reqwest::Method::GET,
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Put => reqwest::Method::PUT,
            HttpMethod::Delete => reqwest::Method::DELETE,
        };
        let mut builder = self
            .http
            .request(method, &request.url)
            .timeout(request.timeout());
        for h in &request.headers {
            builder = builder.header(&h.name, &h.value);
        }
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let failed = |e: reqwest::Error| HttpError {
            failure: if e.is_timeout() {
                HttpFailure::TimedOut
            } else {
                HttpFailure::Unreachable
            },
            // Without the URL: error text reaches logs and the person's
            // status line; keep it short.
            reason: qp_core::logging::error_chain(&e.without_url()),
        };
        let response = builder.send().await.map_err(failed)?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(failed)?;
        Ok(HttpResponse {
            status,
            body: body.to_vec(),
        })
    }
}
