//! The resource limits: what one agent, user, token or address may take
//! (rates, pending questions, connections, long-polls, MCP sessions) and
//! how long a connection or a request may take. Each must let something
//! through.

use std::time::Duration;

use super::{ConfigError, Settings};

/// `ask_rate_per_minute`'s default: questions an agent may ask per minute.
pub const DEFAULT_ASK_RATE_PER_MINUTE: u32 = 60;
/// `ask_burst`'s default: questions an agent may ask in a burst.
pub const DEFAULT_ASK_BURST: u32 = 20;
/// `max_pending_per_agent`'s default.
pub const DEFAULT_MAX_PENDING_PER_AGENT: u32 = 1000;
/// `answer_rate_per_minute`'s default: answers one user may send per minute.
pub const DEFAULT_ANSWER_RATE_PER_MINUTE: u32 = 120;
/// `answer_burst`'s default.
pub const DEFAULT_ANSWER_BURST: u32 = 60;
/// `max_long_polls_per_token`'s default.
pub const DEFAULT_MAX_LONG_POLLS_PER_TOKEN: u32 = 256;
/// `idempotency_key_ttl_secs`'s default: a day.
pub const DEFAULT_IDEMPOTENCY_KEY_TTL: Duration = Duration::from_secs(24 * 3600);
/// The shortest `idempotency_key_ttl_secs` (clients retry within it).
pub const MIN_IDEMPOTENCY_KEY_TTL: Duration = Duration::from_secs(60);
/// `mcp_max_sessions_per_agent`'s default.
pub const DEFAULT_MCP_MAX_SESSIONS_PER_AGENT: u32 = 32;
/// `mcp_session_idle_secs`'s default.
pub const DEFAULT_MCP_SESSION_IDLE: Duration = Duration::from_secs(300);
/// `body_timeout_ms`'s default: how long a client may take to send a body.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// `max_connections`'s default (capped by the open-file limit).
pub const DEFAULT_MAX_CONNECTIONS: usize = 32_768;

/// The default `max_connections_per_address`: room for a busy agent host's
/// long-polls, or an office behind one address.
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 512;

/// The default `idle_timeout_secs`: above common load balancers' idle
/// timeouts (AWS ALB and nginx 60 s), below the odd ones that keep upstream
/// connections for minutes (set it above theirs there).
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 75;

/// The ask rate: each must let something through.
pub(super) fn check_ask_rate(s: &Settings) -> Result<(), ConfigError> {
    if s.ask_rate_per_minute == 0 || s.ask_burst == 0 {
        return Err(ConfigError::at_least_1(&[
            "ask_rate_per_minute",
            "ask_burst",
        ]));
    }
    Ok(())
}

/// The resource limits: each must let something through.
pub(super) fn check_limits(s: &Settings) -> Result<(), ConfigError> {
    let range = |keys: &'static [&'static str], rule: &str| ConfigError::OutOfRange {
        keys,
        rule: rule.into(),
    };
    if s.answer_rate_per_minute == 0 || s.answer_burst == 0 {
        return Err(ConfigError::at_least_1(&[
            "answer_rate_per_minute",
            "answer_burst",
        ]));
    }
    if s.max_connections_per_address == 0 {
        return Err(ConfigError::at_least_1(&["max_connections_per_address"]));
    }
    if s.max_long_polls_per_token == 0 {
        return Err(ConfigError::at_least_1(&["max_long_polls_per_token"]));
    }
    if s.idempotency_key_ttl < MIN_IDEMPOTENCY_KEY_TTL {
        return Err(range(
            &["idempotency_key_ttl_secs"],
            &format!(
                "at least {} (clients retry within it)",
                MIN_IDEMPOTENCY_KEY_TTL.as_secs()
            ),
        ));
    }
    if s.mcp_max_sessions_per_agent == 0 {
        return Err(ConfigError::at_least_1(&["mcp_max_sessions_per_agent"]));
    }
    if !(10..=86_400).contains(&s.mcp_session_idle.as_secs()) {
        return Err(range(&["mcp_session_idle_secs"], "10 to 86400 (a day)"));
    }
    if !(5..=3600).contains(&s.idle_timeout.as_secs()) {
        return Err(range(&["idle_timeout_secs"], "5 to 3600"));
    }
    Ok(())
}
