//! Validators (`ETag`, `If-None-Match`): a client that already has a
//! response's bytes gets a bodiless 304 for them, not the bytes again. The
//! web app's files use it, and so does a person's history, which a
//! reloaded page or app keeps and asks for again.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Whether `If-None-Match` names `etag` (or `*`): the client has these bytes.
pub fn matches_validator(request: &HeaderMap, etag: &str) -> bool {
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
}

/// Whether `If-None-Match` names `etag` in its weak form only.
fn weakly_named(request: &HeaderMap, etag: &str) -> bool {
    let named: Vec<&str> = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .collect();
    !named.contains(&etag) && named.iter().any(|t| t.strip_prefix("W/") == Some(etag))
}

/// `body` as JSON with a strong validator (a digest of the bytes, so equal
/// bytes, and only those, share it), or a 304 when the request names it.
/// `private, no-cache`: a person's data, never kept by a shared cache, and
/// asked for again each time (the client keeps it and sends the validator).
pub fn json_with_etag<T: Serialize>(request: &HeaderMap, body: &T) -> Response {
    let bytes = match serde_json::to_vec(body) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("serializing a response: {e}");
            return super::ApiError::internal().into_response();
        }
    };
    let etag = format!("\"{}\"", &hex::encode(Sha256::digest(&bytes))[..32]);
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    headers.insert(header::ETAG, HeaderValue::from_str(&etag).expect("hex"));
    if matches_validator(request, &etag) {
        // The 304 names the validator in the form the client kept it: weak
        // when it kept a coded 200's (`W/…`), so the two agree.
        if weakly_named(request, &etag) {
            let weak = HeaderValue::from_str(&format!("W/{etag}")).expect("hex");
            headers.insert(header::ETAG, weak);
        }
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    (StatusCode::OK, headers, bytes).into_response()
}
