//! Answers handed to the system (a background upload) through the points
//! where the process can die: before the hand-over, after it (the system
//! still uploading, or having lost the upload), and after the report. Each
//! answer reaches exactly one final state, is never lost, and is never
//! sent by this process while the system holds it. "Killing" a process is
//! dropping its `Phone` without another call; the next process opens the
//! same store file.

use std::sync::{Arc, Mutex};

use serde_json::json;

use super::tests::{block_on, server_question, APNS};
use super::*;
use crate::actions::option_action_id;
use crate::http::{
    HttpError, HttpFailure, HttpMethod, HttpRequest, HttpResponse, Scripted, ScriptedTransport,
};
use crate::protocol::{Answer, QuestionState, Responder};
use crate::store::now_ms;
use crate::sync::LOST_HAND_OVER_GRACE_MS;

struct Token;
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some("qpu_test".into())
    }
}

/// The server's reply to an answer to q_1: answered by `who`.
fn answered_by(who: &str) -> HttpResponse {
    let mut q = server_question("Deploy?");
    q.state = QuestionState::Answered;
    q.answer = Some(Answer {
        value: Some("approve".into()),
        label: Some("Approve".into()),
        text: None,
        responder: Responder {
            id: who.into(),
            display_name: who.into(),
        },
        answered_at: Utc::now(),
    });
    q.resolved_at = Some(Utc::now());
    HttpResponse {
        status: 200,
        body: serde_json::to_vec(&q).unwrap(),
    }
}

/// A server that takes every answer (answered by u_me), and what it was sent.
fn server() -> Arc<ScriptedTransport> {
    Arc::new(ScriptedTransport::new(|r: &HttpRequest| {
        if r.method == HttpMethod::Post && r.path() == "/api/questions/q_1/answer" {
            Scripted::Reply(answered_by("u_me"))
        } else {
            Scripted::json(404, &json!({"error": {"message": "no"}}))
        }
    }))
}

/// One process of the app: a phone over the shared store file.
fn process(dir: &tempfile::TempDir, http: &Arc<ScriptedTransport>) -> Phone {
    Phone::open(
        &dir.path().join("shared.sqlite"),
        StoreMode::App,
        "http://127.0.0.1:9",
        "u_me",
        Arc::new(Token),
        &[],
        http.clone(),
    )
    .unwrap()
}

/// A verified question (as from a sealed push or a server read), answered
/// from its notification: ready to be handed over.
fn answer_from_the_lock_screen(p: &Phone) {
    p.store()
        .record_server(&server_question("Deploy?"))
        .unwrap();
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
}

fn state(p: &Phone) -> AnswerState {
    p.store().answer_for("q_1").unwrap().unwrap().state
}

fn answers_sent(http: &ScriptedTransport) -> usize {
    http.count(HttpMethod::Post, "/api/questions/q_1/answer")
}

#[test]
fn a_handed_over_answer_is_the_flush_request_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let p = process(&dir, &http);
    answer_from_the_lock_screen(&p);
    let key = p
        .store()
        .answer_for("q_1")
        .unwrap()
        .unwrap()
        .idempotency_key;

    let handed = p.hand_over_answers().unwrap();
    assert_eq!(handed.len(), 1);
    let h = &handed[0];
    assert_eq!(h.id, key);
    assert_eq!(h.question_id, "q_1");
    assert_eq!(h.request.method, HttpMethod::Post);
    assert_eq!(h.request.url, "http://127.0.0.1:9/api/questions/q_1/answer");
    assert_eq!(h.request.header("Idempotency-Key"), Some(key.as_str()));
    assert_eq!(h.request.header("Authorization"), Some("Bearer qpu_test"));
    let body: serde_json::Value = serde_json::from_slice(h.request.body.as_ref().unwrap()).unwrap();
    assert_eq!(body, json!({"value": "approve"}));
    assert_eq!(state(&p), AnswerState::HandedOver);
    // The feed shows it as being sent.
    assert!(p
        .answer_status("q_1")
        .unwrap()
        .unwrap()
        .status
        .contains("sending"));
    // Handed over once: a second call hands nothing more.
    assert!(p.hand_over_answers().unwrap().is_empty());
}

