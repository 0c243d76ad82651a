//! On PostgreSQL, an instance that finds the schema migration lock held
//! (another instance migrating, or a session a transaction-mode pooler left
//! holding it) says so, naming the holder's pid, instead of hanging
//! silently, and goes on once the lock is free. Needs `QP_TEST_POSTGRES`.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use qp_server::store::{self, Database};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[test]
#[ignore = "needs PostgreSQL: set QP_TEST_POSTGRES (scripts/test postgres does)"]
fn a_held_migration_lock_is_logged_with_its_holder_until_it_is_free() {
    common::require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let Database::Postgres(url) = common::test_database(dir.path()) else {
        unreachable!()
    };
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let pid: i32 = holder
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    holder
        .execute(
            "SELECT pg_advisory_lock($1)",
            &[&store::pg_schema::MIGRATION_LOCK],
        )
        .unwrap();

    let log = Captured::default();
    let writer = log.clone();
    let db = Database::Postgres(url.clone());
    let migrating = std::thread::spawn(move || {
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || store::connect(&db).map(|_| ()))
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !log.text().contains("waiting for the schema migration lock") {
        assert!(
            std::time::Instant::now() < deadline,
            "no line: {}",
            log.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        log.text().contains(&format!("holder_pid={pid}")),
        "{}",
        log.text()
    );
    assert!(!migrating.is_finished(), "migrated under another's lock");

    holder
        .execute(
            "SELECT pg_advisory_unlock($1)",
            &[&store::pg_schema::MIGRATION_LOCK],
        )
        .unwrap();
    migrating
        .join()
        .unwrap()
        .expect("migrates once the lock is free");
    assert!(
        log.text().contains("took the migration lock"),
        "{}",
        log.text()
    );
}
