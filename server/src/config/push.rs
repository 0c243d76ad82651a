//! The push settings: APNs and FCM credentials (read, and watched for
//! changes, from their files), the gateways' addresses, Web Push, the
//! encryption of pushes and the worker's lease. Each is read by `push`,
//! which builds its transports from these.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{ConfigError, PartialSettings};

/// APNs' production gateway (`--apns-base-url`'s default).
pub const APNS_PRODUCTION: &str = "https://api.push.apple.com";
/// APNs' sandbox gateway (`--apns-sandbox`: development builds).
pub const APNS_SANDBOX: &str = "https://api.sandbox.push.apple.com";
/// How long an APNs provider token is reused.
pub const APNS_TOKEN_TTL: Duration = Duration::from_secs(50 * 60);
/// HTTP/2 connections to APNs at most: each carries up to the streams APNs
/// advertises (500 today); another opens only when those are all busy.
pub const APNS_MAX_CONNECTIONS: usize = 4;

/// FCM's gateway (`--fcm-base-url`'s default).
pub const FCM_BASE: &str = "https://fcm.googleapis.com";
/// HTTP/2 connections to FCM at most (each multiplexes up to the streams
/// FCM advertises).
pub const FCM_MAX_CONNECTIONS: usize = 4;

/// `push_encryption`'s default: `auto`, every push sealed to the device's
/// key when it registered one.
pub const DEFAULT_PUSH_ENCRYPTION: bool = true;

/// `push_lease_ms`'s default: how long the push worker's claim on a job
/// lasts (`push::budget::LEASE`).
pub const DEFAULT_PUSH_LEASE: Duration = Duration::from_secs(60);

/// How long one push outcome write waits for another writer's lock
/// (`push::WRITE_TRY_WAIT`): the shortest lease must leave room for it.
pub const WRITE_TRY_WAIT: Duration = Duration::from_millis(500);

/// The shortest lease `push_lease_ms` accepts. The lease drives the
/// push budget: under a lease shorter than [`DEFAULT_PUSH_LEASE`] a send
/// is cut off sooner (`push::budget::send_cap`; the server warns at
/// start), but the cut-off leaves a quarter of such a lease for recording
/// the outcome, which must hold at least one outcome write's lock wait
/// ([`WRITE_TRY_WAIT`]).
pub const MIN_PUSH_LEASE: Duration = Duration::from_millis(4 * WRITE_TRY_WAIT.as_millis() as u64);

/// The longest lease `push_lease_ms` accepts: a crashed instance's claimed
/// pushes wait this long at most.
pub const MAX_PUSH_LEASE: Duration = Duration::from_secs(3600);

/// How often a watched key file is looked at, by default.
pub const CHECK_EVERY: Duration = Duration::from_secs(5);

/// APNs token authentication.
#[derive(Debug, Clone)]
pub struct ApnsConfig {
    /// `APNS_PRODUCTION`, `APNS_SANDBOX`, or a test server.
    pub base_url: String,
    pub team_id: String,
    pub key_id: String,
    /// The `.p8` key (PKCS#8 PEM).
    pub key_pem: crate::secret::Secret<Vec<u8>>,
    /// The file `key_pem` was read from, read again when it changes (a
    /// key redeployed by a secret manager); none: the key is fixed.
    pub key_file: Option<WatchedFile>,
    pub token_ttl: Duration,
    /// HTTP/2 connections at most ([`APNS_MAX_CONNECTIONS`]).
    pub max_connections: usize,
}

/// The fields of a Firebase service-account JSON file that are used.
#[derive(Debug, Clone, Deserialize)]
pub struct ServiceAccount {
    pub project_id: String,
    pub client_email: String,
    pub private_key: crate::secret::Secret,
    pub token_uri: String,
}

impl ServiceAccount {
    /// A service account from its JSON.
    pub fn from_json(bytes: &[u8]) -> Result<ServiceAccount, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not a service account: {e}"))
    }
}

