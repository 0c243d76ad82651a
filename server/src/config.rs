//! Server settings. Each comes from a flag, else an environment variable
//! (clap reads both), else the config file, else the default.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

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
    /// APNs, when configured (`--apns-key` and friends).
    pub apns: Option<crate::push::apns::ApnsConfig>,
    /// FCM, when configured (`--fcm-service-account`).
    pub fcm: Option<crate::push::fcm::FcmConfig>,
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
    pub metrics_token: Option<String>,
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
    /// An MCP session with no request in flight is closed after this long.
    pub mcp_session_idle: Duration,
    /// How long a keep-alive connection may sit idle (and a client take to
    /// send its headers) before it is closed: above the load balancers'
    /// own idle timeouts (ALB 60 s, nginx 60 s), so that they, not we,
    /// close first and never send into a closing connection (a 502).
    pub idle_timeout: Duration,
    // -- data lifecycle (issue 34: retention, upgrades) --
    /// Whether start-up migrates the database (`Apply`), or refuses one
    /// that lacks migrations (`Require`: `--no-migrate`, after `qp migrate`).
    pub migration: crate::store::Migration,
    /// How long each kind of finished row is kept (see
    /// [`crate::store::retention`]); `None`: forever.
    pub retention: crate::store::retention::Retention,
}

/// Where the server's certificate comes from.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum TlsSettings {
    /// Plain HTTP.
    #[default]
    Off,
    /// PEM files, re-read when they change (checked every `reload_interval`),
    /// so a renewal by an outside tool needs no restart.
    Files {
        cert: PathBuf,
        key: PathBuf,
        reload_interval: Duration,
    },
    /// Certificates from an ACME CA (Let's Encrypt by default), answered by
    /// TLS-ALPN-01 on this listener, cached on disk, renewed before expiry.
    Acme(AcmeSettings),
}

#[derive(Debug, Clone, PartialEq)]
pub struct AcmeSettings {
    pub domains: Vec<String>,
    /// `mailto:` addresses for the CA's expiry notices.
    pub contact: Vec<String>,
    /// Account key and certificates live here between runs.
    pub cache: PathBuf,
    /// The CA's directory URL (staging and private CAs welcome).
    pub directory: String,
    /// An extra CA certificate (PEM) to trust for the ACME server itself
    /// (a private CA, or a test CA such as Pebble's).
    pub directory_ca: Option<PathBuf>,
}

/// The default `idle_timeout_secs`: above common load balancers' idle
/// timeouts (AWS ALB and nginx 60 s), below the odd ones that keep upstream
/// connections for minutes (set it above theirs there).
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 75;

/// Let's Encrypt's production directory.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

impl Settings {
    /// The base URL that goes into pairing links.
    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| self.url_of(self.listen))
            .trim_end_matches('/')
            .to_string()
    }

    /// This server's URL when listening on `addr` (the bound address once
    /// port 0 is resolved): the scheme its TLS setting gives, and with
    /// ACME the certificate's first domain.
    pub fn url_of(&self, addr: SocketAddr) -> String {
        match &self.tls {
            TlsSettings::Off => format!("http://{addr}"),
            TlsSettings::Files { .. } => format!("https://{addr}"),
            TlsSettings::Acme(a) => match addr.port() {
                443 => format!("https://{}", a.domains[0]),
                port => format!("https://{}:{port}", a.domains[0]),
            },
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8750)),
            db: crate::store::Database::Sqlite(PathBuf::from("qp.sqlite")),
            db_direct: None,
            sweep_interval: Duration::from_millis(1000),
            ask_rate_per_minute: 60,
            ask_burst: 20,
            max_pending_per_agent: 1000,
            webhook_retry_base: qp_core::retry::RetryPolicy::WEBHOOK.min,
            webhook_max_attempts: 10,
            webhook_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: 32_768,
            apns: None,
            fcm: None,
            public_url: None,
            tls: TlsSettings::Off,
            behind_proxy: false,
            trusted_proxies: Vec::new(),
            push_encryption: true,
            answer_rate_per_minute: 120,
            answer_burst: 60,
            max_long_polls_per_token: 256,
            idempotency_key_ttl: Duration::from_secs(24 * 3600),
            metrics_token: None,
            mcp_max_sessions_per_agent: 32,
            web_push_allow: Vec::new(),
            vapid_key: None,
            oauth_client_allow: Vec::new(),
            oauth_client_ca: None,
            default_owner: None,
            mcp_session_idle: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
            migration: crate::store::Migration::Apply,
            retention: crate::store::retention::Retention::default(),
        }
    }
}

