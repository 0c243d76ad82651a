//! Pairing: one-time codes that a phone (`POST /api/pair`) or an agent's CLI
//! (`POST /api/agent/login`) exchanges for its own token, and invites made by
//! an operator (`qp admin … invite`, `POST /api/admin/…/invites`). Before
//! pairing, a browser asks what a code is for (`POST /api/pair/preview`):
//! whose account it signs in to, without spending it, so the person
//! chooses with the name in front of them.
//!
//! Guessing is bounded twice: each invite is burned after a few wrong
//! secrets against its id (store::invites), and each client address (an
//! IPv6 address counts as its /64, see [`address_group`]) may fail only
//! [`MAX_FAILURES_PER_ADDRESS`] times per [`FAILURE_WINDOW`] before every
//! attempt from it is refused with 429, valid or not. A preview is an
//! attempt like a pairing (its wrong secrets count the same), and one
//! address may preview only [`MAX_PREVIEWS_PER_ADDRESS`] times a window.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qp_core::pairing::normalize_code;
use serde::Serialize;

use crate::app::{App, AppError};
use crate::config::Settings;
use crate::store::identity;
use crate::store::invites::{self, InviteKind, NewInvite, Redeemed};
use crate::store::now_secs;
use crate::store::offboard::{self, Subject};
use crate::store::Conn;

/// Failed attempts one address may make per window.
pub const MAX_FAILURES_PER_ADDRESS: u32 = 10;
pub const FAILURE_WINDOW: Duration = Duration::from_secs(600);
/// Previews one address may ask for per window, right or wrong: a person
/// opens a link or two; an office behind one address, a few dozen.
pub const MAX_PREVIEWS_PER_ADDRESS: u32 = 30;
/// Addresses the limiter remembers at most. Beyond it the oldest record is
/// forgotten: the memory and the work per attempt stay bounded however many
/// addresses an attacker has (each invite still burns after five wrong
/// secrets, so forgetting a counter does not open a code to guessing).
pub const MAX_TRACKED_ADDRESSES: usize = 100_000;

/// The unit one client is counted as: an IPv4 address, or an IPv6 /64 (the
/// smallest network a host is usually given, so one machine can pick any
/// address in it). IPv6 forms that carry the host's IPv4 address count as
/// that address: IPv4-mapped; 6to4 (2002:AABB:CCDD::/48, a whole /48 for
/// whoever holds AA.BB.CC.DD, so 65,536 /64s); Teredo (2001:0::/32, whose
/// /64 is the Teredo server's, shared by all its clients, and whose last 32
/// bits are the client's address, inverted).
pub fn address_group(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => addr,
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let v4 = |hi: u16, lo: u16| {
                IpAddr::V4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)))
            };
            if let Some(mapped) = v6.to_ipv4_mapped() {
                IpAddr::V4(mapped)
            } else if s[0] == 0x2002 {
                v4(s[1], s[2])
            } else if s[0] == 0x2001 && s[1] == 0 {
                v4(!s[6], !s[7])
            } else {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(prefix.into())
            }
        }
    }
}

/// Failures and previews of one group in its current window.
struct Failures {
    count: u32,
    previews: u32,
    since: Instant,
}

/// What an attempt is counted as.
#[derive(Clone, Copy)]
enum Attempt {
    Failure,
    Preview,
}

/// Failed pairing attempts (and previews) per address group, in memory, bounded: a map
/// for the counts and a queue of (group, window start) in the order the
/// windows started, which is also the order they end, so expired records
/// are dropped from its front. Every attempt does O(1) amortized work.
#[derive(Default)]
pub struct PairFailures {
    inner: Mutex<FailureTable>,
}

#[derive(Default)]
struct FailureTable {
    by_group: HashMap<IpAddr, Failures>,
    /// Window starts, oldest first; an entry whose group has since started
    /// a newer window is stale and skipped.
    order: VecDeque<(IpAddr, Instant)>,
}

impl FailureTable {
    /// Drops the record at the front of the queue if it is still current.
    fn pop_oldest(&mut self) {
        if let Some((group, since)) = self.order.pop_front() {
            if self.by_group.get(&group).is_some_and(|f| f.since == since) {
                self.by_group.remove(&group);
            }
        }
    }