/// FCM HTTP v1.
#[derive(Debug, Clone)]
pub struct FcmConfig {
    /// `FCM_BASE` or a test server.
    pub base_url: String,
    pub account: ServiceAccount,
    /// The file `account` was read from, read again when it changes (a
    /// rotated service-account key); none: the account is fixed.
    pub account_file: Option<WatchedFile>,
    /// HTTP/2 connections at most ([`FCM_MAX_CONNECTIONS`]).
    pub max_connections: usize,
}

/// The file a credential came from, and how often to look at it
/// (`push::key_file::Reloading` reads it again when it changes).
#[derive(Debug, Clone)]
pub struct WatchedFile {
    pub path: PathBuf,
    pub every: Duration,
    /// The file's version when the credential was first read from it.
    pub(crate) seen: Stamp,
    /// What was read then.
    pub(crate) first_bytes: Option<Vec<u8>>,
}

impl WatchedFile {
    /// Reads `path` (the credential's first version) and watches it from
    /// there: the version is noted before the read.
    pub fn read(path: impl Into<PathBuf>) -> std::io::Result<(Self, Vec<u8>)> {
        Self::read_every(path, CHECK_EVERY)
    }

    /// [`WatchedFile::read`], looked at every `every` (tests: shorter).
    pub fn read_every(
        path: impl Into<PathBuf>,
        every: Duration,
    ) -> std::io::Result<(Self, Vec<u8>)> {
        let path = path.into();
        let seen = stamp(&path);
        let bytes = std::fs::read(&path)?;
        Ok((
            WatchedFile {
                path,
                every,
                seen,
                first_bytes: Some(bytes.clone()),
            },
            bytes,
        ))
    }
}

pub(crate) const NO_FILE: Stamp = (None, 0, 0, 0, 0, 0);

/// What identifies a version of the file: its modification and status
/// change times (a `chmod` that makes it readable changes only the
/// latter), its size, and which file it is (a symlink swapped to another
/// file, as Kubernetes updates a secret, with a copied `mtime`).
pub(crate) type Stamp = (Option<std::time::SystemTime>, i64, i64, u64, u64, u64);

pub(crate) fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => (
            m.modified().ok(),
            m.ctime(),
            m.ctime_nsec(),
            m.len(),
            m.dev(),
            m.ino(),
        ),
        Err(_) => (None, 0, 0, 0, 0, 0),
    }
}

/// APNs: all three of key, key id and team id, or none.
pub(super) fn apns(m: &PartialSettings) -> Result<Option<ApnsConfig>, ConfigError> {
    let (key, key_id, team_id) = match (&m.apns_key, &m.apns_key_id, &m.apns_team_id) {
        (None, None, None) => return Ok(None),
        (Some(key), Some(key_id), Some(team_id)) => (key, key_id, team_id),
        _ => {
            return Err(ConfigError::Combination {
                keys: &["apns_key", "apns_key_id", "apns_team_id"],
                rule: "APNs needs all three of apns_key, apns_key_id and apns_team_id",
            })
        }
    };
    let (key_file, key_pem) = WatchedFile::read(key).map_err(|e| ConfigError::File {
        key: "apns_key",
        path: key.clone(),
        reason: e.to_string(),
    })?;
    let base_url = m.apns_base_url.clone().unwrap_or_else(|| {
        let url = if m.apns_sandbox {
            APNS_SANDBOX
        } else {
            APNS_PRODUCTION
        };
        url.to_string()
    });
    Ok(Some(ApnsConfig {
        base_url,
        team_id: team_id.clone(),
        key_id: key_id.clone(),
        key_pem: key_pem.into(),
        // Read again when it changes, like the TLS files.
        key_file: Some(key_file),
        token_ttl: APNS_TOKEN_TTL,
        max_connections: APNS_MAX_CONNECTIONS,
    }))
}

