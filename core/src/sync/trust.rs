//! Which certificates the phone trusts for its server: the platform's trust
//! store (iOS and macOS: the Security framework, so roots an MDM profile
//! installed are honoured; Linux: the system roots) through
//! rustls-platform-verifier, plus an extra CA the app may pass in PEM (a
//! team's private CA, a test CA).
//!
//! Android: the platform verifier needs the app to hand it a JNI context
//! and to ship its Kotlin component, which cannot be built or run here; so
//! on Android the phone trusts the web's roots (webpki-roots, as before)
//! plus the extra CA. A team with a private CA on Android passes it here.

#[cfg(not(target_os = "android"))]
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// The trust the phone's HTTPS client is built with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// One or more CA certificates (PEM) trusted besides the platform's.
    pub extra_ca_pem: Option<String>,
}

impl Trust {
    /// The platform's roots only.
    pub fn platform() -> Trust {
        Trust::default()
    }

    /// The platform's roots and the CA certificates in `pem`.
    pub fn with_extra_ca(pem: impl Into<String>) -> Trust {
        Trust {
            extra_ca_pem: Some(pem.into()),
        }
    }

    /// Checks the extra CA without loading the platform's store (cheap).
    pub fn check(&self) -> Result<(), String> {
        self.extra_roots().map(drop)
    }

    /// The extra CA certificates: PEM that holds certificates a root store
    /// accepts; an error names what is wrong.
    fn extra_roots(&self) -> Result<Vec<CertificateDer<'static>>, String> {
        let Some(pem) = self
            .extra_ca_pem
            .as_deref()
            .filter(|p| !p.trim().is_empty())
        else {
            return Ok(Vec::new());
        };
        let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("extra_ca_pem: not PEM certificates ({e})"))?;
        if certs.is_empty() {
            return Err("extra_ca_pem: no \"BEGIN CERTIFICATE\" block".into());
        }
        let mut store = rustls::RootCertStore::empty();
        for cert in &certs {
            store
                .add(cert.clone())
                .map_err(|e| format!("extra_ca_pem: not a usable CA certificate ({e})"))?;
        }
        Ok(certs)
    }

    /// The phone's HTTP client: short timeouts, as a phone on a bad
    /// network needs (shared by sync, flush and pairing).
    pub(crate) fn http_client(&self) -> Result<reqwest::Client, String> {
        let extra = self.extra_roots()?;
        let builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15));
        let builder = with_roots(builder, extra)?;
        builder.build().map_err(|e| super::error_chain(&e))
    }
}

#[cfg(not(target_os = "android"))]
fn with_roots(
    builder: reqwest::ClientBuilder,
    extra: Vec<CertificateDer<'static>>,
) -> Result<reqwest::ClientBuilder, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = if extra.is_empty() {
        rustls_platform_verifier::Verifier::new(provider.clone())
    } else {
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra.clone(), provider.clone())
    };
    let verifier = match verifier {
        Ok(v) => v,
        // A system without a trust store (a minimal container): plain HTTP
        // and servers of the extra CA still work; other HTTPS fails at the
        // handshake with an unknown issuer, which names the problem.
        Err(e) => {
            log::warn!(
                "the platform's trust store is unavailable ({e}); trusting only extra_ca_pem"
            );
            let mut builder = builder;
            for der in extra {
                let cert = reqwest::Certificate::from_der(&der)
                    .map_err(|e| format!("extra_ca_pem: {e}"))?;
                builder = builder.add_root_certificate(cert);
            }
            return Ok(builder);
        }
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous() // not dangerous: the verifier is the platform's own
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(builder.use_preconfigured_tls(config))
}

#[cfg(target_os = "android")]
fn with_roots(
    mut builder: reqwest::ClientBuilder,
    extra: Vec<CertificateDer<'static>>,
) -> Result<reqwest::ClientBuilder, String> {
    for der in extra {
        let cert =
            reqwest::Certificate::from_der(&der).map_err(|e| format!("extra_ca_pem: {e}"))?;
        builder = builder.add_root_certificate(cert);
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_extra_ca_is_named() {
        let bad_der =
            Trust::with_extra_ca("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n");
        assert!(bad_der.check().unwrap_err().contains("extra_ca_pem"));
        let e = Trust::with_extra_ca("not a pem").http_client().unwrap_err();
        assert!(e.contains("extra_ca_pem"), "{e}");
        let e =
            Trust::with_extra_ca("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n")
                .http_client()
                .unwrap_err();
        assert!(e.contains("extra_ca_pem"), "{e}");
        assert!(Trust::platform().http_client().is_ok());
    }
}
