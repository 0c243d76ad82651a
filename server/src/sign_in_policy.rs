//! Who may approve an agent sign-in (an MCP client's OAuth, `qp login
//! --url`), and whom the agent it makes may ask: the operator's settings
//! `agent_sign_in` and `sign_in_agents_ask`, judged here only.
//!
//! Starting a sign-in needs no credential, and its client names itself; an
//! approval makes an agent in a room that everyone there could be asked by.
//! So who may approve is the operator's choice, the agent is shown with the
//! person who signed it in (`client_text::signed_in_display_name`), and by
//! default it asks that person only.

use std::net::IpAddr;
use std::num::NonZeroU32;

use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::store::{identity, Conn, DbResult};

/// `agent_sign_in`: who may approve a sign-in in a room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Approvers {
    /// Nobody: sign-ins are refused before anyone is asked.
    Off,
    /// The room's admins (`qp admin room add-member ROOM USER --admin`).
    Admins,
    /// Any member of the room (the agent asks only them, unless
    /// `sign_in_agents_ask` is `room`).
    #[default]
    Members,
}

impl Approvers {
    pub const CHOICES: [&'static str; 3] = ["off", "admins", "members"];

    pub fn parse(s: &str) -> Result<Self, ChoiceError> {
        match s {
            "off" => Ok(Approvers::Off),
            "admins" => Ok(Approvers::Admins),
            "members" => Ok(Approvers::Members),
            other => Err(ChoiceError {
                setting: "agent_sign_in",
                choices: "off, admins or members",
                given: other.to_string(),
            }),
        }
    }
}

/// `sign_in_agents_ask`: whom an agent made by a sign-in may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Audience {
    /// Only the person who signed it in, directly.
    #[default]
    Owner,
    /// Anyone in its room, as an operator's agent may.
    Room,
}

impl Audience {
    pub const CHOICES: [&'static str; 2] = ["owner", "room"];

    pub fn parse(s: &str) -> Result<Self, ChoiceError> {
        match s {
            "owner" => Ok(Audience::Owner),
            "room" => Ok(Audience::Room),
            other => Err(ChoiceError {
                setting: "sign_in_agents_ask",
                choices: "owner or room",
                given: other.to_string(),
            }),
        }
    }
}

/// A setting given a value that is none of its choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: must be {choices}, not {given:?}")]
pub struct ChoiceError {
    pub setting: &'static str,
    pub choices: &'static str,
    pub given: String,
}

/// Why a person may not approve a sign-in here (none: they may).
pub fn refusal(
    conn: &Conn,
    approvers: Approvers,
    room_id: &str,
    user_id: &str,
) -> DbResult<Option<&'static str>> {
    Ok(match approvers {
        Approvers::Off => Some(OFF),
        Approvers::Admins if !identity::is_room_admin(conn, room_id, user_id)? => {
            Some("user: only a room admin may approve an agent sign-in here (the operator's setting agent_sign_in = admins)")
        }
        Approvers::Admins | Approvers::Members => None,
    })
}

/// The refusal when the operator turned sign-ins off.
pub const OFF: &str =
    "agent sign-in is off on this server (the operator's setting agent_sign_in = off)";

/// Why an agent made by a sign-in may not ask this question (none: it
/// may): with `owner`, only a direct question to its owner.
pub fn ask_refusal(
    audience: Audience,
    owner_user_id: &str,
    target_user_id: Option<&str>,
) -> Option<(&'static str, String)> {
    match (audience, target_user_id) {
        (Audience::Room, _) => None,
        (Audience::Owner, Some(t)) if t == owner_user_id => None,
        (Audience::Owner, Some(t)) => Some((
            "target_user_id",
            format!("target_user_id: an agent made by a sign-in asks only the person who signed it in ({owner_user_id}), not {t} (the operator's setting sign_in_agents_ask = owner)"),
        )),
        (Audience::Owner, None) => Some((
            "responder_scope",
            "responder_scope: an agent made by a sign-in asks only the person who signed it in: direct, not room (the operator's setting sign_in_agents_ask = owner)".to_string(),
        )),
    }
}

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
