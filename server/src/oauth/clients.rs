//! OAuth clients: Dynamic Client Registration (RFC 7591, for clients of the
//! 2025-06-18 revision) and Client ID Metadata Documents (the 2026-07-28
//! revision's way: the `client_id` is an https URL whose document the
//! server fetches, through [`super::fetch`]). Every client is public
//! (`token_endpoint_auth_method: none`; PKCE protects the code).

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::{json, Value};

use qp_core::protocol::client_text::{check_client_text, CLIENT_TEXT_RULE};

use super::{ErrorKind, OAuthError};
use crate::app::App;
use crate::store::oauth::{self as store, Client};

/// A fetched metadata document is used this long before it is fetched again.
pub const CIMD_CACHE_SECS: i64 = 300;
/// At most this many redirect URIs per client.
pub const MAX_REDIRECT_URIS: usize = 10;
/// What a client's stored metadata (its name and redirect URIs, as JSON)
/// may take: anyone may register, so each registration's disk is bounded.
pub const MAX_METADATA_BYTES: usize = 2048;
/// Registered clients never used, kept at once: from one address (an IPv6
/// /64), and in all (past that the oldest unused registration makes room,
/// so a flood from many addresses never refuses the next person).
pub const UNUSED_CAPS: store::UnusedCaps = store::UnusedCaps {
    per_address: 20,
    total: 5000,
};

/// Registers a client (RFC 7591) from `from`, for `POST /oauth/register`:
/// the metadata as registered, with its `client_id`.
pub async fn register(app: &Arc<App>, from: IpAddr, body: &[u8]) -> Result<Value, OAuthError> {
    if app.oauth_limits.registrations.check().is_err() {
        return Err(OAuthError::slow(
            "too many client registrations on this server; try again in a minute",
            60,
        ));
    }
    let meta: Value = serde_json::from_slice(body).map_err(|e| {
        OAuthError::new(
            ErrorKind::InvalidClientMetadata,
            format!("the body is not a JSON object: {e}"),
        )
    })?;
    if !meta.is_object() {
        return Err(metadata_error("the body must be a JSON object"));
    }
    let redirect_uris = redirect_uris(&meta)?;
    if let Some(grants) = meta.get("grant_types") {
        let ok = grants
            .as_array()
            .is_some_and(|g| g.iter().any(|v| v == "authorization_code"));
        if !ok {
            return Err(metadata_error(
                "grant_types: must include authorization_code (the only flow for clients here)",
            ));
        }
    }
    let name = client_name(&meta, false)?.unwrap_or_else(|| "Unnamed client".into());
    check_metadata_size(&name, &redirect_uris)?;
    let client = Client {
        id: crate::ids::new_id("qpc"),
        kind: "dcr".into(),
        name,
        redirect_uris,
        host: String::new(),
        fetched_at: None,
    };
    let stored = client.clone();
    let source = crate::pairing::address_group(from).to_string();
    let taken = app
        .db
        .run(move |c| -> Result<_, OAuthError> {
            Ok(store::put_registered_client(
                c,
                &stored,
                &source,
                UNUSED_CAPS,
            )?)
        })
        .await?;
    if !taken {
        return Err(OAuthError::slow(
            format!(
                "too many clients registered from your address and not used yet (at most {}); \
                 sign in with one you registered, or try again in a few hours",
                UNUSED_CAPS.per_address
            ),
            3600,
        ));
    }
    tracing::info!(client_id = %client.id, name = client.name.as_str(), "oauth client registered");
    Ok(json!({
        "client_id": client.id,
        "client_id_issued_at": crate::store::now_secs(),
        "client_name": client.name,
        "redirect_uris": client.redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }))
}

fn metadata_error(description: impl Into<String>) -> OAuthError {
    OAuthError::new(ErrorKind::InvalidClientMetadata, description)
}

/// The name and redirect URIs together, as stored, within
/// [`MAX_METADATA_BYTES`].
fn check_metadata_size(name: &str, redirect_uris: &[String]) -> Result<(), OAuthError> {
    let uris = serde_json::to_string(redirect_uris).map_or(usize::MAX, |s| s.len());
    let size = name.len().saturating_add(uris);
    if size > MAX_METADATA_BYTES {
        return Err(OAuthError::new(
            ErrorKind::InvalidRedirectUri,
            format!(
                "redirect_uris: with client_name, at most {MAX_METADATA_BYTES} bytes in all \
                 (these take {size}); register fewer or shorter redirect URIs"
            ),
        ));
    }
    Ok(())
}

/// `client_name`: required in a metadata document, optional when
/// registering. It is shown to a person (the consent question) and becomes
/// the agent's name: the rule for client-supplied text applies.
fn client_name(meta: &Value, required: bool) -> Result<Option<String>, OAuthError> {
    match meta.get("client_name") {
        None | Some(Value::Null) if !required => Ok(None),
        None | Some(Value::Null) => Err(metadata_error("client_name: is required")),
        Some(Value::String(s)) => {
            let name = s.trim();
            check_client_text("client_name", name).map_err(|e| metadata_error(e.to_string()))?;
            Ok(Some(name.to_string()))
        }
        Some(_) => Err(metadata_error(format!(
            "client_name: must be a string, {CLIENT_TEXT_RULE}"
        ))),
    }
}

