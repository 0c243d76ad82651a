//! A push credential read from a file and read again when the file changes
//! (the APNs `.p8` key, the FCM service-account JSON), as the TLS files are:
//! a key replaced by a secret manager or by hand needs no restart.
//!
//! The file is looked at (its modification time and length) at most once
//! per `every`, when the transport next needs the credential; a change that
//! does not load (a half-written file, not a key) is logged and the current
//! credential stays until the file changes again.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::push::{stamp, Stamp, NO_FILE};
pub use crate::config::push::{WatchedFile, CHECK_EVERY};

struct State<T> {
    current: Arc<T>,
    /// The version `current` was loaded from (or last failed to load).
    seen: Stamp,
    /// The bytes `current` was made from: a file written again with the
    /// same content (a secret syncer's every poll) is not a new key.
    bytes: Option<Vec<u8>>,
    checked: Instant,
}

/// A credential, and the file it is reloaded from (none: never reloaded).
pub struct Reloading<T> {
    /// Names the setting in log lines (`apns_key`, `fcm_service_account`).
    setting: &'static str,
    file: Option<WatchedFile>,
    state: Mutex<State<T>>,
}

impl<T> Reloading<T> {
    /// `first` was made from `first_bytes`, read from the file when
    /// `file.seen` was taken (before the read, so a change in between is
    /// seen at the first check).
    pub fn new(setting: &'static str, first: T, file: Option<WatchedFile>) -> Self {
        let seen = file.as_ref().map_or(NO_FILE, |f| f.seen);
        let bytes = file.as_ref().and_then(|f| f.first_bytes.clone());
        Reloading {
            setting,
            file,
            state: Mutex::new(State {
                current: Arc::new(first),
                seen,
                bytes,
                checked: Instant::now(),
            }),
        }
    }

    /// The credential now, and whether it was just replaced by a different
    /// one (the caller then drops what it derived from the old one: a
    /// signed token, a credential backoff). `load` makes the credential
    /// from the file's bytes when the file changed.
    pub fn get(&self, load: impl FnOnce(&[u8]) -> Result<T, String>) -> (Arc<T>, bool) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Some(file) = &self.file else {
            return (state.current.clone(), false);
        };
        if state.checked.elapsed() < file.every {
            return (state.current.clone(), false);
        }
        state.checked = Instant::now();
        let now = stamp(&file.path);
        if now == state.seen {
            return (state.current.clone(), false);
        }
        // Whatever the outcome, this version is not read again: a file
        // that does not load is reported once, not every few seconds.
        state.seen = now;
        let bytes = match std::fs::read(&file.path) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(
                    setting = self.setting,
                    file = %file.path.display(),
                    error = %e,
                    "push credential file changed but cannot be read; the current credential stays"
                );
                return (state.current.clone(), false);
            }
        };
        if state.bytes.as_deref() == Some(bytes.as_slice()) {
            return (state.current.clone(), false);
        }
        match load(&bytes) {
            Ok(new) => {
                state.current = Arc::new(new);
                state.bytes = Some(bytes);
                tracing::info!(
                    setting = self.setting,
                    file = %file.path.display(),
                    "push credential reloaded from its changed file"
                );
                (state.current.clone(), true)
            }
            Err(error) => {
                tracing::warn!(
                    setting = self.setting,
                    file = %file.path.display(),
                    %error,
                    "push credential file changed but does not load; the current credential stays"
                );
                (state.current.clone(), false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parse(bytes: &[u8]) -> Result<String, String> {
        String::from_utf8_lossy(bytes)
            .strip_prefix("key:")
            .map(str::to_string)
            .ok_or_else(|| "not a key".into())
    }

    #[test]
    fn a_changed_file_is_reloaded_and_a_bad_one_keeps_the_current_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "key:one").unwrap();
        let (watched, bytes) = WatchedFile::read_every(&path, Duration::ZERO).unwrap();
        let r = Reloading::new("test_key", parse(&bytes).unwrap(), Some(watched));
        assert_eq!((r.get(parse).0.as_str(), r.get(parse).1), ("one", false));
        std::fs::write(&path, "key:second").unwrap();
        let (key, reloaded) = r.get(parse);
        assert_eq!((key.as_str(), reloaded), ("second", true));
        assert!(!r.get(parse).1, "an unchanged file is not read again");
        // Half-written: the old key stays, and is not re-read until changed.
        std::fs::write(&path, "ke").unwrap();
        assert_eq!(r.get(parse).0.as_str(), "second");
        std::fs::write(&path, "key:third!").unwrap();
        assert_eq!(r.get(parse), (Arc::new("third!".to_string()), true));
        // Written again with the same key (a syncer's poll): not a new key.
        std::fs::write(&path, "key:third!").unwrap();
        assert!(!r.get(parse).1);
        // Unreadable, then made readable by chmod alone (only the status
        // change time moves): read then.
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&path, "key:fourth").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        let unreadable = std::fs::read(&path).is_err(); // root reads anyway
        let (_, reloaded) = r.get(parse);
        assert_eq!(reloaded, !unreadable);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(r.get(parse).0.as_str(), "fourth");
        // A symlink swapped to another file (Kubernetes' secret update).
        let other = dir.path().join("other");
        std::fs::write(&other, "key:fifth").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let (watched, bytes) = WatchedFile::read_every(&link, Duration::ZERO).unwrap();
        let r = Reloading::new("test_key", parse(&bytes).unwrap(), Some(watched));
        let tmp = dir.path().join("link.tmp");
        std::os::unix::fs::symlink(&other, &tmp).unwrap();
        std::fs::rename(&tmp, &link).unwrap();
        assert_eq!(r.get(parse), (Arc::new("fifth".to_string()), true));
    }

    #[test]
    fn the_file_is_looked_at_only_once_per_period() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "key:one").unwrap();
        let (watched, _) = WatchedFile::read_every(&path, Duration::from_secs(3600)).unwrap();
        let r = Reloading::new("test_key", "one".to_string(), Some(watched));
        std::fs::write(&path, "key:two!").unwrap();
        assert_eq!(r.get(parse).0.as_str(), "one");
        let fixed = Reloading::new("test_key", "fixed".to_string(), None);
        assert_eq!(fixed.get(parse).0.as_str(), "fixed");
    }
}
