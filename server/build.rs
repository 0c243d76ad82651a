//! Records the git commit being built as `QP_BUILD_COMMIT` (`qp --version`,
//! the start-up log, the `qp_build_info` metric): `QP_BUILD_COMMIT` from the
//! environment when set (a release script, a container build without
//! `.git`), else `git rev-parse --short=12 HEAD` (`-dirty` with uncommitted
//! changes), else "unknown".
//!
//! Rebuilt when HEAD moves to another branch or the variable changes, not
//! on every commit: watching the branch's ref would rebuild the server on
//! each commit anywhere in the repository. A development build may so show
//! an older commit; release builds run from a fresh checkout.

use std::process::Command;

#[path = "build_webapp.rs"]
mod webapp;

fn main() {
    webapp::embed();
    println!("cargo:rerun-if-env-changed=QP_BUILD_COMMIT");
    let commit = std::env::var("QP_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=QP_BUILD_COMMIT={}", commit.trim());
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn git_commit() -> Option<String> {
    let dir = git(&["rev-parse", "--git-dir"])?;
    println!("cargo:rerun-if-changed={dir}/HEAD");
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    })
}
