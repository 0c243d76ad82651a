//! # qp-core: the Question Protocol core
//!
//! One Rust crate holds every rule of the Question Protocol (v1.1) and
//! everything a phone needs to show and answer a question from the lock
//! screen. The companion server (`qp-server`) and the Swift and Kotlin
//! bindings all call into this crate, so a rule lives in exactly one place.
//!
//! Modules:
//! - [`protocol`]: the wire objects (Question, options, answer envelope,
//!   states), validation and normalization of an ask, validation of an answer,
//!   and the state machine. Pure logic, no I/O.
//! - [`payload`]: push payloads for APNs and FCM: encoded by the server within
//!   the 4 KB limit, decoded by the phone without ever panicking.
//! - [`present`]: what a person sees: the copy table, the iOS category and
//!   actions, the category registry, the Android notification and actions.
//! - [`answer`]: from a tapped action or typed reply to a validated answer.
//! - `store` (feature `phone`): the SQLite store the app and its extension
//!   share: the feed, the outbox of answers, drafts.
//! - `sync` (feature `phone`): flushing the outbox and pulling from the server.
//! - `feed` (feature `phone`): the feed cells the app draws (spec 6.2).
//! - [`logging`]: one-time logger setup (oslog on Apple, logcat on Android).
//! - `ffi` (feature `ffi`, on by default): the uniffi facade the Swift and
//!   Kotlin bindings are generated from.

#[cfg(feature = "ffi")]
uniffi::setup_scaffolding!("question_protocol");

pub mod answer;
#[cfg(feature = "phone")]
pub mod feed;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod logging;
pub mod payload;
pub mod present;
pub mod protocol;
#[cfg(feature = "phone")]
pub mod store;
#[cfg(feature = "phone")]
pub mod sync;
