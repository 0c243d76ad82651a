//! The authorization endpoint's pages: `GET /oauth/authorize` shows the
//! checked request ([`crate::oauth::authorize::check`]) as a page asking
//! who the person is and which room; `POST` asks the person on their phone
//! and shows the waiting page, which follows `POST /oauth/authorize/status`
//! and goes where the server says once the person answers.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{html_page, no_store, refused, words};
use crate::app::App;
use crate::oauth::authorize::{check, Refusal};
use crate::oauth::{consent, escape, issuer, ErrorKind, OAuthError};

/// A refusal of the authorization request: shown (a page or JSON), or
/// the redirect back to the client.
fn refusal(r: Refusal, headers: &HeaderMap) -> Response {
    match r {
        Refusal::Shown(e) => refused(e, headers),
        Refusal::Redirected(url) => {
            let mut r = Redirect::to(&url).into_response();
            no_store(&mut r);
            r
        }
    }
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
    let words = words(&headers);
    // Each parameter at most once (RFC 6749 §3.1), as in the form post.
    let p = match crate::oauth::form(query.unwrap_or_default().as_bytes()) {
        Ok(p) => p,
        Err(e) => return refused(e, &headers),
    };
    let c = match check(&app, &p).await {
        Ok(c) => c,
        Err(r) => return refusal(r, &headers),
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
    let words = words(&headers);
    // Only this page's own form: another site auto-posting it (naming its
    // visitor, for its client) would land the person on qp's real "check
    // your phone" page, a more convincing consent phish.
    if let Some(why) = cross_site(&app, &headers) {
        return refused(
            OAuthError::new(ErrorKind::NotAllowed, why).told_as("signin-error-cross-site"),
            &headers,
        );
    }
    let p = match crate::oauth::form(&body) {
        Ok(p) => p,
        Err(e) => return refused(e, &headers),
    };
    let c = match check(&app, &p).await {
        Ok(c) => c,
        Err(r) => return refusal(r, &headers),
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
        Err(e) => return refused(e, &headers),
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

/// `POST /oauth/authorize/status` `{"request": …, "wait": 0-25}`: where
/// the consent stands; once answered, where to send the browser.
#[utoipa::path(post, path = "/oauth/authorize/status", operation_id = "oauth_authorize_status", tag = "oauth",
    request_body = crate::http::openapi::OAuthStatusRequest,
    responses((status = 200, description = "Where the consent stands", body = crate::http::openapi::OAuthConsentStatus), (status = 400, description = "A field breaks a rule: `error_description` names it", body = crate::http::openapi::OAuthErrorBody), (status = 429, description = "Over a rate limit; see Retry-After", body = crate::http::openapi::OAuthErrorBody)))]
pub async fn status(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    match crate::oauth::authorize::status(&app, &words(&headers), &body).await {
        Ok(v) => {
            let mut r = Json(v).into_response();
            no_store(&mut r);
            r
        }
        Err(e) => e.into_response(),
    }
}
