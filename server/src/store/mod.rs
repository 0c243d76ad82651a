//! The server's database: an SQLite file (WAL, foreign keys) or PostgreSQL,
//! migrated on open. Each submodule owns the tables of one concern and
//! exposes plain functions over a [`Conn`] (either backend, `sql.rs`), so
//! they compose inside one transaction.

pub mod audit;
pub mod backup;
pub mod checkpoint;
pub mod copy;
pub mod db_url;
pub mod deliveries;
pub mod dev_inbox;
pub mod events;
pub mod identity;
pub mod invites;
pub mod lifecycle;
pub mod mcp_sessions;
pub mod oauth;
pub mod offboard;
pub mod pg;
pub mod pg_schema;
pub mod questions;
pub mod retention;
pub mod round_trips;
mod schema;
pub mod sql;
pub mod stats;
pub mod versions;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use db_url::UrlError;
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
    type Err = UrlError;
    /// `postgres://…` / `postgresql://…` is PostgreSQL (checked: see
    /// [`db_url::check_url`]); anything else is the path of an SQLite file.
    fn from_str(s: &str) -> Result<Database, UrlError> {
        let db = Database::unchecked(s)?;
        db.check()?;
        Ok(db)
    }
}

impl Database {
    /// Where the Web Push (VAPID) key of an SQLite database is kept by
    /// default: `DB.vapid-key`, beside it, so a backup and a restore carry
    /// it (`store::backup`). None for PostgreSQL: its deployments name the
    /// key's file (`--vapid-key`).
    pub fn vapid_key_beside(&self) -> Option<PathBuf> {
        match self {
            Database::Sqlite(p) => {
                let mut name = p.as_os_str().to_owned();
                name.push(".vapid-key");
                Some(PathBuf::from(name))
            }
            Database::Postgres(_) => None,
        }
    }

    /// Which database `s` names, without checking a PostgreSQL URL yet.
    fn unchecked(s: &str) -> Result<Database, UrlError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(UrlError::Empty);
        }
        for scheme in ["postgresql://", "postgres://"] {
            if s.get(..scheme.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(scheme))
            {
                // A URL's scheme may be written in any case; the driver
                // reads it in lower case only. Taken for a file name,
                // `POSTGRES://qp:secret@db/qp` made folders named after
                // the password, and the server ran on SQLite.
                return Ok(Database::Postgres(format!(
                    "{scheme}{}",
                    &s[scheme.len()..]
                )));
            }
        }
        if db_url::is_libpq_keywords(s) {
            // libpq's `host=… password=…` form: refused by `check` (not
            // read, and never the name of an SQLite file made on disk).
            return Ok(Database::Postgres(s.to_string()));
        }
        Ok(Database::Sqlite(PathBuf::from(s)))
    }

    /// A PostgreSQL URL the driver can read (errors never quote it).
    pub fn check(&self) -> Result<(), UrlError> {
        match self {
            Database::Sqlite(_) => Ok(()),
            Database::Postgres(url) => db_url::check_url(url),
        }
    }
}

/// A config file's `db`: checked when opened ([`Db::open`], [`connect`]),
/// not here, because a TOML error quotes the line it is on, password and
/// all.
impl<'de> serde::Deserialize<'de> for Database {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Database, D::Error> {
        Database::unchecked(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Shown without the password (logs, errors): see [`db_url::redacted`].
impl std::fmt::Display for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            Database::Postgres(url) => write!(f, "{}", db_url::redacted(url)),
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Database({self})")
    }
}

/// Opens (creating if needed) the SQLite database at `path` and migrates it.
/// A new file is made owner-only first (it holds webhook secrets in clear),
/// and SQLite gives its -wal and -shm files the same mode; an existing one
/// open to others is warned about.
pub fn open(path: &Path) -> DbResult<rusqlite::Connection> {
    open_with(path, Migration::Apply)
}

/// What opening a database does about its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Migration {
    /// Applies the migrations it lacks (the default).
    #[default]
    Apply,
    /// Changes nothing; refuses a database that lacks migrations (`qp serve
    /// --no-migrate`, after `qp migrate` was run on purpose).
    Require,
}

