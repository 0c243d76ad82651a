//! A secret value held in the server's settings (the `/metrics` token, the
//! APNs key, the FCM service account's key): `Debug` shows `Secret(…)`, so
//! a settings dump in a log, a panic or a test failure never carries it.
//! The database URLs have their own redacting `Debug`
//! ([`crate::store::Database`]).

use serde::{Deserialize, Serialize};

#[derive(Clone, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Secret<T = String>(T);

impl<T> Secret<T> {
    /// The value itself, for the code that uses it (signs, compares).
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> std::fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret(s.to_string())
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

impl From<Vec<u8>> for Secret<Vec<u8>> {
    fn from(bytes: Vec<u8>) -> Self {
        Secret(bytes)
    }
}

/// As a flag's or variable's value (clap parses through this).
impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret::from(s))
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_never_shows_the_value() {
        let token = Secret::from("scrape-secret-0123456789");
        let key = Secret::from(b"-----BEGIN PRIVATE KEY-----".to_vec());
        assert_eq!(format!("{token:?} {key:?}"), "Secret(…) Secret(…)");
        assert_eq!(token.expose(), "scrape-secret-0123456789");
    }
}
