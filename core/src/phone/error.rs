//! What can go wrong on the phone, as one error with the rich causes inside.
//! The FFI crate maps it to the small public error of the bindings in one
//! place; `qp device` prints it.

use crate::answer::ActionError;
use crate::payload::PayloadError;
use crate::protocol::ValidationError;
use crate::store::StoreError;
use crate::sync::SyncError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhoneError {
    /// An answer broke a protocol rule (the field and the rule).
    #[error(transparent)]
    Validation(#[from] ValidationError),
    /// A push could not be decoded: show the fallback notification.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// A notification action could not become an answer.
    #[error(transparent)]
    Action(#[from] ActionError),
    /// The shared store failed (locked, damaged, cannot be opened).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Not signed in (no token).
    #[error("not signed in")]
    NotSignedIn,
    /// The server no longer takes this phone's token (revoked, expired):
    /// the person must sign in again (pair). Nothing is lost meanwhile.
    #[error("the server refused the sign-in; sign in again: {0}")]
    Unauthorized(String),
    /// The server could not be reached or refused the request.
    #[error("{0}")]
    Network(String),
    /// The question is not held on this device (never pushed nor synced).
    #[error("question {0} is not on this device")]
    UnknownQuestion(String),
    /// Pairing failed (the kind says why).
    #[error(transparent)]
    Pairing(#[from] super::PairError),
    /// An argument that is not well-formed.
    #[error("{0}")]
    InvalidInput(String),
}

impl From<SyncError> for PhoneError {
    fn from(e: SyncError) -> Self {
        match e {
            SyncError::Store(s) => PhoneError::Store(s),
            SyncError::NotSignedIn => PhoneError::NotSignedIn,
            SyncError::Unauthorized(m) => PhoneError::Unauthorized(m),
            other => PhoneError::Network(other.to_string()),
        }
    }
}
