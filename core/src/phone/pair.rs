//! Pairing a phone: a one-time link or code (from a QR code) becomes the
//! user's token, handed straight to the app's secure storage through
//! [`TokenStore`]. The core keeps no copy: not in SQLite, not in a log.

use serde_json::{json, Value};

use crate::http::{HttpHeader, HttpMethod, HttpRequest, HttpTransport};
use crate::pairing::{parse_pair_input, LinkError};
use crate::protocol::device::{ApnsEnvironment, Platform};
use crate::sync::{exchange, Reply, REQUEST_TIMEOUT};

/// Where the app keeps the user's token: the Keychain (in an access group
/// the extension shares) on iOS, the Keystore-backed storage on Android.
/// The app's [`TokenProvider`](crate::sync::TokenProvider) then reads it back.
pub trait TokenStore: Send + Sync {
    /// Keep `token` for `user_id`, replacing any earlier one. An error
    /// (the Keychain refused) fails the pairing; the code is spent by then,
    /// so the message should tell the person to ask for a new one.
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String>;
}

/// The push registration sent with the pairing (so the phone receives
/// questions from the first moment) or on its own (`POST /api/devices`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceRegistration {
    #[serde(with = "platform_name")]
    pub platform: Platform,
    pub push_token: String,
    pub app_id: Option<String>,
    /// The person's language (BCP 47), for the visible text of pushes.
    pub locale: Option<String>,
    /// The device's public key (`Phone::device_public_key`), so pushes are
    /// end-to-end encrypted to it; none: plain pushes.
    pub public_key: Option<String>,
    /// iOS: which APNs the token is from (a debug build's are sandbox
    /// tokens); none: the server's default.
    #[serde(default, with = "environment_name")]
    pub apns_environment: Option<ApnsEnvironment>,
}

impl DeviceRegistration {
    /// The registration as the server reads it (`POST /api/devices`, and
    /// `device` inside `POST /api/pair`).
    pub fn to_json(&self) -> Value {
        json!({
            "platform": self.platform.as_str(), "push_token": self.push_token,
            "app_id": self.app_id, "locale": self.locale, "public_key": self.public_key,
            "apns_environment": self.apns_environment.map(ApnsEnvironment::as_str),
        })
    }
}

/// The wire names of the enums, in the phone's own records of a registration.
mod platform_name {
    use crate::protocol::device::Platform;
    pub fn serialize<S: serde::Serializer>(p: &Platform, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.as_str())
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Platform, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(d)?;
        Platform::parse(&name).ok_or_else(|| serde::de::Error::custom("unknown platform"))
    }
}

mod environment_name {
    use crate::protocol::device::ApnsEnvironment;
    pub fn serialize<S: serde::Serializer>(
        e: &Option<ApnsEnvironment>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match e {
            Some(e) => s.serialize_str(e.as_str()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<ApnsEnvironment>, D::Error> {
        let name = <Option<String> as serde::Deserialize>::deserialize(d)?;
        Ok(name.as_deref().and_then(ApnsEnvironment::parse))
    }
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

pub use crate::pairing::PairErrorKind;

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
    http: &dyn HttpTransport,
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
        "device": device.map(DeviceRegistration::to_json),
    });
    let request = HttpRequest {
        method: HttpMethod::Post,
        url: format!("{server}/api/pair"),
        headers: vec![HttpHeader {
            name: "Content-Type".into(),
            value: "application/json".into(),
        }],
        body: Some(body.to_string().into_bytes()),
        timeout_ms: REQUEST_TIMEOUT.as_millis() as u32,
    };
    let (status, bytes) = match exchange(http, request).await {
        Reply::Status(status, bytes) => (status, bytes),
        Reply::Unreachable(e) => {
            return Err(fail(
                PairErrorKind::Unreachable,
                format!("the server could not be reached: {e}"),
            ))
        }
    };
    let message = crate::sync::server_message(&bytes);
    let reply: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    match status {
        200 => {}
        _ => {
            let kind = PairErrorKind::of_status(status);
            let detail = match kind {
                PairErrorKind::Refused => format!("{status}: {message}"),
                _ => message,
            };
            return Err(fail(kind, detail));
        }
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
