//! OAuth over HTTP: the routes of the authorization server and its
//! metadata, their pages, and the one place an [`OAuthError`] becomes a
//! response (its status, its JSON body or a page in the person's
//! language). What each endpoint does is `crate::oauth`'s.

pub mod authorize;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::error::ApiError;
use crate::app::App;
use crate::oauth::words::Words;
use crate::oauth::{self, escape, ErrorKind, OAuthError};

/// The per-address limit, in front of the endpoints that register a
/// client, may fetch a metadata document, or ask a person.
async fn per_address(
    axum::extract::State(app): axum::extract::State<Arc<App>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use axum::http::Method;
    let costly = matches!(
        (req.method(), req.uri().path()),
        (
            &Method::POST,
            "/oauth/register" | "/oauth/authorize" | "/oauth/device_authorization"
        ) | (&Method::GET | &Method::HEAD, "/oauth/authorize")
    );
    let from = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        // An IPv6 client is one /64 (one subscriber's whole block), as the
        // pairing limits count it.
        .map(|c| crate::pairing::address_group(c.0.ip()));
    if let (true, Some(ip)) = (costly, from) {
        if app.oauth_limits.per_address.check_key(&ip).is_err() {
            let e = OAuthError::slow(
                "too many sign-in requests from your address; try again in a minute",
                60,
            );
            // A person at the authorization page reads it as a page in
            // their language; a client gets the JSON error.
            return if wants_html(req.headers()) {
                error_page(e, &words(req.headers()))
            } else {
                e.into_response()
            };
        }
    }
    next.run(req).await
}

/// The routes of the authorization server and the metadata.
pub fn routes(app: Arc<App>) -> Router<Arc<App>> {
    // What a browser-based MCP client calls from its own origin: the
    // metadata, registration, the token endpoint and revocation.
    let for_clients = Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(server_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(authorization_server),
        )
        .route("/oauth/register", post(register))
        .route("/oauth/token", post(token))
        .route("/oauth/revoke", post(revoke))
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            per_address,
        ))
        // Outermost, so a refusal (a 429) reaches the page readable too.
        .layer(cors());
    // The person's pages and what only they call (same origin, no CORS).
    let for_people = Router::new()
        .route(
            "/oauth/authorize",
            get(authorize::page).post(authorize::start),
        )
        .route("/oauth/authorize/status", post(authorize::status))
        .route("/oauth/device_authorization", post(device_authorization))
        .route("/oauth/device", get(device_page))
        .route_layer(axum::middleware::from_fn_with_state(app, per_address));
    for_clients.merge(for_people)
}

/// Cross-origin access for browser-based MCP clients (RFC 8414 and 9728
/// documents, registration, tokens, and `/mcp` itself): any origin, as no
/// credential here is ambient (bearer tokens and PKCE, never cookies), so
/// a page on another origin gets nothing it did not already hold.
pub fn cors() -> tower_http::cors::CorsLayer {
    use axum::http::{HeaderName, Method};
    tower_http::cors::CorsLayer::new()
        .allow_origin(tower_http::cors::Any)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            HeaderName::from_static("mcp-session-id"),
            HeaderName::from_static("mcp-protocol-version"),
            HeaderName::from_static("last-event-id"),
        ])
        .expose_headers([
            header::WWW_AUTHENTICATE,
            HeaderName::from_static("mcp-session-id"),
        ])
        .max_age(std::time::Duration::from_secs(3600))
}

