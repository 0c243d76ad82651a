//! The agent credential `qp login` stores: the server URL and an agent
//! token, in the user's config directory, readable by the owner only. The
//! asker verbs use it when neither `--token` nor `QP_TOKEN` is given.
//!
//! Where: `$QP_CONFIG_DIR/credentials.json`, else
//! `$XDG_CONFIG_HOME/qp/credentials.json`, else `~/.config/qp/credentials.json`.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    pub url: String,
    pub token: String,
    pub agent_id: String,
    pub agent_name: String,
}

/// The credential file's path (none without a home directory).
pub fn path() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = var("QP_CONFIG_DIR")
        .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("qp")))
        .or_else(|| var("HOME").map(|h| h.join(".config").join("qp")))?;
    Some(dir.join("credentials.json"))
}

/// The stored credential, if there is a readable one.
pub fn load() -> Option<Credential> {
    let text = std::fs::read_to_string(path()?).ok()?;
    serde_json::from_str(&text).ok()
}

/// Stores `c`, replacing any earlier credential, owner-only (the folder too).
pub fn save(c: &Credential) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let path = path().ok_or_else(|| std::io::Error::other("no home or config directory"))?;
    let dir = path.parent().expect("a file in a folder");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    write_private(&path, serde_json::to_string_pretty(c)?.as_bytes())?;
    Ok(path)
}

/// Writes a secret file readable by its owner only (0600): under a temporary
/// name first, then renamed into place, so no reader ever sees it half
/// written or with wider permissions. Used for every token the CLI keeps.
pub fn write_private(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or_else(|| std::path::Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}
