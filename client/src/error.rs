//! What can go wrong when asking.

use qp_core::protocol::Question;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error body.
    #[error("{message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        field: Option<String>,
        /// The question as it stands, for 409 conflicts.
        question: Option<Box<Question>>,
    },
    #[error(
        "cannot reach the server at {url}: {}",
        qp_core::logging::error_chain(source)
    )]
    Transport { url: String, source: reqwest::Error },
    #[error("unexpected response from the server: {0}")]
    Decode(String),
}

impl ClientError {
    /// Worth retrying: the network, or a 5xx / 429.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport { .. } => true,
            ClientError::Api { status, .. } => *status >= 500 || *status == 429,
            ClientError::Decode(_) => false,
        }
    }
}
