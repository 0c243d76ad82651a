//! One feed cell of spec 6.2, from a question alone: the part of the feed
//! that needs no store, so the phone's feed (`feed`, with its outbox and
//! drafts) and the web responder (qp-web, compiled to WebAssembly) draw the
//! same cells from the same rules.
//! - one or two options: inline buttons in array order, with their styles;
//! - three or four: one "Choose an answer (N options)" entry opening a sheet
//!   that lists them in order, with the time remaining;
//! - text-only: a field with Send; options plus text: "or type a reply";
//! - resolved: "You answered: Approve" / "Federica answered: Prod";
//!   expired: "Expired with no answer"; cancelled: neutral; a pending room
//!   question: "anyone in the room can answer".

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::copy::Copy;
use crate::payload::CompactQuestion;
use crate::protocol::{AnswerSubmission, OptionStyle, Question, QuestionState, ResponderScope};

/// At most this many options show as inline buttons; more open a sheet.
pub const MAX_INLINE_BUTTONS: usize = 2;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeedButton {
    pub value: String,
    pub label: String,
    pub style: OptionStyle,
}

/// Three or four options: one entry that opens a sheet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChooseEntry {
    /// "Choose an answer (4 options)".
    pub title: String,
    pub count: u32,
    /// The sheet, in array order.
    pub options: Vec<FeedButton>,
    pub time_remaining: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextField {
    pub placeholder: String,
    pub max_length: u32,
    /// "or type a reply" below buttons; none for a text-only question.
    pub hint: Option<String>,
    pub send_title: String,
    /// Text kept from an earlier attempt (too long for the lock screen).
    pub draft: Option<String>,
}

/// A cell as the question alone decides it (no answer of this device's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cell {
    pub question_id: String,
    /// "Release Bot asks you" / "… asks the room".
    pub title: String,
    pub prompt: String,
    pub context: Option<String>,
    pub room_name: String,
    /// Pending past its deadline reads as expired.
    pub state: QuestionState,
    pub buttons: Vec<FeedButton>,
    pub choose: Option<ChooseEntry>,
    pub text_field: Option<TextField>,
    /// "You answered: Approve", "Expired with no answer", "Cancelled".
    pub resolution: Option<String>,
    /// "anyone in the room can answer" on pending room questions.
    pub room_hint: Option<String>,
    pub time_remaining: Option<String>,
}

/// The buttons of a question's options, in array order.
pub fn buttons(q: &CompactQuestion) -> Vec<FeedButton> {
    q.options
        .iter()
        .map(|o| FeedButton {
            value: o.value.clone(),
            label: o.label.clone(),
            style: o.style,
        })
        .collect()
}

/// My answer to `q` as it reads inside a sentence: the option's label
/// (isolated where directions can mix) or the quoted reply. The label is
/// read from the question as the person reads it (a consent's Allow/Deny
/// in `copy`'s language), so no status line can carry the server's English.
pub fn summary(body: &AnswerSubmission, q: &CompactQuestion, copy: &Copy) -> String {
    match body {
        AnswerSubmission::Value(v) => copy.embed(
            buttons(&q.localized(copy))
                .iter()
                .find(|b| &b.value == v)
                .map(|b| b.label.as_str())
                .unwrap_or(v),
        ),
        AnswerSubmission::Text(t) => copy.typed(t),
    }
}

/// The cell of `q` (its compact view `cq`, its state and answer in `q`) for
/// user `me` at `now`. A pending question past its deadline reads as expired
/// (display only: the server confirms).
pub fn cell(
    cq: &CompactQuestion,
    q: &Question,
    me: &str,
    now: DateTime<Utc>,
    copy: &Copy,
    draft: Option<String>,
) -> Cell {
    // A sign-in consent reads in the person's language.
    let cq = &cq.localized(copy);
    let mut q = q.clone();
    if q.state == QuestionState::Pending && now >= q.expires_at {
        q.state = QuestionState::Expired;
    }
    let all = buttons(cq);
    let pending = q.state == QuestionState::Pending;
    let remaining = copy.time_remaining(q.expires_at, now);
    let (buttons, choose) = match all.len() {
        0 => (Vec::new(), None),
        n if n <= MAX_INLINE_BUTTONS => (all, None),
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
        draft,
    });
    Cell {
        question_id: cq.id.clone(),
        title: copy.title(cq.responder_scope, &cq.asker),
        prompt: cq.prompt.clone(),
        context: cq.context.clone(),
        room_name: cq.room.name.clone(),
        state: q.state,
        buttons,
        choose,
        text_field,
        resolution: copy.resolution(&q, Some(me)),
        room_hint: (pending && cq.responder_scope == ResponderScope::Room)
            .then(|| copy.anyone_can_answer()),
        time_remaining: pending.then_some(remaining),
    }
}
