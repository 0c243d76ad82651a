//! `qp admin backup FILE`: an online, consistent copy of the SQLite
//! database while `qp serve` keeps running, and the export of who answered
//! what (`qp admin questions export`).
//!
//! The copy is SQLite's `VACUUM INTO`: it reads the database in one read
//! transaction (WAL lets the server keep writing meanwhile), so the copy
//! is the database as of one instant, every committed transaction before
//! it and none after, compacted, with no -wal file to go with it. It is
//! written to `FILE.partial` (owner-only: it holds webhook secrets) and
//! renamed into place once its integrity check passes, so `FILE` is never
//! half a backup. On PostgreSQL the documented way is `pg_dump`.
//!
//! The Web Push (VAPID) key made beside the database at first start is
//! copied too, to `FILE.vapid-key` (owner-only): every browser's
//! subscription is bound to it, so a restore without it would leave them
//! all silently unreachable. Restored beside the database under the same
//! name (`DB.vapid-key`), the server uses it again.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use super::{Conn, Database, DbResult};
use crate::params;

/// What a backup wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Backup {
    pub file: PathBuf,
    pub bytes: u64,
    pub schema_version: usize,
    pub questions: i64,
    /// The copy of the database's Web Push key (`FILE.vapid-key`), when
    /// the database has one.
    pub vapid_key: Option<PathBuf>,
}

/// What `qp admin backup` says on PostgreSQL.
pub const POSTGRES_WAY: &str = "on PostgreSQL, back up with pg_dump (online and consistent): \
    pg_dump --format=custom --file qp.dump \"$QP_DB\"; restore into an empty database with \
    pg_restore --no-owner --dbname \"$NEW_DB\" qp.dump (see docs/operators/backups.md)";

/// Why a backup was not made (what was written of it is removed).
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{POSTGRES_WAY}")]
    Postgres,
    #[error("{}: no such database file", .0.display())]
    NoDatabase(PathBuf),
    #[error("{}: already exists; give a new file name (a backup never overwrites)", .0.display())]
    Exists(PathBuf),
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{}: the path must be valid UTF-8", .0.display())]
    NotUtf8(PathBuf),
    #[error("the copy {}: {source}", path.display())]
    Copy {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("the copy {} failed its integrity check: {found}", path.display())]
    Integrity { path: PathBuf, found: String },
    #[error(transparent)]
    Db(#[from] super::DbError),
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::File {
        path: path.to_path_buf(),
        source,
    }
}

