//! Server settings. Each comes from a flag, else an environment variable
//! (clap reads both), else the config file, else the default.
//!
//! Every setting is declared once, in [`PartialSettings`] (its file key,
//! flag, variable and help); [`Settings`] is what they resolve to. Each
//! default is a named constant (`DEFAULT_…`) beside the code of its
//! concern, which also checks it:
//! - here: the settings, their resolution, the sweep and the webhooks;
//! - [`file`](mod@file): the TOML file, and the layering of flags over file;
//! - [`database`]: `db` and `db_direct`;
//! - [`tls`]: the listening address, TLS (files or ACME), proxies;
//! - [`limits`]: rates, connections, long-polls, MCP sessions, timeouts;
//! - [`push`]: APNs, FCM, Web Push, push encryption, the worker's lease;
//! - [`data`]: migration at start-up and retention.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::secret::Secret;

pub mod data;
pub mod database;
pub mod file;
pub mod limits;
pub mod push;
pub mod tls;

pub use database::{DbArg, DEFAULT_DB_FILE};
pub use file::config_keys;
#[cfg(test)]
use file::toml_error;
pub use limits::*;
pub use push::{ApnsConfig, FcmConfig};
pub use tls::{AcmeSettings, TlsSettings, DEFAULT_LISTEN, LETS_ENCRYPT};

/// `sweep_interval_ms`'s default: how often overdue questions are expired.
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_millis(1000);
/// `webhook_retry_base_ms`'s default: the webhooks' retry policy's first
/// delay.
pub const DEFAULT_WEBHOOK_RETRY_BASE: Duration = qp_core::retry::RetryPolicy::WEBHOOK.min;
/// `webhook_max_attempts`'s default.
pub const DEFAULT_WEBHOOK_MAX_ATTEMPTS: u32 = 10;
/// `webhook_timeout_ms`'s default: one webhook request's timeout.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// The effective settings of `qp serve`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    pub db: crate::store::Database,
    /// PostgreSQL only: a direct URL (no pooler between) for what a
    /// transaction-mode pooler breaks: `LISTEN` (the wake-ups between
    /// instances) and the schema migration's session lock. None: `db`.
    pub db_direct: Option<crate::store::Database>,
    pub sweep_interval: Duration,
    pub ask_rate_per_minute: u32,
    pub ask_burst: u32,
    pub max_pending_per_agent: u32,
    pub webhook_retry_base: Duration,
    pub webhook_max_attempts: u32,
    pub webhook_timeout: Duration,
    /// How long a client may take to send a request body (408 after).
    pub body_timeout: Duration,
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// Connections one client address (an IPv6 /64) may hold at once, so
    /// one client cannot fill `max_connections` for everyone; at most half
    /// of that. Trusted proxies are not counted (their clients are).
    pub max_connections_per_address: usize,
    /// APNs, when configured (`--apns-key` and friends).
    pub apns: Option<ApnsConfig>,
    /// FCM, when configured (`--fcm-service-account`).
    pub fcm: Option<FcmConfig>,
    /// The URL phones reach this server at (pairing links); by default
    /// `http://` (or `https://`) + the listen address.
    pub public_url: Option<String>,
    /// TLS in the binary: off (loopback or behind a proxy), certificate
    /// files, or ACME.
    pub tls: TlsSettings,
    /// A proxy in front terminates TLS: plain HTTP may listen beyond loopback.
    pub behind_proxy: bool,
    /// Proxies whose `X-Forwarded-For` names the client (for per-address
    /// limits); requests from anyone else are taken at their socket address.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// End-to-end encrypted pushes (`push_encryption = "auto"`, the
    /// default): every device that registered a public key gets its pushes
    /// sealed to it; devices without one get plain pushes. `"off"`: plain
    /// pushes for all.
    pub push_encryption: bool,
    /// How long the push worker's claim on a job lasts (`push::budget`):
    /// after a crash or a stall, its claimed pushes go again this long
    /// after they were claimed.
    pub push_lease: Duration,
    /// Answers one user may send per minute, and in a burst (429 beyond).
    pub answer_rate_per_minute: u32,
    pub answer_burst: u32,
    /// Long-polls (waits, MCP waits, dev inboxes) one agent or user may hold
    /// at once, all its tokens together; more get 429, so one token cannot
    /// take every connection.
    pub max_long_polls_per_token: u32,
    /// How long an answer's Idempotency-Key is remembered (a retry within
    /// it gets the first response); older keys are purged.
    pub idempotency_key_ttl: Duration,
    /// The bearer token `/metrics` requires; without one, `/metrics`
    /// answers loopback clients only (and nobody behind a proxy).
    pub metrics_token: Option<Secret>,
    /// MCP sessions one agent may hold open at once (429 beyond).
    pub mcp_max_sessions_per_agent: u32,
    /// Web Push: the push services' hosts the server sends to (empty: the
    /// defaults of `push::webpush`), and the VAPID key's file (default
    /// beside the SQLite database).
    pub web_push_allow: Vec<String>,
    pub vapid_key: Option<PathBuf>,
    /// OAuth: hosts (`host` or `host:port`) whose Client ID Metadata
    /// Documents may be fetched although they are loopback or private
    /// (tests), and a CA to trust for those fetches besides the web's.
    pub oauth_client_allow: Vec<String>,
    pub oauth_client_ca: Option<PathBuf>,
    /// Whom `qp login --url` asks when it names nobody: a user id or a
    /// name only one person has (none: the server's only person).
    pub default_owner: Option<String>,
    /// Who may approve an agent sign-in (OAuth, `qp login --url`) in a room.
    pub agent_sign_in: crate::sign_in_policy::Approvers,
    /// Whom an agent made by a sign-in may ask.
    pub sign_in_agents_ask: crate::sign_in_policy::Audience,
    /// An MCP session with no request in flight is closed after this long.
    pub mcp_session_idle: Duration,
    /// How long a keep-alive connection may sit idle (and a client take to
    /// send its headers) before it is closed: above the load balancers'
    /// own idle timeouts (ALB 60 s, nginx 60 s), so that they, not we,
    /// close first and never send into a closing connection (a 502).
    pub idle_timeout: Duration,
    // -- data lifecycle (retention, upgrades) --
    /// Whether start-up migrates the database (`Apply`), or refuses one
    /// that lacks migrations (`Require`: `--no-migrate`, after `qp migrate`).
    pub migration: crate::store::Migration,
    /// How long each kind of finished row is kept (see
    /// [`crate::store::retention`]); `None`: forever.
    pub retention: crate::store::retention::Retention,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: DEFAULT_LISTEN,
            db: crate::store::Database::Sqlite(PathBuf::from(DEFAULT_DB_FILE)),
            db_direct: None,
            sweep_interval: DEFAULT_SWEEP_INTERVAL,
            ask_rate_per_minute: DEFAULT_ASK_RATE_PER_MINUTE,
            ask_burst: DEFAULT_ASK_BURST,
            max_pending_per_agent: DEFAULT_MAX_PENDING_PER_AGENT,
            webhook_retry_base: DEFAULT_WEBHOOK_RETRY_BASE,
            webhook_max_attempts: DEFAULT_WEBHOOK_MAX_ATTEMPTS,
            webhook_timeout: DEFAULT_WEBHOOK_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_address: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
            apns: None,
            fcm: None,
            public_url: None,
            tls: TlsSettings::Off,
            behind_proxy: false,
            trusted_proxies: Vec::new(),
            push_encryption: push::DEFAULT_PUSH_ENCRYPTION,
            push_lease: push::DEFAULT_PUSH_LEASE,
            answer_rate_per_minute: DEFAULT_ANSWER_RATE_PER_MINUTE,
            answer_burst: DEFAULT_ANSWER_BURST,
            max_long_polls_per_token: DEFAULT_MAX_LONG_POLLS_PER_TOKEN,
            idempotency_key_ttl: DEFAULT_IDEMPOTENCY_KEY_TTL,
            metrics_token: None,
            mcp_max_sessions_per_agent: DEFAULT_MCP_MAX_SESSIONS_PER_AGENT,
            web_push_allow: Vec::new(),
            vapid_key: None,
            oauth_client_allow: Vec::new(),
            oauth_client_ca: None,
            default_owner: None,
            agent_sign_in: crate::sign_in_policy::Approvers::default(),
            sign_in_agents_ask: crate::sign_in_policy::Audience::default(),
            mcp_session_idle: DEFAULT_MCP_SESSION_IDLE,
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            migration: crate::store::Migration::Apply,
            retention: crate::store::retention::Retention::default(),
        }
    }
}

