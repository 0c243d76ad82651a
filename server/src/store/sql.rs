//! One small SQL interface over the server's two databases: the embedded
//! SQLite file (the default) and PostgreSQL (several instances, one truth).
//!
//! The store's functions are written once against [`Conn`] in the SQL both
//! engines accept: `?1`-style parameters (turned into PostgreSQL's `$1` by
//! its backend), `INSERT … ON CONFLICT DO NOTHING`, integers as 64-bit,
//! text as text. Only the schema differs (see `schema.rs` and `pg_schema.rs`).
//! Parameters are borrowed ([`Param`]), rows are owned ([`Row`]), and
//! `Conn::transaction` gives a guard that rolls back unless committed.

use std::cell::Cell;

/// Which engine a connection talks to (for the few statements that differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A failure of the database layer.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("PostgreSQL: {}", with_causes(.0))]
    Postgres(#[from] postgres::Error),
    /// A query that must return a row returned none.
    #[error("no such row")]
    NoRow,
    /// A column did not hold what the code reads from it.
    #[error("column {index}: {source}")]
    Column { index: usize, source: ValueError },
    /// No connection to the database could be made.
    #[error("no database connection: {0}")]
    Unavailable(String),
    /// The database setting cannot be used (never quoting its password).
    #[error(transparent)]
    Url(#[from] super::db_url::UrlError),
    /// The database thread or pool is gone, a migration failed, and the like.
    #[error("{0}")]
    Other(String),
}

/// An error with what caused it ("error performing TLS handshake: invalid
/// peer certificate: UnknownIssuer"): the driver's top line alone hides it.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let line = c.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        cause = c.source();
    }
    text
}

impl DbError {
    /// A UNIQUE or PRIMARY KEY constraint refused the write.
    pub fn is_unique_violation(&self) -> bool {
        match self {
            DbError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => {
                e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                    || e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
            }
            DbError::Postgres(e) => e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
            _ => false,
        }
    }
}

impl DbError {
    /// The database cannot be reached right now (PostgreSQL restarting, the
    /// network): worth a retry, not a bug.
    pub fn is_unavailable(&self) -> bool {
        match self {
            DbError::Postgres(e) => {
                use std::error::Error as _;
                e.is_closed()
                    // connection_exception, admin/crash shutdown, cannot connect now
                    || e.code().is_some_and(|c| {
                        c.code().starts_with("08") || c.code().starts_with("57P")
                    })
                    || e.source().is_some_and(|s| s.is::<std::io::Error>())
            }
            DbError::Unavailable(_) => true,
            _ => false,
        }
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// A statement parameter, borrowed from the caller.
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Null,
    Int(i64),
    Text(&'a str),
}

/// What can be bound as a parameter (through [`params!`](crate::params)).
pub trait ToParam {
    fn to_param(&self) -> Param<'_>;
}

impl ToParam for str {
    fn to_param(&self) -> Param<'_> {
        Param::Text(self)
    }
}
impl ToParam for String {
    fn to_param(&self) -> Param<'_> {
        Param::Text(self)
    }
}
impl<T: ToParam + ?Sized> ToParam for &T {
    fn to_param(&self) -> Param<'_> {
        (**self).to_param()
    }
}
impl<T: ToParam> ToParam for Option<T> {
    fn to_param(&self) -> Param<'_> {
        self.as_ref().map_or(Param::Null, ToParam::to_param)
    }
}
impl ToParam for bool {
    fn to_param(&self) -> Param<'_> {
        Param::Int(*self as i64)
    }
}
macro_rules! int_params {
    ($($t:ty),*) => {$(
        impl ToParam for $t {
            fn to_param(&self) -> Param<'_> {
                Param::Int(*self as i64)
            }
        }
    )*};
}
int_params!(i64, i32, u32, u16, u8);
impl ToParam for usize {
    fn to_param(&self) -> Param<'_> {
        Param::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

/// `params![a, b, …]`: the parameters of one statement, by position
/// (`?1`, `?2`, …).
#[macro_export]
macro_rules! params {
    ($($x:expr),* $(,)?) => {
        &[$($crate::store::sql::ToParam::to_param(&$x)),*] as &[$crate::store::sql::Param]
    };
}

/// A value read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Text(String),
}

/// One result row, read by column index.
#[derive(Debug, Clone)]
pub struct Row(pub(crate) Vec<Value>);

impl Row {
    pub fn get<T: FromValue>(&self, index: usize) -> DbResult<T> {
        let value = self.0.get(index).ok_or(DbError::Column {
            index,
            source: ValueError::NoSuchColumn,
        })?;
        T::from_value(value).map_err(|source| DbError::Column { index, source })
    }
}

