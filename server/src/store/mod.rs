//! The server's database: an SQLite file (WAL, foreign keys) or PostgreSQL,
//! migrated on open. Each submodule owns the tables of one concern and
//! exposes plain functions over a [`Conn`] (either backend, `sql.rs`), so
//! they compose inside one transaction.

pub mod copy;
pub mod deliveries;
pub mod identity;
pub mod invites;
pub mod pg;
pub mod questions;
mod schema;
pub mod sql;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use sql::{Backend, Conn, DbError, DbResult};

/// Where the server keeps its state: an SQLite file (the default: one
/// instance, nothing to operate) or a PostgreSQL database (several
/// instances behind a load balancer, one truth).
#[derive(Clone, PartialEq, Eq)]
pub enum Database {
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL (or libpq's key=value form
    /// after `postgres:`).
    Postgres(String),
}

impl std::str::FromStr for Database {
    type Err = String;
    /// `postgres://…` / `postgresql://…` is PostgreSQL; anything else is the
    /// path of an SQLite file.
    fn from_str(s: &str) -> Result<Database, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("db: must be an SQLite file path or a postgres:// URL".into());
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            pg::driver_url(s)
                .0
                .parse::<postgres::Config>()
                .map_err(|e| format!("db: not a valid PostgreSQL URL ({e})"))?;
            return Ok(Database::Postgres(s.to_string()));
        }
        Ok(Database::Sqlite(PathBuf::from(s)))
    }
}

impl<'de> serde::Deserialize<'de> for Database {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Database, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Shown without the password (logs, errors).
impl std::fmt::Display for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            Database::Postgres(url) => match url.split_once('@') {
                Some((before, after)) => match before.rsplit_once(':') {
                    Some((user, _password)) if user.contains("//") && !user.ends_with('/') => {
                        write!(f, "{user}:***@{after}")
                    }
                    _ => write!(f, "{url}"),
                },
                None => write!(f, "{url}"),
            },
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Database({self})")
    }
}

/// Opens (creating if needed) the SQLite database at `path` and migrates it.
pub fn open(path: &Path) -> DbResult<rusqlite::Connection> {
    let mut conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    schema::migrate(&mut conn)?;
    Ok(conn)
}

/// One migrated connection to `db`, for the admin command and tests.
pub fn connect(db: &Database) -> DbResult<Box<Conn>> {
    Ok(match db {
        Database::Sqlite(path) => Box::new(open(path)?),
        Database::Postgres(url) => Box::new(pg::PgConn::open(url)?),
    })
}

/// The server's handle on its database: closures sent to database threads
/// and run there in order, so async tasks never block on I/O.
///
/// SQLite: one connection owned by one thread. SQLite serializes writers
/// anyway; one owner makes "first answer wins" a plain consequence of
/// running transactions in turn, without a pool contending for one lock.
///
/// PostgreSQL: a few threads, each with its own connection, taking jobs
/// from one queue. Concurrency is then real (within an instance and across
/// instances), and the store's writes that decide something are single
/// conditional statements (`UPDATE … WHERE state = 'pending'`), which
/// PostgreSQL makes atomic.
#[derive(Clone)]
pub struct Db {
    jobs: std::sync::mpsc::Sender<Job>,
}

type Job = Box<dyn FnOnce(&Conn) + Send>;

/// Database threads (and connections) per instance on PostgreSQL.
pub const PG_CONNECTIONS: usize = 8;

