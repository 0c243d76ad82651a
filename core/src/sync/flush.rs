//! Sending the outbox. Each answer is sent with its own idempotency key, as
//! often as needed, never under another key. Outcomes are recorded:
//! answered by me; already resolved (the winner is kept for the feed);
//! rejected for good (not retried); or a transient failure, retried with
//! the one backoff policy ([`RetryPolicy::PHONE_ANSWER`]), across restarts.
//!
//! An answer given to a question known only from a plain push (anyone who
//! can inject pushes may have made it, with a real question's id and other
//! words) is sent only after the server shows that question with the words
//! the person saw; otherwise it is not sent, the server's version is held
//! instead (the feed shows the real question again), and the answer reads
//! "not sent, the question differs from what was shown".

use super::{server_message, PhoneClient, Reply, SyncError};
use crate::copy::{Copy, SendFailure};
use crate::http::HttpMethod;
use crate::payload::{
    encode_apns_question, encode_fcm_question, CompactQuestion, MAX_PAYLOAD_BYTES,
};
use crate::protocol::{Question, QuestionState};
use crate::retry::RetryPolicy;
use crate::store::{now_ms, AnswerState, OutboxEntry, Store};

/// How long a claimed send is left alone by other flushers.
pub(super) const LEASE_MS: i64 = 30_000;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlushReport {
    /// My answer resolved the question.
    pub answered: u32,
    /// The question was already resolved when my answer arrived.
    pub already_resolved: u32,
    /// Refused for good.
    pub rejected: u32,
    /// Failed for now; will be retried.
    pub will_retry: u32,
    /// Questions now resolved here: withdraw their notifications.
    pub withdraw: Vec<String>,
    /// The server no longer takes this phone's token (401): the answers
    /// stay in the outbox, nothing more was tried, and the person must sign
    /// in again (pair); signing in sends them.
    pub unauthorized: bool,
}

fn backoff_ms(attempts: u32) -> i64 {
    RetryPolicy::PHONE_ANSWER.delay(attempts).as_millis() as i64
}

/// What the server said of the question an unverified answer was given to.
enum Seen {
    /// The question the person saw: send.
    Same,
    /// Another question (other words, or what was seen cannot be read).
    Differs,
    /// Not this person's, or no such question (403, 404): refused for good,
    /// with the server's message.
    Refused(u16, String),
    /// The server could not say now.
    Retry(SendFailure, String),
    /// The server no longer takes the token (401).
    Unauthorized(String),
}

/// `shown` is `real` as the push encoder may have cut it to fit a payload:
/// the first characters (white space at the cut dropped) and "…".
fn is_cut_of(shown: &str, real: &str) -> bool {
    let Some(kept) = shown.strip_suffix('…') else {
        return false;
    };
    kept == kept.trim_end() && real.starts_with(kept) && kept.chars().count() < real.chars().count()
}

/// Whether a push of `q` had its words shortened to fit (then a field may
/// have arrived cut). With the English alert; the device's language can
/// change the title's length by a little, hence the margin.
fn push_was_shortened(q: &Question) -> bool {
    let copy = Copy::english();
    let apns = encode_apns_question(q, copy).map(|e| e.report);
    let fcm = encode_fcm_question(q, copy).map(|e| e.report);
    [apns, fcm].into_iter().any(|r| match r {
        Ok(r) => !r.shortened.is_empty() || r.bytes + 256 > MAX_PAYLOAD_BYTES,
        Err(_) => true,
    })
}

/// Whether the person saw the server's question `q`: the same id, prompt,
/// context, options (values, labels, styles), text input, asker, room and
/// scope, each as the server has it or (when its push had to be shortened)
/// as the encoder cuts it. The times are not compared.
fn shows_the_same(seen: &CompactQuestion, q: &Question) -> bool {
    let real = CompactQuestion::from_question(q);
    let cut = push_was_shortened(q);
    let text = |a: &str, b: &str| a == b || (cut && is_cut_of(a, b));
    let opt = |a: Option<&str>, b: Option<&str>| match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => text(a, b),
        _ => false,
    };
    let options = seen.options.len() == real.options.len()
        && seen
            .options
            .iter()
            .zip(&real.options)
            .all(|(a, b)| a.value == b.value && a.style == b.style && text(&a.label, &b.label));
    let text_input = match (&seen.text_input, &real.text_input) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.max_length == b.max_length && opt(a.placeholder.as_deref(), b.placeholder.as_deref())
        }
        _ => false,
    };
    seen.id == real.id
        && text(&seen.prompt, &real.prompt)
        && opt(seen.context.as_deref(), real.context.as_deref())
        && options
        && text_input
        && text(&seen.asker, &real.asker)
        && seen.room.code == real.room.code
        && text(&seen.room.name, &real.room.name)
        && seen.responder_scope == real.responder_scope
        && seen.target_user_id == real.target_user_id
        && seen.consent == real.consent
}