/// Why a column's value cannot be read as what the code wants.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// The row has fewer columns than the index read.
    #[error("no such column")]
    NoSuchColumn,
    /// Another kind of value than the one wanted (`expected`: `text`,
    /// `an integer`).
    #[error("expected {expected}, found {found:?}")]
    Kind {
        expected: &'static str,
        found: Value,
    },
    /// An integer that does not fit the type read (`target`).
    #[error("{value} is out of range for {target}")]
    OutOfRange { value: i64, target: &'static str },
    /// A column type the store never writes (the engine's name for it).
    #[error("unexpected {0}")]
    UnexpectedType(String),
    /// A JSON document the store wrote (`what`) that does not parse back.
    #[error("a stored {what} does not parse: {reason}")]
    Json { what: &'static str, reason: String },
}

/// What a column can be read as.
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self, ValueError>;
}

impl FromValue for String {
    fn from_value(v: &Value) -> Result<Self, ValueError> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            other => Err(ValueError::Kind {
                expected: "text",
                found: other.clone(),
            }),
        }
    }
}
impl FromValue for i64 {
    fn from_value(v: &Value) -> Result<Self, ValueError> {
        match v {
            Value::Int(i) => Ok(*i),
            other => Err(ValueError::Kind {
                expected: "an integer",
                found: other.clone(),
            }),
        }
    }
}
macro_rules! int_columns {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: &Value) -> Result<Self, ValueError> {
                let value = i64::from_value(v)?;
                <$t>::try_from(value).map_err(|_| ValueError::OutOfRange {
                    value,
                    target: stringify!($t),
                })
            }
        }
    )*};
}
int_columns!(i32, u32, u16, u8, usize);
impl FromValue for bool {
    fn from_value(v: &Value) -> Result<Self, ValueError> {
        Ok(i64::from_value(v)? != 0)
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Result<Self, ValueError> {
        match v {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// A connection to either database. Implemented by `rusqlite::Connection`
/// (below) and by the PostgreSQL connection (`pg.rs`); the store takes
/// `&Conn`, the object.
pub trait Sql {
    fn backend(&self) -> Backend;
    /// Runs one statement; returns how many rows it changed.
    fn execute(&self, sql: &str, params: &[Param]) -> DbResult<usize>;
    /// Runs one query; returns every row.
    fn query(&self, sql: &str, params: &[Param]) -> DbResult<Vec<Row>>;
    /// Runs statements without parameters (BEGIN, COMMIT, schema).
    fn batch(&self, sql: &str) -> DbResult<()>;
}

/// A boxed connection (`store::connect`) is one too, so `&boxed` is a `&Conn`.
impl<T: Sql + ?Sized> Sql for Box<T> {
    fn backend(&self) -> Backend {
        (**self).backend()
    }
    fn execute(&self, sql: &str, params: &[Param]) -> DbResult<usize> {
        (**self).execute(sql, params)
    }
    fn query(&self, sql: &str, params: &[Param]) -> DbResult<Vec<Row>> {
        (**self).query(sql, params)
    }
    fn batch(&self, sql: &str) -> DbResult<()> {
        (**self).batch(sql)
    }
}

/// What the store's functions take.
pub type Conn = dyn Sql;

impl dyn Sql {
    /// The first row, read by `f`; [`DbError::NoRow`] when there is none.
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: &[Param],
        f: impl FnOnce(&Row) -> DbResult<T>,
    ) -> DbResult<T> {
        self.query_opt(sql, params, f)?.ok_or(DbError::NoRow)
    }

    /// The first row, read by `f`, if there is one.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        params: &[Param],
        f: impl FnOnce(&Row) -> DbResult<T>,
    ) -> DbResult<Option<T>> {
        self.query(sql, params)?.first().map(f).transpose()
    }

    /// Every row, each read by `f`.
    pub fn query_map<T>(
        &self,
        sql: &str,
        params: &[Param],
        f: impl FnMut(&Row) -> DbResult<T>,
    ) -> DbResult<Vec<T>> {
        self.query(sql, params)?.iter().map(f).collect()
    }

    /// Begins a transaction: commit the guard, or it rolls back when dropped.
    pub fn transaction(&self) -> DbResult<Transaction<'_>> {
        self.batch(match self.backend() {
            // Said, not assumed: the pending quota's locking counts on each
            // statement of a transaction seeing what committed before it
            // began, even where a role or database defaults to another
            // level. (Each connection also sets it for its session,
            // `PgConn::connect`, but behind a pooler in transaction mode a
            // session setting may not follow the client; this always does.)
            Backend::Postgres => "BEGIN ISOLATION LEVEL READ COMMITTED",
            // IMMEDIATE: the write lock at BEGIN, waited for under the busy
            // timeout. A deferred transaction that reads, then writes, fails
            // at once with "database is locked" when another process (a
            // `qp admin` beside `qp serve`) committed in between: SQLite
            // cannot upgrade its stale read snapshot, so it does not wait.
            Backend::Sqlite => "BEGIN IMMEDIATE",
        })?;
        Ok(Transaction {
            conn: self,
            open: Cell::new(true),
        })
    }
}

/// An open transaction on a [`Conn`] (which it derefs to).
pub struct Transaction<'a> {
    conn: &'a Conn,
    open: Cell<bool>,
}

