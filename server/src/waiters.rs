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
