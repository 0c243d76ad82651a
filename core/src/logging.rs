//! Logging through the `log` facade. [`init_logging`] installs the platform
//! logger once (oslog on Apple targets, logcat on Android); elsewhere it
//! installs nothing, leaving the host program's choice alone.
//! [`error_chain`] writes an error and its causes on one line.
//!
//! What is logged never includes tokens or typed answers: only question ids,
//! states and error kinds.

use std::sync::Once;

static INIT: Once = Once::new();

/// Installs the platform logger; later calls do nothing.
pub fn init_logging() {
    INIT.call_once(|| {
        #[cfg(target_vendor = "apple")]
        {
            let _ = oslog::OsLogger::new("io.questionprotocol.core")
                .level_filter(log::LevelFilter::Info)
                .init();
        }
        #[cfg(target_os = "android")]
        {
            android_logger::init_once(
                android_logger::Config::default()
                    .with_max_level(log::LevelFilter::Info)
                    .with_tag("QuestionProtocol"),
            );
        }
    });
}

/// A failure the platform glue caught where the system called it (a
/// notification service, a receiver, a background job) and could not
/// throw: logged (oslog, logcat) so it is seen, never lost in silence.
/// `site` names the entry point; `error` is what the glue may log (its
/// type and the core's message: never a token, never typed text).
pub fn report_glue_failure(site: &str, error: &str) {
    log::warn!(target: "qp.glue", "{site}: {error}");
}

/// An error and its causes on one line, so "error sending request" says
/// why ("invalid peer certificate: UnknownIssuer", "connection refused").
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
