//! The MCP tools, driven by a client nobody on this project wrote: the
//! official MCP Python SDK (`mcp` from PyPI, pinned in
//! `python/requirements.txt`) runs `python/mcp_client.py` against the built
//! `qp`: `qp serve`'s `/mcp` endpoint and `qp mcp` on stdio. The virtualenv is
//! made by `scripts/ensure-test-python` when missing (so `cargo test`
//! installs what it needs); if that fails, this test fails, it does not skip.

mod common;

#[test]
fn the_official_python_mcp_sdk_asks_waits_and_cancels_over_http_and_stdio() {
    common::run_python_suite("mcp_client.py");
}

/// OAuth for remote MCP clients, driven by the same SDK's OAuth client
/// provider (`python/mcp_oauth.py`): discovery, registration (DCR and a
/// Client ID Metadata Document), the consent question answered Allow and
/// Deny, tokens, refresh, revocation, another resource's token refused.
#[test]
fn the_official_python_mcp_sdk_connects_with_oauth_and_the_consent_question() {
    common::run_python_suite("mcp_oauth.py");
}
