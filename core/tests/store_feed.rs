//! The phone store and the feed model, on real SQLite files.

use chrono::Duration;
use qp_core::feed::feed;
use qp_core::payload::{CompactOption, CompactQuestion, CompactRoom, ResolvedNotice};
use qp_core::present::copy::Copy;
use qp_core::protocol::{
    time, Answer, AnswerSubmission, OptionStyle, QuestionState, Responder, ResponderScope,
    TextInput,
};
use qp_core::store::{AnswerState, Store, StoreError, StoreMode};

fn now() -> chrono::DateTime<chrono::Utc> {
    time::parse("2026-06-27T10:30:00Z").unwrap()
}

fn question(id: &str, options: &[&str], text: bool, scope: ResponderScope) -> CompactQuestion {
    CompactQuestion {
        v: 1,
        id: id.into(),
        room: CompactRoom {
            code: "OPS123".into(),
            name: "Ops".into(),
        },
        asker: "Release Bot".into(),
        prompt: format!("Question {id}?"),
        context: None,
        options: options
            .iter()
            .enumerate()
            .map(|(i, v)| CompactOption {
                value: v.to_string(),
                label: v.to_uppercase(),
                style: if i == 0 {
                    OptionStyle::Primary
                } else {
                    OptionStyle::Default
                },
            })
            .collect(),
        text_input: text.then_some(TextInput {
            placeholder: None,
            max_length: 60,
        }),
        responder_scope: scope,
        target_user_id: (scope == ResponderScope::Direct).then(|| "u_me".to_string()),
        expires_at: now() + Duration::hours(1),
        created_at: now(),
        consent: None,
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("phone.sqlite"), StoreMode::App).unwrap();
    (dir, s)
}

#[test]
fn a_store_that_cannot_be_opened_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("corrupt.sqlite");
    std::fs::write(&garbage, vec![0x42u8; 8192]).unwrap();
    assert!(matches!(
        Store::open(&garbage, StoreMode::Extension),
        Err(StoreError::Corrupt(_))
    ));
    let missing = dir.path().join("no/such/folder/phone.sqlite");
    assert!(matches!(
        Store::open(&missing, StoreMode::Extension),
        Err(StoreError::CannotOpen(_))
    ));
}

#[test]
fn terminal_states_never_revert_and_one_answer_has_one_key() {
    let (_d, s) = store();
    let q = question("q_1", &["approve", "deny"], false, ResponderScope::Room);
    s.record_push(&q).unwrap();
    let first = s
        .commit_answer("q_1", &AnswerSubmission::Value("approve".into()))
        .unwrap();
    let again = s
        .commit_answer("q_1", &AnswerSubmission::Value("deny".into()))
        .unwrap();
    assert_eq!(
        again.idempotency_key, first.idempotency_key,
        "a second tap reuses the first answer"
    );
    assert_eq!(again.body, AnswerSubmission::Value("approve".into()));
    assert_eq!(s.outbox().unwrap().len(), 1);

    let answer = Answer {
        value: Some("deny".into()),
        label: Some("DENY".into()),
        text: None,
        responder: Responder {
            id: "u_other".into(),
            display_name: "Federica".into(),
        },
        answered_at: now(),
    };
    let notice = ResolvedNotice {
        v: 1,
        id: "q_1".into(),
        state: QuestionState::Answered,
        answer: Some(answer),
        resolved_at: Some(now()),
    };
    assert!(
        s.record_resolved(&notice).unwrap(),
        "the first resolution withdraws"
    );
    assert!(
        !s.record_resolved(&notice).unwrap(),
        "a repeat does nothing"
    );
    s.record_push(&q).unwrap(); // a late duplicate push
    let held = s.question("q_1").unwrap().unwrap();
    assert_eq!(held.state, QuestionState::Answered);
    let cancelled = ResolvedNotice {
        state: QuestionState::Cancelled,
        answer: None,
        ..notice
    };
    assert!(!s.record_resolved(&cancelled).unwrap());
    assert_eq!(
        s.question("q_1").unwrap().unwrap().state,
        QuestionState::Answered
    );

    // A refused answer frees the question for a new one, with a new key.
    let entry = s.answer_for("q_1").unwrap().unwrap();
    s.finish_answer(entry.id, AnswerState::Rejected, Some("no"), 0)
        .unwrap();
    let next = s
        .commit_answer("q_1", &AnswerSubmission::Value("deny".into()))
        .unwrap();
    assert_ne!(next.idempotency_key, first.idempotency_key);
}

