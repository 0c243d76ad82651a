//! Discovery: RFC 9728 protected-resource metadata (where `/mcp`'s 401
//! points) and RFC 8414 authorization-server metadata.

use serde_json::{json, Value};

use super::{issuer, resource};
use crate::app::App;

/// The `WWW-Authenticate` value of `/mcp`'s 401: where the metadata is,
/// and why when a token was given (`error="invalid_token"`).
pub fn www_authenticate(app: &App, error: Option<&str>) -> String {
    let meta = format!("{}/.well-known/oauth-protected-resource/mcp", issuer(app));
    let scope = SCOPES.join(" ");
    match error {
        Some(d) => format!(
            "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{meta}\", scope=\"{scope}\"",
            d.replace(['"', '\\'], "'")
        ),
        None => format!("Bearer resource_metadata=\"{meta}\", scope=\"{scope}\""),
    }
}

/// The metadata of `/mcp` (RFC 9728), where its 401 points.
pub fn protected_resource(app: &App) -> Value {
    resource_metadata(app, resource(app))
}

/// The metadata of this server as a whole, for a client that did not read
/// the 401's header and looks at the root. RFC 9728 §3.3 has a document's
/// `resource` be the identifier its well-known address was made from, here
/// the origin; a token requested for the origin is issued for `/mcp`, the
/// one resource here ([`super::is_our_resource`]).
pub fn server_resource(app: &App) -> Value {
    resource_metadata(app, issuer(app))
}

fn resource_metadata(app: &App, resource: String) -> Value {
    json!({
        "resource": resource,
        "authorization_servers": [issuer(app)],
        "bearer_methods_supported": ["header"],
        "scopes_supported": SCOPES,
        "resource_name": "qp (Question Protocol)",
    })
}

/// The scopes an agent made by a sign-in holds: asking, and reading its
/// own questions. Both, always (see [`super::authorize::check`]).
pub const SCOPES: [&str; 2] = [
    crate::store::identity::SCOPE_ASK,
    crate::store::identity::SCOPE_READ,
];

/// The authorization server's metadata (RFC 8414).
pub fn authorization_server(app: &App) -> Value {
    let base = issuer(app);
    json!({
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
        "scopes_supported": SCOPES,
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
    })
}