/// [`open`], migrating or only checking as `migration` says.
pub fn open_with(path: &Path, migration: Migration) -> DbResult<rusqlite::Connection> {
    crate::secret_files::create_private_file(path)
        .map_err(|e| DbError::Other(format!("{}: {e}", path.display())))?;
    warn_if_open(path);
    let mut conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Every statement the server runs stays prepared (rusqlite keeps 16 by
    // default, fewer than one ask-wait-answer cycle and the workers use, so
    // they were parsed again and again).
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Migrations run before foreign keys are enforced: rebuilding a table
    // (migration 11) must not cascade into the rows that refer to it.
    match migration {
        Migration::Apply => schema::migrate(&mut conn)?,
        Migration::Require => schema::require_current(&conn)?,
    }
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

/// Prepared statements an SQLite connection keeps (the store has about
/// 170 distinct statements; the loop uses a few dozen).
const STATEMENT_CACHE: usize = 256;

/// How long a SQLite statement waits for another writer's lock before
/// failing (`database is locked`). The push worker's outcome writes wait
/// less (`push::WRITE_TRY_WAIT`) and set it back to this.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Sets how long a SQLite connection waits for a lock from now on (a
/// caller that bounds one write sets it, then puts [`BUSY_TIMEOUT`] back).
pub fn set_busy_timeout(conn: &Conn, wait: Duration) -> DbResult<()> {
    conn.query(&format!("PRAGMA busy_timeout = {}", wait.as_millis()), &[])
        .map(|_| ())
}

/// Warns about the database file, its -wal and -shm, when others may read them.
fn warn_if_open(path: &Path) {
    let with = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let (wal, shm) = (with("-wal"), with("-shm"));
    crate::secret_files::warn_if_open([
        (path, "the database"),
        (wal.as_path(), "the database's WAL"),
        (shm.as_path(), "the database's shared memory file"),
    ]);
}

/// One migrated connection to `db`, for the admin command and tests.
pub fn connect(db: &Database) -> DbResult<Box<Conn>> {
    db.check()?;
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
/// (A second connection, on a thread of its own, only copies the WAL into
/// the main file: [`checkpoint`].)
///
/// PostgreSQL: a few threads, each with its own connection, taking jobs
/// from one queue. Concurrency is then real (within an instance and across
/// instances), and the store's writes that decide something are single
/// conditional statements (`UPDATE … WHERE state = 'pending'`), which
/// PostgreSQL makes atomic; the one exception, the pending quota, is
/// decided under an advisory lock (`questions::insert_asked`).
#[derive(Clone)]
pub struct Db {
    jobs: std::sync::mpsc::Sender<Job>,
    /// Statements sent, by the operation that sent them.
    pub round_trips: Arc<round_trips::RoundTrips>,
}

type Job = Box<dyn FnOnce(&Conn) + Send>;

/// Database threads (and connections) per instance on PostgreSQL.
pub const PG_CONNECTIONS: usize = 8;

impl Db {
    pub fn open(db: &Database) -> DbResult<Self> {
        Db::open_with(db, Migration::Apply)
    }

    /// Opens `db` for a server: on SQLite under the server lock
    /// ([`lifecycle`]: a second server on the file is refused).
    pub fn open_with(db: &Database, migration: Migration) -> DbResult<Self> {
        db.check()?;
        let (jobs, rx) = std::sync::mpsc::channel::<Job>();
        match db {
            Database::Sqlite(path) => {
                let lock = lifecycle::lock(path)?;
                let conn = open_with(path, migration)?;
                // Checkpoints run on a thread of their own (`checkpoint`);
                // this connection's own is the safety net.
                conn.pragma_update(
                    None,
                    "wal_autocheckpoint",
                    checkpoint::WRITER_CHECKPOINT_PAGES,
                )?;
                conn.pragma_update(None, "journal_size_limit", checkpoint::WAL_SIZE_LIMIT)?;
                let mut checkpointer = checkpoint::Checkpointer::start(path)?;
                spawn("qp-db".into(), move || {
                    // Ends at [`Db::close`] or when every Db handle is dropped.
                    for job in rx {
                        job(&conn);
                        checkpointer.poke();
                        if lifecycle::close_requested() {
                            break;
                        }
                    }
                    checkpointer.stop();
                    lifecycle::close_sqlite(conn, lock);
                })?;
                Ok(Db {
                    jobs,
                    round_trips: Default::default(),
                })
            }
            Database::Postgres(url) => {
                // The first connection migrates (and proves the URL works).
                // On a thread of its own: the sync client runs its own
                // runtime, which may not start inside the caller's.
                let first = {
                    let url = url.clone();
                    std::thread::spawn(move || {
                        let conn = pg::PgConn::open_with(&url, migration)?;
                        warn_unless_read_committed(&conn);
                        Ok::<_, DbError>(conn)
                    })
                    .join()
                    .map_err(|_| DbError::Other("connecting to PostgreSQL panicked".into()))??
                };
                let rx = Arc::new(Mutex::new(rx));
                let mut first = Some(first);
                for n in 0..PG_CONNECTIONS {
                    let (rx, url, conn) = (rx.clone(), url.clone(), first.take());
                    spawn(format!("qp-db-{n}"), move || run_pg_thread(&rx, &url, conn))?;
                }
                Ok(Db {
                    jobs,
                    round_trips: Default::default(),
                })
            }
        }
    }

    /// Closes the database once the jobs queued before this one ran: on
    /// SQLite the WAL is checkpointed into the main file and the file
    /// closed and unlocked (later jobs fail: "the database threads have
    /// stopped"). The end of a graceful stop.
    pub async fn close(&self) {
        let (done, closed) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| lifecycle::request_close(conn, done));
        if self.jobs.send(job).is_ok() {
            let _ = closed.await;
        }
    }

    /// Runs `f` on a database thread and awaits its result. A panic in `f`
    /// is caught there (the thread lives on) and resumed in the caller.
    /// Its statements count as [`Op::Other`](round_trips::Op::Other).
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static + From<DbError>,
        F: FnOnce(&Conn) -> Result<T, E> + Send + 'static,
    {
        self.run_as(round_trips::Op::Other, f).await
    }

    /// [`Db::run`], its statements counted under `op`.
    pub async fn run_as<T, E, F>(&self, op: round_trips::Op, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static + From<DbError>,
        F: FnOnce(&Conn) -> Result<T, E> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let counts = self.round_trips.clone();
        let job: Job = Box::new(move |conn| {
            let sent = round_trips::sent();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(conn)));
            counts.add(op, round_trips::sent() - sent);
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

/// Says so at start when the default isolation qp's connections get is
/// not READ COMMITTED (READ UNCOMMITTED is the same in PostgreSQL). Each
/// connection sets it for its session, which holds, except behind a pooler
/// in transaction mode: there a single statement may run on a server
/// connection at the default, and an answer racing another could fail
/// with a serialization error instead of losing cleanly.
fn warn_unless_read_committed(conn: &pg::PgConn) {
    match conn.default_isolation() {
        Ok((level, _)) if level == "read committed" || level == "read uncommitted" => {}
        Ok((level, role)) => tracing::warn!(
            default_transaction_isolation = %level,
            "the default transaction isolation here is {level}, not read committed: qp sets \
             READ COMMITTED on each of its connections, which a pooler in transaction mode \
             (PgBouncer's pool_mode = transaction) does not keep for single statements; set \
             the default for the role that connects: ALTER ROLE \"{role}\" SET \
             default_transaction_isolation = 'read committed' (with IN DATABASE if a setting \
             for that role in this database is the one that says {level})"
        ),
        Err(e) => {
            tracing::debug!(error = %e, "the default transaction isolation could not be read")
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
    /// A count at its limit: `field` is what would exceed it.
    #[error("{message}")]
    Limit {
        field: &'static str,
        message: String,
    },
    #[error("database error: {0}")]
    Db(#[from] DbError),
}

/// Sends `payload` on PostgreSQL's `channel` (delivered to the listeners
/// when the transaction commits); nothing on SQLite (one instance).
pub fn notify(conn: &Conn, channel: &str, payload: &str) -> DbResult<()> {
    if conn.backend() == Backend::Postgres {
        conn.execute("SELECT pg_notify(?1, ?2)", crate::params![channel, payload])?;
    }
    Ok(())
}

/// Starts listening on PostgreSQL's `channel` on a connection of its own.
pub async fn listen(
    client: &tokio_postgres::Client,
    channel: &str,
) -> Result<(), tokio_postgres::Error> {
    client.batch_execute(&format!("LISTEN {channel}")).await
}

/// `SELECT 1`: whether the database answers (`/healthz`, `/readyz`).
pub fn ping(conn: &Conn) -> DbResult<i64> {
    conn.query_row("SELECT 1", &[], |r| r.get::<i64>(0))
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
    fn a_database_setting_is_a_file_or_a_postgres_url() {
        assert_eq!(
            "qp.sqlite".parse::<Database>().unwrap(),
            Database::Sqlite("qp.sqlite".into())
        );
        let pg: Database = "postgres://qp:s3cret@db.internal:5432/qp".parse().unwrap();
        assert!(matches!(pg, Database::Postgres(_)));
        assert!(" ".parse::<Database>().is_err());
    }

    /// Every way a password can sit in a URL, and URLs
    /// the driver cannot read, shown (Display, Debug, errors) without it.
    #[test]
    fn a_postgres_url_is_shown_without_its_password_in_every_form() {
        let cases: &[(&str, &str)] = &[
            (
                "postgres://qp:s3cret@db.internal:5432/qp",
                "postgres://qp:***@db.internal:5432/qp",
            ),
            ("postgresql://qp@db/qp", "postgresql://qp@db:5432/qp"),
            (
                "postgres://qp@db/qp?password=s3cret",
                "postgres://qp:***@db:5432/qp?password=***",
            ),
            (
                "postgres://qp:s3cret@db/qp?sslmode=require&password=s3cret&application_name=a",
                "postgres://qp:***@db:5432/qp?sslmode=require&password=***&application_name=a",
            ),
            // An unencoded @ in the password: nothing of it, before or after.
            (
                "postgres://qp:hunt@er2@db:5432/qp",
                "postgres://qp:***@db:5432/qp",
            ),
            ("postgres://qp:p%40ss@db/qp", "postgres://qp:***@db:5432/qp"),
            (
                "postgres://qp:s3cret@[::1]:5433/qp",
                "postgres://qp:***@[::1]:5433/qp",
            ),
            (
                "postgres://qp:s3cret@h1:5432,h2:5433/qp",
                "postgres://qp:***@h1:5432,h2:5433/qp",
            ),
            // Query parameters it does not know are hidden, name and all.
            (
                "postgres://qp@db/qp?pass%77ord=s3cret",
                "postgres://qp:***@db:5432/qp?***",
            ),
            // A password with ? and = in it (unencoded).
            (
                "postgres://qp:a?b=s3cret@db/qp",
                "postgres://qp:***@db:5432/qp",
            ),
            (
                "postgres://qp:s3cret@db:notaport/qp",
                "postgres://… (not a URL the driver reads; not shown)",
            ),
            (
                "postgres://qp@db/qp?password=s3cret&bogus_option=1",
                "postgres://… (not a URL the driver reads; not shown)",
            ),
        ];
        for (url, shown) in cases {
            let db = Database::Postgres(url.to_string());
            assert_eq!(db.to_string(), *shown, "{url}");
            for text in [db.to_string(), format!("{db:?}")] {
                for secret in ["s3cret", "hunt", "er2", "p%40ss"] {
                    assert!(!text.contains(secret), "{url} shown as {text}");
                }
            }
        }
    }

    /// Parse errors name the rule and never quote the URL.
    #[test]
    fn a_bad_postgres_url_is_refused_without_quoting_it() {
        for (url, says) in [
            (
                "postgres://qp:s3cret@db:notaport/qp",
                "db: not a valid PostgreSQL URL",
            ),
            (
                "postgres://qp:hunt@er2@db/qp",
                "write an @ in the password as %40",
            ),
        ] {
            let e = url.parse::<Database>().unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
            assert!(!e.contains("s3cret") && !e.contains("er2"), "{e}");
        }
        // A config file's value is checked when opened, with the same words.
        let lenient: Database = serde_json::from_str("\"postgres://qp:hunt@er2@db/qp\"").unwrap();
        let e = super::connect(&lenient).err().unwrap().to_string();
        assert!(e.contains("%40") && !e.contains("er2"), "{e}");
    }
}
