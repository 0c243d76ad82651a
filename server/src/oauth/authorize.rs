//! The authorization endpoint: `GET /oauth/authorize` checks the request
//! (the client, its exact redirect URI, PKCE S256, the resource) and shows
//! a page asking who the person is and which room; `POST` asks the person
//! on their phone ([`super::consent`]); the page then waits on
//! `POST /oauth/authorize/status` and follows the redirect the moment the
//! person answers, with `code`, `state` and `iss` (RFC 9207), or
//! `error=access_denied`.
//!
//! Errors about the client or its redirect URI are shown, never redirected
//! (RFC 6749 section 4.1.2.1); the others go back to the client.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use serde_json::{json, Value};

use super::consent::{self, Decision};
use super::metadata::SCOPES;
use super::words::Words;
use super::{escape, html_page, issuer, no_store, wants_html, OAuthError, CODE_TTL_SECS};
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
/// client at its (verified) redirect URI.
pub enum Refusal {
    Shown(OAuthError),
    Redirected(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Shown(e) => e.into_response(),
            Refusal::Redirected(url) => {
                let mut r = Redirect::to(&url).into_response();
                no_store(&mut r);
                r
            }
        }
    }
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
    let refuse = |c: &Checked, error: &'static str, d: &str| {
        if redirects_safely(c) {
            Refusal::Redirected(error_redirect(app, c, error, d))
        } else {
            Refusal::Shown(OAuthError::new(
                axum::http::StatusCode::BAD_REQUEST,
                error,
                format!(
                    "{d} (not sent back to the client: it registered itself with that address)"
                ),
            ))
        }
    };
    if get("response_type") != Some("code") {
        return Err(refuse(
            &checked,
            "unsupported_response_type",
            "response_type: must be code",
        ));
    }
    match get("code_challenge_method") {
        Some("S256") => {}
        None => {
            return Err(refuse(
                &checked,
                "invalid_request",
                "code_challenge_method: is required and must be S256 (PKCE)",
            ))
        }
        Some(_) => {
            return Err(refuse(
                &checked,
                "invalid_request",
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
            "invalid_request",
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
            return Err(refuse(&checked, "invalid_target", &d));
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
            return Err(refuse(&checked, "invalid_scope", &d));
        }
    }
    Ok(checked)
}

/// `GET /oauth/authorize`: the page that asks who and which room.
#[utoipa::path(get, path = "/oauth/authorize", operation_id = "oauth_authorize_page", tag = "oauth",
    params(("client_id" = String, Query, description = "A registered id, or the https URL of a Client ID Metadata Document"), ("redirect_uri" = Option<String>, Query, description = "One of the client's, exactly (an http loopback one on any port)"), ("response_type" = String, Query, description = "`code`"), ("code_challenge" = String, Query, description = "PKCE: base64url SHA-256 of the verifier"), ("code_challenge_method" = String, Query, description = "`S256`"), ("state" = Option<String>, Query, description = "Returned as given"), ("resource" = Option<String>, Query, description = "RFC 8707: this server's `/mcp`"), ("scope" = Option<String>, Query, description = "`ask read`, or left out")),
    responses((status = 200, description = "The page asking who the person is and which room", content_type = "text/html"), (status = 303, description = "An error sent back to a verified or loopback redirect URI"), (status = 400, description = "A field breaks a rule: `error_description` names it", body = crate::http::openapi::OAuthErrorBody), (status = 429, description = "Over a rate limit; see Retry-After", body = crate::http::openapi::OAuthErrorBody)))]