/// A TOML error without the line it is on: toml's own rendering quotes
/// that line, and it may hold a secret (a `db` URL whose password has a
/// `"` or `\` in it, `metrics_token`; issue 32, finding 9). The line and
/// column, and toml's words, which name a key or what was expected; on a
/// line that sets a secret, not even those (a wrong type quotes the value).
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let Some(span) = e.span() else {
        return e.message().to_string();
    };
    let before = text.get(..span.start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    let line_text = text.lines().nth(line - 1).unwrap_or_default();
    let key = line_text.split('=').next().unwrap_or_default().trim();
    let key = key.trim_matches(|c| c == '"' || c == '\'');
    if ["db", "db_direct", "metrics_token"].contains(&key) {
        return format!(
            "line {line}, column {column}: the value of {key} is not valid (not shown: it may \
             hold a secret); in \"…\" write \" as \\\" and \\ as \\\\, or use '…'"
        );
    }
    format!("line {line}, column {column}: {}", e.message())
}

/// Every key of the config file, as the server reads them: the field
/// names serde's derive gives [`PartialSettings`] (so a new setting is a
/// new key here without another list to keep).
pub fn config_keys() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Grab(Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for &mut Grab {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only structs"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("names taken"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut grab = Grab(None);
    let _ = <PartialSettings as serde::Deserialize>::deserialize(&mut grab);
    grab.0.unwrap_or_default()
}

/// Settings that may each be missing: what flags/env give, or a config file.
/// The file uses the same names, e.g. `listen = "127.0.0.1:8750"`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialSettings {
    pub listen: Option<SocketAddr>,
    pub db: Option<crate::store::Database>,
    pub db_direct: Option<crate::store::Database>,
    pub sweep_interval_ms: Option<u64>,
    pub ask_rate_per_minute: Option<u32>,
    pub ask_burst: Option<u32>,
    pub max_pending_per_agent: Option<u32>,
    pub webhook_retry_base_ms: Option<u64>,
    pub webhook_max_attempts: Option<u32>,
    pub webhook_timeout_ms: Option<u64>,
    pub body_timeout_ms: Option<u64>,
    pub max_connections: Option<usize>,
    pub apns_key: Option<PathBuf>,
    pub apns_key_id: Option<String>,
    pub apns_team_id: Option<String>,
    pub apns_base_url: Option<String>,
    pub apns_sandbox: Option<bool>,
    pub fcm_service_account: Option<PathBuf>,
    pub fcm_base_url: Option<String>,
    pub public_url: Option<String>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_reload_ms: Option<u64>,
    pub acme_domain: Option<Vec<String>>,
    pub acme_contact: Option<Vec<String>>,
    pub acme_cache: Option<PathBuf>,
    pub acme_directory: Option<String>,
    pub acme_directory_ca: Option<PathBuf>,
    pub behind_proxy: Option<bool>,
    pub trusted_proxy: Option<Vec<String>>,
    /// `auto` or `off`.
    pub push_encryption: Option<String>,
    pub answer_rate_per_minute: Option<u32>,
    pub answer_burst: Option<u32>,
    pub max_long_polls_per_token: Option<u32>,
    pub idempotency_key_ttl_secs: Option<u64>,
    pub metrics_token: Option<String>,
    pub mcp_max_sessions_per_agent: Option<u32>,
    pub web_push_allow: Option<Vec<String>>,
    pub vapid_key: Option<PathBuf>,
    pub oauth_client_allow: Option<Vec<String>>,
    pub oauth_client_ca: Option<PathBuf>,
    pub default_owner: Option<String>,
    pub mcp_session_idle_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    // -- data lifecycle (issue 34) --
    pub no_migrate: Option<bool>,
    pub retention_questions_days: Option<u64>,
    pub retention_push_jobs_days: Option<u64>,
    pub retention_webhook_deliveries_days: Option<u64>,
    pub retention_dev_inbox_days: Option<u64>,
    pub retention_batch_size: Option<usize>,
}

