//! The authorization endpoint: `GET /oauth/authorize` checks the request
//! (the client, its exact redirect URI, PKCE S256, the resource) and shows
//! a page asking who the person is and which room; `POST` asks the person
//! on their phone ([`super::consent`]); the page then waits on
//! `POST /oauth/authorize/status` and follows the redirect the moment the
//! person answers, with `code`, `state` and `iss` (RFC 9207), or
//! `error=access_denied`.
//!
//! Errors about the client or its redirect URI are shown, never redirected
//! (RFC 6749 section 4.1.2.1); the others go back to the client. The pages
//! and the routes are `http::oauth::authorize`'s.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::consent::{self, Decision};
use super::metadata::SCOPES;
use super::words::Words;
use super::{issuer, ErrorKind, OAuthError, CODE_TTL_SECS};
use crate::app::App;
use crate::store::oauth::{self as store, Client};

/// An authorization request, checked.
pub struct Checked {
    pub client: Client,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub resource: String,
}

/// Why a request is refused: shown to the person, or sent back to the
/// client at its (verified) redirect URI (this URL, with the error).
pub enum Refusal {
    Shown(OAuthError),
    Redirected(String),
}

impl From<OAuthError> for Refusal {
    fn from(e: OAuthError) -> Self {
        Refusal::Shown(e)
    }
}

/// `uri` with these query parameters added.
pub fn with_params(uri: &str, pairs: &[(&str, &str)]) -> String {
    match reqwest::Url::parse(uri) {
        Ok(mut url) => {
            {
                let mut q = url.query_pairs_mut();
                for (k, v) in pairs {
                    q.append_pair(k, v);
                }
            }
            url.to_string()
        }
        Err(_) => uri.to_string(),
    }
}

/// The client's redirect with an error, its `state` and our `iss`.
/// Whether an error may be sent back to the client's redirect URI without
/// making this server an open redirector (RFC 9700 §4.11.2): a verified
/// client's (its metadata document names it), or a loopback address (the
/// person's own machine). Anyone may register a client with any https
/// redirect, so an unverified one's errors are shown instead.
fn redirects_safely(c: &Checked) -> bool {
    c.client.kind == "cimd"
        || reqwest::Url::parse(&c.redirect_uri)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .is_some_and(|h| matches!(h.as_str(), "127.0.0.1" | "localhost" | "[::1]" | "::1"))
}

fn error_redirect(app: &App, c: &Checked, error: &str, description: &str) -> String {
    let iss = issuer(app);
    let mut pairs = vec![
        ("error", error),
        ("error_description", description),
        ("iss", iss.as_str()),
    ];
    if let Some(s) = &c.state {
        pairs.push(("state", s));
    }
    with_params(&c.redirect_uri, &pairs)
}

/// Checks an authorization request's parameters.
pub async fn check(app: &Arc<App>, p: &HashMap<String, String>) -> Result<Checked, Refusal> {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let client_id = get("client_id")
        .ok_or_else(|| Refusal::Shown(OAuthError::invalid_request("client_id: is required")))?;
    let client = super::clients::resolve(app, client_id).await?;
    let redirect_uri = match get("redirect_uri") {
        Some(r)
            if client
                .redirect_uris
                .iter()
                .any(|u| super::clients::redirect_matches(u, r)) =>
        {
            r.to_string()
        }
        Some(_) => {
            return Err(Refusal::Shown(OAuthError::invalid_request(
                "redirect_uri: is not registered for this client (it must match one of its redirect_uris exactly)",
            )))
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(Refusal::Shown(OAuthError::invalid_request(
                "redirect_uri: is required (this client has several)",
            )))
        }
    };
    let mut checked = Checked {
        client,
        redirect_uri,
        state: get("state").map(str::to_string),
        code_challenge: String::new(),
        resource: super::resource(app),
    };
    let refuse = |c: &Checked, kind: ErrorKind, d: &str| {
        if redirects_safely(c) {
            Refusal::Redirected(error_redirect(app, c, kind.name(), d))
        } else {
            Refusal::Shown(OAuthError::new(
                kind,
                format!(
                    "{d} (not sent back to the client: it registered itself with that address)"
                ),
            ))
        }
    };
    if get("response_type") != Some("code") {
        return Err(refuse(
            &checked,
            ErrorKind::UnsupportedResponseType,
            "response_type: must be code",
        ));
    }
    match get("code_challenge_method") {
        Some("S256") => {}
        None => {
            return Err(refuse(
                &checked,
                ErrorKind::InvalidRequest,
                "code_challenge_method: is required and must be S256 (PKCE)",
            ))
        }
        Some(_) => {
            return Err(refuse(
                &checked,
                ErrorKind::InvalidRequest,
                "code_challenge_method: only S256 is supported",
            ))
        }
    }
    let challenge = get("code_challenge").unwrap_or_default();
    let well_formed = challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !well_formed {
        return Err(refuse(
            &checked,
            ErrorKind::InvalidRequest,
            "code_challenge: is required, the base64url SHA-256 of the code verifier (43 characters)",
        ));
    }
    checked.code_challenge = challenge.to_string();
    if let Some(r) = get("resource") {
        if !super::is_our_resource(app, r) {
            let d = format!(
                "resource: this server issues tokens only for {}",
                super::resource(app)
            );
            return Err(refuse(&checked, ErrorKind::InvalidTarget, &d));
        }
    }
    if let Some(scope) = get("scope") {
        // An agent made by a sign-in holds both scopes; granting more than
        // asked would be a surprise, so a narrower request is refused
        // rather than widened. Values that are not scopes here (a client's
        // `openid`, `offline_access`) are ignored, as RFC 6749 §3.3 lets a
        // server do, so a request of only those is one of none (both are
        // granted); the token response says what was granted.
        let asked: std::collections::BTreeSet<&str> =
            scope.split(' ').filter(|s| SCOPES.contains(s)).collect();
        if !asked.is_empty() && asked.len() != SCOPES.len() {
            let d = format!(
                "scope: an agent here holds both {}; ask for both, or leave scope out",
                SCOPES.join(" and ")
            );
            return Err(refuse(&checked, ErrorKind::InvalidScope, &d));
        }
    }
    Ok(checked)
}

