//! Discovery: RFC 9728 protected-resource metadata (where `/mcp`'s 401
//! points) and RFC 8414 authorization-server metadata.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::{issuer, resource};
use crate::app::App;

/// The `WWW-Authenticate` value of `/mcp`'s 401: where the metadata is,
/// and why when a token was given (`error="invalid_token"`).
pub fn www_authenticate(app: &App, error: Option<&str>) -> String {
    let meta = format!("{}/.well-known/oauth-protected-resource/mcp", issuer(app));
    match error {
        Some(d) => format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{meta}\"",
            d.replace(['"', '\\'], "'")
        ),
        None => format!("Bearer resource_metadata=\"{meta}\""),
    }
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub async fn protected_resource(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({
        "resource": resource(&app),
        "authorization_servers": [issuer(&app)],
        "bearer_methods_supported": ["header"],
        "resource_name": "qp (Question Protocol)",
    }))
}

/// `GET /.well-known/oauth-authorization-server`.
pub async fn authorization_server(State(app): State<Arc<App>>) -> Json<Value> {
    let base = issuer(&app);
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/oauth/authorize"),
        "token_endpoint": format!("{base}/oauth/token"),
        "registration_endpoint": format!("{base}/oauth/register"),
        "revocation_endpoint": format!("{base}/oauth/revoke"),
        "device_authorization_endpoint": format!("{base}/oauth/device_authorization"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", super::token::DEVICE_GRANT],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
    }))
}
