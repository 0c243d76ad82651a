//! Drop-in compatibility with clients of the reference implementation
//! (PingRoom): runs `compat/reference_client.py`, a client and a webhook
//! receiver written in Python from the reference's published contract (flat
//! error bodies; the `X-PingRoom-Signature` and `-V2` schemes), against the
//! `qp` binary built here. It sets up its own database with `qp admin`,
//! starts `qp serve` on loopback and walks every error status.

use std::process::Command;

#[test]
fn clients_and_receivers_of_the_reference_implementation_work_unchanged() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/compat/reference_client.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .env("QP", env!("CARGO_BIN_EXE_qp"))
        .output()
        .expect("python3 runs the compatibility suite (scripts/test installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "the compatibility suite failed:\n{stdout}"
    );
}
