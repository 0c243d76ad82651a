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
//!
//! Sessions are also kept in the database ([`DbSessions`],
//! `store::mcp_sessions`): a request naming a session this instance does
//! not hold (opened on another instance, or before a restart) is checked
//! against the stored owner, and rmcp re-creates the session from the
//! stored `initialize` parameters. So `/mcp` needs no sticky load balancer.
//! The per-agent cap counts the sessions held on every instance; the idle
//! timeout is the time since any instance last served the session.

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
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionState, SessionStore,
    SessionStoreError,
};

use crate::app::{App, AppError};
use crate::store::{mcp_sessions, now_ms, Db, DbError};

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Who owns which session, and how many each agent holds.
pub struct SessionOwners {
    max_per_agent: u32,
    idle: Duration,
    inner: Mutex<Owners>,
    /// Wakes the reaper now: a session ended or could not be stored.
    reap_now: tokio::sync::Notify,
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

    fn bind(&self, session: &SessionId, agent_id: String) {
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
    /// [`Owned::unsaved`]); the session is then closed at the next tick.
    pub fn unsaved(&self, session: &str) -> Option<Unsaved> {
        let mut owners = self.lock();
        let o = owners.by_session.get_mut(session)?;
        let why = o.unsaved.clone()?;
        o.ended = true;
        drop(owners);
        self.reap_now.notify_one();
        Some(why)
    }

    fn set_unsaved(&self, session: &str, why: Unsaved) {
        if let Some(o) = self.lock().by_session.get_mut(session) {
            o.unsaved = Some(why);
        }
    }

    fn mark_ended(&self, sessions: &[String]) {
        let mut owners = self.lock();
        for id in sessions {
            if let Some(o) = owners.by_session.get_mut(id.as_str()) {
                o.ended = true;
            }
        }
    }

    /// The agent that owns `session`, when this instance holds it.
    fn owner_of(&self, session: &str) -> Option<String> {
        self.lock()
            .by_session
            .get(session)
            .map(|o| o.agent_id.clone())
    }

    /// Sessions serving a request now (a tool call that waits, a stream):
    /// their stored rows are stamped at each reaper tick.
    fn busy_sessions(&self) -> Vec<String> {
        self.lock()
            .by_session
            .iter()
            .filter(|(_, o)| o.busy > 0)
            .map(|(id, _)| id.to_string())
            .collect()
    }

    fn mark_stamped(&self, sessions: &[String], ms: i64) {
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

    fn reap_every(&self) -> Duration {
        (self.idle / 4).max(Duration::from_millis(250))
    }

    /// Forgets a session that ended; its agent's place is free again.
    fn forget(&self, session: &SessionId) {
        let mut owners = self.lock();
        if let Some(owned) = owners.by_session.remove(session) {
            owners.release(&owned.agent_id);
        }
    }

    /// Sessions to close: ended elsewhere (even with a request in
    /// flight), or with nothing in flight for longer than the idle timeout;
    /// with the last stamp this instance wrote of each (`None` for ended
    /// ones: their row is gone already).
    fn to_close(&self) -> Vec<(SessionId, Option<i64>)> {
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

/// The sessions' rows in the database, for rmcp's restore: saved after a
/// successful `initialize` (with the owner bound by [`OwnedSessions`]),
/// loaded when a request names a session this instance does not hold,
/// deleted by the client's DELETE.
pub struct DbSessions {
    db: Db,
    owners: Arc<SessionOwners>,
}

impl DbSessions {
    pub fn new(db: Db, owners: Arc<SessionOwners>) -> Arc<Self> {
        Arc::new(DbSessions { db, owners })
    }
}

#[async_trait::async_trait]
impl SessionStore for DbSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let (id, since) = (session_id.to_string(), self.owners.live_since_ms());
        let found = self
            .db
            .run(move |c| mcp_sessions::find(c, &id, since))
            .await?;
        match found {
            Some(f) => Ok(Some(serde_json::from_str(&f.state)?)),
            None => Ok(None),
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let agent_id = self
            .owners
            .owner_of(session_id)
            .ok_or("a session with no owner is not stored")?;
        let json = serde_json::to_string(state)?;
        if json.len() > STATE_MAX_BYTES {
            let why = format!(
                "initialize: the client's parameters take {} bytes, over the {STATE_MAX_BYTES} an MCP session may keep",
                json.len()
            );
            self.owners
                .set_unsaved(session_id, Unsaved::TooLarge(why.clone()));
            return Err(why.into());
        }
        let id = session_id.to_string();
        match self
            .db
            .run(move |c| mcp_sessions::save(c, &id, &agent_id, &json))
            .await
        {
            Ok(stamped) => {
                self.owners.mark_stamped(&[session_id.to_string()], stamped);
                Ok(())
            }
            Err(e) => {
                self.owners.set_unsaved(
                    session_id,
                    Unsaved::Unavailable(
                        "the session could not be stored: the database did not answer".into(),
                    ),
                );
                Err(e.into())
            }
        }
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let id = session_id.to_string();
        self.db
            .run(move |c| mcp_sessions::delete(c, &id))
            .await
            .map_err(Into::into)
    }
}

/// rmcp's in-memory sessions, with owners: creating a session binds it to
/// the agent of the request creating it, closing one (DELETE, the worker
/// ending, the idle reaper) frees its place.
pub struct OwnedSessions {
    inner: LocalSessionManager,
    owners: Arc<SessionOwners>,
    db: Db,
}

impl OwnedSessions {
    pub fn new(inner: LocalSessionManager, owners: Arc<SessionOwners>, db: Db) -> Arc<Self> {
        Arc::new(OwnedSessions { inner, owners, db })
    }

    /// Every quarter of the idle timeout, until the process ends: stamps
    /// the stored rows of the sessions serving a request now, closes
    /// the sessions idle past the timeout (their rows too, unless another
    /// instance served them since), and deletes rows no instance stamped.
    pub async fn reap_idle(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.owners.reap_every());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = self.owners.reap_now.notified() => {}
            }
            if let Err(e) = self.reap_once().await {
                tracing::warn!(error = %e, "MCP sessions: the database did not answer the idle sweep");
            }
        }
    }

