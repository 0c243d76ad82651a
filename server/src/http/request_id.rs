//! Each request's id and who made it, on its log lines.
//!
//! The id comes from the client's (or the load balancer's) `X-Request-Id`
//! when it is one of ours to trust in a log (1 to [`MAX_ID_LEN`] letters,
//! digits, `-`, `_`, `.`, `:`), else it is made here; it is answered in
//! `X-Request-Id` either way, so a client's report and the server's log
//! meet. The request's span carries the id, the client's address (after
//! trusted proxies), the route and method, and, once its token is read, the
//! acting user, agent or admin ([`note_actor`]): every line logged while
//! serving it has them, the "finished processing request" line included.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, MatchedPath, Request};
use rand::Rng;

use crate::store::identity::Principal;

/// The header, both ways.
pub const HEADER: &str = "x-request-id";
/// The longest id taken from a client.
pub const MAX_ID_LEN: usize = 64;

/// This request's id (an extension of the request).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Whether a client's id may go into the log as it is: short, and no
/// character that could forge a line or a field.
fn acceptable(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// 16 random hex digits.
fn fresh() -> String {
    format!("{:016x}", rand::thread_rng().gen::<u64>())
}

/// The request's id: the client's when acceptable, else a fresh one (the
/// middleware `http::layers::RequestIds`, outside the trace layer, puts it
/// in the request and answers it).
pub fn take_or_make(req: &Request) -> String {
    req.headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| acceptable(v))
        .map_or_else(fresh, str::to_string)
}

/// The request's span (the trace layer's `make_span_with`). Never the
/// query, a header or a body: tokens live there.
pub fn make_span(req: &Request) -> tracing::Span {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str());
    // The method as the metrics label it: a custom one could be any token
    // up to the header limit.
    let method = super::observe::method_label(req.method());
    let id = req
        .extensions()
        .get::<RequestId>()
        .map_or("", |r| r.0.as_str());
    let client = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_canonical().to_string())
        .unwrap_or_default();
    tracing::info_span!(
        "request",
        request_id = %id,
        method = %method,
        route = %route,
        client = %client,
        actor = tracing::field::Empty,
    )
}

/// Records who is acting on the current request's span: `user:u_…`,
/// `agent:a_…` or `admin:<label>`.
pub fn note_actor(who: &Principal) {
    let actor = match who {
        Principal::User(u) => format!("user:{}", u.id),
        Principal::Agent(a) => format!("agent:{}", a.id),
        Principal::Admin { label } => format!("admin:{label}"),
    };
    tracing::Span::current().record("actor", actor.as_str());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_short_ids_are_taken() {
        assert!(acceptable("req-1.2_3:abc"));
        assert!(!acceptable(""));
        assert!(!acceptable(&"a".repeat(MAX_ID_LEN + 1)));
        assert!(!acceptable("a b"));
        assert!(!acceptable("a\"}"));
        assert!(!acceptable("a\nINFO forged"));
        assert_eq!(fresh().len(), 16);
    }
}