/// Every setting of `qp serve`, declared once: the field is the config
/// file's key (TOML, e.g. `ask_burst = 20`), clap makes it the flag
/// (`--ask-burst`) and reads its environment variable, and its doc comment
/// is the help (`qp serve --help`, and the operators' guide's table). Each
/// may be missing: the flags and environment are one of these, the file
/// another; [`PartialSettings::resolve`] lays the first over the second over
/// [`Settings::default`]. A `[default: …]` in the help is held to that
/// default by a test (cli/tests/install_kit.rs).
///
/// Switches are `bool` and lists are `Vec` (not `Option`): a flag that is
/// absent and a list that is empty are "not given" and leave the file's.
///
/// The fields' docs are the flags' `--help`, shown as written: their URLs
/// stay bare rather than in Markdown's `<…>`.
#[allow(rustdoc::bare_urls)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct PartialSettings {
    /// Address to listen on [default: 127.0.0.1:8750, loopback only].
    #[arg(long, env = "QP_LISTEN")]
    pub listen: Option<SocketAddr>,
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
        value_parser = DbArg
    )]
    #[serde(serialize_with = "database::database_as_given")]
    pub db: Option<crate::store::Database>,
    /// PostgreSQL behind a transaction-mode pooler (PgBouncer): a URL of
    /// the same database reached directly, for what such a pooler breaks:
    /// LISTEN (the wake-ups between instances) and the schema migration's
    /// lock [default: --db].
    #[arg(
        long,
        env = "QP_DB_DIRECT",
        hide_env_values = true,
        value_name = "URL",
        value_parser = DbArg
    )]
    #[serde(serialize_with = "database::database_as_given")]
    pub db_direct: Option<crate::store::Database>,
    /// How often overdue questions are expired, in ms [default: 1000].
    #[arg(long, env = "QP_SWEEP_INTERVAL_MS")]
    pub sweep_interval_ms: Option<u64>,
    /// Questions an agent may ask per minute [default: 60].
    #[arg(long, env = "QP_ASK_RATE_PER_MINUTE")]
    pub ask_rate_per_minute: Option<u32>,
    /// Questions an agent may ask in a burst [default: 20].
    #[arg(long, env = "QP_ASK_BURST")]
    pub ask_burst: Option<u32>,
    /// Pending questions an agent may have at once [default: 1000].
    #[arg(long, env = "QP_MAX_PENDING_PER_AGENT")]
    pub max_pending_per_agent: Option<u32>,
    /// First webhook retry delay in ms, doubled per attempt [default: 1000].
    #[arg(long, env = "QP_WEBHOOK_RETRY_BASE_MS")]
    pub webhook_retry_base_ms: Option<u64>,
    /// Attempts per webhook delivery before giving up [default: 10].
    #[arg(long, env = "QP_WEBHOOK_MAX_ATTEMPTS")]
    pub webhook_max_attempts: Option<u32>,
    /// Timeout of one webhook request in ms [default: 10000].
    #[arg(long, env = "QP_WEBHOOK_TIMEOUT_MS")]
    pub webhook_timeout_ms: Option<u64>,
    /// APNs token-auth key (.p8); with --apns-key-id and --apns-team-id. Re-read when the file changes (the same key redeployed; a new key has a new key id: set both and restart).
    #[arg(long, env = "QP_APNS_KEY")]
    pub apns_key: Option<PathBuf>,
    /// APNs key id (10 characters, from the developer account).
    #[arg(long, env = "QP_APNS_KEY_ID")]
    pub apns_key_id: Option<String>,
    /// Apple developer team id.
    #[arg(long, env = "QP_APNS_TEAM_ID")]
    pub apns_team_id: Option<String>,
    /// Use the APNs sandbox (development builds) instead of production.
    #[arg(long, env = "QP_APNS_SANDBOX")]
    #[serde(default, skip_serializing_if = "is_false")]
    pub apns_sandbox: bool,
    /// APNs base URL [default: https://api.push.apple.com, or the sandbox].
    #[arg(long, env = "QP_APNS_BASE_URL")]
    pub apns_base_url: Option<String>,
    /// Firebase service-account JSON file: enables FCM HTTP v1. Re-read when the file changes (a rotated key needs no restart).
    #[arg(long, env = "QP_FCM_SERVICE_ACCOUNT")]
    pub fcm_service_account: Option<PathBuf>,
    /// FCM base URL [default: https://fcm.googleapis.com].
    #[arg(long, env = "QP_FCM_BASE_URL")]
    pub fcm_base_url: Option<String>,
    /// How long a server's claim on a push lasts, in ms: pushes an instance claimed and did not finish (it crashed, or stalled) go again this long after the claim, from any instance. Below the default, a send still running at three quarters of it is cut off and sent again later (the gateway may have it: counted in qp_push_resent_maybe_delivered_total), and the server warns at start. 2000 to 3600000 (below 2000 the quarter of the lease kept for recording an outcome cannot hold one write's 500 ms lock wait: refused, naming the field) [default: 60000].
    #[arg(long, env = "QP_PUSH_LEASE_MS")]
    pub push_lease_ms: Option<u64>,
    /// How long a client may take to send a request body, in ms (408 after) [default: 10000].
    #[arg(long, env = "QP_BODY_TIMEOUT_MS")]
    pub body_timeout_ms: Option<u64>,
    /// Connections served at once; more get 503 [default: 32768, capped by the open-file limit].
    #[arg(long, env = "QP_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections one client address (IPv4 address, IPv6 /64) may hold at once; more get 503 too_many_connections. Trusted proxies are not counted, their clients are [default: 512, at most half of max_connections].
    #[arg(long, env = "QP_MAX_CONNECTIONS_PER_ADDRESS")]
    pub max_connections_per_address: Option<usize>,
    /// Answers one user may send per minute [default: 120].
    #[arg(long, env = "QP_ANSWER_RATE_PER_MINUTE", help_heading = "Limits")]
    pub answer_rate_per_minute: Option<u32>,
    /// Answers one user may send in a burst [default: 60].
    #[arg(long, env = "QP_ANSWER_BURST", help_heading = "Limits")]
    pub answer_burst: Option<u32>,
    /// Long-polls (waits, MCP waits, dev inboxes) one agent or user may hold at once, all its tokens together; more get 429 [default: 256].
    #[arg(long, env = "QP_MAX_LONG_POLLS_PER_TOKEN", help_heading = "Limits")]
    pub max_long_polls_per_token: Option<u32>,
    /// How long an answer's Idempotency-Key is remembered, in seconds; older keys are purged [default: 86400].
    #[arg(long, env = "QP_IDEMPOTENCY_KEY_TTL_SECS", help_heading = "Limits")]
    pub idempotency_key_ttl_secs: Option<u64>,
    /// MCP sessions one agent may hold open at once; more get 429 [default: 32].
    #[arg(long, env = "QP_MCP_MAX_SESSIONS_PER_AGENT", help_heading = "Limits")]
    pub mcp_max_sessions_per_agent: Option<u32>,
    /// Web Push: a push service host the server may send browsers' pushes to (`*.` for subdomains); repeat or comma-separate. Replaces the defaults (FCM, WNS, Mozilla, Apple).
    #[arg(
        long,
        env = "QP_WEB_PUSH_ALLOW",
        value_delimiter = ',',
        help_heading = "Push"
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub web_push_allow: Vec<String>,
    /// OAuth: hosts (`host` or `host:port`, comma-separated) whose Client ID Metadata Documents may be fetched although loopback or private (tests only).
    #[arg(
        long,
        env = "QP_OAUTH_CLIENT_ALLOW",
        value_delimiter = ',',
        help_heading = "OAuth"
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oauth_client_allow: Vec<String>,
    /// OAuth: a CA certificate (PEM) to trust when fetching Client ID Metadata Documents, besides the web's roots (tests).
    #[arg(long, env = "QP_OAUTH_CLIENT_CA", help_heading = "OAuth")]
    pub oauth_client_ca: Option<PathBuf>,
    /// OAuth: whom `qp login --url` asks when it names nobody (`--as`): a user id or a name only one person has [default: the server's only person, if it has one].
    #[arg(long, env = "QP_DEFAULT_OWNER", help_heading = "OAuth")]
    pub default_owner: Option<String>,
    /// OAuth: who may approve an agent sign-in (an MCP client's, `qp login --url`) in a room: off, admins (the room's admins: qp admin room add-member --admin) or members. The agent is shown as signed in by its approver and asks only them (see --sign-in-agents-ask) [default: members].
    #[arg(long, env = "QP_AGENT_SIGN_IN", value_parser = crate::sign_in_policy::Approvers::CHOICES, help_heading = "OAuth")]
    pub agent_sign_in: Option<String>,
    /// OAuth: whom an agent made by a sign-in may ask: owner (only the person who approved it, directly) or room (anyone in its room) [default: owner].
    #[arg(long, env = "QP_SIGN_IN_AGENTS_ASK", value_parser = crate::sign_in_policy::Audience::CHOICES, help_heading = "OAuth")]
    pub sign_in_agents_ask: Option<String>,
    /// Web Push: the VAPID key file, made on first start (0600) [default: beside the SQLite database, DB.vapid-key].
    #[arg(long, env = "QP_VAPID_KEY", help_heading = "Push")]
    pub vapid_key: Option<PathBuf>,
    /// An MCP session with no request in flight is closed after this many seconds [default: 300].
    #[arg(long, env = "QP_MCP_SESSION_IDLE_SECS", help_heading = "Limits")]
    pub mcp_session_idle_secs: Option<u64>,
    /// Seconds a keep-alive connection may sit idle (or a client take to send its headers) before it is closed; keep it above the load balancer's idle timeout [default: 75].
    #[arg(long, env = "QP_IDLE_TIMEOUT_SECS", help_heading = "Limits")]
    pub idle_timeout_secs: Option<u64>,
    /// The bearer token /metrics requires (16+ characters; prefer the environment variable, so it is not in `ps`). Without it /metrics answers loopback clients only, and nobody when --behind-proxy.
    // hide_env_values: --help must not print the secret.
    #[arg(long, env = "QP_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<Secret>,
    /// The URL phones and MCP clients reach this server at: pairing links, Web Push, the OAuth issuer and metadata [default: http(s):// + --listen].
    #[arg(long, env = "QP_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// TLS certificate chain (PEM), with --tls-key; re-read when the file changes.
    #[arg(long, env = "QP_TLS_CERT", help_heading = "TLS")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "QP_TLS_KEY", help_heading = "TLS")]
    pub tls_key: Option<PathBuf>,
    /// How often the certificate files are checked for a change, in ms [default: 5000].
    #[arg(long, env = "QP_TLS_RELOAD_MS", help_heading = "TLS")]
    pub tls_reload_ms: Option<u64>,
    /// Get certificates by ACME for this domain (repeat, or comma-separate); TLS-ALPN-01 on --listen, which must be reachable on port 443.
    #[arg(
        long,
        env = "QP_ACME_DOMAIN",
        value_delimiter = ',',
        help_heading = "TLS"
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acme_domain: Vec<String>,
    /// Contact for the CA's notices (mailto:ops@example.com); repeatable.
    #[arg(
        long,
        env = "QP_ACME_CONTACT",
        value_delimiter = ',',
        help_heading = "TLS"
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acme_contact: Vec<String>,
    /// Directory for the ACME account and certificates [default: qp-acme].
    #[arg(long, env = "QP_ACME_CACHE", help_heading = "TLS")]
    pub acme_cache: Option<PathBuf>,
    /// The ACME directory URL [default: Let's Encrypt production; staging: https://acme-staging-v02.api.letsencrypt.org/directory].
    #[arg(long, env = "QP_ACME_DIRECTORY", help_heading = "TLS")]
    pub acme_directory: Option<String>,
    /// An extra CA certificate (PEM) to trust for the ACME server (a private CA).
    #[arg(long, env = "QP_ACME_DIRECTORY_CA", help_heading = "TLS")]
    pub acme_directory_ca: Option<PathBuf>,
    /// A proxy in front terminates TLS: allow plain HTTP beyond loopback.
    #[arg(long, env = "QP_BEHIND_PROXY", help_heading = "TLS")]
    #[serde(default, skip_serializing_if = "is_false")]
    pub behind_proxy: bool,
    /// A proxy (address or network) whose X-Forwarded-For names the client; repeatable.
    #[arg(
        long,
        env = "QP_TRUSTED_PROXY",
        value_delimiter = ',',
        help_heading = "TLS"
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted_proxy: Vec<String>,
    /// End-to-end encrypted pushes: `auto` seals each push to the device's
    /// public key when it registered one (plain for the others); `off` sends
    /// every push plain. Recommended: auto [default: auto].
    #[arg(long, env = "QP_PUSH_ENCRYPTION", value_parser = ["auto", "off"], help_heading = "Push")]
    pub push_encryption: Option<String>,
    /// Do not migrate the database at start-up: refuse one that lacks migrations (run `qp migrate` first, on purpose).
    #[arg(long, env = "QP_NO_MIGRATE", help_heading = "Data")]
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_migrate: bool,
    /// Answered, expired and cancelled questions (with their answers) are deleted this many days after they were asked; 0 keeps them [default: 365].
    #[arg(long, env = "QP_RETENTION_QUESTIONS_DAYS", help_heading = "Data")]
    pub retention_questions_days: Option<u64>,
    /// Sent and failed push jobs are deleted after this many days; 0 keeps them [default: 7].
    #[arg(long, env = "QP_RETENTION_PUSH_JOBS_DAYS", help_heading = "Data")]
    pub retention_push_jobs_days: Option<u64>,
    /// Delivered and failed webhook deliveries are deleted after this many days; 0 keeps them [default: 30].
    #[arg(
        long,
        env = "QP_RETENTION_WEBHOOK_DELIVERIES_DAYS",
        help_heading = "Data"
    )]
    pub retention_webhook_deliveries_days: Option<u64>,
    /// Dev-inbox entries (terminal devices' pushes) are deleted after this many days; 0 keeps them [default: 7].
    #[arg(long, env = "QP_RETENTION_DEV_INBOX_DAYS", help_heading = "Data")]
    pub retention_dev_inbox_days: Option<u64>,
    /// Rows deleted per statement by the retention sweep (small: the writer is shared with requests) [default: 500].
    #[arg(long, env = "QP_RETENTION_BATCH_SIZE", help_heading = "Data")]
    pub retention_batch_size: Option<usize>,
}

