//! The extra CA certificates a client trusts.

use std::time::Duration;

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
    pub fn from_pem(pem: &[u8]) -> Result<ExtraCa, String> {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("the CA certificate is not PEM: {e}"))?;
        if certs.is_empty() {
            return Err("the CA certificate file has no \"BEGIN CERTIFICATE\" block".into());
        }
        Ok(ExtraCa { certs })
    }

    /// `--ca-cert` / `QP_CA_CERT`; none when not given.
    pub fn read(path: Option<&std::path::Path>) -> Result<ExtraCa, String> {
        let Some(p) = path else {
            return Ok(ExtraCa::none());
        };
        let pem = std::fs::read(p).map_err(|e| format!("--ca-cert {}: {e}", p.display()))?;
        Self::from_pem(&pem).map_err(|e| format!("--ca-cert {}: {e}", p.display()))
    }

    /// A client builder trusting the web's roots and these certificates.
    pub fn builder(&self) -> reqwest::ClientBuilder {
        self.certs.iter().fold(reqwest::Client::builder(), |b, c| {
            b.add_root_certificate(c.clone())
        })
    }

    /// A client with this trust and a whole-request `timeout`.
    pub fn client(&self, timeout: Duration) -> Result<reqwest::Client, String> {
        self.builder()
            .timeout(timeout)
            .build()
            .map_err(|e| qp_core::logging::error_chain(&e))
    }
}
