//! Opening an end-to-end encrypted push on the phone. The envelope says in
//! clear which kind, question and device it is for; all three are bound into
//! the ciphertext (HPKE associated data), so opening fails if any was
//! changed, and the opened payload must be about the same question.

use std::collections::HashMap;

use serde_json::Value;

use super::decode::decode_apns;
use super::{PayloadError, Push, MAX_DECODE_BYTES, SEALED_KEY};
use crate::e2e::{self, DeviceSecret};

fn cannot(reason: &str) -> PayloadError {
    PayloadError::CannotOpen(reason.to_string())
}

/// Opens the `qp_e2e` envelope with this device's key; `my_device_id`, when
/// known, must be the envelope's device.
fn open_envelope(
    env: &Value,
    key: Option<&DeviceSecret>,
    my_device_id: Option<&str>,
) -> Result<Push, PayloadError> {
    let field = |k: &str| {
        env.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| PayloadError::MissingKey(format!("qp_e2e.{k}")))
    };
    if env.get("v").and_then(Value::as_i64) != Some(e2e::SEALED_VERSION) {
        return Err(PayloadError::UnsupportedVersion(
            env.get("v").and_then(Value::as_i64).unwrap_or(0),
        ));
    }
    let (kind, id, device) = (field("kind")?, field("id")?, field("device")?);
    let key = key.ok_or_else(|| cannot("this device has no key"))?;
    if my_device_id.is_some_and(|mine| mine != device) {
        return Err(cannot("it is for another device"));
    }
    let aad = e2e::aad(kind, id, device);
    let plain = key
        .open(field("enc")?, field("ct")?, &aad)
        .map_err(|e| cannot(&e.to_string()))?;
    let plain = String::from_utf8(plain).map_err(|_| cannot("not text"))?;
    let push = decode_apns(&plain)?;
    let (opened_kind, opened_id) = match &push {
        Push::Question(q) => ("question", q.id.as_str()),
        Push::Resolved(n) => ("resolved", n.id.as_str()),
    };
    // Bound by the AAD already; checked again so a sealed payload can never
    // speak for another question than the one it names.
    if opened_kind != kind || opened_id != id {
        return Err(cannot("it names another question"));
    }
    Ok(push)
}

/// An APNs payload: `Ok(None)` when it is not sealed (decode it as plain),
/// the opened push, or why it cannot be opened.
pub fn open_apns(
    json: &str,
    key: Option<&DeviceSecret>,
    my_device_id: Option<&str>,
) -> Result<Option<Push>, PayloadError> {
    if json.len() > MAX_DECODE_BYTES {
        return Err(PayloadError::TooLarge(json.len()));
    }
    let v: Value = serde_json::from_str(json).map_err(|_| PayloadError::NotJson)?;
    match v.get(SEALED_KEY) {
        None => Ok(None),
        Some(env) => open_envelope(env, key, my_device_id).map(Some),
    }
}

/// An FCM data message: as [`open_apns`] (`type: e2e`, the envelope as JSON
/// text in `qp_e2e`).
pub fn open_fcm(
    data: &HashMap<String, String>,
    key: Option<&DeviceSecret>,
    my_device_id: Option<&str>,
) -> Result<Option<Push>, PayloadError> {
    if data.get("type").map(String::as_str) != Some("e2e") {
        return Ok(None);
    }
    let size = super::fcm_data_len(data);
    if size > MAX_DECODE_BYTES {
        return Err(PayloadError::TooLarge(size));
    }
    let raw = data
        .get(SEALED_KEY)
        .ok_or_else(|| PayloadError::MissingKey(SEALED_KEY.into()))?;
    let env: Value = serde_json::from_str(raw).map_err(|_| PayloadError::NotJson)?;
    open_envelope(&env, key, my_device_id).map(Some)
}
