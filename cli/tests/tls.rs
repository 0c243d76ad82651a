//! HTTPS from the one binary: a certificate from files (a generated CA),
//! HTTP/1.1 and HTTP/2 by ALPN, clients that trust the CA only when told
//! (the `qp` CLI, the Rust asker client, the phone core), a certificate swap
//! picked up without a restart, and plain HTTP refused beyond loopback.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::Fixture;
use qp_client::{ExtraCa, ReqwestTransport};
use qp_core::sync::{PhoneClient, SyncError, TokenProvider};
use qp_server::config::{Settings, TlsSettings};
use qp_server::tls::devcert::DevCa;
use serde_json::json;

const QP: &str = env!("CARGO_BIN_EXE_qp");

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// Writes the CA as `name` and a server certificate it signs as the
    /// served cert.pem/key.pem (replacing them as a renewal would: a new
    /// file renamed over the old).
    fn issue(&self, ca: &DevCa, ca_name: &str) {
        std::fs::write(self.path(ca_name), &ca.ca_pem).unwrap();
        let cert = ca
            .server_cert(&["localhost".into(), "127.0.0.1".into()])
            .unwrap();
        for (name, text) in [("key.pem", &cert.key_pem), ("cert.pem", &cert.cert_pem)] {
            let tmp = self.path(&format!("{name}.new"));
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(tmp, self.path(name)).unwrap();
        }
    }
    fn tls(&self) -> TlsSettings {
        TlsSettings::Files {
            cert: self.path("cert.pem"),
            key: self.path("key.pem"),
            reload_interval: Duration::from_millis(100),
        }
    }
}

fn client(ca: Option<&Path>, http1_only: bool) -> reqwest::Client {
    let mut b = qp_client::ExtraCa::read(ca).unwrap().builder();
    if http1_only {
        b = b.http1_only();
    }
    b.build().unwrap()
}

