//! Who a bearer token belongs to, remembered for a few seconds, so the
//! requests of the question loop (ask, wait, answer) need no statement of
//! their own to authenticate.
//!
//! The rules:
//! - keyed by the token's hash (the token itself is never kept);
//! - only tokens the database knows are remembered, so a flood of unknown
//!   tokens adds nothing; at most [`MAX_ENTRIES`] are, each for [`TTL`];
//! - a remembered principal is never trusted alone: the operation's first
//!   statement checks that the token still exists (`verify` in
//!   `store::questions::token_live_sql`), so a revocation, by this process,
//!   another instance or `qp admin` on the same file, holds from the very
//!   next request. A revocation also forgets the entry at once: here
//!   directly, on the other instances through `qp_events`
//!   (`revoked:<hash>`, [`crate::store::events`]);
//! - `last_used_at` of a remembered token is written in batches
//!   ([`flush`], every [`FLUSH_EVERY`]), not per request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::identity::Principal;

/// How long a principal is remembered.
pub const TTL: Duration = Duration::from_secs(5);
/// How many tokens are remembered at most.
pub const MAX_ENTRIES: usize = 10_000;
/// How often remembered uses are written to `last_used_at`.
pub const FLUSH_EVERY: Duration = Duration::from_secs(30);

#[derive(Default)]
pub struct TokenCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, (Principal, Instant)>,
    /// Bumped by every forget: a lookup that started before one does not
    /// put back what it read.
    generation: u64,
    /// Uses not yet written: token hash -> Unix seconds.
    used: HashMap<String, i64>,
}

impl TokenCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The principal of `hash` if remembered and fresh; records the use.
    pub fn get(&self, hash: &str, now_secs: i64) -> Option<Principal> {
        let mut inner = self.lock();
        let principal = match inner.entries.get(hash) {
            Some((p, at)) if at.elapsed() < TTL => p.clone(),
            Some(_) => {
                inner.entries.remove(hash);
                return None;
            }
            None => return None,
        };
        if inner.used.len() < MAX_ENTRIES || inner.used.contains_key(hash) {
            inner.used.insert(hash.to_string(), now_secs);
        }
        Some(principal)
    }

    /// The generation to hand back to [`TokenCache::put`].
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Remembers a principal the database just gave for `hash`, unless a
    /// revocation came in since `generation` was read. When full, expired
    /// entries go first, then any one.
    pub fn put(&self, hash: &str, principal: Principal, generation: u64) {
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        if inner.entries.len() >= MAX_ENTRIES && !inner.entries.contains_key(hash) {
            inner.entries.retain(|_, (_, at)| at.elapsed() < TTL);
            if inner.entries.len() >= MAX_ENTRIES {
                if let Some(k) = inner.entries.keys().next().cloned() {
                    inner.entries.remove(&k);
                }
            }
        }
        inner
            .entries
            .insert(hash.to_string(), (principal, Instant::now()));
    }

    /// Forgets `hash` (revoked).
    pub fn forget(&self, hash: &str) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.entries.remove(hash);
    }

    /// Forgets every token (after a lost wake-up connection: a revocation
    /// may have gone unheard).
    pub fn forget_all(&self) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.entries.clear();
    }

    /// Whether `hash` is remembered now (fresh or not).
    pub fn remembers(&self, hash: &str) -> bool {
        self.lock().entries.contains_key(hash)
    }

    /// How many tokens are remembered now.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The uses recorded since the last call.
    fn take_used(&self) -> HashMap<String, i64> {
        std::mem::take(&mut self.lock().used)
    }
}

/// Writes the uses `tokens` recorded so far to `db`, in one transaction
/// (`crate::app::flush_token_uses_loop` calls it every [`FLUSH_EVERY`]).
pub async fn flush(tokens: &TokenCache, db: &crate::store::Db) {
    let used = tokens.take_used();
    if used.is_empty() {
        return;
    }
    let written = db
        .run(move |conn| -> crate::store::DbResult<()> {
            let tx = conn.transaction()?;
            for (hash, at) in &used {
                crate::store::identity::stamp_use(&*tx, hash, *at)?;
            }
            tx.commit()
        })
        .await;
    if let Err(e) = written {
        tracing::warn!(error = %e, "writing tokens' last use");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::identity::User;

    fn user(id: &str) -> Principal {
        Principal::User(User {
            id: id.into(),
            display_name: id.into(),
            check_token: None,
        })
    }

    #[test]
    fn bounded_and_a_revocation_during_a_lookup_is_not_undone() {
        let c = TokenCache::default();
        for i in 0..MAX_ENTRIES + 50 {
            let g = c.generation();
            c.put(&format!("h{i}"), user("u"), g);
        }
        assert_eq!(c.len(), MAX_ENTRIES);
        let g = c.generation();
        c.forget("late");
        c.put("late", user("u"), g);
        assert!(c.get("late", 0).is_none());
        assert!(c.get("never-put", 0).is_none());
    }
}
