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
//! The middleware ([`crate::http::mcp::authenticate`]) checks ownership and counts
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

use std::sync::atomic::Ordering;
use std::sync::Arc;

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
use crate::store::{mcp_sessions, Db, DbError};

use crate::session_owners::CREATING;
pub use crate::session_owners::{Busy, Reservation, SessionOwners, Unsaved, STATE_MAX_BYTES};

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
