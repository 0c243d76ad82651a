//! `qp serve` on a PostgreSQL server that speaks TLS with its own CA (as
//! managed databases do): `sslmode=require&sslrootcert=ca.pem` connects over
//! verified TLS (the store's connections and the LISTEN connection alike);
//! without the CA the certificate is refused instead of trusted.
//!
//! Starts its own throwaway cluster with `scripts/ensure-postgres --tls`;
//! runs when `QP_TEST_POSTGRES` is set (PostgreSQL is then installed;
//! `scripts/test` sets it), and says so otherwise.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use qp_server::store::{self, Database};
use serde_json::{json, Value};

struct Cluster {
    dir: PathBuf,
    url: String,
}

impl Cluster {
    fn start(dir: &Path, certs: &Path) -> Cluster {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ensure-postgres");
        let out = Command::new(&script)
            .arg("start")
            .arg(dir)
            .arg("--tls")
            .arg(certs)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "ensure-postgres --tls failed");
        Cluster {
            dir: dir.to_path_buf(),
            url: String::from_utf8(out.stdout).unwrap().trim().to_string(),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ensure-postgres");
        let _ = Command::new(script).arg("stop").arg(&self.dir).status();
    }
}

/// Runs `f` on a thread of its own (the sync client cannot run inside the
/// test's runtime).
fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
async fn the_server_talks_to_postgresql_over_verified_tls() {
    common::require_postgres();
    let work = tempfile::tempdir().unwrap();
    let certs = work.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    let ca = qp_server::tls::devcert::DevCa::new("test database CA").unwrap();
    let cert = ca.server_cert(&["127.0.0.1".into()]).unwrap();
    std::fs::write(certs.join("server.crt"), cert.cert_pem).unwrap();
    std::fs::write(certs.join("server.key"), cert.key_pem).unwrap();
    let ca_file = work.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    // A directory the cluster's owner (postgres, when run as root) can enter.
    let cluster_dir = PathBuf::from(format!(
        "/tmp/qp-test-pg-tls.{}",
        qp_server::ids::new_id("c")
    ));
    let cluster = Cluster::start(&cluster_dir, &certs);

    let url = format!(
        "{}/postgres?sslmode=require&sslrootcert={}",
        cluster.url,
        ca_file.display()
    );
    let db: Database = url.parse().unwrap();

    // Without the CA: the certificate is not trusted, nothing connects.
    let untrusted: Database = format!("{}/postgres?sslmode=require", cluster.url)
        .parse()
        .unwrap();
    let refused = off_runtime(move || store::connect(&untrusted).err().map(|e| e.to_string()));
    let refused = refused.expect("a server certificate from an unknown CA must be refused");
    assert!(refused.to_lowercase().contains("certificate"), "{refused}");

    // With it: the store's connection is TLS (PostgreSQL says so).
    let conn = common::connect(&db);
    let ssl: bool = conn
        .query_row(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
            |r| r.get(0),
        )
        .unwrap();
    assert!(ssl, "the connection is not TLS");
    let ops = common::seed_ops_room(&conn);

    // `qp serve` on it: a question asked, answered and read back.
    let serve = common::QpServe::start(&["--db", &url]);
    let http = reqwest::Client::new();
    let body = json!({"prompt": "Deploy?", "options": [{"value": "approve", "label": "Approve"}, {"value": "deny", "label": "Deny"}]});
    let (status, q) = common::ask_at(&http, &serve.base, &ops.agent, &body).await;
    assert_eq!(status, 201, "{q}");
    let id = q["id"].as_str().unwrap();
    let (status, answered) = common::answer_at(&http, &serve.base, &ops.alice, id, "approve", None)
        .await
        .unwrap();
    assert_eq!(status, 200, "{answered}");
    let q: Value = http
        .get(format!(
            "{}/api/agent/questions/{id}/wait?timeout=5",
            serve.base
        ))
        .bearer_auth(&ops.agent)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(q["state"], "answered", "{q}");
    // Every connection qp serve holds is TLS, LISTEN's included.
    let (plain, encrypted): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*) FILTER (WHERE NOT s.ssl), COUNT(*) FILTER (WHERE s.ssl)
             FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid
             WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()",
            &[],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(plain, 0);
    assert!(
        encrypted >= 2,
        "the store's and the listener's: {encrypted}"
    );
    drop(serve);
    drop(cluster);
}
