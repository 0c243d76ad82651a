//! The token endpoint (`authorization_code` with PKCE S256,
//! `refresh_token` with rotation, and the device code of
//! [`super::device`]), revocation (RFC 7009), and the check of an access
//! token on `/mcp`: unexpired, its grant not revoked, and minted for this
//! server's `/mcp` (RFC 8707), on every request.
//!
//! A code used twice, or a refresh token used twice, ends the whole grant
//! (every token minted under it): one of the two parties is not the client.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{
    ErrorKind, OAuthError, ACCESS_PREFIX, ACCESS_TTL_SECS, REFRESH_PREFIX, REFRESH_TTL_SECS,
};
use crate::app::App;
use crate::store::identity::Agent;
use crate::store::now_secs;
use crate::store::oauth::{self as store, Minted, Taken};

pub const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The token endpoint (`POST /oauth/token`): a form post's grant, for
/// tokens.
pub async fn grant(app: &Arc<App>, body: &[u8]) -> Result<Value, OAuthError> {
    let p = super::form(body)?;
    match p.get("grant_type").map(String::as_str) {
        Some("authorization_code") => by_code(app, &p).await,
        Some("refresh_token") => by_refresh(app, &p).await,
        Some(DEVICE_GRANT) => super::device::poll(app, &p).await,
        Some(other) => Err(OAuthError::new(
            ErrorKind::UnsupportedGrantType,
            format!("grant_type: {other:?} is not supported (authorization_code, refresh_token, {DEVICE_GRANT})"),
        )),
        None => Err(OAuthError::invalid_request("grant_type: is required")),
    }
}

fn required<'a>(
    p: &'a std::collections::HashMap<String, String>,
    k: &str,
) -> Result<&'a str, OAuthError> {
    p.get(k)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::invalid_request(format!("{k}: is required")))
}

/// RFC 7636's S256: BASE64URL(SHA256(verifier)) == challenge; the verifier
/// 43 to 128 unreserved characters.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    well_formed && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

async fn by_code(
    app: &Arc<App>,
    p: &std::collections::HashMap<String, String>,
) -> Result<Value, OAuthError> {
    let code = required(p, "code")?.to_string();
    let client_id = required(p, "client_id")?.to_string();
    // Optional, as OAuth 2.1 has it (PKCE binds the code to the client
    // that asked for it); when given it must be the authorization request's.
    let redirect_uri = p.get("redirect_uri").cloned().filter(|r| !r.is_empty());
    let verifier = required(p, "code_verifier")?.to_string();
    let resource = p.get("resource").cloned().filter(|r| !r.is_empty());
    if let Some(r) = &resource {
        if !super::is_our_resource(app, r) {
            return Err(invalid_target(app));
        }
    }
    app.db
        .run(move |conn| -> Result<Value, OAuthError> {
            let now = now_secs();
            let tx = conn.transaction()?;
            let found = store::take_code(&*tx, &code, now)?;
            let c = match found {
                Taken::Unknown => {
                    return Err(OAuthError::invalid_grant("code: unknown or expired"));
                }
                Taken::Replayed { grant_hash } => {
                    let n = store::end_grant(&*tx, &grant_hash, "server", "its code was used twice")?;
                    tx.commit()?;
                    tracing::warn!(client_id = client_id.as_str(), revoked = n, "oauth code used twice; its grant is revoked");
                    return Err(OAuthError::invalid_grant(
                        "code: already used; every token issued with it is revoked",
                    ));
                }
                Taken::Fresh(c) => c,
            };
            // The code is spent whatever follows (a wrong verifier gets no
            // second try), and so is the approval it carried: its grant
            // ends, its agent is disabled (nobody can ever collect it).
            let refused = if c.client_id != client_id {
                Some("client_id: the code was issued to another client")
            } else if redirect_uri.as_ref().is_some_and(|r| *r != c.redirect_uri) {
                Some("redirect_uri: does not match the authorization request's")
            } else if !pkce_matches(&verifier, &c.code_challenge) {
                Some("code_verifier: does not match the code_challenge (PKCE S256)")
            } else {
                None
            };
            if let Some(why) = refused {
                store::end_grant(&*tx, &c.grant_hash, "server", why)?;
                tx.commit()?;
                tracing::warn!(client_id = client_id.as_str(), agent = %c.agent_id, "oauth code exchange refused; its grant is ended");
                return Err(OAuthError::invalid_grant(why));
            }
            crate::store::audit::record(
                &*tx,
                &format!("oauth-client:{}", c.client_id),
                "token.create",
                &c.agent_id,
                "OAuth grant: its code exchanged for an access and a refresh token",
            )?;
            tx.commit()?;
            let minted = Minted {
                grant_hash: c.grant_hash,
                client_id: c.client_id,
                resource: c.resource,
                agent_id: c.agent_id,
            };
            tracing::info!(client_id = minted.client_id.as_str(), agent = %minted.agent_id, "oauth tokens issued");
            issue(conn, &minted)
        })
        .await
}

fn invalid_target(app: &App) -> OAuthError {
    OAuthError::new(
        ErrorKind::InvalidTarget,
        format!(
            "resource: this server issues tokens only for {}",
            super::resource(app)
        ),
    )
}