/// The status of each kind of refusal, the one place OAuth's are chosen
/// (RFC 6749 section 5.2 and RFC 8628 section 3.5: 400 for the token
/// endpoint's errors), with the seconds of a Retry-After; an error of the
/// question machinery keeps the status and message the API gives it.
fn shape(
    e: OAuthError,
) -> (
    StatusCode,
    &'static str,
    String,
    Option<u64>,
    Option<&'static str>,
) {
    let error = e.error();
    let (status, retry_after) = match e.kind {
        ErrorKind::InvalidRequest
        | ErrorKind::InvalidClient
        | ErrorKind::InvalidGrant
        | ErrorKind::InvalidClientMetadata
        | ErrorKind::InvalidRedirectUri
        | ErrorKind::InvalidTarget
        | ErrorKind::InvalidScope
        | ErrorKind::UnsupportedGrantType
        | ErrorKind::UnsupportedResponseType
        | ErrorKind::Denied
        | ErrorKind::AuthorizationPending
        | ErrorKind::SlowDown
        | ErrorKind::ExpiredToken => (StatusCode::BAD_REQUEST, None),
        ErrorKind::NotAllowed => (StatusCode::FORBIDDEN, None),
        ErrorKind::TooMany { retry_after } => (StatusCode::TOO_MANY_REQUESTS, Some(retry_after)),
        ErrorKind::Server => (StatusCode::INTERNAL_SERVER_ERROR, None),
        ErrorKind::App(app) => {
            let api = ApiError::from(app);
            return (api.status, error, api.message, api.retry_after, e.reason);
        }
    };
    (status, error, e.description, retry_after, e.reason)
}

/// An OAuth error response (RFC 6749 section 5.2): `error` and an
/// `error_description` that names the field at fault.
impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let (status, error, description, retry_after, _) = shape(self);
        let mut resp = (
            status,
            Json(json!({ "error": error, "error_description": description })),
        )
            .into_response();
        no_store(&mut resp);
        add_retry_after(&mut resp, retry_after);
        resp
    }
}

/// The refusal as a page, for a browser (a person at the sign-in pages):
/// the reason in their language, and the field-naming description
/// (English, for the client's developer) under it, marked as English; the
/// status and Retry-After as in the JSON answer.
pub fn error_page(e: OAuthError, words: &Words) -> Response {
    let (status, error, description, retry_after, reason) = shape(e);
    let reason = reason.unwrap_or("signin-error-request");
    let body = format!(
        "<h1>{}</h1><p>{}</p><details><summary>{}</summary><p lang=en dir=ltr><code>{}: {}</code></p></details>",
        words.html("signin-error-title", &[]),
        words.html(reason, &[]),
        words.html("signin-error-details", &[]),
        escape(error),
        escape(&description),
    );
    let mut resp = html_page(words, &words.text("signin-error-title", &[]), &body);
    *resp.status_mut() = status;
    add_retry_after(&mut resp, retry_after);
    resp
}

fn add_retry_after(resp: &mut Response, retry_after: Option<u64>) {
    if let Some(s) = retry_after {
        if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
}

/// A refusal for whoever asked: a page in their language for a browser
/// showing it to a person, JSON for anyone else.
pub fn refused(e: OAuthError, headers: &HeaderMap) -> Response {
    if wants_html(headers) {
        error_page(e, &words(headers))
    } else {
        e.into_response()
    }
}

/// A JSON answer that may carry tokens or codes: never cached.
fn no_store_json(v: Value) -> Response {
    let mut r = Json(v).into_response();
    no_store(&mut r);
    r
}

/// The words of the language the browser asks for (`Accept-Language`).
pub fn words(headers: &HeaderMap) -> Words {
    let accept = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    Words::for_accept_language(accept)
}

/// Whether the caller is a browser showing a page to a person (its
/// `Accept` names HTML): refusals then come as a page in their language,
/// to anyone else as JSON.
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"))
}

