//! Certificates from an ACME CA through rustls-acme: TLS-ALPN-01 is
//! answered on the server's own listener (see [`super::Tls::accept`]), so no
//! port 80 is needed; the account key and certificates are cached on disk,
//! and each certificate is renewed when two thirds of its life have passed.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use rustls::server::ResolvesServerCert;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_acme::caches::DirCache;
use rustls_acme::{AccountCache, AcmeConfig, CertCache};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use crate::config::AcmeSettings;

/// Why ACME cannot start: the words name the setting and its file.
#[derive(Debug, thiserror::Error)]
pub enum AcmeError {
    /// `acme_cache` cannot be made an owner-only directory.
    #[error("acme_cache {}: {source}", .path.display())]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `acme_directory_ca` cannot be read as PEM.
    #[error("acme_directory_ca {}: {source}", .path.display())]
    DirectoryCa {
        path: PathBuf,
        source: rustls_pki_types::pem::Error,
    },
    /// `acme_directory_ca` holds no certificate rustls can use.
    #[error("acme_directory_ca {}: no usable CA certificate", .path.display())]
    NoUsableCa { path: PathBuf },
    /// rustls refused the ACME client's configuration.
    #[error("TLS: {0}")]
    Client(#[source] rustls::Error),
}

/// Starts ordering (or loads the cached certificate) in the background.
/// Returns the certificate resolver and the TLS-ALPN-01 answering config.
pub fn start(
    a: &AcmeSettings,
) -> Result<(Arc<dyn ResolvesServerCert>, Arc<ServerConfig>), AcmeError> {
    crate::secret_files::create_private_dir(&a.cache).map_err(|source| AcmeError::Cache {
        path: a.cache.clone(),
        source,
    })?;
    warn_if_open(&a.cache);
    let provider = super::provider();
    let mut config = AcmeConfig::new_with_provider(a.domains.clone(), provider.clone())
        .contact(a.contact.iter().map(|c| {
            if c.contains(':') {
                c.clone()
            } else {
                format!("mailto:{c}")
            }
        }))
        .cache(PrivateDirCache::new(a.cache.clone()))
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
) -> Result<Arc<ClientConfig>, AcmeError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let extra = CertificateDer::pem_file_iter(ca)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|source| AcmeError::DirectoryCa {
            path: ca.to_path_buf(),
            source,
        })?;
    let (added, _) = roots.add_parsable_certificates(extra);
    if added == 0 {
        return Err(AcmeError::NoUsableCa {
            path: ca.to_path_buf(),
        });
    }
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(AcmeError::Client)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// rustls-acme's folder cache, with every file it writes (the account key,
/// each certificate with its private key) made 0600 right after: the
/// library writes them under the umask (often 0644). The folder is 0700
/// from the start, so nobody else can read them in between.
struct PrivateDirCache {
    dir: PathBuf,
    inner: DirCache<PathBuf>,
}

impl PrivateDirCache {
    fn new(dir: PathBuf) -> PrivateDirCache {
        PrivateDirCache {
            inner: DirCache::new(dir.clone()),
            dir,
        }
    }
}

/// Makes every file in `dir` owner-only.
fn make_files_private(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() {
            crate::secret_files::make_private(&path)?;
        }
    }
    Ok(())
}

/// Warns about the cache folder and each file in it open to others.
fn warn_if_open(dir: &Path) {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| it.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    crate::secret_files::warn_if_open(
        std::iter::once((dir, "the ACME cache"))
            .chain(files.iter().map(|f| (f.as_path(), "the ACME cache file"))),
    );
}

type CacheFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, std::io::Error>> + Send + 'a>>;

// The traits are declared with #[async_trait]; these are its expansion
// written out, so no macro crate is needed for two delegating methods.
impl CertCache for PrivateDirCache {
    type EC = std::io::Error;
    fn load_cert<'a, 'b, 'c, 'f>(
        &'a self,
        domains: &'b [String],
        directory_url: &'c str,
    ) -> CacheFuture<'f, Option<Vec<u8>>>
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        Self: 'f,
    {
        self.inner.load_cert(domains, directory_url)
    }
    fn store_cert<'a, 'b, 'c, 'd, 'f>(
        &'a self,
        domains: &'b [String],
        directory_url: &'c str,
        cert: &'d [u8],
    ) -> CacheFuture<'f, ()>
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        'd: 'f,
        Self: 'f,
    {
        Box::pin(async move {
            self.inner.store_cert(domains, directory_url, cert).await?;
            make_files_private(&self.dir)
        })
    }
}

impl AccountCache for PrivateDirCache {
    type EA = std::io::Error;
    fn load_account<'a, 'b, 'c, 'f>(
        &'a self,
        contact: &'b [String],
        directory_url: &'c str,
    ) -> CacheFuture<'f, Option<Vec<u8>>>
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        Self: 'f,
    {
        self.inner.load_account(contact, directory_url)
    }
    fn store_account<'a, 'b, 'c, 'd, 'f>(
        &'a self,
        contact: &'b [String],
        directory_url: &'c str,
        account: &'d [u8],
    ) -> CacheFuture<'f, ()>
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        'd: 'f,
        Self: 'f,
    {
        Box::pin(async move {
            self.inner
                .store_account(contact, directory_url, account)
                .await?;
            make_files_private(&self.dir)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The account key and certificates rustls-acme
    /// writes end up 0600 in a 0700 folder, whatever the umask.
    #[tokio::test]
    async fn the_acme_cache_keeps_keys_owner_only() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("acme");
        crate::secret_files::create_private_dir(&dir).unwrap();
        let cache = PrivateDirCache::new(dir.clone());
        let domains = ["qp.example.com".to_string()];
        cache
            .store_cert(
                &domains,
                "https://acme.test/dir",
                b"-----BEGIN PRIVATE KEY-----",
            )
            .await
            .unwrap();
        cache
            .store_account(
                &["mailto:ops@example.com".into()],
                "https://acme.test/dir",
                b"key",
            )
            .await
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 2);
        for f in &files {
            assert_eq!(mode(f), 0o600, "{}", f.display());
        }
        assert_eq!(
            cache
                .load_cert(&domains, "https://acme.test/dir")
                .await
                .unwrap()
                .as_deref(),
            Some(&b"-----BEGIN PRIVATE KEY-----"[..])
        );
    }
}
