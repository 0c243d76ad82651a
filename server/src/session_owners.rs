//! Which agent owns each `/mcp` session, and how many each holds: the
//! bookkeeping [`crate::app::App`] keeps (`app.mcp_sessions`) and the MCP
//! layer (`mcp::sessions`) drives. A session belongs to the agent whose
//! `initialize` created it; an agent may hold `mcp_max_sessions_per_agent`
//! of them; one with no request in flight for `mcp_session_idle` is closed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::SessionId;

use crate::store::now_ms;

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Who owns which session, and how many each agent holds.
pub struct SessionOwners {
    max_per_agent: u32,
    idle: Duration,
    inner: Mutex<Owners>,
    /// Wakes the reaper now: a session ended or could not be stored.
    pub(crate) reap_now: tokio::sync::Notify,
}

#[derive(Default)]
struct Owners {
    by_session: HashMap<SessionId, Owned>,
    /// Sessions held plus `initialize` requests under way, per agent.
    per_agent: HashMap<String, u32>,
}

struct Owned {
    agent_id: String,
    /// Requests of this session whose responses are still being sent.
    busy: u32,
    last_active: Instant,
    /// The last `last_seen_ms` this instance wrote.
    stamped_ms: Option<i64>,
    /// The store no longer has it: closed at the reaper's next tick,
    /// even with a request in flight (a tool call's wait ends with it).
    ended: bool,
    /// Why the store refused to keep it: the gate then answers the
    /// `initialize` with an error instead of a session that cannot go on.
    unsaved: Option<Unsaved>,
}

/// Why a new session could not be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsaved {
    /// Its `initialize` parameters are over [`STATE_MAX_BYTES`].
    TooLarge(String),
    /// The database did not answer.
    Unavailable(String),
}

/// The most a session's stored `initialize` parameters may take: a client
/// sends its name, version and capabilities (well under 1 KiB in practice);
/// an agent must not park megabytes per session in the database.
pub const STATE_MAX_BYTES: usize = 16 * 1024;

impl Owners {
    fn release(&mut self, agent_id: &str) {
        if let Some(n) = self.per_agent.get_mut(agent_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_agent.remove(agent_id);
            }
        }
    }
}

/// A place for one new session, taken before the `initialize` runs; given
/// back when dropped unless a session was created in it.
pub struct Reservation {
    pub(crate) owners: Arc<SessionOwners>,
    pub(crate) agent_id: String,
    pub(crate) claimed: AtomicBool,
}

/// One request of a session in flight; the session counts as active until
/// this is dropped (with the response body, for a stream).
pub struct Busy {
    pub(crate) owners: Arc<SessionOwners>,
    pub(crate) session: SessionId,
}

tokio::task_local! {
    /// The reservation of the `initialize` request this task is serving.
    pub(crate) static CREATING: Arc<Reservation>;
}

