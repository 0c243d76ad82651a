//! Answers handed to the system: on iOS an answer given from a notification
//! action goes as a background `URLSession` upload, which the system
//! finishes after this process is suspended or killed and reports on
//! later, to this process or to the one it relaunches. The core builds the
//! request (the same one the flush sends, with the answer's idempotency
//! key) and marks the answer [`AnswerState::HandedOver`](crate::store::AnswerState::HandedOver); the report goes
//! through the same rules as a reply to the flush ([`super::flush`](fn@super::flush)). So
//! each answer reaches exactly one final state: a report that comes twice,
//! or after the answer was sent another way, changes nothing.
//!
//! Only answers whose question the server has shown are handed over: one
//! known only from a plain push is checked against the server first, which
//! needs this process (the flush does it).

use super::flush::{answer_body, answer_path, settle, FlushReport, LEASE_MS};
use super::{PhoneClient, Reply, SyncError};
use crate::http::{HttpError, HttpMethod, HttpRequest, HttpResponse};
use crate::store::{now_ms, Store};

/// How long a handed-over answer must stay missing from the system's list
/// of uploads before it counts as lost and is queued again: an upload that
/// finished leaves the list before its report reaches the app, which comes
/// within moments of the app making its background session again. Between
/// two snapshots this far apart, that report has had its chance.
pub const LOST_HAND_OVER_GRACE_MS: i64 = 10_000;

/// An answer handed to the system: give `request` to the background
/// session, tagged with `id` (the answer's idempotency key), and report
/// its outcome under that id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handover {
    pub id: String,
    pub question_id: String,
    pub request: HttpRequest,
}

/// What the system reported of a hand-over: the server's response, or why
/// none came.
pub type HandoverOutcome = Result<HttpResponse, HttpError>;

/// Marks every due answer that may go without a check as handed over and
/// returns their requests. Answers that need the server's question first
/// stay queued for the flush.
pub fn hand_over(store: &Store, client: &PhoneClient) -> Result<Vec<Handover>, SyncError> {
    let mut out = Vec::new();
    for entry in store.due_answers(now_ms())? {
        if entry.unverified_seen.is_some() {
            continue;
        }
        // Built before the hand-over is recorded: signed out, nothing is.
        let request = client.request(
            HttpMethod::Post,
            &answer_path(&entry),
            Some(&answer_body(&entry)),
            Some(&entry.idempotency_key),
        )?;
        if !store.hand_over_answer(entry.id)? {
            continue; // the other process is sending it
        }
        out.push(Handover {
            id: entry.idempotency_key.clone(),
            question_id: entry.question_id.clone(),
            request,
        });
    }
    Ok(out)
}

/// Records what the system reported of the hand-over `id` (see
/// [`hand_over`]). A report of an answer that is not handed over any more
/// is ignored: the report is empty.
pub fn handed_over_outcome(
    store: &Store,
    me: &str,
    id: &str,
    outcome: HandoverOutcome,
) -> Result<FlushReport, SyncError> {
    let mut report = FlushReport::default();
    let Some(entry) = store.claim_handed_over(id, LEASE_MS)? else {
        log::info!("a hand-over report for an answer no longer handed over: ignored");
        return Ok(report);
    };
    let reply = match outcome {
        Ok(r) => Reply::Status(r.status, r.body),
        Err(e) => Reply::Unreachable(e.detail()),
    };
    // The attempt was counted when the answer was handed over.
    settle(store, &entry, entry.attempts, Ok(reply), me, &mut report)?;
    Ok(report)
}
