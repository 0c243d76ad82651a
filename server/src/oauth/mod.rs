//! OAuth 2.1 for remote MCP clients (the MCP authorization specification,
//! revision 2026-07-28, compatible with 2025-06-18 clients) and the device
//! authorization of `qp login --url`.
//!
//! - [`metadata`]: RFC 9728 protected-resource and RFC 8414
//!   authorization-server metadata; `/mcp`'s 401 points at the first.
//! - [`clients`]: Dynamic Client Registration (RFC 7591) and Client ID
//!   Metadata Documents, fetched through [`fetch`] (https, size, time and
//!   address limits).
//! - [`consent`]: the consent is a question to the named person, asked and
//!   read through the question machinery; an approval makes an agent owned
//!   by that person, scoped to one room.
//! - [`authorize`]: the authorization page (PKCE S256 only, exact redirect
//!   URIs, `iss` in the response, RFC 9207).
//! - [`token`]: codes for tokens, rotating refresh tokens (a reused one ends
//!   its grant), revocation (RFC 7009), and the bearer check of `/mcp`
//!   (the audience, RFC 8707, on every request).
//! - [`device`]: RFC 8628 for `qp login --url`.
//! - [`policy`]: who may approve a sign-in, whom its agent may ask
//!   (`crate::sign_in_policy`: below `config`, which holds its settings).
//!
//! Secrets are stored only as hashes (`store::oauth`).

pub mod authorize;
pub mod clients;
pub mod consent;
pub mod device;
pub mod fetch;
pub mod metadata;
pub use crate::sign_in_policy as policy;
pub mod token;
pub mod words;

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::json;

use crate::app::App;

/// Access tokens live this long (seconds); refresh tokens rotate.
pub const ACCESS_TTL_SECS: i64 = 900;
pub const REFRESH_TTL_SECS: i64 = 30 * 24 * 3600;
/// An authorization code must be redeemed within this.
pub const CODE_TTL_SECS: i64 = 60;
/// A consent question (and the page or device code waiting on it) expires
/// after this.
pub const CONSENT_TTL_SECS: i64 = 300;
/// At most this many consents may wait for one person, and for one client.
pub const MAX_PENDING_PER_USER: i64 = 3;
pub const MAX_PENDING_PER_CLIENT: i64 = 20;
/// Prefixes: access tokens, refresh tokens.
pub const ACCESS_PREFIX: &str = "qpo_";
pub const REFRESH_PREFIX: &str = "qpr_";

/// The consent flow's rate limits: per person asked, per client, per
/// source address (the endpoints that cost a registration, a metadata
/// fetch or a question: one caller cannot use up the server-wide budgets
/// below on everyone's behalf), and registrations and metadata-document
/// fetches overall (no push spam through the consent flow, no fetches on
/// anyone's behalf in bulk).
pub struct Limits {
    pub per_user: DefaultKeyedRateLimiter<String>,
    pub per_client: DefaultKeyedRateLimiter<String>,
    pub per_address: DefaultKeyedRateLimiter<IpAddr>,
    pub registrations: DefaultDirectRateLimiter,
    pub fetches: DefaultDirectRateLimiter,
}

impl Default for Limits {
    fn default() -> Self {
        let q = |per_min: u32, burst: u32| {
            Quota::per_minute(NonZeroU32::new(per_min).unwrap_or(NonZeroU32::MIN))
                .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN))
        };
        Limits {
            per_user: RateLimiter::keyed(q(6, 6)),
            per_client: RateLimiter::keyed(q(30, 10)),
            // A person signing in makes two or three such requests; an
            // office behind one address, a few people at once. One
            // address gets at most a tenth of the server's registrations
            // and a fifth of its fetches.
            per_address: RateLimiter::keyed(q(60, 30)),
            registrations: RateLimiter::direct(q(600, 100)),
            fetches: RateLimiter::direct(q(300, 60)),
        }
    }
}

impl Limits {
    /// Forgets the keys whose budgets are full again (the keyed limiters
    /// otherwise keep one entry per address or client ever seen).
    pub fn prune(&self) {
        self.per_user.retain_recent();
        self.per_client.retain_recent();
        self.per_address.retain_recent();
    }
}

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
                e.into_page(&words::Words::of(req.headers()))
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
            get(metadata::server_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(metadata::protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata::authorization_server),
        )
        .route("/oauth/register", post(clients::register))
        .route("/oauth/token", post(token::token))
        .route("/oauth/revoke", post(token::revoke))
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
        .route(
            "/oauth/device_authorization",
            post(device::device_authorization),
        )
        .route("/oauth/device", get(device::page))
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

/// The issuer identifier: this server's public URL.
pub fn issuer(app: &App) -> String {
    app.settings.public_url()
}

/// The one resource this server protects: its `/mcp` endpoint.
pub fn resource(app: &App) -> String {
    format!("{}/mcp", issuer(app))
}

/// Whether a client's `resource` names this server's `/mcp`, or this
/// server as a whole (its origin, what the root protected-resource
/// metadata names): either way the token is issued for `/mcp`, the one
/// resource here, and checked against it on every request.
pub fn is_our_resource(app: &App, given: &str) -> bool {
    // Compared as URLs, not strings: the scheme and host in any case and an
    // explicit default port name the same resource (the MCP spec asks
    // servers to accept them); the path must be /mcp, or the server's own
    // (its public URL's, usually empty).
    let same = |u: &str| reqwest::Url::parse(u.trim_end_matches('/')).ok();
    match (same(given), same(&resource(app))) {
        (Some(g), Some(r)) => {
            let path = g.path().trim_end_matches('/');
            let base = r.path().strip_suffix("/mcp").unwrap_or(r.path());
            g.origin() == r.origin()
                && (path == r.path() || path == base.trim_end_matches('/'))
                && g.query().is_none()
                && g.fragment().is_none()
        }
        _ => false,
    }
}

