//! Where the MCP tools send their calls: the server's own [`App`] (for
//! `/mcp` on `qp serve`, as the agent the request's token names) or a remote
//! server over HTTP (for `qp mcp` on stdio). One interface, so each tool is
//! written once.

use std::sync::Arc;
use std::time::Duration;

use qp_client::{AskerClient, ClientError};
use qp_core::protocol::{AskRequest, AskedQuestion, Question, QuestionState};

use crate::app::{App, AppError};
use crate::store::identity::Agent;

/// A failed call as a model should read it: what went wrong, on which field.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: String,
    pub field: Option<String>,
    pub message: String,
    /// The question as it stands (cancelling a resolved one).
    pub question: Option<Box<Question>>,
}

impl From<AppError> for Failure {
    fn from(e: AppError) -> Self {
        let field = e.field().map(str::to_string);
        let message = match &e {
            // The database's trouble is the operator's to read in the log.
            AppError::Storage(db) => {
                tracing::error!(error = %db, "MCP tool: database error");
                crate::health::DbFailure::of(db).message().to_string()
            }
            e => e.to_string(),
        };
        Failure {
            code: e.code().to_string(),
            field,
            message,
            question: match e {
                AppError::AlreadyResolved(q) => Some(q),
                _ => None,
            },
        }
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Api {
                code,
                message,
                field,
                question,
                ..
            } => Failure {
                code,
                field,
                message,
                question,
            },
            other => Failure {
                code: "unavailable".into(),
                field: None,
                message: other.to_string(),
                question: None,
            },
        }
    }
}

#[derive(Clone)]
pub enum Backend {
    /// In the server: the agent is authenticated per HTTP request.
    Local(Arc<App>),
    /// `qp mcp`: the agent is the token's, on the server at the URL.
    Remote(AskerClient),
}

impl Backend {
    pub async fn ask(
        &self,
        agent: Option<&Agent>,
        room: &str,
        req: &AskRequest,
    ) -> Result<AskedQuestion, Failure> {
        match self {
            Backend::Local(app) => {
                let body = serde_json::to_value(req).map_err(|e| Failure {
                    code: "invalid".into(),
                    field: None,
                    message: e.to_string(),
                    question: None,
                })?;
                Ok(app
                    .ask(agent_of(agent)?.clone(), room.to_string(), body)
                    .await?)
            }
            Backend::Remote(c) => Ok(c.ask_counted(room, req).await?),
        }
    }

    /// Waits at most `max`; returns the question as it then stands.
    pub async fn wait(
        &self,
        agent: Option<&Agent>,
        id: &str,
        max: Duration,
    ) -> Result<Question, Failure> {
        match self {
            Backend::Local(app) => {
                let agent = agent_of(agent)?;
                let deadline = tokio::time::Instant::now() + max;
                loop {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    let chunk = left.min(Duration::from_secs(
                        qp_core::protocol::limits::LONG_POLL_MAX_SECS,
                    ));
                    let q = app.wait(agent, id.to_string(), chunk).await?;
                    if q.state.is_terminal() || left.is_zero() || *app.stopping.borrow() {
                        return Ok(q);
                    }
                }
            }
            Backend::Remote(c) => Ok(c.await_within(id, max).await?),
        }
    }

    pub async fn get(&self, agent: Option<&Agent>, id: &str) -> Result<Question, Failure> {
        match self {
            Backend::Local(app) => Ok(app.agent_question(agent_of(agent)?, id.to_string()).await?),
            Backend::Remote(c) => Ok(c.fetch(id).await?),
        }
    }

    /// `state: None` is the last 24 hours; `Some("all")` everything.
    pub async fn list(
        &self,
        agent: Option<&Agent>,
        state: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Question>, Failure> {
        match self {
            Backend::Local(app) => {
                let (st, all) = match state {
                    None => (None, false),
                    Some("all") => (None, true),
                    Some(s) => (QuestionState::parse(s), false),
                };
                Ok(app.list(agent_of(agent)?, st, all, limit).await?)
            }
            Backend::Remote(c) => {
                let mut qs = c.list(state).await?;
                qs.truncate(limit);
                Ok(qs)
            }
        }
    }

    pub async fn cancel(&self, agent: Option<&Agent>, id: &str) -> Result<Question, Failure> {
        match self {
            Backend::Local(app) => Ok(app.cancel(agent_of(agent)?, id.to_string()).await?),
            Backend::Remote(c) => Ok(c.cancel(id).await?),
        }
    }
}

/// The in-server backend needs the request's agent; the `/mcp` route's
/// middleware has put it there, so its absence is a server fault.
fn agent_of(agent: Option<&Agent>) -> Result<&Agent, Failure> {
    agent.ok_or_else(|| Failure {
        code: "unauthorized".into(),
        field: None,
        message: "no authenticated agent on this request".into(),
        question: None,
    })
}
