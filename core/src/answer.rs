//! From what the person did on a notification (an action identifier, maybe
//! typed text or a chosen label) to a validated answer submission.
//!
//! The result always passes the protocol's own answer check. Typed text that
//! is too long is never truncated: the error carries it whole, so the app can
//! keep it and let the person shorten it.

use crate::payload::CompactQuestion;
use crate::present::android::{choice_labels, CHOOSE_ACTION_ID};
use crate::present::ios::{OPTION_ACTION_PREFIX, TEXT_ACTION_ID};
use crate::protocol::{validate_answer, AnswerSubmission, ErrorCode};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// Not one of this question's actions (the default tap, a dismiss, a
    /// forged identifier): nothing to answer.
    #[error("action {0:?} is not an answer to this question")]
    UnknownAction(String),
    #[error("this question does not take a typed answer")]
    TextNotAllowed,
    /// Nothing typed (or only spaces): no answer is sent.
    #[error("the typed answer is empty")]
    EmptyText,
    /// Longer than `max_length`; `text` is kept whole for the person to fix.
    #[error("the typed answer has {length} characters; at most {max_length} are allowed")]
    TextTooLong {
        text: String,
        max_length: u32,
        length: u32,
    },
    #[error("{0:?} is not one of the offered choices")]
    UnknownChoice(String),
}

/// The kind of an [`ActionError`], for code that switches on it (the
/// bindings' error: Swift and Kotlin match on these cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionErrorKind {
    /// Not an answer: the default tap or a dismiss. Open the app as usual.
    UnknownAction,
    TextNotAllowed,
    EmptyText,
    /// The text is kept as a draft; the app lets the person shorten it.
    TextTooLong,
    UnknownChoice,
}

impl ActionError {
    pub fn kind(&self) -> ActionErrorKind {
        match self {
            ActionError::UnknownAction(_) => ActionErrorKind::UnknownAction,
            ActionError::TextNotAllowed => ActionErrorKind::TextNotAllowed,
            ActionError::EmptyText => ActionErrorKind::EmptyText,
            ActionError::TextTooLong { .. } => ActionErrorKind::TextTooLong,
            ActionError::UnknownChoice(_) => ActionErrorKind::UnknownChoice,
        }
    }

    /// A stable code for tests and logs.
    pub fn code(&self) -> &'static str {
        match self.kind() {
            ActionErrorKind::UnknownAction => "unknown_action",
            ActionErrorKind::TextNotAllowed => "text_not_allowed",
            ActionErrorKind::EmptyText => "empty_text",
            ActionErrorKind::TextTooLong => "text_too_long",
            ActionErrorKind::UnknownChoice => "unknown_choice",
        }
    }
}

/// Maps an action (and the text that came with it) to an answer.
pub fn map_action(
    q: &CompactQuestion,
    action_id: &str,
    text: Option<&str>,
) -> Result<AnswerSubmission, ActionError> {
    let submission = if let Some(value) = action_id.strip_prefix(OPTION_ACTION_PREFIX) {
        AnswerSubmission::Value(value.to_string())
    } else if action_id == TEXT_ACTION_ID {
        AnswerSubmission::Text(text.unwrap_or_default().to_string())
    } else if action_id == CHOOSE_ACTION_ID {
        let chosen = text.unwrap_or_default().trim();
        let labels = choice_labels(&q.options);
        let i = labels
            .iter()
            .position(|l| l == chosen)
            .ok_or_else(|| ActionError::UnknownChoice(chosen.to_string()))?;
        AnswerSubmission::Value(q.options[i].value.clone())
    } else {
        return Err(ActionError::UnknownAction(action_id.to_string()));
    };
    validate_answer(&q.to_question(), &submission).map_err(|e| match e.code {
        ErrorCode::TextNotAllowed => ActionError::TextNotAllowed,
        ErrorCode::Empty => ActionError::EmptyText,
        ErrorCode::TooLong => {
            let t = text.unwrap_or_default().to_string();
            ActionError::TextTooLong {
                length: t.trim().chars().count() as u32,
                text: t,
                max_length: q.text_input.as_ref().map(|t| t.max_length).unwrap_or(0),
            }
        }
        _ => ActionError::UnknownAction(action_id.to_string()),
    })?;
    Ok(match submission {
        AnswerSubmission::Text(t) => AnswerSubmission::Text(t.trim().to_string()),
        other => other,
    })
}
