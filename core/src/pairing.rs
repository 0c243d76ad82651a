//! Pairing codes and links: how a phone (or an agent's CLI) gets its token
//! without anyone pasting a 256-bit string.
//!
//! An operator creates a one-time code bound to a user (`qp admin user
//! invite`). The code travels as a link, `https://HOST/pair#CODE` (the
//! fragment never reaches a server log), usually as a QR code; the phone
//! exchanges it once at `POST /api/pair` for its own token.
//!
//! A code is 16 characters of Crockford's base32 (no I, L, O, U), shown in
//! four groups: `K7QD-8M3X-PA2F-9TRV`. The first group names the invite (so
//! wrong guesses against one invite can be counted and the invite burned);
//! the other twelve are the secret, 60 random bits, of which the server keeps
//! only a hash. People may type it in any case, with or without dashes or
//! spaces, and with the usual look-alikes (O for 0, I and L for 1).
//!
//! Both sides use this module: the server to format and split codes, the
//! phone and the CLI to read what the person scanned or typed.

/// The code alphabet: Crockford's base32.
pub const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a code, without dashes.
pub const CODE_CHARS: usize = 16;
/// Characters that name the invite (the first group).
pub const INVITE_ID_CHARS: usize = 4;
/// The path of a pairing link on the server.
pub const LINK_PATH: &str = "/pair";

/// Why a link or code could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error(
        "not a pairing code or link: a code is 16 letters and digits, like K7QD-8M3X-PA2F-9TRV"
    )]
    NotACode,
    #[error("a code alone does not say which server to pair with; scan the QR code or open the link instead")]
    NoServer,
}

/// What a scanned or typed pairing input says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairLink {
    /// The server's base URL (`https://qp.example.com`), when the input was a link.
    pub server_url: Option<String>,
    /// The code in its canonical form (`K7QD-8M3X-PA2F-9TRV`).
    pub code: String,
}

impl PairLink {
    /// The invite's public id (the first group).
    pub fn invite_id(&self) -> &str {
        &self.code[..INVITE_ID_CHARS]
    }
}

/// Formats 16 code characters as four dash-separated groups.
pub fn format_code(chars: &str) -> String {
    chars
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join("-")
}

/// A new code from random bytes (at least 16): each byte picks a character.
/// The caller supplies the randomness (the server's CSPRNG).
pub fn code_from_random(random: &[u8]) -> String {
    let chars: String = random
        .iter()
        .take(CODE_CHARS)
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect();
    format_code(&chars)
}

/// Reads a code as people write it: any case, dashes and spaces anywhere, O
/// for 0, I and L for 1. `None` unless it is exactly 16 code characters.
pub fn normalize_code(input: &str) -> Option<String> {
    let mut chars = String::with_capacity(CODE_CHARS);
    for c in input.chars() {
        let c = match c.to_ascii_uppercase() {
            '-' | ' ' => continue,
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        };
        if !c.is_ascii() || !ALPHABET.contains(&(c as u8)) {
            return None;
        }
        chars.push(c);
    }
    (chars.len() == CODE_CHARS).then(|| format_code(&chars))
}

/// The link of a code on a server: `{server_url}/pair#{code}`.
pub fn pair_link(server_url: &str, code: &str) -> String {
    format!("{}{LINK_PATH}#{code}", server_url.trim_end_matches('/'))
}

/// Reads what the person scanned or typed: a pairing link
/// (`https://HOST[/prefix]/pair#CODE`) or a bare code.
pub fn parse_pair_input(input: &str) -> Result<PairLink, LinkError> {
    let input = input.trim();
    if let Some((before, fragment)) = input.split_once('#') {
        let is_link = before.starts_with("https://") || before.starts_with("http://");
        let server = before.trim_end_matches('/').strip_suffix(LINK_PATH);
        return match (is_link, server, normalize_code(fragment)) {
            (true, Some(server), Some(code))
                if server.contains("://") && !server.ends_with('/') =>
            {
                Ok(PairLink {
                    server_url: Some(server.to_string()),
                    code,
                })
            }
            _ => Err(LinkError::NotACode),
        };
    }
    normalize_code(input)
        .map(|code| PairLink {
            server_url: None,
            code,
        })
        .ok_or(LinkError::NotACode)
}