#[test]
fn killed_before_the_hand_over_the_answer_waits_and_is_sent_once() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    answer_from_the_lock_screen(&process(&dir, &http)); // then killed

    let next = process(&dir, &http);
    next.requeue_interrupted().unwrap();
    assert_eq!(state(&next), AnswerState::Queued);
    let handed = next.hand_over_answers().unwrap();
    assert_eq!(handed.len(), 1);
    let report = next
        .handed_over_outcome(&handed[0].id, Ok(answered_by("u_me")))
        .unwrap();
    assert_eq!(report.answered, 1);
    assert_eq!(state(&next), AnswerState::Answered);
    block_on(next.flush()).unwrap();
    assert_eq!(
        answers_sent(&http),
        0,
        "the system sent it, not this process"
    );
}

#[test]
fn killed_after_the_hand_over_the_report_after_relaunch_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let id = {
        let p = process(&dir, &http);
        answer_from_the_lock_screen(&p);
        p.hand_over_answers().unwrap().remove(0).id
    }; // killed while the system uploads

    // The system relaunches the app for the report. Its launch steps and
    // flushes do not send what the system holds.
    let next = process(&dir, &http);
    assert_eq!(next.requeue_interrupted().unwrap(), 0);
    assert_eq!(
        next.requeue_lost_hand_overs(std::slice::from_ref(&id))
            .unwrap(),
        0
    );
    let flushed = block_on(next.flush()).unwrap();
    assert_eq!(flushed, FlushReport::default());
    assert_eq!(answers_sent(&http), 0);
    assert_eq!(state(&next), AnswerState::HandedOver);

    let report = next
        .handed_over_outcome(&id, Ok(answered_by("u_me")))
        .unwrap();
    assert_eq!(report.answered, 1);
    assert_eq!(report.withdraw, vec!["q_1".to_string()]);
    assert_eq!(state(&next), AnswerState::Answered);
    assert_eq!(answers_sent(&http), 0);
}

#[test]
fn an_upload_the_system_lost_is_sent_again_under_the_same_key() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let id = {
        let p = process(&dir, &http);
        answer_from_the_lock_screen(&p);
        p.hand_over_answers().unwrap().remove(0).id
    }; // killed; the system never got (or dropped) the upload

    // Missing from the system's list at launch: its report may still come.
    let next = process(&dir, &http);
    let launch = now_ms();
    assert_eq!(next.requeue_lost_hand_overs_at(&[], launch).unwrap(), 0);
    assert_eq!(state(&next), AnswerState::HandedOver);
    // Still missing a moment later: not yet.
    let soon = launch + LOST_HAND_OVER_GRACE_MS - 1;
    assert_eq!(next.requeue_lost_hand_overs_at(&[], soon).unwrap(), 0);
    assert_eq!(state(&next), AnswerState::HandedOver);
    // Still missing once the grace has passed (no report came): lost.
    let later = launch + LOST_HAND_OVER_GRACE_MS;
    assert_eq!(next.requeue_lost_hand_overs_at(&[], later).unwrap(), 1);
    assert_eq!(state(&next), AnswerState::Queued);
    let report = block_on(next.flush()).unwrap();
    assert_eq!(report.answered, 1);
    assert_eq!(answers_sent(&http), 1);
    let sent = http.requests();
    let post = sent.iter().find(|r| r.method == HttpMethod::Post).unwrap();
    assert_eq!(post.header("Idempotency-Key"), Some(id.as_str()));
    // The system's late report of the same answer changes nothing.
    let late = next
        .handed_over_outcome(&id, Ok(answered_by("u_me")))
        .unwrap();
    assert_eq!(late, FlushReport::default());
    assert_eq!(state(&next), AnswerState::Answered);
}