pub async fn page(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let words = Words::of(&headers);
    let shown = |e: OAuthError| {
        if wants_html(&headers) {
            e.into_page(&words)
        } else {
            e.into_response()
        }
    };
    // Each parameter at most once (RFC 6749 §3.1), as in the form post.
    let p = match super::form(query.unwrap_or_default().as_bytes()) {
        Ok(p) => p,
        Err(e) => return shown(e),
    };
    let c = match check(&app, &p).await {
        Ok(c) => c,
        Err(Refusal::Shown(e)) => return shown(e),
        Err(r) => return r.into_response(),
    };
    // The server's words first; the client's name after them, quoted and
    // isolated (`<bdi>`), as on the consent question.
    let name = format!("<b><bdi>{}</bdi></b>", escape(&c.client.name));
    let who = match c.client.kind.as_str() {
        "cimd" => words.html(
            "signin-verified-client",
            &[
                ("host", &format!("<b>{}</b>", escape(&c.client.host))),
                ("name", &name),
            ],
        ),
        _ => format!(
            "{} <span class=muted>{}</span>",
            words.html("signin-unverified-client", &[("name", &name)]),
            words.html("signin-self-named", &[])
        ),
    };
    let hidden = [
        ("response_type", "code"),
        ("client_id", c.client.id.as_str()),
        ("redirect_uri", c.redirect_uri.as_str()),
        ("state", c.state.as_deref().unwrap_or("")),
        ("code_challenge", c.code_challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("resource", c.resource.as_str()),
    ]
    .iter()
    .map(|(k, v)| format!("<input type=hidden name=\"{k}\" value=\"{}\">", escape(v)))
    .collect::<String>();
    // The script's words, with the name it fills in as `%NAME%`.
    let script_words = script_json(&json!({
        "change": words.text("signin-change-account", &[("name", "%NAME%")]),
        "askNamed": words.text("signin-ask-named", &[("name", "%NAME%")]),
        "askMe": words.text("signin-ask-me", &[]),
    }));
    let title = words.text("signin-connect-title", &[]);
    let body = format!(
        "<h1>{}</h1><p>{who}</p>\
         <form method=post action=\"/oauth/authorize\">{hidden}\
         <div id=account hidden style=\"border:2px solid #1d5bbf;border-radius:.5rem;padding:.25rem 1rem;margin-top:1rem\">\
         <p>{}</p>\
         <p><button type=button id=change-account></button></p></div>\
         <label id=user-label>{}<input id=user name=user required autocomplete=username></label>\
         <label>{}<input name=room autocapitalize=characters></label>\
         <button type=submit id=ask>{}</button></form>\
         <p class=muted>{}</p>\
         {WEB_SESSION_SCRIPTS}<script>const words={script_words};{PREFILL}</script>",
        escape(&title),
        words.html("signin-account", &[("name", "<b id=account-name></b>")]),
        words.html("signin-user-label", &[]),
        words.html("signin-room-label", &[]),
        words.html("signin-ask-me", &[]),
        words.html(
            "signin-phone-hint",
            &[
                ("allow", &format!("<b>{}</b>", escape(&words.allow()))),
                ("deny", &format!("<b>{}</b>", escape(&words.deny()))),
            ]
        ),
    );
    html_page(&words, &title, &body)
}

/// A value for a `<script>` element: JSON, with no `</script>` that could
/// close it early.
fn script_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
}

/// The web responder's storage (`/app/store.js`: the session a person
/// signed in to `/app/` keeps in this origin's IndexedDB, and the answer
/// call); absent from a build without the web app, and then the pages
/// simply offer nothing more.
const WEB_SESSION_SCRIPTS: &str = "<script src=\"/app/store.js\"></script>";

/// The authorization page, for a person signed in to the web responder on
/// this browser: the account it will ask is named where the eye goes (a
/// box above the fields, and the button itself), not left as an opaque id
/// in a field, and one click asks another account instead. A browser
/// switched to someone else's account shows that someone's name here.
const PREFILL: &str = r#"
(async () => {
  if (typeof qpStore === 'undefined') return;
  const s = await qpStore.session().catch(() => null);
  if (!s || !s.user) return;
  const input = document.getElementById('user');
  if (input.value) return;
  const $ = (id) => document.getElementById(id);
  const name = s.user.display_name;
  input.value = s.user.id;
  $('account-name').textContent = name;
  $('change-account').textContent = words.change.replace('%NAME%', name);
  $('ask').textContent = words.askNamed.replace('%NAME%', name);
  $('user-label').hidden = true;
  $('account').hidden = false;
  $('change-account').addEventListener('click', () => {
    $('account').hidden = true;
    $('user-label').hidden = false;
    $('ask').textContent = words.askMe;
    input.value = '';
    input.focus();
  });
})();
"#;

