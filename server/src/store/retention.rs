//! Retention: finished rows older than their setting are deleted, in small
//! batches (one short statement each, so requests queued on the database
//! between batches wait milliseconds, not for one long delete), by the
//! sweep of `qp serve` and by `qp admin purge --older-than`.
//!
//! Only what is finished goes: answered, expired and cancelled questions
//! (their answers are part of the row), sent and failed push jobs,
//! delivered and failed webhook deliveries, dev-inbox entries, and expired
//! Idempotency-Keys. Pending questions, queued pushes and pending
//! deliveries are never touched, however old. Each table has a partial
//! index on its age (migration 10 / PostgreSQL 5), so a batch reads only
//! the rows it deletes.

use std::time::Duration;

use super::{Conn, DbResult};
use crate::params;

/// How long each kind of finished row is kept; `None` keeps it forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// Answered, expired and cancelled questions, by when they were asked.
    pub questions: Option<Duration>,
    pub push_jobs: Option<Duration>,
    pub webhook_deliveries: Option<Duration>,
    pub dev_inbox: Option<Duration>,
    /// Rows per delete statement.
    pub batch_size: usize,
}

const DAY: u64 = 86_400;

impl Default for Retention {
    fn default() -> Self {
        Retention {
            questions: Some(Duration::from_secs(365 * DAY)),
            push_jobs: Some(Duration::from_secs(7 * DAY)),
            webhook_deliveries: Some(Duration::from_secs(30 * DAY)),
            dev_inbox: Some(Duration::from_secs(7 * DAY)),
            batch_size: 500,
        }
    }
}

/// One kind of row retention deletes: its table, the finished-and-old
/// condition, and the unit of its age column.
struct Kind {
    name: &'static str,
    /// `DELETE … WHERE key IN (SELECT key … LIMIT ?2)`: ?1 is the cut-off.
    delete: &'static str,
    millis: bool,
}

const QUESTIONS: Kind = Kind {
    name: "questions",
    delete: "DELETE FROM questions WHERE seq IN (SELECT seq FROM questions
             WHERE state <> 'pending' AND created_at < ?1 ORDER BY created_at LIMIT ?2)",
    millis: false,
};
const PUSH_JOBS: Kind = Kind {
    name: "push_jobs",
    delete: "DELETE FROM push_jobs WHERE id IN (SELECT id FROM push_jobs
             WHERE state <> 'queued' AND created_at < ?1 ORDER BY created_at LIMIT ?2)",
    millis: true,
};
const WEBHOOK_DELIVERIES: Kind = Kind {
    name: "webhook_deliveries",
    delete: "DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries
             WHERE state <> 'pending' AND created_at < ?1 ORDER BY created_at LIMIT ?2)",
    millis: true,
};
const DEV_INBOX: Kind = Kind {
    name: "dev_inbox",
    delete: "DELETE FROM dev_inbox WHERE seq IN (SELECT seq FROM dev_inbox
             WHERE created_ms < ?1 ORDER BY created_ms LIMIT ?2)",
    millis: true,
};
const ANSWER_KEYS: Kind = Kind {
    name: "answer_keys",
    delete: "DELETE FROM answer_keys WHERE (user_id, key) IN (SELECT user_id, key FROM answer_keys
             WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)",
    millis: false,
};

/// What is due for deletion: each kind with its cut-off (Unix ms).
/// OAuth's leftovers (store/oauth.rs), a day after they expired: codes,
/// consents, and access and refresh tokens (a used refresh token is kept
/// until it expires, so its reuse is still recognized).
const OAUTH_CODES: Kind = Kind {
    name: "oauth_codes",
    delete: "DELETE FROM oauth_codes WHERE hash IN (SELECT hash FROM oauth_codes
             WHERE expires_at < ?1 ORDER BY expires_at LIMIT ?2)",
    millis: false,
};
const OAUTH_CONSENTS: Kind = Kind {
    name: "oauth_consents",
    delete: "DELETE FROM oauth_consents WHERE id_hash IN (SELECT id_hash FROM oauth_consents
             WHERE expires_at < ?1 ORDER BY expires_at LIMIT ?2)",
    millis: false,
};
const OAUTH_TOKENS: Kind = Kind {
    name: "oauth_tokens",
    delete: "DELETE FROM oauth_tokens WHERE hash IN (SELECT hash FROM oauth_tokens
             WHERE expires_at < ?1 ORDER BY expires_at LIMIT ?2)",
    millis: false,
};
/// OAuth clients nothing refers to (no consent, code or token: never used,
/// or their last grant long over), registered more than
/// [`OAUTH_CLIENT_UNUSED`] ago: anyone may register clients, so what a
/// registration costs on disk must not outlive the sign-in it was for.
const OAUTH_IDLE_CLIENTS: Kind = Kind {
    name: "oauth_clients",
    delete: "DELETE FROM oauth_clients WHERE id IN (SELECT c.id FROM oauth_clients c
             WHERE c.created_at < ?1
               AND NOT EXISTS (SELECT 1 FROM oauth_consents x WHERE x.client_id = c.id)
               AND NOT EXISTS (SELECT 1 FROM oauth_codes x WHERE x.client_id = c.id)
               AND NOT EXISTS (SELECT 1 FROM oauth_tokens x WHERE x.client_id = c.id)
             ORDER BY c.created_at LIMIT ?2)",
    millis: false,
};
/// How long expired OAuth rows stay.
const OAUTH_KEEP: Duration = Duration::from_secs(DAY);
/// How long a registered OAuth client nothing refers to stays: a real
/// client starts its sign-in within minutes of registering.
pub const OAUTH_CLIENT_UNUSED: Duration = Duration::from_secs(2 * 3600);

