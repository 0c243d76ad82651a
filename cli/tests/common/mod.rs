//! The fixtures of the suites that run the built `qp` binary: those of the
//! server's suites (server/tests/common, the same module), and `qp serve`,
//! `qp admin` and the Python clients run as processes. The binary's path
//! (`CARGO_BIN_EXE_qp`) is known to the `qp` package's tests only.
#![allow(dead_code)]

pub mod cli;

#[path = "../../../server/tests/common/mod.rs"]
mod server;
#[allow(unused_imports)]
pub use server::*;

use std::time::Duration;

use serde_json::Value;

/// Runs `tests/python/<script>` with the test Python against the built
/// `qp`, and asserts its closing "N passed, 0 failed".
pub fn run_python_suite(script: &str) {
    let out = std::process::Command::new(test_python())
        .arg(format!(
            "{}/tests/python/{script}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .env("QP", env!("CARGO_BIN_EXE_qp"))
        .output()
        .expect("the Python suite runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "{script} failed:\n{stdout}"
    );
}

/// A `qp serve` process (the built binary) on `--listen 127.0.0.1:0` with
/// `args`; its address read from its "listening on" line. Killed (-9) when
/// dropped.
pub struct QpServe {
    child: std::process::Child,
    pub base: String,
    /// What it logged (at `warn`) before it listened.
    pub startup_log: Vec<String>,
}

impl QpServe {
    pub fn start(args: &[&str]) -> QpServe {
        use std::io::{BufRead, BufReader};
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("QP_LOG", "warn")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("qp serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut startup_log = Vec::new();
        let base = loop {
            let Some(line) = lines.next() else {
                panic!("qp serve exited before listening; it said: {startup_log:#?}")
            };
            let line = line.unwrap();
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.trim().to_string();
            }
            startup_log.push(line);
        };
        std::thread::spawn(move || for _ in lines {});
        QpServe {
            child,
            base,
            startup_log,
        }
    }

    /// SIGTERM (a clean stop), and its exit status once it exited.
    pub fn terminate(&mut self, within: Duration) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM {pid}");
        let t = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(t.elapsed() < within, "qp serve did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` (`STOP`, `CONT`…) to the process.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal} {pid}");
    }

    /// kill -9: no shutdown, no flush.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for QpServe {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `qp admin --db DB ARGS…` with the built binary.
pub fn admin(db: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .arg("admin")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

/// `qp admin …` that must succeed and print JSON.
pub fn admin_json(db: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Value {
    let out = admin(db, args);
    assert!(
        out.status.success(),
        "qp admin {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
