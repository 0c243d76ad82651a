//! Push payloads: what the server sends through APNs and FCM, and what the
//! phone decodes from them, with the same code on both sides.
//!
//! A question travels as a [`CompactQuestion`]: everything a phone needs to
//! show the notification and answer it without the network (ids, room, asker,
//! prompt, context, options, text input, scope, times) and nothing else
//! (`data` stays on the server). It rides:
//! - in APNs as the custom key `qp` next to an `aps` dictionary (alert title,
//!   subtitle and body, the per-question `category`, `mutable-content: 1`, a
//!   `thread-id` per room, an interruption level);
//! - in FCM as a data-only message whose string values are `type`
//!   (`question`), `qp` (the compact question as JSON), and `title`/`body`
//!   (for a fallback notification).
//!
//! A resolution travels as a [`ResolvedNotice`] (iOS: an alert that replaces the
//! question's notification in place; Android: a data message), so the phone
//! can replace or withdraw the notification and update its feed.
//!
//! With end-to-end encryption (feature `e2e`, see [`crate::e2e`]) the plain
//! APNs payload above is sealed to one device and rides as `qp_e2e` (APNs
//! key; FCM `type: e2e`) next to a generic alert; the phone opens it
//! ([`open_apns`], [`open_fcm`]) and decodes what it opened as a plain push.
//!
//! The encoder guarantees each gateway's 4096-byte limit for every valid
//! question: it leaves out `data`, then shortens display text (alert body,
//! prompt, context, names, placeholder, labels, in that order) and never
//! drops an id, an option or the text input; the [`EncodeReport`] says what
//! it did. The decoder never panics: it returns a [`PayloadError`] with a
//! stable code, and [`fallback`] gives the plain notification to show then.

mod budget;
mod compact;
mod decode;
mod encode;
#[cfg(feature = "e2e")]
mod sealed;

pub use compact::{CompactOption, CompactQuestion, CompactRoom, ResolvedNotice, PAYLOAD_VERSION};
pub use decode::{
    apns_alert, decode_apns, decode_fcm, fallback, fcm_fallback, ApnsAlert, FallbackNotification,
    Push,
};
pub(crate) use encode::resolved_alert;
pub use encode::{
    encode_apns_question, encode_apns_resolved, encode_fcm_question, encode_fcm_resolved,
    EncodeReport, EncodedApns, EncodedFcm,
};
#[cfg(feature = "e2e")]
pub use encode::{
    encode_apns_question_sealed, encode_apns_resolved_sealed, encode_fcm_question_sealed,
    encode_fcm_resolved_sealed, Recipient,
};
#[cfg(feature = "e2e")]
pub use sealed::{open_apns, open_fcm};

/// The payload limit of both APNs and FCM, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 4096;

/// The key a push's JSON carries a question under (APNs: beside `aps`;
/// FCM: a data key). The push keys are wire names the apps' code and the
/// conformance vectors read: written once, here.
pub const QUESTION_KEY: &str = "qp";
/// The key of a resolution notice (the question was answered elsewhere,
/// expired or cancelled).
pub const RESOLVED_KEY: &str = "qp_resolved";
/// The key of a sealed (end-to-end encrypted) push's envelope.
pub const SEALED_KEY: &str = "qp_e2e";
/// An FCM data message's words, for a phone that cannot use its `qp` (the
/// notification shown instead: see [`fcm_fallback`]).
pub const FCM_TITLE_KEY: &str = "title";
pub const FCM_BODY_KEY: &str = "body";
/// Inputs larger than this are refused before parsing (no gateway sends them).
pub const MAX_DECODE_BYTES: usize = 16 * 1024;

/// The size FCM counts for a data message: its keys plus values, in bytes.
pub fn fcm_data_len<'a>(data: impl IntoIterator<Item = (&'a String, &'a String)>) -> usize {
    data.into_iter().map(|(k, v)| k.len() + v.len()).sum()
}

/// Why a payload could not be used. `code()` is stable for tests and logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("the payload is not valid JSON")]
    NotJson,
    #[error("the payload is {0} bytes, more than any gateway sends")]
    TooLarge(usize),
    #[error("{0} must be a JSON object")]
    NotAnObject(String),
    #[error("{0} is missing")]
    MissingKey(String),
    #[error("{field} must be {expected}")]
    WrongType { field: String, expected: String },
    #[error("payload version {0} is not supported by this app")]
    UnsupportedVersion(i64),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("not a Question Protocol push")]
    NotQuestionProtocol,
    /// End-to-end encrypted, and this device cannot open it (no key, a new
    /// key after a reinstall, tampered, or meant for another device or
    /// question). The generic notification shows; the app syncs over TLS.
    #[error("the encrypted payload cannot be opened on this device: {0}")]
    CannotOpen(String),
    /// Not end-to-end encrypted, on a device that has a key: every genuine
    /// push to it is sealed, so this one may be anyone's who can reach the
    /// gateway. Not trusted: the generic notification shows, the app syncs.
    #[error("a push that is not end-to-end encrypted is not trusted on a device with a key")]
    Unsealed,
}

impl PayloadError {
    /// The field the error is about, where there is one (`qp.options[1].value`).
    pub fn field(&self) -> Option<&str> {
        match self {
            PayloadError::MissingKey(f) | PayloadError::NotAnObject(f) => Some(f),
            PayloadError::WrongType { field, .. } | PayloadError::Invalid { field, .. } => {
                Some(field)
            }
            _ => None,
        }
    }

    pub fn kind(&self) -> PayloadErrorKind {
        match self {
            PayloadError::NotJson => PayloadErrorKind::NotJson,
            PayloadError::TooLarge(_) => PayloadErrorKind::TooLarge,
            PayloadError::NotAnObject(_) => PayloadErrorKind::NotAnObject,
            PayloadError::MissingKey(_) => PayloadErrorKind::MissingKey,
            PayloadError::WrongType { .. } => PayloadErrorKind::WrongType,
            PayloadError::UnsupportedVersion(_) => PayloadErrorKind::UnsupportedVersion,
            PayloadError::Invalid { .. } => PayloadErrorKind::Invalid,
            PayloadError::NotQuestionProtocol => PayloadErrorKind::NotQuestionProtocol,
            PayloadError::CannotOpen(_) => PayloadErrorKind::CannotOpen,
            PayloadError::Unsealed => PayloadErrorKind::Unsealed,
        }
    }

    pub fn code(&self) -> &'static str {
        match self.kind() {
            PayloadErrorKind::NotJson => "not_json",
            PayloadErrorKind::TooLarge => "too_large",
            PayloadErrorKind::NotAnObject => "not_an_object",
            PayloadErrorKind::MissingKey => "missing_key",
            PayloadErrorKind::WrongType => "wrong_type",
            PayloadErrorKind::UnsupportedVersion => "unsupported_version",
            PayloadErrorKind::Invalid => "invalid",
            PayloadErrorKind::NotQuestionProtocol => "not_question_protocol",
            PayloadErrorKind::CannotOpen => "cannot_open",
            PayloadErrorKind::Unsealed => "unsealed",
        }
    }
}

/// The kind of a [`PayloadError`], for code that switches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadErrorKind {
    NotJson,
    TooLarge,
    NotAnObject,
    MissingKey,
    WrongType,
    UnsupportedVersion,
    Invalid,
    NotQuestionProtocol,
    CannotOpen,
    Unsealed,
}