#[test]
fn an_upload_delivered_with_its_report_still_on_the_way_is_not_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let id = {
        let p = process(&dir, &http);
        answer_from_the_lock_screen(&p);
        p.hand_over_answers().unwrap().remove(0).id
    }; // killed; the system delivers the upload, its task leaves the list

    // Relaunched: the launch's snapshot misses the finished upload, whose
    // report the session delivers a moment later.
    let next = process(&dir, &http);
    assert_eq!(next.requeue_lost_hand_overs(&[]).unwrap(), 0);
    assert_eq!(block_on(next.flush()).unwrap(), FlushReport::default());
    let report = next
        .handed_over_outcome(&id, Ok(answered_by("u_me")))
        .unwrap();
    assert_eq!(report.answered, 1);
    assert_eq!(state(&next), AnswerState::Answered);
    // A later snapshot (the next launch, well after the grace) finds
    // nothing to send: one terminal state, sent once, by the system.
    let much_later = now_ms() + 10 * LOST_HAND_OVER_GRACE_MS;
    assert_eq!(next.requeue_lost_hand_overs_at(&[], much_later).unwrap(), 0);
    block_on(next.flush()).unwrap();
    assert_eq!(answers_sent(&http), 0);
    assert_eq!(state(&next), AnswerState::Answered);
}

#[test]
fn an_upload_back_in_the_systems_list_is_not_missing_any_more() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let p = process(&dir, &http);
    answer_from_the_lock_screen(&p);
    let id = p.hand_over_answers().unwrap().remove(0).id;
    let t = now_ms();
    // A snapshot taken too early missed it; the next one has it again.
    assert_eq!(p.requeue_lost_hand_overs_at(&[], t).unwrap(), 0);
    let held = std::slice::from_ref(&id);
    let later = t + LOST_HAND_OVER_GRACE_MS;
    assert_eq!(p.requeue_lost_hand_overs_at(held, later).unwrap(), 0);
    // Missing once more: the grace starts again from this snapshot.
    let again = later + LOST_HAND_OVER_GRACE_MS;
    assert_eq!(p.requeue_lost_hand_overs_at(&[], again).unwrap(), 0);
    assert_eq!(state(&p), AnswerState::HandedOver);
    let lost = again + LOST_HAND_OVER_GRACE_MS;
    assert_eq!(p.requeue_lost_hand_overs_at(&[], lost).unwrap(), 1);
    assert_eq!(state(&p), AnswerState::Queued);
}

#[test]
fn killed_after_the_report_a_second_report_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let id = {
        let p = process(&dir, &http);
        answer_from_the_lock_screen(&p);
        let id = p.hand_over_answers().unwrap().remove(0).id;
        p.handed_over_outcome(&id, Ok(answered_by("u_fed")))
            .unwrap();
        id
    }; // killed after recording the report

    let next = process(&dir, &http);
    assert_eq!(state(&next), AnswerState::AlreadyResolved);
    // The system reports again (a relaunch that replays the event).
    let again = next
        .handed_over_outcome(&id, Ok(answered_by("u_me")))
        .unwrap();
    assert_eq!(again, FlushReport::default());
    assert_eq!(state(&next), AnswerState::AlreadyResolved);
    assert_eq!(next.requeue_interrupted().unwrap(), 0);
    assert_eq!(next.requeue_lost_hand_overs(&[]).unwrap(), 0);
    block_on(next.flush()).unwrap();
    assert_eq!(answers_sent(&http), 0);
}

#[test]
fn a_failed_upload_is_retried_by_the_flush_and_confirmed_once() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let p = process(&dir, &http);
    answer_from_the_lock_screen(&p);
    let id = p.hand_over_answers().unwrap().remove(0).id;
    let offline = HttpError {
        failure: HttpFailure::Offline,
        reason: "The Internet connection appears to be offline.".into(),
    };
    let report = p.handed_over_outcome(&id, Err(offline)).unwrap();
    assert_eq!(report.will_retry, 1);
    let e = p.store().answer_for("q_1").unwrap().unwrap();
    assert_eq!(e.state, AnswerState::Queued);
    assert_eq!(e.attempts, 1);
    assert!(
        e.last_error.as_deref().unwrap().starts_with("offline"),
        "{e:?}"
    );
    assert!(p
        .answer_status("q_1")
        .unwrap()
        .unwrap()
        .status
        .contains("offline"));

    // The backoff holds it back; "retry" (or its time) makes it due.
    assert!(p.hand_over_answers().unwrap().is_empty());
    p.retry("q_1").unwrap();
    let report = block_on(p.flush()).unwrap();
    assert_eq!(report.answered, 1);
    assert_eq!(answers_sent(&http), 1);
    assert_eq!(state(&p), AnswerState::Answered);
}