/// The longest a sign-in page's status call holds (below the browsers'
/// and proxies' usual idle limits).
pub const STATUS_WAIT_MAX_SECS: u64 = 25;

/// Where the consent named in a status call's body (`{"request": …,
/// "wait": 0-25}`) stands; once answered, where to send the browser.
pub async fn status(app: &Arc<App>, words: &Words, body: &[u8]) -> Result<Value, OAuthError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| OAuthError::invalid_request(format!("the body is not JSON: {e}")))?;
    let handle = v
        .get("request")
        .and_then(Value::as_str)
        .ok_or_else(|| OAuthError::invalid_request("request: is required"))?;
    let wait = v
        .get("wait")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(STATUS_WAIT_MAX_SECS);
    let Some((decision, c)) = consent::decision(app, handle, Duration::from_secs(wait)).await?
    else {
        return Err(consent::unknown());
    };
    if c.kind != "code" {
        return Err(consent::unknown());
    }
    let redirect_uri = c.redirect_uri.clone().unwrap_or_default();
    let iss = issuer(app);
    let back = |extra: &[(&str, &str)]| {
        let mut pairs: Vec<(&str, &str)> = extra.to_vec();
        pairs.push(("iss", iss.as_str()));
        if let Some(s) = c.state_param.as_deref() {
            pairs.push(("state", s));
        }
        with_params(&redirect_uri, &pairs)
    };
    Ok(match decision {
        Decision::Pending => json!({"state": "pending"}),
        Decision::Denied => json!({
            "state": "denied",
            "message": words.text("signin-denied", &[]),
            "redirect": back(&[("error", "access_denied"), ("error_description", "the person denied the request")]),
        }),
        Decision::Expired => json!({
            "state": "expired",
            "message": words.text("signin-expired", &[]),
            "redirect": back(&[("error", "access_denied"), ("error_description", "the consent expired unanswered")]),
        }),
        Decision::Used => {
            json!({"state": "used", "message": words.text("signin-used", &[])})
        }
        Decision::Approved => {
            let cid = c.client_id.clone();
            let name = app
                .db
                .run(move |conn| -> Result<_, OAuthError> { Ok(store::client(conn, &cid)?) })
                .await?
                .map(|cl| cl.name)
                .unwrap_or_else(|| "OAuth client".into());
            let Some((agent, grant_token)) = consent::redeem(app, &c, &name).await? else {
                return Ok(json!({"state": "used", "message": words.text("signin-used", &[])}));
            };
            let code = store::Code {
                client_id: c.client_id.clone(),
                redirect_uri: redirect_uri.clone(),
                code_challenge: c.code_challenge.clone().unwrap_or_default(),
                resource: c.resource.clone().unwrap_or_else(|| super::resource(app)),
                agent_id: agent.id.clone(),
                grant_hash: crate::ids::token_hash(&grant_token),
                expires_at: crate::store::now_secs() + CODE_TTL_SECS,
            };
            let code = app
                .db
                .run(move |conn| -> Result<_, OAuthError> {
                    // The grant's row is the agent's token: labelled so the
                    // operator's list says what it is.
                    crate::store::identity::relabel_token(
                        conn,
                        &code.grant_hash,
                        &format!("OAuth: {name}"),
                    )?;
                    Ok(store::insert_code(conn, &code)?)
                })
                .await?;
            json!({
                "state": "approved",
                "message": words.text("signin-allowed", &[]),
                "redirect": back(&[("code", code.as_str())]),
            })
        }
    })
}
