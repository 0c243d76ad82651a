//! Secret settings read from files: `QP_DB_FILE` and `QP_METRICS_TOKEN_FILE`
//! name a file holding what `QP_DB` / `QP_METRICS_TOKEN` would (the
//! convention of Docker and Kubernetes secrets and systemd's
//! `LoadCredential=`), so a password or token need not sit in the
//! environment, a flag (`ps`) or the config file. The file's content,
//! without its trailing newline, is the value; a flag or the plain
//! variable, when given, is used instead.

/// The secret settings that have a `_FILE` variant: (variable, setting).
pub const SECRET_VARIABLES: [(&str, &str); 2] =
    [("QP_DB", "db"), ("QP_METRICS_TOKEN", "metrics_token")];

/// Why a `_FILE` variable gave no value: its words name the variable and
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("{variable}: cannot read {path}: {source}")]
    Unreadable {
        variable: String,
        path: String,
        source: std::io::Error,
    },
    #[error("{variable}: {path} is empty")]
    Empty { variable: String, path: String },
}

/// The value `{var}_FILE` names, if that variable is set.
pub fn from_file(var: &str) -> Result<Option<String>, SecretFileError> {
    let variable = format!("{var}_FILE");
    let Some(path) = std::env::var_os(&variable) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path).map_err(|source| SecretFileError::Unreadable {
        variable: variable.clone(),
        path: path.to_string_lossy().into_owned(),
        source,
    })?;
    let value = text.strip_suffix('\n').unwrap_or(&text);
    let value = value.strip_suffix('\r').unwrap_or(value);
    if value.is_empty() {
        return Err(SecretFileError::Empty {
            variable,
            path: path.to_string_lossy().into_owned(),
        });
    }
    Ok(Some(value.to_string()))
}
