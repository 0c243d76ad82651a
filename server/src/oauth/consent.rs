//! The consent is a question, "An unverified client wants to ask you
//! questions in ROOM. Allow? It calls itself “NAME”.": the server's
//! words first and the client's claim after them, quoted. Allow / Deny,
//! sent to the named person through the question machinery (so it reaches
//! their phone like any other), with the client's verified host (or
//! "unverified client") as the context line.
//! The responder is always the authenticated user: only the named person
//! may answer it (the protocol's direct scope), and the decision is read
//! back from the answered question and checked to be theirs.
//!
//! Bounded: a few pending consents per person and per client, rate limited
//! per person and per client. Every decision is logged with the client id.

use std::sync::Arc;
use std::time::Duration;

use qp_core::present::copy::Copy;
use qp_core::protocol::client_text::{check_client_text, is_plain_host};
use qp_core::protocol::limits::CLIENT_TEXT_MAX_CHARS;
use qp_core::protocol::{
    normalize_ask, time, AskContext, Asker, ConsentRequest, QuestionState, RoomRef,
};
use serde_json::json;

use super::{
    policy, ErrorKind, OAuthError, CONSENT_TTL_SECS, MAX_PENDING_PER_CLIENT, MAX_PENDING_PER_USER,
};
use crate::app::{App, Placement};
use crate::store::identity::{self, Room, User};
use crate::store::oauth::{self as store, Client, Consent};
use crate::store::{now_secs, StoreError};

/// The consent question's option values: Allow, and anything else
/// (Deny) is a refusal.
pub use qp_core::protocol::permission::{ALLOW, DENY};

/// What a consent asks for.
pub struct Request {
    /// `code` (the authorization page) or `device` (`qp login --url`).
    pub kind: &'static str,
    pub client: Client,
    /// The person: a user id, or a display name only one person has.
    pub user: String,
    /// The room's code; none: the person's only room.
    pub room: Option<String>,
    pub redirect_uri: Option<String>,
    pub state_param: Option<String>,
    pub code_challenge: Option<String>,
    pub resource: Option<String>,
    /// The code to compare (the device flow's user code); none: one is
    /// made here.
    pub user_code: Option<String>,
    pub interval_secs: i64,
}

/// A consent just asked: the secret handle (the page's, or the device
/// code), and whom and where.
pub struct Asked {
    pub handle: String,
    /// The consent question's id: a browser where the person is signed in
    /// to the web responder answers it on the page (as that person).
    pub question_id: String,
    pub user: User,
    pub room: Room,
    pub expires_in: i64,
    /// The code on the phone's question, to show where the sign-in started.
    pub code: String,
    /// What the consent question says, for a page that offers the answer
    /// itself (it must say what it asks, as the phone does), worded there
    /// in the page's language.
    pub consent: ConsentRequest,
}

/// A short code shown where the sign-in started (the authorization page,
/// the terminal) and on the consent question, to compare: `WDJB-MJHT`.
/// Anyone may start a sign-in naming anyone, with a real client's identity
/// (clients are public); the code is how the person tells theirs from one
/// they did not start.
pub fn compare_code() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
    let mut rng = rand::thread_rng();
    let mut s: String = (0..8)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect();
    s.insert(4, '-');
    s
}

/// The consent's parts, as phones word it in their person's language:
/// who asks (a verified host, a client that registered itself, or a
/// terminal), the client's claim, where the sign-in goes back to (the
/// redirect's host, as the MCP authorization spec asks servers to show;
/// `localhost` for a loopback redirect) and the code to compare. A host is
/// named only if it reads as a host.
fn consent_parts(client: &Client, redirect_uri: Option<&str>, code: &str) -> ConsentRequest {
    let kind = match client.kind.as_str() {
        "cimd" if is_plain_host(&client.host) => "verified",
        "device" => "terminal",
        _ => "unverified",
    };
    let returns_to = redirect_uri
        .and_then(|u| reqwest::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(str::to_string))
        .and_then(|h| match h.as_str() {
            "localhost" | "127.0.0.1" | "[::1]" | "::1" => Some("localhost".to_string()),
            _ if is_plain_host(&h) => Some(h),
            _ => None,
        });
    ConsentRequest {
        client: kind.to_string(),
        name: client.name.chars().take(CLIENT_TEXT_MAX_CHARS).collect(),
        host: (kind == "verified").then(|| client.host.clone()),
        returns_to,
        code: code.to_string(),
    }
}

