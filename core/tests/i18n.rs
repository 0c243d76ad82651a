//! Localization: the asker's own text (prompt, context, labels, placeholder)
//! reaches the person unchanged in every bundled language, and sentences of
//! right-to-left languages isolate the names and labels embedded in them.

use chrono::{TimeZone, Utc};
use qp_core::payload::{decode_apns, encode_apns_question, Push};
use qp_core::present::android::android_notification;
use qp_core::present::copy::{available_languages, Copy};
use qp_core::present::ios::ios_notification;
use qp_core::present::PresentOptions;
use qp_core::protocol::{normalize_ask, AskContext, Asker, RoomRef};
use serde_json::json;

const PROMPT: &str = "Déployer v1.4 — שחרור? 🚀";
const CONTEXT: &str = "Build #4821 (مراجعة)";
const LABELS: [&str; 2] = ["Approve ✓", "Отклонить"];
const PLACEHOLDER: &str = "raison / סיבה";

#[test]
fn the_askers_text_is_never_translated_or_altered() {
    let now = Utc.with_ymd_and_hms(2026, 6, 27, 10, 30, 0).unwrap();
    let ask = normalize_ask(
        &json!({
            "prompt": PROMPT, "context": CONTEXT,
            "options": [{"value": "a", "label": LABELS[0]}, {"value": "b", "label": LABELS[1]}],
            "text_input": {"placeholder": PLACEHOLDER, "max_length": 40}
        }),
        &AskContext {
            now,
            default_target_user_id: Some("u_1".into()),
        },
    )
    .unwrap();
    let mut q = ask.into_question("q_i18n".into(), now);
    q.room = Some(RoomRef {
        code: "OPS123".into(),
        name: "Ops".into(),
    });
    q.asker = Some(Asker {
        kind: "agent".into(),
        id: "a_1".into(),
        handle: None,
        display_name: "Release Bot".into(),
    });
    let languages = available_languages();
    assert!(languages.len() >= 10, "{languages:?}");
    for lang in languages {
        let copy = Copy::for_languages(&[lang]);
        assert_eq!(copy.language(), lang);
        let payload = encode_apns_question(&q, &copy).unwrap().json;
        let Ok(Push::Question(cq)) = decode_apns(&payload) else {
            panic!("{lang}")
        };
        let ios = ios_notification(&cq, &PresentOptions::default(), &copy);
        assert_eq!(ios.body, PROMPT, "{lang}");
        assert_eq!(ios.subtitle.as_deref(), Some(CONTEXT), "{lang}");
        let titles: Vec<_> = ios
            .category
            .actions
            .iter()
            .map(|a| a.title.as_str())
            .collect();
        assert_eq!(titles, LABELS, "{lang}");
        assert_eq!(
            ios.category.text_action.as_ref().unwrap().placeholder,
            PLACEHOLDER,
            "{lang}"
        );
        let android = android_notification(&cq, now, &PresentOptions::default(), &copy);
        assert_eq!(android.text, PROMPT, "{lang}");
        assert_eq!(android.actions[0].title, LABELS[0], "{lang}");
        assert_eq!(android.actions[1].title, LABELS[1], "{lang}");
        // The push's visible alert is localized around the asker's text.
        let v: serde_json::Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(v["aps"]["alert"]["body"], PROMPT, "{lang}");
        assert!(
            v["aps"]["alert"]["title"]
                .as_str()
                .unwrap()
                .contains("Release Bot"),
            "{lang}"
        );
        if copy.is_rtl() {
            assert!(
                ios.title.contains("\u{2068}Release Bot\u{2069}"),
                "{lang}: the name is isolated in {:?}",
                ios.title
            );
        }
    }
}

#[test]
fn rtl_sentences_isolate_names_and_labels() {
    for lang in ["ar", "he"] {
        let copy = Copy::for_languages(&[lang]);
        assert!(copy.is_rtl());
        let embedded = copy.embed("Approve");
        assert_eq!(embedded, "\u{2068}Approve\u{2069}");
        // Isolates only wrap: the text inside is the asker's, unchanged.
        assert_eq!(embedded.trim_matches(['\u{2068}', '\u{2069}']), "Approve");
    }
    // In a left-to-right language only right-to-left text is isolated.
    let en = Copy::english();
    assert_eq!(en.embed("Approve"), "Approve");
    assert_eq!(en.embed("אשר"), "\u{2068}אשר\u{2069}");
}

