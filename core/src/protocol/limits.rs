//! Every numeric limit of the protocol, and the defaults a client needs, in
//! one table. Lengths are in characters (Unicode scalar values), sizes in
//! bytes. The server, the Rust client, the OpenAPI document and the MCP tools
//! read these; `core/tests/vectors/limits/limits.json` writes them out for
//! the clients in other languages (the Python SDK's tests hold its copies to
//! it).

/// `prompt`: 1 to 500 characters after trimming.
pub const PROMPT_MAX_CHARS: usize = 500;
/// `context`: at most 40 characters (a short secondary line such as a build number).
pub const CONTEXT_MAX_CHARS: usize = 40;
/// `options`: 2 to 4 entries (or none, for a text-only question).
pub const OPTIONS_MIN: usize = 2;
pub const OPTIONS_MAX: usize = 4;
/// An option's `value`: 1 to 40 characters, unique within the question.
pub const OPTION_VALUE_MAX_CHARS: usize = 40;
/// An option's `label`: 1 to 40 characters, so it fits a notification action.
pub const OPTION_LABEL_MAX_CHARS: usize = 40;
/// `text_input.max_length`: 1 to 60; larger values are capped at 60.
pub const TEXT_MAX_LENGTH_CAP: u32 = 60;
/// `text_input.placeholder`: at most 60 characters.
pub const PLACEHOLDER_MAX_CHARS: usize = 60;
/// `correlation_id` and `reply_to`: at most 255 characters.
pub const CORRELATION_ID_MAX_CHARS: usize = 255;
pub const REPLY_TO_MAX_CHARS: usize = 255;
/// `target_user_id`: at most 64 characters.
pub const USER_ID_MAX_CHARS: usize = 64;
/// `data`: a JSON object of at most 8 KiB, measured as compact JSON. It is stored
/// and echoed back, never sent in a push.
pub const DATA_MAX_BYTES: usize = 8 * 1024;
/// `data` nests at most 32 levels (objects and arrays), so every reader of a
/// question, which wraps it in a few levels more, stays far below JSON
/// parsers' recursion limits (serde_json stops at 128).
pub const DATA_MAX_DEPTH: usize = 32;
/// `ttl` in seconds: default one hour, clamped into [30 seconds, 7 days]
/// (30 s is the reference clients' documented minimum).
pub const TTL_DEFAULT_SECS: i64 = 3_600;
pub const TTL_MIN_SECS: i64 = 30;
pub const TTL_MAX_SECS: i64 = 7 * 24 * 3_600;
/// Ids (question, user, agent, room, device): 1 to 64 ASCII characters.
pub const ID_MAX_CHARS: usize = 64;
/// Display names of users, agents and rooms: 1 to 80 characters.
pub const NAME_MAX_CHARS: usize = 80;
/// Text a client chose that a person reads (`client_name`, a sign-in's
/// label): at most this many characters (`client_text`).
pub const CLIENT_TEXT_MAX_CHARS: usize = 60;
/// Room codes: 3 to 16 ASCII letters or digits.
pub const ROOM_CODE_MIN_CHARS: usize = 3;
pub const ROOM_CODE_MAX_CHARS: usize = 16;
/// The wait endpoints' long-poll (`?timeout=` seconds): held this long
/// when not given, and at most this long (a longer one is capped or
/// refused, as each endpoint documents), so a connection is never idle past
/// a proxy's usual 60 s timeout.
pub const LONG_POLL_DEFAULT_SECS: u64 = 20;
pub const LONG_POLL_MAX_SECS: u64 = 30;
/// What one wait request of a reference client (the Rust client, the Python
/// SDK) asks the server to hold: under [`LONG_POLL_MAX_SECS`], so a server
/// that caps it answers in time and the client's own request timeout stays
/// short.
pub const CLIENT_WAIT_POLL_SECS: u64 = 25;
/// An agent's question list (`?limit=`): this many when not given, 1 to
/// the maximum.
pub const LIST_DEFAULT_LIMIT: usize = 100;
pub const LIST_MAX_LIMIT: usize = 500;
/// An agent's question list without `state`: the questions created in this
/// window (seconds).
pub const LIST_RECENT_WINDOW_SECS: i64 = 24 * 3_600;
/// Where `qp serve` listens unless told otherwise (loopback only), and so
/// where a client looks when it is given no URL.
pub const DEFAULT_PORT: u16 = 8750;
pub const DEFAULT_URL: &str = "http://127.0.0.1:8750";

// Defaults within their bounds, or the crate does not build.
const _: () = assert!(LONG_POLL_DEFAULT_SECS <= LONG_POLL_MAX_SECS);
const _: () = assert!(CLIENT_WAIT_POLL_SECS <= LONG_POLL_MAX_SECS);
const _: () = assert!(LIST_DEFAULT_LIMIT <= LIST_MAX_LIMIT);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_url_is_loopback_at_the_default_port() {
        assert_eq!(DEFAULT_URL, format!("http://127.0.0.1:{DEFAULT_PORT}"));
    }
}
