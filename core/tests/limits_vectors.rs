//! The protocol's limits and client defaults (`qp_core::protocol::limits`)
//! written out as `tests/vectors/limits/limits.json`, for the clients in
//! other languages: the Python SDK's tests hold its own copies (its prompt
//! and context lengths, its long-poll clamp, its default URL) to the file.
//! This test fails when the file and the constants differ; after changing
//! a constant, rewrite it with `QP_WRITE_VECTORS=1 cargo test -p qp-core
//! --test limits_vectors` (that run fails too, so it is never the run that
//! says they match).

use qp_core::protocol::limits as l;
use serde_json::{json, Value};

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/limits/limits.json"
);

/// Every constant of `limits`, by its name in lower case.
fn expected() -> Value {
    let limits: Vec<(&str, Value)> = vec![
        ("prompt_max_chars", json!(l::PROMPT_MAX_CHARS)),
        ("context_max_chars", json!(l::CONTEXT_MAX_CHARS)),
        ("options_min", json!(l::OPTIONS_MIN)),
        ("options_max", json!(l::OPTIONS_MAX)),
        ("option_value_max_chars", json!(l::OPTION_VALUE_MAX_CHARS)),
        ("option_label_max_chars", json!(l::OPTION_LABEL_MAX_CHARS)),
        ("text_max_length_cap", json!(l::TEXT_MAX_LENGTH_CAP)),
        ("placeholder_max_chars", json!(l::PLACEHOLDER_MAX_CHARS)),
        (
            "correlation_id_max_chars",
            json!(l::CORRELATION_ID_MAX_CHARS),
        ),
        ("reply_to_max_chars", json!(l::REPLY_TO_MAX_CHARS)),
        ("user_id_max_chars", json!(l::USER_ID_MAX_CHARS)),
        ("data_max_bytes", json!(l::DATA_MAX_BYTES)),
        ("data_max_depth", json!(l::DATA_MAX_DEPTH)),
        ("ttl_default_secs", json!(l::TTL_DEFAULT_SECS)),
        ("ttl_min_secs", json!(l::TTL_MIN_SECS)),
        ("ttl_max_secs", json!(l::TTL_MAX_SECS)),
        ("id_max_chars", json!(l::ID_MAX_CHARS)),
        ("name_max_chars", json!(l::NAME_MAX_CHARS)),
        ("client_text_max_chars", json!(l::CLIENT_TEXT_MAX_CHARS)),
        ("room_code_min_chars", json!(l::ROOM_CODE_MIN_CHARS)),
        ("room_code_max_chars", json!(l::ROOM_CODE_MAX_CHARS)),
        ("long_poll_default_secs", json!(l::LONG_POLL_DEFAULT_SECS)),
        ("long_poll_max_secs", json!(l::LONG_POLL_MAX_SECS)),
        ("client_wait_poll_secs", json!(l::CLIENT_WAIT_POLL_SECS)),
        ("list_default_limit", json!(l::LIST_DEFAULT_LIMIT)),
        ("list_max_limit", json!(l::LIST_MAX_LIMIT)),
        ("list_recent_window_secs", json!(l::LIST_RECENT_WINDOW_SECS)),
        ("default_port", json!(l::DEFAULT_PORT)),
        ("default_url", json!(l::DEFAULT_URL)),
    ];
    json!({
        "description": "The protocol's limits and the defaults a client needs, written from qp_core::protocol::limits by core/tests/limits_vectors.rs (QP_WRITE_VECTORS=1); each vector's `value` is the constant named by `name` in upper case.",
        "vectors": limits
            .into_iter()
            .map(|(name, value)| json!({"name": name, "kind": "limit", "value": value}))
            .collect::<Vec<_>>(),
    })
}

#[test]
fn the_limits_file_is_the_constants() {
    let want = serde_json::to_string_pretty(&expected()).unwrap() + "\n";
    let have = std::fs::read_to_string(FILE).unwrap_or_default();
    if std::env::var_os("QP_WRITE_VECTORS").is_some() && have != want {
        std::fs::write(FILE, &want).unwrap();
        panic!("{FILE} written; run again without QP_WRITE_VECTORS");
    }
    assert!(
        have == want,
        "{FILE} differs from qp_core::protocol::limits; rewrite it: \
         QP_WRITE_VECTORS=1 cargo test -p qp-core --test limits_vectors"
    );
}

/// A constant added to `limits.rs` is added to the file too.
#[test]
fn every_constant_of_limits_is_in_the_file() {
    let source = include_str!("../src/protocol/limits.rs");
    let written = expected().to_string();
    let missing: Vec<String> = source
        .lines()
        .filter_map(|l| l.strip_prefix("pub const "))
        .filter_map(|l| l.split(':').next())
        .map(str::to_lowercase)
        .filter(|name| !written.contains(&format!("\"{name}\"")))
        .collect();
    assert!(
        missing.is_empty(),
        "constants of limits.rs not written out: {missing:?}"
    );
}
