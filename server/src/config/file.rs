//! The config file (TOML) and the layering of settings: flags and
//! environment over the file over the defaults.

use std::path::Path;

use super::{ConfigError, PartialSettings};

impl PartialSettings {
    /// Reads a TOML config file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            detail: toml_error(&text, &e),
        })
    }

    /// `self` over `lower`: each key given in `self` wins, every other
    /// comes from `lower`. Done through JSON objects (the keys serde's
    /// derive gives; JSON, not TOML, because it holds every `u64`), so a new
    /// setting needs no line here.
    pub fn over(self, lower: PartialSettings) -> Result<PartialSettings, ConfigError> {
        let object = |p: &PartialSettings| match serde_json::to_value(p) {
            // A key not given is null: it must not hide the one below.
            Ok(serde_json::Value::Object(mut o)) => {
                o.retain(|_, v| !v.is_null());
                Ok(o)
            }
            // The one value serde cannot write: a path that is not UTF-8.
            _ => Err(ConfigError::NonUtf8Path),
        };
        let mut merged = object(&lower)?;
        merged.extend(object(&self)?);
        serde_json::from_value(serde_json::Value::Object(merged))
            .map_err(|e| ConfigError::Layering(e.to_string()))
    }
}

/// A TOML error without the line it is on: toml's own rendering quotes
/// that line, and it may hold a secret (a `db` URL whose password has a
/// `"` or `\` in it, `metrics_token`). The line and
/// column, and toml's words, which name a key or what was expected; on a
/// line that sets a secret, not even those (a wrong type quotes the value).
pub(super) fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let Some(span) = e.span() else {
        return e.message().to_string();
    };
    let before = text.get(..span.start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    let line_text = text.lines().nth(line - 1).unwrap_or_default();
    let key = line_text.split('=').next().unwrap_or_default().trim();
    let key = key.trim_matches(|c| c == '"' || c == '\'');
    if ["db", "db_direct", "metrics_token"].contains(&key) {
        return format!(
            "line {line}, column {column}: the value of {key} is not valid (not shown: it may \
             hold a secret); in \"…\" write \" as \\\" and \\ as \\\\, or use '…'"
        );
    }
    // The key, when the line sets one of ours (a wrong type names only
    // what was expected).
    if config_keys().contains(&key) {
        format!("line {line}, column {column}: {key}: {}", e.message())
    } else {
        format!("line {line}, column {column}: {}", e.message())
    }
}

/// Every key of the config file, as the server reads them: the field
/// names serde's derive gives [`PartialSettings`] (so a new setting is a
/// new key here without another list to keep).
pub fn config_keys() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Grab(Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for &mut Grab {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only structs"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("names taken"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut grab = Grab(None);
    let _ = <PartialSettings as serde::Deserialize>::deserialize(&mut grab);
    grab.0.unwrap_or_default()
}
