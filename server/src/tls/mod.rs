//! TLS in the binary: the listener's handshake, HTTP/2 or HTTP/1.1 by ALPN,
//! and where the certificate comes from ([`files`]: PEM files reloaded when
//! they change; [`acme`]: an ACME CA, TLS-ALPN-01 answered on this same
//! listener). rustls with the ring provider, as reqwest already uses.

pub mod acme;
pub mod devcert;
pub mod files;
pub mod proxy;

use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{Acceptor, ResolvesServerCert};
use rustls::ServerConfig;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::LazyConfigAcceptor;

use crate::config::TlsSettings;

/// A client gets this long to finish the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The crypto every TLS piece here uses.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The listener's TLS: the config of ordinary connections and, with ACME,
/// the one that answers the CA's TLS-ALPN-01 validation.
pub struct Tls {
    config: Arc<ServerConfig>,
    acme_challenge: Option<Arc<ServerConfig>>,
}

/// Why HTTPS cannot start: the words name the setting and the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// `tls_cert` / `tls_key` unreadable or not a pair.
    #[error(transparent)]
    Files(#[from] files::CertFilesError),
    /// The ACME cache or its directory's CA.
    #[error(transparent)]
    Acme(#[from] acme::AcmeError),
    /// rustls refused the configuration.
    #[error("TLS: {0}")]
    Config(rustls::Error),
}

/// A connection after the handshake.
pub enum Accepted {
    /// Serve HTTP on it; `h2` when the client chose HTTP/2 by ALPN.
    Http {
        stream: Box<TlsStream<TcpStream>>,
        h2: bool,
    },
    /// An ACME validation, answered by the handshake itself; nothing to serve.
    AcmeValidation,
}

impl Tls {
    /// Loads the certificate (files) or starts the ACME state machine;
    /// `None` for plain HTTP. The file watcher ends when the listener's
    /// config is dropped; the ACME task runs for the life of the runtime.
    pub async fn start(settings: &TlsSettings) -> Result<Option<Tls>, TlsError> {
        let (resolver, acme_challenge): (Arc<dyn ResolvesServerCert>, _) = match settings {
            TlsSettings::Off => return Ok(None),
            TlsSettings::Files {
                cert,
                key,
                reload_interval,
            } => (
                files::ReloadingCert::start(cert, key, *reload_interval)?,
                None,
            ),
            TlsSettings::Acme(a) => {
                let (resolver, challenge) = acme::start(a)?;
                (resolver, Some(challenge))
            }
        };
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_cert_resolver(resolver);
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Some(Tls {
            config: Arc::new(config),
            acme_challenge,
        }))
    }

    /// The server side of a handshake, within [`HANDSHAKE_TIMEOUT`].
    pub async fn accept(&self, tcp: TcpStream) -> std::io::Result<Accepted> {
        tokio::time::timeout(HANDSHAKE_TIMEOUT, self.handshake(tcp))
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake timed out")
            })?
    }

    async fn handshake(&self, tcp: TcpStream) -> std::io::Result<Accepted> {
        let start = LazyConfigAcceptor::new(Acceptor::default(), tcp).await?;
        if let Some(challenge) = &self.acme_challenge {
            if rustls_acme::is_tls_alpn_challenge(&start.client_hello()) {
                let mut tls = start.into_stream(challenge.clone()).await?;
                let _ = tls.shutdown().await;
                return Ok(Accepted::AcmeValidation);
            }
        }
        let stream = start.into_stream(self.config.clone()).await?;
        let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
        Ok(Accepted::Http {
            stream: Box::new(stream),
            h2,
        })
    }
}
