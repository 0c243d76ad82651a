//! Wakes the people's feed long-polls (`App::pending_wait`) whom a change
//! concerns, not every open feed: a question asked of one person wakes that
//! person's feeds; a question for the room wakes the feeds of the room's
//! members. Each feed listens under its keys (its person, and each room it
//! is a member of when it starts waiting) with a `Notify` of its own, so a
//! wake-up that arrives between its read and its wait is kept (a permit),
//! never lost.
//!
//! A wake-up is a hint to read the list again; the list itself is read by
//! the query that decides visibility. Waking too many costs reads; waking
//! too few would hold a feed to its timeout. So whenever whom a change
//! concerns is not known (a wake-up from another instance that did not say,
//! a reconnection), every feed wakes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use qp_core::protocol::{Question, ResponderScope};
use tokio::sync::Notify;

/// The key of a person's feeds.
pub fn user_key(user_id: &str) -> String {
    format!("user:{user_id}")
}

/// The key of the feeds of a room's members (by the room's code, which the
/// question carries).
pub fn room_key(room_code: &str) -> String {
    format!("room:{room_code}")
}

/// Whose feeds a change to `q` concerns: its person when it asks one, else
/// its room's members; `None` when the question does not say (then all).
pub fn key_of(q: &Question) -> Option<String> {
    match (&q.responder_scope, &q.target_user_id, &q.room) {
        (ResponderScope::Direct, Some(user), _) => Some(user_key(user)),
        (_, _, Some(room)) => Some(room_key(&room.code)),
        _ => None,
    }
}

#[derive(Default)]
pub struct FeedWake {
    listeners: Mutex<Listeners>,
    /// Feeds woken so far (each wake-up of each feed counts one).
    woken: AtomicU64,
}

#[derive(Default)]
struct Listeners {
    next: u64,
    by_key: HashMap<String, HashMap<u64, Arc<Notify>>>,
}

/// One feed listening, under its keys, until dropped.
pub struct FeedListener<'a> {
    wake: &'a FeedWake,
    id: u64,
    keys: Vec<String>,
    notify: Arc<Notify>,
}

impl FeedListener<'_> {
    /// Resolves at the next wake-up of this feed since it started
    /// listening (or since the last one it took).
    pub async fn woken(&self) {
        self.notify.notified().await
    }
}

impl Drop for FeedListener<'_> {
    fn drop(&mut self) {
        let mut l = self.wake.lock();
        for key in &self.keys {
            if let Some(set) = l.by_key.get_mut(key) {
                set.remove(&self.id);
                if set.is_empty() {
                    l.by_key.remove(key);
                }
            }
        }
    }
}

impl FeedWake {
    fn lock(&self) -> std::sync::MutexGuard<'_, Listeners> {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A feed listening under `keys` ([`user_key`], [`room_key`]).
    pub fn listen(&self, keys: Vec<String>) -> FeedListener<'_> {
        let notify = Arc::new(Notify::new());
        let mut l = self.lock();
        let id = l.next;
        l.next += 1;
        for key in &keys {
            l.by_key
                .entry(key.clone())
                .or_default()
                .insert(id, notify.clone());
        }
        drop(l);
        FeedListener {
            wake: self,
            id,
            keys,
            notify,
        }
    }

    /// Wakes the feeds listening under any of `keys`, each once.
    pub fn wake_keys<'k>(&self, keys: impl IntoIterator<Item = &'k str>) {
        let l = self.lock();
        let mut woken: HashMap<u64, &Arc<Notify>> = HashMap::new();
        for key in keys {
            if let Some(set) = l.by_key.get(key) {
                woken.extend(set.iter().map(|(id, n)| (*id, n)));
            }
        }
        self.deliver(woken.into_values());
    }

    /// Wakes the feeds a change to `q` concerns.
    pub fn wake_for(&self, q: &Question) {
        match key_of(q) {
            Some(key) => self.wake_keys([key.as_str()]),
            None => self.wake_all(),
        }
    }

    /// Wakes every feed (whom a change concerns is not known).
    pub fn wake_all(&self) {
        let l = self.lock();
        let mut all: HashMap<u64, &Arc<Notify>> = HashMap::new();
        for set in l.by_key.values() {
            all.extend(set.iter().map(|(id, n)| (*id, n)));
        }
        self.deliver(all.into_values());
    }

    fn deliver<'n>(&self, notifies: impl Iterator<Item = &'n Arc<Notify>>) {
        for n in notifies {
            // A permit when the feed is between its read and its wait.
            n.notify_one();
            self.woken.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How many feed wake-ups were delivered so far.
    pub fn woken(&self) -> u64 {
        self.woken.load(Ordering::Relaxed)
    }
}
