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

use crate::present::copy::{AnswerLine, Copy, SendFailure};
use crate::protocol::{AnswerSubmission, OptionStyle, Question, QuestionState, ResponderScope};
use crate::store::{AnswerState, OutboxEntry, Store, StoreError};

/// How many cells the feed shows at most.
pub const FEED_LIMIT: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedButton {
    pub value: String,
    pub label: String,
    pub style: OptionStyle,
}

/// Three or four options: one entry that opens a sheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChooseEntry {
    /// "Choose an answer (4 options)".
    pub title: String,
    pub count: u32,
    /// The sheet, in array order.
    pub options: Vec<FeedButton>,
    pub time_remaining: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextField {
    pub placeholder: String,
    pub max_length: u32,
    /// "or type a reply" below buttons; none for a text-only question.
    pub hint: Option<String>,
    pub send_title: String,
    /// Text kept from an earlier attempt (too long for the lock screen).
    pub draft: Option<String>,
}

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

/// My answer as it reads inside a sentence: the option's label (isolated
/// where directions can mix) or the quoted reply.
fn summary(body: &AnswerSubmission, labels: &[FeedButton], copy: &Copy) -> String {
    match body {
        AnswerSubmission::Value(v) => copy.embed(
            labels
                .iter()
                .find(|b| &b.value == v)
                .map(|b| b.label.as_str())
                .unwrap_or(v),
        ),
        AnswerSubmission::Text(t) => copy.typed(t),
    }
}

/// Where my answer stands, in one line for a feed cell or a notification:
/// "Approve: queued, will send when you're online", "You answered: Approve".
pub(crate) fn my_answer(
    e: &OutboxEntry,
    buttons: &[FeedButton],
    q: &Question,
    me: &str,
    copy: &Copy,
) -> MyAnswer {
    let what = summary(&e.body, buttons, copy);
    // The stored failure is read back as its cause; its raw detail (the
    // server's or the network stack's English) is for logs, never shown.
    let failure = SendFailure::from_record(e.last_error.as_deref().unwrap_or(""));
    let line = |l: AnswerLine| copy.answer_line(l, &what);
    let (status, can_retry) = match e.state {
        AnswerState::Queued if e.attempts > 0 => (line(AnswerLine::Retrying(failure)), true),
        AnswerState::Queued => (line(AnswerLine::Queued), false),
        AnswerState::Sending => (line(AnswerLine::Sending), false),
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

/// The buttons of a question's options, in array order.
pub(crate) fn buttons(q: &crate::payload::CompactQuestion) -> Vec<FeedButton> {
    q.options
        .iter()
        .map(|o| FeedButton {
            value: o.value.clone(),
            label: o.label.clone(),
            style: o.style,
        })
        .collect()
}

/// The feed for user `me` at `now`.
pub fn feed(
    store: &Store,
    me: &str,
    now: DateTime<Utc>,
    copy: &Copy,
) -> Result<Vec<FeedCell>, StoreError> {
    let mut cells = Vec::new();
    for stored in store.recent_questions(FEED_LIMIT)? {
        let cq = &stored.question;
        let mut q = stored.to_question();
        let overdue = q.state == QuestionState::Pending && now >= q.expires_at;
        if overdue {
            q.state = QuestionState::Expired; // display only; the server confirms
        }
        let all = buttons(cq);
        let pending = q.state == QuestionState::Pending;
        let mine = store.answer_for(&cq.id)?;
        let my_answer = mine.as_ref().map(|e| my_answer(e, &all, &q, me, copy));
        let answerable = pending
            && !mine
                .as_ref()
                .is_some_and(|e| e.state.is_open() || e.state == AnswerState::Answered);
        let remaining = copy.time_remaining(q.expires_at, now);
        let (buttons, choose) = match all.len() {
            0 => (Vec::new(), None),
            1 | 2 => (all, None),
            n => (
                Vec::new(),
                Some(ChooseEntry {
                    title: copy.choose_answer(n),
                    count: n as u32,
                    options: all,
                    time_remaining: remaining.clone(),
                }),
            ),
        };
        let text_field = cq.text_input.as_ref().map(|t| TextField {
            placeholder: t
                .placeholder
                .clone()
                .unwrap_or_else(|| copy.reply_placeholder()),
            max_length: t.max_length,
            hint: (!cq.options.is_empty()).then(|| copy.or_type_reply()),
            send_title: copy.reply_send(),
            draft: store.draft(&cq.id).ok().flatten(),
        });
        cells.push(FeedCell {
            question_id: cq.id.clone(),
            title: copy.title(cq.responder_scope, &cq.asker),
            prompt: cq.prompt.clone(),
            context: cq.context.clone(),
            room_name: cq.room.name.clone(),
            state: q.state,
            answerable,
            buttons,
            choose,
            text_field,
            resolution: copy.resolution(&q, Some(me)),
            room_hint: (pending && cq.responder_scope == ResponderScope::Room)
                .then(|| copy.anyone_can_answer()),
            time_remaining: pending.then_some(remaining),
            my_answer,
        });
    }
    Ok(cells)
}