/// Why pairing failed, for the app to switch on; a person reads it in
/// their language through `Copy::pair_failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairErrorKind {
    /// Not a pairing link or code.
    NotACode,
    /// A bare code without a server URL.
    NoServer,
    /// The server does not know the code, or it was used or has expired.
    InvalidCode,
    /// Too many wrong codes from here: wait (the message says how long).
    TooManyAttempts,
    /// The server could not be reached.
    Unreachable,
    /// The server refused for another reason (the message says which).
    Refused,
    /// The app's secure storage did not keep the token.
    StorageFailed,
}

impl PairErrorKind {
    /// The cause of an HTTP status `POST /api/pair` answered with (not 200):
    /// the phone's and the web responder's one reading of it.
    pub fn of_status(status: u16) -> PairErrorKind {
        match status {
            400 | 404 | 410 => PairErrorKind::InvalidCode,
            429 => PairErrorKind::TooManyAttempts,
            _ => PairErrorKind::Refused,
        }
    }

    /// The selector the message files switch on.
    pub fn key(self) -> &'static str {
        match self {
            PairErrorKind::NotACode => "not-a-code",
            PairErrorKind::NoServer => "no-server",
            PairErrorKind::InvalidCode => "invalid-code",
            PairErrorKind::TooManyAttempts => "too-many-attempts",
            PairErrorKind::Unreachable => "unreachable",
            PairErrorKind::Refused => "refused",
            PairErrorKind::StorageFailed => "storage-failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_people_write_them() {
        let code = code_from_random(&[7u8; 16]);
        assert_eq!(code, "7777-7777-7777-7777");
        assert_eq!(
            normalize_code("k7qd 8m3x pa2f 9trv").unwrap(),
            "K7QD-8M3X-PA2F-9TRV"
        );
        assert_eq!(
            normalize_code("K7QD8M3XPA2F9TRV").unwrap(),
            "K7QD-8M3X-PA2F-9TRV"
        );
        // Look-alikes: O is 0, I and L are 1.
        assert_eq!(
            normalize_code("OOOO-IIII-LLLL-0000").unwrap(),
            "0000-1111-1111-0000"
        );
        for bad in [
            "",
            "K7QD-8M3X-PA2F",
            "K7QD-8M3X-PA2F-9TRVX",
            "K7QD-8M3X-PA2F-9TRU",
            "K7QD-8M3X-PA2F-9TR✓",
        ] {
            assert_eq!(normalize_code(bad), None, "{bad}");
        }
    }

    #[test]
    fn links_carry_the_server_and_the_code() {
        let link = pair_link("https://qp.example.com/", "K7QD-8M3X-PA2F-9TRV");
        assert_eq!(link, "https://qp.example.com/pair#K7QD-8M3X-PA2F-9TRV");
        let parsed = parse_pair_input(&link).unwrap();
        assert_eq!(parsed.server_url.as_deref(), Some("https://qp.example.com"));
        assert_eq!(parsed.invite_id(), "K7QD");
        let prefixed = parse_pair_input("http://127.0.0.1:8750/qp/pair#k7qd8m3xpa2f9trv").unwrap();
        assert_eq!(
            prefixed.server_url.as_deref(),
            Some("http://127.0.0.1:8750/qp")
        );
        assert_eq!(prefixed.code, "K7QD-8M3X-PA2F-9TRV");
        let bare = parse_pair_input("  K7QD-8M3X-PA2F-9TRV\n").unwrap();
        assert_eq!(bare.server_url, None);
        for bad in [
            "https://qp.example.com/#K7QD-8M3X-PA2F-9TRV",
            "https://qp.example.com/pair#nope",
            "ftp://qp.example.com/pair#K7QD-8M3X-PA2F-9TRV",
            "/pair#K7QD-8M3X-PA2F-9TRV",
            "qpu_0123456789abcdef",
        ] {
            assert_eq!(parse_pair_input(bad), Err(LinkError::NotACode), "{bad}");
        }
    }
}