/// Asks the person. Refused (naming the field) when the person or room is
/// unknown, the person is not in the room, or a limit is reached.
pub async fn ask(app: &Arc<App>, req: Request) -> Result<Asked, OAuthError> {
    let mut req = req;
    // Checked where it came in too; a name stored before the rule (or a
    // cached metadata document) is judged again before anyone reads it.
    let field = if req.kind == "device" {
        "label"
    } else {
        "client_name"
    };
    check_client_text(field, &req.client.name)
        .map_err(|e| OAuthError::invalid_request(e.to_string()))?;
    let approvers = app.settings.agent_sign_in;
    if approvers == policy::Approvers::Off {
        return Err(not_allowed(policy::OFF));
    }
    let code = req.user_code.get_or_insert_with(compare_code).clone();
    let handle = crate::ids::new_token(if req.kind == "device" { "qpd_" } else { "qph_" });
    let id_hash = crate::ids::token_hash(&handle);
    let app2 = app.clone();
    app.asking(move |conn, asking| -> Result<_, OAuthError> {
            let now = now_secs();
            let user = find_user(conn, &req.user)?;
            let room = find_room(conn, &user, req.room.as_deref())?;
            if let Some(why) = policy::refusal(conn, approvers, &room.id, &user.id)? {
                return Err(not_allowed(why));
            }
            // The client's quota is charged only for a request that would
            // ask someone: naming nobody (`user=nobody`) must not use up a
            // client's (every `qp login --url`'s) consents.
            if app2
                .oauth_limits
                .per_client
                .check_key(&req.client.id)
                .is_err()
            {
                return Err(OAuthError::slow(
                    "too many consent requests from this client; try again in a minute",
                    60,
                ));
            }
            if app2
                .oauth_limits
                .per_user
                .check_key(&user.id)
                .is_err()
            {
                return Err(OAuthError::slow(
                    format!("user: too many consent requests to {} lately; try again in a minute", user.display_name),
                    60,
                ));
            }
            if store::pending_for_user(conn, &user.id, now)? >= MAX_PENDING_PER_USER {
                return Err(OAuthError::slow(
                    format!(
                        "user: {} already has {MAX_PENDING_PER_USER} sign-in requests waiting; answer or let them expire first",
                        user.display_name
                    ),
                    60,
                ));
            }
            if store::pending_for_client(conn, &req.client.id, now)? >= MAX_PENDING_PER_CLIENT {
                return Err(OAuthError::slow(
                    format!("client_id: this client already has {MAX_PENDING_PER_CLIENT} consent requests waiting"),
                    60,
                ));
            }
            let asker = store::consent_asker(conn, &user.id)?;
            // The server's English words: what a responder that does not
            // word the consent's parts itself shows.
            let parts = consent_parts(&req.client, req.redirect_uri.as_deref(), &code);
            let words = Copy::english().consent(&parts, &room.name);
            let (question_prompt, context) = (words.prompt.clone(), words.context.clone());
            let body = json!({
                "prompt": question_prompt,
                "context": context,
                "options": [
                    {"value": ALLOW, "label": words.allow, "style": "primary"},
                    {"value": DENY, "label": words.deny, "style": "danger"}
                ],
                "target_user_id": user.id,
                "ttl": CONSENT_TTL_SECS,
            });
            let now_t = time::now();
            let ctx = AskContext {
                now: now_t,
                default_target_user_id: Some(user.id.clone()),
            };
            let ask = normalize_ask(&body, &ctx).map_err(|e| {
                OAuthError::invalid_request(format!("the consent question: {}: {}", e.field, e.message))
            })?;
            let place = Placement {
                room_id: room.id.clone(),
                room: RoomRef {
                    code: room.code.clone(),
                    name: room.name.clone(),
                },
                asker: Asker {
                    handle: Some(asker.handle.clone()),
                    kind: "agent".into(),
                    id: asker.id.clone(),
                    display_name: asker.name.clone(),
                },
                // The per-person and per-client bounds above hold it.
                max_pending: i64::MAX,
                consent: Some(parts.clone()),
            };
            let (q, _pushes) = asking
                .ask(conn, ask, now_t, place)?
                .ok_or_else(|| OAuthError::server("the consent asker over an unbounded quota"))?;
            store::insert_consent(
                conn,
                &Consent {
                    id_hash,
                    kind: req.kind.to_string(),
                    client_id: req.client.id.clone(),
                    user_id: user.id.clone(),
                    room_id: room.id.clone(),
                    question_id: q.id.clone(),
                    state: "pending".into(),
                    redirect_uri: req.redirect_uri,
                    state_param: req.state_param,
                    code_challenge: req.code_challenge,
                    resource: req.resource,
                    user_code: req.user_code,
                    interval_secs: req.interval_secs,
                    last_poll_at: None,
                    agent_id: None,
                    expires_at: now + CONSENT_TTL_SECS,
                },
            )?;
            tracing::info!(client_id = req.client.id.as_str(), user = %user.id, room = %room.code, question = %q.id, kind = req.kind, "oauth consent asked");
            Ok(Asked {
                handle,
                question_id: q.id,
                user,
                room,
                expires_in: CONSENT_TTL_SECS,
                code,
                consent: parts,
            })
    })
    .await
}

