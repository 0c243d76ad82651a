//! The web responder at `/app/`: files embedded in the binary at build time
//! (see `server/build_webapp.rs`; made by `scripts/build-web`), served with
//! a strict Content-Security-Policy: scripts and WebAssembly from this
//! origin only, no inline script or style, no request to another origin.
//!
//! Also what only the web app needs: signing out (the token revokes
//! itself), the server's VAPID public key for Web Push, and the check of a
//! `web` device's subscription against the push services allowed.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};

use super::auth::UserAuth;
use super::conditional::matches_validator;
use super::error::ApiError;
use crate::app::App;
use crate::pairing::DeviceFields;
use crate::push::webpush;
use crate::store::identity;

mod embedded {
    /// One file of the app, as the build embedded it.
    pub struct File {
        pub path: &'static str,
        pub raw: &'static [u8],
        /// The same bytes gzipped, when that saves.
        pub gzip: Option<&'static [u8]>,
        /// The same bytes compressed with Brotli, when that saves.
        pub br: Option<&'static [u8]>,
        /// A digest of `raw`: the file's validator (ETag).
        pub tag: &'static str,
    }
    include!(concat!(env!("OUT_DIR"), "/webapp_files.rs"));
}

/// Where the web app lives.
pub const APP_PATH: &str = "/app/";

/// What a page of the app may load: its own scripts and WebAssembly
/// (`wasm-unsafe-eval` allows compiling it, not `eval`), its own styles,
/// images and API; nothing inline, nothing from elsewhere, never framed.
pub const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; \
     worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Why `/app/` has no app: this binary was built without it on purpose
/// (`QP_WEB_APP=none`; otherwise the build fails, see
/// `server/build_webapp.rs`). Said in the API's JSON error shape, as plain
/// text: the server's error layer reshapes any other error body.
const NOT_BUILT: &str = "the web responder is not in this build of qp (built with \
     QP_WEB_APP=none): build it with scripts/build-web, then rebuild qp \
     (cargo build --release -p qp --bin qp)";

/// Whether this binary serves the web app at [`APP_PATH`].
pub fn embedded() -> bool {
    !embedded::FILES.is_empty()
}

/// Why the embedded WebAssembly may be older than this binary's sources
/// (the committed build in web/prebuilt, made from other sources), if so.
pub fn stale() -> Option<&'static str> {
    embedded::STALE
}

/// What `qp serve` says at start about the web app: a warning when it is
/// missing or may be stale, so an operator learns it from the log rather
/// than from a user.
pub fn log_status() {
    if !embedded() {
        tracing::warn!(path = APP_PATH, "{NOT_BUILT}");
    } else if let Some(why) = stale() {
        tracing::warn!(path = APP_PATH, "{why}");
    }
}

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/app", get(|| async { Redirect::permanent(APP_PATH) }))
        .route(
            "/app/",
            get(|headers: HeaderMap| async move { file("index.html", &headers) }),
        )
        .route(
            "/app/{*path}",
            get(|Path(p): Path<String>, headers: HeaderMap| async move { file(&p, &headers) }),
        )
        .route("/api/me/token", delete(sign_out))
        .route("/api/webpush/key", get(vapid_key))
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

