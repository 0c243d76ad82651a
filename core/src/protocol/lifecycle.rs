//! The state machine (spec 5): `pending` -> `answered` | `expired` |
//! `cancelled`. Terminal states never change. Every mutation of a question's
//! state goes through these methods, on the server and on the phone.

use chrono::{DateTime, Utc};

use super::answer::{validate_answer, AnswerSubmission};
use super::error::ValidationError;
use super::model::{Answer, Question, QuestionState, Responder, ResponderScope};

/// What an answer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// This answer won: the question is now `answered` with it.
    Accepted,
    /// The question was already terminal (answered by someone, expired or
    /// cancelled): a clean no-op; the caller shows the resolved question.
    AlreadyResolved,
}

/// A transition the state machine refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("the question is already {}; terminal states never change", .0.as_str())]
    AlreadyTerminal(QuestionState),
}

impl QuestionState {
    /// The only legal moves: from `pending` to one of the terminal states.
    pub fn can_become(self, next: QuestionState) -> bool {
        self == QuestionState::Pending && next != QuestionState::Pending
    }
}

impl Question {
    /// `pending` but past its deadline: it must be treated as expired.
    pub fn is_overdue(&self, now: DateTime<Utc>) -> bool {
        self.state == QuestionState::Pending && now >= self.expires_at
    }

    /// Moves an overdue question to `expired` (resolved at its deadline).
    /// Returns whether it changed. Call it before any read, so no read ever
    /// shows an overdue question as `pending`.
    pub fn expire_if_due(&mut self, now: DateTime<Utc>) -> bool {
        if !self.is_overdue(now) {
            return false;
        }
        self.state = QuestionState::Expired;
        self.answer = None;
        self.resolved_at = Some(self.expires_at);
        true
    }

    /// Whether `user_id` may answer: the target of a `direct` question, or a
    /// member of the room of a `room` question. `is_room_member` is the
    /// caller's knowledge of membership (the server's, from its database).
    pub fn is_eligible(&self, user_id: &str, is_room_member: bool) -> bool {
        match self.responder_scope {
            ResponderScope::Direct => self.target_user_id.as_deref() == Some(user_id),
            ResponderScope::Room => is_room_member,
        }
    }

    /// Applies an answer by `responder` (the authenticated user) at `now`.
    /// A terminal (or overdue) question is a no-op, whatever was sent; a
    /// pending one takes the answer if it is valid.
    pub fn apply_answer(
        &mut self,
        submission: &AnswerSubmission,
        responder: Responder,
        now: DateTime<Utc>,
    ) -> Result<AnswerOutcome, ValidationError> {
        self.expire_if_due(now);
        if self.state.is_terminal() {
            return Ok(AnswerOutcome::AlreadyResolved);
        }
        let choice = validate_answer(self, submission)?;
        self.state = QuestionState::Answered;
        self.answer = Some(Answer {
            value: choice.value,
            label: choice.label,
            text: choice.text,
            responder,
            answered_at: now,
        });
        self.resolved_at = Some(now);
        Ok(AnswerOutcome::Accepted)
    }

    /// Withdraws a pending question.
    pub fn cancel(&mut self, now: DateTime<Utc>) -> Result<(), StateError> {
        self.expire_if_due(now);
        if self.state.is_terminal() {
            return Err(StateError::AlreadyTerminal(self.state));
        }
        self.state = QuestionState::Cancelled;
        self.answer = None;
        self.resolved_at = Some(now);
        Ok(())
    }
}