/// The one refusal for a person, room or membership not found: which of
/// them it was is not said, so the unauthenticated form cannot be used to
/// learn who is here, which rooms exist, or who is in which.
fn not_found() -> OAuthError {
    OAuthError::invalid_request(
        "user: nobody of that id or name is in that room; give your user id (or your \
         name) and the room's code",
    )
    .told_as("signin-error-not-found")
}

fn find_user(conn: &crate::store::Conn, given: &str) -> Result<User, OAuthError> {
    let given = given.trim();
    if given.is_empty() {
        return Err(
            OAuthError::invalid_request("user: is required (your user id, or your name)")
                .told_as("signin-error-user-required"),
        );
    }
    // The one rule for a typed name; nobody and several people are one
    // refusal here (the form must not list who is here).
    match identity::find_user(conn, given) {
        Ok(u) => Ok(u),
        Err(StoreError::Db(e)) => Err(e.into()),
        Err(_) => Err(not_found()),
    }
}

fn find_room(
    conn: &crate::store::Conn,
    user: &User,
    code: Option<&str>,
) -> Result<Room, OAuthError> {
    let code = code.map(str::trim).filter(|c| !c.is_empty());
    let room = match code {
        Some(typed) => match identity::find_room(conn, typed) {
            Ok(r) => r,
            Err(StoreError::Db(e)) => return Err(e.into()),
            Err(_) => return Err(not_found()),
        },
        None => {
            let mine: Vec<Room> = identity::list_rooms(conn)?
                .into_iter()
                .filter(|r| identity::is_member(conn, &r.id, &user.id).unwrap_or(false))
                .collect();
            match mine.as_slice() {
                [one] => one.clone(),
                _ => return Err(not_found()),
            }
        }
    };
    if !identity::is_member(conn, &room.id, &user.id)? {
        return Err(not_found());
    }
    Ok(room)
}

/// Where a consent stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Pending,
    Approved,
    Denied,
    Expired,
    /// Approved and its code or token already handed out.
    Used,
}

/// Reads the consent named by `handle` and its question, waiting up to
/// `wait` for an answer; settles the consent (once, logged) when the
/// question resolved. None: no such consent.
pub async fn decision(
    app: &Arc<App>,
    handle: &str,
    wait: Duration,
) -> Result<Option<(Decision, Consent)>, OAuthError> {
    decision_by_hash(app, crate::ids::token_hash(handle), wait).await
}

