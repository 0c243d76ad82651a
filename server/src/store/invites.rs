//! One-time pairing invites: a code bound to a user (a phone pairs with it)
//! or to an agent (`qp login`). The code's first group is the invite's
//! public id; the database keeps only a SHA-256 of the whole code. Each
//! invite works once, until it expires, and is burned after a few wrong
//! secrets against its id (so guessing one invite is bounded, whatever the
//! addresses the guesses come from).

use super::{Conn, DbResult};
use crate::params;
use qp_core::pairing::{self, INVITE_ID_CHARS};
use rand::RngCore;

use super::StoreError;
use crate::ids;

/// Wrong secrets against one invite before it is burned.
pub const MAX_WRONG_SECRETS: i64 = 5;
/// How long an invite lives unless told otherwise.
pub const DEFAULT_TTL_SECS: i64 = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InviteKind {
    User,
    Agent,
}

impl InviteKind {
    fn as_str(self) -> &'static str {
        match self {
            InviteKind::User => "user",
            InviteKind::Agent => "agent",
        }
    }
}

/// A new invite: its code is shown once.
#[derive(Debug, Clone)]
pub struct NewInvite {
    pub code: String,
    pub expires_at: i64,
}

/// Creates an invite for `subject_id` that lives `ttl_secs` from `now`.
pub fn create(
    conn: &Conn,
    kind: InviteKind,
    subject_id: &str,
    ttl_secs: i64,
    now: i64,
) -> Result<NewInvite, StoreError> {
    if !(10..=7 * 24 * 3600).contains(&ttl_secs) {
        return Err(StoreError::Invalid(
            "an invite lives 10 seconds to 7 days".into(),
        ));
    }
    // Ids of spent invites are free again.
    conn.execute(
        "DELETE FROM invites WHERE used_at IS NOT NULL OR expires_at <= ?1 OR failed_attempts >= ?2",
        params![now, MAX_WRONG_SECRETS],
    )?;
    for _ in 0..16 {
        let mut random = [0u8; pairing::CODE_CHARS];
        rand::thread_rng().fill_bytes(&mut random);
        let code = pairing::code_from_random(&random);
        let inserted = conn.execute(
            "INSERT INTO invites (id, secret_hash, kind, subject_id, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            params![
                &code[..INVITE_ID_CHARS],
                ids::token_hash(&code),
                kind.as_str(),
                subject_id,
                now,
                now + ttl_secs
            ],
        )?;
        if inserted == 1 {
            return Ok(NewInvite {
                code,
                expires_at: now + ttl_secs,
            });
        }
    }
    Err(StoreError::Conflict(
        "too many live invites; try again later".into(),
    ))
}

/// What a presented code turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeemed {
    /// Valid: now spent (by [`redeem`]; [`peek`] leaves it unspent).
    Ok {
        kind: InviteKind,
        subject_id: String,
    },
    /// No live invite has this id (never existed, or long gone).
    Unknown,
    Used,
    Expired,
    /// Too many wrong secrets were tried against it.
    Burned,
    /// The id exists but the secret is wrong (counted against the invite).
    WrongSecret,
}

/// Checks `code` (canonical form) and spends it when valid. Run inside the
/// transaction that mints the token, so a code gives exactly one token.
pub fn redeem(conn: &Conn, code: &str, now: i64) -> DbResult<Redeemed> {
    check(conn, code, now, true)
}

/// Checks `code` as [`redeem`] does without spending it: what a pairing
/// link is for, shown before the person chooses to pair. A wrong secret
/// counts against the invite exactly as in [`redeem`], so looking is no
/// easier a way to guess a code than pairing.
pub fn peek(conn: &Conn, code: &str, now: i64) -> DbResult<Redeemed> {
    check(conn, code, now, false)
}

/// When the invite of `code` (canonical form) expires, if it exists.
pub fn expiry(conn: &Conn, code: &str) -> DbResult<Option<i64>> {
    conn.query_opt(
        "SELECT expires_at FROM invites WHERE id = ?1",
        params![&code[..INVITE_ID_CHARS]],
        |r| r.get(0),
    )
}

