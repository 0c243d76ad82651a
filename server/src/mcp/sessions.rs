//! MCP sessions, each owned by the agent that opened it, and bounded.
//!
//! rmcp's in-memory session manager knows nothing of agents: any token that
//! showed a session id could use or delete that session, one agent could
//! open sessions without end, and each stayed for 20 minutes (its idle timer
//! must outlast a 900 s tool wait, during which the session sees no event).
//! Here:
//! - a session belongs to the agent whose `initialize` created it; requests
//!   of any other agent naming it get 404, as an unknown session does;
//! - an agent may hold `mcp_max_sessions_per_agent` sessions (429 beyond);
//! - a session with no request in flight for `mcp_session_idle` is closed
//!   (a tool call that waits keeps its session busy while it waits).
//!
//! The middleware ([`super::authenticate`]) checks ownership and counts
//! requests in flight; [`OwnedSessions`] wraps the session manager so the
//! session the `initialize` creates is bound to the agent of the request
//! that is creating it (a task-local set around that request), and so every
//! end of a session, however it comes, frees its place.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// Who owns which session, and how many each agent holds.
pub struct SessionOwners {
    max_per_agent: u32,
    idle: Duration,
    inner: Mutex<Owners>,
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
}

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
    owners: Arc<SessionOwners>,
    agent_id: String,
    claimed: AtomicBool,
}

/// One request of a session in flight; the session counts as active until
/// this is dropped (with the response body, for a stream).
pub struct Busy {
    owners: Arc<SessionOwners>,
    session: SessionId,
}

tokio::task_local! {
    /// The reservation of the `initialize` request this task is serving.
    static CREATING: Arc<Reservation>;
}

impl SessionOwners {
    pub fn new(max_per_agent: u32, idle: Duration) -> Arc<Self> {
        Arc::new(SessionOwners {
            max_per_agent,
            idle,
            inner: Mutex::default(),
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
    /// the session is not that agent's (or does not exist).
    pub fn enter(self: &Arc<Self>, session: &str, agent_id: &str) -> Option<Busy> {
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

    fn bind(&self, session: &SessionId, agent_id: String) {
        self.lock().by_session.insert(
            session.clone(),
            Owned {
                agent_id,
                busy: 0,
                last_active: Instant::now(),
            },
        );
    }

    /// Forgets a session that ended; its agent's place is free again.
    fn forget(&self, session: &SessionId) {
        let mut owners = self.lock();
        if let Some(owned) = owners.by_session.remove(session) {
            owners.release(&owned.agent_id);
        }
    }

    /// Sessions with nothing in flight for longer than the idle timeout.
    fn idle_sessions(&self) -> Vec<SessionId> {
        let owners = self.lock();
        owners
            .by_session
            .iter()
            .filter(|(_, o)| o.busy == 0 && o.last_active.elapsed() >= self.idle)
            .map(|(id, _)| id.clone())
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

/// rmcp's in-memory sessions, with owners: creating a session binds it to
/// the agent of the request creating it, closing one (DELETE, the worker
/// ending, the idle reaper) frees its place.
pub struct OwnedSessions {
    inner: LocalSessionManager,
    owners: Arc<SessionOwners>,
}

impl OwnedSessions {
    pub fn new(inner: LocalSessionManager, owners: Arc<SessionOwners>) -> Arc<Self> {
        Arc::new(OwnedSessions { inner, owners })
    }

    /// Closes the sessions idle past the timeout, every quarter of it,
    /// until the process ends.
    pub async fn reap_idle(self: Arc<Self>) {
        let every = (self.owners.idle / 4).max(Duration::from_millis(250));
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            for id in self.owners.idle_sessions() {
                tracing::debug!(session = %id, "closing an idle MCP session");
                let _ = self.close_session(&id).await;
            }
        }
    }
}

impl SessionManager for OwnedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        // Outside an authenticated `initialize` (never, on /mcp) the session
        // has no owner, so every request naming it gets 404.
        let _ = CREATING.try_with(|r| {
            if !r.claimed.swap(true, Ordering::AcqRel) {
                self.owners.bind(&id, r.agent_id.clone());
            }
        });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        _id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // No external store: an unknown session is 404, never re-created
        // (a restored session would have no owner).
        Ok(RestoreOutcome::NotSupported)
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