async fn https_fixture(files: &Files) -> Fixture {
    let tls = files.tls();
    let mut f = Fixture::with(move |s| s.tls = tls).await;
    f.base = f.base.replace("http://", "https://");
    f.http = client(Some(&files.path("ca.pem")), false);
    f
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_is_served_over_https_with_http2_and_http1() {
    let files = Files::new();
    files.issue(&DevCa::new("test CA").unwrap(), "ca.pem");
    let f = https_fixture(&files).await;
    assert!(f.base.starts_with("https://127.0.0.1:"));

    // HTTP/2 by ALPN: the whole round trip.
    let h2 = client(Some(&files.path("ca.pem")), false);
    let resp = h2.get(format!("{}/healthz", f.base)).send().await.unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    let q = f.ask(json!({"prompt": "Deploy over h2?"})).await;
    let id = q["id"].as_str().unwrap();
    let (s, _) = f
        .answer(&f.alice_token, id, json!({"value": "approve"}))
        .await;
    assert_eq!(s, 200);
    let waited = h2
        .get(format!(
            "{}/api/agent/questions/{id}/wait?timeout=1",
            f.base
        ))
        .bearer_auth(&f.agent_token)
        .send()
        .await
        .unwrap();
    assert_eq!(waited.version(), reqwest::Version::HTTP_2);
    let body: serde_json::Value = waited.json().await.unwrap();
    assert_eq!(body["answer"]["value"], "approve");

    // HTTP/1.1 when that is all the client speaks.
    let h1 = client(Some(&files.path("ca.pem")), true);
    let resp = h1
        .get(format!("{}/api/me", f.base))
        .bearer_auth(&f.alice_token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_11);
    assert_eq!(resp.status(), 200);

    // A client that does not trust the CA is refused; plain HTTP gets nothing.
    let err = client(None, false)
        .get(format!("{}/healthz", f.base))
        .send()
        .await
        .unwrap_err();
    assert!(format!("{err:?}").contains("UnknownIssuer"), "{err:?}");
    let plain = reqwest::Client::new()
        .get(f.base.replace("https://", "http://") + "/healthz")
        .send()
        .await;
    assert!(plain.is_err(), "{plain:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_trusts_the_ca_it_is_given_and_no_other() {
    let files = Files::new();
    files.issue(&DevCa::new("test CA").unwrap(), "ca.pem");
    let f = https_fixture(&files).await;
    let ask = |ca: Option<PathBuf>| {
        let mut cmd = Command::new(QP);
        cmd.args(["ask", "OPS123", "Ship it?", "--yes-no", "--json"])
            .env("QP_URL", &f.base)
            .env("QP_TOKEN", &f.agent_token)
            .env("HOME", files.path("home"))
            .env_remove("QP_CA_CERT");
        if let Some(ca) = ca {
            cmd.arg("--ca-cert").arg(ca);
        }
        cmd.output().unwrap()
    };
    let out = ask(Some(files.path("ca.pem")));
    assert!(out.status.success(), "{out:?}");
    let q: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(q["state"], "pending");

    let out = ask(None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("certificate") || err.contains("UnknownIssuer"),
        "{err}"
    );

    std::fs::write(files.path("junk.pem"), "not a certificate").unwrap();
    let out = ask(Some(files.path("junk.pem")));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--ca-cert") && err.contains("junk.pem"),
        "{err}"
    );
}

struct Token(String);
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some(self.0.clone())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_phone_core_over_reqwest_trusts_its_extra_ca_and_no_other() {
    let files = Files::new();
    let ca = DevCa::new("test CA").unwrap();
    files.issue(&ca, "ca.pem");
    let f = https_fixture(&files).await;
    f.ask(json!({"prompt": "Reach the phone over HTTPS?"}))
        .await;
    let store =
        qp_core::store::Store::open(&files.path("phone.sqlite"), qp_core::store::StoreMode::App)
            .unwrap();

    // `qp device --ca-cert`: the phone's requests go through qp-client's
    // reqwest transport with the extra CA (on a phone, the platform's
    // trust store decides).
    let over = |ca: &ExtraCa| {
        PhoneClient::new(
            &f.base,
            &f.alice,
            Arc::new(Token(f.alice_token.clone())),
            Arc::new(ReqwestTransport::new(ca).unwrap()),
            qp_core::sync::REQUEST_TIMEOUT,
        )
    };
    let trusting = over(&ExtraCa::from_pem(ca.ca_pem.as_bytes()).unwrap());
    let report = qp_core::sync::sync(&store, &trusting).await.unwrap();
    assert_eq!(report.pending, 1, "{report:?}");

    let platform_only = over(&ExtraCa::none());
    match qp_core::sync::sync(&store, &platform_only).await {
        Err(SyncError::Network(m)) => assert!(
            m.contains("certificate") || m.contains("UnknownIssuer"),
            "{m}"
        ),
        other => panic!("a certificate from an unknown CA was accepted: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_renewed_certificate_is_served_without_a_restart() {
    let files = Files::new();
    files.issue(&DevCa::new("first CA").unwrap(), "first.pem");
    std::fs::copy(files.path("first.pem"), files.path("ca.pem")).unwrap();
    let f = https_fixture(&files).await;
    let first = client(Some(&files.path("first.pem")), true);
    // Each check is a new connection (a kept-alive one keeps its handshake).
    let health = |c: &reqwest::Client| {
        let url = format!("{}/healthz", f.base);
        let c = c.clone();
        async move {
            c.get(url)
                .header("connection", "close")
                .send()
                .await
                .map(|r| r.status().as_u16())
        }
    };
    assert_eq!(health(&first).await.unwrap(), 200);

    // Renewal: a certificate from another CA replaces the files.
    files.issue(&DevCa::new("second CA").unwrap(), "second.pem");
    let second = client(Some(&files.path("second.pem")), true);
    let mut switched = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if health(&second).await.is_ok() {
            switched = true;
            break;
        }
    }
    assert!(switched, "the new certificate was never served");
    // A fresh client (no TLS session to resume) trusting only the old CA.
    let first_again = client(Some(&files.path("first.pem")), true);
    assert!(
        health(&first_again).await.is_err(),
        "the old certificate is still served"
    );

    // A broken write (garbage in cert.pem) keeps the last good certificate.
    std::fs::write(
        files.path("cert.pem"),
        "-----BEGIN CERTIFICATE-----\ngarbage\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(health(&second).await.unwrap(), 200);
}

#[tokio::test]
async fn plain_http_beyond_loopback_is_refused_unless_a_proxy_terminates_tls() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..common::test_settings(dir.path().join("qp.sqlite"))
    };
    // The same rule as the flags (server/src/config/tls.rs): checked when settings resolve.
    let out = Command::new(QP)
        .args(["serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(dir.path().join("qp.sqlite"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to serve plain HTTP") && err.contains("--behind-proxy"),
        "{err}"
    );
    // With the flag it starts (and says so).
    let server = qp_server::serve::start(
        Settings {
            behind_proxy: true,
            ..settings
        },
        None,
    )
    .await
    .unwrap();
    assert!(server.addr.ip().is_unspecified());
    server.stop().await;
    // A missing certificate file is named.
    let out = Command::new(QP)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            "/nonexistent/cert.pem",
            "--tls-key",
            "/nonexistent/key.pem",
            "--db",
        ])
        .arg(dir.path().join("qp.sqlite"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/nonexistent/cert.pem"),
        "{out:?}"
    );
}