impl PartialSettings {
    /// Reads a TOML config file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
        toml::from_str(&text)
            .map_err(|e| format!("config file {}: {}", path.display(), toml_error(&text, &e)))
    }

    /// `self` (flags and env) over `file` over the defaults.
    pub fn resolve(self, file: PartialSettings) -> Result<Settings, String> {
        let d = Settings::default();
        let (retention, no_migrate) = (
            retention(&self, &file)?,
            self.no_migrate.or(file.no_migrate).unwrap_or(false),
        );
        let ms = |a: Option<u64>, b: Option<u64>, def: Duration| {
            a.or(b).map(Duration::from_millis).unwrap_or(def)
        };
        let s = Settings {
            listen: self.listen.or(file.listen).unwrap_or(d.listen),
            db: self.db.or(file.db).unwrap_or(d.db),
            db_direct: self.db_direct.or(file.db_direct),
            sweep_interval: ms(
                self.sweep_interval_ms,
                file.sweep_interval_ms,
                d.sweep_interval,
            ),
            ask_rate_per_minute: self
                .ask_rate_per_minute
                .or(file.ask_rate_per_minute)
                .unwrap_or(d.ask_rate_per_minute),
            ask_burst: self.ask_burst.or(file.ask_burst).unwrap_or(d.ask_burst),
            max_pending_per_agent: self
                .max_pending_per_agent
                .or(file.max_pending_per_agent)
                .unwrap_or(d.max_pending_per_agent),
            webhook_retry_base: ms(
                self.webhook_retry_base_ms,
                file.webhook_retry_base_ms,
                d.webhook_retry_base,
            ),
            webhook_max_attempts: self
                .webhook_max_attempts
                .or(file.webhook_max_attempts)
                .unwrap_or(d.webhook_max_attempts),
            webhook_timeout: ms(
                self.webhook_timeout_ms,
                file.webhook_timeout_ms,
                d.webhook_timeout,
            ),
            body_timeout: ms(self.body_timeout_ms, file.body_timeout_ms, d.body_timeout),
            max_connections: self
                .max_connections
                .or(file.max_connections)
                .unwrap_or(d.max_connections),
            apns: None,
            fcm: None,
            public_url: self.public_url.or(file.public_url),
            tls: TlsSettings::Off,
            behind_proxy: self.behind_proxy.or(file.behind_proxy).unwrap_or(false),
            trusted_proxies: self
                .trusted_proxy
                .or(file.trusted_proxy)
                .unwrap_or_default()
                .iter()
                .map(|p| parse_proxy(p))
                .collect::<Result<_, _>>()?,
            push_encryption: match self.push_encryption.or(file.push_encryption).as_deref() {
                None | Some("auto") => true,
                Some("off") => false,
                Some(other) => {
                    return Err(format!(
                        "push_encryption: must be auto or off, not {other:?}"
                    ))
                }
            },
            // The limits below are resolved after TLS.
            ..Settings::default()
        };
        let tls = tls_settings(
            (
                self.tls_cert.or(file.tls_cert),
                self.tls_key.or(file.tls_key),
            ),
            self.tls_reload_ms.or(file.tls_reload_ms),
            self.acme_domain.or(file.acme_domain).unwrap_or_default(),
            AcmeSettings {
                domains: Vec::new(),
                contact: self.acme_contact.or(file.acme_contact).unwrap_or_default(),
                cache: self
                    .acme_cache
                    .or(file.acme_cache)
                    .unwrap_or_else(|| PathBuf::from("qp-acme")),
                directory: self
                    .acme_directory
                    .or(file.acme_directory)
                    .unwrap_or_else(|| LETS_ENCRYPT.to_string()),
                directory_ca: self.acme_directory_ca.or(file.acme_directory_ca),
            },
        )?;
        let s = Settings { tls, ..s };
        let s = Settings {
            answer_rate_per_minute: self
                .answer_rate_per_minute
                .or(file.answer_rate_per_minute)
                .unwrap_or(d.answer_rate_per_minute),
            answer_burst: self
                .answer_burst
                .or(file.answer_burst)
                .unwrap_or(d.answer_burst),
            max_long_polls_per_token: self
                .max_long_polls_per_token
                .or(file.max_long_polls_per_token)
                .unwrap_or(d.max_long_polls_per_token),
            idempotency_key_ttl: self
                .idempotency_key_ttl_secs
                .or(file.idempotency_key_ttl_secs)
                .map_or(d.idempotency_key_ttl, Duration::from_secs),
            metrics_token: self
                .metrics_token
                .or(file.metrics_token)
                .map(|t| metrics_token(&t))
                .transpose()?,
            mcp_max_sessions_per_agent: self
                .mcp_max_sessions_per_agent
                .or(file.mcp_max_sessions_per_agent)
                .unwrap_or(d.mcp_max_sessions_per_agent),
            web_push_allow: self
                .web_push_allow
                .or(file.web_push_allow)
                .unwrap_or(d.web_push_allow),
            vapid_key: self.vapid_key.or(file.vapid_key),
            oauth_client_allow: self
                .oauth_client_allow
                .or(file.oauth_client_allow)
                .unwrap_or(d.oauth_client_allow),
            oauth_client_ca: self.oauth_client_ca.or(file.oauth_client_ca),
            default_owner: self
                .default_owner
                .or(file.default_owner)
                .map(|o| o.trim().to_string())
                .filter(|o| !o.is_empty()),
            mcp_session_idle: self
                .mcp_session_idle_secs
                .or(file.mcp_session_idle_secs)
                .map_or(d.mcp_session_idle, Duration::from_secs),
            idle_timeout: self
                .idle_timeout_secs
                .or(file.idle_timeout_secs)
                .map_or(d.idle_timeout, Duration::from_secs),
            ..s
        };
        check_limits(&s)?;
        let s = Settings {
            migration: if no_migrate {
                crate::store::Migration::Require
            } else {
                crate::store::Migration::Apply
            },
            retention,
            ..s
        };
        let apns_key = self.apns_key.or(file.apns_key);
        let apns_key_id = self.apns_key_id.or(file.apns_key_id);
        let apns_team_id = self.apns_team_id.or(file.apns_team_id);
        let sandbox = self.apns_sandbox.or(file.apns_sandbox).unwrap_or(false);
        let apns_base = self.apns_base_url.or(file.apns_base_url);
        let s = Settings {
            apns: match (apns_key, apns_key_id, apns_team_id) {
                (None, None, None) => None,
                (Some(key), Some(key_id), Some(team_id)) => Some({
                    let (key_file, key_pem) = crate::push::key_file::WatchedFile::read(&key)
                        .map_err(|e| format!("apns_key {}: {e}", key.display()))?;
                    crate::push::apns::ApnsConfig {
                        base_url: apns_base.unwrap_or_else(|| {
                            let url = if sandbox {
                                crate::push::apns::APNS_SANDBOX
                            } else {
                                crate::push::apns::APNS_PRODUCTION
                            };
                            url.to_string()
                        }),
                        team_id,
                        key_id,
                        key_pem,
                        // Read again when it changes, like the TLS files.
                        key_file: Some(key_file),
                        token_ttl: crate::push::apns::TOKEN_TTL,
                        max_connections: crate::push::apns::MAX_CONNECTIONS,
                    }
                }),
                _ => {
                    return Err(
                        "APNs needs all three of apns_key, apns_key_id and apns_team_id".into(),
                    )
                }
            },
            fcm: match self.fcm_service_account.or(file.fcm_service_account) {
                None => None,
                Some(path) => Some({
                    let (account_file, account_json) =
                        crate::push::key_file::WatchedFile::read(&path)
                            .map_err(|e| format!("fcm_service_account {}: {e}", path.display()))?;
                    crate::push::fcm::FcmConfig {
                        base_url: self
                            .fcm_base_url
                            .or(file.fcm_base_url)
                            .unwrap_or_else(|| crate::push::fcm::FCM_BASE.to_string()),
                        account: crate::push::fcm::FcmTransport::account_from_bytes(&account_json)
                            .map_err(|e| format!("fcm_service_account {}: {e}", path.display()))?,
                        account_file: Some(account_file),
                        max_connections: crate::push::fcm::MAX_CONNECTIONS,
                    }
                }),
            },
            ..s
        };
        match (&s.db, &s.db_direct) {
            (_, None) | (crate::store::Database::Postgres(_), Some(crate::store::Database::Postgres(_))) => {}
            (_, Some(crate::store::Database::Sqlite(_))) => {
                return Err("db_direct: must be a postgres:// URL (the same database as db, without a pooler between)".into())
            }
            (crate::store::Database::Sqlite(_), Some(_)) => {
                return Err("db_direct: only with a PostgreSQL db (an SQLite file has no pooler and no LISTEN)".into())
            }
        }
        if s.ask_rate_per_minute == 0 || s.ask_burst == 0 {
            return Err("ask_rate_per_minute and ask_burst must be at least 1".into());
        }
        if s.sweep_interval.is_zero() {
            return Err("sweep_interval_ms must be at least 1".into());
        }
        if s.webhook_max_attempts == 0 {
            return Err("webhook_max_attempts must be at least 1".into());
        }
        if s.tls == TlsSettings::Off && !s.behind_proxy && !s.listen.ip().is_loopback() {
            return Err(format!(
                "refusing to serve plain HTTP on {}: phones and tokens need TLS beyond loopback. \
                 Give tls_cert and tls_key (--tls-cert/--tls-key), or acme_domain (--acme-domain), \
                 or, when a proxy in front terminates TLS, behind_proxy (--behind-proxy)",
                s.listen
            ));
        }
        Ok(s)
    }
}