    /// Forgets the windows that ended (they are at the front).
    fn drop_expired(&mut self, now: Instant) {
        while self
            .order
            .front()
            .is_some_and(|(_, since)| now.duration_since(*since) >= FAILURE_WINDOW)
        {
            self.pop_oldest();
        }
    }

    fn record(&mut self, group: IpAddr, now: Instant, cap: usize, attempt: Attempt) {
        self.drop_expired(now);
        let bump = |f: &mut Failures| match attempt {
            Attempt::Failure => f.count += 1,
            Attempt::Preview => f.previews += 1,
        };
        if let Some(f) = self.by_group.get_mut(&group) {
            bump(f);
            return;
        }
        // A new group: make room by forgetting the oldest windows.
        while self.by_group.len() >= cap.max(1) {
            self.pop_oldest();
        }
        let mut f = Failures {
            count: 0,
            previews: 0,
            since: now,
        };
        bump(&mut f);
        self.by_group.insert(group, f);
        self.order.push_back((group, now));
    }
}

impl PairFailures {
    /// `Some(seconds to wait)` when `addr`'s group has failed too often lately.
    fn blocked(&self, addr: IpAddr) -> Option<u64> {
        let table = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let f = table.by_group.get(&address_group(addr))?;
        let left = FAILURE_WINDOW.checked_sub(f.since.elapsed())?;
        (f.count >= MAX_FAILURES_PER_ADDRESS).then(|| left.as_secs().max(1))
    }

    fn record(&self, addr: IpAddr) {
        self.record_capped(addr, MAX_TRACKED_ADDRESSES);
    }

    fn record_capped(&self, addr: IpAddr, cap: usize) {
        let mut table = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        table.record(address_group(addr), Instant::now(), cap, Attempt::Failure);
    }

    /// Counts a preview from `addr`: `Some(seconds to wait)` instead when
    /// its group has previewed too often lately (nothing is counted then).
    fn preview(&self, addr: IpAddr) -> Option<u64> {
        let group = address_group(addr);
        let now = Instant::now();
        let mut table = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        table.drop_expired(now);
        if let Some(f) = table.by_group.get(&group) {
            if f.previews >= MAX_PREVIEWS_PER_ADDRESS {
                let left = FAILURE_WINDOW.saturating_sub(now.duration_since(f.since));
                return Some(left.as_secs().max(1));
            }
        }
        table.record(group, now, MAX_TRACKED_ADDRESSES, Attempt::Preview);
        None
    }

    /// How many groups are remembered now.
    pub fn tracked(&self) -> usize {
        let table = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        table.by_group.len()
    }
}

/// A push registration, as checked from a request.
pub struct DeviceFields {
    pub platform: String,
    pub push_token: String,
    pub app_id: String,
    /// BCP 47, or empty.
    pub locale: String,
    /// Base64 X25519, checked.
    pub public_key: Option<String>,
    /// `production` or `sandbox`, checked; none: the server's default.
    pub apns_environment: Option<String>,
}

impl DeviceFields {
    pub fn registration(&self) -> identity::DeviceRegistration<'_> {
        identity::DeviceRegistration {
            platform: &self.platform,
            push_token: &self.push_token,
            app_id: &self.app_id,
            locale: &self.locale,
            public_key: self.public_key.as_deref(),
            apns_environment: self.apns_environment.as_deref(),
        }
    }
}

/// A registered device.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Device {
    pub id: String,
    pub platform: String,
    pub app_id: String,
}

/// A user, as a token's holder sees itself.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UserRef {
    pub id: String,
    pub display_name: String,
}

/// An agent, as `qp login` sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AgentRef {
    pub id: String,
    pub name: String,
    pub handle: String,
}

/// A user token issued by pairing (`POST /api/pair`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Paired {
    /// The user token (qpu_…), shown once.
    pub token: String,
    pub user: UserRef,
    pub device: Option<Device>,
}

/// An agent token issued by `qp login` (`POST /api/agent/login`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AgentLoggedIn {
    /// The agent token (qpa_…), shown once.
    pub token: String,
    pub agent: AgentRef,
}

/// What a pairing code is for, as `POST /api/pair/preview` says before it
/// is spent: no more than pairing with it would show.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PairPreview {
    /// The account the code signs in to.
    pub user: UserRef,
    /// This server, as its links name it.
    pub server: String,
    /// When the code stops working (RFC 3339).
    pub expires_at: String,
}