/// `redirect_uris`: 1 to 10, each https or http on a loopback host (native
/// apps, RFC 8252); private-use schemes (`com.example.app:/cb`) are refused,
/// as the MCP authorization spec asks; never a fragment.
fn redirect_uris(meta: &Value) -> Result<Vec<String>, OAuthError> {
    let invalid = |d: String| OAuthError::new(ErrorKind::InvalidRedirectUri, d);
    let list = meta
        .get("redirect_uris")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty() && l.len() <= MAX_REDIRECT_URIS)
        .ok_or_else(|| {
            invalid(format!(
                "redirect_uris: is required, a list of 1 to {MAX_REDIRECT_URIS} URIs"
            ))
        })?;
    let mut out = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let s = v
            .as_str()
            .ok_or_else(|| invalid(format!("redirect_uris[{i}]: must be a string")))?;
        check_redirect_uri(s).map_err(|e| invalid(format!("redirect_uris[{i}]: {e}")))?;
        out.push(s.to_string());
    }
    Ok(out)
}

/// Why a redirect URI may not be registered; the message follows
/// `redirect_uris[i]: `.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RedirectUriError {
    #[error("must be at most 2000 characters")]
    TooLong,
    #[error("must be an absolute URI")]
    NotAbsolute,
    #[error("must not have a fragment")]
    Fragment,
    #[error("the host must be a name of letters, digits, hyphens and dots, or an IP address")]
    Host,
    #[error("http is only for a loopback host (127.0.0.1, [::1], localhost)")]
    HttpNotLoopback,
    #[error("must be https, or http on a loopback host (the MCP authorization spec)")]
    Scheme,
}

pub fn check_redirect_uri(s: &str) -> Result<(), RedirectUriError> {
    if s.len() > 2000 {
        return Err(RedirectUriError::TooLong);
    }
    let url = reqwest::Url::parse(s).map_err(|_| RedirectUriError::NotAbsolute)?;
    if url.fragment().is_some() {
        return Err(RedirectUriError::Fragment);
    }
    match url.scheme() {
        // The consent question names this host in the server's own words,
        // so it must read as a host: the URL parser also takes quotes,
        // commas and parentheses in a host name.
        "https" if !url.host_str().is_some_and(is_plain_host) => Err(RedirectUriError::Host),
        "https" => Ok(()),
        "http" => {
            let host = url.host_str().unwrap_or_default();
            let loopback = host == "localhost"
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Ok(())
            } else {
                Err(RedirectUriError::HttpNotLoopback)
            }
        }
        // The MCP authorization spec: redirect URIs MUST be localhost or
        // https (no private-use schemes, no javascript:, data: or file:).
        _ => Err(RedirectUriError::Scheme),
    }
}

pub use qp_core::protocol::client_text::is_plain_host;

/// Whether the authorization request's `given` redirect URI is the
/// `registered` one: exactly, or, for an http loopback address, with any
/// port (a native app takes whatever port is free: OAuth 2.1 §8.4.2,
/// RFC 8252 §7.3); the scheme, host, path and query must still match.
pub fn redirect_matches(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    let (Ok(mut r), Ok(mut g)) = (reqwest::Url::parse(registered), reqwest::Url::parse(given))
    else {
        return false;
    };
    let loopback_ip = |u: &reqwest::Url| {
        u.host_str()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            .and_then(|h| h.parse::<std::net::IpAddr>().ok())
            .is_some_and(|ip| ip.is_loopback())
    };
    if r.scheme() != "http" || g.scheme() != "http" || !loopback_ip(&r) || !loopback_ip(&g) {
        return false;
    }
    let _ = r.set_port(None);
    let _ = g.set_port(None);
    r == g
}

/// Whether `id` is a metadata document URL rather than a registered id.
pub fn is_document_url(id: &str) -> bool {
    id.starts_with("https://") || id.starts_with("http://")
}

