//! A phone on a system without a trust store (a minimal Linux container, the
//! Swift test root): the platform verifier cannot load any root, and the
//! phone must still work over plain HTTP and with its extra CA, reporting a
//! network error, not a trust-settings error. Its own test binary, because
//! it points the system-root lookup at an empty place for the whole process.

use std::sync::Arc;

use qp_core::store::{Store, StoreMode};
use qp_core::sync::{sync, PhoneClient, SyncError, TokenProvider, Trust};

struct Token;
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some("qpu_test".into())
    }
}

#[tokio::test]
async fn without_system_roots_plain_http_still_works() {
    let empty = tempfile::tempdir().unwrap();
    // rustls-native-certs reads these instead of the system's locations.
    std::env::set_var("SSL_CERT_FILE", empty.path().join("none.pem"));
    std::env::set_var("SSL_CERT_DIR", empty.path());
    let store = Store::open(&empty.path().join("phone.sqlite"), StoreMode::App).unwrap();
    // Nothing listens on port 9: the failure must be the connection's.
    let client = PhoneClient::with_trust(
        "http://127.0.0.1:9",
        "u_1",
        Arc::new(Token),
        &Trust::platform(),
    )
    .unwrap();
    match sync(&store, &client).await {
        Err(SyncError::Network(m)) => assert!(!m.contains("extra_ca_pem"), "{m}"),
        other => panic!("expected a network error, got {other:?}"),
    }
}