/// The resource limits of issue 32: each must let something through.
fn check_limits(s: &Settings) -> Result<(), String> {
    if s.answer_rate_per_minute == 0 || s.answer_burst == 0 {
        return Err("answer_rate_per_minute and answer_burst must be at least 1".into());
    }
    if s.max_long_polls_per_token == 0 {
        return Err("max_long_polls_per_token must be at least 1".into());
    }
    if s.idempotency_key_ttl < Duration::from_secs(60) {
        return Err(
            "idempotency_key_ttl_secs must be at least 60 (clients retry within it)".into(),
        );
    }
    if s.mcp_max_sessions_per_agent == 0 {
        return Err("mcp_max_sessions_per_agent must be at least 1".into());
    }
    if !(10..=86_400).contains(&s.mcp_session_idle.as_secs()) {
        return Err("mcp_session_idle_secs must be 10 to 86400 (a day)".into());
    }
    if !(5..=3600).contains(&s.idle_timeout.as_secs()) {
        return Err("idle_timeout_secs must be 5 to 3600".into());
    }
    Ok(())
}

/// The retention settings: days (0 keeps forever) and the batch size.
fn retention(
    flags: &PartialSettings,
    file: &PartialSettings,
) -> Result<crate::store::retention::Retention, String> {
    let d = crate::store::retention::Retention::default();
    let days = |a: Option<u64>, b: Option<u64>, def: Option<Duration>| match a.or(b) {
        None => def,
        Some(0) => None,
        Some(n) => Some(Duration::from_secs(n.saturating_mul(86_400))),
    };
    let batch_size = flags
        .retention_batch_size
        .or(file.retention_batch_size)
        .unwrap_or(d.batch_size);
    if !(1..=100_000).contains(&batch_size) {
        return Err("retention_batch_size must be 1 to 100000".into());
    }
    Ok(crate::store::retention::Retention {
        questions: days(
            flags.retention_questions_days,
            file.retention_questions_days,
            d.questions,
        ),
        push_jobs: days(
            flags.retention_push_jobs_days,
            file.retention_push_jobs_days,
            d.push_jobs,
        ),
        webhook_deliveries: days(
            flags.retention_webhook_deliveries_days,
            file.retention_webhook_deliveries_days,
            d.webhook_deliveries,
        ),
        dev_inbox: days(
            flags.retention_dev_inbox_days,
            file.retention_dev_inbox_days,
            d.dev_inbox,
        ),
        batch_size,
    })
}

