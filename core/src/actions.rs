//! The identifiers a notification's actions carry, one set for iOS and
//! Android, and what goes wrong when an action is mapped back to an answer.
//!
//! Each question gets its own iOS category (`qp.q.<question id>`), so the
//! buttons of one notification are never overwritten by the next. Option
//! actions are `qp.v.<value>` in array order on both platforms; the
//! text-input action is `qp.text`; Android's "Choose…" (RemoteInput offering
//! the labels) is `qp.choose`. The server names the category in the APNs
//! payload ([`crate::payload`]), the platforms put the actions on the
//! notification ([`crate::present`]), and [`crate::answer`] maps them back.

pub const CATEGORY_PREFIX: &str = "qp.q.";
pub const OPTION_ACTION_PREFIX: &str = "qp.v.";
pub const TEXT_ACTION_ID: &str = "qp.text";
/// Android's "Choose…" action (a RemoteInput offering the option labels).
pub const CHOOSE_ACTION_ID: &str = "qp.choose";

/// The category identifier of a question.
pub fn category_id(question_id: &str) -> String {
    format!("{CATEGORY_PREFIX}{question_id}")
}

/// The question id of one of our category identifiers.
pub fn question_of_category(category: &str) -> Option<&str> {
    category
        .strip_prefix(CATEGORY_PREFIX)
        .filter(|id| !id.is_empty())
}

/// The action identifier of an option.
pub fn option_action_id(value: &str) -> String {
    format!("{OPTION_ACTION_PREFIX}{value}")
}

/// Why an action (and the text that came with it) is not an answer
/// ([`crate::answer::map_action`]).
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
