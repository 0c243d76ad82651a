//! `qp serve`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::{EXIT_ERROR, EXIT_OK, EXIT_USAGE};
use crate::config::PartialSettings;

#[derive(Args)]
#[command(
    after_help = "Every setting comes from its flag, else its environment variable, else the \
    config file (--config, TOML, same names with underscores, e.g. `ask_burst = 20`), else the default.\n\
    Without a push transport configured, push jobs are queued in the database."
)]
pub struct ServeArgs {
    /// Log lines as `text` (colours only on a terminal) or `json` (one
    /// object per line); the filter is QP_LOG, else RUST_LOG, else info.
    #[arg(long, env = "QP_LOG_FORMAT", value_enum, default_value_t = crate::logging::LogFormat::Text)]
    log_format: crate::logging::LogFormat,
    /// Config file (TOML).
    #[arg(long, env = "QP_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8750, loopback only].
    #[arg(long, env = "QP_LISTEN")]
    listen: Option<SocketAddr>,
    /// The database: an SQLite file, created if missing, or a PostgreSQL URL
    /// (postgres://user:password@host:5432/qp, with ?sslmode=require and
    /// &sslrootcert=CA.pem for TLS) shared by several `qp serve` instances
    /// [default: qp.sqlite].
    // hide_env_values: --help must not print a password set in QP_DB.
    #[arg(
        long,
        visible_alias = "database",
        env = "QP_DB",
        hide_env_values = true,
        value_name = "FILE|URL",
        value_parser = super::admin::DbArg
    )]
    db: Option<crate::store::Database>,
    /// PostgreSQL behind a transaction-mode pooler (PgBouncer): a URL of
    /// the same database reached directly, for what such a pooler breaks:
    /// LISTEN (the wake-ups between instances) and the schema migration's
    /// lock [default: --db].
    #[arg(
        long,
        env = "QP_DB_DIRECT",
        hide_env_values = true,
        value_name = "URL",
        value_parser = super::admin::DbArg
    )]
    db_direct: Option<crate::store::Database>,
    /// How often overdue questions are expired, in ms [default: 1000].
    #[arg(long, env = "QP_SWEEP_INTERVAL_MS")]
    sweep_interval_ms: Option<u64>,
    /// Questions an agent may ask per minute [default: 60].
    #[arg(long, env = "QP_ASK_RATE_PER_MINUTE")]
    ask_rate_per_minute: Option<u32>,
    /// Questions an agent may ask in a burst [default: 20].
    #[arg(long, env = "QP_ASK_BURST")]
    ask_burst: Option<u32>,
    /// Pending questions an agent may have at once [default: 1000].
    #[arg(long, env = "QP_MAX_PENDING_PER_AGENT")]
    max_pending_per_agent: Option<u32>,
    /// First webhook retry delay in ms, doubled per attempt [default: 1000].
    #[arg(long, env = "QP_WEBHOOK_RETRY_BASE_MS")]
    webhook_retry_base_ms: Option<u64>,
    /// Attempts per webhook delivery before giving up [default: 10].
    #[arg(long, env = "QP_WEBHOOK_MAX_ATTEMPTS")]
    webhook_max_attempts: Option<u32>,
    /// Timeout of one webhook request in ms [default: 10000].
    #[arg(long, env = "QP_WEBHOOK_TIMEOUT_MS")]
    webhook_timeout_ms: Option<u64>,
    /// APNs token-auth key (.p8); with --apns-key-id and --apns-team-id. Re-read when the file changes (the same key redeployed; a new key has a new key id: set both and restart).
    #[arg(long, env = "QP_APNS_KEY")]
    apns_key: Option<PathBuf>,
    /// APNs key id (10 characters, from the developer account).
    #[arg(long, env = "QP_APNS_KEY_ID")]
    apns_key_id: Option<String>,
    /// Apple developer team id.
    #[arg(long, env = "QP_APNS_TEAM_ID")]
    apns_team_id: Option<String>,
    /// Use the APNs sandbox (development builds) instead of production.
    #[arg(long, env = "QP_APNS_SANDBOX")]
    apns_sandbox: bool,
    /// APNs base URL [default: https://api.push.apple.com, or the sandbox].
    #[arg(long, env = "QP_APNS_BASE_URL")]
    apns_base_url: Option<String>,
    /// Firebase service-account JSON file: enables FCM HTTP v1. Re-read when the file changes (a rotated key needs no restart).
    #[arg(long, env = "QP_FCM_SERVICE_ACCOUNT")]
    fcm_service_account: Option<PathBuf>,
    /// FCM base URL [default: https://fcm.googleapis.com].
    #[arg(long, env = "QP_FCM_BASE_URL")]
    fcm_base_url: Option<String>,
    /// How long a client may take to send a request body, in ms (408 after) [default: 10000].
    #[arg(long, env = "QP_BODY_TIMEOUT_MS")]
    body_timeout_ms: Option<u64>,
    /// Connections served at once; more get 503 [default: 32768, capped by the open-file limit].
    #[arg(long, env = "QP_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Answers one user may send per minute [default: 120].
    #[arg(long, env = "QP_ANSWER_RATE_PER_MINUTE", help_heading = "Limits")]
    answer_rate_per_minute: Option<u32>,
    /// Answers one user may send in a burst [default: 60].
    #[arg(long, env = "QP_ANSWER_BURST", help_heading = "Limits")]
    answer_burst: Option<u32>,
    /// Long-polls (waits, MCP waits, dev inboxes) one agent or user may hold at once, all its tokens together; more get 429 [default: 256].
    #[arg(long, env = "QP_MAX_LONG_POLLS_PER_TOKEN", help_heading = "Limits")]
    max_long_polls_per_token: Option<u32>,
    /// How long an answer's Idempotency-Key is remembered, in seconds; older keys are purged [default: 86400].
    #[arg(long, env = "QP_IDEMPOTENCY_KEY_TTL_SECS", help_heading = "Limits")]
    idempotency_key_ttl_secs: Option<u64>,
    /// MCP sessions one agent may hold open at once; more get 429 [default: 32].
    #[arg(long, env = "QP_MCP_MAX_SESSIONS_PER_AGENT", help_heading = "Limits")]
    mcp_max_sessions_per_agent: Option<u32>,
    /// Web Push: a push service host the server may send browsers' pushes to (`*.` for subdomains); repeat or comma-separate. Replaces the defaults (FCM, WNS, Mozilla, Apple).
    #[arg(
        long,
        env = "QP_WEB_PUSH_ALLOW",
        value_delimiter = ',',
        help_heading = "Push"
    )]
    web_push_allow: Vec<String>,
    /// OAuth: hosts (`host` or `host:port`, comma-separated) whose Client ID Metadata Documents may be fetched although loopback or private (tests only).
    #[arg(
        long,
        env = "QP_OAUTH_CLIENT_ALLOW",
        value_delimiter = ',',
        help_heading = "OAuth"
    )]
    oauth_client_allow: Vec<String>,
    /// OAuth: a CA certificate (PEM) to trust when fetching Client ID Metadata Documents, besides the web's roots (tests).
    #[arg(long, env = "QP_OAUTH_CLIENT_CA", help_heading = "OAuth")]
    oauth_client_ca: Option<PathBuf>,
    /// OAuth: whom `qp login --url` asks when it names nobody (`--as`): a user id or a name only one person has [default: the server's only person, if it has one].
    #[arg(long, env = "QP_DEFAULT_OWNER", help_heading = "OAuth")]
    default_owner: Option<String>,
    /// Web Push: the VAPID key file, made on first start (0600) [default: beside the SQLite database, DB.vapid-key].
    #[arg(long, env = "QP_VAPID_KEY", help_heading = "Push")]
    vapid_key: Option<PathBuf>,
    /// An MCP session with no request in flight is closed after this many seconds [default: 300].
    #[arg(long, env = "QP_MCP_SESSION_IDLE_SECS", help_heading = "Limits")]
    mcp_session_idle_secs: Option<u64>,
    /// Seconds a keep-alive connection may sit idle (or a client take to send its headers) before it is closed; keep it above the load balancer's idle timeout [default: 75].
    #[arg(long, env = "QP_IDLE_TIMEOUT_SECS", help_heading = "Limits")]
    idle_timeout_secs: Option<u64>,
    /// The bearer token /metrics requires (16+ characters; prefer the environment variable, so it is not in `ps`). Without it /metrics answers loopback clients only, and nobody when --behind-proxy.
    // hide_env_values: --help must not print the secret.
    #[arg(long, env = "QP_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    /// The URL phones and MCP clients reach this server at: pairing links, Web Push, the OAuth issuer and metadata [default: http(s):// + --listen].
    #[arg(long, env = "QP_PUBLIC_URL")]
    public_url: Option<String>,
    /// TLS certificate chain (PEM), with --tls-key; re-read when the file changes.
    #[arg(long, env = "QP_TLS_CERT", help_heading = "TLS")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "QP_TLS_KEY", help_heading = "TLS")]
    tls_key: Option<PathBuf>,
    /// How often the certificate files are checked for a change, in ms [default: 5000].
    #[arg(long, env = "QP_TLS_RELOAD_MS", help_heading = "TLS")]
    tls_reload_ms: Option<u64>,
    /// Get certificates by ACME for this domain (repeat, or comma-separate); TLS-ALPN-01 on --listen, which must be reachable on port 443.
    #[arg(
        long,
        env = "QP_ACME_DOMAIN",
        value_delimiter = ',',
        help_heading = "TLS"
    )]
    acme_domain: Vec<String>,
    /// Contact for the CA's notices (mailto:ops@example.com); repeatable.
    #[arg(
        long,
        env = "QP_ACME_CONTACT",
        value_delimiter = ',',
        help_heading = "TLS"
    )]
    acme_contact: Vec<String>,
    /// Directory for the ACME account and certificates [default: qp-acme].
    #[arg(long, env = "QP_ACME_CACHE", help_heading = "TLS")]
    acme_cache: Option<PathBuf>,
    /// The ACME directory URL [default: Let's Encrypt production; staging: https://acme-staging-v02.api.letsencrypt.org/directory].
    #[arg(long, env = "QP_ACME_DIRECTORY", help_heading = "TLS")]
    acme_directory: Option<String>,
    /// An extra CA certificate (PEM) to trust for the ACME server (a private CA).
    #[arg(long, env = "QP_ACME_DIRECTORY_CA", help_heading = "TLS")]
    acme_directory_ca: Option<PathBuf>,
    /// A proxy in front terminates TLS: allow plain HTTP beyond loopback.
    #[arg(long, env = "QP_BEHIND_PROXY", help_heading = "TLS")]
    behind_proxy: bool,
    /// A proxy (address or network) whose X-Forwarded-For names the client; repeatable.
    #[arg(
        long,
        env = "QP_TRUSTED_PROXY",
        value_delimiter = ',',
        help_heading = "TLS"
    )]
    trusted_proxy: Vec<String>,
    /// End-to-end encrypted pushes: `auto` seals each push to the device's
    /// public key when it registered one (plain for the others); `off` sends
    /// every push plain. Recommended: auto [default: auto].
    #[arg(long, env = "QP_PUSH_ENCRYPTION", value_parser = ["auto", "off"], help_heading = "Push")]
    push_encryption: Option<String>,
    /// Do not migrate the database at start-up: refuse one that lacks migrations (run `qp migrate` first, on purpose).
    #[arg(long, env = "QP_NO_MIGRATE", help_heading = "Data")]
    no_migrate: bool,
    /// Answered, expired and cancelled questions (with their answers) are deleted this many days after they were asked; 0 keeps them [default: 365].
    #[arg(long, env = "QP_RETENTION_QUESTIONS_DAYS", help_heading = "Data")]
    retention_questions_days: Option<u64>,
    /// Sent and failed push jobs are deleted after this many days; 0 keeps them [default: 7].
    #[arg(long, env = "QP_RETENTION_PUSH_JOBS_DAYS", help_heading = "Data")]
    retention_push_jobs_days: Option<u64>,
    /// Delivered and failed webhook deliveries are deleted after this many days; 0 keeps them [default: 30].
    #[arg(
        long,
        env = "QP_RETENTION_WEBHOOK_DELIVERIES_DAYS",
        help_heading = "Data"
    )]
    retention_webhook_deliveries_days: Option<u64>,
    /// Dev-inbox entries (terminal devices' pushes) are deleted after this many days; 0 keeps them [default: 7].
    #[arg(long, env = "QP_RETENTION_DEV_INBOX_DAYS", help_heading = "Data")]
    retention_dev_inbox_days: Option<u64>,
    /// Rows deleted per statement by the retention sweep (small: the writer is shared with requests) [default: 500].
    #[arg(long, env = "QP_RETENTION_BATCH_SIZE", help_heading = "Data")]
    retention_batch_size: Option<usize>,
}