/// Reads the question an unverified answer was given to from the server
/// and records what the server says (the held question is the server's
/// from now on); says whether it is the one the person saw (`seen`, JSON).
/// True in the second place when the read made the question terminal here.
async fn check_seen(
    store: &Store,
    client: &PhoneClient,
    question_id: &str,
    seen: &str,
) -> Result<(Seen, bool), SyncError> {
    let reply = match client
        .send(
            HttpMethod::Get,
            &format!("/api/questions/{question_id}"),
            None,
            None,
        )
        .await
    {
        Err(SyncError::NotSignedIn) => {
            return Ok((
                Seen::Retry(SendFailure::SignedOut, "not signed in".into()),
                false,
            ))
        }
        other => other?,
    };
    Ok(match reply {
        Reply::Status(200, bytes) => match serde_json::from_slice::<Question>(&bytes) {
            Ok(q) if q.id == question_id => {
                let newly = store.record_server(&q)?;
                let seen: Option<CompactQuestion> = serde_json::from_str(seen).ok();
                let same = seen.is_some_and(|s| shows_the_same(&s, &q));
                (if same { Seen::Same } else { Seen::Differs }, newly)
            }
            Ok(_) => (
                Seen::Retry(
                    SendFailure::ServerError,
                    "the server sent another question".into(),
                ),
                false,
            ),
            Err(e) => (
                Seen::Retry(
                    SendFailure::ServerError,
                    format!("unreadable question: {e}"),
                ),
                false,
            ),
        },
        Reply::Status(status @ (403 | 404), bytes) => {
            (Seen::Refused(status, server_message(&bytes)), false)
        }
        Reply::Status(401, bytes) => (
            Seen::Unauthorized(format!("server answered 401: {}", server_message(&bytes))),
            false,
        ),
        Reply::Status(status, bytes) => (
            Seen::Retry(
                SendFailure::of_status(status),
                format!("server answered {status}: {}", server_message(&bytes)),
            ),
            false,
        ),
        Reply::Unreachable(e) => (Seen::Retry(SendFailure::of_network_error(&e), e), false),
    })
}

/// A 401: the answer stays queued, its line says to sign in, and it is
/// tried again on the usual schedule (signing in makes it due at once).
fn keep_for_sign_in(store: &Store, entry: &OutboxEntry, detail: &str) -> Result<(), SyncError> {
    log::warn!(
        "answer to {} not sent: the server refused the token (sign in again)",
        entry.question_id
    );
    store.finish_answer(
        entry.id,
        AnswerState::Queued,
        Some(&SendFailure::SignedOut.record(detail)),
        now_ms() + backoff_ms(entry.attempts + 1),
    )?;
    Ok(())
}

/// Sends every due answer once; stops at a 401 (see [`FlushReport::unauthorized`]).
pub async fn flush(store: &Store, client: &PhoneClient) -> Result<FlushReport, SyncError> {
    let mut report = FlushReport::default();
    for entry in store.due_answers(now_ms())? {
        if !store.claim_answer(entry.id, LEASE_MS)? {
            continue; // the other process is sending it
        }
        if let Some(seen) = &entry.unverified_seen {
            let (seen, newly) = check_seen(store, client, &entry.question_id, seen).await?;
            if newly {
                report.withdraw.push(entry.question_id.clone());
            }
            match seen {
                Seen::Same => store.mark_seen_verified(entry.id)?,
                Seen::Differs => {
                    log::warn!(
                        "answer to {} not sent: the server's question is not the one shown",
                        entry.question_id
                    );
                    // What shows from now on is the server's question: the
                    // notification the answer came from offers no action any
                    // more (Android replaces it with the answer's status; iOS
                    // answers only from a notification showing the held one).
                    store.mark_shown(&[entry.question_id.as_str()])?;
                    let message = SendFailure::QuestionChanged
                        .record("the server's question differs from the pushed one");
                    store.finish_answer(
                        entry.id,
                        AnswerState::Rejected,
                        Some(&message),
                        now_ms(),
                    )?;
                    report.rejected += 1;
                    continue;
                }
                Seen::Refused(status, why) => {
                    let message = SendFailure::Refused(Some(status)).record(&why);
                    store.finish_answer(
                        entry.id,
                        AnswerState::Rejected,
                        Some(&message),
                        now_ms(),
                    )?;
                    report.rejected += 1;
                    continue;
                }
                Seen::Unauthorized(detail) => {
                    keep_for_sign_in(store, &entry, &detail)?;
                    report.will_retry += 1;
                    report.unauthorized = true;
                    break;
                }
                Seen::Retry(cause, detail) => {
                    store.finish_answer(
                        entry.id,
                        AnswerState::Queued,
                        Some(&cause.record(&detail)),
                        now_ms() + backoff_ms(entry.attempts + 1),
                    )?;
                    report.will_retry += 1;
                    continue;
                }
            }
        }
        let reply = client
            .send(
                HttpMethod::Post,
                &answer_path(&entry),
                Some(&answer_body(&entry)),
                Some(&entry.idempotency_key),
            )
            .await;
        if settle(
            store,
            &entry,
            entry.attempts + 1,
            reply,
            &client.user_id,
            &mut report,
        )? == Settled::Stop
        {
            // Every other answer would be refused the same way.
            break;
        }
    }
    Ok(report)
}

