//! # qp-server: the Question Protocol companion server
//!
//! - [`app`]: the behaviour (ask, wait, answer, cancel, expiry), HTTP-free.
//! - [`http`]: the wire API of spec section 7 on axum.
//! - [`store`]: SQLite (identity, questions, durable delivery queues).
//! - [`webhook`]: signed outgoing webhooks and their worker.
//! - [`push`]: the push job queue and the transport interface.
//! - [`mcp`]: the MCP tools, on `/mcp` and on `qp mcp` (stdio).
//! - [`oauth`]: OAuth 2.1 for remote MCP clients; `qp login --url` (device flow).
//! - [`tls`]: TLS in the binary (certificate files or ACME) and proxies.
//! - [`secret_files`]: owner-only files for secrets, and warnings for wider ones.
//!
//! The `qp` command line that runs it is its own crate, `qp` (cli/); the
//! asker client `qp ask` and `qp mcp` use is `qp-client`.

pub mod app;
pub mod build_info;
pub mod config;
pub mod connections;
pub mod feed_wake;
pub mod health;
pub mod housekeeping;
pub mod http;
pub mod ids;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod outbound;
pub mod push;
pub mod secret;
pub mod secret_env;
pub mod secret_files;
pub mod serve;
pub mod session_owners;
pub mod sign_in_policy;
pub mod store;
pub mod tls;
pub mod token_cache;
pub mod waiters;
pub mod wakeups;
pub mod webhook;
pub mod workers;

/// Pairing is the application core's (`app::pairing`); this is the path
/// the HTTP layer, OAuth and the tests name it by.
pub use app::pairing;
