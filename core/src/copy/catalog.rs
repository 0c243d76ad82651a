//! Words beside qp-core's own, for one surface that alone shows them (the
//! web responder's chrome, the server's sign-in pages): their Fluent files
//! live with that surface, the languages and the negotiation are qp-core's,
//! so every surface of one person speaks the same language.

use std::sync::Arc;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource};
use unic_langid::{CharacterDirection, LanguageIdentifier};

use super::{negotiate, FALLBACK_LANGUAGE};

/// (language tag, Fluent source), one per language of qp-core's.
pub type Locales = [(&'static str, &'static str)];

type Bundle = FluentBundle<FluentResource>;

/// One surface's words in a person's languages: the best match first,
/// English last, so a message missing from a translation reads in English.
#[derive(Clone)]
pub struct Catalog {
    chain: Vec<Arc<Bundle>>,
    language: String,
    rtl: bool,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Catalog({})", self.language)
    }
}

impl Catalog {
    /// `locales`' words for `preferred` (most preferred first, as BCP 47
    /// tags); unknown or malformed tags are skipped. Names put into a
    /// message (a person's, a room's, a server's) are isolated (U+2068 …
    /// U+2069), so a name in the other direction leaves the sentence in
    /// order.
    pub fn new(locales: &'static Locales, preferred: &[impl AsRef<str>]) -> Catalog {
        let tags = negotiate(preferred);
        let chain: Vec<Arc<Bundle>> = tags
            .iter()
            .filter_map(|t| {
                let (_, source) = locales.iter().find(|(tag, _)| tag == t)?;
                let lang: LanguageIdentifier = t.parse().ok()?;
                let resource =
                    FluentResource::try_new(source.to_string()).unwrap_or_else(|(r, _)| r);
                let mut b = Bundle::new_concurrent(vec![lang]);
                b.set_use_isolating(true);
                let _ = b.add_resource(resource);
                Some(Arc::new(b))
            })
            .collect();
        let language = tags
            .into_iter()
            .find(|t| locales.iter().any(|(tag, _)| tag == t))
            .unwrap_or_else(|| FALLBACK_LANGUAGE.into());
        let rtl = language
            .parse::<LanguageIdentifier>()
            .map(|l| l.character_direction() == CharacterDirection::RTL)
            .unwrap_or(false);
        Catalog {
            chain,
            language,
            rtl,
        }
    }

    /// The words for an HTTP `Accept-Language` header's languages, in the
    /// order of their weights (`de-CH, fr;q=0.8, *;q=0.1`).
    pub fn for_accept_language(locales: &'static Locales, header: &str) -> Catalog {
        Catalog::new(locales, &accept_language(header))
    }

    /// The language the words are in (`pt-BR` for `pt-PT`).
    pub fn language(&self) -> &str {
        &self.language
    }

    /// Whether its sentences read right to left (for a page's `dir`).
    pub fn is_rtl(&self) -> bool {
        self.rtl
    }

    /// The message `id`, or the id itself when no language has it (a
    /// missing message shows, it never panics).
    pub fn text(&self, id: &str) -> String {
        self.text_with(id, &[])
    }

    /// The message `id` with its placeables (`("name", "Federica")`).
    pub fn text_with(&self, id: &str, args: &[(&str, &str)]) -> String {
        let mut fluent_args = FluentArgs::new();
        for (k, v) in args {
            fluent_args.set(*k, *v);
        }
        let args = (!args.is_empty()).then_some(&fluent_args);
        for b in &self.chain {
            if let Some(p) = b.get_message(id).and_then(|m| m.value()) {
                let mut errors = Vec::new();
                return b.format_pattern(p, args, &mut errors).into_owned();
            }
        }
        id.to_string()
    }
}

/// The language tags of an HTTP `Accept-Language` header, most wanted first
/// (RFC 9110 §12.5.4: by weight, ties in the header's order; `*` and
/// malformed entries left out).
pub fn accept_language(header: &str) -> Vec<String> {
    // fluent-langneg's parser drops the weights (it trusts the order);
    // a header is free to list them in any order.
    let mut weighted: Vec<(u16, String)> = header
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.split(';').map(str::trim);
            let tag = parts.next()?.parse::<LanguageIdentifier>().ok()?;
            let weight = parts
                .find_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .map_or(Some(1000), |q| {
                    q.parse::<f32>()
                        .ok()
                        .filter(|q| (0.0..=1.0).contains(q))
                        .map(|q| (q * 1000.0).round() as u16)
                })?;
            (weight > 0).then(|| (weight, tag.to_string()))
        })
        .collect();
    weighted.sort_by_key(|w| std::cmp::Reverse(w.0)); // stable: ties keep the header's order
    weighted.into_iter().map(|(_, tag)| tag).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    static WORDS: &Locales = &[
        ("en", "hello = Hello, { $name }\nonly-en = Only English\n"),
        ("de", "hello = Hallo, { $name }\n"),
        ("ar", "hello = مرحبا، { $name }\n"),
    ];

    #[test]
    fn the_header_picks_the_language_by_weight_and_english_fills_the_gaps() {
        let de = Catalog::for_accept_language(WORDS, "fr;q=0.5, de-CH;q=0.9, *;q=0.1");
        assert_eq!(de.language(), "de");
        assert_eq!(
            de.text_with("hello", &[("name", "Bob")]),
            "Hallo, \u{2068}Bob\u{2069}"
        );
        assert_eq!(de.text("only-en"), "Only English");
        assert_eq!(de.text("missing"), "missing");
        let ar = Catalog::for_accept_language(WORDS, "ar-EG");
        assert!(ar.is_rtl() && ar.language() == "ar");
        // A language qp-core has but this surface lacks reads in English.
        let ja = Catalog::for_accept_language(WORDS, "ja");
        assert_eq!((ja.language(), ja.is_rtl()), ("en", false));
        let junk = Catalog::for_accept_language(WORDS, ";;q=,, not a tag");
        assert_eq!(junk.language(), "en");
    }

    #[test]
    fn accept_language_orders_by_weight() {
        assert_eq!(
            accept_language("en;q=0.2, he-IL, de;q=0.7"),
            vec!["he-IL", "de", "en"]
        );
        assert!(accept_language("").is_empty());
        // `*`, a zero weight and a malformed weight are left out.
        assert_eq!(accept_language("*, fr;q=0, it;q=x, ja;q=0.1"), vec!["ja"]);
    }
}