/// Consents whose question was answered or ended while nobody polled (a
/// page closed, an attacker's request the person denied): settled and
/// logged here, every few seconds, so every decision is in the log with
/// its client id whether or not anyone asks for it.
pub async fn settle_loop(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks = 0u32;
    loop {
        tick.tick().await;
        ticks = ticks.wrapping_add(1);
        if ticks.is_multiple_of(12) {
            app.oauth_limits.prune();
        }
        let ended = app
            .db
            .run(|conn| -> Result<_, OAuthError> {
                Ok(store::end_unredeemed_grants(conn, now_secs(), 100)?)
            })
            .await;
        match ended {
            Ok(ended) => {
                for (client_id, agent) in ended {
                    tracing::info!(client_id = client_id.as_str(), agent = %agent, "oauth code expired unexchanged; its agent is disabled");
                }
            }
            Err(e) => tracing::warn!(error = %e.description, "ending unexchanged oauth grants"),
        }
        let due = app
            .db
            .run(|conn| -> Result<_, OAuthError> { Ok(store::consents_to_settle(conn, 100)?) })
            .await;
        match due {
            Ok(hashes) => {
                for hash in hashes {
                    if let Err(e) = decision_by_hash(&app, hash, Duration::ZERO).await {
                        tracing::warn!(error = %e.description, "settling an oauth consent");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.description, "finding oauth consents to settle"),
        }
    }
}

async fn decision_by_hash(
    app: &Arc<App>,
    id_hash: String,
    wait: Duration,
) -> Result<Option<(Decision, Consent)>, OAuthError> {
    let key = id_hash.clone();
    let found = app
        .db
        .run(move |conn| -> Result<_, OAuthError> {
            Ok(match store::consent(conn, &key)? {
                Some(c) => {
                    let asker = store::consent_asker(conn, &c.user_id)?;
                    Some((c, asker))
                }
                None => None,
            })
        })
        .await?;
    let Some((consent, asker)) = found else {
        return Ok(None);
    };
    match consent.state.as_str() {
        // An approval not collected in time is not handed out later (RFC
        // 8628: the device code ends with its expiry).
        "approved" if consent.expires_at < now_secs() => {
            return Ok(Some((Decision::Expired, consent)))
        }
        "approved" => return Ok(Some((Decision::Approved, consent))),
        "denied" => return Ok(Some((Decision::Denied, consent))),
        "expired" => return Ok(Some((Decision::Expired, consent))),
        "used" => return Ok(Some((Decision::Used, consent))),
        _ => {}
    }
    // The long-poll counts against this consent, not against the consent
    // asker every sign-in of this person shares.
    let holder = format!("consent:{id_hash}");
    let q = app
        .wait_held_by(&asker, consent.question_id.clone(), wait, holder)
        .await
        .map_err(OAuthError::from)?;
    let decided = match q.state {
        QuestionState::Pending => return Ok(Some((Decision::Pending, consent))),
        QuestionState::Answered => {
            let answer = q.answer.as_ref();
            let by = answer.map(|a| a.responder.id.as_str()).unwrap_or_default();
            let value = answer.and_then(|a| a.value.as_deref()).unwrap_or_default();
            if by != consent.user_id {
                // The question machinery lets only the named person answer;
                // should anything else ever answer, it is no approval.
                tracing::warn!(client_id = consent.client_id.as_str(), user = %consent.user_id, responder = by, "oauth consent answered by someone else; refused");
                Decision::Denied
            } else if value == ALLOW {
                Decision::Approved
            } else {
                Decision::Denied
            }
        }
        QuestionState::Expired | QuestionState::Cancelled => Decision::Expired,
    };
    let to = match decided {
        Decision::Approved => "approved",
        Decision::Denied => "denied",
        _ => "expired",
    };
    let key = id_hash.clone();
    let moved = app
        .db
        .run(move |conn| -> Result<_, OAuthError> {
            Ok(store::move_consent(conn, &key, "pending", to, None)?)
        })
        .await?;
    if moved {
        tracing::info!(
            client_id = consent.client_id.as_str(),
            user = %consent.user_id,
            question = %consent.question_id,
            kind = %consent.kind,
            decision = to,
            "oauth consent decided"
        );
    }
    let mut consent = consent;
    consent.state = to.to_string();
    Ok(Some((decided, consent)))
}

/// Hands out an approved consent once: makes the agent (owned by the
/// person, scoped to the room, named after the client, shown as signed in
/// by the person) and returns it with its token; false when another request
/// already did. The operator's rule on who may approve is judged again
/// (it, or the person's role, may have changed since they were asked); the
/// creation is in the audit log, with the person as its actor.
pub async fn redeem(
    app: &Arc<App>,
    consent: &Consent,
    agent_name: &str,
) -> Result<Option<(identity::Agent, String)>, OAuthError> {
    let c = consent.clone();
    let name: String = agent_name
        .chars()
        .filter(|ch| !ch.is_control())
        .take(80)
        .collect();
    let approvers = app.settings.agent_sign_in;
    let made = app
        .db
        .run(move |conn| -> Result<_, OAuthError> {
            if let Some(why) = policy::refusal(conn, approvers, &c.room_id, &c.user_id)? {
                return Err(not_allowed(why));
            }
            let tx = conn.transaction()?;
            if !store::move_consent(&*tx, &c.id_hash, "approved", "used", None)? {
                return Ok(None);
            }
            let (agent, token) =
                identity::create_signed_in_agent(&*tx, &name, &c.user_id, &c.room_id)?;
            store::move_consent(&*tx, &c.id_hash, "used", "used", Some(&agent.id))?;
            let via = match c.kind.as_str() {
                "device" => "qp login --url".to_string(),
                _ => format!("OAuth client {}", c.client_id),
            };
            crate::store::audit::record(
                &*tx,
                &format!("user:{}", c.user_id),
                "agent.sign_in",
                &agent.id,
                &format!(
                    "{name} (and its token; handle {}) in room {}, by {via}",
                    agent.handle, c.room_id
                ),
            )?;
            tx.commit()?;
            Ok(Some((agent, token)))
        })
        .await?;
    if let Some((agent, _)) = &made {
        tracing::info!(client_id = consent.client_id.as_str(), user = %consent.user_id, agent = %agent.id, "oauth agent created");
    }
    Ok(made)
}

/// A refusal under the operator's rule on who may approve sign-ins.
fn not_allowed(why: &str) -> OAuthError {
    OAuthError::new(ErrorKind::NotAllowed, why).told_as("signin-error-not-allowed")
}

/// The refusal for a consent that is not there (unknown or a wrong handle).
pub fn unknown() -> OAuthError {
    OAuthError::invalid_request("request: no such consent request (or it is over)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The consent's English prompt, as the server words it.
    fn prompt(client: &Client, room: &str, redirect_uri: Option<&str>) -> String {
        Copy::english()
            .consent(&consent_parts(client, redirect_uri, "WDJB-MJHT"), room)
            .prompt
    }

    /// The consent's English context line.
    fn context_line(client: &Client, code: &str) -> String {
        Copy::english()
            .consent(&consent_parts(client, None, code), "Ops")
            .context
    }

    fn client(kind: &str, name: &str, host: &str) -> Client {
        Client {
            id: "c".into(),
            kind: kind.into(),
            name: name.into(),
            redirect_uris: Vec::new(),
            host: host.into(),
            fetched_at: None,
        }
    }

    /// The consent is stored and announced by the ask's own job, as an
    /// agent's question is: a sign-in whose request went away while the
    /// job waited its turn (a page closed, a client timing out) still wakes
    /// the person's open feeds and the push worker right after the commit,
    /// not at their next poll.
    #[tokio::test]
    async fn a_consent_whose_request_went_away_still_wakes_the_feeds_and_the_push_worker() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::Db::open(&crate::store::Database::Sqlite(
            dir.path().join("consent.sqlite"),
        ))
        .unwrap();
        let app = App::new(db, crate::config::Settings::default());
        app.db
            .run(|conn| -> Result<_, crate::store::StoreError> {
                let user = identity::create_user(conn, "Dana", Some("u_dana"))?;
                let room = identity::create_room(conn, "Ops", Some("OPS"))?;
                identity::add_member(conn, &room.id, &user.id)?;
                identity::create_user_token(conn, &user.id, "Dana's phone")?;
                let phone = identity::DeviceRegistration {
                    platform: "android",
                    push_token: "fcm-token-of-danas-phone",
                    app_id: "org.example.qp",
                    locale: "en",
                    public_key: None,
                    apns_environment: None,
                };
                identity::register_device(conn, &user.id, None, &phone)?;
                Ok(())
            })
            .await
            .unwrap();
        let feed = app
            .feed_wake
            .listen(vec![crate::feed_wake::user_key("u_dana")]);
        // The database's one thread is held until `release`.
        let (started, held) = tokio::sync::oneshot::channel();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let busy = {
            let app = app.clone();
            tokio::spawn(async move {
                app.db
                    .run(move |_| -> Result<_, crate::store::DbError> {
                        let _ = started.send(());
                        let _ = hold.recv();
                        Ok(())
                    })
                    .await
            })
        };
        held.await.unwrap();
        let request = Request {
            kind: "code",
            client: client("dcr", "Claude", ""),
            user: "u_dana".into(),
            room: None,
            redirect_uri: Some("http://127.0.0.1:33418/callback".into()),
            state_param: None,
            code_challenge: Some("c".repeat(43)),
            resource: None,
            user_code: None,
            interval_secs: 0,
        };
        // The request goes away while its job waits behind the held one.
        let gone = tokio::time::timeout(Duration::from_millis(200), ask(&app, request)).await;
        assert!(
            gone.is_err(),
            "the ask finished while the database was held"
        );
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        tokio::time::timeout(Duration::from_secs(5), feed.woken())
            .await
            .expect("the person's open feed was not woken by the consent question");
        tokio::time::timeout(Duration::from_secs(5), app.push_wake.notified())
            .await
            .expect("the push worker was not woken for the consent question's push");
        let waiting = app
            .db
            .run(|conn| -> Result<_, crate::store::DbError> {
                store::pending_for_user(conn, "u_dana", now_secs())
            })
            .await
            .unwrap();
        assert_eq!(waiting, 1);
    }

    /// A verified host cut from the right read as
    /// another's (`claude.ai.connectors.login.atta`); the phone shows its
    /// end, the domain that vouches for it, and the prompt the whole host.
    #[test]
    fn a_long_verified_host_shows_its_domain_on_the_lock_screen() {
        let c = client(
            "cimd",
            "Claude",
            "claude.ai.connectors.login.attacker.example",
        );
        let line = context_line(&c, "WDJB-MJHT");
        assert!(line.starts_with("code WDJB-MJHT · "), "{line}");
        assert!(line.ends_with("attacker.example"), "{line}");
        assert!(line.chars().count() <= qp_core::protocol::limits::CONTEXT_MAX_CHARS);
        let p = prompt(
            &c,
            "Ops",
            Some("https://claude.ai.connectors.login.attacker.example/cb"),
        );
        assert!(
            p.starts_with("A client verified at claude.ai.connectors.login.attacker.example "),
            "{p}"
        );
        assert!(
            p.contains("signs in at claude.ai.connectors.login.attacker.example"),
            "{p}"
        );
    }

    /// The device flow's name is the caller's claim.
    #[test]
    fn unverified_names_are_shown_as_such() {
        let d = client("device", "Claude Desktop", "");
        let p = prompt(&d, "Ops", None);
        assert!(
            p.starts_with("A terminal (qp login) wants to ask you"),
            "{p}"
        );
        assert!(
            p.contains("It calls itself “\u{2068}Claude Desktop\u{2069}”, unverified."),
            "{p}"
        );
        assert!(p.contains("unverified"), "{p}");
        let r = client("dcr", "Claude", "");
        let p = prompt(&r, "Ops", Some("http://127.0.0.1:33418/callback"));
        assert!(p.contains("unverified client"), "{p}");
        assert!(p.contains("localhost"), "{p}");
        assert_eq!(
            context_line(&r, "WDJB-MJHT"),
            "code WDJB-MJHT · unverified client"
        );
        // Within the prompt's limit whatever the lengths.
        let long = client(
            "cimd",
            &"n".repeat(CLIENT_TEXT_MAX_CHARS),
            &format!("{}.example", "h".repeat(240)),
        );
        let p = prompt(
            &long,
            &"r".repeat(80),
            Some(&format!("https://{}.example/cb", "h".repeat(240))),
        );
        assert!(
            p.chars().count() <= qp_core::protocol::limits::PROMPT_MAX_CHARS,
            "{}",
            p.chars().count()
        );
    }
}