impl PartialSettings {
    /// `self` (flags and env) over `file` over the defaults.
    pub fn resolve(self, file: PartialSettings) -> Result<Settings, ConfigError> {
        let m = self.over(file)?;
        let d = Settings::default();
        let ms = |v: Option<u64>, def: Duration| v.map_or(def, Duration::from_millis);
        let secs = |v: Option<u64>, def: Duration| v.map_or(def, Duration::from_secs);
        let or_default = |v: Vec<String>, def: Vec<String>| if v.is_empty() { def } else { v };
        let s = Settings {
            listen: m.listen.unwrap_or(d.listen),
            db: m.db.clone().unwrap_or(d.db),
            db_direct: m.db_direct.clone(),
            sweep_interval: ms(m.sweep_interval_ms, d.sweep_interval),
            ask_rate_per_minute: m.ask_rate_per_minute.unwrap_or(d.ask_rate_per_minute),
            ask_burst: m.ask_burst.unwrap_or(d.ask_burst),
            max_pending_per_agent: m.max_pending_per_agent.unwrap_or(d.max_pending_per_agent),
            webhook_retry_base: ms(m.webhook_retry_base_ms, d.webhook_retry_base),
            webhook_max_attempts: m.webhook_max_attempts.unwrap_or(d.webhook_max_attempts),
            webhook_timeout: ms(m.webhook_timeout_ms, d.webhook_timeout),
            body_timeout: ms(m.body_timeout_ms, d.body_timeout),
            max_connections: m.max_connections.unwrap_or(d.max_connections),
            max_connections_per_address: m
                .max_connections_per_address
                .unwrap_or(d.max_connections_per_address),
            apns: push::apns(&m)?,
            fcm: push::fcm(&m)?,
            public_url: m.public_url.clone(),
            tls: tls::tls_settings(&m)?,
            behind_proxy: m.behind_proxy,
            trusted_proxies: m
                .trusted_proxy
                .iter()
                .map(|p| tls::parse_proxy(p))
                .collect::<Result<_, _>>()?,
            push_encryption: push::push_encryption(&m)?,
            push_lease: ms(m.push_lease_ms, d.push_lease),
            answer_rate_per_minute: m.answer_rate_per_minute.unwrap_or(d.answer_rate_per_minute),
            answer_burst: m.answer_burst.unwrap_or(d.answer_burst),
            max_long_polls_per_token: m
                .max_long_polls_per_token
                .unwrap_or(d.max_long_polls_per_token),
            idempotency_key_ttl: secs(m.idempotency_key_ttl_secs, d.idempotency_key_ttl),
            metrics_token: m
                .metrics_token
                .as_ref()
                .map(|t| metrics_token(t.expose()))
                .transpose()?,
            mcp_max_sessions_per_agent: m
                .mcp_max_sessions_per_agent
                .unwrap_or(d.mcp_max_sessions_per_agent),
            web_push_allow: or_default(m.web_push_allow.clone(), d.web_push_allow),
            vapid_key: m.vapid_key.clone(),
            oauth_client_allow: or_default(m.oauth_client_allow.clone(), d.oauth_client_allow),
            oauth_client_ca: m.oauth_client_ca.clone(),
            default_owner: m
                .default_owner
                .as_deref()
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(str::to_string),
            agent_sign_in: match m.agent_sign_in.as_deref() {
                None => d.agent_sign_in,
                Some(v) => crate::sign_in_policy::Approvers::parse(v)?,
            },
            sign_in_agents_ask: match m.sign_in_agents_ask.as_deref() {
                None => d.sign_in_agents_ask,
                Some(v) => crate::sign_in_policy::Audience::parse(v)?,
            },
            mcp_session_idle: secs(m.mcp_session_idle_secs, d.mcp_session_idle),
            idle_timeout: secs(m.idle_timeout_secs, d.idle_timeout),
            migration: data::migration(&m),
            retention: data::retention(&m)?,
        };
        check(&s)?;
        Ok(s)
    }
}