/// What a redeemed code issued (the token is in it, shown once).
#[derive(Debug)]
pub enum Issued {
    User(Paired),
    Agent(AgentLoggedIn),
}

fn invalid_code(message: &str) -> AppError {
    AppError::BadCode(message.to_string())
}

/// The refusal of a code that is not a valid one of the kind asked for
/// (`Ok` here is a valid code of the other kind). The same words whether
/// a code is redeemed or previewed.
fn refusal(redeemed: &Redeemed) -> &'static str {
    match redeemed {
        // An agent code at the phone endpoint (or the reverse): not spent,
        // and not the caller's to use here.
        Redeemed::Ok { .. } => "code: this code is not for this kind of sign-in",
        Redeemed::Used => "code: this code was already used; ask for a new one",
        Redeemed::Expired => "code: this code has expired; ask for a new one",
        Redeemed::Burned => "code: too many wrong attempts on this code; ask for a new one",
        Redeemed::Unknown | Redeemed::WrongSecret => "code: unknown pairing code",
    }
}

const DISABLED: &str = "code: this account is disabled; ask the operator";

fn too_many_failures(wait: u64) -> AppError {
    AppError::rate_limited(
        "too_many_attempts",
        format!("too many wrong pairing codes from this address; try again in {wait} s"),
        wait,
    )
}

/// `code` in its canonical form, or the refusal of a string that is none
/// (counted as a failure of `addr`).
fn canonical_code(app: &App, addr: IpAddr, code: &str) -> Result<String, AppError> {
    normalize_code(code).ok_or_else(|| {
        app.pair_failures.record(addr);
        invalid_code("code: not a pairing code (16 letters and digits, like K7QD-8M3X-PA2F-9TRV)")
    })
}

/// Creates an invite for a user (a phone) or an agent (`qp login`), in
/// one transaction with its audit entry (`actor`: `admin-token:<label>`,
/// `admin-cli:<login>`). The rules every invite follows, whoever makes it
/// (`POST /api/admin/…/invites`, `qp admin … invite`): the subject exists
/// and is not disabled.
pub fn create_invite(
    conn: &Conn,
    kind: InviteKind,
    subject_id: &str,
    ttl_secs: i64,
    actor: &str,
) -> Result<NewInvite, AppError> {
    let who = match kind {
        InviteKind::User => {
            identity::require_user(conn, subject_id)?;
            Subject::User
        }
        InviteKind::Agent => {
            if identity::agent(conn, subject_id)?.is_none() {
                return Err(AppError::not_found(format!("no agent {subject_id}")));
            }
            Subject::Agent
        }
    };
    refuse_disabled(conn, who, subject_id)?;
    let tx = conn.transaction()?;
    let invite = invites::create(&*tx, kind, subject_id, ttl_secs, now_secs())?;
    let detail = format!("ttl={ttl_secs}s");
    crate::store::audit::record(&*tx, actor, "invite.create", subject_id, &detail)?;
    tx.commit()?;
    Ok(invite)
}

/// A new bearer token for the user `user_id` (`qp admin token add`), by
/// the same rules as an invite: the user exists and is not disabled; the
/// audit log records it (its label, never the token) with the token.
pub fn create_user_token(
    conn: &Conn,
    user_id: &str,
    label: &str,
    actor: &str,
) -> Result<String, AppError> {
    identity::require_user(conn, user_id)?;
    refuse_disabled(conn, Subject::User, user_id)?;
    let tx = conn.transaction()?;
    let token = identity::create_user_token(&*tx, user_id, label)?;
    crate::store::audit::record(&*tx, actor, "token.create", user_id, label)?;
    tx.commit()?;
    Ok(token)
}

/// No new invite or token for a disabled (or removed) user or agent.
pub fn refuse_disabled(conn: &Conn, who: Subject, id: &str) -> Result<(), AppError> {
    if offboard::is_disabled(conn, who, id)? {
        return Err(AppError::Conflict {
            code: "disabled",
            message: format!(
                "{} {id} is disabled: enable it first (qp admin {} enable {id})",
                who.name(),
                who.name()
            ),
        });
    }
    Ok(())
}

