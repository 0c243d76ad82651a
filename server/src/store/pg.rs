//! The PostgreSQL backend of [`Sql`]: one connection (the sync `postgres`
//! client) per database thread, prepared statements cached per connection,
//! the store's `?1` parameters written as PostgreSQL's `$1`. Its schema is
//! `pg_schema.rs` (SQLite's is `schema.rs`); its URLs are read and shown
//! by `db_url.rs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use postgres::types::{IsNull, ToSql, Type};
use postgres::{Client, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::db_url::driver_url;
use super::pg_schema::{migrate_to, version_of, VERSION};
use super::sql::{Backend, DbError, DbResult, Param, Row, Sql, Value};

/// A connection to PostgreSQL.
pub struct PgConn {
    client: RefCell<Client>,
    statements: RefCell<HashMap<String, Statement>>,
}

impl PgConn {
    /// Connects to `url` (`postgres://user:password@host:port/database`,
    /// with `sslmode` and `sslrootcert` as libpq reads them: see [`target`]).
    pub fn connect(url: &str) -> DbResult<PgConn> {
        let (url, tls) = target(url)?;
        let mut client = Client::connect(&url, tls)?;
        // The store's single statements (an answer's conditional update, a
        // job's claim) count on READ COMMITTED: a statement that waited for
        // a row another transaction changed re-reads it, and two racing
        // answers end with one winner. Under REPEATABLE READ or SERIALIZABLE
        // (a database's or role's default) the loser would fail with a
        // serialization error, a 500. Said for the session, as transactions
        // say it for themselves (`Conn::transaction`), rather than in the
        // startup packet's `options`, which poolers such as PgBouncer refuse.
        client.batch_execute(
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
        )?;
        Ok(PgConn {
            client: RefCell::new(client),
            statements: RefCell::new(HashMap::new()),
        })
    }

    /// Connects and brings the schema up to date.
    pub fn open(url: &str) -> DbResult<PgConn> {
        PgConn::open_with(url, super::Migration::Apply)
    }

    /// Connects, and migrates or only checks the schema as `migration` says.
    pub fn open_with(url: &str, migration: super::Migration) -> DbResult<PgConn> {
        let conn = PgConn::connect(url)?;
        match migration {
            super::Migration::Apply => migrate_to(&conn, VERSION)?,
            super::Migration::Require => super::schema::check_current(version_of(&conn)?, VERSION)?,
        }
        Ok(conn)
    }

    /// The isolation a transaction here gets when nothing says otherwise
    /// (set for the role in this database, the role, the database or the
    /// server), which the session setting of [`PgConn::connect`] hides from
    /// `SHOW`; and the role connected as (behind a pooler, the pooler's).
    pub fn default_isolation(&self) -> DbResult<(String, String)> {
        let conn: &super::Conn = self;
        conn.query_row(
            "SELECT reset_val, CAST(current_user AS TEXT) FROM pg_settings
             WHERE name = 'default_transaction_isolation'",
            &[],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// False once the server closed the connection (restart, network):
    /// the pool then connects anew.
    pub fn is_open(&self) -> bool {
        !self.client.borrow().is_closed()
    }

    fn statement(&self, sql: &str) -> DbResult<Statement> {
        if let Some(st) = self.statements.borrow().get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.borrow_mut().prepare(&dollar_params(sql))?;
        self.statements
            .borrow_mut()
            .insert(sql.to_string(), st.clone());
        Ok(st)
    }
}

/// What the driver gets for `url`: the URL without `sslrootcert` (which
/// tokio-postgres does not read), `sslmode=verify-full`/`verify-ca` as
/// `require`, and a TLS connector that always verifies the server's
/// certificate, against the public web roots plus the PEM file
/// `sslrootcert` names (a managed database's own CA). `sslmode=require`
/// insists on TLS; the default, `prefer`, uses it when the server offers it
/// (and then verifies it too); `disable` never does.
pub fn target(url: &str) -> DbResult<(String, MakeRustlsConnect)> {
    let bad = |message: String| DbError::Other(format!("db: {message}"));
    let (url, root_cert) = driver_url(url);
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = root_cert {
        use rustls_pki_types::pem::PemObject;
        let pem = std::fs::read(&path).map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
        let mut found = 0;
        for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
            found += 1;
        }
        if found == 0 {
            return Err(bad(format!("sslrootcert {path}: no PEM certificate in it")));
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok((url, MakeRustlsConnect::new(config)))
}

/// `?1` -> `$1`, outside quoted text.
fn dollar_params(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted && chars.peek().is_some_and(|d| d.is_ascii_digit()) => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

/// A parameter bound to whatever type PostgreSQL inferred for its place.
#[derive(Debug)]
struct Bound<'a>(Param<'a>);

impl ToSql for Bound<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
                Type::BOOL => (i != 0).to_sql(ty, out),
                _ => Err(format!("an integer cannot be bound to a {ty} parameter").into()),
            },
            Param::Text(s) => s.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true // checked in to_sql, per value
    }

    postgres::types::to_sql_checked!();
}

fn read_row(row: &postgres::Row) -> DbResult<Row> {
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let value = match *column.type_() {
            Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)?
                .map(|v| Value::Int(v.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)?
                .map(|v| Value::Int(v.into())),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)?
                .map(|v| Value::Int(v.into())),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                row.try_get::<_, Option<String>>(i)?.map(Value::Text)
            }
            ref other => {
                return Err(DbError::Column {
                    index: i,
                    source: super::sql::ValueError::UnexpectedType(format!("type {other}")),
                })
            }
        };
        values.push(value.unwrap_or(Value::Null));
    }
    Ok(Row(values))
}

impl Sql for PgConn {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    fn execute(&self, sql: &str, params: &[Param]) -> DbResult<usize> {
        super::round_trips::sent_one();
        let st = self.statement(sql)?;
        let bound: Vec<Bound> = params.iter().map(|p| Bound(*p)).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b as _).collect();
        Ok(self.client.borrow_mut().execute(&st, &refs)? as usize)
    }

    fn query(&self, sql: &str, params: &[Param]) -> DbResult<Vec<Row>> {
        super::round_trips::sent_one();
        let st = self.statement(sql)?;
        let bound: Vec<Bound> = params.iter().map(|p| Bound(*p)).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b as _).collect();
        let rows = self.client.borrow_mut().query(&st, &refs)?;
        rows.iter().map(read_row).collect()
    }

    fn batch(&self, sql: &str) -> DbResult<()> {
        super::round_trips::sent_one();
        Ok(self.client.borrow_mut().batch_execute(sql)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslrootcert_is_read_here_and_verify_modes_mean_require() {
        let (url, _) =
            target("postgres://qp@db/qp?sslmode=verify-full&application_name=a").unwrap();
        assert_eq!(
            url,
            "postgres://qp@db/qp?sslmode=require&application_name=a&connect_timeout=5"
        );
        let (url, _) = target("postgres://qp@db/qp?connect_timeout=30").unwrap();
        assert_eq!(url, "postgres://qp@db/qp?connect_timeout=30");
        let e = target("postgres://qp@db/qp?sslrootcert=/nonexistent/ca.pem")
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .starts_with("db: sslrootcert /nonexistent/ca.pem:"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate").unwrap();
        let e = target(&format!(
            "postgres://qp@db/qp?sslrootcert={}",
            empty.display()
        ))
        .err()
        .unwrap();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
    }

    #[test]
    fn parameters_are_renumbered_outside_quoted_text() {
        assert_eq!(
            dollar_params("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND d LIKE ?12 || '%'"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND d LIKE $12 || '%'"
        );
    }
}
