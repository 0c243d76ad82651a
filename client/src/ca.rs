//! The extra CA certificates a client trusts.

use std::path::PathBuf;
use std::time::Duration;

/// Why extra CA certificates could not be read or a client built.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// The bytes are not PEM certificates.
    #[error("the CA certificate is not PEM: {0}")]
    NotPem(String),
    /// PEM, but without a certificate in it.
    #[error("the CA certificate file has no \"BEGIN CERTIFICATE\" block")]
    NoCertificate,
    /// `--ca-cert` could not be read, or its contents were refused.
    #[error("--ca-cert {}: {reason}", path.display())]
    File {
        /// The file named.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built (the TLS backend refused).
    #[error("{0}")]
    Client(String),
}

/// The CA certificates the `qp` clients trust besides the web's roots (a
/// private CA, `qp admin tls dev-cert`): read and checked once, then every
/// client is built from it. The one place those clients get their trust.
#[derive(Clone, Default)]
pub struct ExtraCa {
    certs: Vec<reqwest::Certificate>,
}

impl ExtraCa {
    /// None: the web's roots only.
    pub fn none() -> ExtraCa {
        ExtraCa::default()
    }

    /// Certificates in PEM; an error says what is wrong.
    pub fn from_pem(pem: &[u8]) -> Result<ExtraCa, CaError> {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| CaError::NotPem(e.to_string()))?;
        if certs.is_empty() {
            return Err(CaError::NoCertificate);
        }
        Ok(ExtraCa { certs })
    }

    /// `--ca-cert` / `QP_CA_CERT`; none when not given.
    pub fn read(path: Option<&std::path::Path>) -> Result<ExtraCa, CaError> {
        let Some(p) = path else {
            return Ok(ExtraCa::none());
        };
        let file = |reason: String| CaError::File {
            path: p.to_path_buf(),
            reason,
        };
        let pem = std::fs::read(p).map_err(|e| file(e.to_string()))?;
        Self::from_pem(&pem).map_err(|e| file(e.to_string()))
    }

    /// A client builder trusting the web's roots and these certificates.
    pub fn builder(&self) -> reqwest::ClientBuilder {
        self.certs.iter().fold(reqwest::Client::builder(), |b, c| {
            b.add_root_certificate(c.clone())
        })
    }

    /// A client with this trust and a whole-request `timeout`.
    pub fn client(&self, timeout: Duration) -> Result<reqwest::Client, CaError> {
        self.builder()
            .timeout(timeout)
            .build()
            .map_err(|e| CaError::Client(qp_core::logging::error_chain(&e)))
    }
}
