//! Where the server listens, and how it is reached: TLS (certificate files
//! or ACME), a proxy in front and the proxies trusted to name the client.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, PartialSettings, Settings};

/// `listen`'s default: loopback only, on the protocol's port.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::new(
    IpAddr::V4(Ipv4Addr::LOCALHOST),
    qp_core::protocol::limits::DEFAULT_PORT,
);

/// `tls_reload_ms`'s default: how often the certificate files are checked
/// for a change.
pub const DEFAULT_TLS_RELOAD: Duration = Duration::from_millis(5_000);

/// The shortest `tls_reload_ms` used (a smaller one is raised to it).
pub const MIN_TLS_RELOAD: Duration = Duration::from_millis(100);

/// `acme_cache`'s default: the ACME account and certificates' directory.
pub const DEFAULT_ACME_CACHE: &str = "qp-acme";

/// Let's Encrypt's production directory (`acme_directory`'s default).
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

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

/// An address or a network (`10.0.0.7`, `10.0.0.0/8`, `::1`).
pub(super) fn parse_proxy(p: &str) -> Result<ipnet::IpNet, ConfigError> {
    let p = p.trim();
    p.parse::<ipnet::IpNet>()
        .or_else(|_| p.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| ConfigError::Invalid {
            key: "trusted_proxy",
            rule: format!("{p:?} is not an IP address or network (10.0.0.0/8)"),
        })
}

/// Files, ACME or nothing; never both.
pub(super) fn tls_settings(m: &PartialSettings) -> Result<TlsSettings, ConfigError> {
    let domains: Vec<String> = m
        .acme_domain
        .iter()
        .flat_map(|d| d.split(','))
        .map(|d| d.trim().to_ascii_lowercase())
        .filter(|d| !d.is_empty())
        .collect();
    match ((m.tls_cert.clone(), m.tls_key.clone()), domains.is_empty()) {
        ((None, None), true) => Ok(TlsSettings::Off),
        ((Some(cert), Some(key)), true) => Ok(TlsSettings::Files {
            cert,
            key,
            reload_interval: m
                .tls_reload_ms
                .map_or(DEFAULT_TLS_RELOAD, Duration::from_millis)
                .max(MIN_TLS_RELOAD),
        }),
        ((None, None), false) => {
            if let Some(bad) = domains.iter().find(|d| {
                d.len() > 253
                    || !d
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            }) {
                return Err(ConfigError::Invalid {
                    key: "acme_domain",
                    rule: format!("{bad:?} is not a DNS name"),
                });
            }
            Ok(TlsSettings::Acme(AcmeSettings {
                domains,
                contact: m.acme_contact.clone(),
                cache: m
                    .acme_cache
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_ACME_CACHE)),
                directory: m
                    .acme_directory
                    .clone()
                    .unwrap_or_else(|| LETS_ENCRYPT.to_string()),
                directory_ca: m.acme_directory_ca.clone(),
            }))
        }
        ((Some(_), None), _) | ((None, Some(_)), _) => Err(ConfigError::Combination {
            keys: &["tls_cert", "tls_key"],
            rule: "tls_cert and tls_key go together: give both PEM files",
        }),
        ((Some(_), Some(_)), false) => Err(ConfigError::Combination {
            keys: &["tls_cert", "tls_key", "acme_domain"],
            rule: "give either tls_cert/tls_key or acme_domain, not both",
        }),
    }
}

/// Plain HTTP only on loopback, unless a proxy in front terminates TLS.
pub(super) fn check_plain_http(s: &Settings) -> Result<(), ConfigError> {
    if s.tls == TlsSettings::Off && !s.behind_proxy && !s.listen.ip().is_loopback() {
        return Err(ConfigError::PlainHttp { listen: s.listen });
    }
    Ok(())
}
