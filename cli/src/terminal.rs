//! Other people's text on this terminal. A typed answer, a prompt or a name
//! may carry escape sequences ("\x1b]0;pwned\x07", "\x1b[2J") that a terminal
//! would obey; everything qp prints that it did not write itself goes
//! through [`safe`], which shows control characters as visible escapes
//! instead. JSON output needs nothing: serde escapes them.

use std::borrow::Cow;

/// `s` with every control character (C0, DEL, C1) written as a visible
/// escape (`\x1b`, `\u{9b}`); unchanged (and not copied) when there is none.
pub fn safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c as u32 {
            n if n < 0x20 || n == 0x7f => out.push_str(&format!("\\x{n:02x}")),
            n if (0x80..0xa0).contains(&n) => out.push_str(&format!("\\u{{{n:x}}}")),
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(super::safe("ok"), "ok");
        assert_eq!(
            super::safe("ok\u{1b}]0;pwned\u{7}\u{1b}[2J"),
            "ok\\x1b]0;pwned\\x07\\x1b[2J"
        );
        assert_eq!(super::safe("a\u{9b}b\nc\u{0}"), "a\\u{9b}b\\x0ac\\x00");
        assert_eq!(super::safe("Déploiement 🚀 שחרור"), "Déploiement 🚀 שחרור");
    }
}