/// FCM HTTP v1, when a service account is given.
pub(super) fn fcm(m: &PartialSettings) -> Result<Option<FcmConfig>, ConfigError> {
    let Some(path) = &m.fcm_service_account else {
        return Ok(None);
    };
    let unusable = |reason: String| ConfigError::File {
        key: "fcm_service_account",
        path: path.clone(),
        reason,
    };
    let (account_file, account_json) =
        WatchedFile::read(path).map_err(|e| unusable(e.to_string()))?;
    Ok(Some(FcmConfig {
        base_url: m
            .fcm_base_url
            .clone()
            .unwrap_or_else(|| FCM_BASE.to_string()),
        account: ServiceAccount::from_json(&account_json).map_err(unusable)?,
        account_file: Some(account_file),
        max_connections: FCM_MAX_CONNECTIONS,
    }))
}

/// `push_encryption`: `auto` (the default) or `off`.
pub(super) fn push_encryption(m: &PartialSettings) -> Result<bool, ConfigError> {
    match m.push_encryption.as_deref() {
        None => Ok(DEFAULT_PUSH_ENCRYPTION),
        Some("auto") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(ConfigError::Invalid {
            key: "push_encryption",
            rule: format!("must be auto or off, not {other:?}"),
        }),
    }
}

/// The lease drives the push budget (a send is cut off to fit it), but
/// below its minimum not even one outcome write fits what the cut-off
/// leaves ([`MIN_PUSH_LEASE`]). A lease past an hour leaves a crashed
/// instance's claimed pushes undelivered for that long, and one near the
/// integer limits would overflow the claim's deadline.
pub(super) fn check_lease(lease: Duration) -> Result<(), ConfigError> {
    let min = MIN_PUSH_LEASE.as_millis();
    if lease < MIN_PUSH_LEASE || lease > MAX_PUSH_LEASE {
        return Err(ConfigError::OutOfRange {
            keys: &["push_lease_ms"],
            rule: format!(
                "{min} to {}: below {min} ms the time the worker keeps \
                 for recording a push's outcome (a quarter of the lease) cannot hold one write \
                 (its {} ms lock wait); the default, {}, fits every gateway's worst case",
                MAX_PUSH_LEASE.as_millis(),
                WRITE_TRY_WAIT.as_millis(),
                DEFAULT_PUSH_LEASE.as_millis()
            ),
        });
    }
    Ok(())
}

/// The `gateway` label of a device platform.
pub fn gateway_of(platform: &str) -> &'static str {
    match platform {
        "ios" => "apns",
        "android" => "fcm",
        "dev" => "dev",
        "web" => "web_push",
        _ => "none",
    }
}

/// Where the VAPID key lives: `--vapid-key`, else beside the SQLite
/// database (`<db>.vapid-key`); PostgreSQL deployments name a file.
pub fn vapid_key_path(configured: Option<&Path>, db: &crate::store::Database) -> Option<PathBuf> {
    match configured {
        Some(p) => Some(p.to_path_buf()),
        None => db.vapid_key_beside(),
    }
}

/// The push routes this server's settings configure, by name: `apns`,
/// `fcm`, `web_push` (the terminal device, `qp device`, is always there and
/// not counted: it reaches no phone). The start log and `/readyz` say them.
pub fn routes(settings: &super::Settings) -> Vec<&'static str> {
    let web = vapid_key_path(settings.vapid_key.as_deref(), &settings.db).is_some();
    [
        ("apns", settings.apns.is_some()),
        ("fcm", settings.fcm.is_some()),
        ("web_push", web),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect()
}

/// Whether a device of `platform` can be pushed to by this server: `dev`
/// always (the terminal device), the others through their route
/// ([`routes`]).
pub fn platform_has_route(settings: &super::Settings, platform: &str) -> bool {
    let route = match gateway_of(platform) {
        "dev" => return true,
        "none" => return false,
        gateway => gateway,
    };
    routes(settings).contains(&route)
}
