//! A push credential read from a file and read again when the file changes
//! (the APNs `.p8` key, the FCM service-account JSON), as the TLS files are:
//! a key replaced by a secret manager or by hand needs no restart.
//!
//! The file is looked at (its modification time and length) at most once
//! per `every`, when the transport next needs the credential; a change that
//! does not load (a half-written file, not a key) is logged and the current
//! credential stays until the file changes again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often a watched key file is looked at, by default.
pub const CHECK_EVERY: Duration = Duration::from_secs(5);

/// The file a credential came from, and how often to look at it.
#[derive(Debug, Clone)]
pub struct WatchedFile {
    pub path: PathBuf,
    pub every: Duration,
}

impl WatchedFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        WatchedFile {
            path: path.into(),
            every: CHECK_EVERY,
        }
    }
}

/// What identifies a version of the file.
type Stamp = (Option<SystemTime>, u64);

fn stamp(path: &Path) -> Stamp {
    match std::fs::metadata(path) {
        Ok(m) => (m.modified().ok(), m.len()),
        Err(_) => (None, 0),
    }
}

struct State<T> {
    current: Arc<T>,
    /// The version `current` was loaded from (or last failed to load).
    seen: Stamp,
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
    pub fn new(setting: &'static str, first: T, file: Option<WatchedFile>) -> Self {
        let seen = file.as_ref().map_or((None, 0), |f| stamp(&f.path));
        Reloading {
            setting,
            file,
            state: Mutex::new(State {
                current: Arc::new(first),
                seen,
                checked: Instant::now(),
            }),
        }
    }

    /// The credential now, and whether it was just reloaded (the caller
    /// then drops what it derived from the old one: a signed token, a
    /// credential backoff). `load` reads the file when it changed.
    pub fn get(&self, load: impl FnOnce(&Path) -> Result<T, String>) -> (Arc<T>, bool) {
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
        match load(&file.path) {
            Ok(new) => {
                state.current = Arc::new(new);
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

    fn parse(path: &Path) -> Result<String, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        text.strip_prefix("key:")
            .map(str::to_string)
            .ok_or_else(|| "not a key".into())
    }

    #[test]
    fn a_changed_file_is_reloaded_and_a_bad_one_keeps_the_current_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "key:one").unwrap();
        let watched = WatchedFile {
            path: path.clone(),
            every: Duration::ZERO,
        };
        let r = Reloading::new("test_key", parse(&path).unwrap(), Some(watched));
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
    }

    #[test]
    fn the_file_is_looked_at_only_once_per_period() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "key:one").unwrap();
        let r = Reloading::new(
            "test_key",
            "one".to_string(),
            Some(WatchedFile {
                path: path.clone(),
                every: Duration::from_secs(3600),
            }),
        );
        std::fs::write(&path, "key:two!").unwrap();
        assert_eq!(r.get(parse).0.as_str(), "one");
        let fixed = Reloading::new("test_key", "fixed".to_string(), None);
        assert_eq!(fixed.get(parse).0.as_str(), "fixed");
    }
}