/// The rules between settings, and each limit letting something through.
fn check(s: &Settings) -> Result<(), ConfigError> {
    database::check_db_direct(s)?;
    limits::check_ask_rate(s)?;
    if s.sweep_interval.is_zero() {
        return Err(ConfigError::at_least_1(&["sweep_interval_ms"]));
    }
    push::check_lease(s.push_lease)?;
    if s.webhook_max_attempts == 0 {
        return Err(ConfigError::at_least_1(&["webhook_max_attempts"]));
    }
    tls::check_plain_http(s)?;
    limits::check_limits(s)
}

/// A scraper's shared secret: long enough not to be guessed, and one
/// header-safe word (it travels as `Authorization: Bearer …`).
fn metrics_token(t: &str) -> Result<Secret, ConfigError> {
    let t = t.trim();
    if t.len() < 16 || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::Invalid {
            key: "metrics_token",
            rule: "must be at least 16 visible ASCII characters, no spaces".into(),
        });
    }
    Ok(Secret::from(t))
}

/// A setting that cannot be used, or a config file that cannot be read:
/// the words name the setting (or the file, the variable) and the rule
/// (`ask_rate_per_minute and ask_burst must be at least 1`), for the
/// operator. Never quotes a secret's value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A setting's value breaks its rule (`push_encryption: must be auto
    /// or off, not "on"`).
    #[error("{key}: {rule}")]
    Invalid { key: &'static str, rule: String },
    /// Settings outside their range (`idle_timeout_secs must be 5 to
    /// 3600`); several keys share one rule (`answer_rate_per_minute and
    /// answer_burst must be at least 1`).
    #[error("{} must be {rule}", .keys.join(" and "))]
    OutOfRange {
        keys: &'static [&'static str],
        rule: String,
    },
    /// Settings that go together, or exclude each other: the rule names
    /// them all (`tls_cert and tls_key go together: give both PEM files`).
    #[error("{rule}")]
    Combination {
        keys: &'static [&'static str],
        rule: &'static str,
    },
    /// Plain HTTP beyond loopback, without a proxy in front that
    /// terminates TLS.
    #[error(
        "refusing to serve plain HTTP on {listen}: phones and tokens need TLS beyond loopback. \
         Give tls_cert and tls_key (--tls-cert/--tls-key), or acme_domain (--acme-domain), \
         or, when a proxy in front terminates TLS, behind_proxy (--behind-proxy)"
    )]
    PlainHttp { listen: SocketAddr },
    /// A file a setting names cannot be read, or does not hold what the
    /// setting wants (`apns_key`, `fcm_service_account`).
    #[error("{key} {}: {reason}", .path.display())]
    File {
        key: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// A setting with a fixed set of choices given another value.
    #[error(transparent)]
    Choice(#[from] crate::sign_in_policy::ChoiceError),
    /// The config file cannot be read.
    #[error("cannot read config file {}: {source}", .path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The config file is not valid TOML, or a key holds the wrong type:
    /// the line and column, and the key when it is one of ours (never a
    /// secret's value).
    #[error("config file {}: {detail}", .path.display())]
    Syntax { path: PathBuf, detail: String },
    /// A file path among the settings is not UTF-8 (the layering of flags
    /// over the file cannot carry it).
    #[error("settings: a file path must be valid UTF-8")]
    NonUtf8Path,
    /// The layered settings do not read back (a value of the wrong type).
    #[error("settings: {0}")]
    Layering(String),
    /// An environment variable's value is refused (clap's words, which
    /// name its flag and the rule).
    #[error("{0}")]
    Environment(String),
    /// A secret's `_FILE` variable names a file that cannot be read or is
    /// empty.
    #[error(transparent)]
    SecretFile(#[from] crate::secret_env::SecretFileError),
    /// A database URL read from a `_FILE` variable cannot be used (not
    /// quoted: it may hold a password).
    #[error("{variable}: {source}")]
    SecretFileUrl {
        variable: &'static str,
        source: crate::store::UrlError,
    },
}

impl ConfigError {
    /// `{key} must be at least 1`: a count or a duration of zero would let
    /// nothing through.
    pub(crate) fn at_least_1(keys: &'static [&'static str]) -> ConfigError {
        ConfigError::OutOfRange {
            keys,
            rule: "at least 1".into(),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `qp serve --help` quotes the listening address the defaults hold.
    #[test]
    fn the_help_quotes_the_default_address() {
        use clap::{Args as _, Command};
        let help = PartialSettings::augment_args(Command::new("serve"))
            .render_long_help()
            .to_string();
        let default = Settings::default().listen.to_string();
        assert_eq!(
            default,
            format!("127.0.0.1:{}", qp_core::protocol::limits::DEFAULT_PORT)
        );
        assert!(
            help.contains(&format!("[default: {default}, loopback only]")),
            "qp serve --help does not quote {default}:\n{help}"
        );
    }

    #[test]
    fn db_direct_is_a_postgres_url_beside_a_postgres_db() {
        let pg = |u: &str| Some(crate::store::Database::Postgres(u.into()));
        let with = |db, direct| PartialSettings {
            db,
            db_direct: direct,
            ..Default::default()
        };
        let ok = with(pg("postgres://qp@pooler/qp"), pg("postgres://qp@db/qp"))
            .resolve(PartialSettings::default())
            .unwrap();
        assert_eq!(ok.db_direct, pg("postgres://qp@db/qp"));
        let err = with(None, pg("postgres://qp@db/qp"))
            .resolve(PartialSettings::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("db_direct: only with a PostgreSQL db"),
            "{err}"
        );
        let file = Some(crate::store::Database::Sqlite("direct.sqlite".into()));
        let err = with(pg("postgres://qp@pooler/qp"), file)
            .resolve(PartialSettings::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("db_direct: must be a postgres:// URL"),
            "{err}"
        );
    }

    #[test]
    fn flags_beat_file_beat_defaults() {
        let file: PartialSettings =
            toml::from_str("ask_burst = 5\nask_rate_per_minute = 7\nsweep_interval_ms = 250")
                .unwrap();
        let flags = PartialSettings {
            ask_burst: Some(9),
            ..Default::default()
        };
        let s = flags.resolve(file).unwrap();
        assert_eq!(s.ask_burst, 9);
        assert_eq!(s.ask_rate_per_minute, 7);
        assert_eq!(s.sweep_interval, Duration::from_millis(250));
        assert_eq!(
            s.max_pending_per_agent,
            Settings::default().max_pending_per_agent
        );
    }

    /// The layering the one declaration relies on: a key given above wins,
    /// a key not given (an absent switch, an empty list) leaves the one
    /// below, and a database URL survives the merge whole.
    #[test]
    fn a_key_given_above_wins_and_one_not_given_leaves_the_file() {
        let file: PartialSettings = toml::from_str(
            "behind_proxy = true\nlisten = \"0.0.0.0:9000\"\ntrusted_proxy = [\"10.0.0.0/8\"]\n\
             web_push_allow = [\"push.example\"]\nask_burst = 5\n\
             db = \"postgres://qp:p%40ss@db.example:5432/qp?sslmode=require\"",
        )
        .unwrap();
        let flags = PartialSettings {
            trusted_proxy: vec!["192.168.1.7".into()],
            ask_burst: Some(9),
            ..Default::default()
        };
        let merged = flags.over(file).unwrap();
        assert!(
            merged.behind_proxy,
            "a switch the flags leave off keeps the file's"
        );
        assert_eq!(
            merged.trusted_proxy,
            ["192.168.1.7"],
            "a list given replaces the file's"
        );
        assert_eq!(merged.web_push_allow, ["push.example"]);
        assert_eq!(merged.ask_burst, Some(9));
        assert_eq!(merged.listen, Some("0.0.0.0:9000".parse().unwrap()));
        let Some(crate::store::Database::Postgres(url)) = &merged.db else {
            panic!("{:?}", merged.db)
        };
        assert_eq!(
            url,
            "postgres://qp:p%40ss@db.example:5432/qp?sslmode=require"
        );
        let s = merged.resolve(PartialSettings::default()).unwrap();
        assert!(s.behind_proxy);
        assert_eq!(s.ask_burst, 9);
        // Every u64 survives the merge (a TOML table could not hold these).
        let huge = PartialSettings {
            retention_questions_days: Some(u64::MAX),
            max_connections: Some(usize::MAX),
            ..Default::default()
        };
        let merged = huge.over(PartialSettings::default()).unwrap();
        assert_eq!(merged.retention_questions_days, Some(u64::MAX));
        assert_eq!(merged.max_connections, Some(usize::MAX));
    }

    /// A value of the wrong type in the file names its key.
    #[test]
    fn a_wrong_type_in_the_file_names_its_key() {
        let text = "listen = \"127.0.0.1:1\"\nask_burst = \"5\"\n";
        let e = toml::from_str::<PartialSettings>(text).unwrap_err();
        let said = toml_error(text, &e);
        assert!(said.starts_with("line 2, column 13: ask_burst: "), "{said}");
    }

    #[test]
    fn plain_http_beyond_loopback_needs_the_proxy_flag() {
        let public = PartialSettings {
            listen: Some("0.0.0.0:8750".parse().unwrap()),
            ..Default::default()
        };
        let e = public
            .clone()
            .resolve(PartialSettings::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("behind_proxy") && e.contains("tls_cert"), "{e}");
        let proxied = PartialSettings {
            behind_proxy: true,
            trusted_proxy: vec!["10.0.0.0/8".into(), "192.168.1.7".into()],
            ..public.clone()
        };
        let s = proxied.resolve(PartialSettings::default()).unwrap();
        assert_eq!(s.trusted_proxies.len(), 2);
        let files = PartialSettings {
            tls_cert: Some("c.pem".into()),
            tls_key: Some("k.pem".into()),
            ..public
        };
        let s = files.resolve(PartialSettings::default()).unwrap();
        assert!(matches!(s.tls, TlsSettings::Files { .. }));
        assert_eq!(s.public_url(), "https://0.0.0.0:8750");
    }

    #[test]
    fn tls_settings_are_checked() {
        let r = |p: PartialSettings| p.resolve(PartialSettings::default());
        let half = PartialSettings {
            tls_cert: Some("c.pem".into()),
            ..Default::default()
        };
        assert!(r(half).unwrap_err().to_string().contains("go together"));
        let both = PartialSettings {
            tls_cert: Some("c.pem".into()),
            tls_key: Some("k.pem".into()),
            acme_domain: vec!["qp.example.com".into()],
            ..Default::default()
        };
        assert!(r(both).unwrap_err().to_string().contains("not both"));
        let bad = PartialSettings {
            acme_domain: vec!["qp example".into()],
            ..Default::default()
        };
        assert!(r(bad).unwrap_err().to_string().contains("not a DNS name"));
        let proxy = PartialSettings {
            trusted_proxy: vec!["nope".into()],
            ..Default::default()
        };
        assert!(r(proxy).unwrap_err().to_string().contains("trusted_proxy"));
        let acme = PartialSettings {
            acme_domain: vec!["QP.example.com, qp2.example.com".into()],
            ..Default::default()
        };
        let s = r(acme).unwrap();
        let TlsSettings::Acme(a) = &s.tls else {
            panic!()
        };
        assert_eq!(a.domains, ["qp.example.com", "qp2.example.com"]);
        assert_eq!(a.directory, LETS_ENCRYPT);
        assert_eq!(s.public_url(), "https://qp.example.com:8750");
    }

    #[test]
    fn unknown_keys_in_the_file_are_errors() {
        assert!(toml::from_str::<PartialSettings>("ask_burts = 5").is_err());
    }

    #[test]
    fn zero_rate_is_refused() {
        let flags = PartialSettings {
            ask_burst: Some(0),
            ..Default::default()
        };
        assert!(flags.resolve(PartialSettings::default()).is_err());
    }

    #[test]
    fn a_push_lease_below_its_budget_minimum_or_past_an_hour_is_refused_by_name() {
        let lease = |ms| {
            PartialSettings {
                push_lease_ms: Some(ms),
                ..Default::default()
            }
            .resolve(PartialSettings::default())
            .map(|s| s.push_lease)
            .map_err(|e| e.to_string())
        };
        assert_eq!(lease(2_000), Ok(Duration::from_secs(2)));
        assert_eq!(lease(3_600_000), Ok(Duration::from_secs(3600)));
        assert_eq!(push::MIN_PUSH_LEASE, Duration::from_secs(2));
        for ms in [0, 1_000, 1_999, 3_600_001, u64::MAX] {
            let err = lease(ms).unwrap_err().to_string();
            assert!(
                err.contains("push_lease_ms must be 2000 to 3600000"),
                "{ms}: {err}"
            );
        }
    }

    #[test]
    fn the_per_token_limits_resolve_and_bad_ones_name_their_setting() {
        let file: PartialSettings = toml::from_str(
            "answer_burst = 5\nmax_long_polls_per_token = 8\nmcp_session_idle_secs = 60\n\
             metrics_token = \"scrape-secret-0123456789\"",
        )
        .unwrap();
        let s = PartialSettings::default().resolve(file).unwrap();
        assert_eq!((s.answer_burst, s.answer_rate_per_minute), (5, 120));
        assert_eq!(s.max_long_polls_per_token, 8);
        assert_eq!(s.mcp_session_idle, Duration::from_secs(60));
        assert_eq!(
            s.metrics_token.as_ref().map(|t| t.expose().as_str()),
            Some("scrape-secret-0123456789")
        );
        // Never in a settings dump.
        let dump = format!("{s:?}");
        assert!(!dump.contains("scrape-secret"), "{dump}");
        assert!(dump.contains("metrics_token: Some(Secret(…))"), "{dump}");
        let bad = |p: PartialSettings| {
            p.resolve(PartialSettings::default())
                .unwrap_err()
                .to_string()
        };
        let short = PartialSettings {
            metrics_token: Some("short".into()),
            ..Default::default()
        };
        assert!(bad(short).contains("metrics_token: must be at least 16"));
        let zero = PartialSettings {
            max_long_polls_per_token: Some(0),
            ..Default::default()
        };
        assert!(bad(zero).contains("max_long_polls_per_token"));
        let brief = PartialSettings {
            idempotency_key_ttl_secs: Some(5),
            ..Default::default()
        };
        assert!(bad(brief).contains("idempotency_key_ttl_secs"));
    }
}
