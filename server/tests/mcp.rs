//! The MCP tools, driven by a client nobody on this project wrote: the
//! official MCP Python SDK (`mcp` from PyPI, pinned in
//! `mcp/requirements.txt`) runs `mcp/mcp_client.py` against the built `qp`:
//! `qp serve`'s `/mcp` endpoint and `qp mcp` on stdio. The virtualenv is made
//! by `scripts/ensure-mcp-python` when missing (so `cargo test` installs what
//! it needs); if that fails, this test fails, it does not skip.

use std::process::Command;

#[test]
fn the_official_python_mcp_sdk_asks_waits_and_cancels_over_http_and_stdio() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let ensure = Command::new(format!("{root}/scripts/ensure-mcp-python"))
        .output()
        .expect("scripts/ensure-mcp-python runs");
    assert!(
        ensure.status.success(),
        "could not make the Python MCP SDK's virtualenv:\n{}",
        String::from_utf8_lossy(&ensure.stderr)
    );
    let python = String::from_utf8(ensure.stdout).unwrap();
    let python = std::path::Path::new(root).join(python.trim());
    let out = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/mcp/mcp_client.py"
        ))
        .env("QP", env!("CARGO_BIN_EXE_qp"))
        .output()
        .expect("the MCP client suite runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "the MCP client suite failed:\n{stdout}"
    );
}
