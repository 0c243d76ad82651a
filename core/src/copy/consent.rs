//! The server's sign-in consent question, worded from its parts
//! ([`ConsentRequest`]) in a person's language. The server words it in
//! English for its prompt, context and labels (what a responder that does
//! not localize shows); phones and the web word it again in their person's
//! language. Either way the server's words come first and the client's
//! name follows them, quoted and isolated: a name cannot read as the
//! server's sentence or reorder it.

use fluent_bundle::FluentValue;

use super::Copy;
use crate::protocol::client_text::isolated;
use crate::protocol::limits::CLIENT_TEXT_MAX_CHARS;
use crate::protocol::permission::{ALLOW, DENY};
use crate::protocol::ConsentRequest;

/// A consent question's words in one language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentText {
    /// The asker's name ("qp sign-in"), as titles embed it.
    pub asker: String,
    pub prompt: String,
    /// The code to compare, then who asks.
    pub context: String,
    pub allow: String,
    pub deny: String,
}

/// The last `max` characters of `s`, with "…" before them when cut. A host
/// is cut from the left, never the right: its end is the domain that
/// vouches for it (cut from the right, `claude.ai.connectors.login.attacker.example`
/// reads as claude.ai's).
pub fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let kept: String = s.chars().skip(n - (max - 1)).collect();
    format!("…{kept}")
}

/// How much of a host the prompt names, and the context line.
const PROMPT_HOST_CHARS: usize = 120;
const CONTEXT_HOST_CHARS: usize = 23;
/// How much of a room's name the prompt names.
const ROOM_CHARS: usize = 80;

impl Copy {
    /// The consent question in this language, for a question in `room`.
    pub fn consent(&self, c: &ConsentRequest, room: &str) -> ConsentText {
        let client = match c.client.as_str() {
            "verified" if c.host.is_some() => "verified",
            "terminal" => "terminal",
            _ => "unverified",
        };
        let host = c.host.as_deref().unwrap_or_default();
        let name: String = c.name.chars().take(CLIENT_TEXT_MAX_CHARS).collect();
        let room: String = room.chars().take(ROOM_CHARS).collect();
        let prompt = self.with(
            "consent-prompt",
            &[
                ("client", FluentValue::from(client)),
                ("host", self.text_arg(&tail(host, PROMPT_HOST_CHARS))),
                // The client's claim and the room's name are always
                // isolated: they may hold any direction in any language.
                ("room", FluentValue::from(isolated(&room))),
                ("name", FluentValue::from(isolated(&name))),
            ],
        );
        // The terminal's own address says nothing: only a client that
        // redirects is told where it signs in.
        let returns = match c.returns_to.as_deref().filter(|_| client != "terminal") {
            Some("localhost") => Some(self.with(
                "consent-returns",
                &[
                    ("to", FluentValue::from("local")),
                    ("host", FluentValue::from("")),
                ],
            )),
            Some(h) => Some(self.with(
                "consent-returns",
                &[
                    ("to", FluentValue::from("host")),
                    ("host", self.text_arg(&tail(h, PROMPT_HOST_CHARS))),
                ],
            )),
            None => None,
        };
        let prompt = match returns {
            Some(r) => self.with(
                "consent-prompt-and-return",
                &[
                    ("prompt", FluentValue::from(prompt)),
                    ("returns", FluentValue::from(r)),
                ],
            ),
            None => prompt,
        };
        let context = self.with(
            "consent-context",
            &[
                ("client", FluentValue::from(client)),
                ("code", self.text_arg(&c.code)),
                ("host", self.text_arg(&tail(host, CONTEXT_HOST_CHARS))),
            ],
        );
        ConsentText {
            asker: self.message("consent-asker", None),
            prompt,
            context,
            allow: self.message("consent-allow", None),
            deny: self.message("consent-deny", None),
        }
    }

    /// The button of a consent's option value (`allow`, `deny`) in this
    /// language; none for any other value.
    pub fn consent_label(&self, value: &str) -> Option<String> {
        match value {
            ALLOW => Some(self.message("consent-allow", None)),
            DENY => Some(self.message("consent-deny", None)),
            _ => None,
        }
    }
}