/// Every message file, parsed, by tag.
fn message_files() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/locales");
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ftl"))
        .map(|p| {
            let tag = p.file_stem().unwrap().to_string_lossy().to_string();
            (tag, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    files
}

/// The literal text of a pattern, once per variant path: the texts a
/// person can see around the placeables.
fn literal_texts(pattern: &fluent_syntax::ast::Pattern<&str>) -> Vec<String> {
    use fluent_syntax::ast::{Expression, InlineExpression, PatternElement};
    let mut out = vec![String::new()];
    for el in &pattern.elements {
        match el {
            PatternElement::TextElement { value } => {
                out.iter_mut().for_each(|o| o.push_str(value));
            }
            PatternElement::Placeable { expression } => match expression {
                Expression::Select { variants, .. } => {
                    let mut next = Vec::new();
                    for v in variants {
                        for inner in literal_texts(&v.value) {
                            next.extend(out.iter().map(|o| format!("{o}{inner}")));
                        }
                    }
                    out = next;
                }
                Expression::Inline(InlineExpression::StringLiteral { value }) => {
                    out.iter_mut().for_each(|o| o.push_str(value));
                }
                Expression::Inline(_) => {}
            },
        }
    }
    out
}

/// (message id, its comment, its literal texts) of one file.
fn messages(source: &str) -> Vec<(String, Option<String>, Vec<String>)> {
    let r = fluent_syntax::parser::parse(source).unwrap_or_else(|(_, e)| panic!("{e:?}"));
    r.body
        .iter()
        .filter_map(|e| match e {
            fluent_syntax::ast::Entry::Message(m) => Some((
                m.id.name.to_string(),
                m.comment.as_ref().map(|c| c.content.join(" ")),
                m.value.as_ref().map(literal_texts).unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn every_message_says_where_it_appears_its_subject_and_its_length_and_keeps_to_it() {
    let files = message_files();
    let en = &files.iter().find(|(t, _)| t == "en").unwrap().1;
    let limits: std::collections::HashMap<String, usize> = messages(en)
        .into_iter()
        .map(|(id, comment, _)| {
            let c = comment.unwrap_or_else(|| panic!("en: {id} has no comment"));
            let max = c
                .split("Max ")
                .nth(1)
                .and_then(|m| m.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("en: {id}'s comment gives no maximum length: {c}"));
            (id, max)
        })
        .collect();
    assert!(limits.len() >= 34, "{limits:?}");
    for (tag, source) in &files {
        for (id, comment, texts) in messages(source) {
            let c = comment.unwrap_or_else(|| panic!("{tag}: {id} has no comment"));
            for part in ["Where:", "Subject:", "Max "] {
                assert!(
                    c.contains(part),
                    "{tag}: {id}'s comment lacks {part:?}: {c}"
                );
            }
            let max = limits[&id];
            for t in texts {
                let n = t.trim().chars().count();
                assert!(n <= max, "{tag}: {id} is {n} characters, over {max}: {t:?}");
            }
        }
    }
}

/// Whether a language capitalises the start of a sentence.
fn has_case(lang: &str) -> bool {
    !matches!(lang, "ja" | "zh-Hans" | "ar" | "he")
}

fn resolved(state: qp_core::protocol::QuestionState) -> qp_core::protocol::Question {
    let now = Utc.with_ymd_and_hms(2026, 6, 27, 10, 30, 0).unwrap();
    let ask = normalize_ask(
        &json!({"prompt": "Deploy?", "options": [{"value": "a", "label": "Approve"}, {"value": "b", "label": "Deny"}]}),
        &AskContext {
            now,
            default_target_user_id: Some("u_me".into()),
        },
    )
    .unwrap();
    let mut q = ask.into_question("q_1".into(), now);
    q.state = state;
    q
}

#[test]
fn status_words_that_become_a_subtitle_start_as_a_sentence() {
    use qp_core::protocol::QuestionState::{Cancelled, Expired};
    for lang in available_languages() {
        let copy = Copy::for_languages(&[lang]);
        for state in [Expired, Cancelled] {
            let line = copy.resolution(&resolved(state), Some("u_me")).unwrap();
            let first = line.chars().next().unwrap();
            if has_case(lang) {
                assert!(first.is_uppercase(), "{lang}: {line:?}");
            }
            assert_ne!(
                line,
                Copy::english()
                    .resolution(&resolved(state), None)
                    .unwrap()
                    .to_lowercase()
            );
        }
    }
}

#[test]
fn the_too_late_line_says_how_the_question_closed_in_every_language() {
    use qp_core::present::copy::AnswerLine::TooLate;
    use qp_core::protocol::QuestionState::{Answered, Cancelled, Expired, Pending};
    for lang in available_languages() {
        let copy = Copy::for_languages(&[lang]);
        let a = copy.embed("Approve");
        let lines: Vec<String> = [Answered, Expired, Cancelled, Pending]
            .into_iter()
            .map(|s| copy.answer_line(TooLate(s), &a))
            .collect();
        let distinct: std::collections::HashSet<&String> = lines.iter().collect();
        assert_eq!(
            distinct.len(),
            4,
            "{lang}: one wording for different closings: {lines:#?}"
        );
        for l in &lines {
            assert!(l.contains("Approve"), "{lang}: {l:?}");
        }
    }
    // Expired and cancelled never read "already answered".
    let de = Copy::for_languages(&["de"]);
    let expired = de.answer_line(TooLate(Expired), "Approve");
    assert!(
        !expired.contains("beantwortet") && expired.contains("abgelaufen"),
        "{expired}"
    );
}

#[test]
fn french_punctuation_is_held_to_its_word_by_no_break_spaces() {
    let fr = message_files()
        .into_iter()
        .find(|(t, _)| t == "fr")
        .unwrap()
        .1;
    for (id, _, texts) in messages(&fr) {
        for t in texts {
            for bad in [" :", " ;", " ?", " !", "« ", " »"] {
                assert!(
                    !t.contains(bad),
                    "fr: {id} has a breaking space in {bad:?}: {t:?}"
                );
            }
            for (i, c) in t.char_indices() {
                if matches!(c, ':' | ';' | '»') && i > 0 {
                    let before = t[..i].chars().last().unwrap();
                    assert!(
                        matches!(before, '\u{00A0}' | '\u{202F}'),
                        "fr: {id}: {c:?} after {before:?} in {t:?}"
                    );
                }
            }
        }
    }
}

/// A text whose first directional character is an isolate's (the embedded
/// text), so its direction would come from the display's skipping of it.
fn starts_in_isolated_text(s: &str) -> bool {
    for c in s.chars() {
        if matches!(c, '\u{2066}' | '\u{2067}' | '\u{2068}') {
            return true;
        }
        if c.is_alphabetic() || matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}') {
            return false;
        }
    }
    false
}

/// Everything a person reads on the lock screen in one language, with the
/// asker's own text (prompt, context, labels, names) left out: titles,
/// action and reply labels, the resolution lines, the fallback, the action
/// errors.
fn lock_screen_strings(copy: &Copy) -> Vec<String> {
    use qp_core::answer::ActionError;
    use qp_core::present::ios::ios_resolved_notification;
    use qp_core::protocol::{Answer, QuestionState, Responder};
    let now = Utc.with_ymd_and_hms(2026, 6, 27, 10, 30, 0).unwrap();
    let mut out = Vec::new();
    for (options, text) in [(2, true), (4, true), (3, false), (0, true)] {
        let opts: Vec<_> = (0..options)
            .map(|i| {
                let label = ["Approve", "Deny", "Later", "Never"][i];
                json!({"value": format!("v{i}"), "label": label})
            })
            .collect();
        let mut body = json!({"prompt": "Deploy?", "target_user_id": "u_me"});
        if options > 0 {
            body["options"] = json!(opts);
        }
        if text {
            body["text_input"] = json!({"max_length": 40});
        }
        let ask = normalize_ask(
            &body,
            &AskContext {
                now,
                default_target_user_id: Some("u_me".into()),
            },
        )
        .unwrap();
        let mut q = ask.into_question("q_1".into(), now);
        q.room = Some(RoomRef {
            code: "OPS123".into(),
            name: "Ops".into(),
        });
        q.asker = Some(Asker {
            kind: "agent".into(),
            id: "a_1".into(),
            handle: None,
            display_name: "Release Bot".into(),
        });
        for scope in [
            qp_core::protocol::ResponderScope::Direct,
            qp_core::protocol::ResponderScope::Room,
        ] {
            q.responder_scope = scope;
            q.target_user_id =
                (scope == qp_core::protocol::ResponderScope::Direct).then(|| "u_me".to_string());
            let payload = encode_apns_question(&q, copy).unwrap().json;
            let v: serde_json::Value = serde_json::from_str(&payload).unwrap();
            out.push(v["aps"]["alert"]["title"].as_str().unwrap().to_string());
            let cq = match decode_apns(&payload) {
                Ok(Push::Question(cq)) => cq,
                other => panic!("{other:?}"),
            };
            let ios = ios_notification(&cq, &PresentOptions::default(), copy);
            out.push(ios.title);
            if let Some(t) = ios.category.text_action {
                out.extend([t.title, t.button_title, t.placeholder]);
            }
            let android = android_notification(&cq, now, &PresentOptions::default(), copy);
            out.push(android.title);
            for a in android.actions {
                if a.action_id.starts_with("qp.v.") {
                    continue; // the asker's label
                }
                out.push(a.title);
                if let Some(r) = a.remote_input {
                    out.push(r.label);
                }
            }
        }
        for (state, who) in [
            (QuestionState::Answered, "u_me"),
            (QuestionState::Answered, "u_fed"),
            (QuestionState::Expired, ""),
            (QuestionState::Cancelled, ""),
        ] {
            let mut r = q.clone();
            r.state = state;
            if state == QuestionState::Answered {
                r.answer = Some(Answer {
                    value: None,
                    label: None,
                    text: Some("ship it".into()),
                    responder: Responder {
                        id: who.into(),
                        display_name: "Federica".into(),
                    },
                    answered_at: now,
                });
            }
            let n = ios_resolved_notification(&r, Some("u_me"), copy).unwrap();
            out.extend([n.title, n.subtitle]);
        }
    }
    let f = qp_core::payload::fallback(None, None, copy);
    out.extend([f.title, f.body, copy.open_app_to_finish()]);
    for e in [
        ActionError::TextTooLong {
            text: String::new(),
            max_length: 20,
            length: 25,
        },
        ActionError::TextNotAllowed,
        ActionError::EmptyText,
        ActionError::UnknownChoice("x".into()),
        ActionError::UnknownAction("x".into()),
    ] {
        out.push(copy.action_error(&e));
    }
    out
}

/// The raw failures the phone meets, as the outbox stores them (through
/// the flush's own classification) and as an older version stored them.
#[cfg(feature = "phone")]
const RAW_FAILURES: [&str; 6] = [
    "error sending request: client error (Connect): dns error: failed to lookup address information",
    "error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)",
    "not signed in",
    "server answered 503: database is locked",
    "unreadable answer from the server",
    "text: must be at most 40 characters",
];

/// Words of a raw error that must never reach a person's screen.
const RAW_WORDS: [&str; 10] = [
    "error sending request",
    "dns error",
    "Connection refused",
    "os error",
    "not signed in",
    "server answered",
    "503",
    "database is locked",
    "unreadable answer",
    "must be at most",
];

/// Everything the feed shows in one language, with the asker's text left
/// out: cell titles, hints, time remaining, the resolution line and my
/// answer's status in each of its states and failures.
#[cfg(feature = "phone")]
fn feed_strings(copy: &Copy) -> Vec<String> {
    use qp_core::feed::feed;
    use qp_core::payload::{CompactOption, CompactQuestion, CompactRoom, ResolvedNotice};
    use qp_core::present::copy::SendFailure;
    use qp_core::protocol::{
        Answer, AnswerSubmission, OptionStyle, QuestionState, Responder, ResponderScope, TextInput,
    };
    use qp_core::store::{AnswerState, Store, StoreMode};
    let now = Utc::now();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("phone.sqlite"), StoreMode::App).unwrap();
    let mut n = 0;
    let mut question = |options: usize, text: bool, scope: ResponderScope| {
        n += 1;
        let q = CompactQuestion {
            v: 1,
            id: format!("q_{n}"),
            room: CompactRoom {
                code: "OPS123".into(),
                name: "Ops".into(),
            },
            asker: "Release Bot".into(),
            prompt: "Deploy?".into(),
            context: None,
            options: ["Approve", "Reject", "Later", "Never"][..options]
                .iter()
                .map(|l| CompactOption {
                    value: l.to_lowercase(),
                    label: l.to_string(),
                    style: OptionStyle::Default,
                })
                .collect(),
            text_input: text.then_some(TextInput {
                placeholder: None,
                max_length: 60,
            }),
            responder_scope: scope,
            target_user_id: (scope == ResponderScope::Direct).then(|| "u_me".to_string()),
            expires_at: now + chrono::Duration::minutes(30),
            created_at: now,
            consent: None,
        };
        store.record_push(&q).unwrap();
        q.id
    };
    for (options, text, scope) in [
        (2, true, ResponderScope::Direct),
        (4, false, ResponderScope::Room),
        (0, true, ResponderScope::Room),
    ] {
        question(options, text, scope);
    }
    let answer = |id: &str, body: AnswerSubmission, state: AnswerState, error: Option<String>| {
        let e = store.commit_answer(id, &body).unwrap();
        if state != AnswerState::Queued || error.is_some() {
            assert!(store.claim_answer(e.id, 0).unwrap());
            store
                .finish_answer(e.id, state, error.as_deref(), 0)
                .unwrap();
        }
    };
    let approve = || AnswerSubmission::Value("approve".into());
    // Queued, then failed attempts: each raw failure as flush records it,
    // and as an older version did.
    let q = question(2, true, ResponderScope::Direct);
    answer(&q, approve(), AnswerState::Queued, None);
    for raw in RAW_FAILURES {
        for stored in [
            SendFailure::of_network_error(raw).record(raw),
            SendFailure::of_status(503).record(raw),
            SendFailure::of_status(401).record(raw),
            SendFailure::Refused(Some(422)).record(raw),
            raw.to_string(),
        ] {
            let q = question(2, true, ResponderScope::Direct);
            answer(&q, approve(), AnswerState::Queued, Some(stored.clone()));
            let q = question(2, true, ResponderScope::Direct);
            answer(
                &q,
                AnswerSubmission::Text("ship it".into()),
                AnswerState::Rejected,
                Some(stored),
            );
        }
    }
    let q = question(2, true, ResponderScope::Direct);
    answer(&q, approve(), AnswerState::Sending, None);
    // Too late: answered by someone else, expired, cancelled.
    for (state, who) in [
        (QuestionState::Answered, Some("u_fed")),
        (QuestionState::Expired, None),
        (QuestionState::Cancelled, None),
    ] {
        let q = question(2, true, ResponderScope::Room);
        answer(&q, approve(), AnswerState::AlreadyResolved, None);
        store
            .record_resolved(&ResolvedNotice {
                v: 1,
                id: q.clone(),
                state,
                answer: who.map(|w| Answer {
                    value: Some("reject".into()),
                    label: Some("Reject".into()),
                    text: None,
                    responder: Responder {
                        id: w.into(),
                        display_name: "Federica".into(),
                    },
                    answered_at: now,
                }),
                resolved_at: Some(now),
            })
            .unwrap();
    }
    let mut out = Vec::new();
    for cell in feed(&store, "u_me", now, copy).unwrap() {
        out.push(cell.title);
        out.extend(cell.resolution);
        out.extend(cell.room_hint);
        out.extend(cell.time_remaining);
        if let Some(c) = cell.choose {
            out.extend([c.title, c.time_remaining]);
        }
        if let Some(t) = cell.text_field {
            out.extend([t.placeholder, t.send_title]);
            out.extend(t.hint);
        }
        out.extend(cell.my_answer.map(|m| m.status));
    }
    out
}

/// The English file's one-word messages ("Allow", "Send") that `lang`
/// words differently: a translation must not show them as a word of its
/// own, alone or inside a status line ("Allow: sending…"). Where the
/// language's own word is the same (French "Questions"), it may.
fn english_single_words(lang: &str) -> Vec<String> {
    let files = message_files();
    let of = |tag: &str| {
        messages(&files.iter().find(|(t, _)| t == tag).unwrap().1)
            .into_iter()
            .map(|(id, _, texts)| (id, texts))
            .collect::<std::collections::HashMap<_, _>>()
    };
    let (en, theirs) = (of("en"), of(lang));
    let mut words: Vec<String> = en
        .iter()
        .filter(|(_, texts)| texts.len() == 1)
        .map(|(id, texts)| (id, texts[0].trim()))
        .filter(|(_, t)| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic()))
        .filter(|(id, t)| {
            theirs
                .get(*id)
                .is_none_or(|own| !own.iter().any(|o| o.trim() == *t))
        })
        .map(|(_, t)| t.to_string())
        .collect();
    words.sort();
    words.dedup();
    words
}

/// Whether `word` stands in `s` as a word of its own (not inside another).
fn has_word(s: &str, word: &str) -> bool {
    s.match_indices(word).any(|(i, _)| {
        let before = s[..i].chars().next_back();
        let after = s[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The lines a phone shows for its own answer to the sign-in consent
/// question (the server's push, English labels and all): committed from
/// the feed, from the lock screen's action, and read back later. Android
/// puts these on the lock screen.
#[cfg(feature = "phone")]
fn consent_answer_lines(lang: &str) -> Vec<String> {
    use qp_core::http::ScriptedTransport;
    use qp_core::phone::Phone;
    use qp_core::store::StoreMode;
    struct Token;
    impl qp_core::sync::TokenProvider for Token {
        fn token(&self) -> Option<String> {
            Some("qpu_test".into())
        }
    }
    let copy = Copy::for_languages(&[lang]);
    let mut out = Vec::new();
    for (value, action) in [("allow", "qp.v.allow"), ("deny", "qp.v.deny")] {
        let dir = tempfile::tempdir().unwrap();
        let phone = Phone::open(
            &dir.path().join("phone.sqlite"),
            StoreMode::App,
            "http://127.0.0.1:9",
            "u_me",
            std::sync::Arc::new(Token),
            &[lang.to_string()],
            std::sync::Arc::new(ScriptedTransport::offline()),
        )
        .unwrap();
        let (_, payload) = consent_push(&copy, "Ops");
        phone.receive_apns(&payload).unwrap();
        let committed = if value == "allow" {
            phone.answer_in_app("q_consent", Some(value.into()), None)
        } else {
            phone.answer_action("q_consent", action, None)
        }
        .unwrap();
        out.push(committed.status);
        out.push(phone.answer_status("q_consent").unwrap().unwrap().status);
        for cell in phone.feed(Utc::now()).unwrap() {
            out.extend(cell.my_answer.map(|m| m.status));
        }
    }
    out
}

#[test]
#[cfg(feature = "phone")]
fn the_answer_to_the_sign_in_consent_reads_its_button_in_the_persons_language() {
    for lang in available_languages() {
        let copy = Copy::for_languages(&[lang]);
        let lines = consent_answer_lines(lang);
        assert_eq!(lines.len(), 6, "{lang}: {lines:?}");
        for (i, line) in lines.iter().enumerate() {
            let value = if i < 3 { "allow" } else { "deny" };
            let label = copy.consent_label(value).unwrap();
            assert!(line.contains(&label), "{lang}: {label:?} not in {line:?}");
            if lang != "en" {
                for english in ["Allow", "Deny"] {
                    assert!(!has_word(line, english), "{lang}: English in {line:?}");
                }
            }
        }
    }
}

/// The English file's phrases (two words or more), as a translation must
/// not show them.
fn english_phrases() -> Vec<String> {
    let en = message_files()
        .into_iter()
        .find(|(t, _)| t == "en")
        .unwrap()
        .1;
    let mut phrases: Vec<String> = messages(&en)
        .into_iter()
        .flat_map(|(_, _, texts)| texts)
        .flat_map(|t| {
            t.split(|c: char| {
                matches!(
                    c,
                    ':' | ';' | ',' | '.' | '(' | ')' | '“' | '”' | '…' | '\n'
                )
            })
            .map(|p| p.trim().to_string())
            .collect::<Vec<_>>()
        })
        .filter(|p| p.contains(' ') && p.chars().count() >= 6)
        .collect();
    phrases.sort();
    phrases.dedup();
    assert!(phrases.len() >= 25, "{phrases:?}");
    phrases
}

#[test]
fn no_translated_lock_screen_or_feed_string_shows_english_or_a_raw_error() {
    let phrases = english_phrases();
    // The asker's text and people's names, which are shown as they are.
    let theirs = [
        "Release Bot",
        "Approve",
        "Reject",
        "Later",
        "Never",
        "Federica",
        "ship it",
        "Deploy?",
        "Claude Code",
        "qp login",
    ];
    for lang in available_languages() {
        let copy = Copy::for_languages(&[lang]);
        let mut strings = lock_screen_strings(&copy);
        // Every pairing failure, and the sign-in consent question in each
        // of its three forms with its buttons, as the phone and the web
        // show them.
        use qp_core::pairing::PairErrorKind as Pair;
        for kind in [
            Pair::NotACode,
            Pair::NoServer,
            Pair::InvalidCode,
            Pair::TooManyAttempts,
            Pair::Unreachable,
            Pair::Refused,
            Pair::StorageFailed,
        ] {
            strings.push(copy.pair_failure(kind));
        }
        for client in ["verified", "unverified", "terminal"] {
            let parts = qp_core::protocol::ConsentRequest {
                client: client.into(),
                name: "Claude Code".into(),
                host: (client == "verified").then(|| "claude.ai".into()),
                returns_to: Some("localhost".into()),
                code: "WDJB-MJHT".into(),
            };
            let words = copy.consent(&parts, "Ops");
            strings.extend([
                words.asker,
                words.prompt,
                words.context,
                words.allow,
                words.deny,
            ]);
        }
        let (consent, _) = consent_push(&copy, "Ops");
        let shown = consent.localized(&copy);
        strings.push(copy.title(shown.responder_scope, &shown.asker));
        #[cfg(feature = "phone")]
        {
            let feed = feed_strings(&copy);
            assert!(feed.len() >= 60, "{lang}: {} feed strings", feed.len());
            strings.extend(feed);
            strings.extend(consent_answer_lines(lang));
        }
        let single_words = english_single_words(lang);
        for s in &strings {
            for raw in RAW_WORDS {
                assert!(!s.contains(raw), "{lang}: a raw error on screen: {s:?}");
            }
            if lang == "en" {
                continue;
            }
            let mut ours = s.clone();
            for t in theirs {
                ours = ours.replace(t, "");
            }
            for p in &phrases {
                assert!(
                    !ours.to_lowercase().contains(&p.to_lowercase()),
                    "{lang}: English ({p:?}) in {s:?}"
                );
            }
            for w in &single_words {
                assert!(!has_word(&ours, w), "{lang}: English ({w:?}) in {s:?}");
            }
        }
        if copy.is_rtl() {
            for s in &strings {
                assert!(
                    !starts_in_isolated_text(s),
                    "{lang}: begins with isolated text but no RLM: {s:?}"
                );
                assert!(!s.contains('\u{200E}'), "{lang}: an LTR mark in {s:?}");
                if let Some(rest) = s.strip_prefix('\u{200F}') {
                    assert!(!rest.starts_with('\u{200F}'), "{lang}: {s:?}");
                }
            }
        }
    }
}

/// The server's sign-in consent question as a push carries it (the parts
/// and the server's English words), to a phone in `copy`'s language.
fn consent_push(copy: &Copy, room: &str) -> (qp_core::payload::CompactQuestion, String) {
    use qp_core::protocol::ConsentRequest;
    let now = Utc.with_ymd_and_hms(2026, 6, 27, 10, 30, 0).unwrap();
    let parts = ConsentRequest {
        client: "unverified".into(),
        name: "Claude Code".into(),
        host: None,
        returns_to: Some("localhost".into()),
        code: "WDJB-MJHT".into(),
    };
    let english = Copy::english().consent(&parts, room);
    let ask = normalize_ask(
        &json!({
            "prompt": english.prompt, "context": english.context,
            "options": [{"value": "allow", "label": english.allow, "style": "primary"},
                        {"value": "deny", "label": english.deny, "style": "danger"}],
            "target_user_id": "u_me",
        }),
        &AskContext {
            now,
            default_target_user_id: Some("u_me".into()),
        },
    )
    .unwrap();
    let mut q = ask.into_question("q_consent".into(), now);
    q.room = Some(RoomRef {
        code: "OPS123".into(),
        name: room.into(),
    });
    q.asker = Some(Asker {
        kind: "agent".into(),
        id: "a_signin".into(),
        handle: Some("qp-sign-in".into()),
        display_name: english.asker,
    });
    q.consent = Some(parts);
    let payload = encode_apns_question(&q, copy).unwrap().json;
    match decode_apns(&payload) {
        Ok(Push::Question(cq)) => (cq, payload),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_sign_in_consent_reads_in_every_language_with_the_room_and_name_intact() {
    use qp_core::present::cell::cell;
    use qp_core::present::web::web_notification;
    use qp_core::protocol::{Answer, QuestionState, Responder};
    let english_words: Vec<String> = {
        let en = Copy::english();
        let (cq, _) = consent_push(en, "Ops");
        let shown = cq.localized(en);
        vec![
            "wants to ask you questions".into(),
            "It calls itself".into(),
            "unverified client".into(),
            "It signs in".into(),
            shown.asker,
        ]
    };
    let room = "צוות שחרור";
    for lang in available_languages() {
        let copy = Copy::for_languages(&[lang]);
        let (cq, payload) = consent_push(&copy, room);
        // The push keeps the server's words (the phone compares them with
        // the server's question) and carries the parts.
        assert!(cq.prompt.starts_with("An unverified client"), "{lang}");
        assert!(cq.consent.is_some(), "{lang}");
        let v: serde_json::Value = serde_json::from_str(&payload).unwrap();
        let now = cq.created_at;
        let ios = ios_notification(&cq, &PresentOptions::default(), &copy);
        let android = android_notification(&cq, now, &PresentOptions::default(), &copy);
        let web = web_notification(&cq, 2, &copy);
        let feed = cell(&cq, &cq.to_question(), "u_me", now, &copy, None);
        let mut answered = cq.to_question();
        answered.state = QuestionState::Answered;
        answered.answer = Some(Answer {
            value: Some("allow".into()),
            label: Some("Allow".into()),
            text: None,
            responder: Responder {
                id: "u_me".into(),
                display_name: "Federica".into(),
            },
            answered_at: now,
        });
        let result = copy.resolution(&answered, Some("u_me")).unwrap();
        let allow = copy.consent_label("allow").unwrap();
        let texts = [
            v["aps"]["alert"]["title"].as_str().unwrap().to_string(),
            v["aps"]["alert"]["body"].as_str().unwrap().to_string(),
            v["aps"]["alert"]["subtitle"].as_str().unwrap().to_string(),
            ios.title.clone(),
            ios.body.clone(),
            ios.subtitle.clone().unwrap(),
            ios.category.actions[0].title.clone(),
            ios.category.actions[1].title.clone(),
            android.title.clone(),
            android.text.clone(),
            android.actions[0].title.clone(),
            web.title.clone(),
            web.body.clone(),
            web.actions[1].title.clone(),
            feed.title.clone(),
            feed.prompt.clone(),
            feed.context.clone().unwrap(),
            feed.buttons[0].label.clone(),
            result.clone(),
        ];
        for t in &texts {
            if lang != "en" {
                for e in &english_words {
                    assert!(!t.contains(e.as_str()), "{lang}: English {e:?} in {t:?}");
                }
                assert!(!t.contains("Allow") && !t.contains("Deny"), "{lang}: {t:?}");
            }
        }
        for prompt in [&ios.body, &android.text, &feed.prompt, &web.body] {
            // The room's name and the client's claim whole and isolated,
            // after the server's words.
            assert!(
                prompt.contains(&format!("\u{2068}{room}\u{2069}")),
                "{lang}: {prompt:?}"
            );
            let name_at = prompt.find("\u{2068}Claude Code\u{2069}").unwrap();
            assert!(name_at > 0, "{lang}: {prompt:?}");
            assert!(
                prompt.contains("WDJB-MJHT")
                    || feed.context.as_deref().unwrap().contains("WDJB-MJHT")
            );
        }
        assert_eq!(ios.category.actions[0].title, allow, "{lang}");
        assert!(result.contains(&allow), "{lang}: {result:?}");
        // The answer values stay the protocol's.
        assert_eq!(feed.buttons[0].value, "allow");
        assert_eq!(feed.buttons[1].value, "deny");
        assert!(ios.category.actions[1].identifier.ends_with("deny"));
    }
}
