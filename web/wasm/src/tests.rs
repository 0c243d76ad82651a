//! The web responder's logic, run natively: what the page and the service
//! worker get for the feed, an answer and a push.

use chrono::{Duration, TimeZone, Utc};
use qp_core::payload::{encode_apns_question, encode_apns_resolved};
use qp_core::present::copy::{available_languages, Copy};
use qp_core::protocol::{normalize_ask, Answer, AskContext, Asker, QuestionState, RoomRef};
use qp_core::protocol::{Question, Responder as ResponderRef};
use serde_json::{json, Value};

use super::*;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 2, 10, 0, 0).unwrap()
}

fn question(id: &str, ask: Value, created: DateTime<Utc>) -> Question {
    let a = normalize_ask(
        &ask,
        &AskContext {
            now: created,
            default_target_user_id: Some("u_me".into()),
        },
    )
    .unwrap();
    let mut q = a.into_question(id.into(), created);
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
    q
}

fn feed(r: &Responder, qs: &[Question]) -> Vec<Value> {
    let json = r
        .feed(
            &serde_json::to_string(qs).unwrap(),
            now().timestamp_millis() as f64,
        )
        .unwrap();
    serde_json::from_str(&json).unwrap()
}

#[test]
fn the_feed_draws_two_options_inline_and_four_as_a_sheet_newest_first() {
    let r = Responder::new(vec!["en-US".into()], "u_me".into());
    let two = question(
        "q_two",
        json!({"prompt": "Deploy <b>v1.4</b>?", "options": [
            {"value": "approve", "label": "Approve", "style": "primary"},
            {"value": "deny", "label": "Deny", "style": "danger"}],
            "ttl": 720}),
        now() - Duration::minutes(1),
    );
    let four = question(
        "q_four",
        json!({"prompt": "Which env?", "options": ["dev", "staging", "prod", "dr"],
            "text_input": {}, "responder_scope": "room", "ttl": 7200}),
        now(),
    );
    let cells = feed(&r, &[two, four]);
    assert_eq!(cells[0]["question_id"], "q_four");
    assert_eq!(cells[0]["choose"]["title"], "Choose an answer (4 options)");
    assert_eq!(cells[0]["choose"]["options"][2]["label"], "prod");
    assert_eq!(cells[0]["choose"]["time_remaining"], "2 h left");
    assert_eq!(cells[0]["room_hint"], "anyone in the room can answer");
    assert_eq!(cells[0]["text_field"]["hint"], "or type a reply");
    assert_eq!(cells[0]["buttons"], json!([]));
    assert_eq!(cells[1]["title"], "Release Bot asks you");
    // The asker's text as written: the page shows it as text, never HTML.
    assert_eq!(cells[1]["prompt"], "Deploy <b>v1.4</b>?");
    assert_eq!(cells[1]["buttons"][0]["label"], "Approve");
    assert_eq!(cells[1]["buttons"][1]["style"], "danger");
    assert_eq!(cells[1]["time_remaining"], "11 min left");
    assert_eq!(cells[1]["room_hint"], Value::Null);
}