pub async fn run(mut args: ServeArgs) -> i32 {
    // QP_DB_FILE, QP_METRICS_TOKEN_FILE: the secret from a file.
    if let Err(e) = secrets_from_files(&mut args) {
        eprintln!("qp serve: {e}");
        return EXIT_USAGE;
    }
    let file = match &args.config {
        Some(path) => match PartialSettings::from_file(path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("qp serve: {e}");
                return EXIT_USAGE;
            }
        },
        None => PartialSettings::default(),
    };
    let flags = PartialSettings {
        listen: args.listen,
        db: args.db,
        db_direct: args.db_direct,
        sweep_interval_ms: args.sweep_interval_ms,
        ask_rate_per_minute: args.ask_rate_per_minute,
        ask_burst: args.ask_burst,
        max_pending_per_agent: args.max_pending_per_agent,
        webhook_retry_base_ms: args.webhook_retry_base_ms,
        webhook_max_attempts: args.webhook_max_attempts,
        webhook_timeout_ms: args.webhook_timeout_ms,
        apns_key: args.apns_key,
        apns_key_id: args.apns_key_id,
        apns_team_id: args.apns_team_id,
        apns_base_url: args.apns_base_url,
        apns_sandbox: args.apns_sandbox.then_some(true),
        fcm_service_account: args.fcm_service_account,
        fcm_base_url: args.fcm_base_url,
        public_url: args.public_url,
        body_timeout_ms: args.body_timeout_ms,
        max_connections: args.max_connections,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        tls_reload_ms: args.tls_reload_ms,
        acme_domain: (!args.acme_domain.is_empty()).then_some(args.acme_domain),
        acme_contact: (!args.acme_contact.is_empty()).then_some(args.acme_contact),
        acme_cache: args.acme_cache,
        acme_directory: args.acme_directory,
        acme_directory_ca: args.acme_directory_ca,
        behind_proxy: args.behind_proxy.then_some(true),
        trusted_proxy: (!args.trusted_proxy.is_empty()).then_some(args.trusted_proxy),
        push_encryption: args.push_encryption,
        answer_rate_per_minute: args.answer_rate_per_minute,
        answer_burst: args.answer_burst,
        max_long_polls_per_token: args.max_long_polls_per_token,
        idempotency_key_ttl_secs: args.idempotency_key_ttl_secs,
        metrics_token: args.metrics_token,
        mcp_max_sessions_per_agent: args.mcp_max_sessions_per_agent,
        web_push_allow: (!args.web_push_allow.is_empty()).then_some(args.web_push_allow),
        vapid_key: args.vapid_key,
        oauth_client_allow: (!args.oauth_client_allow.is_empty())
            .then_some(args.oauth_client_allow),
        oauth_client_ca: args.oauth_client_ca,
        default_owner: args.default_owner,
        mcp_session_idle_secs: args.mcp_session_idle_secs,
        idle_timeout_secs: args.idle_timeout_secs,
        no_migrate: args.no_migrate.then_some(true),
        retention_questions_days: args.retention_questions_days,
        retention_push_jobs_days: args.retention_push_jobs_days,
        retention_webhook_deliveries_days: args.retention_webhook_deliveries_days,
        retention_dev_inbox_days: args.retention_dev_inbox_days,
        retention_batch_size: args.retention_batch_size,
    };
    // Operators' key files, to warn about once logging is on.
    let key_files: Vec<(PathBuf, &str)> = [
        (
            flags.tls_key.clone().or(file.tls_key.clone()),
            "the TLS key",
        ),
        (
            flags.apns_key.clone().or(file.apns_key.clone()),
            "the APNs key",
        ),
        (
            flags
                .fcm_service_account
                .clone()
                .or(file.fcm_service_account.clone()),
            "the FCM service account",
        ),
    ]
    .into_iter()
    .filter_map(|(path, what)| Some((path?, what)))
    .collect();
    let settings = match flags.resolve(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qp serve: {e}");
            return EXIT_USAGE;
        }
    };
    crate::logging::init(args.log_format);
    // In JSON every line on stderr is a log object (a shipper parses them
    // all); in text, the plain lines people and scripts read.
    let json = args.log_format == crate::logging::LogFormat::Json;
    crate::secret_files::warn_if_open(key_files.iter().map(|(p, what)| (p.as_path(), *what)));
    let server = match crate::serve::start(settings, None).await {
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

/// Fills the secret settings not given by flag or variable from their
/// `_FILE` variables ([`crate::secret_env`]).
fn secrets_from_files(args: &mut ServeArgs) -> Result<(), String> {
    if args.db.is_none() {
        if let Some(url) = crate::secret_env::from_file("QP_DB")? {
            // Not quoted in the error: it may hold a password.
            args.db = Some(url.parse().map_err(|e| format!("QP_DB_FILE: {e}"))?);
        }
    }
    if args.db_direct.is_none() {
        if let Some(url) = crate::secret_env::from_file("QP_DB_DIRECT")? {
            args.db_direct = Some(url.parse().map_err(|e| format!("QP_DB_DIRECT_FILE: {e}"))?);
        }
    }
    if args.metrics_token.is_none() {
        args.metrics_token = crate::secret_env::from_file("QP_METRICS_TOKEN")?;
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
    crate::config::config_keys()
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
