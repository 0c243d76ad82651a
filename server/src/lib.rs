//! # qp-server: the Question Protocol companion server and `qp` tool
//!
//! - [`app`]: the behaviour (ask, wait, answer, cancel, expiry), HTTP-free.
//! - [`http`]: the wire API of spec section 7 on axum.
//! - [`store`]: SQLite (identity, questions, durable delivery queues).
//! - [`webhook`]: signed outgoing webhooks and their worker.
//! - [`push`]: the push job queue and the transport interface.
//! - [`client`]: a small Rust asker client (what `qp ask` uses).
//! - [`cli`]: the `qp` command line.

pub mod app;
pub mod cli;
pub mod client;
pub mod config;
pub mod http;
pub mod ids;
pub mod pairing;
pub mod push;
pub mod serve;
pub mod store;
pub mod waiters;
pub mod webhook;
