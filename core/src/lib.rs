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
//! - `ffi` (feature `ffi`, on by default): the uniffi facade the Swift and
//!   Kotlin bindings are generated from.

#[cfg(feature = "ffi")]
uniffi::setup_scaffolding!("question_protocol");

pub mod answer;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod payload;
pub mod present;
pub mod protocol;
