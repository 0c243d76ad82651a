//! # qp-core: the Question Protocol core
//!
//! One Rust crate holds every rule of the Question Protocol (v1.1) and
//! everything a phone needs to show and answer a question from the lock
//! screen. The companion server (`qp-server`), the terminal device
//! (`qp device`) and the Swift and Kotlin bindings (through `qp-ffi`) all
//! call into this crate, so a rule lives in exactly one place.
//!
//! Always built (no SQLite, no HTTP, no uniffi):
//! - [`protocol`]: the wire objects (Question, options, answer envelope,
//!   states), validation and normalization of an ask, validation of an answer,
//!   the state machine, and the identity rules (ids, names, room codes).
//! - [`payload`]: push payloads for APNs and FCM: encoded by the server within
//!   the 4 KB limit, decoded by the phone without ever panicking.
//! - [`present`]: what a person sees: the copy table, the iOS category and
//!   actions, the category registry, the Android notification and actions.
//! - [`answer`]: from a tapped action or typed reply to a validated answer.
//! - [`retry`]: the one backoff policy (phone flush, webhooks, pushes, client).
//! - [`pairing`]: one-time pairing codes and links (server, phone and CLI).
//! - [`logging`]: one-time logger setup (oslog on Apple, logcat on Android).
//!
//! With the `phone` feature:
//! - `phone`: the one [`Phone`](phone::Phone) type: receive a push, answer,
//!   drafts, flush, sync, the feed, category planning. The uniffi object in
//!   `qp-ffi` forwards to it; `qp device` drives it in a terminal.
//! - `store`: the SQLite store the app and its extension share.
//! - `sync`: flushing the outbox and pulling from the server.
//! - `feed`: the feed cells the app draws (spec 6.2).

pub mod actions;
pub mod answer;
pub mod copy;
#[cfg(feature = "e2e")]
pub mod e2e;
#[cfg(feature = "phone")]
pub mod feed;
pub mod logging;
pub mod pairing;
pub mod payload;
#[cfg(feature = "phone")]
pub mod phone;
pub mod present;
pub mod protocol;
pub mod retry;
#[cfg(feature = "phone")]
pub mod store;
#[cfg(feature = "phone")]
pub mod sync;
