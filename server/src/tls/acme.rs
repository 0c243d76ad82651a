//! Certificates from an ACME CA through rustls-acme: TLS-ALPN-01 is
//! answered on the server's own listener (see [`super::Tls::accept`]), so no
//! port 80 is needed; the account key and certificates are cached on disk,
//! and each certificate is renewed when two thirds of its life have passed.

use std::sync::Arc;

use rustls::server::ResolvesServerCert;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_acme::caches::DirCache;
use rustls_acme::AcmeConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use crate::config::AcmeSettings;

/// Starts ordering (or loads the cached certificate) in the background.
/// Returns the certificate resolver and the TLS-ALPN-01 answering config.
pub fn start(a: &AcmeSettings) -> Result<(Arc<dyn ResolvesServerCert>, Arc<ServerConfig>), String> {
    std::fs::create_dir_all(&a.cache)
        .map_err(|e| format!("acme_cache {}: {e}", a.cache.display()))?;
    let provider = super::provider();
    let mut config = AcmeConfig::new_with_provider(a.domains.clone(), provider.clone())
        .contact(a.contact.iter().map(|c| {
            if c.contains(':') {
                c.clone()
            } else {
                format!("mailto:{c}")
            }
        }))
        .cache(DirCache::new(a.cache.clone()))
        .directory(&a.directory);
    if let Some(ca) = &a.directory_ca {
        config = config.client_tls_config(client_trusting(ca, provider.clone())?);
    }
    let mut state = config.state();
    let resolver = state.resolver();
    let challenge = state.challenge_rustls_config_with_provider(provider);
    let domains = a.domains.join(",");
    tokio::spawn(async move {
        use futures_util::StreamExt;
        while let Some(event) = state.next().await {
            match event {
                Ok(ok) => tracing::info!(domains = %domains, event = ?ok, "ACME"),
                Err(err) => tracing::warn!(domains = %domains, error = ?err, "ACME"),
            }
        }
    });
    Ok((resolver, challenge))
}

/// A client config trusting the web's roots plus `ca` (for the ACME server).
fn client_trusting(
    ca: &std::path::Path,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let extra = CertificateDer::pem_file_iter(ca)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("acme_directory_ca {}: {e}", ca.display()))?;
    let (added, _) = roots.add_parsable_certificates(extra);
    if added == 0 {
        return Err(format!(
            "acme_directory_ca {}: no usable CA certificate",
            ca.display()
        ));
    }
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
