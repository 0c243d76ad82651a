//! The server's log: to stderr, as text (colours only when stderr is a
//! terminal, so files and journald get plain lines) or as one JSON object
//! per line (`--log-format json`, for log shippers), filtered by `QP_LOG`,
//! else `RUST_LOG`, else `info` (both take `tracing`'s filter syntax, e.g.
//! `QP_LOG=info,qp_server::push=debug`).

use std::io::IsTerminal;

/// The environment variables read for the filter, the first set winning.
pub const FILTER_VARIABLES: [&str; 2] = ["QP_LOG", "RUST_LOG"];

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`
    /// (with `message`), and `span` / `spans` (the request's id, route,
    /// client and actor).
    Json,
}

/// The filter: the first of [`FILTER_VARIABLES`] that is set and valid,
/// else `info`; an invalid one is reported on stderr (logging is not up).
///
/// The MCP library (rmcp) is held to warnings unless the filter names it:
/// at info it logs every session id in clear (ids that, kept in the
/// database, stay valid across instances and restarts) and each client's
/// whole `initialize` parameters.
fn filter() -> tracing_subscriber::EnvFilter {
    let mut chosen = "info".to_string();
    for var in FILTER_VARIABLES {
        let Ok(value) = std::env::var(var) else {
            continue;
        };
        match tracing_subscriber::EnvFilter::try_new(&value) {
            Ok(_) => chosen = value,
            Err(e) => eprintln!("qp: {var}: not a log filter ({e}); using info"),
        }
        break;
    }
    if !chosen.contains("rmcp") {
        chosen.push_str(",rmcp=warn");
    }
    tracing_subscriber::EnvFilter::try_new(&chosen)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"))
}

/// Installs the log for this process (a second call changes nothing).
pub fn init(format: LogFormat) {
    let ansi = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.with_ansi(ansi).try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}