/// A scraper's shared secret: long enough not to be guessed, and one
/// header-safe word (it travels as `Authorization: Bearer …`).
fn metrics_token(t: &str) -> Result<String, String> {
    let t = t.trim();
    if t.len() < 16 || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "metrics_token: must be at least 16 visible ASCII characters, no spaces".into(),
        );
    }
    Ok(t.to_string())
}

/// An address or a network (`10.0.0.7`, `10.0.0.0/8`, `::1`).
fn parse_proxy(p: &str) -> Result<ipnet::IpNet, String> {
    let p = p.trim();
    p.parse::<ipnet::IpNet>()
        .or_else(|_| p.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("trusted_proxy: {p:?} is not an IP address or network (10.0.0.0/8)"))
}

/// Files, ACME or nothing; never both.
fn tls_settings(
    files: (Option<PathBuf>, Option<PathBuf>),
    reload_ms: Option<u64>,
    domains: Vec<String>,
    acme: AcmeSettings,
) -> Result<TlsSettings, String> {
    let domains: Vec<String> = domains
        .iter()
        .flat_map(|d| d.split(','))
        .map(|d| d.trim().to_ascii_lowercase())
        .filter(|d| !d.is_empty())
        .collect();
    match (files, domains.is_empty()) {
        ((None, None), true) => Ok(TlsSettings::Off),
        ((Some(cert), Some(key)), true) => Ok(TlsSettings::Files {
            cert,
            key,
            reload_interval: Duration::from_millis(reload_ms.unwrap_or(5_000).max(100)),
        }),
        ((None, None), false) => {
            if let Some(bad) = domains.iter().find(|d| {
                d.len() > 253
                    || !d
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            }) {
                return Err(format!("acme_domain: {bad:?} is not a DNS name"));
            }
            Ok(TlsSettings::Acme(AcmeSettings { domains, ..acme }))
        }
        ((Some(_), None), _) | ((None, Some(_)), _) => {
            Err("tls_cert and tls_key go together: give both PEM files".into())
        }
        ((Some(_), Some(_)), false) => {
            Err("give either tls_cert/tls_key or acme_domain, not both".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .unwrap_err();
        assert!(
            err.starts_with("db_direct: only with a PostgreSQL db"),
            "{err}"
        );
        let file = Some(crate::store::Database::Sqlite("direct.sqlite".into()));
        let err = with(pg("postgres://qp@pooler/qp"), file)
            .resolve(PartialSettings::default())
            .unwrap_err();
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

    #[test]
    fn plain_http_beyond_loopback_needs_the_proxy_flag() {
        let public = PartialSettings {
            listen: Some("0.0.0.0:8750".parse().unwrap()),
            ..Default::default()
        };
        let e = public
            .clone()
            .resolve(PartialSettings::default())
            .unwrap_err();
        assert!(e.contains("behind_proxy") && e.contains("tls_cert"), "{e}");
        let proxied = PartialSettings {
            behind_proxy: Some(true),
            trusted_proxy: Some(vec!["10.0.0.0/8".into(), "192.168.1.7".into()]),
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
        assert!(r(half).unwrap_err().contains("go together"));
        let both = PartialSettings {
            tls_cert: Some("c.pem".into()),
            tls_key: Some("k.pem".into()),
            acme_domain: Some(vec!["qp.example.com".into()]),
            ..Default::default()
        };
        assert!(r(both).unwrap_err().contains("not both"));
        let bad = PartialSettings {
            acme_domain: Some(vec!["qp example".into()]),
            ..Default::default()
        };
        assert!(r(bad).unwrap_err().contains("not a DNS name"));
        let proxy = PartialSettings {
            trusted_proxy: Some(vec!["nope".into()]),
            ..Default::default()
        };
        assert!(r(proxy).unwrap_err().contains("trusted_proxy"));
        let acme = PartialSettings {
            acme_domain: Some(vec!["QP.example.com, qp2.example.com".into()]),
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
        assert_eq!(s.metrics_token.as_deref(), Some("scrape-secret-0123456789"));
        let bad = |p: PartialSettings| p.resolve(PartialSettings::default()).unwrap_err();
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
