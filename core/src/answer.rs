//! From what the person did on a notification (an action identifier, maybe
//! typed text or a chosen label) to a validated answer submission.
//!
//! The result always passes the protocol's own answer check. Typed text that
//! is too long is never truncated: the error carries it whole, so the app can
//! keep it and let the person shorten it.

pub use crate::actions::{ActionError, ActionErrorKind};
use crate::actions::{CHOOSE_ACTION_ID, OPTION_ACTION_PREFIX, TEXT_ACTION_ID};
use crate::payload::CompactQuestion;
use crate::present::android::choice_labels;
use crate::protocol::{typed_length, validate_answer, AnswerSubmission, ErrorCode};

/// How many more characters typed text may have before it no longer fits
/// the question's `text_input` (negative when over), counted as the
/// protocol counts ([`typed_length`]); `None` when the question takes no
/// typed answer. What a reply field shows as it is typed.
pub fn characters_left(q: &CompactQuestion, text: &str) -> Option<i64> {
    let input = q.text_input.as_ref()?;
    Some(i64::from(input.max_length) - typed_length(text) as i64)
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
                length: typed_length(&t) as u32,
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
