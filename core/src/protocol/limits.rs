//! Every numeric limit of the protocol, in one table. Lengths are in characters
//! (Unicode scalar values), sizes in bytes.

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