#[test]
fn feed_cells_follow_the_spec() {
    let (_d, s) = store();
    let mut older = question("q_two", &["approve", "deny"], false, ResponderScope::Direct);
    older.created_at = now() - Duration::minutes(5);
    s.record_push(&older).unwrap();
    let mut four = question(
        "q_four",
        &["dev", "staging", "prod", "cancel"],
        false,
        ResponderScope::Room,
    );
    four.created_at = now() - Duration::minutes(4);
    s.record_push(&four).unwrap();
    let mut text = question("q_text", &[], true, ResponderScope::Direct);
    text.created_at = now() - Duration::minutes(3);
    s.record_push(&text).unwrap();
    let both = question("q_both", &["yes", "no"], true, ResponderScope::Direct);
    s.record_push(&both).unwrap();
    s.save_draft("q_text", &"x".repeat(70), "too long").unwrap();
    s.commit_answer("q_both", &AnswerSubmission::Value("yes".into()))
        .unwrap();

    let cells = feed(&s, "u_me", now() + Duration::minutes(48), Copy::english()).unwrap();
    let ids: Vec<&str> = cells.iter().map(|c| c.question_id.as_str()).collect();
    assert_eq!(ids, ["q_both", "q_text", "q_four", "q_two"], "newest first");

    let two = &cells[3];
    assert_eq!(
        two.buttons
            .iter()
            .map(|b| b.label.as_str())
            .collect::<Vec<_>>(),
        ["APPROVE", "DENY"]
    );
    assert_eq!(two.buttons[0].style, OptionStyle::Primary);
    assert!(two.choose.is_none() && two.text_field.is_none() && two.room_hint.is_none());
    assert_eq!(two.title, "Release Bot asks you");
    assert_eq!(two.time_remaining.as_deref(), Some("12 min left"));
    assert!(two.answerable);

    let four = &cells[2];
    assert!(four.buttons.is_empty());
    let choose = four.choose.as_ref().unwrap();
    assert_eq!(
        (choose.title.as_str(), choose.count),
        ("Choose an answer (4 options)", 4)
    );
    assert_eq!(
        choose
            .options
            .iter()
            .map(|o| o.value.as_str())
            .collect::<Vec<_>>(),
        ["dev", "staging", "prod", "cancel"]
    );
    assert_eq!(choose.time_remaining, "12 min left");
    assert_eq!(
        four.room_hint.as_deref(),
        Some("anyone in the room can answer")
    );
    assert_eq!(four.title, "Release Bot asks the room");

    let text = &cells[1];
    let field = text.text_field.as_ref().unwrap();
    assert_eq!(
        (field.hint.as_deref(), field.send_title.as_str()),
        (None, "Send")
    );
    assert_eq!(
        field.draft.as_deref(),
        Some("x".repeat(70).as_str()),
        "too-long text is kept"
    );

    let both = &cells[0];
    assert_eq!(
        both.text_field.as_ref().unwrap().hint.as_deref(),
        Some("or type a reply")
    );
    let mine = both.my_answer.as_ref().unwrap();
    assert_eq!(
        (mine.state, mine.status.as_str()),
        (
            AnswerState::Queued,
            "YES: queued, will send when you’re online"
        )
    );
    assert!(!both.answerable, "an answer is already on its way");

    // Past the deadline a pending question reads as expired.
    let later = feed(&s, "u_me", now() + Duration::hours(2), Copy::english()).unwrap();
    assert!(later
        .iter()
        .all(|c| c.state == QuestionState::Expired && !c.answerable));
    assert_eq!(
        later[3].resolution.as_deref(),
        Some("Expired with no answer")
    );
}