/// Where an answer is sent.
pub(super) fn answer_path(entry: &OutboxEntry) -> String {
    format!("/api/questions/{}/answer", entry.question_id)
}

/// What is sent: the answer as committed.
pub(super) fn answer_body(entry: &OutboxEntry) -> serde_json::Value {
    serde_json::to_value(&entry.body).unwrap_or_default()
}

/// Whether the flush goes on after an answer's outcome.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Settled {
    Next,
    /// The server refused the token (401): nothing more is tried.
    Stop,
}

/// Records what became of one send of `entry` (its `attempts`-th), sent
/// here or by the system: answered by me; already resolved; refused for
/// good; or a failure for now, retried with the backoff. The one place the
/// replies to an answer are read.
pub(super) fn settle(
    store: &Store,
    entry: &OutboxEntry,
    attempts: u32,
    reply: Result<Reply, SyncError>,
    me: &str,
    report: &mut FlushReport,
) -> Result<Settled, SyncError> {
    let retry = |error: String| -> Result<(), SyncError> {
        log::info!(
            "answer to {} will be retried (attempt {attempts})",
            entry.question_id
        );
        store.finish_answer(
            entry.id,
            AnswerState::Queued,
            Some(&error),
            now_ms() + backoff_ms(attempts),
        )?;
        Ok(())
    };
    match reply {
        Err(SyncError::NotSignedIn) => {
            retry(SendFailure::SignedOut.record("not signed in"))?;
            report.will_retry += 1;
        }
        Err(e) => return Err(e),
        Ok(Reply::Unreachable(error)) => {
            retry(SendFailure::of_network_error(&error).record(&error))?;
            report.will_retry += 1;
        }
        Ok(Reply::Status(200, bytes)) => {
            let Ok(q) = serde_json::from_slice::<Question>(&bytes) else {
                retry(SendFailure::ServerError.record("unreadable answer from the server"))?;
                report.will_retry += 1;
                return Ok(Settled::Next);
            };
            if store.record_server(&q)? {
                report.withdraw.push(q.id.clone());
            }
            let mine = q.state == QuestionState::Answered
                && q.answer.as_ref().is_some_and(|a| a.responder.id == me);
            if mine {
                store.finish_answer(entry.id, AnswerState::Answered, None, now_ms())?;
                report.answered += 1;
            } else {
                store.finish_answer(entry.id, AnswerState::AlreadyResolved, None, now_ms())?;
                report.already_resolved += 1;
            }
        }
        Ok(Reply::Status(status @ (400 | 403 | 404 | 422), bytes)) => {
            let message = SendFailure::Refused(Some(status)).record(&server_message(&bytes));
            log::warn!("answer to {} refused: {status}", entry.question_id);
            store.finish_answer(entry.id, AnswerState::Rejected, Some(&message), now_ms())?;
            report.rejected += 1;
        }
        Ok(Reply::Status(401, bytes)) => {
            let detail = format!("server answered 401: {}", server_message(&bytes));
            keep_for_sign_in(store, entry, &detail)?;
            report.will_retry += 1;
            report.unauthorized = true;
            return Ok(Settled::Stop);
        }
        Ok(Reply::Status(status, bytes)) => {
            // 408, 429, 5xx: try again later.
            retry(SendFailure::of_status(status).record(&format!(
                "server answered {status}: {}",
                server_message(&bytes)
            )))?;
            report.will_retry += 1;
        }
    }
    Ok(Settled::Next)
}
