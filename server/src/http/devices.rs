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
    let user_id = user.id.clone();
    // The device is tied to the token registering it: revoking that token
    // removes the device (and its pushes).
    let token_hash = bearer_hash(&headers);
    let device = app
        .db
        .run(move |conn| -> Result<_, ApiError> {
            Ok(identity::register_device(
                conn,
                &user_id,
                token_hash.as_deref(),
                &fields.registration(),
            )?)
        })
        .await?;
    tracing::info!(
        user = %user.id,
        device = %device.id,
        platform = %device.platform,
        "device registered"
    );
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
    let user_id = user.id.clone();
    let device = id.clone();
    let deleted = app
        .db
        .run(move |conn| -> Result<_, ApiError> {
            Ok(identity::delete_device(conn, &user_id, &id)?)
        })
        .await?;
    if deleted {
        tracing::info!(user = %user.id, device, "device removed");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("no such device of yours"))
    }
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
/// `timeout` seconds (0 to 30, default 20).
#[utoipa::path(get, path = "/api/dev/inbox", tag = "responder",
    params(("device" = String, Query, description = "One of this user's `dev` devices"),
           ("after" = Option<i64>, Query, description = "Only pushes after this sequence number"),
           ("timeout" = Option<u64>, Query, description = "Seconds to hold the request, 0 to 30 (default 20)")),
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
        .unwrap_or(app::LONG_POLL_DEFAULT_SECS)
        .min(app::LONG_POLL_MAX_SECS);
    let (user_id, dev) = (user.id.clone(), device.clone());
    let owned = app
        .db
        .run(move |conn| -> Result<_, ApiError> {
            Ok(identity::device_by_id(conn, &dev)?
                .is_some_and(|d| d.user_id == user_id && d.platform == "dev"))
        })
        .await?;
    if !owned {
        return Err(ApiError::not_found("no such dev device of yours"));
    }
    // Counted against the user's long-polls (max_long_polls_per_token).
    let _slot = match timeout {
        0 => None,
        _ => Some(app.enter_long_poll(format!("user:{}", user.id))?),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        // Listen before reading, so a push in between is not missed.
        let woke = app.dev_wake.notified();
        let dev = device.clone();
        let pushes = app
            .db
            .run(move |conn| dev_inbox::after(conn, &dev, after))
            .await?;
        if !pushes.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(Json(DevInbox { pushes }));
        }
        let mut stopping = app.stopping.subscribe();
        let _parked = crate::metrics::Counted::new(&app.metrics.parked);
        tokio::select! {
            _ = tokio::time::timeout_at(deadline, woke) => {}
            _ = async { let _ = stopping.wait_for(|s| *s).await; } => return Ok(Json(DevInbox { pushes: Vec::new() })),
        }
    }
}