/// Responses that carry tokens or codes are never cached.
pub fn no_store(resp: &mut Response) {
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp.headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

/// A small HTML page (the authorization and device pages). Its scripts
/// run only by this response's nonce (and the web responder's own files,
/// `/app/store.js`, for a person signed in there): the pages show a
/// client's name, and the browser's session token is within a script's
/// reach on this origin, so nothing inline that the server did not write
/// may run.
pub fn html_page(words: &Words, title: &str, body: &str) -> Response {
    let nonce = crate::ids::random_hex(16);
    // Every `<script` in `body` is the server's own: text from a client
    // or a person reaches it escaped (`<` as `&lt;`).
    let body = body.replace("<script", &format!("<script nonce=\"{nonce}\""));
    let page = format!(
        "<!doctype html><html lang=\"{}\" dir=\"{}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;line-height:1.5}}\
         label{{display:block;margin-top:1rem}}input{{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}}\
         button{{margin-top:1.2rem;font-size:1rem;padding:.5rem 1rem}}.muted{{color:#666}}</style></head><body>{}</body></html>",
        words.language(),
        words.dir(),
        escape(title),
        body
    );
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'self' 'nonce-{nonce}'; \
         connect-src 'self'; form-action 'self' https: http:; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut resp = (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_string()),
            (header::X_FRAME_OPTIONS, "DENY".to_string()),
            (header::CONTENT_SECURITY_POLICY, csp),
            // Same-origin only: the client's redirect learns nothing of this
            // page, and a browser without Fetch Metadata still sends this
            // page's own `Origin` with its form (under `no-referrer`,
            // `null`, which the form's check refuses).
            (header::REFERRER_POLICY, "same-origin".to_string()),
        ],
        page,
    )
        .into_response();
    no_store(&mut resp);
    resp
}

/// `GET /.well-known/oauth-protected-resource/mcp`: the metadata of
/// `/mcp`, where its 401 points.
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource/mcp", operation_id = "oauth_protected_resource_mcp", tag = "oauth",
    responses((status = 200, description = "RFC 9728 metadata of `/mcp` (where its 401 points)", content_type = "application/json")))]
pub async fn protected_resource(State(app): State<Arc<App>>) -> Json<Value> {
    Json(oauth::metadata::protected_resource(&app))
}

/// `GET /.well-known/oauth-protected-resource`: the metadata of this
/// server as a whole, for a client that did not read the 401's header and
/// looks at the root. RFC 9728 §3.3 has a document's `resource` be the
/// identifier its well-known address was made from, here the origin; a
/// token requested for the origin is issued for `/mcp`, the one resource
/// here.
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource", operation_id = "oauth_protected_resource", tag = "oauth",
    responses((status = 200, description = "RFC 9728 metadata of this server as a whole (`resource`: its origin)", content_type = "application/json")))]
pub async fn server_resource(State(app): State<Arc<App>>) -> Json<Value> {
    Json(oauth::metadata::server_resource(&app))
}

/// `GET /.well-known/oauth-authorization-server`.
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", operation_id = "oauth_authorization_server", tag = "oauth",
    responses((status = 200, description = "RFC 8414 authorization-server metadata", content_type = "application/json")))]
pub async fn authorization_server(State(app): State<Arc<App>>) -> Json<Value> {
    Json(oauth::metadata::authorization_server(&app))
}

/// `POST /oauth/register` (RFC 7591).
#[utoipa::path(post, path = "/oauth/register", operation_id = "oauth_register", tag = "oauth",
    request_body = crate::http::openapi::OAuthClientMetadata,
    responses((status = 201, description = "Registered: the metadata with its `client_id`", body = crate::http::openapi::OAuthClientMetadata), (status = 400, description = "`invalid_client_metadata` or `invalid_redirect_uri`, naming the field", body = crate::http::openapi::OAuthErrorBody), (status = 429, description = "Over a rate limit; see Retry-After", body = crate::http::openapi::OAuthErrorBody)))]