impl Db {
    pub fn open(db: &Database) -> DbResult<Self> {
        let (jobs, rx) = std::sync::mpsc::channel::<Job>();
        match db {
            Database::Sqlite(path) => {
                let conn = open(path)?;
                spawn("qp-db".into(), move || {
                    // Ends when every Db handle is dropped.
                    for job in rx {
                        job(&conn);
                    }
                })?;
                Ok(Db { jobs })
            }
            Database::Postgres(url) => {
                // The first connection migrates (and proves the URL works).
                // On a thread of its own: the sync client runs its own
                // runtime, which may not start inside the caller's.
                let first = {
                    let url = url.clone();
                    std::thread::spawn(move || pg::PgConn::open(&url))
                        .join()
                        .map_err(|_| DbError::Other("connecting to PostgreSQL panicked".into()))??
                };
                let rx = Arc::new(Mutex::new(rx));
                let mut first = Some(first);
                for n in 0..PG_CONNECTIONS {
                    let (rx, url, conn) = (rx.clone(), url.clone(), first.take());
                    spawn(format!("qp-db-{n}"), move || run_pg_thread(&rx, &url, conn))?;
                }
                Ok(Db { jobs })
            }
        }
    }

    /// Runs `f` on a database thread and awaits its result. A panic in `f`
    /// is caught there (the thread lives on) and resumed in the caller.
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static + From<DbError>,
        F: FnOnce(&Conn) -> Result<T, E> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(conn)));
            let _ = tx.send(result);
        });
        if self.jobs.send(job).is_err() {
            return Err(DbError::Other("the database threads have stopped".into()).into());
        }
        match rx.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(DbError::Other("the database threads have stopped".into()).into()),
        }
    }
}

/// One PostgreSQL database thread: takes jobs from the shared queue until
/// every `Db` handle is dropped. A connection the server closed (restart,
/// network) is replaced before the next job runs; when none can be made,
/// that job sees the reason (`BrokenConn`) and the next one tries again.
fn run_pg_thread(
    jobs: &Mutex<std::sync::mpsc::Receiver<Job>>,
    url: &str,
    mut conn: Option<pg::PgConn>,
) {
    loop {
        let job = match jobs.lock() {
            Ok(rx) => match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
            Err(_) => return,
        };
        if !conn.as_ref().is_some_and(pg::PgConn::is_open) {
            conn = None;
            match pg::PgConn::connect(url) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    job(&BrokenConn(e.to_string()));
                    continue;
                }
            }
        }
        if let Some(c) = &conn {
            job(c);
        }
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> DbResult<()> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map(|_| ())
        .map_err(|e| DbError::Other(format!("cannot start a database thread: {e}")))
}

/// What a job gets when no PostgreSQL connection can be made: every call
/// fails with the reason, so the request fails cleanly (503-like) and the
/// next job tries to connect again.
struct BrokenConn(String);

impl sql::Sql for BrokenConn {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }
    fn execute(&self, _: &str, _: &[sql::Param]) -> DbResult<usize> {
        Err(DbError::Unavailable(self.0.clone()))
    }
    fn query(&self, _: &str, _: &[sql::Param]) -> DbResult<Vec<sql::Row>> {
        Err(DbError::Unavailable(self.0.clone()))
    }
    fn batch(&self, _: &str) -> DbResult<()> {
        Err(DbError::Unavailable(self.0.clone()))
    }
}

/// Errors of the admin-facing store functions.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("database error: {0}")]
    Db(#[from] DbError),
}

/// Seconds since the Unix epoch, now.
pub fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Milliseconds since the Unix epoch, now (for retry schedules).
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::Database;

    #[test]
    fn a_database_setting_is_a_file_or_a_postgres_url_and_shows_no_password() {
        assert_eq!(
            "qp.sqlite".parse::<Database>().unwrap(),
            Database::Sqlite("qp.sqlite".into())
        );
        let pg: Database = "postgres://qp:s3cret@db.internal:5432/qp".parse().unwrap();
        assert!(matches!(pg, Database::Postgres(_)));
        assert_eq!(pg.to_string(), "postgres://qp:***@db.internal:5432/qp");
        assert!(!format!("{pg:?}").contains("s3cret"));
        let no_password: Database = "postgresql://qp@db/qp".parse().unwrap();
        assert_eq!(no_password.to_string(), "postgresql://qp@db/qp");
        let e = "postgres://qp@db:notaport/qp"
            .parse::<Database>()
            .unwrap_err();
        assert!(e.starts_with("db: not a valid PostgreSQL URL"), "{e}");
        assert!(" ".parse::<Database>().is_err());
    }
}
