//! The feed (spec 6.2): the questions this user can see, newest first, each
//! as a cell the app draws as is.
//! - two options: inline buttons in array order, with their styles;
//! - three or four: one "Choose an answer (N options)" entry opening a sheet that
//!   lists them in order, with the time remaining;
//! - text-only: a field with Send; options plus text: "or type a reply";
//! - resolved: "You answered: Approve" / "Federica answered: Prod";
//!   expired: "Expired with no answer"; cancelled: neutral; a pending room
//!   question: "anyone in the room can answer";
//! - and where my own answer stands (queued, sending, retrying and why,
//!   refused, too late and why), never with raw error text.

use chrono::{DateTime, Utc};

use crate::copy::{AnswerLine, Copy, SendFailure};
use crate::payload::CompactQuestion;
use crate::present::cell::{self, Cell};
pub use crate::present::cell::{buttons, ChooseEntry, FeedButton, TextField};
use crate::protocol::{Question, QuestionState};
use crate::store::{AnswerState, OutboxEntry, Store, StoreError, StoredQuestion};

/// How many cells the feed shows at most.
pub const FEED_LIMIT: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MyAnswer {
    pub state: AnswerState,
    /// One line for the cell: "Approve: queued, will send when you're online".
    pub status: String,
    /// Offer a retry button (a failed attempt waiting for its next try).
    pub can_retry: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedCell {
    pub question_id: String,
    /// "Release Bot asks you" / "… asks the room".
    pub title: String,
    pub prompt: String,
    pub context: Option<String>,
    pub room_name: String,
    /// Pending past its deadline reads as expired.
    pub state: QuestionState,
    /// Whether the person can answer now (pending, in time, no answer of mine open).
    pub answerable: bool,
    pub buttons: Vec<FeedButton>,
    pub choose: Option<ChooseEntry>,
    pub text_field: Option<TextField>,
    /// "You answered: Approve", "Expired with no answer", "Cancelled".
    pub resolution: Option<String>,
    /// "anyone in the room can answer" on pending room questions.
    pub room_hint: Option<String>,
    pub time_remaining: Option<String>,
    pub my_answer: Option<MyAnswer>,
}

/// Where my answer stands, in one line for a feed cell or a notification:
/// "Approve: queued, will send when you're online", "You answered: Approve".
pub(crate) fn my_answer(
    e: &OutboxEntry,
    cq: &CompactQuestion,
    q: &Question,
    me: &str,
    copy: &Copy,
) -> MyAnswer {
    let what = cell::summary(&e.body, cq, copy);
    // The stored failure is read back as its cause; its raw detail (the
    // server's or the network stack's English) is for logs, never shown.
    let failure = SendFailure::from_record(e.last_error.as_deref().unwrap_or(""));
    let line = |l: AnswerLine| copy.answer_line(l, &what);
    let (status, can_retry) = match e.state {
        AnswerState::Queued if e.attempts > 0 => (line(AnswerLine::Retrying(failure)), true),
        AnswerState::Queued => (line(AnswerLine::Queued), false),
        AnswerState::Sending | AnswerState::HandedOver => (line(AnswerLine::Sending), false),
        AnswerState::Rejected if failure == SendFailure::QuestionChanged => {
            (line(AnswerLine::QuestionChanged), false)
        }
        AnswerState::Rejected => {
            let code = match failure {
                SendFailure::Refused(code) => code,
                _ => None,
            };
            (line(AnswerLine::Rejected { code }), false)
        }
        AnswerState::AlreadyResolved => (line(AnswerLine::TooLate(q.state)), false),
        AnswerState::Answered => (copy.resolution(q, Some(me)).unwrap_or(what), false),
    };
    MyAnswer {
        state: e.state,
        status,
        can_retry,
    }
}

/// The feed for user `me` at `now`.
pub fn feed(
    store: &Store,
    me: &str,
    now: DateTime<Utc>,
    copy: &Copy,
) -> Result<Vec<FeedCell>, StoreError> {
    store
        .recent_questions(FEED_LIMIT)?
        .iter()
        .map(|stored| cell_of(store, stored, me, now, copy))
        .collect()
}

/// The feed's cell of one question, as [`feed`] has it, read directly
/// (not only among the newest); `None` when the question is not held here.
pub fn cell_for(
    store: &Store,
    question_id: &str,
    me: &str,
    now: DateTime<Utc>,
    copy: &Copy,
) -> Result<Option<FeedCell>, StoreError> {
    store
        .question(question_id)?
        .map(|stored| cell_of(store, &stored, me, now, copy))
        .transpose()
}

fn cell_of(
    store: &Store,
    stored: &StoredQuestion,
    me: &str,
    now: DateTime<Utc>,
    copy: &Copy,
) -> Result<FeedCell, StoreError> {
    let cq = &stored.question;
    let draft = store.draft(&cq.id).ok().flatten();
    let Cell {
        question_id,
        title,
        prompt,
        context,
        room_name,
        state,
        buttons,
        choose,
        text_field,
        resolution,
        room_hint,
        time_remaining,
    } = cell::cell(cq, &stored.to_question(), me, now, copy, draft);
    // The state as shown: past its deadline a pending question reads
    // expired, and my answer's line speaks of that state.
    let mut q = stored.to_question();
    q.state = state;
    let mine = store.answer_for(&cq.id)?;
    let my_answer = mine.as_ref().map(|e| my_answer(e, cq, &q, me, copy));
    let answerable = state == QuestionState::Pending
        && !mine
            .as_ref()
            .is_some_and(|e| e.state.is_open() || e.state == AnswerState::Answered);
    Ok(FeedCell {
        question_id,
        title,
        prompt,
        context,
        room_name,
        state,
        answerable,
        buttons,
        choose,
        text_field,
        resolution,
        room_hint,
        time_remaining,
        my_answer,
    })
}

/// The app icon's badge: how many questions wait for this person here, the
/// questions they can still answer on this phone: pending and not answered
/// (an answer queued offline counts as given). iOS sets it on each
/// notification (`content.badge`), Android on each notification and its
/// room's summary (`setNumber`, the launcher's dot count). One count for
/// both, so the two platforms never disagree.
pub fn pending_count(cells: &[FeedCell]) -> u32 {
    cells.iter().filter(|c| c.answerable).count() as u32
}