fn check(conn: &Conn, code: &str, now: i64, spend: bool) -> DbResult<Redeemed> {
    let id = &code[..INVITE_ID_CHARS];
    let row: Option<(String, String, String, i64, Option<i64>, i64)> = conn.query_opt(
        "SELECT secret_hash, kind, subject_id, expires_at, used_at, failed_attempts
             FROM invites WHERE id = ?1",
        params![id],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        },
    )?;
    let Some((hash, kind, subject_id, expires_at, used_at, failed)) = row else {
        return Ok(Redeemed::Unknown);
    };
    if failed >= MAX_WRONG_SECRETS {
        return Ok(Redeemed::Burned);
    }
    // Compare hashes in constant time: both are hex of the same length.
    let presented = ids::token_hash(code);
    let same = presented.len() == hash.len()
        && presented
            .bytes()
            .zip(hash.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same {
        conn.execute(
            "UPDATE invites SET failed_attempts = failed_attempts + 1 WHERE id = ?1",
            params![id],
        )?;
        return Ok(if failed + 1 >= MAX_WRONG_SECRETS {
            Redeemed::Burned
        } else {
            Redeemed::WrongSecret
        });
    }
    if used_at.is_some() {
        return Ok(Redeemed::Used);
    }
    if expires_at <= now {
        return Ok(Redeemed::Expired);
    }
    let kind = if kind == "agent" {
        InviteKind::Agent
    } else {
        InviteKind::User
    };
    if !spend {
        return Ok(Redeemed::Ok { kind, subject_id });
    }
    // Conditional, so two redemptions racing (on two instances) spend it once.
    let spent = conn.execute(
        "UPDATE invites SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL",
        params![id, now],
    )?;
    if spent == 0 {
        return Ok(Redeemed::Used);
    }
    Ok(Redeemed::Ok { kind, subject_id })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> rusqlite::Connection {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut c).unwrap();
        c
    }

    #[test]
    fn an_invite_works_once_until_it_expires() {
        let c = db();
        let inv = create(&c, InviteKind::User, "u_1", 600, 1000).unwrap();
        assert_eq!(inv.expires_at, 1600);
        let stored: String = (&c as &Conn)
            .query_row("SELECT secret_hash FROM invites", &[], |r| r.get(0))
            .unwrap();
        assert!(!stored.contains(&inv.code[5..]), "only a hash is stored");
        assert_eq!(
            redeem(&c, &inv.code, 1500).unwrap(),
            Redeemed::Ok {
                kind: InviteKind::User,
                subject_id: "u_1".into()
            }
        );
        assert_eq!(redeem(&c, &inv.code, 1501).unwrap(), Redeemed::Used);
        let late = create(&c, InviteKind::Agent, "a_1", 600, 1000).unwrap();
        assert_eq!(redeem(&c, &late.code, 1600).unwrap(), Redeemed::Expired);
    }

    #[test]
    fn a_peek_names_the_invite_without_spending_it_and_wrong_secrets_still_count() {
        let c = db();
        let inv = create(&c, InviteKind::User, "u_1", 600, 1000).unwrap();
        let ok = Redeemed::Ok {
            kind: InviteKind::User,
            subject_id: "u_1".into(),
        };
        assert_eq!(peek(&c, &inv.code, 1001).unwrap(), ok);
        assert_eq!(peek(&c, &inv.code, 1002).unwrap(), ok);
        assert_eq!(redeem(&c, &inv.code, 1003).unwrap(), ok);
        assert_eq!(peek(&c, &inv.code, 1004).unwrap(), Redeemed::Used);
        // Guessing by peeking burns the invite as guessing by pairing does.
        let other = create(&c, InviteKind::User, "u_2", 600, 1000).unwrap();
        let wrong = format!("{}-0000-0000-0000", &other.code[..4]);
        for _ in 0..MAX_WRONG_SECRETS - 1 {
            assert_eq!(peek(&c, &wrong, 1001).unwrap(), Redeemed::WrongSecret);
        }
        assert_eq!(peek(&c, &wrong, 1001).unwrap(), Redeemed::Burned);
        assert_eq!(redeem(&c, &other.code, 1002).unwrap(), Redeemed::Burned);
    }

    #[test]
    fn wrong_secrets_burn_the_invite() {
        let c = db();
        let inv = create(&c, InviteKind::User, "u_1", 600, 1000).unwrap();
        let wrong = format!("{}-0000-0000-0000", &inv.code[..4]);
        for _ in 0..MAX_WRONG_SECRETS - 1 {
            assert_eq!(redeem(&c, &wrong, 1001).unwrap(), Redeemed::WrongSecret);
        }
        assert_eq!(redeem(&c, &wrong, 1001).unwrap(), Redeemed::Burned);
        // The right code no longer works either.
        assert_eq!(redeem(&c, &inv.code, 1002).unwrap(), Redeemed::Burned);
        assert_eq!(
            redeem(&c, "ZZZZ-0000-0000-0000", 1002).unwrap(),
            Redeemed::Unknown
        );
    }
}