impl Transaction<'_> {
    pub fn commit(self) -> DbResult<()> {
        // Marked closed only once COMMIT succeeded: a COMMIT that failed
        // may leave the transaction open (SQLite's SQLITE_BUSY), and the
        // guard's drop then rolls it back instead of leaving every later
        // statement on this connection inside it.
        self.conn.batch("COMMIT")?;
        self.open.set(false);
        Ok(())
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if self.open.get() {
            // An error path (or a failed COMMIT) left it open: undo. A
            // ROLLBACK with no transaction open fails harmlessly; a broken
            // PostgreSQL connection is replaced by its thread.
            let _ = self.conn.batch("ROLLBACK");
        }
    }
}

// ---- SQLite ----

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Param::Null => ValueRef::Null,
            Param::Int(i) => ValueRef::Integer(i),
            Param::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

impl Sql for rusqlite::Connection {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }

    fn execute(&self, sql: &str, params: &[Param]) -> DbResult<usize> {
        super::round_trips::sent_one();
        Ok(self
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(params))?)
    }

    fn query(&self, sql: &str, params: &[Param]) -> DbResult<Vec<Row>> {
        use rusqlite::types::ValueRef;
        super::round_trips::sent_one();
        let mut st = self.prepare_cached(sql)?;
        let columns = st.column_count();
        let mut rows = st.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match r.get_ref(i)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(n) => Value::Int(n),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    other => {
                        return Err(DbError::Column {
                            index: i,
                            source: ValueError::UnexpectedType(format!("{:?}", other.data_type())),
                        })
                    }
                });
            }
            out.push(Row(values));
        }
        Ok(out)
    }

    fn batch(&self, sql: &str) -> DbResult<()> {
        super::round_trips::sent_one();
        if matches!(sql, "BEGIN IMMEDIATE" | "COMMIT" | "ROLLBACK") {
            // Every transaction's: prepared once, not parsed each time.
            self.prepare_cached(sql)?.execute([])?;
            return Ok(());
        }
        Ok(self.execute_batch(sql)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_rolls_back_unless_committed() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        let conn: &Conn = &db;
        conn.batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
            .unwrap();
        {
            let tx = conn.transaction().unwrap();
            tx.execute(
                "INSERT INTO t (id, name) VALUES (?1, ?2)",
                crate::params![1, "a"],
            )
            .unwrap();
        }
        let tx = conn.transaction().unwrap();
        tx.execute(
            "INSERT INTO t (id, name) VALUES (?1, ?2)",
            crate::params![2, None::<&str>],
        )
        .unwrap();
        tx.commit().unwrap();
        let rows = conn
            .query_map("SELECT id, name FROM t", &[], |r| {
                Ok((r.get::<i64>(0)?, r.get::<Option<String>>(1)?))
            })
            .unwrap();
        assert_eq!(rows, vec![(2, None)]);
        let e = conn
            .execute(
                "INSERT INTO t (id, name) VALUES (?1, ?2)",
                crate::params![2, "b"],
            )
            .unwrap_err();
        assert!(e.is_unique_violation(), "{e}");
        assert!(matches!(
            conn.query_row("SELECT name FROM t WHERE id = 9", &[], |r| r
                .get::<String>(0)),
            Err(DbError::NoRow)
        ));
        let e = conn
            .query_row("SELECT name FROM t", &[], |r| r.get::<String>(0))
            .unwrap_err();
        assert_eq!(e.to_string(), "column 0: expected text, found Null");
    }

    /// A COMMIT that fails and leaves the transaction open (SQLite does
    /// that for a deferred foreign key) is rolled back by the guard: the
    /// connection's next statements do not run inside it.
    #[test]
    fn a_failed_commit_is_rolled_back() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.pragma_update(None, "foreign_keys", "ON").unwrap();
        let conn: &Conn = &db;
        conn.batch(
            "CREATE TABLE p (id INTEGER PRIMARY KEY);
             CREATE TABLE c (p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)",
        )
        .unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute("INSERT INTO c (p) VALUES (?1)", crate::params![7])
            .unwrap();
        assert!(tx.commit().is_err(), "the deferred foreign key must fail");
        assert!(db.is_autocommit(), "the failed transaction is still open");
        let rows = conn
            .query_map("SELECT p FROM c", &[], |r| r.get::<i64>(0))
            .unwrap();
        assert!(rows.is_empty(), "{rows:?}");
    }
}
