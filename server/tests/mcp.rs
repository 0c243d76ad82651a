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
