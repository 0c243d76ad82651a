//! The web app's own words: the few lines around the feed (pairing, sign
//! out, the empty feed, offline, whose account a pairing link is for). The
//! feed's copy is qp-core's, and so is every line the phone says too (the
//! app's name, why pairing failed, an answer's status); these live beside
//! the crate (`locales/`) because only the web app shows them. The language is the one qp-core
//! negotiated for the copy, so a page never mixes two; a message missing
//! in it falls back to English.

use qp_core::copy::{Catalog, Locales};

/// (language tag, Fluent source), one per language qp-core ships.
static LOCALES: &Locales = &[
    ("ar", include_str!("../locales/ar.ftl")),
    ("de", include_str!("../locales/de.ftl")),
    ("en", include_str!("../locales/en.ftl")),
    ("es", include_str!("../locales/es.ftl")),
    ("fr", include_str!("../locales/fr.ftl")),
    ("he", include_str!("../locales/he.ftl")),
    ("it", include_str!("../locales/it.ftl")),
    ("ja", include_str!("../locales/ja.ftl")),
    ("pt-BR", include_str!("../locales/pt-BR.ftl")),
    ("zh-Hans", include_str!("../locales/zh-Hans.ftl")),
];

/// Every message id, as in `locales/en.ftl` (the page asks for these).
pub const CHROME_IDS: &[&str] = &[
    "web-pair-heading",
    "web-pair-help",
    "web-pair-code",
    "web-pair-button",
    "web-pairing",
    "web-signed-in",
    "web-sign-out",
    "web-empty",
    "web-offline",
    "web-notifications",
    "web-notifications-on",
    "web-notifications-refused",
    "web-close",
    "web-announce",
    "web-load-failed",
    "web-answer-signed-out",
    "web-link-checking",
    "web-link-heading",
    "web-link-detail",
    "web-link-replace",
    "web-link-again",
    "web-link-accept",
    "web-link-cancel",
    "web-link-stay",
    "web-notifications-switched",
    "web-text-too-long",
    "web-reply-left",
    "web-reply-over",
    "web-notifications-blocked",
    "web-notifications-unreachable",
    "web-notifications-off-server",
];

pub struct Chrome {
    catalog: Catalog,
}

impl Chrome {
    /// The words in `language` (as qp-core negotiated it), then English.
    pub fn new(language: &str) -> Chrome {
        Chrome {
            catalog: Catalog::new(LOCALES, &[language]),
        }
    }

    /// The message `id`, or the id itself when no language has it.
    pub fn text(&self, id: &str) -> String {
        self.catalog.text(id)
    }

    /// The message `id` with its placeables (`("name", "Federica")`):
    /// names are isolated (U+2068 … U+2069), so a name in one direction
    /// does not reorder the sentence around it.
    pub fn text_with(&self, id: &str, args: &[(&str, &str)]) -> String {
        self.catalog.text_with(id, args)
    }

    /// Every message as a JSON object.
    pub fn all(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = CHROME_IDS
            .iter()
            .map(|id| (id.to_string(), self.text(id).into()))
            .collect();
        serde_json::Value::Object(map).to_string()
    }
}
