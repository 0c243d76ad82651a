//! Files that hold secrets (the SQLite database with its webhook secrets,
//! the ACME account key and certificate keys, TLS, APNs and FCM keys):
//! created readable by their owner only (0600, in 0700 folders the server
//! makes), whatever the umask; one found wider than that is reported at
//! start-up rather than changed behind the operator's back.

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// A secret file's mode.
pub const FILE_MODE: u32 = 0o600;
/// The mode of a folder made to hold secret files.
pub const DIR_MODE: u32 = 0o700;

/// Creates `dir` and any missing parents owner-only (0700). A folder that
/// exists already is left as it is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// Creates `path` empty and owner-only (0600) unless it exists, so that
/// what opens it next (SQLite) keeps that mode; SQLite gives its -wal and
/// -shm files the database file's mode.
pub fn create_private_file(path: &Path) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        create_private_dir(parent)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Sets `path` to 0600 (a file another library wrote under the umask).
pub fn make_private(path: &Path) -> io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(FILE_MODE))
}

/// What to tell the operator when `path` (a secret file, or a folder of
/// them) is open to its group or to others; None when it is not, or is
/// not there.
pub fn too_open(path: &Path, what: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return None;
    }
    let want = if meta.is_dir() { "700" } else { "600" };
    Some(format!(
        "{what} {} is open to other users (mode {mode:03o}) and holds secrets: chmod {want} {}",
        path.display(),
        path.display()
    ))
}

/// Logs [`too_open`]'s warning, if any, for each of `paths`.
pub fn warn_if_open<'a>(paths: impl IntoIterator<Item = (&'a Path, &'a str)>) {
    for (path, what) in paths {
        if let Some(warning) = too_open(path, what) {
            tracing::warn!("{warning}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_owner_only_whatever_the_umask_and_wider_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        let file = nested.join("qp.sqlite");
        create_private_file(&file).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(too_open(&file, "database"), None);
        std::fs::write(&file, b"kept").unwrap();
        create_private_file(&file).unwrap();
        assert_eq!(
            std::fs::read(&file).unwrap(),
            b"kept",
            "an existing file is kept"
        );

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let warning = too_open(&file, "database").unwrap();
        assert!(
            warning.contains("mode 644") && warning.contains("chmod 600"),
            "{warning}"
        );
        make_private(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        std::fs::set_permissions(&nested, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(too_open(&nested, "ACME cache")
            .unwrap()
            .contains("chmod 700"));
        assert_eq!(too_open(&dir.path().join("missing"), "x"), None);
    }
}
