//! `qp serve`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{EXIT_ERROR, EXIT_OK, EXIT_USAGE};
use qp_server::config::{ConfigError, PartialSettings};

#[derive(Args)]
#[command(
    after_help = "Every setting comes from its flag, else its environment variable, else the \
    config file (--config, TOML, same names with underscores, e.g. `ask_burst = 20`), else the default. \
    A switch on in the file (behind_proxy, no_migrate, apns_sandbox) stays on, and a list given there \
    is replaced, not cleared, by a flag or variable.\n\
    Without a push transport configured, push jobs are queued in the database."
)]
pub struct ServeArgs {
    /// Log lines as `text` (colours only on a terminal) or `json` (one
    /// object per line); the filter is QP_LOG, else RUST_LOG, else info.
    #[arg(long, env = "QP_LOG_FORMAT", value_enum, default_value_t = qp_server::logging::LogFormat::Text)]
    log_format: qp_server::logging::LogFormat,
    /// Config file (TOML).
    #[arg(long, env = "QP_CONFIG")]
    config: Option<PathBuf>,
    /// Every setting: its flag, variable, file key and help, declared once.
    #[command(flatten)]
    settings: PartialSettings,
}

pub async fn run(args: ServeArgs) -> i32 {
    let given = match given_settings(args.config.as_deref(), args.settings) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("qp serve: {e}");
            return EXIT_USAGE;
        }
    };
    // Operators' key files, to warn about once logging is on.
    let key_files: Vec<(PathBuf, &str)> = [
        (given.tls_key.clone(), "the TLS key"),
        (given.apns_key.clone(), "the APNs key"),
        (given.fcm_service_account.clone(), "the FCM service account"),
    ]
    .into_iter()
    .filter_map(|(path, what)| Some((path?, what)))
    .collect();
    let settings = match given.resolve(PartialSettings::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qp serve: {e}");
            return EXIT_USAGE;
        }
    };
    qp_server::logging::init(args.log_format);
    // In JSON every line on stderr is a log object (a shipper parses them
    // all); in text, the plain lines people and scripts read.
    let json = args.log_format == qp_server::logging::LogFormat::Json;
    qp_server::secret_files::warn_if_open(key_files.iter().map(|(p, what)| (p.as_path(), *what)));
    let server = match qp_server::serve::start(settings, None).await {
        Ok(s) => s,
        Err(e) => {
            if json {
                tracing::error!(error = %e, "qp serve: cannot start");
            } else {
                eprintln!("qp serve: {e}");
            }
            return EXIT_ERROR;
        }
    };
    let url = server.app.settings.url_of(server.addr);
    if json {
        tracing::info!(url, "qp serve: listening");
    } else {
        eprintln!("qp serve: listening on {url}");
    }
    wait_for_stop_signal().await;
    if json {
        tracing::info!("qp serve: stopping");
    } else {
        eprintln!("qp serve: stopping");
    }
    server.stop().await;
    EXIT_OK
}

/// The settings as given, before the defaults: `flags` (the flags and
/// environment variables) over the config file at `config`, with the
/// secrets not given either way read from their `_FILE` variables. The one
/// way the server's settings are read: `qp serve` runs with them and `qp
/// admin` works on the server they describe.
pub fn given_settings(
    config: Option<&Path>,
    mut flags: PartialSettings,
) -> Result<PartialSettings, ConfigError> {
    // QP_DB_FILE, QP_METRICS_TOKEN_FILE: the secret from a file.
    secrets_from_files(&mut flags)?;
    let file = match config {
        Some(path) => PartialSettings::from_file(path)?,
        None => PartialSettings::default(),
    };
    flags.over(file)
}

/// The settings the environment variables give (`QP_PUBLIC_URL`,
/// `QP_LISTEN`…), read as `qp serve` reads them, for a command that has
/// no flag of its own for each.
pub fn settings_from_env() -> Result<PartialSettings, ConfigError> {
    use clap::FromArgMatches;
    let matches = PartialSettings::augment_args(clap::Command::new("qp").no_binary_name(true))
        .try_get_matches_from(std::iter::empty::<String>())
        .map_err(|e| {
            // clap's first line names the variable's flag and the rule; the
            // rest is a usage hint for flags this command does not take.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            ConfigError::Environment(first.trim_start_matches("error: ").to_string())
        })?;
    PartialSettings::from_arg_matches(&matches).map_err(|e| ConfigError::Environment(e.to_string()))
}

