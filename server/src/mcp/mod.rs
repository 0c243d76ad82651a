//! MCP (Model Context Protocol): agents ask people questions as tool calls.
//!
//! - `/mcp` on `qp serve`: the streamable HTTP transport, every request
//!   authenticated by an agent token ([`authenticate`]); the tools act as
//!   that agent with its scopes and rooms, exactly as the HTTP API does.
//! - `qp mcp`: the same tools over stdio, for clients that launch a local
//!   command; it talks to the server at `QP_URL` with `QP_TOKEN`.
//!
//! The tools ([`tools`]) are written once over [`backend::Backend`].

pub mod backend;
pub mod tools;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::client::AskerClient;
use crate::http::auth::AgentAuth;
use backend::Backend;
use tools::QpTools;

/// The `/mcp` endpoint. Sessions outlive the longest tool wait; they end
/// when the server stops (the waits return the question as it stands).
pub fn http_service(app: Arc<App>) -> StreamableHttpService<QpTools, LocalSessionManager> {
    let stop = CancellationToken::new();
    let mut stopping = app.stopping.subscribe();
    let on_stop = stop.clone();
    tokio::spawn(async move {
        let _ = stopping.wait_for(|s| *s).await;
        on_stop.cancel();
    });
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_secs(tools::WAIT_MAX_SECS + 300));
    let config = StreamableHttpServerConfig::default()
        // Every request carries an agent token, which a page in a browser
        // cannot forge, so the Host check (a DNS-rebinding guard for
        // unauthenticated local servers) would only refuse real hostnames.
        .disable_allowed_hosts()
        .with_cancellation_token(stop);
    StreamableHttpService::new(
        move || Ok(QpTools::new(Backend::Local(app.clone()))),
        Arc::new(sessions),
        config,
    )
}

/// The `/mcp` route's gate: a valid agent token or the API's 401/403; the
/// agent then rides in the request for the tools to read.
pub async fn authenticate(
    State(_app): State<Arc<App>>,
    AgentAuth(agent): AgentAuth,
    mut req: Request,
    next: Next,
) -> Response {
    req.extensions_mut().insert(agent);
    next.run(req).await
}

/// `qp mcp`: serves the tools on stdin/stdout until the client hangs up.
pub async fn serve_stdio(client: AskerClient) -> Result<(), String> {
    let running = QpTools::new(Backend::Remote(client))
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP client did not start a session: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP session ended with an error: {e}"))
}