/// An OAuth error response (RFC 6749 section 5.2): `error` and an
/// `error_description` that names the field at fault.
#[derive(Debug)]
pub struct OAuthError {
    pub status: StatusCode,
    pub error: &'static str,
    pub description: String,
    pub retry_after: Option<u64>,
    /// What a person reads on the sign-in pages (a message of
    /// `server/locales/`); `None` is the general refusal, with
    /// `description` as the details for the client's developer.
    pub reason: Option<&'static str>,
}

impl OAuthError {
    pub fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
            retry_after: None,
            reason: None,
        }
    }
    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", description)
    }
    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_grant", description)
    }
    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_client", description)
    }
    pub fn slow(description: impl Into<String>, retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "temporarily_unavailable",
            description,
        );
        e.retry_after = Some(retry_after.max(1));
        e.reason = Some("signin-error-too-many");
        e
    }
    /// The same refusal, told on a page as the message `reason`.
    pub fn told_as(mut self, reason: &'static str) -> Self {
        self.reason = Some(reason);
        self
    }

    /// The refusal as a page, for a browser (a person at the sign-in
    /// pages): the reason in their language, and the field-naming
    /// description (English, for the client's developer) under it, marked
    /// as English; the status and Retry-After as in the JSON answer.
    pub fn into_page(self, words: &words::Words) -> Response {
        let reason = self.reason.unwrap_or("signin-error-request");
        let body = format!(
            "<h1>{}</h1><p>{}</p><details><summary>{}</summary><p lang=en dir=ltr><code>{}: {}</code></p></details>",
            words.html("signin-error-title", &[]),
            words.html(reason, &[]),
            words.html("signin-error-details", &[]),
            escape(self.error),
            escape(&self.description),
        );
        let mut resp = html_page(words, &words.text("signin-error-title", &[]), &body);
        *resp.status_mut() = self.status;
        self.add_retry_after(&mut resp);
        resp
    }

    fn add_retry_after(&self, resp: &mut Response) {
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
    }
    pub fn server(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "oauth: internal error");
        let mut e = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal error; see the server log",
        );
        // The server's fault, not the app's: the page says so.
        e.reason = Some("signin-error-server");
        e
    }
}

impl From<crate::store::DbError> for OAuthError {
    fn from(e: crate::store::DbError) -> Self {
        OAuthError::server(e)
    }
}

impl From<crate::store::StoreError> for OAuthError {
    fn from(e: crate::store::StoreError) -> Self {
        OAuthError::server(e)
    }
}

impl From<crate::app::AppError> for OAuthError {
    fn from(e: crate::app::AppError) -> Self {
        crate::http::error::ApiError::from(e).into()
    }
}

impl From<crate::http::error::ApiError> for OAuthError {
    fn from(e: crate::http::error::ApiError) -> Self {
        let error = match e.status.as_u16() {
            429 => "temporarily_unavailable",
            500..=599 => "server_error",
            _ => "invalid_request",
        };
        let mut out = OAuthError::new(e.status, error, e.message);
        out.retry_after = e.retry_after;
        out
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut resp = (
            self.status,
            Json(json!({ "error": self.error, "error_description": self.description })),
        )
            .into_response();
        no_store(&mut resp);
        self.add_retry_after(&mut resp);
        resp
    }
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

/// Text for an HTML page, escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A small HTML page (the authorization and device pages). Its scripts
/// run only by this response's nonce (and the web responder's own files,
/// `/app/store.js`, for a person signed in there): the pages show a
/// client's name, and the browser's session token is within a script's
/// reach on this origin, so nothing inline that the server did not write
/// may run.
pub fn html_page(words: &words::Words, title: &str, body: &str) -> Response {
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

/// The body of a form post (`application/x-www-form-urlencoded`) as
/// name-value pairs; a name given twice is refused (RFC 6749 section 3.1).
pub fn form(body: &[u8]) -> Result<std::collections::HashMap<String, String>, OAuthError> {
    let mut out = std::collections::HashMap::new();
    for (k, v) in form_urlencoded::parse(body) {
        if out.insert(k.to_string(), v.into_owned()).is_some() {
            return Err(OAuthError::invalid_request(format!(
                "{k}: given more than once"
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod resource_tests {
    use super::*;

    #[test]
    fn our_resource_is_recognized_in_any_case_and_with_its_default_port() {
        let settings = crate::config::Settings {
            public_url: Some("https://qp.example.com".into()),
            ..Default::default()
        };
        let app = App::new(
            crate::store::Db::open(&crate::store::Database::Sqlite(
                tempfile::tempdir().unwrap().path().join("r.sqlite"),
            ))
            .unwrap(),
            settings,
        );
        for ok in [
            "https://qp.example.com/mcp",
            "https://qp.example.com/mcp/",
            "HTTPS://QP.Example.COM/mcp",
            "https://qp.example.com:443/mcp",
            // The server as a whole (the root metadata's resource).
            "https://qp.example.com",
            "https://qp.example.com/",
        ] {
            assert!(is_our_resource(&app, ok), "{ok}");
        }
        for no in [
            "https://qp.example.com/other",
            "https://qp.example.com:8443/mcp",
            "http://qp.example.com/mcp",
            "https://evil.example/mcp",
            "https://qp.example.com/mcp?x=1",
            "https://qp.example.com/mcp/x",
            "https://qp.example.com/m",
        ] {
            assert!(!is_our_resource(&app, no), "{no}");
        }
    }
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
            let words = words::Words::of(&h);
            let resp = OAuthError::server("disk full").into_page(&words);
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
