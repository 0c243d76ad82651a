//! # qp-ffi: the library Swift and Kotlin load
//!
//! The uniffi facade of [`qp_core`], in its own crate so that `qp-core`
//! stays free of uniffi (the server and any Rust asker depend on it without
//! the FFI machinery). Thin on purpose: the core's plain types cross as they
//! are ([`types`], uniffi remote types), one error enum with typed kinds
//! ([`error`]), one object ([`PhoneCore`], forwarding to `qp_core::phone::Phone`)
//! and a few free functions ([`platform`]; presentation options and counts
//! in [`present`]). No phone rule is decided here.
//!
//! Feature `testing` adds the exports the Swift and Kotlin suites use to
//! replay the conformance vectors; shipped libraries are built without it.

uniffi::setup_scaffolding!("question_protocol");

pub mod error;
pub mod http;
pub mod keys;
pub mod lifecycle;
pub mod observe;
pub mod pairing;
pub mod phone;
pub mod platform;
pub mod present;
pub mod session;
#[cfg(feature = "testing")]
pub mod testing;
pub mod types;

pub use error::QpError;
pub use http::{set_http_transport, HttpTransport};
pub use lifecycle::{
    apns_alert, phone_budgets, resolution_push_without_store, ForegroundReport, StepFailure,
};
pub use pairing::{pair_device, SecureStore};
pub use phone::{PhoneCore, TokenProvider};
pub use session::TokenVault;