/// A new access token and refresh token under `m`'s grant.
fn issue(conn: &crate::store::Conn, m: &Minted) -> Result<Value, OAuthError> {
    let access = store::insert_token(conn, "access", ACCESS_PREFIX, m, ACCESS_TTL_SECS)?;
    let refresh = store::insert_token(conn, "refresh", REFRESH_PREFIX, m, REFRESH_TTL_SECS)?;
    Ok(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ACCESS_TTL_SECS,
        "refresh_token": refresh,
        // Always both (RFC 6749 §5.1: said, as it may differ from what was
        // asked).
        "scope": super::metadata::SCOPES.join(" "),
    }))
}

async fn by_refresh(
    app: &Arc<App>,
    p: &std::collections::HashMap<String, String>,
) -> Result<Value, OAuthError> {
    let token = required(p, "refresh_token")?.to_string();
    let client_id = required(p, "client_id")?.to_string();
    if let Some(r) = p.get("resource").filter(|r| !r.is_empty()) {
        if !super::is_our_resource(app, r) {
            return Err(invalid_target(app));
        }
    }
    app.db
        .run(move |conn| -> Result<Value, OAuthError> {
            let now = now_secs();
            let hash = crate::ids::token_hash(&token);
            let tx = conn.transaction()?;
            let row = store::token(&*tx, &hash)?
                .filter(|r| r.kind == "refresh")
                .ok_or_else(|| OAuthError::invalid_grant("refresh_token: unknown or revoked"))?;
            if row.minted.client_id != client_id {
                return Err(OAuthError::invalid_grant(
                    "client_id: the refresh token was issued to another client",
                ));
            }
            if !row.grant_live {
                return Err(OAuthError::invalid_grant("refresh_token: its grant was revoked"));
            }
            if row.used_at.is_some() || !store::use_refresh(&*tx, &hash, now)? {
                let n = store::end_grant(&*tx, &row.minted.grant_hash, "server", "a refresh token was used twice")?;
                tx.commit()?;
                tracing::warn!(client_id = client_id.as_str(), agent = %row.minted.agent_id, revoked = n, "oauth refresh token reused; its grant is revoked");
                return Err(OAuthError::invalid_grant(
                    "refresh_token: already used; every token of this grant is revoked",
                ));
            }
            if row.expires_at <= now {
                return Err(OAuthError::invalid_grant("refresh_token: expired"));
            }
            let out = issue(&*tx, &row.minted)?;
            tx.commit()?;
            Ok(out)
        })
        .await
}

/// Revocation (RFC 7009, `POST /oauth/revoke`): done whether or not the
/// token was known. A refresh token ends its grant; an access token only
/// itself.
pub async fn revoke(app: &Arc<App>, body: &[u8]) -> Result<(), OAuthError> {
    let p = super::form(body)?;
    let token = required(&p, "token")?.to_string();
    let client_id = p.get("client_id").cloned().unwrap_or_default();
    let done = app
        .db
        .run(move |conn| -> Result<_, OAuthError> {
            let hash = crate::ids::token_hash(&token);
            let Some(row) = store::token(conn, &hash)? else {
                return Ok(None);
            };
            if !client_id.is_empty() && row.minted.client_id != client_id {
                return Ok(None);
            }
            let actor = format!("oauth-client:{}", row.minted.client_id);
            // The revocation and its audit row commit together.
            let tx = conn.transaction()?;
            if row.kind == "refresh" {
                store::end_grant(
                    &*tx,
                    &row.minted.grant_hash,
                    &actor,
                    "revoked by its client (RFC 7009)",
                )?;
            } else if store::delete_token(&*tx, &hash)? {
                crate::store::audit::record(
                    &*tx,
                    &actor,
                    "token.revoke",
                    &row.minted.agent_id,
                    "an OAuth access token, revoked by its client (RFC 7009)",
                )?;
            }
            tx.commit()?;
            Ok(Some((row.kind, row.minted.client_id)))
        })
        .await?;
    if let Some((kind, client)) = done {
        tracing::info!(client_id = client.as_str(), kind, "oauth token revoked");
    }
    Ok(())
}

/// Why an access token is refused on `/mcp`.
pub enum Refused {
    Unknown,
    Expired,
    OtherResource(String),
}

/// The agent an access token acts as, if it is live and for `/mcp`.
pub async fn access_agent(
    app: &Arc<App>,
    token: &str,
) -> Result<Result<Agent, Refused>, crate::store::DbError> {
    let hash = crate::ids::token_hash(token);
    let ours = super::resource(app);
    app.db
        .run(move |conn| -> Result<_, crate::store::DbError> {
            let Some(row) = store::token(conn, &hash)? else {
                return Ok(Err(Refused::Unknown));
            };
            if row.kind != "access" || !row.grant_live {
                return Ok(Err(Refused::Unknown));
            }
            if row.expires_at <= now_secs() {
                return Ok(Err(Refused::Expired));
            }
            if row.minted.resource != ours {
                return Ok(Err(Refused::OtherResource(row.minted.resource)));
            }
            Ok(crate::store::identity::agent(conn, &row.minted.agent_id)?.ok_or(Refused::Unknown))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX",
            challenge
        ));
        assert!(!pkce_matches("short", challenge));
    }
}
