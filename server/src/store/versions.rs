//! Which schema a database is at, and `qp migrate`: the upgrade step an
//! operator runs on purpose before starting servers with `--no-migrate`.
//!
//! The rule every migration follows (both engines): additive only (new
//! tables, new columns with a default or NULL, new indexes), never a
//! rename, a drop or a new constraint on old rows, so the previous
//! release's binary still runs on the new schema (a rolling upgrade on
//! PostgreSQL, a rollback without a restore). Both engines' runners use a
//! newer database as it is, with a warning.

use super::{Backend, Conn, Database, DbResult};

/// The schema version this build writes on `backend`.
pub fn this_version(backend: Backend) -> usize {
    match backend {
        Backend::Sqlite => super::schema::VERSION,
        Backend::Postgres => super::pg_schema::VERSION,
    }
}

/// The schema version the database behind `conn` records.
pub fn version_of(conn: &Conn) -> DbResult<usize> {
    let found: i64 = match conn.backend() {
        Backend::Sqlite => conn.query_row("PRAGMA user_version", &[], |r| r.get(0))?,
        Backend::Postgres => return super::pg_schema::recorded_version(conn),
    };
    Ok(usize::try_from(found).unwrap_or(0))
}

/// What `qp migrate` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Migrated {
    pub from: usize,
    pub to: usize,
    pub engine: &'static str,
}

/// Brings `db` up to this build's schema (creating it if missing).
pub fn migrate(db: &Database) -> DbResult<Migrated> {
    db.check()?;
    match db {
        Database::Sqlite(path) => {
            let from = if path.exists() {
                let c = rusqlite::Connection::open(path)?;
                super::schema::version_of(&c)?
            } else {
                0
            };
            let conn = super::open(path)?;
            Ok(Migrated {
                from,
                to: super::schema::version_of(&conn)?,
                engine: "sqlite",
            })
        }
        Database::Postgres(url) => {
            let conn = super::pg::PgConn::connect(url)?;
            let from = super::pg_schema::version_of(&conn)?;
            super::pg_schema::migrate_to(&conn, super::pg_schema::VERSION)?;
            Ok(Migrated {
                from,
                to: super::pg_schema::version_of(&conn)?,
                engine: "postgresql",
            })
        }
    }
}

/// A database at an older schema version, `version` migrations in: what
/// the previous release made (the upgrade test). Returns a connection.
#[doc(hidden)]
pub fn create_at_version(db: &Database, version: usize) -> DbResult<Box<Conn>> {
    match db {
        Database::Sqlite(path) => {
            let mut c = rusqlite::Connection::open(path)?;
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.pragma_update(None, "foreign_keys", "ON")?;
            super::schema::migrate_to(&mut c, version)?;
            Ok(Box::new(c))
        }
        Database::Postgres(url) => {
            let c = super::pg::PgConn::connect(url)?;
            super::pg_schema::migrate_to(&c, version)?;
            Ok(Box::new(c))
        }
    }
}
