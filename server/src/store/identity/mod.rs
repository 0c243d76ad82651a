//! Users, rooms, memberships, agents, tokens and devices: the identity
//! aggregates, one file each, their types here (every item is reachable
//! as `identity::…`).

use super::{Conn, DbResult};
use crate::params;
use qp_core::protocol::identity::{self as identity_rules, IdentityError};
use serde::Serialize;

use super::{now_secs, StoreError};
use crate::ids;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct User {
    pub id: String,
    pub display_name: String,
    /// Set when this user came from the token cache: the hash of the
    /// token, whose existence the operation's first statement confirms
    /// (`crate::token_cache`).
    #[serde(skip)]
    pub check_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Webhook {
    pub url: String,
    #[serde(skip)]
    pub secret: String,
    /// Event names forwarded; empty forwards every event.
    pub events: Vec<String>,
}

impl Webhook {
    /// The room's filter: matched by exact event name; empty matches all.
    pub fn wants(&self, event: &str) -> bool {
        self.events.is_empty() || self.events.iter().any(|e| e == event)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Room {
    pub id: String,
    pub code: String,
    pub name: String,
    pub webhook: Option<Webhook>,
}

/// Scopes an agent token may carry.
pub const SCOPE_ASK: &str = "ask";
pub const SCOPE_READ: &str = "read";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Agent {
    pub id: String,
    pub name: String,
    /// URL-safe, derived from the name at creation (`release-bot`).
    pub handle: String,
    pub owner_user_id: String,
    pub scopes: Vec<String>,
    /// As [`User::check_token`].
    #[serde(skip)]
    pub check_token: Option<String>,
}

impl Agent {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Who a bearer token belongs to.
#[derive(Debug, Clone)]
pub enum Principal {
    Agent(Agent),
    User(User),
    /// An operator's token (`qp admin token add-admin`): admin endpoints only.
    Admin {
        label: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct TokenInfo {
    /// The first 12 hex digits of the token's hash: enough to name it for
    /// revocation, useless to authenticate.
    pub hash_prefix: String,
    pub kind: String,
    pub subject_id: String,
    pub label: String,
    pub created_at: i64,
    /// Unix seconds of the last request made with it (to the minute), if any.
    pub last_used_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device {
    pub id: String,
    pub user_id: String,
    pub platform: String,
    pub push_token: String,
    pub app_id: String,
    /// The person's language (BCP 47, `de`, `pt-BR`), for the visible text
    /// of pushes; empty for English.
    pub locale: String,
    /// The device's public key (base64 X25519, checked when registered):
    /// its pushes are end-to-end encrypted to it.
    pub public_key: Option<String>,
    /// iOS: which APNs its token is from (`production`, `sandbox`, checked
    /// when registered); none: the server's default (`--apns-sandbox`).
    pub apns_environment: Option<String>,
}

/// A uniqueness violation becomes `Conflict(message)`; anything else stays a database error.
fn conflict_on_unique(e: crate::store::DbError, message: impl FnOnce() -> String) -> StoreError {
    if e.is_unique_violation() {
        StoreError::Conflict(message())
    } else {
        e.into()
    }
}

/// A broken identity rule (the core's, shared with the phone's decoder) as
/// the store's error: "room name must be 1 to 80 characters".
fn rule(what: &str, checked: Result<(), IdentityError>) -> Result<(), StoreError> {
    checked.map_err(|e| StoreError::Invalid(format!("{what} {e}")))
}

mod agents;
mod devices;
mod names;
mod rooms;
mod tokens;
mod users;

pub use agents::*;
pub use devices::*;
pub use names::*;
pub use rooms::*;
pub use tokens::*;
pub use users::*;
