//! # qp-client: ask a person from a Rust program
//!
//! The asker's side of the Question Protocol over HTTP: ask a question in a
//! room, await the answer (the long-poll re-polled and transient failures
//! ridden out for you), fetch, list, cancel, and match a webhook event to
//! the question by `correlation_id`. It depends on the protocol types of
//! `qp-core` (re-exported as [`protocol`]) and reqwest; no server code.
//! `qp ask`, `qp watch`, `qp list`, `qp cancel` and `qp mcp` are built on it.
//!
//! ```no_run
//! use qp_client::protocol::{AskRequest, QuestionState};
//! use qp_client::{AskerClient, ClientError};
//!
//! # async fn run() -> Result<(), ClientError> {
//! // The server's URL and an agent token (`qp login` prints one).
//! let client = AskerClient::new("https://qp.example.com", "qp_agent_token")?;
//!
//! // An approve/deny question in the room with invite code OPS123…
//! let asked = client.ask("OPS123", &AskRequest::yes_no("Deploy 2.4 to production?")).await?;
//!
//! // …and its outcome: answered, expired or cancelled.
//! let done = client.await_resolution(&asked.id).await?;
//! match done.state {
//!     QuestionState::Answered => {
//!         let answer = done.answer.expect("an answered question has an answer");
//!         println!("answered: {:?}", answer.value);
//!     }
//!     other => println!("not answered: {}", other.as_str()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Errors: [`ClientError::Api`] carries the server's error body (`status`,
//! `code`, `message`, `field`, and the question for a 409);
//! [`ClientError::is_transient`] says whether trying again may help.
//! An `https://` server with a private CA: [`ExtraCa`] and
//! [`AskerClient::with_ca`].
//!
//! [`ReqwestTransport`] executes the phone core's requests
//! (`qp_core::http::HttpTransport`) for `qp device`, tests and desktop use.
//!
//! With the `hook` feature, `hook`: a coding agent's permission prompt as
//! a question, and the answer as the hook's decision (`qp hook` does the I/O).

mod asker;
mod ca;
mod error;
#[cfg(feature = "hook")]
pub mod hook;
mod transport;
mod webhook;

pub use asker::{AskerClient, WAIT_POLL_SECS};

pub use ca::{CaError, ExtraCa};
pub use error::ClientError;
pub use transport::ReqwestTransport;
pub use webhook::reconcile;

/// How long an asker that waits for a person (the MCP tools, `qp hook`)
/// waits by default: time to notice a notification and answer it.
pub const PERSON_WAIT_DEFAULT_SECS: u64 = 300;

/// The protocol's wire types (`qp_core::protocol`), so an asker needs no
/// other crate for [`protocol::AskRequest`] and [`protocol::Question`].
pub use qp_core::protocol;
