//! The Question Protocol v1.1 itself: the wire objects and every rule about them.
//!
//! This module is the single home of the protocol's rules. The server uses it to
//! validate an ask and an answer; the phones use the very same code (through the
//! FFI facade) to check what they receive and what the person typed. Nothing
//! here does I/O, so it can be compiled into a notification extension.
//!
//! - [`model`]: the Question object, its options, the answer envelope and the
//!   four states, under their exact wire names.
//! - [`ask`]: the ask request body, and [`normalize_ask`] which validates and
//!   normalizes it (bare-string options, legacy `primary`/`destructive` flags,
//!   the approve/deny default, ttl clamping).
//! - [`answer`]: an answer submission (`{value}` or `{text}`) and its validation
//!   against a question.
//! - [`lifecycle`]: the state machine (`pending` -> `answered` | `expired` |
//!   `cancelled`, terminal states never change).
//! - [`client_text`]: text a client chose that a person reads (one rule
//!   for `client_name`, sign-in labels), and how it is shown.
//! - [`identity`]: ids, display names and room codes (server and phone alike).
//! - [`limits`]: every numeric limit, and the defaults a client needs, in one table.
//! - [`permission`]: the answer values of an Allow/Deny question.
//! - [`web_push`]: the shape of a browser's push subscription (`web` devices).
//! - [`error`]: [`ValidationError`], a field name plus a stable machine code.
//!
//! Lengths are counted in Unicode scalar values (Rust `char`s), never bytes:
//! "🚀" is one character, "é" written as `e` + U+0301 is two.

pub mod answer;
pub mod ask;
pub mod client_text;
pub mod device;
pub mod error;
pub mod identity;
mod json;
pub mod lifecycle;
pub mod limits;
pub mod model;
pub mod permission;
pub mod time;
pub mod web_push;

pub use answer::{typed_length, validate_answer, AnswerChoice, AnswerSubmission};
pub use ask::{normalize_ask, AskContext, AskOption, AskRequest, NormalizedAsk};
pub use error::{ErrorCode, ValidationError};
pub use lifecycle::{AnswerOutcome, StateError};
pub use model::{
    Answer, AskedQuestion, Asker, ConsentRequest, OptionStyle, Question, QuestionOption,
    QuestionState, ResolutionPolicy, Responder, ResponderScope, RoomRef, TextInput, WebhookEvent,
};

/// The protocol version this crate implements.
pub const PROTOCOL_VERSION: &str = "1.1";