/// A file of the app: compressed as the browser accepts (Brotli, else
/// gzip), with a strong validator (ETag, a digest of the file and the
/// coding), so a browser that has it gets a bodiless 304 on revalidation.
/// Files change only with the binary; `no-cache` has the browser ask each
/// time (the service worker's shell spares it the asking).
fn file(path: &str, request: &HeaderMap) -> Response {
    if !embedded() {
        return ApiError::not_found(NOT_BUILT).into_response();
    }
    let Some(found) = embedded::FILES.iter().find(|f| f.path == path) else {
        return (
            StatusCode::NOT_FOUND,
            security_headers("text/plain; charset=utf-8"),
            "not found",
        )
            .into_response();
    };
    let coding = [("br", found.br), ("gzip", found.gzip)]
        .into_iter()
        .find_map(|(name, bytes)| {
            Some((name, bytes?)).filter(|_| super::compress::accepts(request, name))
        });
    let (etag, body) = match coding {
        Some((name, bytes)) => (format!("\"{}-{name}\"", found.tag), bytes),
        None => (format!("\"{}\"", found.tag), found.raw),
    };
    let mut headers = HeaderMap::new();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::ETAG, HeaderValue::from_str(&etag).expect("hex"));
    if found.gzip.is_some() || found.br.is_some() {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if matches_validator(request, &etag) {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    headers.extend(security_headers(content_type(found.path)));
    if let Some((name, _)) = coding {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(name));
    }
    if path == "sw.js" {
        headers.insert("service-worker-allowed", HeaderValue::from_static(APP_PATH));
    }
    (StatusCode::OK, headers, body).into_response()
}

fn security_headers(ctype: &'static str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers
}

/// Additive, for the web responder: the server's VAPID public key, for
/// `pushManager.subscribe`. No token: it is public. A 404 says Web Push is
/// off on this server (the page then says so instead of asking the browser
/// for a permission that would bring nothing).
#[utoipa::path(get, path = "/api/webpush/key", tag = "responder",
    responses((status = 200, description = "The server's VAPID public key", body = super::openapi::VapidKey), (status = 404, description = "Web Push is not configured", body = super::openapi::ErrorBody)))]
pub(crate) async fn vapid_key(
    State(app): State<Arc<App>>,
) -> Result<Json<super::openapi::VapidKey>, ApiError> {
    // Held since the start (serve.rs): never read or made per request.
    let public_key = app
        .web_push_key
        .get()
        .cloned()
        .ok_or_else(|| ApiError::not_found("Web Push is not configured (--vapid-key)"))?;
    Ok(Json(super::openapi::VapidKey { public_key }))
}

/// A `web` device's subscription must point at an allowed push service:
/// a 422 naming `push_token` (after `prefix`) otherwise.
pub fn check_web_device(app: &App, fields: &DeviceFields, prefix: &str) -> Result<(), ApiError> {
    if fields.platform != "web" {
        return Ok(());
    }
    let allow = webpush::allowed_hosts(&app.settings.web_push_allow);
    webpush::check_registration(&fields.push_token, &allow).map_err(|e| {
        let path = format!("{prefix}push_token");
        ApiError::invalid(&path, "invalid_value", format!("{path}: {e}"))
    })?;
    Ok(())
}

/// Sign out: the presented user token is revoked (with the devices it
/// registered, so this browser gets no more pushes), in the audit log with
/// the person as its actor.
#[utoipa::path(delete, path = "/api/me/token", operation_id = "sign_out", tag = "responder",
    responses((status = 204, description = "The presented token is revoked, with the devices it registered"), (status = 401, description = "Missing, unknown or revoked token", body = super::openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = super::openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn sign_out(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let hash = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .map(|(_, t)| crate::ids::token_hash(t.trim()))
        .ok_or_else(|| ApiError::unauthorized("missing Authorization: Bearer <token> header"))?;
    let key = hash.clone();
    app.db
        .run(move |conn| -> Result<_, ApiError> {
            crate::app::admin::audited(
                conn,
                &format!("user:{}", user.id),
                ("token.revoke", &key[..12], "signed out"),
                |tx| identity::revoke_token_in(tx, &key),
            )?;
            Ok(())
        })
        .await?;
    app.tokens.forget(&hash);
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The build script and `scripts/build-web` compute the digest of the
    /// WebAssembly's sources each their own way (Rust, coreutils): they
    /// must agree, or web/prebuilt would be called stale forever, or never.
    #[test]
    fn the_build_and_build_web_agree_on_the_sources_digest() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = std::process::Command::new(root.join("scripts/build-web"))
            .arg("--sources-digest")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let said = String::from_utf8(out.stdout).unwrap();
        assert_eq!(said.trim(), super::embedded::SOURCES_DIGEST);
    }
}