/// Fills the secret settings not given by flag or variable from their
/// `_FILE` variables ([`qp_server::secret_env`]).
fn secrets_from_files(args: &mut PartialSettings) -> Result<(), ConfigError> {
    // Not quoted in the error: the URL may hold a password.
    let parse_url = |variable: &'static str, url: String| {
        url.parse::<qp_server::store::Database>()
            .map_err(|source| ConfigError::SecretFileUrl { variable, source })
    };
    if args.db.is_none() {
        if let Some(given) = qp_server::secret_env::from_file("QP_DB")? {
            args.db = Some(parse_url("QP_DB_FILE", given)?);
        }
    }
    if args.db_direct.is_none() {
        if let Some(given) = qp_server::secret_env::from_file("QP_DB_DIRECT")? {
            args.db_direct = Some(parse_url("QP_DB_DIRECT_FILE", given)?);
        }
    }
    if args.metrics_token.is_none() {
        args.metrics_token = qp_server::secret_env::from_file("QP_METRICS_TOKEN")?
            .map(qp_server::config::Secret::from);
    }
    Ok(())
}

/// Ctrl-C or SIGTERM.
async fn wait_for_stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `qp serve`'s flags, as `--help` shows them.
pub fn command() -> clap::Command {
    ServeArgs::augment_args(clap::Command::new("serve"))
}

/// One config-file key as its flag's help describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingDoc {
    pub key: &'static str,
    pub flag: String,
    pub env: Option<String>,
    /// What `[default: …]` says, if the help says it.
    pub default: Option<String>,
    /// The help without its `[default: …]`.
    pub help: String,
}

/// Every key of the config file, each from its flag's help: the one place
/// a setting is described and its default written (the operators' guide
/// is generated from this; a test holds each default to the server's).
pub fn settings_docs() -> Vec<SettingDoc> {
    let cmd = command();
    qp_server::config::config_keys()
        .iter()
        .map(|&key| {
            let flag = key.replace('_', "-");
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(flag.as_str()));
            let text = arg
                .and_then(|a| a.get_long_help().or(a.get_help()))
                .map(|h| h.to_string())
                .unwrap_or_default();
            let (help, mut default) = match text.rsplit_once(" [default: ") {
                Some((h, d)) => (
                    h.trim().to_string(),
                    Some(d.trim_end_matches(']').to_string()),
                ),
                None => (text.trim().to_string(), None),
            };
            if arg.is_some_and(|a| matches!(a.get_action(), clap::ArgAction::SetTrue)) {
                default.get_or_insert_with(|| "false".into());
            }
            SettingDoc {
                key,
                flag: format!("--{flag}"),
                env: arg
                    .and_then(|a| a.get_env())
                    .map(|e| e.to_string_lossy().into_owned()),
                default,
                help,
            }
        })
        .collect()
}

/// The operators' guide's settings table (docs/operators.md), made from
/// [`settings_docs`].
pub fn settings_reference() -> String {
    let mut out =
        String::from("| Key | Flag, variable | Default | What it does |\n|---|---|---|---|\n");
    for d in settings_docs() {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        out.push_str(&format!(
            "| `{}` | `{}`{} | {} | {} |\n",
            d.key,
            d.flag,
            d.env.map(|e| format!(", `{e}`")).unwrap_or_default(),
            d.default
                .as_deref()
                .map(|v| format!("`{}`", cell(v)))
                .unwrap_or_else(|| "none".into()),
            cell(&d.help),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each key of the file is a flag of `qp serve` with its variable and a
    /// help, because they are one field.
    #[test]
    fn every_file_key_is_a_flag_with_a_variable_and_a_help() {
        let cmd = command();
        for key in qp_server::config::config_keys() {
            let flag = key.replace('_', "-");
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(flag.as_str()))
                .unwrap_or_else(|| panic!("{key} has no --{flag}"));
            let env = arg.get_env().unwrap().to_string_lossy().into_owned();
            assert_eq!(env, format!("QP_{}", key.to_ascii_uppercase()));
            assert!(arg.get_help().is_some(), "--{flag} has no help");
        }
        assert!(
            qp_server::config::config_keys().len() >= 50,
            "{:?}",
            qp_server::config::config_keys()
        );
    }
}