pub async fn register(
    State(app): State<Arc<App>>,
    ConnectInfo(from): ConnectInfo<SocketAddr>,
    body: Bytes,
) -> Response {
    match oauth::clients::register(&app, from.ip(), &body).await {
        Ok(v) => (StatusCode::CREATED, Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `POST /oauth/token`.
#[utoipa::path(post, path = "/oauth/token", operation_id = "oauth_token", tag = "oauth",
    request_body(content = crate::http::openapi::OAuthTokenRequest, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Tokens", body = crate::http::openapi::OAuthTokens), (status = 400, description = "`invalid_grant` (wrong verifier, replayed code, reused refresh token: the grant ends), `invalid_target`, `authorization_pending`, `slow_down`, …", body = crate::http::openapi::OAuthErrorBody), (status = 429, description = "Over a rate limit; see Retry-After", body = crate::http::openapi::OAuthErrorBody)))]
pub async fn token(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match oauth::token::grant(&app, &body).await {
        Ok(v) => no_store_json(v),
        Err(e) => e.into_response(),
    }
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was
/// known. A refresh token ends its grant; an access token only itself.
#[utoipa::path(post, path = "/oauth/revoke", operation_id = "oauth_revoke", tag = "oauth",
    request_body(content_type = "application/x-www-form-urlencoded", description = "`token` (and optionally `client_id`), RFC 7009: a refresh token ends its grant"),
    responses((status = 200, description = "Revoked, or was not known")))]
pub async fn revoke(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match oauth::token::revoke(&app, &body).await {
        Ok(()) => {
            let mut r = StatusCode::OK.into_response();
            no_store(&mut r);
            r
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /oauth/device_authorization`: `client_id=qp-cli`, `user`,
/// `room`, `label` (the agent's name).
#[utoipa::path(post, path = "/oauth/device_authorization", operation_id = "oauth_device_authorization", tag = "oauth",
    request_body(content_type = "application/x-www-form-urlencoded", description = "`client_id=qp-cli`, `user` (else the server's default owner), `room`, `label` (the agent's name)"),
    responses((status = 200, description = "Started: the person is asked on their phone now", body = crate::http::openapi::OAuthDeviceAuthorization), (status = 400, description = "A field breaks a rule: `error_description` names it", body = crate::http::openapi::OAuthErrorBody), (status = 429, description = "Over a rate limit; see Retry-After", body = crate::http::openapi::OAuthErrorBody)))]
pub async fn device_authorization(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match oauth::device::start(&app, &body).await {
        Ok(v) => no_store_json(v),
        Err(e) => e.into_response(),
    }
}

/// `GET /oauth/device`: there is nothing to type here; the question is on
/// the phone.
#[utoipa::path(get, path = "/oauth/device", operation_id = "oauth_device_page", tag = "oauth",
    responses((status = 200, description = "What `verification_uri` shows: the person answers on their phone", content_type = "text/html")))]
pub async fn device_page(headers: HeaderMap) -> Response {
    let words = words(&headers);
    let title = words.text("signin-device-title", &[]);
    let body = format!(
        "<h1>{}</h1><p>{}</p>",
        escape(&title),
        words.html(
            "signin-device-body",
            &[
                ("command", "<code>qp login</code>"),
                ("allow", &format!("<b>{}</b>", escape(&words.allow()))),
            ]
        )
    );
    html_page(&words, &title, &body)
}

#[cfg(test)]
mod page_tests {
    use super::*;

    /// A failure of the server (500) told the person
    /// the app had made a bad request; it says the server failed, in
    /// their language, with the status kept.
    #[tokio::test]
    async fn a_server_failure_on_a_page_blames_the_server_not_the_app() {
        for accept in ["de-DE", "ja"] {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT_LANGUAGE, accept.parse().unwrap());
            let words = words(&h);
            let resp = error_page(OAuthError::server("disk full"), &words);
            assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            let html = String::from_utf8(body.to_vec()).unwrap();
            assert!(
                html.contains(&words.html("signin-error-server", &[])),
                "{html}"
            );
            assert!(
                !html.contains(&words.html("signin-error-request", &[])),
                "{html}"
            );
            assert!(!html.contains("disk full"), "{html}");
        }
    }
}
