//! Text a client chose that a person will read: an OAuth client's
//! `client_name`, the label of `qp login --url`, the name of the agent a
//! sign-in makes. Such text is a claim, placed inside a sentence the
//! server wrote (the consent question); it must not be able to end that
//! sentence, start a new line, reorder what follows it, hide characters,
//! or pose as quoted speech. So it is one line of at most
//! [`CLIENT_TEXT_MAX_CHARS`] characters with no control (Cc), format (Cf:
//! bidi controls, zero-width characters), line or paragraph separator (Zl,
//! Zp) characters and no quotation marks; and where it is shown, it comes
//! after the server's own words, in quotes, isolated ([`quoted`]).
//!
//! The same function judges every such field, so the server refuses with
//! the field's name and the rule, and nothing shown can have slipped past.

use unicode_general_category::{get_general_category, GeneralCategory};

use super::limits::{CLIENT_TEXT_MAX_CHARS, NAME_MAX_CHARS};

/// The rule, as the refusal states it after the field's name.
pub const CLIENT_TEXT_RULE: &str = "one line of 1 to 60 characters, without quotation marks, \
     control, format (bidi, zero-width) or line-separator characters";

/// A client-supplied text that breaks the rule: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: must be {CLIENT_TEXT_RULE} ({found})")]
pub struct ClientTextError {
    pub field: String,
    /// What broke it: "it is empty", "U+2028 at character 7".
    pub found: String,
}

/// Checks `value` (already trimmed by the caller) as the client-supplied
/// text of `field`.
pub fn check_client_text(field: &str, value: &str) -> Result<(), ClientTextError> {
    let broken = |found: String| ClientTextError {
        field: field.to_string(),
        found,
    };
    if value.trim().is_empty() {
        return Err(broken("it is empty".into()));
    }
    let count = value.chars().count();
    if count > CLIENT_TEXT_MAX_CHARS {
        return Err(broken(format!("it has {count} characters")));
    }
    if value.trim() != value {
        return Err(broken("it starts or ends with white space".into()));
    }
    if let Some((at, c)) = value.chars().enumerate().find(|(_, c)| !allowed(*c)) {
        return Err(broken(format!(
            "U+{:04X} at character {}",
            c as u32,
            at + 1
        )));
    }
    Ok(())
}

/// Whether `c` may appear in client-supplied text.
fn allowed(c: char) -> bool {
    use GeneralCategory::*;
    if is_quote(c) {
        return false;
    }
    !matches!(
        get_general_category(c),
        Control
            | Format
            | LineSeparator
            | ParagraphSeparator
            | Surrogate
            | PrivateUse
            | Unassigned
            | InitialPunctuation
            | FinalPunctuation
    )
}

/// Quotation marks that are not Pi/Pf (which [`allowed`] refuses whole):
/// ASCII, low-9 and CJK quotes, their fullwidth forms, the backtick, primes,
/// and the letters and marks that look like a quote (modifier primes and
/// turned commas, Hebrew geresh and gershayim, the CJK ditto mark, acute
/// and grave accents standing alone).
fn is_quote(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | '`'
            | '\u{201A}'
            | '\u{201E}'
            | '\u{301D}'
            | '\u{301E}'
            | '\u{301F}'
            | '\u{FF02}'
            | '\u{FF07}'
            | '\u{2032}'..='\u{2037}'
            | '\u{2057}'
            | '\u{00B4}'
            | '\u{02B9}'..='\u{02BC}'
            | '\u{02BD}'
            | '\u{02C8}'
            | '\u{02CA}'
            | '\u{02CB}'
            | '\u{02DD}'
            | '\u{02EE}'
            | '\u{05F3}'
            | '\u{05F4}'
            | '\u{3003}'
            | '\u{FF40}'
    )
}

/// First strong isolate and pop directional isolate (Unicode bidi): text
/// between them cannot reorder the words around it.
pub const ISOLATE_START: char = '\u{2068}';
pub const ISOLATE_END: char = '\u{2069}';

/// `text` bidi-isolated, for a name inserted into a sentence (a room's name).
pub fn isolated(text: &str) -> String {
    format!("{ISOLATE_START}{text}{ISOLATE_END}")
}

/// `text` as a client's claim inside the server's sentence: in quotes,
/// bidi-isolated within them.
pub fn quoted(text: &str) -> String {
    format!("\"{}\"", isolated(text))
}

/// What joins an agent's name to the person whose sign-in made it.
pub const SIGNED_IN_BY: &str = " · signed in by ";

/// How an agent made by a person's sign-in (OAuth, `qp login --url`) is
/// shown to everyone it asks: "Release Bot · signed in by Federica". Such
/// an agent's name is its client's claim; the person who vouched for it is
/// the server's fact, and stays in view. Both parts are cut (with "…") so
/// that the whole fits a display name ([`NAME_MAX_CHARS`]).
pub fn signed_in_display_name(agent_name: &str, person_name: &str) -> String {
    const PERSON_MAX: usize = 24;
    let person = cut(person_name, PERSON_MAX);
    let room_for_agent = NAME_MAX_CHARS - SIGNED_IN_BY.chars().count() - person.chars().count();
    format!("{}{SIGNED_IN_BY}{person}", cut(agent_name, room_for_agent))
}

/// `s` within `max` characters, "…" in place of what was cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let kept: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

