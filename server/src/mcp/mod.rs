//! MCP (Model Context Protocol): agents ask people questions as tool calls.
//!
//! - `/mcp` on `qp serve`: the streamable HTTP transport, every request
//!   authenticated by an agent token (`http::mcp::authenticate`); the tools act as
//!   that agent with its scopes and rooms, exactly as the HTTP API does.
//! - `qp mcp`: the same tools over stdio, for clients that launch a local
//!   command; it talks to the server at `QP_URL` with `QP_TOKEN`.
//!
//! The tools ([`tools`]) are written once over [`backend::Backend`].

pub mod backend;
pub mod sessions;
pub mod tools;

use std::sync::Arc;
use std::time::Duration;

use qp_client::AskerClient;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use backend::Backend;
use sessions::{DbSessions, OwnedSessions};
use tools::QpTools;

/// The `/mcp` endpoint. Sessions belong to the agent that opened them and
/// are bounded (see [`sessions`]); they end when idle, when deleted, or
/// when the server stops (the waits return the question as it stands).
pub fn http_service(app: Arc<App>) -> StreamableHttpService<QpTools, OwnedSessions> {
    let stop = CancellationToken::new();
    let mut stopping = app.stopping.subscribe();
    let on_stop = stop.clone();
    tokio::spawn(async move {
        let _ = stopping.wait_for(|s| *s).await;
        on_stop.cancel();
    });
    let mut local = LocalSessionManager::default();
    // rmcp's own idle timer sees no event while a tool waits, so it must
    // outlast the longest wait; it is only a safety net: the idle timeout
    // that counts is the reaper's, which knows what is in flight.
    local.session_config.keep_alive = Some(Duration::from_secs(tools::TOOL_WAIT_MAX_SECS + 300));
    let sessions = OwnedSessions::new(local, app.mcp_sessions.clone(), app.db.clone());
    let reaper = sessions.clone().reap_idle();
    let reaper_stop = stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = reaper => {}
            _ = reaper_stop.cancelled() => {}
        }
    });
    let mut config = StreamableHttpServerConfig::default()
        // Every request carries an agent token, which a page in a browser
        // cannot forge, so the Host check (a DNS-rebinding guard for
        // unauthenticated local servers) would only refuse real hostnames.
        .disable_allowed_hosts()
        .with_cancellation_token(stop);
    // Sessions in the database: any instance (or this one after a restart)
    // serves a session another opened.
    config.session_store = Some(DbSessions::new(app.db.clone(), app.mcp_sessions.clone()));
    StreamableHttpService::new(
        move || Ok(QpTools::new(Backend::Local(app.clone()))),
        sessions,
        config,
    )
}

/// Why `qp mcp` stopped other than by the client hanging up (rmcp's
/// reason in words).
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("the MCP client did not start a session: {0}")]
    NoSession(String),
    #[error("the MCP session ended with an error: {0}")]
    Ended(String),
}

/// `qp mcp`: serves the tools on stdin/stdout until the client hangs up.
pub async fn serve_stdio(client: AskerClient) -> Result<(), StdioError> {
    let running = QpTools::new(Backend::Remote(client))
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| StdioError::NoSession(e.to_string()))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| StdioError::Ended(e.to_string()))
}
