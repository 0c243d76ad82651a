//! The sign-in pages' words (the authorization, waiting and device pages,
//! their status lines and refusals) in the language the browser asks for
//! (`Accept-Language`), negotiated as qp-core negotiates every surface's:
//! the consent's buttons on these pages are the phone's own words for them.
//! The words are in `server/locales/`, one Fluent file per language.

use qp_core::copy::{Catalog, Copy, Locales};
use qp_core::protocol::permission::{ALLOW, DENY};

use super::escape;

static LOCALES: &Locales = &[
    ("ar", include_str!("../../locales/ar.ftl")),
    ("de", include_str!("../../locales/de.ftl")),
    ("en", include_str!("../../locales/en.ftl")),
    ("es", include_str!("../../locales/es.ftl")),
    ("fr", include_str!("../../locales/fr.ftl")),
    ("he", include_str!("../../locales/he.ftl")),
    ("it", include_str!("../../locales/it.ftl")),
    ("ja", include_str!("../../locales/ja.ftl")),
    ("pt-BR", include_str!("../../locales/pt-BR.ftl")),
    ("zh-Hans", include_str!("../../locales/zh-Hans.ftl")),
];

/// Placeholders of markup in a message being formatted: characters of
/// Unicode's private use area, which no message file and no escaped
/// argument holds.
const MARK_OPEN: char = '\u{E000}';
const MARK_CLOSE: char = '\u{E001}';

/// One request's words.
pub struct Words {
    catalog: Catalog,
    copy: Copy,
}

impl Words {
    /// The words for the browser's `Accept-Language` header (English
    /// for an empty one).
    pub fn for_accept_language(header: &str) -> Words {
        let catalog = Catalog::for_accept_language(LOCALES, header);
        let copy = Copy::for_languages(&[catalog.language()]);
        Words { catalog, copy }
    }

    /// The page's `lang`.
    pub fn language(&self) -> &str {
        self.catalog.language()
    }

    /// The page's `dir`.
    pub fn dir(&self) -> &'static str {
        if self.catalog.is_rtl() {
            "rtl"
        } else {
            "ltr"
        }
    }

    /// The consent's words in this language (its buttons, its prompt), as
    /// the phone and the web responder word them.
    pub fn consent(&self) -> &Copy {
        &self.copy
    }

    /// The consent's Allow button's label.
    pub fn allow(&self) -> String {
        self.copy.consent_label(ALLOW).unwrap_or_default()
    }

    /// The consent's Deny button's label.
    pub fn deny(&self) -> String {
        self.copy.consent_label(DENY).unwrap_or_default()
    }

    /// A message as plain text (a status line, a script's words).
    pub fn text(&self, id: &str, args: &[(&str, &str)]) -> String {
        self.catalog.text_with(id, args)
    }

    /// A message as HTML: its words escaped, each argument the server's
    /// own markup (`("name", "<b>…</b>")`, itself escaping whatever came
    /// from a person or a client).
    pub fn html(&self, id: &str, args: &[(&str, &str)]) -> String {
        let marks: Vec<(String, String)> = args
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.to_string(), format!("{MARK_OPEN}{i}{MARK_CLOSE}")))
            .collect();
        let marked: Vec<(&str, &str)> = marks
            .iter()
            .map(|(k, m)| (k.as_str(), m.as_str()))
            .collect();
        let mut out = escape(&self.catalog.text_with(id, &marked));
        for (i, (_, markup)) in args.iter().enumerate() {
            out = out.replace(&format!("{MARK_OPEN}{i}{MARK_CLOSE}"), markup);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(accept: &str) -> Words {
        Words::for_accept_language(accept)
    }

    #[test]
    fn every_language_has_every_message_of_the_english_file() {
        let ids: Vec<&str> = LOCALES[2]
            .1
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(" = ").map(|(id, _)| id))
            .collect();
        assert!(ids.len() >= 30, "{ids:?}");
        for (tag, source) in LOCALES {
            for id in &ids {
                assert!(
                    source.lines().any(|l| l.starts_with(&format!("{id} = "))),
                    "server/locales/{tag}.ftl lacks {id}"
                );
            }
            let w = words(tag);
            assert_eq!(w.language(), *tag);
            assert_eq!(
                w.dir(),
                if matches!(*tag, "ar" | "he") {
                    "rtl"
                } else {
                    "ltr"
                }
            );
        }
    }

    #[test]
    fn markup_goes_where_the_language_puts_the_name_and_text_is_escaped() {
        let ja = words("ja-JP");
        let html = ja.html("signin-ask-named", &[("name", "<b>A&amp;B</b>")]);
        assert!(
            html.starts_with("\u{2068}<b>A&amp;B</b>\u{2069}のスマートフォン"),
            "{html}"
        );
        let en = words("en");
        assert_eq!(en.html("signin-user-label", &[]), "Your user id or name");
        // The words themselves are escaped: an apostrophe is an entity.
        assert!(en.html("signin-error-details", &[]).contains("app&#39;s"));
        assert_eq!(words("de").allow(), "Erlauben");
    }
}
