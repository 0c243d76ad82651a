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
//! Secrets are stored only as hashes (`store::oauth`). The routes, the
//! pages and the HTTP statuses of these errors are `http::oauth`'s: this
//! module says what went wrong ([`OAuthError`]), not how HTTP says it.

pub mod authorize;
pub mod clients;
pub mod consent;
pub mod device;
pub mod fetch;
pub mod metadata;
pub use crate::sign_in_policy as policy;
pub mod token;
pub mod words;

use crate::app::{App, AppError};

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

/// The consent flow's rate limits, held by [`App`] (`app.oauth_limits`).
pub use crate::sign_in_policy::Limits;

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

/// Why an OAuth request is refused: what went wrong ([`ErrorKind`], named
/// as the OAuth registries name it) and an `error_description` that names
/// the field at fault. The HTTP status of each kind is chosen in
/// `http::oauth`, nowhere else.
#[derive(Debug)]
pub struct OAuthError {
    pub kind: ErrorKind,
    pub description: String,
    /// What a person reads on the sign-in pages (a message of
    /// `server/locales/`); `None` is the general refusal, with
    /// `description` as the details for the client's developer.
    pub reason: Option<&'static str>,
}

/// The cases of [`OAuthError`].
#[derive(Debug)]
pub enum ErrorKind {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    /// Registration (RFC 7591): the metadata breaks a rule.
    InvalidClientMetadata,
    /// Registration (RFC 7591): a redirect URI breaks a rule.
    InvalidRedirectUri,
    /// RFC 8707: a resource other than this server's `/mcp`.
    InvalidTarget,
    InvalidScope,
    UnsupportedGrantType,
    UnsupportedResponseType,
    /// Refused before anyone is asked: the operator's rule on who may
    /// approve a sign-in, or an authorization form posted from another site.
    NotAllowed,
    /// The person denied the request (the device grant's answer).
    Denied,
    /// RFC 8628: the person has not answered yet.
    AuthorizationPending,
    /// RFC 8628: polled faster than the interval.
    SlowDown,
    /// RFC 8628: the request expired unanswered.
    ExpiredToken,
    /// Over a rate limit or a bound; try again after `retry_after` seconds.
    TooMany {
        retry_after: u64,
    },
    /// The server failed (logged where it happened).
    Server,
    /// The question machinery refused (the consent's long-poll), said as
    /// the API says its errors.
    App(AppError),
}

impl ErrorKind {
    /// The `error` value: RFC 6749 (sections 4.1.2.1 and 5.2), RFC 7591
    /// (3.2.2), RFC 8628 (3.5), RFC 8707.
    pub fn name(&self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::InvalidClient => "invalid_client",
            ErrorKind::InvalidGrant => "invalid_grant",
            ErrorKind::InvalidClientMetadata => "invalid_client_metadata",
            ErrorKind::InvalidRedirectUri => "invalid_redirect_uri",
            ErrorKind::InvalidTarget => "invalid_target",
            ErrorKind::InvalidScope => "invalid_scope",
            ErrorKind::UnsupportedGrantType => "unsupported_grant_type",
            ErrorKind::UnsupportedResponseType => "unsupported_response_type",
            ErrorKind::NotAllowed | ErrorKind::Denied => "access_denied",
            ErrorKind::AuthorizationPending => "authorization_pending",
            ErrorKind::SlowDown => "slow_down",
            ErrorKind::ExpiredToken => "expired_token",
            ErrorKind::TooMany { .. } => "temporarily_unavailable",
            ErrorKind::Server => "server_error",
            ErrorKind::App(AppError::RateLimited { .. }) => "temporarily_unavailable",
            ErrorKind::App(AppError::Storage(_)) => "server_error",
            ErrorKind::App(_) => "invalid_request",
        }
    }
}

impl OAuthError {
    pub fn new(kind: ErrorKind, description: impl Into<String>) -> Self {
        OAuthError {
            kind,
            description: description.into(),
            reason: None,
        }
    }
    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, description)
    }
    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidGrant, description)
    }
    pub fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidClient, description)
    }
    pub fn slow(description: impl Into<String>, retry_after: u64) -> Self {
        let retry_after = retry_after.max(1);
        Self::new(ErrorKind::TooMany { retry_after }, description).told_as("signin-error-too-many")
    }
    /// The same refusal, told on a page as the message `reason`.
    pub fn told_as(mut self, reason: &'static str) -> Self {
        self.reason = Some(reason);
        self
    }
    /// The `error` value (see [`ErrorKind::name`]).
    pub fn error(&self) -> &'static str {
        self.kind.name()
    }
    pub fn server(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "oauth: internal error");
        // The server's fault, not the app's: the page says so.
        Self::new(ErrorKind::Server, "internal error; see the server log")
            .told_as("signin-error-server")
    }
}

impl std::fmt::Display for OAuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error(), self.description)
    }
}

impl std::error::Error for OAuthError {}

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

impl From<AppError> for OAuthError {
    fn from(e: AppError) -> Self {
        let description = e.to_string();
        OAuthError::new(ErrorKind::App(e), description)
    }
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
