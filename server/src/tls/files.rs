//! A certificate from PEM files, swapped in when the files change: an
//! outside renewal (certbot, cert-manager, a cron job) needs no restart.
//! A change that does not load (a half-written file, a key that does not
//! match) is logged and the current certificate stays.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug)]
pub struct ReloadingCert {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}

/// What identifies a version of the two files.
type Stamp = [(Option<SystemTime>, u64); 2];

fn stamp(cert: &Path, key: &Path) -> Stamp {
    [cert, key].map(|p| match std::fs::metadata(p) {
        Ok(m) => (m.modified().ok(), m.len()),
        Err(_) => (None, 0),
    })
}

/// Why the certificate files cannot be served: each names the setting and
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum CertFilesError {
    #[error("tls_cert {}: {reason}", path.display())]
    Cert { path: PathBuf, reason: String },
    #[error("tls_cert {}: no CERTIFICATE in the file", path.display())]
    NoCertificate { path: PathBuf },
    #[error("tls_key {}: {reason}", path.display())]
    Key { path: PathBuf, reason: String },
    #[error("tls_key {} does not fit tls_cert {}: {reason}", key.display(), cert.display())]
    Mismatch {
        key: PathBuf,
        cert: PathBuf,
        reason: String,
    },
}

/// Reads the chain and the key, checking that they belong together.
pub fn load(cert: &Path, key: &Path) -> Result<CertifiedKey, CertFilesError> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| CertFilesError::Cert {
            path: cert.into(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(CertFilesError::NoCertificate { path: cert.into() });
    }
    let der = PrivateKeyDer::from_pem_file(key).map_err(|e| CertFilesError::Key {
        path: key.into(),
        reason: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, der, &super::provider()).map_err(|e| CertFilesError::Mismatch {
        key: key.into(),
        cert: cert.into(),
        reason: e.to_string(),
    })
}

impl ReloadingCert {
    /// Loads the files (an error stops the start) and watches them.
    pub fn start(cert: &Path, key: &Path, every: Duration) -> Result<Arc<Self>, CertFilesError> {
        let first = load(cert, key)?;
        let me = Arc::new(ReloadingCert {
            current: RwLock::new(Arc::new(first)),
        });
        let weak = Arc::downgrade(&me);
        let (cert, key): (PathBuf, PathBuf) = (cert.into(), key.into());
        tokio::spawn(async move {
            let mut seen = stamp(&cert, &key);
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(me) = weak.upgrade() else { return };
                let now = stamp(&cert, &key);
                if now == seen {
                    continue;
                }
                match load(&cert, &key) {
                    Ok(new) => {
                        *me.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(new);
                        seen = now;
                        tracing::info!(cert = %cert.display(), "TLS certificate reloaded");
                    }
                    // Keep the old one; try again next tick (the other file
                    // of a renewal may not be written yet).
                    Err(e) => tracing::warn!(error = %e, "TLS certificate change not loaded"),
                }
            }
        });
        Ok(me)
    }
}