#[test]
fn resolved_cells_say_who_answered_and_past_the_deadline_read_expired() {
    let r = Responder::new(vec!["en".into()], "u_me".into());
    let mut mine = question(
        "q_mine",
        json!({"prompt": "Ship?", "options": ["Approve", "Deny"]}),
        now() - Duration::minutes(3),
    );
    mine.state = QuestionState::Answered;
    mine.answer = Some(Answer {
        value: Some("Approve".into()),
        label: Some("Approve".into()),
        text: None,
        responder: ResponderRef {
            id: "u_me".into(),
            display_name: "Me".into(),
        },
        answered_at: now(),
    });
    let mut theirs = mine.clone();
    theirs.id = "q_theirs".into();
    theirs.answer.as_mut().unwrap().responder = ResponderRef {
        id: "u_fed".into(),
        display_name: "Federica".into(),
    };
    let late = question(
        "q_late",
        json!({"prompt": "Still?", "options": ["Yes", "No"], "ttl": 60}),
        now() - Duration::minutes(2),
    );
    let cells = feed(&r, &[mine, theirs, late]);
    let by_id = |id: &str| {
        cells
            .iter()
            .find(|c| c["question_id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(by_id("q_mine")["resolution"], "You answered: Approve");
    assert_eq!(
        by_id("q_theirs")["resolution"],
        "Federica answered: Approve"
    );
    assert_eq!(by_id("q_late")["state"], "expired");
    assert_eq!(by_id("q_late")["resolution"], "Expired with no answer");
    assert_eq!(by_id("q_late")["time_remaining"], Value::Null);
}

#[test]
fn the_browsers_languages_choose_the_copy_and_its_direction() {
    let r = Responder::new(vec!["ar-EG".into(), "en".into()], "u_me".into());
    assert_eq!(r.language(), "ar");
    assert!(r.rtl());
    assert_ne!(r.text("web-sign-out"), "Sign out");
    let r = Responder::new(vec!["xx".into()], String::new());
    assert_eq!(r.language(), "en");
    assert!(!r.rtl());
}

#[test]
fn every_language_has_every_word_of_the_web_app() {
    for lang in available_languages() {
        let chrome = chrome::Chrome::new(lang);
        let own = chrome::Chrome::new(lang);
        for id in CHROME_IDS {
            let t = chrome.text(id);
            assert_ne!(&t, id, "{lang}: {id} missing");
            if lang != "en" && *id != "web-announce" {
                // Translated, not the English fallback (French shares a few words).
                let en = chrome::Chrome::new("en").text(id);
                assert!(t != en || lang == "fr", "{lang}: {id} is English");
            }
            assert_eq!(own.text(id), t);
        }
    }
}

#[test]
fn a_pairing_link_names_both_accounts_isolated_in_every_language() {
    let args = r#"{"name": "Mallory", "current": "Federica", "server": "qp.example"}"#;
    let r = Responder::new(vec!["en".into()], String::new());
    let (fsi, pdi) = ('\u{2068}', '\u{2069}');
    assert_eq!(
        r.text_with("web-link-heading", args),
        format!("Sign in as {fsi}Mallory{pdi}?")
    );
    let replace = r.text_with("web-link-replace", args);
    assert!(
        replace.contains(&format!("{fsi}Federica{pdi}")),
        "{replace}"
    );
    // Right to left: the name keeps its own direction inside the sentence.
    let he = Responder::new(vec!["he".into()], String::new());
    let detail = he.text_with("web-link-detail", args);
    assert!(detail.contains(&format!("{fsi}Mallory{pdi}")), "{detail}");
    assert!(
        detail.contains(&format!("{fsi}qp.example{pdi}")),
        "{detail}"
    );
    for lang in available_languages() {
        let r = Responder::new(vec![lang.to_string()], String::new());
        for id in [
            "web-link-heading",
            "web-link-detail",
            "web-link-accept",
            "web-notifications-switched",
        ] {
            let t = r.text_with(id, args);
            assert!(
                t.contains("Mallory") && !t.contains('{'),
                "{lang}: {id}: {t}"
            );
        }
        for id in ["web-link-replace", "web-link-again", "web-link-stay"] {
            let t = r.text_with(id, args);
            assert!(
                t.contains("Federica") && !t.contains('{'),
                "{lang}: {id}: {t}"
            );
        }
    }
    // Not JSON: no names, never a panic.
    assert!(r
        .text_with("web-link-heading", "{")
        .starts_with("Sign in as"));
}

#[test]
fn an_answer_is_checked_before_it_is_sent_and_refused_in_the_persons_language() {
    let q = question(
        "q_t",
        json!({"prompt": "Why?", "options": ["Approve", "Deny"], "text_input": {"max_length": 5}}),
        now(),
    );
    let json = serde_json::to_string(&q).unwrap();
    let r = Responder::new(vec!["en".into()], "u_me".into());
    assert_eq!(
        r.answer(&json, "qp.v.Deny", None).unwrap(),
        r#"{"value":"Deny"}"#
    );
    assert_eq!(
        r.answer(&json, "qp.text", Some("  ok ".into())).unwrap(),
        r#"{"text":"ok"}"#
    );
    assert_eq!(
        r.queued(&json, r#"{"value":"Deny"}"#).unwrap(),
        "Deny: queued, will send when you’re online"
    );
    let long = r
        .answer(&json, "qp.text", Some("far too long".into()))
        .unwrap_err();
    assert!(long.contains("12") && long.contains('5'), "{long}");
    assert_eq!(
        r.answer(&json, "qp.text", Some(" ".into())).unwrap_err(),
        "Type a reply first."
    );
    assert!(r.answer(&json, "qp.v.Maybe", None).is_err());
    let de = Responder::new(vec!["de".into()], "u_me".into());
    assert_ne!(
        de.answer(&json, "qp.text", Some(" ".into())).unwrap_err(),
        "Type a reply first."
    );
}

/// The reply field counts as the protocol counts: characters (Unicode
/// scalar values), not UTF-16 units, so five emoji fit a limit of five
/// exactly; the field says what is left, and a reply over it is refused in
/// the web's own words (the person is at the field, not sent to "the app").
#[test]
fn the_reply_field_counts_characters_as_the_protocol_does() {
    let q = question(
        "q_e",
        json!({"prompt": "Mood?", "options": ["Fine", "Not fine"], "text_input": {"max_length": 5}}),
        now(),
    );
    let json = serde_json::to_string(&q).unwrap();
    let r = Responder::new(vec!["en".into()], "u_me".into());
    let left = |text: &str| -> Value {
        serde_json::from_str(&r.reply_left(&json, text).unwrap()).unwrap()
    };
    let five = "😀🎉👍🚀🌍";
    assert_eq!(five.encode_utf16().count(), 10, "ten UTF-16 units");
    assert_eq!(left("")["left"], 5);
    assert_eq!(left(five)["left"], 0);
    assert_eq!(left(five)["text"], "Characters left: \u{2068}0\u{2069}");
    assert_eq!(
        r.answer(&json, "qp.text", Some(five.into())).unwrap(),
        format!(r#"{{"text":"{five}"}}"#)
    );
    let over = format!("{five}✨");
    assert_eq!(left(&over)["left"], -1);
    assert_eq!(
        left(&over)["text"],
        "Characters over the limit: \u{2068}1\u{2069}"
    );
    let refused = r.answer(&json, "qp.text", Some(over)).unwrap_err();
    assert!(
        refused.contains("Shorten it") && !refused.contains("Open the app"),
        "{refused}"
    );
    for lang in available_languages() {
        let r = Responder::new(vec![lang.into()], "u_me".into());
        let refused = r
            .answer(&json, "qp.text", Some("far too long".into()))
            .unwrap_err();
        let phone = qp_core::present::copy::Copy::for_languages(&[lang.to_string()]).action_error(
            &qp_core::answer::ActionError::TextTooLong {
                length: 12,
                max_length: 5,
                text: String::new(),
            },
        );
        assert_ne!(refused, phone, "{lang}: the phones' words");
        assert!(
            refused.contains("12") && refused.contains('5'),
            "{lang}: {refused}"
        );
    }
    let options_only = question(
        "q_o",
        json!({"prompt": "Go?", "options": ["Yes", "No"]}),
        now(),
    );
    assert!(r
        .reply_left(&serde_json::to_string(&options_only).unwrap(), "x")
        .is_err());
}

#[test]
fn a_push_becomes_a_notification_with_buttons_that_fit_and_its_resolution_replaces_it() {
    let q = question(
        "q_push",
        json!({"prompt": "Deploy?", "context": "build 7", "options": [
            {"value": "approve", "label": "Approve", "style": "primary"}, "Deny"]}),
        now(),
    );
    let payload = encode_apns_question(&q, Copy::english()).unwrap().json;
    let r = Responder::new(vec!["en".into()], "u_me".into());
    let out: Value = serde_json::from_str(&r.push(&payload, 2).unwrap()).unwrap();
    assert_eq!(out["kind"], "question");
    let n = &out["notification"];
    assert_eq!(n["tag"], "q_push");
    assert_eq!(n["title"], "Release Bot asks you");
    assert_eq!(n["body"], "Deploy?\nbuild 7");
    assert_eq!(n["actions"][0]["action"], "qp.v.approve");
    assert_eq!(n["actions"][1]["title"], "Deny");
    assert_eq!(n["opens_app"], false);
    // No buttons on a browser without actions (iOS): a tap opens the app.
    let none: Value = serde_json::from_str(&r.push(&payload, 0).unwrap()).unwrap();
    assert_eq!(none["notification"]["actions"], json!([]));
    assert_eq!(none["notification"]["opens_app"], true);
    // The button answers through the same check as the page.
    let shown = out["question"].to_string();
    assert_eq!(
        r.answer(&shown, "qp.v.approve", None).unwrap(),
        r#"{"value":"approve"}"#
    );

    let mut done = q.clone();
    done.state = QuestionState::Answered;
    done.answer = Some(Answer {
        value: Some("approve".into()),
        label: Some("Approve".into()),
        text: None,
        responder: ResponderRef {
            id: "u_me".into(),
            display_name: "Me".into(),
        },
        answered_at: now(),
    });
    let resolved = encode_apns_resolved(&done, Copy::english(), Some("u_me")).json;
    let out: Value = serde_json::from_str(&r.push(&resolved, 2).unwrap()).unwrap();
    assert_eq!(out["kind"], "resolved");
    let n: Value =
        serde_json::from_str(&r.resolved(&out["notice"].to_string(), &shown).unwrap()).unwrap();
    assert_eq!(n["tag"], "q_push");
    assert_eq!(n["title"], "You answered: Approve");
    assert_eq!(n["actions"], json!([]));
    // The server's reply to an answer (a Question) does as well.
    let n: Value = serde_json::from_str(
        &r.resolved(&serde_json::to_string(&done).unwrap(), &shown)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(n["title"], "You answered: Approve");
}

#[test]
fn bad_input_is_an_error_naming_it_never_a_panic() {
    let r = Responder::new(vec![], String::new());
    assert!(r.feed("{", 0.0).unwrap_err().starts_with("questions"));
    assert!(r.push("not json", 2).is_err());
    assert!(r
        .answer("[]", "qp.v.x", None)
        .unwrap_err()
        .starts_with("question"));
    assert!(r.resolved("{}", "{}").is_err());
}

const WEB_WORDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/locales");
const SIGN_IN_WORDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../server/locales");
const PHONE_WORDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../core/locales");

/// The messages of one folder's Fluent files, by tag: each message's text
/// (a selector's variants as `id[key]`; comments left out).
fn messages_in(dir: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let tag = p.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        let mut msgs = Vec::new();
        let mut current = String::new();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            if let Some((id, v)) = l.split_once(" = ") {
                current = id.trim().to_string();
                msgs.push((current.clone(), v.to_string()));
            } else if let Some((key, v)) = l.trim_start().trim_start_matches('*').split_once("] ") {
                msgs.push((format!("{current}{key}]"), v.to_string()));
            }
        }
        out.push((tag, msgs));
    }
    assert_eq!(out.len(), 10, "{dir}");
    out
}

/// Every message a person meets, by tag: the web app's own, the server's
/// sign-in pages' and the phone copy (qp-core's, which the web shows too).
fn web_messages() -> Vec<(String, Vec<(String, String)>)> {
    [WEB_WORDS, SIGN_IN_WORDS, PHONE_WORDS]
        .iter()
        .flat_map(|dir| messages_in(dir))
        .collect()
}

/// The rules the phone copy's file headers state hold for every file a
/// person reads, the phone's, the web's and the sign-in pages', checked
/// by this one test: full-width punctuation in Japanese and Chinese, and
/// Japanese names joined to their particle; no-break spaces before French
/// double punctuation; no slash forms in Hebrew; one register (German
/// du, as the phone); one word for pairing in each language; no word that
/// marks the reader's gender where the phone avoids it.
#[test]
fn the_web_words_keep_the_rules_of_the_phone_copy() {
    // Every translated web file starts with its phone file's header.
    for (tag, _) in messages_in(WEB_WORDS) {
        let web = std::fs::read_to_string(format!("{WEB_WORDS}/{tag}.ftl")).unwrap();
        let phone = std::fs::read_to_string(format!("{PHONE_WORDS}/{tag}.ftl")).unwrap();
        let header: String = phone
            .lines()
            .take_while(|l| l.starts_with('#') && !l.starts_with("# Where:"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            tag == "en" || web.starts_with(&header),
            "{tag}: the web file does not start with the phone file's header"
        );
    }
    for (tag, msgs) in web_messages() {
        for (id, text) in &msgs {
            // The placeables ({ $name }) are not the language's text.
            let words: String = text
                .split('{')
                .map(|part| part.split_once('}').map_or(part, |(_, rest)| rest))
                .collect();
            match tag.as_str() {
                "ja" | "zh-Hans" => {
                    for c in [',', ':', ';', '?', '!', '(', ')'] {
                        assert!(
                            !words.contains(c),
                            "{tag}: {id} has a half-width {c:?}: {text}"
                        );
                    }
                    // Japanese joins a name to its particle ({ $asker }から).
                    let japanese = |c: char| c > '\u{3000}';
                    let chars: Vec<char> = text.chars().collect();
                    for w in chars.windows(3) {
                        assert!(
                            tag != "ja"
                                || !((w[0] == '}' && w[1] == ' ' && japanese(w[2]))
                                    || (japanese(w[0]) && w[1] == ' ' && w[2] == '{')),
                            "{tag}: {id} has a space between a name and its particle: {text}"
                        );
                    }
                }
                "fr" => {
                    for bad in [" :", " ;", " ?", " !", "« ", " »"] {
                        assert!(
                            !words.contains(bad),
                            "{tag}: {id} has a breaking space in {bad:?}: {text}"
                        );
                    }
                    for (i, c) in words.char_indices() {
                        if matches!(c, ':' | ';' | '?' | '!') && i > 0 {
                            let before = words[..i].chars().last().unwrap();
                            assert!(
                                matches!(before, '\u{00A0}' | '\u{202F}'),
                                "{tag}: {id}: {c:?} after {before:?}: {text}"
                            );
                        }
                    }
                    assert!(
                        !words.contains("Connecté en tant que"),
                        "{tag}: {id}: {text}"
                    );
                    // The phone pairs with "associer".
                    assert!(!words.contains("appair"), "{tag}: {id}: {text}");
                    assert!(
                        !words.contains('\''),
                        "{tag}: {id}: an ASCII apostrophe: {text}"
                    );
                }
                "he" => {
                    let chars: Vec<char> = words.chars().collect();
                    for w in chars.windows(3) {
                        let hebrew = |c: char| ('\u{05D0}'..='\u{05EA}').contains(&c);
                        assert!(
                            !(w[1] == '/' && hebrew(w[0]) && hebrew(w[2])),
                            "{tag}: {id} has a slash form: {text}"
                        );
                    }
                }
                "de" => {
                    for formal in [
                        " Sie ",
                        " Sie,",
                        " Sie.",
                        "Ihre ",
                        "Ihr ",
                        "Ihnen",
                        "Bitten Sie",
                        "Öffnen Sie",
                    ] {
                        assert!(
                            !words.contains(formal),
                            "{tag}: {id} says Sie, the phone du: {text}"
                        );
                    }
                    assert!(
                        !words.contains("Mitteilung"),
                        "{tag}: {id}: the phone says Benachrichtigung: {text}"
                    );
                }
                "pt-BR" => {
                    for gendered in ["Conectado como", "Continuar conectado"] {
                        assert!(!words.contains(gendered), "{tag}: {id}: {text}");
                    }
                }
                "it" => {
                    // The phone pairs with "associa"; the reader and the
                    // names stay ungendered.
                    for bad in ["abbinament", "Resta connesso", "viene disconness"] {
                        assert!(!words.contains(bad), "{tag}: {id}: {text}");
                    }
                    // The typographic apostrophe (l’app), as the phone.
                    assert!(
                        !words.contains('\''),
                        "{tag}: {id}: an ASCII apostrophe: {text}"
                    );
                }
                _ => {}
            }
        }
    }
}

/// A pairing that failed says why, as the phone does: an unknown or used
/// code, too many attempts and an unreachable server are three sentences,
/// never one "that code did not work" for all.
#[test]
fn a_failed_pairing_says_why_in_the_persons_language() {
    let en = Responder::new(vec!["en".into()], String::new());
    let lines: std::collections::HashSet<String> = [404, 429, 0, 503]
        .iter()
        .map(|s| en.pair_failure(*s))
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(en.pair_failure(404).contains("already used or expired"));
    let de = Responder::new(vec!["de".into()], String::new());
    assert!(
        de.pair_failure(429).contains("Zu viele"),
        "{}",
        de.pair_failure(429)
    );
}

/// What a browser shows before the WebAssembly has chosen a language (the
/// tab's title while loading, the installed app's name, from one manifest
/// for every language) is the product's name, the same in every language,
/// never an English word: the page then titles itself in the person's
/// language (`web-app-name`).
#[test]
fn before_the_language_is_known_the_page_says_only_the_product_name() {
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/../app");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{app}/manifest.webmanifest")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["name"], "qp");
    assert_eq!(manifest["short_name"], "qp");
    assert!(manifest.get("description").is_none(), "{manifest}");
    let index = std::fs::read_to_string(format!("{app}/index.html")).unwrap();
    assert!(index.contains("<title>qp</title>"), "the loading title");
}

/// What the web and the phone both say is one message, in qp-core's copy:
/// no web message repeats a phone message of its language, and the app's
/// name is the phone's channel name.
#[test]
fn the_web_never_repeats_a_phone_message() {
    let phone = messages_in(PHONE_WORDS);
    for (tag, web) in messages_in(WEB_WORDS) {
        let (_, theirs) = phone.iter().find(|(t, _)| *t == tag).unwrap();
        for (id, text) in &web {
            if let Some((same, _)) = theirs.iter().find(|(_, t)| t == text) {
                panic!("{tag}: {id} repeats the phone's {same}: {text}");
            }
        }
        let r = Responder::new(vec![tag.clone()], String::new());
        assert_eq!(r.text(APP_NAME), r.copy.channel_name(), "{tag}");
        let all: Value = serde_json::from_str(&r.texts()).unwrap();
        assert_eq!(all[APP_NAME], r.copy.channel_name(), "{tag}");
    }
    // Chinese names the app "questions to answer", never "problems".
    let zh = Responder::new(vec!["zh-Hans".into()], String::new());
    assert_eq!(zh.text(APP_NAME), "待答问题");
}

/// An answer the server refused for good says so, with its code, in the
/// person's language (the phone's answer-rejected), never "try again";
/// a failure that may pass says it will be retried.
#[test]
fn an_answer_refused_for_good_is_not_told_to_try_again() {
    let q = question(
        "q_1",
        json!({"prompt": "Ship?", "options": ["Approve", "Deny"]}),
        now(),
    );
    let q = serde_json::to_string(&q).unwrap();
    let r = Responder::new(vec!["de".into()], "u_me".into());
    let body = r.answer(&q, "qp.v.Approve", None).unwrap();
    let refused = r.not_sent(&q, &body, 422).unwrap();
    assert!(refused.contains("422"), "{refused}");
    assert_eq!(
        refused,
        r.copy.answer_line(
            AnswerLine::Rejected { code: Some(422) },
            &r.copy.embed("Approve")
        )
    );
    // A server failing for now (the page keeps the answer queued and says
    // so with notSent, never "offline, will send when online").
    let busy = r.not_sent(&q, &body, 503).unwrap();
    assert_ne!(busy, refused);
    assert!(!busy.contains("503"), "{busy}");
    let approve = r.copy.embed("Approve");
    assert_ne!(busy, r.copy.answer_line(AnswerLine::Queued, &approve));
    assert_eq!(
        busy,
        r.copy.answer_line(
            AnswerLine::Retrying(qp_core::present::copy::SendFailure::of_status(503)),
            &approve
        )
    );
    // Signed out (401): pair this browser again, not "this phone".
    let signed_out = r.not_sent(&q, &body, 401).unwrap();
    assert_eq!(
        signed_out,
        "Approve: noch nicht gesendet; kopple diesen Browser neu, um sie zu senden"
    );
    assert!(r.not_sent("{", &body, 422).is_err());
}

/// A 401 on answering says to pair this browser again in every language,
/// never the phone's "pair this phone again"; right-to-left lines that
/// begin with the answer start with a direction mark.
#[test]
fn a_signed_out_browser_is_told_to_pair_this_browser_again() {
    let q = question(
        "q_1",
        json!({"prompt": "Ship?", "options": ["Approve", "Deny"]}),
        now(),
    );
    let q = serde_json::to_string(&q).unwrap();
    for lang in available_languages() {
        let r = Responder::new(vec![lang.to_string()], "u_me".into());
        let body = r.answer(&q, "qp.v.Approve", None).unwrap();
        let line = r.not_sent(&q, &body, 401).unwrap();
        let phone = r.copy.answer_line(
            AnswerLine::Retrying(qp_core::present::copy::SendFailure::of_status(401)),
            &r.copy.embed("Approve"),
        );
        assert_ne!(line, phone, "{lang}: the phone's words");
        assert!(line.contains("Approve"), "{lang}: {line}");
        if lang != "en" {
            assert!(!line.contains("pair this"), "{lang}: {line}");
        }
        if r.copy.is_rtl() {
            assert!(line.starts_with('\u{200F}'), "{lang}: {line:?}");
        }
    }
}

/// Notifications the server would not register say why in the person's
/// language, with the status, never the server's English message.
#[test]
fn notifications_refused_by_the_server_say_so_in_the_persons_language() {
    for lang in available_languages() {
        let r = Responder::new(vec![lang.to_string()], String::new());
        let t = r.notifications_refused(400);
        assert!(t.contains("400") && !t.contains('{'), "{lang}: {t}");
        if lang != "en" {
            assert_ne!(
                t,
                Responder::new(vec![], String::new()).notifications_refused(400)
            );
        }
    }
}

/// The server's sign-in consent question as the page gets it: the server's
/// English words and the parts the core words it from.
fn consent_question() -> Question {
    use qp_core::protocol::ConsentRequest;
    let parts = ConsentRequest {
        client: "unverified".into(),
        name: "Claude Code".into(),
        host: None,
        returns_to: Some("localhost".into()),
        code: "WDJB-MJHT".into(),
    };
    let english = Copy::english().consent(&parts, "Ops");
    let mut q = question(
        "q_consent",
        json!({"prompt": english.prompt, "context": english.context,
               "options": [{"value": "allow", "label": english.allow},
                           {"value": "deny", "label": english.deny}]}),
        now(),
    );
    q.consent = Some(parts);
    q
}

/// Whether `word` stands in `s` as a word of its own.
fn has_word(s: &str, word: &str) -> bool {
    s.match_indices(word).any(|(i, _)| {
        let before = s[..i].chars().next_back();
        let after = s[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// An answer to the sign-in consent, queued offline or not sent, names its
/// button in the person's language (the page's status line and the
/// service worker's notification title), never the server's "Allow"; the
/// queued notification's body is the question as the person reads it.
#[test]
fn the_answer_to_the_sign_in_consent_reads_its_button_in_the_persons_language() {
    let q = serde_json::to_string(&consent_question()).unwrap();
    for lang in available_languages() {
        let r = Responder::new(vec![lang.to_string()], "u_me".into());
        let allow = r.copy.consent_label("allow").unwrap();
        let body = r.answer(&q, "qp.v.allow", None).unwrap();
        let n: Value = serde_json::from_str(&r.queued_notification(&q, &body).unwrap()).unwrap();
        let lines = [
            r.queued(&q, &body).unwrap(),
            r.not_sent(&q, &body, 422).unwrap(),
            r.not_sent(&q, &body, 503).unwrap(),
            n["title"].as_str().unwrap().to_string(),
        ];
        for line in &lines {
            assert!(line.contains(&allow), "{lang}: {allow:?} not in {line:?}");
            if lang != "en" {
                assert!(!has_word(line, "Allow"), "{lang}: English in {line:?}");
            }
        }
        let shown = feed(&r, &[consent_question()]);
        assert_eq!(n["body"], shown[0]["prompt"], "{lang}");
        if lang != "en" {
            assert!(
                !n["body"].as_str().unwrap().contains("wants to ask you"),
                "{lang}: {n}"
            );
        }
    }
}
