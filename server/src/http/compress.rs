//! Content coding of the API's JSON: a body above [`MIN_BYTES`] goes out
//! Brotli or gzip when the request accepts one, as the web app's files do
//! (those are compressed once, at build time). A person's history or a long
//! pending list is mostly repeated field names and prose: several times
//! smaller on the wire, which is what a first visit and a reload pay for.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;

/// Bodies smaller than this go out as they are: a coding's own framing
/// and a header would eat what it saves.
pub const MIN_BYTES: usize = 1024;

/// The largest body read whole to compress it; the API's answers are far
/// smaller (a page of history is at most 200 questions).
const MAX_BYTES: usize = 16 << 20;

/// Brotli's effort: a quarter of its top setting compresses JSON nearly as
/// well as the top at a tiny fraction of the time, on every response.
const BROTLI_QUALITY: u32 = 5;

/// Whether `Accept-Encoding` allows `coding` (named or `*`, with a q above 0).
pub fn accepts(request: &HeaderMap, coding: &str) -> bool {
    request
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|offered| {
            let mut parts = offered.split(';');
            let name = parts.next().unwrap_or("").trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next()
                .unwrap_or(1.0);
            (name.eq_ignore_ascii_case(coding) || name == "*") && q > 0.0
        })
}

/// The coding a response to this request may use: Brotli, else gzip.
pub fn wanted(request: &HeaderMap) -> Option<&'static str> {
    ["br", "gzip"]
        .into_iter()
        .find(|coding| accepts(request, coding))
}

/// Whether a response to a request for `path` may be coded at all. Never
/// for those carrying a secret (a device's or agent's token, an invite's
/// code, an OAuth token or client): a coded body's length tells someone
/// watching the wire how well a part they can inject matched the secret
/// beside it (BREACH). Listed here, in one place; SECURITY.md says why
/// the feed and the history are still coded.
pub fn allowed_for(path: &str) -> bool {
    let secret = path == "/api/pair"
        || path == "/api/agent/login"
        || path == "/api/me/token"
        || path.starts_with("/oauth/")
        || (path.starts_with("/api/admin/") && path.ends_with("/invites"));
    !secret
}

/// Whether `resp` is JSON of ours not yet coded: what [`encode`] takes.
pub fn applies(resp: &Response) -> bool {
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    // `no-store` marks a response that holds a secret: never coded either.
    let no_store = resp
        .headers()
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("no-store"));
    json && !no_store && !resp.headers().contains_key(header::CONTENT_ENCODING)
}

/// `resp` coded with `coding` when its body is at least [`MIN_BYTES`]. A
/// strong `ETag` becomes weak: the coded bytes are not the validator's
/// bytes, and `If-None-Match` compares weakly, so a client that kept either
/// still gets its 304.
pub async fn encode(resp: Response, coding: &'static str) -> Response {
    let (mut parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("reading a response to compress it: {e}");
            return axum::response::IntoResponse::into_response(super::ApiError::internal());
        }
    };
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    if bytes.len() < MIN_BYTES {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let coded = match coding {
        "br" => brotli_bytes(&bytes),
        _ => gzip_bytes(&bytes),
    };
    let Ok(coded) = coded else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    if let Some(tag) = parts.headers.get(header::ETAG).cloned() {
        let weak = tag.to_str().ok().filter(|t| !t.starts_with("W/"));
        if let Some(v) = weak.and_then(|t| HeaderValue::from_str(&format!("W/{t}")).ok()) {
            parts.headers.insert(header::ETAG, v);
        }
    }
    Response::from_parts(parts, Body::from(coded))
}

fn brotli_bytes(data: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write as _;
    let mut out = Vec::with_capacity(data.len() / 4);
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, BROTLI_QUALITY, 22);
        w.write_all(data)?;
        w.flush()?;
    }
    Ok(out)
}

fn gzip_bytes(data: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write as _;
    let mut w = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4),
        flate2::Compression::default(),
    );
    w.write_all(data)?;
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(body: &str, etag: Option<&str>) -> Response {
        let mut r = Response::new(Body::from(body.to_string()));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(t) = etag {
            r.headers_mut()
                .insert(header::ETAG, HeaderValue::from_str(t).unwrap());
        }
        r
    }

    #[tokio::test]
    async fn a_large_body_is_coded_and_its_etag_made_weak_a_small_one_left_alone() {
        let big = format!("[{}]", vec!["{\"prompt\":\"Deploy?\"}"; 200].join(","));
        let out = encode(json(&big, Some("\"abc\"")), "gzip").await;
        assert_eq!(out.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(out.headers()[header::ETAG], "W/\"abc\"");
        let coded = axum::body::to_bytes(out.into_body(), MAX_BYTES)
            .await
            .unwrap();
        let mut plain = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&coded[..]), &mut plain)
            .unwrap();
        assert_eq!(plain, big);
        assert!(
            coded.len() < big.len() / 4,
            "{} of {}",
            coded.len(),
            big.len()
        );

        let out = encode(json("{\"a\":1}", Some("\"abc\"")), "br").await;
        assert!(!out.headers().contains_key(header::CONTENT_ENCODING));
        assert_eq!(out.headers()[header::ETAG], "\"abc\"");
    }

    #[test]
    fn responses_carrying_secrets_are_never_coded() {
        for path in [
            "/api/pair",
            "/api/agent/login",
            "/api/me/token",
            "/oauth/token",
            "/oauth/register",
            "/api/admin/users/u1/invites",
            "/api/admin/agents/a1/invites",
        ] {
            assert!(!allowed_for(path), "{path}");
        }
        for path in [
            "/api/questions/history",
            "/api/questions/pending/wait",
            "/openapi.json",
        ] {
            assert!(allowed_for(path), "{path}");
        }
        let mut secret = json("{\"token\":\"qpu_x\"}", None);
        assert!(applies(&secret));
        secret
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        assert!(!applies(&secret), "a no-store response was coded");
    }

    #[test]
    fn the_coding_follows_accept_encoding() {
        let mut h = HeaderMap::new();
        assert_eq!(wanted(&h), None);
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, deflate, br;q=0"),
        );
        assert_eq!(wanted(&h), Some("gzip"));
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, deflate, br, zstd"),
        );
        assert_eq!(wanted(&h), Some("br"));
    }
}
