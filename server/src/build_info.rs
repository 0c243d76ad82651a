//! What this binary is: its version and the commit it was built from
//! (`build.rs` reads git, else "unknown"), shown by `qp --version`, the
//! start-up log line and the `qp_build_info` metric.

/// The crate's version (`0.1.0`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit built (short hash, `-dirty` with uncommitted changes), or
/// "unknown" when built outside a git checkout.
pub const COMMIT: &str = env!("QP_BUILD_COMMIT");

/// `qp --version`: "0.1.0 (commit 1a2b3c4d, schema 9 on SQLite, 4 on PostgreSQL)".
pub fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{VERSION} (commit {COMMIT}, schema {} on SQLite, {} on PostgreSQL)",
            crate::store::versions::this_version(crate::store::Backend::Sqlite),
            crate::store::versions::this_version(crate::store::Backend::Postgres),
        )
    })
}