/// Whether `host` (as the URL parser gives it: lower case, punycode) is a
/// DNS name of letters, digits, hyphens and dots, or an IP literal: safe to
/// name inside a sentence a person reads.
pub fn is_plain_host(host: &str) -> bool {
    let ip = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok();
    ip || (!host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'))
}

/// The kinds of client a sign-in consent names.
pub const CONSENT_CLIENTS: [&str; 3] = ["verified", "unverified", "terminal"];

/// Checks the parts of a sign-in consent (a push carries them to a phone,
/// which words the question from them): the name is client text, hosts are
/// plain hosts, the code is the server's letters and hyphen. The error
/// names the part and the rule.
pub fn check_consent(c: &super::ConsentRequest) -> Result<(), String> {
    // A kind this version does not know reads as `unverified`: a newer
    // server's push still shows.
    if c.client.is_empty()
        || c.client.len() > 20
        || !c.client.chars().all(|ch| ch.is_ascii_lowercase())
    {
        return Err(format!(
            "client: must be a word of small letters ({})",
            CONSENT_CLIENTS.join(", ")
        ));
    }
    check_client_text("name", &c.name).map_err(|e| e.to_string())?;
    for (field, host) in [("host", &c.host), ("returns_to", &c.returns_to)] {
        if let Some(h) = host {
            if !is_plain_host(h) {
                return Err(format!(
                    "{field}: must be a host name of letters, digits, hyphens and dots"
                ));
            }
        }
    }
    if c.client == "verified" && c.host.is_none() {
        return Err("host: a verified client names its host".into());
    }
    let code_ok = !c.code.is_empty()
        && c.code.len() <= 16
        && c.code
            .chars()
            .all(|ch| ch.is_ascii_uppercase() || ch == '-');
    if !code_ok {
        return Err("code: must be up to 16 capital letters and hyphens".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::identity::check_display_name;

    #[test]
    fn the_rule_states_the_limit() {
        assert!(CLIENT_TEXT_RULE.contains(&format!("1 to {CLIENT_TEXT_MAX_CHARS} characters")));
    }

    #[test]
    fn ordinary_names_pass() {
        for ok in [
            "Claude",
            "Claude Desktop",
            "qp login",
            "Release Bot 🚀",
            "Zürich CI",
            "مساعد",
            "助手",
            &"n".repeat(CLIENT_TEXT_MAX_CHARS),
        ] {
            assert_eq!(check_client_text("client_name", ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn what_could_shape_the_sentence_around_it_is_refused() {
        for (bad, found) in [
            ("", "it is empty"),
            ("   ", "it is empty"),
            ("Release\nBot", "U+000A at character 8"),
            ("Release\rBot", "U+000D at character 8"),
            ("a\u{1b}[31m", "U+001B at character 2"),
            ("Claude\u{2028}Allow?", "U+2028 at character 7"),
            ("Claude\u{2029}x", "U+2029 at character 7"),
            ("Cla\u{200B}ude", "U+200B at character 4"),
            ("Claude\u{200D}", "U+200D at character 7"),
            ("\u{FEFF}Claude", "U+FEFF at character 1"),
            ("abc\u{202E}cba", "U+202E at character 4"),
            ("abc\u{2066}x", "U+2066 at character 4"),
            ("abc\u{2069}", "U+2069 at character 4"),
            ("soft\u{AD}hyphen", "U+00AD at character 5"),
            ("\"Release Bot\"", "U+0022 at character 1"),
            ("Bob's laptop", "U+0027 at character 4"),
            ("“Verified”", "U+201C at character 1"),
            ("«Verified»", "U+00AB at character 1"),
            ("„x", "U+201E at character 1"),
            ("`x`", "U+0060 at character 1"),
            ("＂x", "U+FF02 at character 1"),
            ("Claude\u{02BA}. Verified", "U+02BA at character 7"),
            ("Ops\u{05F4}", "U+05F4 at character 4"),
            ("\u{3003}x", "U+3003 at character 1"),
            ("x\u{02BC}s", "U+02BC at character 2"),
            ("\u{2033}x", "U+2033 at character 1"),
            (" padded", "it starts or ends with white space"),
            ("\u{E000}private", "U+E000 at character 1"),
        ] {
            let e = check_client_text("label", bad).unwrap_err();
            assert_eq!(e.found, found, "{bad:?}");
            let message = e.to_string();
            assert!(message.starts_with("label: must be one line"), "{message}");
        }
        let long = "n".repeat(CLIENT_TEXT_MAX_CHARS + 1);
        assert_eq!(
            check_client_text("client_name", &long).unwrap_err().found,
            "it has 61 characters"
        );
    }

    /// A client name that reads as the server's own
    /// sentence is still accepted as a name (it breaks no character rule);
    /// what keeps it from posing as the server is where and how it is shown.
    #[test]
    fn a_claim_is_shown_quoted_and_isolated() {
        assert_eq!(quoted("Claude"), "\"\u{2068}Claude\u{2069}\"");
        assert_eq!(isolated("Ops"), "\u{2068}Ops\u{2069}");
    }

    #[test]
    fn a_signed_in_agent_names_the_person_and_fits_a_display_name() {
        assert_eq!(
            signed_in_display_name("Release Bot", "Federica"),
            "Release Bot · signed in by Federica"
        );
        let long = signed_in_display_name(&"A".repeat(80), &"B".repeat(80));
        assert_eq!(long.chars().count(), NAME_MAX_CHARS, "{long}");
        assert!(long.contains(" · signed in by "), "{long}");
        assert!(long.ends_with("B…"), "{long}");
        assert_eq!(check_display_name(&long), Ok(()));
        // The person's name is never cut away by a long agent name.
        let shown = signed_in_display_name(&"A".repeat(80), "Mallory");
        assert!(shown.ends_with(" · signed in by Mallory"), "{shown}");
        assert_eq!(check_display_name(&shown), Ok(()));
    }
}
