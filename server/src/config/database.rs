//! The database settings: `db` (an SQLite file or a PostgreSQL URL) and
//! `db_direct` (PostgreSQL reached without a pooler), kept whole through
//! the merge and never quoted in an error.

use serde::Serialize;

use crate::store::Database;

use super::{ConfigError, Settings};

/// `db`'s default: an SQLite file in the working directory.
pub const DEFAULT_DB_FILE: &str = "qp.sqlite";

/// `db_direct` goes only with a PostgreSQL `db`, and is a PostgreSQL URL.
pub(super) fn check_db_direct(s: &Settings) -> Result<(), ConfigError> {
    let rule = match (&s.db, &s.db_direct) {
        (_, None) | (Database::Postgres(_), Some(Database::Postgres(_))) => return Ok(()),
        (_, Some(Database::Sqlite(_))) => {
            "must be a postgres:// URL (the same database as db, without a pooler between)"
        }
        (Database::Sqlite(_), Some(_)) => {
            "only with a PostgreSQL db (an SQLite file has no pooler and no LISTEN)"
        }
    };
    Err(ConfigError::Invalid {
        key: "db_direct",
        rule: rule.into(),
    })
}

/// A `db` serialised for [`super::PartialSettings::over`] only: as given,
/// password and all (the merge must not lose it), never for a log.
pub(super) fn database_as_given<S: serde::Serializer>(
    db: &Option<Database>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match db {
        Some(Database::Sqlite(path)) => path.serialize(s),
        Some(Database::Postgres(url)) => url.serialize(s),
        None => s.serialize_none(),
    }
}

/// `--db` for clap: a value that does not parse is refused with what is
/// wrong, never quoted (clap's own message would print the URL, password
/// and all).
#[derive(Clone)]
pub struct DbArg;

impl clap::builder::TypedValueParser for DbArg {
    type Value = Database;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Database, clap::Error> {
        // --db or --db-direct: the message names the flag at fault (the
        // store's own messages say `db:`).
        let flag = arg.and_then(|a| a.get_long()).unwrap_or("db");
        let refuse = |message: String| {
            let message = message.strip_prefix("db: ").unwrap_or(&message);
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("--{flag}: {message}\n"),
            )
            .with_cmd(cmd)
        };
        value
            .to_str()
            .ok_or_else(|| refuse("must be valid UTF-8".into()))?
            .parse()
            .map_err(|e: crate::store::UrlError| refuse(e.to_string()))
    }
}
