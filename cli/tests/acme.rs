//! ACME end to end: `qp serve --acme-domain localhost` gets its certificate
//! from Pebble (Let's Encrypt's ACME test server, built by
//! `scripts/ensure-pebble`), proving the domain by TLS-ALPN-01 on its own
//! listener; renews it when two thirds of its life have passed (Pebble is
//! told to issue 40-second certificates); and after a restart serves the
//! certificate it cached on disk instead of ordering again.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use qp_client::ExtraCa;
use qp_server::tls::devcert::DevCa;

const QP: &str = env!("CARGO_BIN_EXE_qp");
/// Pebble's certificate lifetime here; renewal comes at two thirds of it.
const VALIDITY_SECS: u64 = 40;

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn pebble_binary() -> PathBuf {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new(format!("{root}/scripts/ensure-pebble"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "could not build Pebble:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Path::new(root).join(String::from_utf8(out.stdout).unwrap().trim())
}

/// The certificate the server presents on a new connection (DER), or the
/// error when the handshake or request fails.
async fn served_cert(url: &str, root_pem: &[u8]) -> Result<Vec<u8>, String> {
    let client = ExtraCa::from_pem(root_pem)
        .unwrap()
        .builder()
        .tls_info(true)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let resp = client
        .get(format!("{url}/healthz"))
        .send()
        .await
        .map_err(|e| qp_core::sync::error_chain(&e))?;
    let info = resp
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|i| i.peer_certificate().map(<[u8]>::to_vec))
        .ok_or("no peer certificate")?;
    Ok(info)
}

async fn wait_for<T>(what: &str, secs: u64, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn start_qp(dir: &Path, port: u16, pebble_port: u16) -> Kill {
    let mut child = Command::new(QP)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--db")
        .arg(dir.join("qp.sqlite"))
        .args([
            "--acme-domain",
            "localhost",
            "--acme-contact",
            "ops@example.com",
        ])
        .args([
            "--acme-directory",
            &format!("https://127.0.0.1:{pebble_port}/dir"),
        ])
        .arg("--acme-directory-ca")
        .arg(dir.join("pebble-tls/ca.pem"))
        .arg("--acme-cache")
        .arg(dir.join("acme-cache"))
        .env("QP_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain the log so the server never blocks on a full pipe.
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || for _ in BufReader::new(stderr).lines() {});
    Kill(child)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_from_an_acme_ca_is_issued_renewed_and_cached() {
    let pebble = pebble_binary();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // Pebble's own HTTPS certificate, from a CA of ours that qp is told to trust.
    let ca = DevCa::new("Pebble's listener CA").unwrap();
    let tls = ca
        .server_cert(&["localhost".into(), "127.0.0.1".into()])
        .unwrap();
    std::fs::create_dir_all(d.join("pebble-tls")).unwrap();
    std::fs::write(d.join("pebble-tls/ca.pem"), &ca.ca_pem).unwrap();
    std::fs::write(d.join("pebble-tls/cert.pem"), &tls.cert_pem).unwrap();
    std::fs::write(d.join("pebble-tls/key.pem"), &tls.key_pem).unwrap();
    let (qp_port, pebble_port, mgmt_port, http_port) =
        (free_port(), free_port(), free_port(), free_port());
    let config = serde_json::json!({ "pebble": {
        "listenAddress": format!("127.0.0.1:{pebble_port}"),
        "managementListenAddress": format!("127.0.0.1:{mgmt_port}"),
        "certificate": d.join("pebble-tls/cert.pem"),
        "privateKey": d.join("pebble-tls/key.pem"),
        // The validation authority connects to qp's own port for TLS-ALPN-01.
        "tlsPort": qp_port,
        "httpPort": http_port,
        "ocspResponderURL": "",
        "externalAccountBindingRequired": false,
        "keyAlgorithm": "ecdsa",
        "profiles": { "default": { "description": "short-lived for the test", "validityPeriod": VALIDITY_SECS } }
    }});
    std::fs::write(d.join("pebble.json"), config.to_string()).unwrap();
    let log = std::fs::File::create(d.join("pebble.log")).unwrap();
    let _pebble = Kill(
        Command::new(&pebble)
            .arg("-config")
            .arg(d.join("pebble.json"))
            // No artificial validation delay, no injected nonce failures.
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let pebble_ca = ca.ca_pem.clone().into_bytes();
    let mgmt = ExtraCa::from_pem(&pebble_ca)
        .unwrap()
        .builder()
        .build()
        .unwrap();
    // Pebble's issuing root (random per run), which clients of qp will trust.
    let root: Vec<u8> = wait_for("Pebble to start", 30, async || {
        let r = mgmt
            .get(format!("https://127.0.0.1:{mgmt_port}/roots/0"))
            .send()
            .await
            .ok()?;
        r.status().is_success().then_some(())?;
        r.bytes().await.ok().map(|b| b.to_vec())
    })
    .await;

    let url = format!("https://localhost:{qp_port}");
    let qp = start_qp(d, qp_port, pebble_port);
    let first = wait_for("the first certificate", 60, async || {
        served_cert(&url, &root).await.ok()
    })
    .await;

    // Without Pebble's root the same server is refused.
    let untrusted = reqwest::Client::new()
        .get(format!("{url}/healthz"))
        .send()
        .await;
    assert!(untrusted.is_err());

    // Renewal: a different certificate within the lifetime, no restart.
    let renewed = wait_for("the renewal", VALIDITY_SECS + 30, async || {
        served_cert(&url, &root).await.ok().filter(|c| *c != first)
    })
    .await;
    let issued = std::fs::read_to_string(d.join("pebble.log")).unwrap();
    assert!(
        issued.matches("Issued certificate serial").count() >= 2,
        "{issued}"
    );

    // Restart: the cached certificate is served at once, no new order.
    drop(qp);
    let before = std::fs::read_to_string(d.join("pebble.log")).unwrap().len();
    let _qp = start_qp(d, qp_port, pebble_port);
    let again = wait_for("the restarted server", 10, async || {
        served_cert(&url, &root).await.ok()
    })
    .await;
    assert_eq!(
        again, renewed,
        "the restarted server did not serve its cached certificate"
    );
    let after = std::fs::read_to_string(d.join("pebble.log")).unwrap();
    assert!(
        !after[before..].contains("Issued certificate"),
        "the restarted server ordered a new certificate: {}",
        &after[before..]
    );
}