    /// One pass; each step goes on when another's database work fails (a
    /// session idle here is closed here whatever the database says).
    async fn reap_once(&self) -> Result<(), DbError> {
        let mut failed = None;
        let busy = self.owners.busy_sessions();
        if !busy.is_empty() {
            let ids = busy.clone();
            match self.db.run(move |c| mcp_sessions::touch(c, &ids)).await {
                Ok((ms, gone)) => {
                    self.owners.mark_stamped(&busy, ms);
                    // Ended elsewhere while a tool call waited here.
                    self.owners.mark_ended(&gone);
                }
                Err(e) => failed = Some(e),
            }
        }
        for (id, stamped) in self.owners.to_close() {
            tracing::debug!("closing an idle or ended MCP session");
            // The row first (a request between the two would restore it),
            // unless another instance served the session since.
            if let Some(ms) = stamped {
                let key = id.to_string();
                if let Err(e) = self
                    .db
                    .run(move |c| mcp_sessions::delete_if_unseen_since(c, &key, ms))
                    .await
                {
                    failed = Some(e);
                }
            }
            let _ = self.close_session(&id).await;
        }
        let since = self.owners.live_since_ms();
        if let Err(e) = self
            .db
            .run(move |c| mcp_sessions::purge_idle(c, since))
            .await
        {
            failed = Some(e);
        }
        failed.map_or(Ok(()), Err)
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
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Only a session the gate adopted from the store for its owner
        // ([`SessionOwners::adopt`]) is re-created; one with no owner here
        // never is.
        if self.owners.owner_of(&id).is_none() {
            return Ok(RestoreOutcome::NotSupported);
        }
        self.inner.restore_session(id).await
    }
}

/// A request naming session `id`: in flight as `agent_id`'s, or `None`
/// when there is no such live session of that agent (never opened, another
/// agent's, ended by a DELETE, idle on every instance).
///
/// A session this instance stamped in the store a moment ago is served
/// from memory; otherwise the request stamps the stored row, which proves
/// it live and the agent's. One this instance does not hold (opened on
/// another instance, or before a restart) is then re-created by rmcp from
/// the stored `initialize`.
pub async fn enter(app: &App, id: &str, agent_id: &str) -> Result<Option<Busy>, AppError> {
    let owners = &app.mcp_sessions;
    if let Some(busy) = owners.enter_fresh(id, agent_id) {
        return Ok(Some(busy));
    }
    let (key, agent, since) = (id.to_string(), agent_id.to_string(), owners.live_since_ms());
    let stamped = app
        .db
        .run(move |c| crate::store::mcp_sessions::stamp(c, &key, &agent, since))
        .await?;
    match stamped {
        Some(ms) => Ok(Some(owners.serve(id, agent_id, ms))),
        None => {
            owners.ended_elsewhere(id, agent_id);
            Ok(None)
        }
    }
}

/// Whether `agent_id` may open one more session: the sessions it holds on
/// every instance, below `mcp_max_sessions_per_agent`.
pub async fn may_open(app: &App, agent_id: &str) -> Result<bool, AppError> {
    let owners = &app.mcp_sessions;
    let (agent, since) = (agent_id.to_string(), owners.live_since_ms());
    let held = app
        .db
        .run(move |c| crate::store::mcp_sessions::count_live(c, &agent, since))
        .await?;
    Ok(held < owners.max_per_agent())
}

/// The refusal of a session over the per-agent cap.
pub fn too_many(app: &App) -> AppError {
    AppError::rate_limited(
        "too_many_sessions",
        format!(
            "this agent already holds {} MCP sessions (mcp_max_sessions_per_agent); close one (DELETE /mcp) or let one go idle",
            app.mcp_sessions.max_per_agent()
        ),
        app.settings.mcp_session_idle.as_secs(),
    )
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
