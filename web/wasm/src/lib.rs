//! # qp-web: the web responder's logic, from qp-core, for the browser
//!
//! The page and the service worker under `web/app` are thin: they fetch,
//! store and draw. Everything a person reads and every rule about what they
//! may do comes from here, that is from the same qp-core the phones run:
//! - the feed cells of spec 6.2 ([`qp_core::present::cell`]),
//! - the copy in the browser's languages, with right-to-left handling,
//! - the time remaining, recomputed as the clock moves,
//! - the answer check before anything is sent ([`qp_core::answer`]),
//! - the notification of a Web Push ([`qp_core::present::web`]), decoded by
//!   the phones' payload decoder.
//!
//! Values cross the boundary as JSON strings (the protocol's own wire
//! format), so the JavaScript side never builds or interprets a rule.

mod chrome;

use chrono::{DateTime, TimeZone, Utc};
use qp_core::answer::{characters_left, map_action, ActionError};
use qp_core::payload::{decode_apns, CompactQuestion, Push, ResolvedNotice};
use qp_core::present::cell::{cell, summary, Cell};
use qp_core::present::copy::{AnswerLine, Copy};
use qp_core::present::web::{web_notification, web_resolved};
use qp_core::protocol::{AnswerSubmission, Question};
use serde_json::json;
use wasm_bindgen::prelude::*;

pub use chrome::CHROME_IDS;

/// The page's id for the app's name (the tab's title, the heading): the
/// phone's notification channel's name, from qp-core's copy.
pub const APP_NAME: &str = "web-app-name";

