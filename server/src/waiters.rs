//! Long-poll waiters: many tasks may wait on one question; a resolution wakes
//! them all at once with the resolved question, with no polling.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use qp_core::protocol::Question;
use tokio::sync::watch;

type Slot = watch::Sender<Option<Arc<Question>>>;

#[derive(Default)]
pub struct Waiters {
    slots: Mutex<HashMap<String, Slot>>,
}

impl Waiters {
    /// Starts listening for the resolution of `id`. Subscribe *before*
    /// reading the question's state, so a resolution in between is not missed.
    pub fn subscribe(&self, id: &str) -> watch::Receiver<Option<Arc<Question>>> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .entry(id.to_string())
            .or_insert_with(|| watch::channel(None).0)
            .subscribe()
    }

    /// Wakes every waiter of this question with its resolved state.
    pub fn release(&self, q: Arc<Question>) {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&q.id);
        if let Some(tx) = slot {
            tx.send_replace(Some(q));
        }
    }

    /// Drops the slot of `id` once nobody waits on it any more.
    pub fn forget_if_unused(&self, id: &str) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slots.get(id).is_some_and(|tx| tx.receiver_count() == 0) {
            slots.remove(id);
        }
    }

    /// Whether anyone here waits on `id`.
    pub fn is_waited(&self, id: &str) -> bool {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .is_some_and(|tx| tx.receiver_count() > 0)
    }

    /// The questions someone here waits on.
    pub fn waited_ids(&self) -> Vec<String> {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, tx)| tx.receiver_count() > 0)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// How many questions have at least one slot (for tests and metrics).
    pub fn slot_count(&self) -> usize {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Long-polls held now per holder (an agent or a user, all its tokens
/// together), capped: each parked request keeps a connection, and one token
/// must not be able to take every connection the server has. The lock is
/// taken only to count in and out, never across a wait.
pub struct LongPolls {
    max: u32,
    held: Arc<Mutex<HashMap<String, u32>>>,
}

/// One long-poll counted in; counted out when dropped.
pub struct LongPollSlot {
    key: String,
    held: Arc<Mutex<HashMap<String, u32>>>,
}

impl LongPolls {
    pub fn new(max: u32) -> Self {
        LongPolls {
            max,
            held: Default::default(),
        }
    }

    pub fn max(&self) -> u32 {
        self.max
    }

    /// Counts one more long-poll for `key`, or `None` when it holds the
    /// maximum already.
    pub fn enter(&self, key: String) -> Option<LongPollSlot> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(key.clone()).or_insert(0);
        if *n >= self.max {
            if *n == 0 {
                held.remove(&key);
            }
            return None;
        }
        *n += 1;
        drop(held);
        Some(LongPollSlot {
            key,
            held: self.held.clone(),
        })
    }

    /// How many long-polls `key` holds now.
    pub fn held_by(&self, key: &str) -> u32 {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.get(key).copied().unwrap_or(0)
    }
}

impl Drop for LongPollSlot {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_polls_are_capped_per_holder_and_counted_out_on_drop() {
        let polls = LongPolls::new(2);
        let a = polls.enter("agent:a".into()).unwrap();
        let _b = polls.enter("agent:a".into()).unwrap();
        assert!(polls.enter("agent:a".into()).is_none());
        // Another holder has its own budget.
        assert!(polls.enter("agent:b".into()).is_some());
        drop(a);
        assert_eq!(polls.held_by("agent:a"), 1);
        assert!(polls.enter("agent:a".into()).is_some());
    }
}
