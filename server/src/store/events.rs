//! The wake-ups a commit sends to every instance sharing one PostgreSQL
//! database (`NOTIFY` on one channel), and the one place their payloads
//! are written and read. The store sends them inside the transaction that
//! makes the change, so a wake-up goes out exactly when the change commits;
//! `crate::wakeups` listens and acts on them. With SQLite there is one
//! instance and nothing to send (`store::notify` does nothing).

use qp_core::protocol::Question;

use super::{Conn, DbResult};

/// The one channel every instance listens on.
pub const CHANNEL: &str = "qp_events";

/// A question's JSON rides in its wake-up up to this size (PostgreSQL's
/// payload limit is 8,000 bytes).
const MAX_CARRIED_BYTES: usize = 7_000;

/// The notice an ask's commit sends (queued inside the ask's transaction:
/// `store::questions`), which wakes the feed long-polls the question
/// concerns on every instance: `asked:<key>` ([`asked_payload`]); a bare
/// `asked` wakes them all.
pub const ASKED: &str = "asked";

/// One wake-up, as read from its payload.
#[derive(Debug, PartialEq)]
pub enum Event<'a> {
    /// Question `id` resolved; `carried` is the question as stored when it
    /// fitted in the payload (None when it did not, or did not parse).
    Resolved {
        id: &'a str,
        carried: Option<Box<Question>>,
    },
    /// The token with this hash was revoked.
    Revoked(&'a str),
    /// A start-up probe ([`notify_probe`]) with its token.
    Probe(&'a str),
    /// The MCP session with this id hash ended.
    McpEnded(&'a str),
    /// A question was asked: the feeds of `key` (`crate::feed_wake`), or
    /// everyone's when None (an instance that does not say whom).
    Asked(Option<&'a str>),
    /// A dev device's inbox changed.
    DevInbox,
}

impl<'a> Event<'a> {
    /// The wake-up a payload carries; None for one this version does not know.
    pub fn parse(payload: &'a str) -> Option<Event<'a>> {
        if let Some(rest) = payload.strip_prefix("resolved:") {
            let (id, carried) = match rest.split_once('\n') {
                Some((id, json)) => (
                    id,
                    serde_json::from_str::<Question>(json).ok().map(Box::new),
                ),
                None => (rest, None),
            };
            Some(Event::Resolved { id, carried })
        } else if let Some(hash) = payload.strip_prefix("revoked:") {
            Some(Event::Revoked(hash))
        } else if let Some(token) = payload.strip_prefix("probe:") {
            Some(Event::Probe(token))
        } else if let Some(hash) = payload.strip_prefix("mcp-ended:") {
            Some(Event::McpEnded(hash))
        } else if let Some(key) = payload.strip_prefix("asked:") {
            Some(Event::Asked(Some(key)))
        } else if payload == ASKED {
            Some(Event::Asked(None))
        } else if payload == "dev" {
            Some(Event::DevInbox)
        } else {
            None
        }
    }
}

/// The payload that tells the other instances question `id` resolved,
/// carrying the question as stored (`json`) when it fits in a
/// notification, so their waiters are released without reading it back.
pub fn resolved_payload(id: &str, json: &str) -> String {
    if json.len() <= MAX_CARRIED_BYTES {
        format!("resolved:{id}\n{json}")
    } else {
        format!("resolved:{id}")
    }
}

/// Tells every instance that the token with this hash was revoked: they
/// forget it at once (`crate::token_cache`).
pub fn notify_revoked(conn: &Conn, hash: &str) -> DbResult<()> {
    notify(conn, &format!("revoked:{hash}"))
}

/// Tells every instance that the MCP session with this id hash ended (a
/// client's DELETE): they close their copies at once.
pub fn notify_mcp_ended(conn: &Conn, id_hash: &str) -> DbResult<()> {
    notify(conn, &format!("mcp-ended:{id_hash}"))
}

/// Sends a start-up probe with `token` (`crate::wakeups::probe`).
pub fn notify_probe(conn: &Conn, token: &str) -> DbResult<()> {
    notify(conn, &format!("probe:{token}"))
}

/// The notice for the ask of `q`: whose feeds it wakes.
pub fn asked_payload(q: &Question) -> String {
    match crate::feed_wake::key_of(q) {
        Some(key) => format!("{ASKED}:{key}"),
        None => ASKED.to_string(),
    }
}

/// Tells every instance a dev device's inbox changed.
pub fn notify_dev_inbox(conn: &Conn) -> DbResult<()> {
    notify(conn, "dev")
}

fn notify(conn: &Conn, payload: &str) -> DbResult<()> {
    super::notify(conn, CHANNEL, payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_payload_written_reads_back_as_its_event() {
        assert_eq!(Event::parse("revoked:ab12"), Some(Event::Revoked("ab12")));
        assert_eq!(Event::parse("probe:t0"), Some(Event::Probe("t0")));
        assert_eq!(Event::parse("mcp-ended:h1"), Some(Event::McpEnded("h1")));
        assert_eq!(
            Event::parse("asked:user:u1"),
            Some(Event::Asked(Some("user:u1")))
        );
        assert_eq!(Event::parse(ASKED), Some(Event::Asked(None)));
        assert_eq!(Event::parse("dev"), Some(Event::DevInbox));
        assert_eq!(
            Event::parse(&resolved_payload("q1", "not json")),
            Some(Event::Resolved {
                id: "q1",
                carried: None
            })
        );
        let big = "x".repeat(MAX_CARRIED_BYTES + 1);
        assert_eq!(resolved_payload("q2", &big), "resolved:q2");
        assert_eq!(Event::parse("something-new"), None);
    }
}
