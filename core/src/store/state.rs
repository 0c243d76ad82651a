//! Small named records of the phone (the session, whether the server
//! refused the token), kept in the shared store so the app and its
//! extension agree. Values are JSON; never a token.

use rusqlite::{params, OptionalExtension};

use super::{now_ms, Store, StoreError};

impl Store {
    /// The record under `key`, if any.
    pub fn state(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn()?
            .query_row("SELECT value FROM phone_state WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// Keeps `value` under `key`, replacing any earlier one.
    pub fn set_state(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn()?.execute(
            "INSERT INTO phone_state (key, value, updated_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_ms = excluded.updated_ms",
            params![key, value, now_ms()],
        )?;
        Ok(())
    }

    /// Drops the record under `key` (nothing when there is none).
    pub fn clear_state(&self, key: &str) -> Result<(), StoreError> {
        self.conn()?
            .execute("DELETE FROM phone_state WHERE key = ?1", [key])?;
        Ok(())
    }

    /// Signing out: everything this person's phone held (the feed, the
    /// outbox, drafts, the session), in one transaction, and the file
    /// compacted so the deleted rows do not linger in free pages.
    pub fn erase_all(&self) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(
            "DELETE FROM questions; DELETE FROM outbox; DELETE FROM drafts; DELETE FROM phone_state;",
        )?;
        tx.commit()?;
        // Best effort: another process reading keeps the WAL for now.
        let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
        let _ = conn.execute_batch("VACUUM");
        Ok(())
    }

    /// Whether the store holds nothing of anyone (after signing out).
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        let n: i64 = self.conn()?.query_row(
            "SELECT (SELECT count(*) FROM questions) + (SELECT count(*) FROM outbox)
                  + (SELECT count(*) FROM drafts) + (SELECT count(*) FROM phone_state)",
            [],
            |r| r.get(0),
        )?;
        Ok(n == 0)
    }

    /// Answers still to be delivered are due now (after signing in again:
    /// the outbox is sent once, at once).
    pub fn requeue_open(&self) -> Result<usize, StoreError> {
        Ok(self.conn()?.execute(
            "UPDATE outbox SET state = 'queued', next_attempt_ms = ?1 WHERE state IN ('queued', 'sending')",
            [now_ms()],
        )?)
    }
}