impl SessionOwners {
    pub fn new(max_per_agent: u32, idle: Duration) -> Arc<Self> {
        Arc::new(SessionOwners {
            max_per_agent,
            idle,
            inner: Mutex::default(),
            reap_now: tokio::sync::Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn max_per_agent(&self) -> u32 {
        self.max_per_agent
    }

    /// A place for a new session of `agent_id`, or `None` at the cap.
    pub fn reserve(self: &Arc<Self>, agent_id: &str) -> Option<Arc<Reservation>> {
        let mut owners = self.lock();
        let n = owners.per_agent.entry(agent_id.to_string()).or_insert(0);
        if *n >= self.max_per_agent {
            return None;
        }
        *n += 1;
        Some(Arc::new(Reservation {
            owners: self.clone(),
            agent_id: agent_id.to_string(),
            claimed: AtomicBool::new(false),
        }))
    }

    /// Marks a request of `session` by `agent_id` in flight, or `None` when
    /// the session is not that agent's (or is not held here).
    fn enter(self: &Arc<Self>, session: &str, agent_id: &str) -> Option<Busy> {
        let mut owners = self.lock();
        let owned = owners.by_session.get_mut(session)?;
        if owned.agent_id != agent_id {
            return None;
        }
        owned.busy += 1;
        owned.last_active = Instant::now();
        Some(Busy {
            owners: self.clone(),
            session: session.into(),
        })
    }

    pub(crate) fn bind(&self, session: &SessionId, agent_id: String) {
        self.lock().by_session.insert(
            session.clone(),
            Owned {
                agent_id,
                busy: 0,
                last_active: Instant::now(),
                stamped_ms: None,
                ended: false,
                unsaved: None,
            },
        );
    }

    /// A request of `agent_id` naming `session` that this instance stamped
    /// in the store less than half a reaper period ago: served without
    /// another database write (a session ended elsewhere meanwhile is
    /// heard of by NOTIFY, or by the next stamp). `None`: stamp it first.
    pub fn enter_fresh(self: &Arc<Self>, session: &str, agent_id: &str) -> Option<Busy> {
        {
            let owners = self.lock();
            let o = owners.by_session.get(session)?;
            let fresh_since = now_ms() - millis(self.reap_every() / 2);
            if o.ended || o.agent_id != agent_id || o.stamped_ms.is_none_or(|ms| ms < fresh_since) {
                return None;
            }
        }
        self.enter(session, agent_id)
    }

    /// A request of `agent_id` naming `session`, which the store has just
    /// stamped (`stamped_ms`) as live and that agent's: in flight until
    /// the returned guard drops. A session this instance does not hold
    /// (opened on another instance, or before a restart) is taken over:
    /// rmcp then re-creates it from the store.
    pub fn serve(self: &Arc<Self>, session: &str, agent_id: &str, stamped_ms: i64) -> Busy {
        {
            let mut owners = self.lock();
            if !owners.by_session.contains_key(session) {
                *owners.per_agent.entry(agent_id.to_string()).or_insert(0) += 1;
                owners.by_session.insert(
                    session.into(),
                    Owned {
                        agent_id: agent_id.to_string(),
                        busy: 0,
                        last_active: Instant::now(),
                        stamped_ms: None,
                        ended: false,
                        unsaved: None,
                    },
                );
            }
            if let Some(o) = owners.by_session.get_mut(session) {
                o.stamped_ms = Some(stamped_ms);
                o.ended = false;
            }
        }
        // Ids are random: a session the store says is this agent's is not
        // held here by another.
        self.enter(session, agent_id).unwrap_or_else(|| Busy {
            owners: self.clone(),
            session: session.into(),
        })
    }

    /// The store has no live `session` of `agent_id` (a DELETE or the
    /// idle timeout on another instance): this instance's copy, if it is
    /// that agent's, is closed now. (Another agent
    /// naming the id cannot end it.)
    pub fn ended_elsewhere(&self, session: &str, agent_id: &str) {
        let mut owners = self.lock();
        if let Some(o) = owners
            .by_session
            .get_mut(session)
            .filter(|o| o.agent_id == agent_id)
        {
            o.ended = true;
            o.stamped_ms = None;
            self.reap_now.notify_one();
        }
    }

    /// Another instance ended the session whose stored key is `id_hash`
    /// (NOTIFY `mcp-ended:`): its copy here is closed now, a tool call's
    /// wait with it.
    pub fn ended_by_hash(&self, id_hash: &str) {
        let mut owners = self.lock();
        for (id, o) in owners.by_session.iter_mut() {
            if crate::store::mcp_sessions::key(id) == id_hash {
                o.ended = true;
                o.stamped_ms = None;
                self.reap_now.notify_one();
            }
        }
    }

    /// Every session's next request stamps the store first (after missed
    /// NOTIFYs: the listening connection dropped).
    pub fn stamps_due_now(&self) {
        for o in self.lock().by_session.values_mut() {
            o.stamped_ms = None;
        }
    }

    /// Why `session` could not be stored, if it could not (see
    /// `Owned::unsaved`); the session is then closed at the next tick.
    pub fn unsaved(&self, session: &str) -> Option<Unsaved> {
        let mut owners = self.lock();
        let o = owners.by_session.get_mut(session)?;
        let why = o.unsaved.clone()?;
        o.ended = true;
        drop(owners);
        self.reap_now.notify_one();
        Some(why)
    }

    pub(crate) fn set_unsaved(&self, session: &str, why: Unsaved) {
        if let Some(o) = self.lock().by_session.get_mut(session) {
            o.unsaved = Some(why);
        }
    }

    pub(crate) fn mark_ended(&self, sessions: &[String]) {
        let mut owners = self.lock();
        for id in sessions {
            if let Some(o) = owners.by_session.get_mut(id.as_str()) {
                o.ended = true;
            }
        }
    }

    /// The agent that owns `session`, when this instance holds it.
    pub(crate) fn owner_of(&self, session: &str) -> Option<String> {
        self.lock()
            .by_session
            .get(session)
            .map(|o| o.agent_id.clone())
    }

    /// Sessions serving a request now (a tool call that waits, a stream):
    /// their stored rows are stamped at each reaper tick.
    pub(crate) fn busy_sessions(&self) -> Vec<String> {
        self.lock()
            .by_session
            .iter()
            .filter(|(_, o)| o.busy > 0)
            .map(|(id, _)| id.to_string())
            .collect()
    }

    pub(crate) fn mark_stamped(&self, sessions: &[String], ms: i64) {
        let mut owners = self.lock();
        for id in sessions {
            if let Some(o) = owners.by_session.get_mut(id.as_str()) {
                o.stamped_ms = Some(ms);
            }
        }
    }

    /// The oldest stamp a live stored session can have: idle for the
    /// timeout, plus two reaper periods (a busy session is stamped once a
    /// period, a served one at most half a period late) and a second of
    /// clock difference between instances.
    pub fn live_since_ms(&self) -> i64 {
        let window = self
            .idle
            .saturating_add(self.reap_every().saturating_mul(2))
            .saturating_add(Duration::from_secs(1));
        now_ms().saturating_sub(millis(window))
    }

    pub(crate) fn reap_every(&self) -> Duration {
        (self.idle / 4).max(Duration::from_millis(250))
    }

    /// Forgets a session that ended; its agent's place is free again.
    pub(crate) fn forget(&self, session: &SessionId) {
        let mut owners = self.lock();
        if let Some(owned) = owners.by_session.remove(session) {
            owners.release(&owned.agent_id);
        }
    }

    /// Sessions to close: ended elsewhere (even with a request in
    /// flight), or with nothing in flight for longer than the idle timeout;
    /// with the last stamp this instance wrote of each (`None` for ended
    /// ones: their row is gone already).
    pub(crate) fn to_close(&self) -> Vec<(SessionId, Option<i64>)> {
        let owners = self.lock();
        owners
            .by_session
            .iter()
            .filter(|(_, o)| o.ended || (o.busy == 0 && o.last_active.elapsed() >= self.idle))
            .map(|(id, o)| (id.clone(), o.stamped_ms.filter(|_| !o.ended)))
            .collect()
    }

    /// How many sessions `agent_id` holds now.
    pub fn held_by(&self, agent_id: &str) -> usize {
        let owners = self.lock();
        owners
            .by_session
            .values()
            .filter(|o| o.agent_id == agent_id)
            .count()
    }
}

impl Reservation {
    /// Runs `fut` (the `initialize` request) with this reservation, so the
    /// session it creates is bound to the agent.
    pub async fn scope<F: std::future::Future>(self: Arc<Self>, fut: F) -> F::Output {
        CREATING.scope(self, fut).await
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.claimed.load(Ordering::Acquire) {
            self.owners.lock().release(&self.agent_id);
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut owners = self.owners.lock();
        if let Some(owned) = owners.by_session.get_mut(&self.session) {
            owned.busy = owned.busy.saturating_sub(1);
            owned.last_active = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_capped_per_agent_and_freed() {
        let owners = SessionOwners::new(2, Duration::from_secs(60));
        let a = owners.reserve("a").unwrap();
        let b = owners.reserve("a").unwrap();
        assert!(owners.reserve("a").is_none());
        assert!(owners.reserve("b").is_some());
        // A reservation that made no session gives its place back.
        drop(b);
        let c = owners.reserve("a").unwrap();
        // A bound session is the agent's, and only its.
        let id: SessionId = "s1".into();
        a.claimed.store(true, Ordering::Release);
        owners.bind(&id, "a".into());
        assert!(owners.enter("s1", "b").is_none());
        assert!(owners.enter("s1", "a").is_some());
        assert_eq!(owners.held_by("a"), 1);
        owners.forget(&id);
        drop((a, c));
        assert!(owners.reserve("a").is_some());
    }
}
