//! Pairing: one-time codes that a phone (`POST /api/pair`) or an agent's CLI
//! (`POST /api/agent/login`) exchanges for its own token, and invites made by
//! an operator (`qp admin … invite`, `POST /api/admin/…/invites`).
//!
//! Guessing is bounded twice: each invite is burned after a few wrong
//! secrets against its id (store::invites), and each client address may
//! fail only [`MAX_FAILURES_PER_ADDRESS`] times per [`FAILURE_WINDOW`] before
//! every attempt from it is refused with 429, valid or not.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use qp_core::pairing::normalize_code;
use serde_json::{json, Value};

use crate::app::App;
use crate::http::error::ApiError;
use crate::store::identity::{self, Device};
use crate::store::invites::{self, InviteKind, NewInvite, Redeemed};
use crate::store::now_secs;

/// Failed attempts one address may make per window.
pub const MAX_FAILURES_PER_ADDRESS: u32 = 10;
pub const FAILURE_WINDOW: Duration = Duration::from_secs(600);

/// Failed pairing attempts per client address, in memory.
#[derive(Default)]
pub struct PairFailures {
    by_address: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl PairFailures {
    /// `Some(seconds to wait)` when `addr` has failed too often lately.
    fn blocked(&self, addr: IpAddr) -> Option<u64> {
        let map = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        let (count, since) = map.get(&addr)?;
        let left = FAILURE_WINDOW.checked_sub(since.elapsed())?;
        (*count >= MAX_FAILURES_PER_ADDRESS).then(|| left.as_secs().max(1))
    }

    fn record(&self, addr: IpAddr) {
        let mut map = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() > 10_000 {
            map.retain(|_, (_, since)| since.elapsed() < FAILURE_WINDOW);
        }
        let entry = map.entry(addr).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= FAILURE_WINDOW {
            *entry = (0, Instant::now());
        }
        entry.0 += 1;
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
}

impl DeviceFields {
    pub fn registration(&self) -> identity::DeviceRegistration<'_> {
        identity::DeviceRegistration {
            platform: &self.platform,
            push_token: &self.push_token,
            app_id: &self.app_id,
            locale: &self.locale,
            public_key: self.public_key.as_deref(),
        }
    }
}

fn invalid_code(message: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_code", message).with_field("code")
}

impl App {
    /// Creates an invite for a user (a phone) or an agent (`qp login`).
    pub async fn invite(
        &self,
        kind: InviteKind,
        subject_id: String,
        ttl_secs: i64,
    ) -> Result<NewInvite, ApiError> {
        self.db
            .run(move |conn| -> Result<_, ApiError> {
                match kind {
                    InviteKind::User => {
                        identity::require_user(conn, &subject_id)?;
                    }
                    InviteKind::Agent => {
                        if identity::agent(conn, &subject_id)?.is_none() {
                            return Err(ApiError::not_found(format!("no agent {subject_id}")));
                        }
                    }
                }
                Ok(invites::create(
                    conn,
                    kind,
                    &subject_id,
                    ttl_secs,
                    now_secs(),
                )?)
            })
            .await
    }

    /// Redeems `code` from `addr` for a new token of `kind`, labelled
    /// `label`; for a user, optionally registers `device` in the same
    /// transaction. Returns the response body (the token is in it, once).
    pub async fn redeem(
        &self,
        addr: IpAddr,
        code: &str,
        kind: InviteKind,
        label: String,
        device: Option<DeviceFields>,
    ) -> Result<Value, ApiError> {
        if let Some(wait) = self.pair_failures.blocked(addr) {
            return Err(ApiError::too_many(
                "too_many_attempts",
                format!("too many wrong pairing codes from this address; try again in {wait} s"),
                wait,
            ));
        }
        let Some(code) = normalize_code(code) else {
            self.pair_failures.record(addr);
            return Err(invalid_code(
                "code: not a pairing code (16 letters and digits, like K7QD-8M3X-PA2F-9TRV)",
            ));
        };
        let outcome = self
            .db
            .run(move |conn| -> Result<Result<Value, &'static str>, ApiError> {
                let tx = conn.transaction()?;
                let redeemed = invites::redeem(&*tx, &code, now_secs())?;
                let subject_id = match redeemed {
                    Redeemed::Ok { kind: k, subject_id } if k == kind => subject_id,
                    Redeemed::Ok { .. } => {
                        // An agent code at the phone endpoint (or the reverse):
                        // not spent, and not the caller's to use here.
                        return Ok(Err("code: this code is not for this kind of sign-in"));
                    }
                    Redeemed::Used => {
                        tx.commit()?;
                        return Ok(Err("code: this code was already used; ask for a new one"));
                    }
                    Redeemed::Expired => {
                        tx.commit()?;
                        return Ok(Err("code: this code has expired; ask for a new one"));
                    }
                    Redeemed::Burned => {
                        tx.commit()?;
                        return Ok(Err(
                            "code: too many wrong attempts on this code; ask for a new one",
                        ));
                    }
                    Redeemed::Unknown | Redeemed::WrongSecret => {
                        tx.commit()?;
                        return Ok(Err("code: unknown pairing code"));
                    }
                };
                let token = identity::mint_token(&*tx, kind, &subject_id, &label)?;
                let body = match kind {
                    InviteKind::User => {
                        let user = identity::require_user(&*tx, &subject_id)?;
                        let device: Option<Device> = match &device {
                            Some(d) => Some(identity::upsert_device(
                                &*tx,
                                &user.id,
                                &d.registration(),
                            )?),
                            None => None,
                        };
                        json!({
                            "token": token,
                            "user": { "id": user.id, "display_name": user.display_name },
                            "device": device.map(|d| json!({
                                "id": d.id, "platform": d.platform, "app_id": d.app_id,
                            })),
                        })
                    }
                    InviteKind::Agent => {
                        let agent = identity::agent(&*tx, &subject_id)?
                            .ok_or_else(|| ApiError::not_found("the agent is gone"))?;
                        json!({
                            "token": token,
                            "agent": { "id": agent.id, "name": agent.name, "handle": agent.handle },
                        })
                    }
                };
                tx.commit()?;
                Ok(Ok(body))
            })
            .await?;
        outcome.map_err(|message| {
            self.pair_failures.record(addr);
            invalid_code(message)
        })
    }
}