/// Why no pairing link (nor `qp login`'s URL) is made: the server URL it
/// would carry is one a phone, or another machine, cannot reach.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// The server URL a pairing link carries: `given` (`--url`), else the
/// server's public URL (`public_url`, else `http(s)://` and the listen
/// address, [`Settings::public_url`]). Refused when no phone could use it:
/// a wildcard listen address (0.0.0.0, ::) names every interface, not one
/// to connect to; a loopback address while the server has a public URL
/// elsewhere reaches only this machine, and a QR code would send every
/// phone there.
pub fn link_base(settings: &Settings, given: Option<&str>) -> Result<String, Unreachable> {
    let base = match given {
        Some(url) => url.trim().trim_end_matches('/').to_string(),
        None => settings.public_url(),
    };
    let fix = "give the URL phones reach the server at: --url https://…, or public_url \
               in the server's config file (qp admin --config FILE, the file qp serve reads)";
    let Some(host) = url_host(&base) else {
        return Err(Unreachable(format!(
            "{base:?} is not an http:// or https:// URL with a host; {fix}"
        )));
    };
    if host.is_wildcard() {
        return Err(Unreachable(format!(
            "a pairing link to {base} would not work: {} is the address the server listens \
             on (every interface of its machine), not one a phone can connect to; {fix}",
            host.0
        )));
    }
    let public = settings
        .public_url
        .as_deref()
        .map(|u| u.trim_end_matches('/'))
        .filter(|u| url_host(u).is_some_and(|h| !h.is_loopback()));
    if let (true, Some(public)) = (host.is_loopback(), public) {
        return Err(Unreachable(format!(
            "a pairing link to {base} would send phones to this machine's loopback address, \
             which only this machine reaches, while the server's public_url is {public}: \
             leave out --url to use it, or give a URL phones reach"
        )));
    }
    Ok(base)
}

/// The host of an `http://` or `https://` URL, as written.
struct Host(String);

impl Host {
    fn ip(&self) -> Option<IpAddr> {
        self.0
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()
    }

    fn is_wildcard(&self) -> bool {
        self.ip().is_some_and(|ip| ip.is_unspecified())
    }

    fn is_loopback(&self) -> bool {
        let name = self.0.to_ascii_lowercase();
        name == "localhost"
            || name.ends_with(".localhost")
            || self.ip().is_some_and(|ip| ip.is_loopback())
    }
}

fn url_host(url: &str) -> Option<Host> {
    let parsed = reqwest::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    Some(Host(parsed.host_str()?.to_string()))
}

impl App {
    /// Creates an invite ([`create_invite`]).
    pub async fn invite(
        &self,
        kind: InviteKind,
        subject_id: String,
        ttl_secs: i64,
        actor: String,
    ) -> Result<NewInvite, AppError> {
        self.db
            .run(move |conn| create_invite(conn, kind, &subject_id, ttl_secs, &actor))
            .await
    }

