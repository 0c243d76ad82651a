//! The web app's own words: the few lines around the feed (pairing, sign
//! out, the empty feed, offline, whose account a pairing link is for). The
//! feed's copy is qp-core's; these live beside the crate (`locales/`)
//! because only the web app shows them. The language is the one qp-core
//! negotiated for the copy, so a page never mixes two; a message missing
//! in it falls back to English.

use fluent_bundle::{FluentArgs, FluentBundle, FluentResource};
use unic_langid::LanguageIdentifier;

/// (language tag, Fluent source), one per language qp-core ships.
static LOCALES: &[(&str, &str)] = &[
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
    "web-app-name",
    "web-pair-heading",
    "web-pair-help",
    "web-pair-code",
    "web-pair-button",
    "web-pairing",
    "web-pair-failed",
    "web-signed-in",
    "web-sign-out",
    "web-empty",
    "web-offline",
    "web-notifications",
    "web-notifications-on",
    "web-close",
    "web-new-question",
    "web-answer-failed",
    "web-load-failed",
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
];

fn bundle(tag: &str) -> Option<FluentBundle<FluentResource>> {
    let source = LOCALES.iter().find(|(t, _)| *t == tag)?.1;
    let lang: LanguageIdentifier = tag.parse().ok()?;
    let mut b = FluentBundle::new(vec![lang]);
    // Names (a person's, the server's) are isolated (U+2068 … U+2069): a
    // name in one direction does not reorder the sentence around it.
    b.set_use_isolating(true);
    b.add_resource(FluentResource::try_new(source.to_string()).ok()?)
        .ok()?;
    Some(b)
}

pub struct Chrome {
    chain: Vec<FluentBundle<FluentResource>>,
}

impl Chrome {
    /// The words in `language` (as qp-core negotiated it), then English.
    pub fn new(language: &str) -> Chrome {
        let chain = [language, "en"].iter().filter_map(|t| bundle(t)).collect();
        Chrome { chain }
    }

    /// The message `id`, or the id itself when no language has it.
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

    /// Every message as a JSON object.
    pub fn all(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = CHROME_IDS
            .iter()
            .map(|id| (id.to_string(), self.text(id).into()))
            .collect();
        serde_json::Value::Object(map).to_string()
    }
}
