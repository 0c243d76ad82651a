//! Timestamps on the wire: RFC 3339, always UTC with a `Z`, whole seconds
//! (`2026-06-27T10:31:04Z`). Any RFC 3339 offset is accepted on input and
//! converted to UTC.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

/// Formats a timestamp the way the protocol writes it.
pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses any RFC 3339 timestamp into UTC.
pub fn parse(s: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc))
}

/// Drops sub-second precision, so what is stored equals what the wire shows.
pub fn whole_seconds(t: DateTime<Utc>) -> DateTime<Utc> {
    Utc.timestamp_opt(t.timestamp(), 0).single().unwrap_or(t)
}

/// The current time, in whole seconds.
pub fn now() -> DateTime<Utc> {
    whole_seconds(Utc::now())
}

/// `#[serde(with = "crate::protocol::time::rfc3339")]` for `DateTime<Utc>`.
pub mod rfc3339 {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The same for `Option<DateTime<Utc>>` (`null` when absent).
pub mod rfc3339_opt {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&format(t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => parse(&s).map(Some).map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}