    /// Redeems `code` from `addr` for a new token of `kind`, labelled
    /// `label`; for a user, optionally registers `device` in the same
    /// transaction. Returns what it issued (the token is in it, once).
    pub async fn redeem(
        &self,
        addr: IpAddr,
        code: &str,
        kind: InviteKind,
        label: String,
        device: Option<DeviceFields>,
    ) -> Result<Issued, AppError> {
        if let Some(wait) = self.pair_failures.blocked(addr) {
            return Err(too_many_failures(wait));
        }
        let code = canonical_code(self, addr, code)?;
        let outcome = self
            .db
            .run(
                move |conn| -> Result<Result<Issued, &'static str>, AppError> {
                    let tx = conn.transaction()?;
                    let redeemed = invites::redeem(&*tx, &code, now_secs())?;
                    let subject_id = match redeemed {
                        Redeemed::Ok {
                            kind: k,
                            subject_id,
                        } if k == kind => subject_id,
                        other => {
                            // A code of the other kind is left as it was;
                            // a wrong secret is counted against the invite.
                            if !matches!(other, Redeemed::Ok { .. }) {
                                tx.commit()?;
                            }
                            return Ok(Err(refusal(&other)));
                        }
                    };
                    // A disabled or removed account does not pair again (the
                    // invite is spent: the operator makes a new one after enabling).
                    let who = match kind {
                        InviteKind::User => crate::store::offboard::Subject::User,
                        InviteKind::Agent => crate::store::offboard::Subject::Agent,
                    };
                    if crate::store::offboard::is_disabled(&*tx, who, &subject_id)? {
                        tx.commit()?;
                        return Ok(Err(DISABLED));
                    }
                    let token = identity::mint_token(&*tx, kind, &subject_id, &label)?;
                    let actor = format!("{}:{subject_id}", who.name());
                    crate::store::audit::record(&*tx, &actor, "pairing", &subject_id, &label)?;
                    let body = match kind {
                        InviteKind::User => {
                            let user = identity::require_user(&*tx, &subject_id)?;
                            let device: Option<identity::Device> = match &device {
                                // Tied to the token minted here: revoking it
                                // removes the device.
                                Some(d) => Some(identity::register_device(
                                    &*tx,
                                    &user.id,
                                    Some(&crate::ids::token_hash(&token)),
                                    &d.registration(),
                                )?),
                                None => None,
                            };
                            Issued::User(Paired {
                                token,
                                user: UserRef {
                                    id: user.id,
                                    display_name: user.display_name,
                                },
                                device: device.map(|d| Device {
                                    id: d.id,
                                    platform: d.platform,
                                    app_id: d.app_id,
                                }),
                            })
                        }
                        InviteKind::Agent => {
                            let agent = identity::agent(&*tx, &subject_id)?
                                .ok_or_else(|| AppError::not_found("the agent is gone"))?;
                            Issued::Agent(AgentLoggedIn {
                                token,
                                agent: AgentRef {
                                    id: agent.id,
                                    name: agent.name,
                                    handle: agent.handle,
                                },
                            })
                        }
                    };
                    tx.commit()?;
                    Ok(Ok(body))
                },
            )
            .await?;
        outcome.map_err(|message| {
            self.pair_failures.record(addr);
            invalid_code(message)
        })
    }

    /// What a user's pairing `code` is for, checked as [`App::redeem`]
    /// checks it but left unspent: nothing is minted or audited. Refused
    /// with the same words as a pairing, counted against `addr` and the
    /// invite the same way, and at most [`MAX_PREVIEWS_PER_ADDRESS`] per
    /// window from one address.
    pub async fn preview_pairing(&self, addr: IpAddr, code: &str) -> Result<PairPreview, AppError> {
        if let Some(wait) = self.pair_failures.blocked(addr) {
            return Err(too_many_failures(wait));
        }
        if let Some(wait) = self.pair_failures.preview(addr) {
            return Err(AppError::rate_limited(
                "too_many_attempts",
                format!(
                    "too many pairing codes looked up from this address; try again in {wait} s"
                ),
                wait,
            ));
        }
        let code = canonical_code(self, addr, code)?;
        let outcome = self
            .db
            .run(
                move |conn| -> Result<Result<(UserRef, i64), &'static str>, AppError> {
                    let tx = conn.transaction()?;
                    let now = now_secs();
                    let subject_id = match invites::peek(&*tx, &code, now)? {
                        Redeemed::Ok {
                            kind: InviteKind::User,
                            subject_id,
                        } => subject_id,
                        other => {
                            // Only a wrong secret wrote (its count).
                            tx.commit()?;
                            return Ok(Err(refusal(&other)));
                        }
                    };
                    if crate::store::offboard::is_disabled(
                        &*tx,
                        crate::store::offboard::Subject::User,
                        &subject_id,
                    )? {
                        return Ok(Err(DISABLED));
                    }
                    let user = identity::require_user(&*tx, &subject_id)?;
                    let expires_at = invites::expiry(&*tx, &code)?.unwrap_or(now);
                    Ok(Ok((
                        UserRef {
                            id: user.id,
                            display_name: user.display_name,
                        },
                        expires_at,
                    )))
                },
            )
            .await?;
        match outcome {
            Ok((user, expires_at)) => Ok(PairPreview {
                user,
                server: self.settings.public_url(),
                expires_at: chrono::DateTime::from_timestamp(expires_at, 0)
                    .map(|t| qp_core::protocol::time::format(&t))
                    .unwrap_or_default(),
            }),
            Err(message) => {
                self.pair_failures.record(addr);
                Err(invalid_code(message))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v6(s: &str) -> IpAddr {
        s.parse::<Ipv6Addr>().unwrap().into()
    }

    fn settings(listen: &str, public_url: Option<&str>, tls: bool) -> Settings {
        Settings {
            listen: listen.parse().unwrap(),
            public_url: public_url.map(str::to_string),
            tls: if tls {
                crate::config::TlsSettings::Files {
                    cert: "cert.pem".into(),
                    key: "key.pem".into(),
                    reload_interval: Duration::from_secs(5),
                }
            } else {
                crate::config::TlsSettings::Off
            },
            ..Settings::default()
        }
    }

    #[test]
    fn a_link_carries_the_given_url_else_the_public_url_else_the_listener() {
        let public = settings("127.0.0.1:8750", Some("https://qp.example.com/"), false);
        assert_eq!(link_base(&public, None).unwrap(), "https://qp.example.com");
        assert_eq!(
            link_base(&public, Some("https://phones.example.net/")).unwrap(),
            "https://phones.example.net"
        );
        let tls = settings("127.0.0.1:8443", None, true);
        assert_eq!(link_base(&tls, None).unwrap(), "https://127.0.0.1:8443");
        let plain = settings("[::1]:8750", None, false);
        assert_eq!(link_base(&plain, None).unwrap(), "http://[::1]:8750");
        // No public URL: loopback is this machine's server, and allowed.
        assert!(link_base(&plain, Some("http://localhost:9")).is_ok());
    }

    #[test]
    fn a_link_no_phone_could_follow_is_refused() {
        // The running server sets public_url to its listener when none is
        // configured: a wildcard one is refused there too.
        for listen in ["0.0.0.0:8443", "[::]:8443"] {
            for configured in [false, true] {
                let mut s = settings(listen, None, true);
                if configured {
                    s.public_url = Some(s.url_of(s.listen));
                }
                let e = link_base(&s, None).unwrap_err();
                assert!(e.0.contains("--url") && e.0.contains("public_url"), "{e}");
            }
        }
        let public = settings("127.0.0.1:8750", Some("https://qp.example.com"), false);
        for url in [
            "http://127.0.0.1:8750",
            "http://LOCALHOST",
            "https://[::1]:1",
            "http://qp.localhost",
        ] {
            let e = link_base(&public, Some(url)).unwrap_err();
            assert!(
                e.0.contains("loopback") && e.0.contains("https://qp.example.com"),
                "{e}"
            );
        }
        for url in ["qp.example.com", "ftp://qp.example.com", "https://"] {
            assert!(link_base(&public, Some(url)).is_err(), "{url}");
        }
    }

    #[test]
    fn ipv6_addresses_of_one_64_share_one_budget() {
        let f = PairFailures::default();
        // The report: every address of one /64 had its own ten failures.
        for i in 1..=MAX_FAILURES_PER_ADDRESS {
            f.record(v6(&format!("2001:db8:1:2::{i:x}")));
        }
        assert!(f.blocked(v6("2001:db8:1:2:ffff:ffff:ffff:ffff")).is_some());
        assert!(f.blocked(v6("2001:db8:1:3::1")).is_none());
        assert_eq!(f.tracked(), 1);
        // IPv4-mapped IPv6 is the IPv4 address.
        let mapped = v6("::ffff:192.0.2.7");
        assert_eq!(
            address_group(mapped),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7))
        );
    }

    #[test]
    fn the_table_stays_bounded_with_constant_work_per_attempt() {
        let f = PairFailures::default();
        let cap = 1_000;
        let timed = |f: &PairFailures, base: u32| {
            let t = Instant::now();
            for i in 0..20_000u32 {
                f.record_capped(IpAddr::V4(Ipv4Addr::from(base + i)), cap);
            }
            t.elapsed()
        };
        let first = timed(&f, 0);
        assert_eq!(f.tracked(), cap);
        // Far past the bound, an attempt costs what it did at the start
        // (the report: a scan of the whole map on every failure).
        let later = timed(&f, 1 << 24);
        assert_eq!(f.tracked(), cap);
        assert!(
            later < first * 4 + Duration::from_millis(20),
            "20,000 attempts took {first:?} at first and {later:?} when full"
        );
        // The newest address is remembered; the oldest was forgotten.
        let newest = IpAddr::V4(Ipv4Addr::from((1u32 << 24) + 19_999));
        for _ in 1..MAX_FAILURES_PER_ADDRESS {
            f.record_capped(newest, cap);
        }
        assert!(f.blocked(newest).is_some());
        assert_eq!(f.inner.lock().unwrap().order.len(), cap);
    }
}
