//! Pairing a phone: a one-time link or code (from a QR code) becomes the
//! user's token, handed straight to the app's secure storage through
//! [`TokenStore`]. The core keeps no copy: not in SQLite, not in a log.

use serde_json::{json, Value};

use crate::pairing::{parse_pair_input, LinkError};

/// Where the app keeps the user's token: the Keychain (in an access group
/// the extension shares) on iOS, the Keystore-backed storage on Android.
/// The app's [`TokenProvider`](crate::sync::TokenProvider) then reads it back.
pub trait TokenStore: Send + Sync {
    /// Keep `token` for `user_id`, replacing any earlier one. An error
    /// (the Keychain refused) fails the pairing; the code is spent by then,
    /// so the message should tell the person to ask for a new one.
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String>;
}

/// The push registration sent with the pairing, so the phone receives
/// questions from the first moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRegistration {
    /// `ios`, `android` or `dev`.
    pub platform: String,
    pub push_token: String,
    pub app_id: Option<String>,
    /// The person's language (BCP 47), for the visible text of pushes.
    pub locale: Option<String>,
    /// The device's public key (`Phone::device_public_key`), so pushes are
    /// end-to-end encrypted to it; none: plain pushes.
    pub public_key: Option<String>,
}

/// Who the phone is now signed in as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedAccount {
    /// The server to use from now on (from the link, or as given).
    pub server_url: String,
    pub user_id: String,
    pub display_name: String,
    /// The registered device, when a push registration was sent.
    pub device_id: Option<String>,
}

/// Why pairing failed, for the app to switch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairErrorKind {
    /// Not a pairing link or code.
    NotACode,
    /// A bare code without a server URL.
    NoServer,
    /// The server does not know the code, or it was used or has expired.
    InvalidCode,
    /// Too many wrong codes from here: wait (the message says how long).
    TooManyAttempts,
    /// The server could not be reached.
    Unreachable,
    /// The server refused for another reason (the message says which).
    Refused,
    /// The app's secure storage did not keep the token.
    StorageFailed,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct PairError {
    pub kind: PairErrorKind,
    pub detail: String,
}

fn fail(kind: PairErrorKind, detail: impl Into<String>) -> PairError {
    PairError {
        kind,
        detail: detail.into(),
    }
}

impl From<LinkError> for PairError {
    fn from(e: LinkError) -> Self {
        let kind = match e {
            LinkError::NotACode => PairErrorKind::NotACode,
            LinkError::NoServer => PairErrorKind::NoServer,
        };
        fail(kind, e.to_string())
    }
}

/// Exchanges `link_or_code` at the server (the link's, else `server_url`),
/// then hands the token to `tokens`. See [`crate::phone::Phone::pair`].
pub(crate) async fn pair(
    link_or_code: &str,
    server_url: Option<&str>,
    device_label: &str,
    device: Option<&DeviceRegistration>,
    tokens: &dyn TokenStore,
    http: reqwest::Client,
) -> Result<PairedAccount, PairError> {
    let link = parse_pair_input(link_or_code)?;
    let server = link
        .server_url
        .clone()
        .or_else(|| server_url.map(|s| s.trim_end_matches('/').to_string()))
        .ok_or(LinkError::NoServer)?;
    let body = json!({
        "code": link.code,
        "label": device_label,
        "device": device.map(|d| json!({
            "platform": d.platform, "push_token": d.push_token, "app_id": d.app_id,
            "locale": d.locale, "public_key": d.public_key,
        })),
    });
    let resp = http
        .post(format!("{server}/api/pair"))
        .json(&body)
        .send()
        .await
        .map_err(|e| {
            fail(
                PairErrorKind::Unreachable,
                format!(
                    "the server could not be reached: {}",
                    crate::sync::error_chain(&e.without_url())
                ),
            )
        })?;
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap_or_default();
    let message = crate::sync::server_message(&bytes);
    let reply: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    match status {
        200 => {}
        400 | 404 | 410 => return Err(fail(PairErrorKind::InvalidCode, message)),
        429 => return Err(fail(PairErrorKind::TooManyAttempts, message)),
        _ => return Err(fail(PairErrorKind::Refused, format!("{status}: {message}"))),
    }
    let (Some(token), Some(user_id)) = (reply["token"].as_str(), reply["user"]["id"].as_str())
    else {
        return Err(fail(
            PairErrorKind::Refused,
            "the server's answer has no token",
        ));
    };
    tokens
        .save_token(user_id, token)
        .map_err(|e| fail(PairErrorKind::StorageFailed, e))?;
    log::info!("paired as {user_id}");
    Ok(PairedAccount {
        server_url: server,
        user_id: user_id.to_string(),
        display_name: reply["user"]["display_name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        device_id: reply["device"]["id"].as_str().map(String::from),
    })
}
