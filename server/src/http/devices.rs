//! A person's devices (user token): registering for pushes, removing,
//! who am I, and the terminal device's inbox.

use super::*;

/// The fields of a push registration (`platform`, `push_token`, `app_id`),
/// checked; `prefix` names where they sit (`device.` inside a pairing).
pub(crate) fn device_fields(body: &Value, prefix: &str) -> Result<DeviceFields, ApiError> {
    let field = |name: &str, max: usize| -> Result<String, ApiError> {
        let path = format!("{prefix}{name}");
        match body.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= max => {
                Ok(s.trim().to_string())
            }
            Some(Value::String(_)) => Err(ApiError::invalid(
                &path,
                "invalid_value",
                format!("{path}: must be 1 to {max} characters"),
            )),
            None | Some(Value::Null) => Err(ApiError::invalid(
                &path,
                "required",
                format!("{path}: is required"),
            )),
            Some(_) => Err(ApiError::invalid(
                &path,
                "invalid_type",
                format!("{path}: must be a string"),
            )),
        }
    };
    let platform = field("platform", 16)?;
    if !["ios", "android", "dev", "web"].contains(&platform.as_str()) {
        return Err(ApiError::invalid(
            &format!("{prefix}platform"),
            "invalid_value",
            format!("{prefix}platform: must be ios, android, dev or web; got {platform:?}"),
        ));
    }
    let push_token = field("push_token", 4096)?;
    // A browser's subscription: which of its parts is wrong, by name.
    if platform == "web" {
        qp_core::protocol::web_push::parse_subscription(&push_token).map_err(|e| {
            let path = format!("{prefix}push_token");
            ApiError::invalid(&path, "invalid_value", format!("{path}: {e}"))
        })?;
    }
    // Per platform: an APNs token goes into the path of the request to Apple.
    qp_core::protocol::device::check_push_token(&platform, &push_token).map_err(|e| {
        let path = format!("{prefix}push_token");
        ApiError::invalid(&path, "invalid_value", format!("{path}: {e}"))
    })?;
    let app_id = field("app_id", 255)?;
    // Optional: the person's language, a BCP 47 tag (`de`, `pt-BR`).
    let locale = match body.get("locale") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) if qp_core::present::copy::is_language_tag(s) => s.clone(),
        Some(_) => {
            return Err(ApiError::invalid(
                &format!("{prefix}locale"),
                "invalid_value",
                format!("{prefix}locale: must be a language tag such as \"de\" or \"pt-BR\""),
            ))
        }
    };
    // Optional: the device's public key for end-to-end encrypted pushes,
    // checked to be an X25519 key now rather than failing at every push.
    let public_key = match body.get("public_key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let path = format!("{prefix}public_key");
            let key = qp_core::e2e::DevicePublicKey::parse(s, &path)
                .map_err(|e| ApiError::invalid(&path, "invalid_value", e.to_string()))?;
            Some(key.to_base64())
        }
        Some(_) => {
            return Err(ApiError::invalid(
                &format!("{prefix}public_key"),
                "invalid_type",
                format!("{prefix}public_key: must be a string (base64 of a 32-byte X25519 key)"),
            ))
        }
    };
    // Optional, iOS only: which APNs the token is from (a debug build's
    // are sandbox tokens, which production refuses, and the reverse).
    let apns_environment = match body.get("apns_environment") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if platform == Platform::Ios.as_str() => {
            let path = format!("{prefix}apns_environment");
            let env = ApnsEnvironment::parse(s).ok_or_else(|| {
                ApiError::invalid(
                    &path,
                    "invalid_value",
                    format!("{path}: {APNS_ENVIRONMENT_RULE}; got {s:?}"),
                )
            })?;
            Some(env.as_str().to_string())
        }
        Some(Value::String(_)) => {
            let path = format!("{prefix}apns_environment");
            return Err(ApiError::invalid(
                &path,
                "not_allowed",
                format!("{path}: only for platform ios"),
            ));
        }
        Some(_) => {
            let path = format!("{prefix}apns_environment");
            return Err(ApiError::invalid(
                &path,
                "invalid_type",
                format!("{path}: must be a string ({APNS_ENVIRONMENT_RULE})"),
            ));
        }
    };
    Ok(DeviceFields {
        platform,
        push_token,
        app_id,
        locale,
        public_key,
        apns_environment,
    })
}

#[utoipa::path(post, path = "/api/devices", tag = "responder",
    request_body = openapi::DeviceRegistration,
    responses((status = 201, description = "Registered (or updated, for a known push token)", body = openapi::Device), (status = 400, description = "The body is not JSON", body = openapi::ErrorBody), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 409, description = "The push token is registered to another user's device", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn register_device(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<openapi::Device>), ApiError> {
    let body = parse_json(&body)?;
    let fields = device_fields(&body, "")?;
    webapp::check_web_device(&app, &fields, "")?;
    // The device is tied to the token registering it.
    let device = app
        .register_device(&user, bearer_hash(&headers), fields)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(openapi::Device {
            id: device.id,
            platform: device.platform,
            app_id: device.app_id,
        }),
    ))
}

/// The stored hash of the bearer token a request was authenticated with
/// (`UserAuth` has checked it already).
pub(crate) fn bearer_hash(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (_, token) = value.split_once(' ')?;
    Some(crate::ids::token_hash(token.trim()))
}

#[utoipa::path(delete, path = "/api/devices/{id}", tag = "responder",
    params(("id" = String, Path, description = "The device id")),
    responses((status = 204, description = "Removed"), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 404, description = "No such device of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn delete_device(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    app.remove_device(&user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Additive: who this user token belongs to (a device signs in with it).
#[utoipa::path(get, path = "/api/me", tag = "responder",
    responses((status = 200, description = "Who this user token belongs to", body = openapi::UserRef), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn me(UserAuth(user): UserAuth) -> Json<openapi::UserRef> {
    Json(openapi::UserRef {
        id: user.id,
        display_name: user.display_name,
    })
}

/// Additive, for the terminal device: the payloads the dev transport
/// delivered to one of my `dev` devices after `after`, long-polled up to
/// `timeout` seconds (its parameter says the bounds).
#[utoipa::path(get, path = "/api/dev/inbox", tag = "responder",
    params(("device" = String, Query, description = "One of this user's `dev` devices"),
           ("after" = Option<i64>, Query, description = "Only pushes after this sequence number"),
           ("timeout" = Option<u64>, Query, description = openapi::param::long_poll_timeout())),
    responses((status = 200, description = "Pushes delivered to the terminal device", body = openapi::DevInbox), (status = 401, description = "Missing, unknown or revoked token", body = openapi::ErrorBody), (status = 403, description = "The token is of the wrong kind, lacks the scope, or the room is not the agent's", body = openapi::ErrorBody), (status = 422, description = "A field breaks a rule: `field` names it, `message` says the rule", body = openapi::ErrorBody), (status = 404, description = "No such dev device of yours", body = openapi::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn dev_inbox(
    State(app): State<Arc<App>>,
    UserAuth(user): UserAuth,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<DevInbox>, ApiError> {
    let device = query
        .get("device")
        .cloned()
        .ok_or_else(|| ApiError::invalid("device", "required", "device: is required"))?;
    let after: i64 = query.get("after").and_then(|a| a.parse().ok()).unwrap_or(0);
    let timeout = query
        .get("timeout")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(limits::LONG_POLL_DEFAULT_SECS)
        .min(limits::LONG_POLL_MAX_SECS);
    let pushes = app
        .dev_inbox(&user, device, after, Duration::from_secs(timeout))
        .await?;
    Ok(Json(DevInbox { pushes }))
}
