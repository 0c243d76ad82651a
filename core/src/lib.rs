//! # qp-core: the Question Protocol core
//!
//! One Rust crate holds every rule of the Question Protocol (v1.1) and
//! everything a phone needs to show and answer a question from the lock
//! screen. The companion server (`qp-server`), the terminal device
//! (`qp device`) and the Swift and Kotlin bindings (through `qp-ffi`) all
//! call into this crate, so a rule lives in exactly one place.
//!
//! The modules, in layers, lowest first: a module uses only the modules
//! listed before it, never one after, so there is no cycle
//! (`scripts/check-layers` checks it). Always built (no SQLite, no HTTP, no
//! uniffi) unless a feature is named:
//! 1. [`protocol`]: the wire objects (Question, options, answer envelope,
//!    states), validation and normalization of an ask, validation of an
//!    answer, the state machine, and the identity rules (ids, names, room
//!    codes).
//! 2. [`retry`]: the one backoff policy (phone flush, webhooks, pushes, client).
//! 3. [`logging`]: one-time logger setup (oslog on Apple, logcat on Android),
//!    and an error with its causes on one line.
//! 4. [`pairing`]: one-time pairing codes and links (server, phone and CLI).
//! 5. `e2e` (feature `e2e`): end-to-end encrypted pushes (HPKE): sealing on
//!    the server, the device key and opening on the phone.
//! 6. [`actions`]: the action identifiers of both platforms (category,
//!    options, reply, choose) and [`ActionError`](actions::ActionError).
//! 7. [`copy`]: every word a person reads, in their language.
//! 8. [`payload`]: push payloads for APNs and FCM: encoded by the server
//!    within the 4 KB limit, decoded by the phone without ever panicking.
//! 9. [`present`]: what a person sees: the iOS category and actions, the
//!    category registry, the Android notification and actions, feed cells.
//! 10. [`answer`]: from a tapped action or typed reply to a validated answer.
//! 11. `store` (feature `phone`): the SQLite store the app and its extension
//!     share.
//! 12. `sync` (feature `phone`): flushing the outbox and pulling from the
//!     server.
//! 13. `feed` (feature `phone`): the feed cells the app draws (spec 6.2) and
//!     the icon's badge count.
//! 14. `phone` (feature `phone`): the one [`Phone`](phone::Phone) type:
//!     receive a push, answer, drafts, flush, sync, the feed, category
//!     planning, reconciling the notifications on screen. The uniffi object
//!     in `qp-ffi` forwards to it; `qp device` drives it in a terminal.

pub mod actions;
pub mod answer;
pub mod copy;
#[cfg(feature = "e2e")]
pub mod e2e;
#[cfg(feature = "phone")]
pub mod feed;
#[cfg(feature = "http")]
pub mod http;
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