/// The waiting page: follows the consent (long-polls of
/// `/oauth/authorize/status`, backing off on 429 and 5xx) and goes where
/// the server says once it is decided. A browser signed in to the web
/// responder as the person asked shows Allow and Deny: the answer is the
/// web responder's own call, as that person (the server takes it only
/// from them).
const WAIT_AND_ANSWER: &str = r#"
const msg = document.getElementById('msg');
let backoff = 0;
const pause = () => new Promise((r) => setTimeout(r, Math.min(10000, 1000 * 2 ** Math.min(backoff++, 4))));
(async () => {
  for (;;) {
    let r, s;
    try {
      r = await fetch('/oauth/authorize/status', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ request: consent.request, wait: 20 }) });
      s = await r.json();
    } catch (e) { await pause(); continue; }
    if (r.status === 429 || r.status >= 500) { await pause(); continue; }
    backoff = 0;
    if (s.state === 'pending') continue;
    document.getElementById('here').hidden = true;
    msg.textContent = s.message || words.error;
    if (s.redirect) setTimeout(() => window.location.replace(s.redirect), s.state === 'approved' ? 0 : 3000);
    return;
  }
})();
(async () => {
  if (typeof qpStore === 'undefined') return;
  const session = await qpStore.session().catch(() => null);
  if (!session || !session.user || session.user.id !== consent.user) return;
  document.getElementById('here-name').textContent = session.user.display_name;
  const here = document.getElementById('here');
  // The buttons stay focusable (aria-disabled, not disabled), so keyboard,
  // screen-reader and touch users reach them; a press counts only once the
  // page is armed: in view a second, in front, after the person has moved,
  // tapped or typed on it. A page that swaps this one in under a double
  // click gets no approval.
  const buttons = [...here.querySelectorAll('button')];
  let armed = false, answering = false, shownAt = 0, moved = false, timer = 0;
  const show = () => {
    const usable = armed && !answering;
    for (const b of buttons) b.setAttribute('aria-disabled', usable ? 'false' : 'true');
    document.getElementById('here-hint').hidden = usable || answering;
  };
  const arm = () => {
    clearTimeout(timer);
    const ready = moved && document.hasFocus() && document.visibilityState === 'visible';
    if (!ready) { armed = false; shownAt = 0; show(); return; }
    if (!shownAt) shownAt = Date.now();
    const left = 1000 - (Date.now() - shownAt);
    if (left > 0) { armed = false; show(); timer = setTimeout(arm, left); return; }
    armed = true; show();
  };
  const answer = async (value) => {
    if (!armed || answering) return;
    answering = true; show();
    const entry = { question_id: consent.question, key: qpNewKey(), body: JSON.stringify({ value }) };
    const out = await qpSend(session.token, entry).catch(() => ({ error: 'offline' }));
    if (out.error) {
      msg.textContent = out.error === 401 ? words.signedOut : words.failed;
      answering = false; show();
    }
  };
  document.getElementById('allow').addEventListener('click', () => answer(consent.allow));
  document.getElementById('deny').addEventListener('click', () => answer(consent.deny));
  here.hidden = false;
  show();
  const move = () => { moved = true; if (!armed) arm(); };
  for (const e of ['pointermove', 'pointerdown', 'keydown', 'focusin']) addEventListener(e, move, true);
  addEventListener('focus', arm);
  addEventListener('blur', () => { moved = false; arm(); });
  document.addEventListener('visibilitychange', () => { moved = false; arm(); });
})();
"#;

/// Why a form post comes from another site, if it does: the browser's
/// `Sec-Fetch-Site` is not `same-origin`, or, from a browser without Fetch
/// Metadata, its `Origin` is not this server's. A client without either
/// (not a browser) is let through.
fn cross_site(app: &App, headers: &HeaderMap) -> Option<String> {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    // Fetch Metadata first: every current browser sends it, and it is
    // right where `Origin` is not (Chromium posts `Origin: null` from a
    // page whose referrer policy is `no-referrer`).
    match header("sec-fetch-site") {
        Some("same-origin") => return None,
        Some(site) => {
            return Some(format!(
                "the authorization form was posted from another site (Sec-Fetch-Site: {site})"
            ))
        }
        None => {}
    }
    let Some(origin) = header("origin") else {
        // Neither Fetch Metadata nor Origin (an old browser): its Referer,
        // which this page's referrer policy sends to its own origin.
        let referer = header("referer")?;
        let ours = reqwest::Url::parse(&issuer(app)).ok()?.origin();
        let from = reqwest::Url::parse(referer).ok().map(|u| u.origin());
        return (from.as_ref() != Some(&ours))
            .then(|| "the authorization form was posted from another page".to_string());
    };
    let ours = reqwest::Url::parse(&issuer(app))
        .ok()?
        .origin()
        .ascii_serialization();
    (origin != ours).then(|| format!("the authorization form was posted from {origin}, not {ours}"))
}

/// `POST /oauth/authorize`: asks the person; the page then waits.
#[utoipa::path(post, path = "/oauth/authorize", operation_id = "oauth_authorize", tag = "oauth",
    request_body(content_type = "application/x-www-form-urlencoded", description = "The page's form: the authorization request's parameters, `user` (an id or a name) and `room` (a code)"),
    responses((status = 200, description = "The consent question was sent to the person: the waiting page (or, with `Accept: application/json`, the request handle)", content_type = "text/html"), (status = 403, description = "Posted from another site", body = crate::http::openapi::OAuthErrorBody), (status = 400, description = "A field breaks a rule: `error_description` names it", body = crate::http::openapi::OAuthErrorBody), (status = 429, description = "Over a rate limit; see Retry-After", body = crate::http::openapi::OAuthErrorBody)))]
