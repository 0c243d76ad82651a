//! Sending the outbox. Each answer is sent with its own idempotency key, as
//! often as needed, never under another key. Outcomes are recorded:
//! answered by me; already resolved (the winner is kept for the feed);
//! rejected for good (not retried); or a transient failure, retried with
//! the one backoff policy ([`RetryPolicy::PHONE_ANSWER`]), across restarts.

use super::{server_message, PhoneClient, Reply, SyncError};
use crate::present::copy::SendFailure;
use crate::protocol::{Question, QuestionState};
use crate::retry::RetryPolicy;
use crate::store::{now_ms, AnswerState, Store};

/// How long a claimed send is left alone by other flushers.
const LEASE_MS: i64 = 30_000;

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
}

fn backoff_ms(attempts: u32) -> i64 {
    RetryPolicy::PHONE_ANSWER.delay(attempts).as_millis() as i64
}

/// Sends every due answer once.
pub async fn flush(store: &Store, client: &PhoneClient) -> Result<FlushReport, SyncError> {
    let mut report = FlushReport::default();
    for entry in store.due_answers(now_ms())? {
        if !store.claim_answer(entry.id, LEASE_MS)? {
            continue; // the other process is sending it
        }
        let body = serde_json::to_value(&entry.body).unwrap_or_default();
        let path = format!("/api/questions/{}/answer", entry.question_id);
        let reply = client
            .send(
                reqwest::Method::POST,
                &path,
                Some(&body),
                Some(&entry.idempotency_key),
            )
            .await;
        let attempts = entry.attempts + 1;
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
                    continue;
                };
                if store.record_server(&q)? {
                    report.withdraw.push(q.id.clone());
                }
                let mine = q.state == QuestionState::Answered
                    && q.answer
                        .as_ref()
                        .is_some_and(|a| a.responder.id == client.user_id);
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
            Ok(Reply::Status(status, bytes)) => {
                // 401 (token being refreshed), 408, 429, 5xx: try again later.
                retry(SendFailure::of_status(status).record(&format!(
                    "server answered {status}: {}",
                    server_message(&bytes)
                )))?;
                report.will_retry += 1;
            }
        }
    }
    Ok(report)
}