pub struct Plan {
    kinds: Vec<(&'static Kind, i64)>,
    pub batch_size: usize,
}

impl Plan {
    /// The server's plan: each setting, and the Idempotency-Keys' lifetime.
    pub fn of(r: &Retention, idempotency_key_ttl: Duration, now_ms: i64) -> Plan {
        let cut = |keep: Duration| now_ms.saturating_sub(keep.as_millis() as i64);
        let mut kinds = Vec::new();
        for (kind, keep) in [
            (&QUESTIONS, r.questions),
            (&PUSH_JOBS, r.push_jobs),
            (&WEBHOOK_DELIVERIES, r.webhook_deliveries),
            (&DEV_INBOX, r.dev_inbox),
            (&ANSWER_KEYS, Some(idempotency_key_ttl)),
            (&OAUTH_CODES, Some(OAUTH_KEEP)),
            (&OAUTH_CONSENTS, Some(OAUTH_KEEP)),
            (&OAUTH_TOKENS, Some(OAUTH_KEEP)),
            (&OAUTH_IDLE_CLIENTS, Some(OAUTH_CLIENT_UNUSED)),
        ] {
            if let Some(keep) = keep {
                kinds.push((kind, cut(keep)));
            }
        }
        Plan {
            kinds,
            batch_size: r.batch_size,
        }
    }

    /// `qp admin purge --older-than AGE`: every kind, one cut-off.
    pub fn older_than(age: Duration, batch_size: usize, now_ms: i64) -> Plan {
        let cut = now_ms.saturating_sub(age.as_millis() as i64);
        Plan {
            kinds: [
                &QUESTIONS,
                &PUSH_JOBS,
                &WEBHOOK_DELIVERIES,
                &DEV_INBOX,
                &ANSWER_KEYS,
            ]
            .into_iter()
            .map(|k| (k, cut))
            .collect(),
            batch_size,
        }
    }

    /// One batch of the first kind that still has something to delete;
    /// `None` when nothing is left. Run one per database job, so requests
    /// interleave.
    pub fn step(&self, conn: &Conn) -> DbResult<Option<(&'static str, usize)>> {
        for (kind, cut_ms) in &self.kinds {
            let cut = if kind.millis { *cut_ms } else { cut_ms / 1000 };
            let n = conn.execute(kind.delete, params![cut, self.batch_size])?;
            if n > 0 {
                return Ok(Some((kind.name, n)));
            }
        }
        Ok(None)
    }
}

/// Deleted rows per table.
pub type Purged = std::collections::BTreeMap<&'static str, usize>;

/// Runs `plan` to the end on one connection (`qp admin purge`), batch by
/// batch, each its own statement (and so its own transaction).
pub fn run_to_end(conn: &Conn, plan: &Plan) -> DbResult<Purged> {
    let mut purged = Purged::new();
    while let Some((table, n)) = plan.step(conn)? {
        *purged.entry(table).or_default() += n;
    }
    Ok(purged)
}

/// Why an age (`--older-than`, `--since`) cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgeError {
    #[error("--older-than: {0:?} must be a number and a unit, e.g. 90d")]
    Number(String),
    #[error("--older-than: unit {0:?} must be s, m, h, d or w (e.g. 90d)")]
    Unit(String),
}

/// `--older-than 30d`: a number and a unit (s, m, h, d, w).
pub fn parse_age(s: &str) -> Result<Duration, AgeError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| AgeError::Number(s.to_string()))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => DAY,
        "w" => 7 * DAY,
        _ => return Err(AgeError::Unit(unit.to_string())),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_a_number_and_a_unit() {
        assert_eq!(parse_age("90d").unwrap(), Duration::from_secs(90 * DAY));
        assert_eq!(parse_age("36h").unwrap(), Duration::from_secs(36 * 3600));
        let e = |s| parse_age(s).unwrap_err().to_string();
        assert!(e("90").contains("unit"));
        assert!(e("d").contains("number"));
        assert!(e("3y").contains("s, m, h, d or w"));
    }
}