pub async fn start(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let words = Words::of(&headers);
    let refused = |e: OAuthError| {
        if wants_html(&headers) {
            e.into_page(&words)
        } else {
            e.into_response()
        }
    };
    // Only this page's own form: another site auto-posting it (naming its
    // visitor, for its client) would land the person on qp's real "check
    // your phone" page, a more convincing consent phish.
    if let Some(why) = cross_site(&app, &headers) {
        return refused(
            OAuthError::new(axum::http::StatusCode::FORBIDDEN, "access_denied", why)
                .told_as("signin-error-cross-site"),
        );
    }
    let p = match super::form(&body) {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let c = match check(&app, &p).await {
        Ok(c) => c,
        Err(Refusal::Shown(e)) => return refused(e),
        Err(r) => return r.into_response(),
    };
    let asked = consent::ask(
        &app,
        consent::Request {
            kind: "code",
            user: p.get("user").cloned().unwrap_or_default(),
            room: p.get("room").cloned(),
            redirect_uri: Some(c.redirect_uri.clone()),
            state_param: c.state.clone(),
            code_challenge: Some(c.code_challenge.clone()),
            resource: Some(c.resource.clone()),
            user_code: None,
            interval_secs: 0,
            client: c.client,
        },
    )
    .await;
    let asked = match asked {
        Ok(a) => a,
        Err(e) => return refused(e),
    };
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"));
    if wants_json {
        let mut r = Json(json!({
            "request": asked.handle,
            "expires_in": asked.expires_in,
            "question": asked.question_id,
            "code": asked.code,
            "user": {"id": asked.user.id, "display_name": asked.user.display_name},
            "room": asked.room.code,
        }))
        .into_response();
        no_store(&mut r);
        return r;
    }
    let here = script_json(&json!({
        "request": asked.handle,
        "question": asked.question_id,
        "user": asked.user.id,
        "allow": consent::ALLOW,
        "deny": consent::DENY,
    }));
    let script_words = script_json(&json!({
        "signedOut": words.text("signin-no-longer-signed-in", &[]),
        "failed": words.text("signin-answer-failed", &[]),
        "error": words.text("signin-error-request", &[]),
    }));
    // The question as the phone words it in this page's language.
    let question = words.consent().consent(&asked.consent, &asked.room.name);
    let b = |text: &str| format!("<b>{}</b>", escape(text));
    // The code ties this page to the question: anyone may start a sign-in
    // naming anyone, and the person taps Allow only for the one whose code
    // is on their own screen.
    let title = words.text("signin-check-title", &[]);
    let body = format!(
        "<h1>{}</h1><p id=msg>{}</p><p>{}</p>\
         <div id=here hidden><p>{}</p>\
         <blockquote><p id=here-prompt>{}</p><p class=muted id=here-context>{}</p></blockquote>\
         <p id=here-hint class=muted>{}</p>\
         <button id=allow type=button aria-disabled=true>{}</button> <button id=deny type=button aria-disabled=true>{}</button></div>\
         {WEB_SESSION_SCRIPTS}<script>const consent={here};const words={script_words};{WAIT_AND_ANSWER}</script>",
        escape(&title),
        words.html(
            "signin-asked",
            &[
                ("name", &b(&asked.user.display_name)),
                ("room", &b(&asked.room.name)),
                ("minutes", &(asked.expires_in / 60).to_string()),
            ]
        ),
        words.html(
            "signin-code",
            &[
                ("code", &format!("<b id=code>{}</b>", escape(&asked.code))),
                ("allow", &b(&words.allow())),
            ]
        ),
        words.html("signin-answer-here", &[("name", "<b id=here-name></b>")]),
        escape(&question.prompt),
        escape(&question.context),
        words.html("signin-buttons-hint", &[]),
        escape(&question.allow),
        escape(&question.deny),
    );
    html_page(&words, &title, &body)
}

/// The longest a sign-in page's status call holds (below the browsers'
/// and proxies' usual idle limits).
pub const STATUS_WAIT_MAX_SECS: u64 = 25;

/// `POST /oauth/authorize/status` `{"request": …, "wait": 0-25}`: where
/// the consent stands; once answered, where to send the browser.
#[utoipa::path(post, path = "/oauth/authorize/status", operation_id = "oauth_authorize_status", tag = "oauth",
    request_body = crate::http::openapi::OAuthStatusRequest,
    responses((status = 200, description = "Where the consent stands", body = crate::http::openapi::OAuthConsentStatus), (status = 400, description = "A field breaks a rule: `error_description` names it", body = crate::http::openapi::OAuthErrorBody), (status = 429, description = "Over a rate limit; see Retry-After", body = crate::http::openapi::OAuthErrorBody)))]
pub async fn status(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    match status_inner(&app, &Words::of(&headers), &body).await {
        Ok(v) => {
            let mut r = Json(v).into_response();
            no_store(&mut r);
            r
        }
        Err(e) => e.into_response(),
    }
}

async fn status_inner(app: &Arc<App>, words: &Words, body: &[u8]) -> Result<Value, OAuthError> {
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
