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
        LogFormat::Text => builder.fmt_fields(OneLineFields).with_ansi(ansi).try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// The text format's fields, each value kept on its line: a line break in
/// a value (a client's id, a name, an error quoting either) is written as
/// its escape (`\n`, `\r`, `\u{2028}`), so no value can end its event's
/// line and forge another. (`tracing` already escapes ANSI sequences; the
/// JSON format escapes everything itself.)
#[derive(Debug, Default, Clone, Copy)]
pub struct OneLineFields;

impl<'writer> tracing_subscriber::fmt::FormatFields<'writer> for OneLineFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        mut writer: tracing_subscriber::fmt::format::Writer<'writer>,
        fields: R,
    ) -> std::fmt::Result {
        let mut one_line = OneLine(&mut writer);
        tracing_subscriber::fmt::format::DefaultFields::new().format_fields(
            tracing_subscriber::fmt::format::Writer::new(&mut one_line),
            fields,
        )
    }
}

/// A writer that escapes line breaks on their way through.
struct OneLine<'a, W: std::fmt::Write>(&'a mut W);

impl<W: std::fmt::Write> std::fmt::Write for OneLine<'_, W> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let mut rest = s;
        while let Some(i) = rest.find(is_line_break) {
            self.0.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or('\n');
            match c {
                '\n' => self.0.write_str("\\n")?,
                '\r' => self.0.write_str("\\r")?,
                c => write!(self.0, "\\u{{{:04x}}}", c as u32)?,
            }
            rest = &rest[i + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

/// What a reader of the log (a terminal, an editor, a shipper splitting
/// lines) may take for the end of a line.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    #[test]
    fn line_breaks_are_escaped_and_the_rest_is_kept() {
        let mut out = String::new();
        write!(super::OneLine(&mut out), "a\nINFO forged\r\u{2028}é\u{85}z").unwrap();
        assert_eq!(out, "a\\nINFO forged\\r\\u{2028}é\\u{0085}z");
    }
}
