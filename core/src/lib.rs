//! # qp-core: the Question Protocol core
//!
//! One Rust crate holds every rule of the Question Protocol (v1.1) and, as the
//! project grows, everything a phone needs to show and answer a question from
//! the lock screen. The companion server (`qp-server`) and the Swift and Kotlin
//! bindings all call into this crate, so a rule lives in exactly one place.
//!
//! Modules:
//! - [`protocol`]: the wire objects (Question, options, answer envelope,
//!   states), validation and normalization of an ask, validation of an answer,
//!   and the state machine. Pure logic, no I/O.

pub mod protocol;