#[test]
fn a_server_error_reported_for_a_hand_over_is_queued_and_a_refusal_is_final() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let p = process(&dir, &http);
    answer_from_the_lock_screen(&p);
    let id = p.hand_over_answers().unwrap().remove(0).id;
    let busy = HttpResponse {
        status: 503,
        body: br#"{"error":{"message":"try later"}}"#.to_vec(),
    };
    assert_eq!(p.handed_over_outcome(&id, Ok(busy)).unwrap().will_retry, 1);
    assert_eq!(state(&p), AnswerState::Queued);

    p.retry("q_1").unwrap();
    let id = p.hand_over_answers().unwrap().remove(0).id;
    let refused = HttpResponse {
        status: 422,
        body: br#"{"error":{"message":"value: not an option"}}"#.to_vec(),
    };
    assert_eq!(p.handed_over_outcome(&id, Ok(refused)).unwrap().rejected, 1);
    assert_eq!(state(&p), AnswerState::Rejected);
    assert_eq!(p.store().answer_for("q_1").unwrap().unwrap().attempts, 2);
}

#[test]
fn a_401_reported_for_a_hand_over_keeps_the_answer_for_the_next_sign_in() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let p = process(&dir, &http);
    answer_from_the_lock_screen(&p);
    let id = p.hand_over_answers().unwrap().remove(0).id;
    let refused = HttpResponse {
        status: 401,
        body: br#"{"error":{"message":"token revoked"}}"#.to_vec(),
    };
    let report = p.handed_over_outcome(&id, Ok(refused)).unwrap();
    assert!(report.unauthorized);
    let e = p.store().answer_for("q_1").unwrap().unwrap();
    assert_eq!(e.state, AnswerState::Queued);
    assert!(e.last_error.unwrap().starts_with("signed-out"));
}

#[test]
fn an_answer_to_a_plain_push_is_not_handed_over_but_checked_by_the_flush() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let p = process(&dir, &http);
    p.receive_apns(APNS).unwrap();
    p.answer_action("q_1", &option_action_id("approve"), None)
        .unwrap();
    assert!(p.hand_over_answers().unwrap().is_empty());
    assert_eq!(state(&p), AnswerState::Queued);
}

#[test]
fn two_processes_hand_over_an_answer_once() {
    let dir = tempfile::tempdir().unwrap();
    let http = server();
    let app = process(&dir, &http);
    let other = process(&dir, &http);
    answer_from_the_lock_screen(&app);
    let handed = Arc::new(Mutex::new(0));
    std::thread::scope(|s| {
        for p in [&app, &other] {
            let handed = handed.clone();
            s.spawn(move || {
                *handed.lock().unwrap() += p.hand_over_answers().unwrap().len();
            });
        }
    });
    assert_eq!(*handed.lock().unwrap(), 1);
}

/// Signing out with one answer in the system's background upload and one
/// this process could not send: only the second is dropped; the first is
/// reported apart (the system may still deliver it), and the sign-out's
/// last try does not send it a second time.
#[test]
fn signing_out_counts_a_handed_over_answer_apart_from_the_dropped_ones() {
    let dir = tempfile::tempdir().unwrap();
    // The server takes nothing now: q_2's last try fails.
    let http = Arc::new(ScriptedTransport::new(|_: &HttpRequest| {
        Scripted::Fail(HttpError {
            failure: HttpFailure::Offline,
            reason: "offline".into(),
        })
    }));
    let p = process(&dir, &http);
    answer_from_the_lock_screen(&p);
    assert_eq!(p.hand_over_answers().unwrap().len(), 1);
    let mut second = server_question("Roll back?");
    second.id = "q_2".into();
    p.store().record_server(&second).unwrap();
    p.answer_action("q_2", &option_action_id("approve"), None)
        .unwrap();
    assert_eq!(p.unsent_answers(), Ok(2));

    let report = block_on(p.sign_out()).unwrap();
    assert_eq!(report.unsent_answers_dropped, 1, "{report:?}");
    assert_eq!(report.answers_with_the_system, 1, "{report:?}");
    assert_eq!(
        answers_sent(&http),
        0,
        "the handed-over answer is the system's to send"
    );
    assert_eq!(
        http.count(HttpMethod::Post, "/api/questions/q_2/answer"),
        1,
        "the unsent one had its last try"
    );
}