/// The client named by `client_id`: registered here, or its metadata
/// document (fetched, or from the cache of the last five minutes).
pub async fn resolve(app: &Arc<App>, client_id: &str) -> Result<Client, OAuthError> {
    if client_id.is_empty() {
        return Err(OAuthError::invalid_request("client_id: is required"));
    }
    if client_id.len() > 2000 {
        return Err(OAuthError::invalid_client(
            "client_id: at most 2000 characters",
        ));
    }
    let id = client_id.to_string();
    let known = app
        .db
        .run(move |c| -> Result<_, OAuthError> { Ok(store::client(c, &id)?) })
        .await?;
    if !is_document_url(client_id) {
        return known.ok_or_else(|| {
            OAuthError::invalid_client(format!(
                "client_id: no client {client_id} is registered here (register at /oauth/register, or use a metadata document URL)"
            ))
        });
    }
    let now = crate::store::now_secs();
    if let Some(c) = known {
        if c.fetched_at.is_some_and(|t| now - t < CIMD_CACHE_SECS) {
            return Ok(c);
        }
    }
    let allow = &app.settings.oauth_client_allow;
    let url = super::fetch::check_url(client_id, allow)
        .map_err(|e| OAuthError::invalid_client(format!("client_id: {e}")))?;
    if app.oauth_limits.fetches.check().is_err() {
        return Err(OAuthError::slow(
            "client_id: too many metadata documents fetched lately; try again in a minute",
            60,
        ));
    }
    let ca = qp_client::ExtraCa::read(app.settings.oauth_client_ca.as_deref())
        .map_err(OAuthError::server)?;
    let body = super::fetch::get(&url, allow, &ca)
        .await
        .map_err(|e| OAuthError::invalid_client(format!("client_id: {e}")))?;
    let client = from_document(client_id, &url, &body)?;
    let stored = client.clone();
    app.db
        .run(move |c| -> Result<_, OAuthError> { Ok(store::put_client(c, &stored)?) })
        .await?;
    tracing::info!(
        client_id,
        name = client.name.as_str(),
        host = client.host.as_str(),
        "oauth client metadata document fetched"
    );
    Ok(client)
}

/// A fetched metadata document, checked: its `client_id` is the URL
/// exactly, it has a name and redirect URIs, and it asks for no client
/// authentication this server cannot do.
fn from_document(client_id: &str, url: &reqwest::Url, body: &[u8]) -> Result<Client, OAuthError> {
    let doc_error =
        |d: String| OAuthError::invalid_client(format!("client_id: the metadata document's {d}"));
    let meta: Value = serde_json::from_slice(body).map_err(|e| {
        OAuthError::invalid_client(format!("client_id: the metadata document is not JSON: {e}"))
    })?;
    if meta.get("client_id").and_then(Value::as_str) != Some(client_id) {
        return Err(doc_error("client_id must be its own URL exactly".into()));
    }
    if let Some(m) = meta.get("token_endpoint_auth_method") {
        if m != "none" {
            return Err(doc_error(
                "token_endpoint_auth_method must be \"none\" (public clients with PKCE)".into(),
            ));
        }
    }
    let name = client_name(&meta, true).map_err(|e| doc_error(e.description))?;
    let redirect_uris = redirect_uris(&meta).map_err(|e| doc_error(e.description))?;
    check_metadata_size(name.as_deref().unwrap_or_default(), &redirect_uris)
        .map_err(|e| doc_error(e.description))?;
    Ok(Client {
        id: client_id.to_string(),
        kind: "cimd".into(),
        name: name.unwrap_or_default(),
        redirect_uris,
        host: url.host_str().unwrap_or_default().to_string(),
        fetched_at: Some(crate::store::now_secs()),
    })
}

#[cfg(test)]
mod redirect_tests {
    use super::*;

    #[test]
    fn loopback_redirects_match_on_any_port_and_nothing_else_does() {
        let reg = "http://127.0.0.1:33418/callback";
        assert!(redirect_matches(reg, reg));
        assert!(redirect_matches(reg, "http://127.0.0.1:51234/callback"));
        assert!(redirect_matches("http://[::1]:1/cb", "http://[::1]:2/cb"));
        assert!(!redirect_matches(reg, "http://127.0.0.1:51234/other"));
        assert!(!redirect_matches(reg, "http://localhost:51234/callback"));
        // `localhost` is a name, not a loopback IP literal (RFC 8252 §8.3):
        // it registers, but its port must match (docs/agents/mcp.md says so).
        assert!(check_redirect_uri("http://localhost:1/cb").is_ok());
        assert!(!redirect_matches(
            "http://localhost:1/cb",
            "http://localhost:2/cb"
        ));
        assert!(!redirect_matches(
            "https://app.example/cb",
            "https://app.example:8443/cb"
        ));
    }

    #[test]
    fn only_https_and_loopback_http_redirects_register() {
        assert!(check_redirect_uri("https://app.example/cb").is_ok());
        assert!(check_redirect_uri("http://127.0.0.1:9/cb").is_ok());
        assert!(check_redirect_uri("http://app.example/cb").is_err());
        assert!(check_redirect_uri("com.example.app:/callback").is_err());
        assert!(check_redirect_uri("javascript:alert(1)").is_err());
        // A host the parser accepts but that could shape the consent's
        // sentence ("It signs in at claude.ai"), verified…").
        let shaped = "https://claude.ai\"),verified,by,ops;allow=yes(\"x.example/cb";
        assert!(reqwest::Url::parse(shaped).is_ok());
        assert_eq!(check_redirect_uri(shaped), Err(RedirectUriError::Host));
        assert!(check_redirect_uri("https://xn--caf-dma.example/cb").is_ok());
        assert!(check_redirect_uri("https://[2001:db8::1]/cb").is_ok());
    }
}
