//! A throwaway local CA and a server certificate signed by it, for trying
//! HTTPS on one machine (`qp admin tls dev-cert`, `scripts/demo --tls`) and
//! for tests. Clients trust it with `--ca-cert ca.pem`; never a production CA.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// rcgen refused to make a key or a certificate (a name it cannot encode).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DevCertError(#[from] rcgen::Error);

/// A CA, and a server certificate with its key, all PEM.
pub struct DevCa {
    pub ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

pub struct ServerCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl DevCa {
    pub fn new(name: &str) -> Result<DevCa, DevCertError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(DevCa {
            ca_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// A server certificate for `names` (DNS names or IP addresses), with a
    /// fresh key each time.
    pub fn server_cert(&self, names: &[String]) -> Result<ServerCert, DevCertError> {
        let mut params = CertificateParams::new(names.to_vec())?;
        params.distinguished_name.push(
            DnType::CommonName,
            names.first().map_or("qp", |n| n.as_str()),
        );
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}
