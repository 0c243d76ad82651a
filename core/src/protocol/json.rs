//! Typed reads out of a `serde_json` object that fail with a [`ValidationError`]
//! naming the field. We read requests as `Value` rather than deriving
//! `Deserialize` so that every wrong type gets a field path and a stable code
//! instead of serde's free-form message, and unknown fields are simply ignored.

use serde_json::{Map, Value};

use super::error::{ErrorCode, ValidationError};

/// The JSON type name used in error messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn wrong_type(field: &str, expected: &str, got: &Value) -> ValidationError {
    ValidationError::new(
        field,
        ErrorCode::InvalidType,
        format!("must be {expected}, got {}", type_name(got)),
    )
}

/// An optional field: absent and `null` both read as `None`.
pub(crate) fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

pub(crate) fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<&'a str>, ValidationError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(wrong_type(field, "a string", other)),
    }
}

pub(crate) fn opt_bool(
    obj: &Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<bool>, ValidationError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(wrong_type(field, "a boolean", other)),
    }
}

/// An optional whole number. `1800` and `1800.0` are accepted; `1800.5` and
/// `"1800"` are type errors. Values beyond `i64` saturate, so the caller's
/// clamping still applies.
pub(crate) fn opt_int(
    obj: &Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<i64>, ValidationError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Ok(Some(i))
            } else if n.as_u64().is_some() {
                Ok(Some(i64::MAX))
            } else {
                match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.is_finite() => {
                        Ok(Some(f.clamp(i64::MIN as f64, i64::MAX as f64) as i64))
                    }
                    _ => Err(ValidationError::new(
                        field,
                        ErrorCode::InvalidType,
                        "must be a whole number",
                    )),
                }
            }
        }
        Some(other) => Err(wrong_type(field, "a whole number", other)),
    }
}

/// Number of characters (Unicode scalar values) in `s`.
pub(crate) fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Checks `1 <= chars(s) <= max`, naming the field in the error.
pub(crate) fn check_len(field: &str, s: &str, max: usize) -> Result<(), ValidationError> {
    let n = char_len(s);
    if n == 0 {
        return Err(ValidationError::new(
            field,
            ErrorCode::Empty,
            "must not be empty",
        ));
    }
    if n > max {
        return Err(ValidationError::new(
            field,
            ErrorCode::TooLong,
            format!("must be at most {max} characters, got {n}"),
        ));
    }
    Ok(())
}

/// Rejects control characters (newlines, tabs, NUL...) in short single-line
/// strings such as option values and labels, where they would break a button
/// title or an action identifier.
pub(crate) fn check_single_line(field: &str, s: &str) -> Result<(), ValidationError> {
    if s.chars().any(char::is_control) {
        return Err(ValidationError::new(
            field,
            ErrorCode::InvalidCharacters,
            "must not contain control characters (newlines, tabs, ...)",
        ));
    }
    Ok(())
}

/// Bidirectional embeddings and overrides (U+202A..U+202E): they reorder the
/// text around them and can make a prompt or a button read as something
/// else ("Deny" shown for an option that approves). Isolates (U+2066..U+2069)
/// are allowed: they cannot leak out of the string.
fn is_bidi_override(c: char) -> bool {
    ('\u{202A}'..='\u{202E}').contains(&c)
}

/// Characters that show nothing: white space, zero-width and format
/// characters, the braille blank, the Hangul fillers.
fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}' | '\u{2800}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}' | '\u{FFA0}' | '\u{E0000}'..='\u{E007F}')
}

/// Text a person reads (prompt, context, labels, placeholder): no
/// bidirectional overrides, and at least one visible character (a button
/// made of zero-width spaces is an invisible button).
pub(crate) fn check_readable(field: &str, s: &str) -> Result<(), ValidationError> {
    // Line breaks and tabs are text; other control characters (NUL, BEL,
    // ESC and the terminal sequences they start) are not.
    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(ValidationError::new(
            field,
            ErrorCode::InvalidCharacters,
            "must not contain control characters other than line breaks and tabs",
        ));
    }
    if s.chars().any(is_bidi_override) {
        return Err(ValidationError::new(
            field,
            ErrorCode::InvalidCharacters,
            "must not contain bidirectional overrides (U+202A to U+202E)",
        ));
    }
    if s.chars().all(is_invisible) {
        return Err(ValidationError::new(
            field,
            ErrorCode::Empty,
            "must have at least one visible character",
        ));
    }
    Ok(())
}
