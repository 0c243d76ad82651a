//! Fetching a Client ID Metadata Document: the `client_id` is an https URL
//! the server GETs, so a request can make the server connect somewhere.
//! The rules, checked before any connection:
//! - https only, a path that is not `/`, no fragment, no credentials, no
//!   dot segments;
//! - the host is never loopback, private, link-local or otherwise internal
//!   (an address literal, `localhost`, or a name that resolves to one),
//!   unless `--oauth-client-allow` names exactly that host (tests);
//! - the connection goes to the addresses checked (no second lookup), no
//!   redirects, 5 seconds in all, at most [`MAX_BYTES`] of body.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::outbound::{exactly_allowed, is_internal, is_local_name, resolve_checked, ResolveError};

/// A metadata document larger than this is refused (the draft suggests 5 KB).
pub const MAX_BYTES: usize = 5 * 1024;
/// The whole fetch, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a metadata document URL is refused or its fetch failed; the
/// message says which rule, to follow "client_id: ".
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("must be a URL")]
    NotAUrl,
    #[error("a metadata document URL must be https")]
    NotHttps,
    #[error("a metadata document URL must not have a fragment")]
    Fragment,
    #[error("a metadata document URL must not carry credentials")]
    Credentials,
    #[error("a metadata document URL must have a path")]
    NoPath,
    #[error("a metadata document URL must not have . or .. segments")]
    DotSegments,
    #[error("must name a host")]
    NoHost,
    #[error(
        "a metadata document on a loopback, private or link-local address ({host}) is refused"
    )]
    InternalAddress { host: String },
    #[error("a metadata document on this machine ({host}) is refused")]
    ThisMachine { host: String },
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("cannot make the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("fetching the metadata document failed: {0}")]
    Send(reqwest::Error),
    #[error("fetching the metadata document gave HTTP {0}")]
    Status(u16),
    #[error("reading the metadata document failed: {0}")]
    Read(reqwest::Error),
    #[error("the metadata document is larger than {MAX_BYTES} bytes; refused")]
    TooLarge,
}

/// Checks a `client_id` URL's form and host (no lookup yet); the error
/// says which rule, after "client_id: ".
pub fn check_url(raw: &str, allow: &[String]) -> Result<reqwest::Url, FetchError> {
    let url = reqwest::Url::parse(raw).map_err(|_| FetchError::NotAUrl)?;
    if url.scheme() != "https" {
        return Err(FetchError::NotHttps);
    }
    if url.fragment().is_some() {
        return Err(FetchError::Fragment);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::Credentials);
    }
    let path = raw
        .split_once("://")
        .map(|(_, rest)| rest.find('/').map_or("", |i| &rest[i..]))
        .unwrap_or("");
    let path = path.split(['?', '#']).next().unwrap_or("");
    if path.is_empty() || path == "/" {
        return Err(FetchError::NoPath);
    }
    if path.split('/').any(|seg| seg == "." || seg == "..") {
        return Err(FetchError::DotSegments);
    }
    let host = host_of(&url)?;
    let allowed = exactly_allowed(allow, &host, url.port());
    if let Ok(ip) = host.parse::<IpAddr>() {
        if is_internal(ip) && !allowed {
            return Err(FetchError::InternalAddress { host });
        }
    } else if is_local_name(&host) && !allowed {
        return Err(FetchError::ThisMachine { host });
    }
    Ok(url)
}

fn host_of(url: &reqwest::Url) -> Result<String, FetchError> {
    Ok(url
        .host_str()
        .ok_or(FetchError::NoHost)?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string())
}

/// The addresses to connect to: the literal, or the name's, each checked
/// (an internal one refuses the whole name unless it is allow-listed).
pub async fn addresses(
    url: &reqwest::Url,
    allow: &[String],
) -> Result<Vec<SocketAddr>, FetchError> {
    let host = host_of(url)?;
    let port = url.port_or_known_default().unwrap_or(443);
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    Ok(resolve_checked(&host, port, exactly_allowed(allow, &host, url.port())).await?)
}

/// GETs the document at `url` (already checked) within the limits.
pub async fn get(
    url: &reqwest::Url,
    allow: &[String],
    ca: &qp_client::ExtraCa,
) -> Result<Vec<u8>, FetchError> {
    let addrs = addresses(url, allow).await?;
    let host = host_of(url)?;
    let client = ca
        .builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(3))
        .no_proxy()
        .resolve_to_addrs(&host, &addrs)
        .build()
        .map_err(FetchError::Client)?;
    let resp = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| FetchError::Send(e.without_url()))?;
    if resp.status() != reqwest::StatusCode::OK {
        return Err(FetchError::Status(resp.status().as_u16()));
    }
    if resp
        .content_length()
        .is_some_and(|n| n as usize > MAX_BYTES)
    {
        return Err(FetchError::TooLarge);
    }
    let mut body = Vec::new();
    let mut resp = resp;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| FetchError::Read(e.without_url()))?
    {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Loopback values only: the guard is never aimed at a private or
    // public address.
    #[test]
    fn loopback_addresses_and_names_are_refused_unless_allow_listed() {
        for url in [
            "https://127.0.0.1/client.json",
            "https://127.0.0.1:8443/client.json",
            "https://[::1]/client.json",
            "https://localhost/client.json",
            "https://app.localhost/client.json",
            "https://[::ffff:127.0.0.1]/client.json",
        ] {
            assert!(check_url(url, &[]).is_err(), "{url}");
        }
        let allow = vec!["127.0.0.1:8443".to_string()];
        assert!(check_url("https://127.0.0.1:8443/client.json", &allow).is_ok());
        // Only exactly that host and port.
        assert!(check_url("https://127.0.0.1:9443/client.json", &allow).is_err());
        assert!(check_url("https://localhost:8443/client.json", &allow).is_err());
    }

    #[test]
    fn the_url_must_be_https_with_a_path() {
        let allow = vec!["127.0.0.1".to_string()];
        for (url, rule) in [
            ("http://127.0.0.1/client.json", "https"),
            ("https://127.0.0.1", "path"),
            ("https://127.0.0.1/", "path"),
            ("https://127.0.0.1/c.json#x", "fragment"),
            ("https://u:p@127.0.0.1/c.json", "credentials"),
            ("https://127.0.0.1/a/../c.json", "segments"),
            ("not a url", "URL"),
        ] {
            let e = check_url(url, &allow).unwrap_err().to_string();
            assert!(e.contains(rule), "{url}: {e}");
        }
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused() {
        let url = reqwest::Url::parse("https://localhost/client.json").unwrap();
        let e = addresses(&url, &[]).await.unwrap_err().to_string();
        assert!(e.contains("loopback"), "{e}");
        let ok = addresses(&url, &["localhost".to_string()]).await.unwrap();
        assert!(ok.iter().all(|a| a.ip().is_loopback()));
    }
}