/// Copies the SQLite database `db` into `to`, which must not exist.
pub fn backup(db: &Database, to: &Path) -> Result<Backup, BackupError> {
    let Database::Sqlite(from) = db else {
        return Err(BackupError::Postgres);
    };
    if !from.exists() {
        return Err(BackupError::NoDatabase(from.clone()));
    }
    if to.exists() {
        return Err(BackupError::Exists(to.to_path_buf()));
    }
    let partial = {
        let mut p = to.as_os_str().to_owned();
        p.push(".partial");
        PathBuf::from(p)
    };
    let _ = std::fs::remove_file(&partial);
    crate::secret_files::create_private_file(&partial).map_err(file_error(&partial))?;
    let copied = copy_into(from, &partial);
    let checked = copied.and_then(|()| check(&partial));
    // The key goes in place before the database is published: a FILE that
    // exists is a whole backup, its key beside it.
    let keyed = checked.and_then(|c| Ok((c, copy_vapid_key(db, to)?)));
    match keyed {
        Ok(((schema_version, questions), vapid_key)) => {
            std::fs::rename(&partial, to).map_err(file_error(to))?;
            let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
            Ok(Backup {
                file: to.to_path_buf(),
                bytes,
                schema_version,
                questions,
                vapid_key,
            })
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// Copies the database's VAPID key (`DB.vapid-key`), if it has one, to
/// `FILE.vapid-key`, owner-only: the name the server looks for beside a
/// database restored from `FILE`. Written to a file this call creates
/// (`create_new`: it follows no link and opens nothing already there),
/// then renamed over the name, which replaces whatever is there (a link
/// included) and never writes through it: the private key never lands
/// where a link planted beside the backup points.
fn copy_vapid_key(db: &Database, to: &Path) -> Result<Option<PathBuf>, BackupError> {
    let (Some(key), Some(copy)) = (
        db.vapid_key_beside(),
        Database::Sqlite(to.to_path_buf()).vapid_key_beside(),
    ) else {
        return Ok(None);
    };
    let text = match std::fs::read(&key) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // No key: an older backup's key beside this name would be
            // restored with this database as if it were its own.
            return match std::fs::remove_file(&copy) {
                Ok(()) => Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(file_error(&copy)(e)),
            };
        }
        Err(e) => return Err(file_error(&key)(e)),
    };
    let partial = {
        let mut p = copy.as_os_str().to_owned();
        p.push(".partial");
        PathBuf::from(p)
    };
    let written = write_new_private(&partial, &text)
        .and_then(|()| std::fs::rename(&partial, &copy))
        .map_err(file_error(&copy));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.map(|()| Some(copy))
}

/// Writes `data` to `path`, a file made now (0600), never one that was
/// there: an earlier leftover (or a link) is removed first, and anything
/// that appears there meanwhile is an error, not written through.
fn write_new_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(crate::secret_files::FILE_MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

fn copy_into(from: &Path, partial: &Path) -> Result<(), BackupError> {
    let sqlite = |source| BackupError::Read {
        path: from.to_path_buf(),
        source,
    };
    // Not `store::open`: a backup reads, it never migrates the database.
    let conn = rusqlite::Connection::open_with_flags(
        from,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(sqlite)?;
    let target = partial
        .to_str()
        .ok_or_else(|| BackupError::NotUtf8(partial.to_path_buf()))?;
    conn.execute("VACUUM INTO ?1", [target]).map_err(sqlite)?;
    Ok(())
}

/// The copy's integrity check, schema version and question count.
fn check(path: &Path) -> Result<(usize, i64), BackupError> {
    let err = |source| BackupError::Copy {
        path: path.to_path_buf(),
        source,
    };
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(err)?;
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(err)?;
    if ok != "ok" {
        return Err(BackupError::Integrity {
            path: path.to_path_buf(),
            found: ok,
        });
    }
    let version = super::schema::version_of(&c)?;
    let questions = c
        .query_row("SELECT COUNT(*) FROM questions", [], |r| r.get(0))
        .map_err(err)?;
    Ok((version, questions))
}

/// `qp admin questions export --since`: one JSON object per question
/// created at or after `since` (Unix seconds), oldest first, with its
/// room, agent, state, answer, responder and the responder's devices that
/// were sent the question (the server does not learn which of a person's
/// devices sent the answer; none listed once the push jobs are past their
/// retention). `after_seq` pages: pass the last row's `seq`.
pub fn export_questions(
    conn: &Conn,
    since: i64,
    after_seq: i64,
    limit: usize,
) -> DbResult<Vec<(i64, Value)>> {
    let rows: Vec<(i64, String, String, String, String, Option<String>)> = conn.query_map(
        "SELECT q.seq, q.body, r.code, a.id, a.name, q.target_user_id FROM questions q
         JOIN rooms r ON r.id = q.room_id JOIN agents a ON a.id = q.agent_id
         WHERE q.created_at >= ?1 AND q.seq > ?2 ORDER BY q.seq LIMIT ?3",
        params![since, after_seq, limit],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        },
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for (seq, body, room, agent_id, agent_name, target) in rows {
        let q: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let responder = q["answer"]["responder"].clone();
        let devices: Vec<Value> = match responder["id"].as_str() {
            Some(user) => conn.query_map(
                "SELECT d.id, d.platform FROM push_jobs j JOIN devices d ON d.id = j.device_id
                 WHERE j.question_id = ?1 AND j.kind = 'question' AND d.user_id = ?2
                 ORDER BY d.id",
                params![q["id"].as_str().unwrap_or_default(), user],
                |r| Ok(json!({ "id": r.get::<String>(0)?, "platform": r.get::<String>(1)? })),
            )?,
            None => Vec::new(),
        };
        out.push((
            seq,
            json!({
                "id": q["id"],
                "room": room,
                "agent": { "id": agent_id, "name": agent_name },
                "target_user_id": target,
                "title": q["title"],
                "state": q["state"],
                "created_at": q["created_at"],
                "answer": q["answer"],
                "responder": responder,
                "responder_devices": devices,
            }),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A database with a VAPID key beside it, in a fresh folder.
    fn database() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("qp.sqlite");
        let mut conn = rusqlite::Connection::open(&db).unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        std::fs::write(dir.path().join("qp.sqlite.vapid-key"), "the-private-key").unwrap();
        (dir, Database::Sqlite(db))
    }

    /// A link planted where the key's copy goes (by anyone who may write
    /// in the backup's folder) is replaced, never written through: before,
    /// the copy was opened by name after the link could appear, and the
    /// private key landed where the link pointed.
    #[test]
    fn the_keys_copy_is_never_written_through_a_link() {
        let (dir, db) = database();
        let out = dir.path().join("backups");
        std::fs::create_dir(&out).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, out.join("b.sqlite.vapid-key")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, out.join("b.sqlite.vapid-key.partial")).unwrap();
        let done = backup(&db, &out.join("b.sqlite")).unwrap();
        let copy = done.vapid_key.unwrap();
        assert!(!elsewhere.exists(), "the key was written through the link");
        let meta = std::fs::symlink_metadata(&copy).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), "the-private-key");
    }

    /// A database with no key, backed up over an older backup's name: the
    /// old backup's key is removed, not left to be restored as this one's.
    #[test]
    fn a_backup_without_a_key_leaves_no_older_key_beside_it() {
        let (dir, db) = database();
        std::fs::remove_file(dir.path().join("qp.sqlite.vapid-key")).unwrap();
        let to = dir.path().join("b.sqlite");
        std::fs::write(dir.path().join("b.sqlite.vapid-key"), "an-older-key").unwrap();
        let done = backup(&db, &to).unwrap();
        assert_eq!(done.vapid_key, None);
        assert!(to.exists());
        assert!(
            !dir.path().join("b.sqlite.vapid-key").exists(),
            "an older backup's key stayed beside this one"
        );
    }

    /// When the key cannot be copied, no backup is published: a FILE that
    /// exists always has its key beside it (before, the database was
    /// renamed into place first, then the key's copy failed).
    #[test]
    fn no_backup_is_published_without_its_key() {
        let (dir, db) = database();
        let to = dir.path().join("b.sqlite");
        // A folder where the key's copy goes: the rename over it fails.
        std::fs::create_dir(dir.path().join("b.sqlite.vapid-key")).unwrap();
        std::fs::write(dir.path().join("b.sqlite.vapid-key/x"), "").unwrap();
        let e = backup(&db, &to).unwrap_err().to_string();
        assert!(e.contains("b.sqlite.vapid-key"), "{e}");
        assert!(!to.exists(), "a backup without its key was published");
        assert!(!dir.path().join("b.sqlite.partial").exists());
    }
}