/// Milliseconds since the epoch (JavaScript's `Date.now()`) as a time; the
/// browser's clock is read by the page, not here (wasm32 has no clock).
fn time(now_ms: f64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(now_ms as i64)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

fn parse<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> Result<T, String> {
    serde_json::from_str(json).map_err(|e| format!("{what}: {e}"))
}

/// One person's responder in one browser: their languages and user id.
#[wasm_bindgen]
pub struct Responder {
    copy: Copy,
    chrome: chrome::Chrome,
    me: String,
}

#[wasm_bindgen]
impl Responder {
    /// `languages`: `navigator.languages`, most preferred first. `me`: the
    /// signed-in user's id (empty before pairing).
    #[wasm_bindgen(constructor)]
    pub fn new(languages: Vec<String>, me: String) -> Responder {
        let copy = Copy::for_languages(&languages);
        let chrome = chrome::Chrome::new(copy.language());
        Responder { copy, chrome, me }
    }

    /// The language the copy is in (`ar`, `pt-BR`): the page's `lang`.
    pub fn language(&self) -> String {
        self.copy.language().to_string()
    }

    /// Whether that language is written right to left: the page's `dir`.
    pub fn rtl(&self) -> bool {
        self.copy.is_rtl()
    }

    #[wasm_bindgen(js_name = setUser)]
    pub fn set_user(&mut self, me: String) {
        self.me = me;
    }

    /// The web app's words (titles, buttons around the feed), by id. The
    /// app's name is the phone's (its notification channel's): one message
    /// in qp-core's copy, so the two cannot drift.
    pub fn text(&self, id: &str) -> String {
        match id {
            APP_NAME => self.copy.channel_name(),
            id => self.chrome.text(id),
        }
    }

    /// The web app's words with names in them: `args` is a JSON object of
    /// strings (`{"name": "Federica", "current": "Mallory"}`); each name is
    /// isolated for bidirectional text. Bad JSON reads as no names.
    #[wasm_bindgen(js_name = textWith)]
    pub fn text_with(&self, id: &str, args: &str) -> String {
        let args: std::collections::BTreeMap<String, String> =
            serde_json::from_str(args).unwrap_or_default();
        let pairs: Vec<(&str, &str)> = args.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.chrome.text_with(id, &pairs)
    }

    /// Why pairing failed, in the person's language (the phone's words):
    /// `status` is what `POST /api/pair` (or its preview) answered, 0 when
    /// the server could not be reached.
    #[wasm_bindgen(js_name = pairFailure)]
    pub fn pair_failure(&self, status: u16) -> String {
        use qp_core::pairing::PairErrorKind;
        let kind = match status {
            0 => PairErrorKind::Unreachable,
            s => PairErrorKind::of_status(s),
        };
        self.copy.pair_failure(kind)
    }

    /// All of [`Responder::text`] as one JSON object, id -> text.
    pub fn texts(&self) -> String {
        let mut all: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&self.chrome.all()).unwrap_or_default();
        all.insert(APP_NAME.into(), self.text(APP_NAME).into());
        serde_json::Value::Object(all).to_string()
    }

    /// What a screen reader announces for a question that arrived: the
    /// phone's "New question", then who asks (`title`, the cell's) and
    /// the question, punctuated as the language punctuates.
    pub fn announce(&self, title: &str, prompt: &str) -> String {
        self.chrome.text_with(
            "web-announce",
            &[
                ("what", &self.copy.fallback_title()),
                ("title", title),
                ("prompt", prompt),
            ],
        )
    }

    /// Why an answer was not sent, as the phone says it: `status` is what
    /// the server answered (`POST /api/questions/{id}/answer`). A refusal
    /// for good (400, 403, 404, 422) says so with its code, never "try
    /// again"; a failure that may pass (5xx, 429) says it will be retried;
    /// a 401 says to pair this browser again.
    /// `question` and `body` as for [`Responder::queued`].
    #[wasm_bindgen(js_name = notSent)]
    pub fn not_sent(&self, question: &str, body: &str, status: u16) -> Result<String, String> {
        use qp_core::present::copy::SendFailure;
        let cq = compact(question)?;
        let body: AnswerSubmission = parse(body, "body")?;
        let what = summary(&body, &cq, &self.copy);
        if status == 401 {
            // This browser's sign-in ended: the phone's line, for a browser.
            // `what` is isolated already where directions can mix (as the
            // phone's lines have it): the catalog's own isolation around
            // it comes off, and the line is anchored as the phone's are.
            let line = self
                .chrome
                .text_with("web-answer-signed-out", &[("answer", &what)])
                .replacen(&format!("\u{2068}{what}\u{2069}"), &what, 1);
            return Ok(self.copy.anchored(line));
        }
        let line = match SendFailure::of_status(status) {
            SendFailure::Refused(code) => AnswerLine::Rejected { code },
            cause => AnswerLine::Retrying(cause),
        };
        Ok(self.copy.answer_line(line, &what))
    }

    /// Why notifications are not on when the server refused this
    /// browser's registration (`POST /api/devices` answered `status`):
    /// in the person's language, never the server's English.
    #[wasm_bindgen(js_name = notificationsRefused)]
    pub fn notifications_refused(&self, status: u16) -> String {
        self.chrome.text_with(
            "web-notifications-refused",
            &[("code", &status.to_string())],
        )
    }

    /// The feed: `questions` is a JSON array of the server's Question
    /// objects; returns a JSON array of cells, newest first.
    pub fn feed(&self, questions: &str, now_ms: f64) -> Result<String, String> {
        let qs: Vec<Question> = parse(questions, "questions")?;
        Ok(serde_json::to_string(&self.cells(qs, time(now_ms))).unwrap_or_default())
    }

    /// Checks what the person did against the question (a JSON Question or
    /// compact question) before it is sent: `action` is `qp.v.<value>` for
    /// a button or `qp.text` for a typed reply (`text`). Returns the answer
    /// body as JSON, or the reason in the person's language.
    pub fn answer(
        &self,
        question: &str,
        action: &str,
        text: Option<String>,
    ) -> Result<String, String> {
        let cq = compact(question)?;
        map_action(&cq, action, text.as_deref())
            .map(|s| serde_json::to_string(&s).unwrap_or_default())
            .map_err(|e| match e {
                // The phones' words send the person to the app to shorten
                // it; here the person is in it, at the field.
                ActionError::TextTooLong {
                    length, max_length, ..
                } => self.chrome.text_with(
                    "web-text-too-long",
                    &[
                        ("length", &length.to_string()),
                        ("max", &max_length.to_string()),
                    ],
                ),
                e => self.copy.action_error(&e),
            })
    }

    /// What a reply field shows as the person types `text`:
    /// `{"left": n, "text": "…"}`, `left` counted as the protocol counts
    /// (negative when over the limit), `text` saying it in the person's
    /// language. An error when the question takes no typed answer.
    #[wasm_bindgen(js_name = replyLeft)]
    pub fn reply_left(&self, question: &str, text: &str) -> Result<String, String> {
        let cq = compact(question)?;
        let left = characters_left(&cq, text)
            .ok_or_else(|| "question: takes no typed answer".to_string())?;
        let words = if left >= 0 {
            self.chrome
                .text_with("web-reply-left", &[("count", &left.to_string())])
        } else {
            self.chrome
                .text_with("web-reply-over", &[("count", &(-left).to_string())])
        };
        Ok(json!({"left": left, "text": words}).to_string())
    }

    /// "Approve: queued, will send when you're online": an answer (its
    /// body, as [`Responder::answer`] made it) kept until the connection
    /// returns.
    pub fn queued(&self, question: &str, body: &str) -> Result<String, String> {
        let cq = compact(question)?;
        let body: AnswerSubmission = parse(body, "body")?;
        let what = summary(&body, &cq, &self.copy);
        Ok(self.copy.answer_line(AnswerLine::Queued, &what))
    }

    /// The notification that replaces a question answered from its button
    /// while offline: `{"title": "Approve: queued…", "body": prompt}`, the
    /// prompt as the person reads it (a sign-in consent in their language,
    /// never the server's English). `question` and `body` as for
    /// [`Responder::queued`].
    #[wasm_bindgen(js_name = queuedNotification)]
    pub fn queued_notification(&self, question: &str, body: &str) -> Result<String, String> {
        let title = self.queued(question, body)?;
        let prompt = compact(question)?.localized(&self.copy).prompt;
        Ok(json!({"title": title, "body": prompt}).to_string())
    }

    /// A Web Push's decrypted payload: `{"kind":"question","notification":…,
    /// "question":…,"pending":…}` (`pending`: the question as a pending
    /// Question, for the feed) or `{"kind":"resolved","notice":…}` (then
    /// [`Responder::resolved`] with the question shown). `max_actions` is
    /// the browser's `Notification.maxActions`.
    pub fn push(&self, payload: &str, max_actions: u32) -> Result<String, String> {
        match decode_apns(payload).map_err(|e| e.to_string())? {
            Push::Question(cq) => Ok(json!({
                "kind": "question",
                "notification": web_notification(&cq, max_actions, &self.copy),
                "question": cq,
                // As the feed draws it, for an open page until the server's
                // list brings the question itself.
                "pending": cq.to_question(),
            })
            .to_string()),
            Push::Resolved(notice) => Ok(json!({"kind": "resolved", "notice": notice}).to_string()),
        }
    }

    /// The notification that replaces a question's once resolved. `notice`
    /// is a resolved notice or a Question (the server's answer to an
    /// answer); `shown` the question the notification showed (compact, or
    /// the server's Question when none is showing and it was fetched).
    pub fn resolved(&self, notice: &str, shown: &str) -> Result<String, String> {
        let notice: ResolvedNotice = match serde_json::from_str::<Question>(notice) {
            Ok(q) => ResolvedNotice::from_question(&q),
            Err(_) => parse(notice, "notice")?,
        };
        let shown = compact(shown)?;
        let n = web_resolved(&notice, &shown, Some(&self.me), &self.copy);
        Ok(serde_json::to_string(&n).unwrap_or_default())
    }

    /// The notification for a push that cannot be shown as a question or a
    /// resolution (a payload that does not parse, a resolution of a question
    /// this browser cannot read): `{"title","body"}`, "open the app" words.
    pub fn fallback(&self) -> String {
        json!({"title": self.copy.fallback_title(), "body": self.copy.fallback_body()}).to_string()
    }
}

impl Responder {
    /// The cells of `qs`, newest first.
    pub fn cells(&self, mut qs: Vec<Question>, now: DateTime<Utc>) -> Vec<Cell> {
        qs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        qs.iter()
            .map(|q| {
                cell(
                    &CompactQuestion::from_question(q),
                    q,
                    &self.me,
                    now,
                    &self.copy,
                    None,
                )
            })
            .collect()
    }
}

/// A question as the page has it (a Question) or as a push carried it (a
/// compact question).
fn compact(json: &str) -> Result<CompactQuestion, String> {
    match serde_json::from_str::<Question>(json) {
        Ok(q) => Ok(CompactQuestion::from_question(&q)),
        Err(_) => parse(json, "question"),
    }
}

#[cfg(test)]
mod tests;
